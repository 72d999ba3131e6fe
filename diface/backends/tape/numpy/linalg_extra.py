"""What the tape records for the rest of NumPy's linear algebra, composed from the recorded primitives:
lstsq (the pseudo-inverse's solution, which is LAPACK's minimum-norm least-squares solution, with the
same cut-off of small singular values), matrix_power (NumPy's sequence of products), multi_dot (NumPy's
order of products), cond, tensorsolve, tensorinv, and the array-API names of numpy.linalg
(vector_norm, matrix_norm, outer, cross, diagonal, trace, matrix_transpose, vecdot, tensordot)."""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np

from ..data.graph import Traced
from ..data.sites import user_location
from ..prims.decomp import PINV, SVD
from ..prims.elementwise import WHERE
from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..tracing.tracer import operand
from .common import axes_of, implements, ndim_of, reshape_of, transpose_of, write_out
from .linalg import _floating, _inv, _solve

__all__ = ["lstsq"]


class LstsqResult(NamedTuple):
    x: Any
    residuals: Any
    rank: int
    s: Any


def _rank_of(s: np.ndarray, cutoff: float) -> np.ndarray:
    return np.asarray(np.count_nonzero(s > cutoff * s.max(initial=0.0)), dtype=np.intp)


@implements(np.linalg.lstsq)
def lstsq(a: Any, b: Any, rcond: Any = None) -> LstsqResult:
    """x = pinv(a, rcond) @ b: the minimum-norm least-squares solution LAPACK's gelsd computes (singular
    values up to rcond times the largest treated as zero), differentiable where the rank stays the same;
    the rank is a guard (residuals are returned only at full column rank)."""
    a = _floating(operand(a), "lstsq")
    b = operand(b)
    if not np.issubdtype(b.dtype, np.inexact):
        b = b.astype(np.float64)
    if ndim_of(a) != 2:
        raise np.linalg.LinAlgError(f"{ndim_of(a)}-dimensional array given. Array must be two-dimensional")
    m, n = shape_of(a)
    vector = ndim_of(b) == 1
    if shape_of(b)[0] != m:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    if rcond is None:
        rcond = np.finfo(a.dtype).eps * max(m, n)
    elif rcond < 0:
        rcond = np.finfo(a.dtype).eps
    s = SVD[1](a)
    rank_value = NonDiff(lambda v: _rank_of(np.asarray(v), float(rcond)), "matrix_rank")(s)
    if isinstance(rank_value, Traced):
        rank = rank_value.observe("int", "the rank of the matrix numpy.linalg.lstsq solves", user_location())
    else:
        rank = int(rank_value)
    x = np.matmul(PINV(a, rcond=rcond), b)
    if rank == n and m > n:
        r = np.subtract(b, np.matmul(a, x))
        r2 = np.real(np.multiply(r, np.conjugate(r))) if r.dtype.kind == "c" else np.multiply(r, r)
        residuals = np.sum(r2, axis=0)
        if vector:
            residuals = np.reshape(residuals, (1,))
    else:
        residuals = np.zeros((0,), dtype=np.real(np.zeros((), a.dtype)).dtype)
    return LstsqResult(x, residuals, rank, s)


