"""Sparse results as users get them: the values of a prepared pattern, in the array type of the input.

A sparse kernel returns its nonzeros, `data` `(nnz,)` in the pattern's CSR order, in the backend's
arrays; the call path hands them to the preparation's `SparseLayout`, which gives:

- NumPy input: a `scipy.sparse.csr_array` of shape (m, n);
- torch tensors: a `torch.sparse_csr_tensor` on the input's device;
- JAX arrays: a `jax.experimental.sparse.BCOO` (indices `(nnz, 2)`, rows then columns).

`out=` takes a sparse matrix of that type with exactly the prepared pattern (one a previous call
returned, say) and writes the values into it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._arrays import NUMPY
from .._errors import ArgumentError, NotSupportedError
from ._coloring import Coloring
from ._pattern import Pattern

__all__ = ["SparseLayout"]


class SparseLayout:
    """The pattern and coloring of a prepared sparse Jacobian or Hessian, and how its results are built."""

    def __init__(self, pattern: Pattern, coloring: Coloring) -> None:
        self.pattern = pattern
        self.coloring = coloring
        self._native: dict = {}

    @classmethod
    def prepared(cls, pattern: Pattern, coloring: Coloring, problem: Any) -> SparseLayout:
        """The layout of a preparation (`problem`: its `diface._problem.Problem`), whose first native
        result is built now: what the array library keeps per pattern and device (torch's CSR index
        tensors, JAX's BCOO indices) goes to x's device here, not in the first prepared call (on a GPU,
        a copy from the host there)."""
        layout = cls(pattern, coloring)
        ops = problem.ops
        if not problem.single_use and ops is not NUMPY and ops.is_native(problem.x):
            try:
                layout.build(ops, ops.zeros((pattern.nnz,), problem.x_dtype, problem.x), False)
            except NotSupportedError:  # no sparse matrix type: results for NumPy users only
                pass
        return layout

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape

    def scipy_pattern(self) -> Any:
        """The pattern as a boolean `scipy.sparse.csr_array`."""
        return self.pattern.to_scipy(np.ones(self.pattern.nnz, dtype=bool))

    def build(self, ops: Any, data: Any, user_numpy: bool) -> Any:
        """The sparse matrix holding `data` (NumPy data for NumPy users, native arrays otherwise)."""
        if user_numpy:
            return self.pattern.to_scipy(np.asarray(data))
        return ops.sparse_matrix(self.pattern, data)

    def check_out(self, name: str, buf: Any, user_numpy: bool, ops: Any, dtype: Any) -> None:
        """Raise `ArgumentError` unless `buf` is a sparse matrix of the result's type with this pattern."""
        if user_numpy:
            indptr, indices = getattr(buf, "indptr", None), getattr(buf, "indices", None)
            if getattr(buf, "format", None) != "csr" or indptr is None:
                raise ArgumentError(
                    f"{name}: out= must be a scipy.sparse CSR matrix of the prepared pattern (one this "
                    f"preparation returned, say), got {type(buf).__name__}"
                )
            if tuple(buf.shape) != self.shape or not (
                np.array_equal(indptr, self.pattern.indptr)
                and indices is not None
                and np.array_equal(indices, self.pattern.indices)
            ):
                raise ArgumentError(f"{name}: out= has another sparsity pattern than the preparation's")
            if buf.data.dtype != dtype:
                raise ArgumentError(f"{name}: out= holds {buf.data.dtype}, the result is {dtype}")
            return
        ops.check_sparse_out(buf, self.pattern, name, dtype)

    def write(self, ops: Any, buf: Any, data: Any, user_numpy: bool) -> Any:
        if user_numpy:
            np.copyto(buf.data, np.asarray(data))
        else:
            ops.write_sparse(buf, data)
        return buf
