"""`SymbolicOps`: the core's array operations on PyTensor's symbolic tensors.

f's arrays are NumPy's (`AutoPyTensor.array_ops`); these are for the core's code that runs *inside* a
trace (a tree output raveled, complex pairs, a tree x unraveled), which meets `TensorVariable`s there and
asks `ops_for` how to reshape, split or join them. They are immutable and never leave a trace.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..._arrays import NamespaceOps
from ..._errors import NotSupportedError


class SymbolicOps(NamespaceOps):
    """Array operations on symbolic tensors: the computations are `pytensor.tensor`'s (`NamespaceOps`);
    dtypes are NumPy's, by name."""

    name = "pytensor"
    mutable = False

    def __init__(self) -> None:
        import pytensor.tensor as pt

        super().__init__(pt, (pt.TensorVariable,))

    def asarray(self, a: Any, like: Any = None) -> Any:
        return self.xp.as_tensor_variable(a)

    def to_numpy(self, a: Any) -> np.ndarray:
        raise NotSupportedError("AutoPyTensor: a symbolic tensor has no value until its graph is compiled")

    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.xp.zeros(shape, dtype=np.dtype(dtype).name)

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.xp.eye(n, dtype=np.dtype(dtype).name)

    def copy(self, a: Any) -> Any:
        return a

    def split(self, a: Any, sizes: tuple) -> list:
        offsets = np.cumsum((0, *sizes))
        return [a[int(lo) : int(hi)] for lo, hi in itertools.pairwise(offsets)]

    def from_pairs(self, v: Any) -> Any:
        return self.xp.complex(v[..., 0], v[..., 1])

    def astype(self, a: Any, dtype: Any) -> Any:
        return a.astype(np.dtype(dtype).name)

    def result_type(self, *dtypes: Any) -> Any:
        return np.result_type(*(np.dtype(str(d)) for d in dtypes))

    def is_complex(self, dtype: Any) -> bool:
        return np.dtype(str(dtype)).kind == "c"

    def vdot(self, a: Any, b: Any) -> Any:
        return self.xp.sum(self.xp.conj(a) * b)

    def is_floating(self, dtype: Any) -> bool:
        return np.dtype(str(dtype)).kind == "f"

    def eps(self, dtype: Any) -> float:
        return float(np.finfo(np.dtype(str(dtype))).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return np.result_type(np.dtype(str(dtype)), np.complex64)
