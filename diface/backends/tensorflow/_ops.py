"""TensorFlow tensors as the core sees them: `TensorFlowOps`, registered for tensors of an imported
tensorflow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._arrays import ArrayOps, register_array_ops
from ..._errors import ArgumentError, NotSupportedError
from ._env import tf

__all__ = ["TensorFlowOps"]


class TensorFlowOps(ArrayOps):
    """`tf.Tensor`s: immutable, on the host (a tensor on an accelerator crosses engines through host
    memory only after `.cpu()`-like copies TensorFlow makes itself)."""

    name = "tensorflow"
    mutable = False

    def __init__(self) -> None:
        self.tf = tf()
        self.array_types = (self.tf.Tensor, self.tf.Variable)
        self._eager = type(self.tf.constant(0.0))

    # conversions -----------------------------------------------------------------------------
    def asarray(self, a: Any, like: Any = None) -> Any:
        if isinstance(a, self.array_types):
            return a
        a = np.asarray(a)
        return self.tf.convert_to_tensor(a if a.flags.c_contiguous else np.ascontiguousarray(a))

    def to_numpy(self, a: Any) -> np.ndarray:
        if isinstance(a, self.array_types):
            return np.array(a)  # a writable copy (a tensor's .numpy() may share its buffer)
        return np.array(a)

    # construction ----------------------------------------------------------------------------
    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.tf.zeros(shape, dtype)

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.tf.eye(n, dtype=dtype)

    def copy(self, a: Any) -> Any:
        return self.tf.identity(a)

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        rows = np.eye(hi - lo, n, lo, dtype=np.dtype(self.tf.as_dtype(dtype).as_numpy_dtype))
        return self.tf.reshape(self.tf.constant(rows), (hi - lo, *shape))

    # shape -----------------------------------------------------------------------------------
    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.tf.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.tf.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return self.tf.concat(arrays, axis=0)

    def unstack(self, a: Any) -> list:
        return list(self.tf.unstack(a, num=a.shape[0])) if a.shape[0] else []

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        import tensorflow.experimental.numpy as tnp

        return tnp.moveaxis(a, source, destination)

    # arithmetic ------------------------------------------------------------------------------
    def matmul(self, a: Any, b: Any) -> Any:
        import tensorflow.experimental.numpy as tnp

        return tnp.matmul(a, b)

    def vdot(self, a: Any, b: Any) -> Any:
        return self.tf.reduce_sum(a * b)

    def abs(self, a: Any) -> Any:
        return self.tf.abs(a)

    def max(self, a: Any) -> Any:
        return self.tf.reduce_max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.tf.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.tf.math.imag(a)

    def real(self, a: Any) -> Any:
        return self.tf.math.real(a)

    def from_pairs(self, v: Any) -> Any:
        return self.tf.complex(v[..., 0], v[..., 1])

    def real_dtype(self, dtype: Any) -> Any:
        return self.tf.as_dtype(dtype).real_dtype

    def split(self, a: Any, sizes: tuple) -> list:
        if len(sizes) < 2:
            return super().split(a, sizes)
        return list(self.tf.split(a, list(sizes)))

    # crossing between engines ----------------------------------------------------------------
    def to_host(self, a: Any, what: str = "x") -> np.ndarray:
        device = getattr(a, "device", "") or ""
        if "GPU" in device or "TPU" in device:
            raise ArgumentError(
                f"DifferentiateWith: {what} is a TensorFlow tensor on {device}; the boundary between engines "
                "passes host memory: make it under tf.device('/CPU:0') first"
            )
        return np.asarray(a)

    def from_host(self, a: np.ndarray) -> Any:
        return self.asarray(a)

    def compile(self, fn: Callable) -> Callable:
        return fn  # compiled per preparation (tf.function with a fixed signature), not per call

    # sparse results (AutoSparse): tf.sparse.SparseTensor ---------------------------------------
    def sparse_matrix(self, pattern: Any, data: Any) -> Any:
        """A `tf.sparse.SparseTensor` (indices: rows and columns, in CSR order, made once per pattern)."""
        indices = pattern.memo(
            "tf-indices", lambda: self.tf.constant(np.stack([pattern.rows, pattern.cols], 1).astype(np.int64))
        )
        return self.tf.sparse.SparseTensor(indices, data, pattern.shape)

    def is_sparse(self, a: Any) -> bool:
        return isinstance(a, self.tf.sparse.SparseTensor)

    def sparse_to_dense(self, a: Any) -> Any:
        return self.tf.sparse.to_dense(a)

    # linear solves (Jacobian-inverse products) -------------------------------------------------
    def lu_factor(self, a: Any) -> Any:
        return self.tf.linalg.lu(a)

    def lu_solve(self, factors: Any, b: Any, transpose: bool = False) -> Any:
        lu, perm = factors
        if not transpose:
            return self.tf.linalg.lu_solve(lu, perm, b)
        # Aᵀ X = b with P A = L U: Uᵀ Lᵀ P X = b
        tf = self.tf
        n = lu.shape[0]
        lower = tf.linalg.band_part(lu, -1, 0) - tf.linalg.diag(tf.linalg.diag_part(lu)) + tf.eye(n, dtype=lu.dtype)
        upper = tf.linalg.band_part(lu, 0, -1)
        z = tf.linalg.triangular_solve(tf.transpose(upper), b, lower=True)
        w = tf.linalg.triangular_solve(tf.transpose(lower), z, lower=False)
        return tf.scatter_nd(tf.reshape(perm, (-1, 1)), w, tf.shape(w))

    def lu_diagonal(self, factors: Any) -> np.ndarray:
        return np.asarray(self.tf.linalg.diag_part(factors[0]))

    def norm(self, a: Any) -> float:
        return float(self.tf.norm(a))

    # writing: tensors cannot be written ------------------------------------------------------
    def copyto(self, dst: Any, src: Any) -> None:
        raise NotSupportedError("TensorFlow tensors are immutable and cannot be written into")

    def flat_view(self, a: Any) -> Any:
        raise NotSupportedError("TensorFlow tensors are immutable: there are no writable views")

    def shares_memory(self, a: Any, b: Any) -> bool:
        return False  # nothing can be written through an immutable tensor

    def equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))

    # dtypes ----------------------------------------------------------------------------------
    def astype(self, a: Any, dtype: Any) -> Any:
        a = self.asarray(a)
        dtype = self.tf.as_dtype(dtype)
        return a if a.dtype == dtype else self.tf.cast(a, dtype)

    def result_type(self, *dtypes: Any) -> Any:
        return self.tf.as_dtype(np.result_type(*(self._np(d) for d in dtypes)))

    def is_floating(self, dtype: Any) -> bool:
        return bool(self.tf.as_dtype(dtype).is_floating)

    def is_complex(self, dtype: Any) -> bool:
        return bool(self.tf.as_dtype(dtype).is_complex)

    def eps(self, dtype: Any) -> float:
        return float(np.finfo(self._np(dtype)).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return self.tf.as_dtype(np.result_type(self._np(dtype), np.complex64))

    def _np(self, dtype: Any) -> np.dtype:
        if isinstance(dtype, self.tf.DType):
            return np.dtype(dtype.as_numpy_dtype)
        return np.dtype(dtype)


register_array_ops("tensorflow", TensorFlowOps)
