"""MLX arrays as the core sees them: `MlxOps`, registered for arrays of an imported mlx.

MLX arrays are treated as immutable (no `out=` into them, no in-place f) and every crossing to and
from NumPy keeps the dtype: `mx.array(a)` would silently make a float64 NumPy array float32, so the
dtype is always named. MLX has float64 on its CPU device only (elsewhere `ArgumentError`) and no
complex128 (`NotSupportedError`): never a silent loss of precision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._arrays import NUMPY, NamespaceOps, register_array_ops
from ..._errors import ArgumentError, NotSupportedError
from ._lock import MLX_LOCK

__all__ = ["MlxOps", "mx_dtype", "np_dtype"]


def mx_dtype(dtype: Any) -> Any:
    """The MLX dtype of a NumPy dtype (or an MLX dtype, as it is)."""
    import mlx.core as mx

    if isinstance(dtype, mx.Dtype):
        return dtype
    d = np.dtype(dtype)
    if d == np.complex128:
        raise NotSupportedError(
            "AutoMLX: MLX has no complex128 (complex64 only): a complex128 array would silently lose precision; "
            "use another engine (di.AutoJAX(), di.AutoTorch()) for complex128"
        )
    try:
        return getattr(mx, "bool_" if d == np.bool_ else d.name)
    except AttributeError:
        raise ArgumentError(f"AutoMLX: MLX has no {d.name} arrays") from None


def np_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype of an MLX dtype (or a NumPy one)."""
    name = str(dtype).rsplit(".", 1)[-1]
    return np.dtype(name)


def check_float64(dtype: Any) -> None:
    """`ArgumentError` where MLX's default device cannot compute in float64 (its GPU)."""
    import mlx.core as mx

    if dtype == mx.float64 and mx.default_device() != mx.cpu:
        raise ArgumentError(
            f"AutoMLX: MLX computes float64 on its CPU device only, and the default device is "
            f"{mx.default_device()}: call mx.set_default_device(mx.cpu) first, or pass float32 arrays "
            "(a float64 array is never silently made float32)"
        )


class MlxOps(NamespaceOps):
    """MLX arrays: immutable to diface, lazy (evaluated before they reach NumPy); the computations are
    `mlx.core`'s (`NamespaceOps`), construction names MLX's dtypes. Complex numbers from pairs are the
    default `v[..., 0] + 1j * v[..., 1]`: complex64 whatever v's precision (MLX has no complex128), as MLX
    promotes `1j * x` itself; AutoMLX refuses complex inputs and outputs (`check_complex`) after the call
    path's first look at f."""

    name = "mlx"
    mutable = False

    def __init__(self) -> None:
        import mlx.core as mx

        super().__init__(mx, (mx.array,))

    # conversions -----------------------------------------------------------------------------
    def asarray(self, a: Any, like: Any = None) -> Any:
        mx = self.xp
        if isinstance(a, mx.array):
            return a
        a = np.asarray(a)
        dtype = mx_dtype(a.dtype)
        check_float64(dtype)
        with MLX_LOCK:
            return mx.array(
                a if a.flags.c_contiguous else np.array(a, order="C"), dtype=dtype
            )  # MLX takes no negative strides

    def to_numpy(self, a: Any) -> np.ndarray:
        with MLX_LOCK:
            return np.array(a, copy=True)  # a writable copy, computed first (MLX is lazy)

    # construction ----------------------------------------------------------------------------
    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.xp.zeros(shape, dtype=mx_dtype(dtype))

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.xp.eye(n, dtype=mx_dtype(dtype))

    def copy(self, a: Any) -> Any:
        return self.xp.array(a)

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        return self.xp.eye(hi - lo, n, lo, dtype=mx_dtype(dtype)).reshape((hi - lo, *shape))

    # dtypes and evaluation -------------------------------------------------------------------
    def real_dtype(self, dtype: Any) -> Any:
        return self.xp.float32 if mx_dtype(dtype) == self.xp.complex64 else mx_dtype(dtype)

    def block_until_ready(self, a: Any) -> None:
        with MLX_LOCK:
            self.xp.eval([v for v in (a if isinstance(a, tuple) else (a,)) if v is not None])

    def norm(self, a: Any) -> float:
        with MLX_LOCK:
            return float(np.sqrt(self.to_numpy(self.xp.sum(a * a))))

    def to_host(self, a: Any, what: str = "x") -> np.ndarray:
        return self.to_numpy(a)

    def from_host(self, a: np.ndarray) -> Any:
        return self.asarray(a)

    def equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(self.to_numpy(a), self.to_numpy(b)))

    # sparse results and linear solves: on the host (MLX has no sparse matrices, its LU runs on the CPU)
    def sparse_matrix(self, pattern: Any, data: Any) -> Any:
        """A `scipy.sparse` CSR matrix (MLX has no sparse arrays), its values computed by MLX."""
        return NUMPY.sparse_matrix(pattern, self.to_numpy(data))

    def is_sparse(self, a: Any) -> bool:
        return hasattr(a, "tocsr") and not isinstance(a, self.xp.array)

    def sparse_to_dense(self, a: Any) -> Any:
        return self.asarray(a.toarray())

    def index_array(self, a: np.ndarray, like: Any = None) -> Any:
        return self.xp.array(np.asarray(a, dtype=np.int32))

    def lu_factor(self, a: Any) -> Any:
        return NUMPY.lu_factor(self.to_numpy(a))

    def lu_solve(self, factors: Any, b: Any, transpose: bool = False) -> Any:
        return self.asarray(NUMPY.lu_solve(factors, self.to_numpy(b), transpose))

    def lu_diagonal(self, factors: Any) -> np.ndarray:
        return NUMPY.lu_diagonal(factors)

    # writing: refused -------------------------------------------------------------------------
    def copyto(self, dst: Any, src: Any) -> None:
        raise NotSupportedError("MLX arrays are immutable to diface: they cannot be out= buffers or written into")

    def flat_view(self, a: Any) -> Any:
        raise NotSupportedError("MLX arrays are immutable to diface: there are no writable views")

    def shares_memory(self, a: Any, b: Any) -> bool:
        return False

    # dtypes ----------------------------------------------------------------------------------
    def astype(self, a: Any, dtype: Any) -> Any:
        if not isinstance(a, self.xp.array):
            return self.asarray(np.asarray(a, dtype=np_dtype(dtype)))
        return a.astype(mx_dtype(dtype))

    def result_type(self, *dtypes: Any) -> Any:
        return mx_dtype(np.result_type(*(np_dtype(d) for d in dtypes)))

    def is_floating(self, dtype: Any) -> bool:
        return np_dtype(dtype).kind == "f"

    def is_complex(self, dtype: Any) -> bool:
        return np_dtype(dtype).kind == "c"

    def eps(self, dtype: Any) -> float:
        return float(np.finfo(np_dtype(dtype)).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return mx_dtype(np.result_type(np_dtype(dtype), np.complex64))


register_array_ops("mlx", MlxOps)
