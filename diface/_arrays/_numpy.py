"""NumPy's `ArrayOps`: built in, the arrays every engine converts from and to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._base import ArrayOps

__all__ = ["NumpyOps"]


class NumpyOps(ArrayOps):
    """NumPy arrays and NumPy scalars."""

    name = "numpy"
    mutable = True
    array_types: tuple[type, ...] = (np.ndarray, np.generic)

    def asarray(self, a: Any, like: Any = None) -> Any:
        return np.asarray(a)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return np.zeros(shape, dtype)

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return np.eye(n, dtype=dtype)

    def copy(self, a: Any) -> Any:
        return np.array(a, copy=True, order="C")

    def reshape(self, a: Any, shape: tuple) -> Any:
        return np.reshape(a, shape)

    def flat_view(self, a: Any) -> Any:
        return np.reshape(a, -1, copy=False)  # raises ValueError where only a copy could be made

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return np.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return np.concatenate(arrays)

    def unstack(self, a: Any) -> list:
        return list(a)

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return np.moveaxis(a, source, destination)

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        return np.eye(hi - lo, n, lo, dtype=dtype).reshape((hi - lo, *shape))

    def index_array(self, a: np.ndarray, like: Any = None) -> Any:
        return a

    def sparse_matrix(self, pattern: Any, data: Any) -> Any:
        return pattern.to_scipy(np.asarray(data))

    def lu_factor(self, a: Any) -> Any:
        try:
            from scipy.linalg import lu_factor
        except ImportError:  # NumPy alone: keep the matrix, solve it on each call
            return ("matrix", np.array(a, copy=True))
        import warnings

        with warnings.catch_warnings():  # a singular matrix is reported by the caller, from the pivots
            warnings.simplefilter("ignore")
            return ("lu", lu_factor(a, check_finite=False))

    def lu_solve(self, factors: Any, b: Any, transpose: bool = False) -> Any:
        kind, data = factors
        if kind == "matrix":
            return np.linalg.solve(data.T if transpose else data, b)
        from scipy.linalg import lu_solve

        return lu_solve(data, b, trans=1 if transpose else 0, check_finite=False)

    def lu_diagonal(self, factors: Any) -> np.ndarray:
        kind, data = factors
        if kind == "matrix":  # no factors: the singular values tell instead
            return np.linalg.svd(data, compute_uv=False) if data.size else np.ones(0)
        return np.diagonal(data[0]).copy()

    def gmres(
        self,
        matvec: Callable[[Any], Any],
        b: Any,
        x0: Any,
        rtol: float,
        restart: int,
        cycles: int,
        parts: tuple[Callable, tuple] | None = None,
    ) -> Any:
        """`scipy.sparse.linalg.gmres` (diface's own loop where SciPy is not installed)."""
        try:
            from scipy.sparse.linalg import LinearOperator, gmres
        except ImportError:
            return super().gmres(matvec, b, x0, rtol, restart, cycles)
        n = b.shape[0]
        A = LinearOperator((n, n), matvec=lambda v: matvec(np.reshape(v, (n,))), dtype=b.dtype)
        x, _ = gmres(A, b, x0=x0, rtol=rtol, atol=0.0, restart=restart, maxiter=cycles)
        return x

    def norm(self, a: Any) -> float:
        return float(np.linalg.norm(a))

    def vdot(self, a: Any, b: Any) -> Any:
        return np.sum(a * b)

    def max(self, a: Any) -> Any:
        return np.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return np.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return np.imag(a)

    def real(self, a: Any) -> Any:
        return np.real(a)

    def to_pairs(self, z: Any) -> Any:
        if type(z) is np.ndarray and z.ndim and z.flags.c_contiguous and z.dtype.kind == "c":  # a view: no copy
            return z.view(np.finfo(z.dtype).dtype).reshape((*z.shape, 2))
        return np.stack([np.real(z), np.imag(z)], axis=-1)

    def from_pairs(self, v: Any) -> Any:
        if type(v) is np.ndarray and v.ndim > 1 and v.flags.c_contiguous and v.dtype in (np.float64, np.float32):
            return self.pairs_view(v)  # no copy
        return v[..., 0] + 1j * v[..., 1]

    def real_dtype(self, dtype: Any) -> Any:
        return np.finfo(dtype).dtype

    def pairs_view(self, v: Any) -> Any:
        contiguous_pairs = v.size == 0 or v.strides[-1] == v.itemsize if isinstance(v, np.ndarray) else False
        if contiguous_pairs and v.dtype in (np.float64, np.float32):
            return v.view(np.result_type(v.dtype, np.complex64))[..., 0]
        return super().pairs_view(v)

    def copyto(self, dst: Any, src: Any) -> None:
        np.copyto(dst, src)

    def shares_memory(self, a: Any, b: Any) -> bool:
        return bool(np.may_share_memory(a, b))

    def astype(self, a: Any, dtype: Any) -> Any:
        return np.asarray(a).astype(dtype, copy=False)

    def result_type(self, *dtypes: Any) -> Any:
        return np.result_type(*dtypes)

    def is_floating(self, dtype: Any) -> bool:
        return np.issubdtype(dtype, np.floating)

    def is_complex(self, dtype: Any) -> bool:
        return np.issubdtype(dtype, np.complexfloating)

    def eps(self, dtype: Any) -> float:
        return float(np.finfo(dtype).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return np.result_type(dtype, np.complex64)
