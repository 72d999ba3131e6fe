"""`ArrayOps` for any library implementing the Python array API standard (`x.__array_namespace__()`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._namespace import StandardNamespaceOps

__all__ = ["ArrayAPIOps"]


class ArrayAPIOps(StandardNamespaceOps):
    """Any array library implementing the Python array API standard (`x.__array_namespace__()`): the
    standard's functions of its namespace `xp`, on the device of the array a result is made like."""

    def __init__(self, xp: Any, array_type: type) -> None:
        super().__init__(xp, (array_type,))
        self._concatenate = xp.concat  # the standard's name, whatever else the namespace has
        self.name = getattr(xp, "__name__", "array API")
        try:
            a = xp.zeros(1)
            a[0] = 1.0
            self.mutable = True
        except Exception:  # immutable arrays (JAX) refuse item assignment
            self.mutable = False

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def copy(self, a: Any) -> Any:
        return self.xp.asarray(a, copy=True)

    def from_pairs(self, v: Any) -> Any:
        # the standard has no real-times-complex-scalar promotion: both parts cast first
        dtype = self.complex_dtype(v.dtype)
        return self.xp.astype(v[..., 0], dtype) + self.xp.astype(v[..., 1], dtype) * 1j

    def real_dtype(self, dtype: Any) -> Any:
        return self.xp.real(self.xp.zeros((), dtype=dtype)).dtype

    def astype(self, a: Any, dtype: Any) -> Any:
        return self.xp.astype(a, dtype)

    def is_floating(self, dtype: Any) -> bool:
        return self.xp.isdtype(dtype, "real floating")

    def is_complex(self, dtype: Any) -> bool:
        return self.xp.isdtype(dtype, "complex floating")