@implements(np.linalg.matrix_power)
def _matrix_power(a: Any, n: Any) -> Any:
    a = operand(a)
    shape = shape_of(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
    if shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        return np.broadcast_to(np.eye(shape[-1], dtype=a.dtype), shape).copy()
    if n < 0:
        a = _inv(a)
        n = abs(n)
    if n == 1:
        return a
    if n == 2:
        return np.matmul(a, a)
    if n == 3:
        return np.matmul(np.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else np.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else np.matmul(result, z)
    return result


@implements(np.linalg.multi_dot)
def _multi_dot(arrays: Any, *, out: Any = None) -> Any:
    return write_out(_chain(list(arrays)), out)


def _chain(arrays: list) -> Any:
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return np.dot(arrays[0], arrays[1])
    arrays = [operand(a) for a in arrays]
    first, last = ndim_of(arrays[0]), ndim_of(arrays[-1])
    if first == 1:
        arrays[0] = reshape_of(arrays[0], (1, -1))
    if last == 1:
        arrays[-1] = reshape_of(arrays[-1], (-1, 1))
    for a in arrays:
        if ndim_of(a) != 2:
            raise np.linalg.LinAlgError(f"{ndim_of(a)}-dimensional array given. Array must be two-dimensional")
    impl: Any = np.linalg._linalg
    if n == 3 and hasattr(impl, "_multi_dot_three"):
        result = impl._multi_dot_three(arrays[0], arrays[1], arrays[2])  # NumPy's choice, from the shapes
    elif hasattr(impl, "_multi_dot_matrix_chain_order") and hasattr(impl, "_multi_dot"):
        result = impl._multi_dot(arrays, impl._multi_dot_matrix_chain_order(arrays), 0, n - 1)
    else:  # pragma: no cover - NumPy without its helpers: left to right
        result = arrays[0]
        for a in arrays[1:]:
            result = np.dot(result, a)
    if first == 1 and last == 1:
        return result[0, 0]
    if first == 1 or last == 1:
        return np.ravel(result)
    return result


@implements(np.linalg.cond)
def _cond(x: Any, p: Any = None) -> Any:
    x = _floating(operand(x), "cond")
    if 0 in shape_of(x)[-2:]:
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    with np.errstate(all="ignore"):
        if p is None or p in (2, -2):
            s = SVD[1](x)
            r = np.divide(s[..., -1], s[..., 0]) if p == -2 else np.divide(s[..., 0], s[..., -1])
        else:
            r = np.multiply(np.linalg.norm(x, p, axis=(-2, -1)), np.linalg.norm(_inv(x), p, axis=(-2, -1)))
    nan = np.logical_and(np.isnan(r), np.logical_not(np.any(np.isnan(x), axis=(-2, -1))))
    return WHERE(nan, np.inf, r)


@implements(np.linalg.tensorsolve)
def _tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    a, b = operand(a), operand(b)
    an = ndim_of(a)
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k)
            order.insert(an, k)
        a = transpose_of(a, order)
    old = shape_of(a)[-(an - ndim_of(b)) :]
    size = int(np.prod(old, dtype=np.int64))
    if int(np.prod(shape_of(a), dtype=np.int64)) != size**2:
        raise np.linalg.LinAlgError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    return np.reshape(_solve(reshape_of(a, (size, size)), reshape_of(b, (-1,))), old)


@implements(np.linalg.tensorinv)
def _tensorinv(a: Any, ind: int = 2) -> Any:
    a = operand(a)
    old = shape_of(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    size = int(np.prod(old[ind:], dtype=np.int64))
    return np.reshape(_inv(reshape_of(a, (size, -1))), old[ind:] + old[:ind])


# -- the array-API names ---------------------------------------------------------------------------------------
@implements(np.linalg.vector_norm)
def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    x = operand(x)
    shape = list(shape_of(x))
    if axis is None:
        y, ax = reshape_of(x, (-1,)), 0
    elif isinstance(axis, tuple):
        axes = axes_of(axis, len(shape))
        rest = tuple(i for i in range(len(shape)) if i not in axes)
        moved = transpose_of(x, axes + rest)
        y = np.reshape(moved, (int(np.prod([shape[i] for i in axes], dtype=np.int64)), *[shape[i] for i in rest]))
        ax = 0
    else:
        y, ax = x, axis
    r = np.linalg.norm(y, axis=ax, ord=ord)
    if keepdims:
        for i in axes_of(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        r = np.reshape(r, tuple(shape))
    return r


@implements(np.linalg.matrix_norm)
def _matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    return np.linalg.norm(operand(x), axis=(-2, -1), keepdims=keepdims, ord=ord)


@implements(np.linalg.outer)
def _linalg_outer(x1: Any, x2: Any, /) -> Any:
    x1, x2 = operand(x1), operand(x2)
    if ndim_of(x1) != 1 or ndim_of(x2) != 1:
        raise ValueError(
            f"Input arrays must be one-dimensional, but they are x1.ndim={ndim_of(x1)} and x2.ndim={ndim_of(x2)}."
        )
    return np.outer(x1, x2)


@implements(np.linalg.cross)
def _linalg_cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    x1, x2 = operand(x1), operand(x2)
    if shape_of(x1)[axis] != 3 or shape_of(x2)[axis] != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
            f"{shape_of(x1)[axis]} and {shape_of(x2)[axis]} dimensional instead."
        )
    return np.cross(x1, x2, axis=axis)


@implements(np.linalg.diagonal)
def _linalg_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return np.diagonal(operand(x), offset, axis1=-2, axis2=-1)


@implements(np.linalg.trace)
def _linalg_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return np.trace(operand(x), offset, axis1=-2, axis2=-1, dtype=dtype)


@implements(np.linalg.matrix_transpose, np.matrix_transpose)
def _matrix_transpose(x: Any, /) -> Any:
    x = operand(x)
    if ndim_of(x) < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {ndim_of(x)}")
    return np.swapaxes(x, -1, -2)


@implements(np.linalg.vecdot)
def _linalg_vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    x1, x2 = operand(x1), operand(x2)
    conj = np.conjugate(x1) if np.iscomplexobj(x1) else x1
    return np.sum(np.multiply(conj, x2), axis=axis)


@implements(np.linalg.tensordot)
def _linalg_tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    return np.tensordot(operand(x1), operand(x2), axes=axes)
