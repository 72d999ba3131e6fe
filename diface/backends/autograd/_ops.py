"""autograd's traced arrays (boxes) as the core sees them, when diface runs inside a function that
autograd differentiates: NumPy's dtypes and constructors (`NumpyOps`), immutable values computed on with
`autograd.numpy` (`NamespaceOps`). Registered as the "autograd" array namespace."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._arrays import ArrayOps, NamespaceOps, NumpyOps, framework_ops, register_array_ops
from ._internals import AG

__all__ = ["box_ops"]


class ArrayBoxOps(NamespaceOps, NumpyOps):
    """The computations are `autograd.numpy`'s (`NamespaceOps`, first in the order), so that they are
    recorded on the box; construction and dtypes are NumPy's (`NumpyOps`)."""

    name = "autograd"
    mutable = False

    def __init__(self) -> None:
        import autograd.numpy as anp
        from autograd.numpy.numpy_boxes import ArrayBox

        super().__init__(anp, (ArrayBox,))

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(AG.getval(a))

    def copy(self, a: Any) -> Any:
        return a  # boxes are immutable values

    def unstack(self, a: Any) -> list:
        return [a[i] for i in range(a.shape[0])]

    def from_pairs(self, v: Any) -> Any:
        return ArrayOps.from_pairs(self, v)  # the arithmetic (NumPy's views would leave the box)

    def equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(AG.getval(a), AG.getval(b)))

    def astype(self, a: Any, dtype: Any) -> Any:
        return a if a.dtype == dtype else a.astype(dtype)


def box_ops() -> ArrayOps:
    return framework_ops("autograd")


register_array_ops("autograd", ArrayBoxOps)
