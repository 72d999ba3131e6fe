"""Jacobian-inverse products through the Jacobian and its LU factorization (`method="dense"`).

At x: the backend's prepared Jacobian kernel gives J (and f(x)); J is factored once, and the factors
serve every right-hand side of the call, in both directions (`J X = T` and `Jᵀ X = T` are two solves
with the same factors). The factorization is the array library's: `scipy.linalg.lu_factor` for NumPy
(`numpy.linalg.solve` where SciPy is missing), `torch.linalg.lu_factor` for torch, on the tensor's
device, `jax.scipy.linalg.lu_factor` for JAX.

With `AutoSparse(dense)` the Jacobian is sparse: for NumPy it is a `scipy.sparse` matrix factored by
`scipy.sparse.linalg.splu` (SuperLU: its cost follows the fill-in, not n³); torch and JAX have no sparse
LU, so their sparse Jacobian is made dense on its device and factored as above.

A singular J raises `SingularError`: a zero pivot, a pivot below `n · ε · max|pivot|` (J is singular
to the accuracy of its entries: ε is the dtype's machine epsilon for exact engines, `eps ** a` for an
engine accurate to that, such as finite differences), or a non-finite one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._arrays import NUMPY
from .._errors import SingularError
from .._linearization import Linearization
from .._problem import Problem, size_of

__all__ = ["Factored", "dense_inverse"]


class Factored(Linearization):
    """J at one point, factored: `push` solves `J X = T`, `pull` solves `Jᵀ X = T`, for T stacked
    `(B, *y_shape)` (push) or `(B, *x_shape)` (pull)."""

    shareable = True  # the factors are only read

    def __init__(self, value: Any, solve: Callable[[Any, bool], Any] | None, problem: Problem, where: str) -> None:
        self.value = value
        self._solve = solve
        self.ops = problem.ops
        self.x_shape, self.y_shape = problem.x_shape, problem.y_spec[0]
        self.n = size_of(self.x_shape)
        self.where = where

    def push(self, tangents: Any) -> Any:
        return self._apply(tangents, False, self.x_shape)

    def pull(self, cotangents: Any) -> Any:
        return self._apply(cotangents, True, self.y_shape)

    def _apply(self, stacked: Any, transpose: bool, shape: tuple) -> Any:
        ops, b = self.ops, int(stacked.shape[0])
        solve = self._solve
        if self.n == 0 or solve is None:  # an empty x: no factors, nothing to solve
            return ops.zeros((b, *shape), stacked.dtype, stacked)
        columns = ops.moveaxis(ops.reshape(stacked, (b, self.n)), 0, 1)  # (n, B): one right-hand side each
        solved = solve(columns, transpose)
        if not np.all(np.isfinite(ops.to_numpy(ops.max(ops.abs(solved))))):
            raise SingularError(
                f"{self.where} (method='dense'): the solve with J's LU factors gave non-finite values: J is "
                "singular or too ill-conditioned at this x"
            )
        return ops.reshape(ops.moveaxis(solved, 0, 1), (b, *shape))


def dense_inverse(backend: Any, problem: Problem, where: str) -> tuple[str, Callable[[Any, tuple, Any], Factored]]:
    """The inverse linearizer of `method="dense"`: `make(x, cv, y)` computes J at x and factors it; with
    the name of the factorization: "sparse-lu" for a SciPy sparse J, "dense" otherwise."""
    ops = problem.ops
    n, m = size_of(problem.x_shape), size_of(problem.y_spec[0])
    jacobian = backend.prepare_jacobian(problem)
    layout = jacobian.layout
    sparse = layout is not None and ops is NUMPY
    # a pivot is zero to the accuracy of J's entries: eps for exact engines, more for finite differences
    accuracy = backend.accuracy_exponent

    def make(x: Any, cv: tuple, y: Any) -> Factored:
        value, _, jac = jacobian.run(x, None, cv, y, True)
        if n == 0:
            solve = None
        elif sparse:
            solve = _sparse_lu(layout.build(NUMPY, jac, True), accuracy, where)
        else:
            if layout is not None:  # torch or JAX sparse: no sparse LU there, factor it dense
                jac = ops.sparse_to_dense(layout.build(ops, jac, False))
            solve = _dense_lu(ops, ops.reshape(jac, (m, n)), accuracy, where)
        return Factored(value, solve, problem, where)

    return ("sparse-lu" if sparse else "dense"), make


def _dense_lu(ops: Any, matrix: Any, accuracy: float, where: str) -> Callable[[Any, bool], Any]:
    factors = ops.lu_factor(matrix)
    _check_pivots(ops.lu_diagonal(factors), ops.eps(matrix.dtype) ** accuracy, where)
    return lambda b, transpose: ops.lu_solve(factors, b, transpose)


def _sparse_lu(matrix: Any, accuracy: float, where: str) -> Callable[[Any, bool], Any]:
    from scipy.sparse.linalg import splu

    try:
        lu = splu(matrix.tocsc())
    except RuntimeError as e:  # SuperLU: "Factor is exactly singular"
        raise SingularError(f"{where} (method='dense'): J is singular at this x (sparse LU: {e})") from None
    _check_pivots(lu.U.diagonal(), float(np.finfo(matrix.dtype).eps) ** accuracy, where)
    return lambda b, transpose: lu.solve(np.asarray(b), trans="T" if transpose else "N")


def _check_pivots(pivots: np.ndarray, eps: float, where: str) -> None:
    """Raise `SingularError` unless every pivot of the factorization is finite and well away from zero
    (relative to the largest, in a dtype with machine epsilon `eps`)."""
    pivots = np.abs(np.asarray(pivots, dtype=np.float64))
    if pivots.size == 0:
        return
    largest = float(pivots.max())
    smallest = int(pivots.argmin())
    if not np.all(np.isfinite(pivots)) or largest == 0.0 or pivots[smallest] <= pivots.size * eps * largest:
        raise SingularError(
            f"{where} (method='dense'): J is singular at this x: its LU factorization has pivot {smallest} of "
            f"size {pivots[smallest]:.3g} against a largest of {largest:.3g} (J has rank below {pivots.size}, or "
            "non-finite entries); no solution is unique here. Check the point (a root-finding step that left "
            "the domain?) or regularize J"
        )
