"""autograd's traced arrays (boxes) as the core sees them, when diface runs inside a function that
autograd differentiates: NumPy's dtypes and constructors, immutable values computed on with
`autograd.numpy`. Registered as the "autograd" array namespace."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._arrays import ArrayOps, NumpyOps, framework_ops, register_array_ops
from ._internals import AG

__all__ = ["box_ops"]


class ArrayBoxOps(NumpyOps):
    name = "autograd"
    mutable = False

    def __init__(self) -> None:
        import autograd.numpy as anp
        from autograd.numpy.numpy_boxes import ArrayBox

        self.anp = anp
        self.array_types = (ArrayBox,)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(AG.getval(a))

    def copy(self, a: Any) -> Any:
        return a  # boxes are immutable values

    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.anp.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.anp.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return self.anp.concatenate(arrays)

    def unstack(self, a: Any) -> list:
        return [a[i] for i in range(a.shape[0])]

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return self.anp.moveaxis(a, source, destination)

    def matmul(self, a: Any, b: Any) -> Any:
        return self.anp.matmul(a, b)

    def vdot(self, a: Any, b: Any) -> Any:
        return self.anp.sum(a * b)

    def abs(self, a: Any) -> Any:
        return self.anp.abs(a)

    def max(self, a: Any) -> Any:
        return self.anp.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.anp.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.anp.imag(a)

    def real(self, a: Any) -> Any:
        return self.anp.real(a)

    def to_pairs(self, z: Any) -> Any:
        return self.anp.stack([self.anp.real(z), self.anp.imag(z)], axis=-1)

    def from_pairs(self, v: Any) -> Any:
        return v[..., 0] + 1j * v[..., 1]

    def equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(AG.getval(a), AG.getval(b)))

    def astype(self, a: Any, dtype: Any) -> Any:
        return a if a.dtype == dtype else a.astype(dtype)


def box_ops() -> ArrayOps:
    return framework_ops("autograd")


register_array_ops("autograd", ArrayBoxOps)
