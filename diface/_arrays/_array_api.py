"""`ArrayOps` for any library implementing the Python array API standard (`x.__array_namespace__()`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._base import ArrayOps

__all__ = ["ArrayAPIOps"]


class ArrayAPIOps(ArrayOps):
    """Any array library implementing the Python array API standard (`x.__array_namespace__()`)."""

    def __init__(self, xp: Any, array_type: type) -> None:
        self.xp = xp
        self.array_types = (array_type,)
        self.name = getattr(xp, "__name__", "array API")
        try:
            a = xp.zeros(1)
            a[0] = 1.0
            self.mutable = True
        except Exception:  # immutable arrays (JAX) refuse item assignment
            self.mutable = False

    def asarray(self, a: Any, like: Any = None) -> Any:
        device = getattr(like, "device", None)
        return self.xp.asarray(a, device=device) if device is not None else self.xp.asarray(a)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.xp.zeros(shape, dtype=dtype, device=getattr(like, "device", None))

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.xp.eye(n, dtype=dtype, device=getattr(like, "device", None))

    def copy(self, a: Any) -> Any:
        return self.xp.asarray(a, copy=True)

    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.xp.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.xp.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return self.xp.concat(arrays, axis=0)

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return self.xp.moveaxis(a, source, destination)

    def matmul(self, a: Any, b: Any) -> Any:
        return self.xp.matmul(a, b)

    def vdot(self, a: Any, b: Any) -> Any:
        return self.xp.sum(a * b)

    def abs(self, a: Any) -> Any:
        return self.xp.abs(a)

    def max(self, a: Any) -> Any:
        return self.xp.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.xp.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.xp.imag(a)

    def real(self, a: Any) -> Any:
        return self.xp.real(a)

    def from_pairs(self, v: Any) -> Any:
        # the standard has no real-times-complex-scalar promotion: both parts cast first
        dtype = self.complex_dtype(v.dtype)
        return self.xp.astype(v[..., 0], dtype) + self.xp.astype(v[..., 1], dtype) * 1j

    def real_dtype(self, dtype: Any) -> Any:
        return self.xp.real(self.xp.zeros((), dtype=dtype)).dtype

    def astype(self, a: Any, dtype: Any) -> Any:
        return self.xp.astype(a, dtype)

    def result_type(self, *dtypes: Any) -> Any:
        return self.xp.result_type(*dtypes)

    def is_floating(self, dtype: Any) -> bool:
        return self.xp.isdtype(dtype, "real floating")

    def is_complex(self, dtype: Any) -> bool:
        return self.xp.isdtype(dtype, "complex floating")

    def eps(self, dtype: Any) -> float:
        return float(self.xp.finfo(dtype).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return self.xp.result_type(dtype, self.xp.complex64)
