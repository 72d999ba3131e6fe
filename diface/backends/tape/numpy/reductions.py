"""What the tape records for NumPy's reductions: sum, mean, var, std, average, prod, max, min, ptp,
cumsum, nansum, nanmean, linalg.norm."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..prims.contract import MATMUL
from ..prims.elementwise import WHERE, Ufunc
from ..prims.prim import into, shape_of
from ..prims.reduce import AMAX, AMIN, CUMSUM, PROD, SUM
from ..prims.series import SeriesAlgebra, sqrt_series
from ..tracing.tracer import operand
from .common import (
    NO,
    axes_of,
    axis_of,
    floating,
    implements,
    ndim_of,
    refuse_kwargs,
    reshape_of,
    unsupported,
    write_out,
)

__all__: list[str] = []


def _folding(prim: Any, combine: Any, name: str) -> Callable:
    """The handler of np.sum / np.prod: `prim` over the axes, `initial` folded in with `combine`."""

    def handler(
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = NO,
        where: Any = NO,
    ) -> Any:
        refuse_kwargs(name, where=where)
        a = operand(a)
        if dtype is not None:
            a = a.astype(dtype)
        r = prim(a, axis=axes_of(axis, ndim_of(a)), keepdims=bool(keepdims))
        return write_out(r if initial is NO else combine(r, initial), out)

    return handler


_sum = implements(np.sum)(_folding(SUM, np.add, "numpy.sum"))
implements(np.prod)(_folding(PROD, np.multiply, "numpy.prod"))


def count_of(shape: tuple, axes: tuple) -> int:
    return math.prod(shape[i] for i in axes)


@implements(np.mean)
def _mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, where: Any = NO) -> Any:
    refuse_kwargs("numpy.mean", where=where)
    a = operand(a)
    a = a.astype(dtype) if dtype is not None else floating(a)
    axes = axes_of(axis, a.ndim)
    return write_out(np.divide(SUM(a, axis=axes, keepdims=bool(keepdims)), count_of(a.shape, axes)), out)


@implements(np.var)
def _var(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: Any = 0,
    keepdims: bool = False,
    where: Any = NO,
    mean: Any = NO,
    correction: Any = NO,
) -> Any:
    refuse_kwargs("numpy.var", where=where, mean=mean, correction=correction)
    a = operand(a)
    a = a.astype(dtype) if dtype is not None else floating(a)
    axes = axes_of(axis, a.ndim)
    n = count_of(a.shape, axes)
    d = np.subtract(a, np.divide(SUM(a, axis=axes, keepdims=True), n))
    return write_out(np.divide(SUM(_abs2(d), axis=axes, keepdims=bool(keepdims)), max(n - ddof, 0)), out)


def _abs2(a: Any) -> Any:
    """|a|^2 elementwise (a * a for real a; a real array for complex a, as NumPy's var and norm)."""
    return np.real(np.multiply(a, np.conjugate(a))) if a.dtype.kind == "c" else np.multiply(a, a)


@implements(np.std)
def _std(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: Any = 0,
    keepdims: bool = False,
    where: Any = NO,
    mean: Any = NO,
    correction: Any = NO,
) -> Any:
    refuse_kwargs("numpy.std", where=where, mean=mean, correction=correction)
    return write_out(STD_ROOT(_var(a, axis, dtype, None, ddof, keepdims)), out)


def _d_std_root(ins: tuple, y: Any, out: Any) -> Any:
    """d sqrt(v) / dv = 1 / (2 sqrt(v)), and 0 where v = 0: std's derivative at a point of zero variance
    (one element, or all equal) is 0, as PyTorch gives (autograd and JAX give NaN for several equal
    elements; autograd, PyTorch and finite differences give 0 for one element)."""
    positive = np.greater(y, 0.0)
    return into(out, WHERE(positive, np.divide(0.5, WHERE(positive, y, 1.0)), 0.0))


def _taylor_std_root(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    """Taylor mode: sqrt's series where the variance is positive, zero where it is 0 (as its derivative,
    `_d_std_root`)."""
    positive = np.greater(y0, 0.0)
    y = sqrt_series(alg, us[0], np.where(positive, y0, 1.0), order)
    return [y0, *(None if t is None else np.where(positive, t, 0.0) for t in y[1:])]


#: the square root that ends np.std: its derivative is 0 where the variance is 0
STD_ROOT = Ufunc(np.sqrt, (_d_std_root,), taylor=_taylor_std_root)


@implements(np.average)
def _average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *, keepdims: bool = False) -> Any:
    a = floating(operand(a))
    if weights is None:
        avg = _mean(a, axis, keepdims=keepdims)
        total = np.asarray(float(count_of(a.shape, axes_of(axis, a.ndim))))
    else:
        w = operand(weights)
        if shape_of(w) != a.shape:
            if axis is None or len(shape_of(w)) != 1:
                raise unsupported("numpy.average", " with weights of another shape than a (and no axis)")
            ax = axis_of(axis, a.ndim)
            w = np.reshape(w, tuple(a.shape[i] if i == ax else 1 for i in range(a.ndim)))
            w = np.broadcast_to(w, a.shape)
        total = np.sum(w, axis=axis, keepdims=keepdims)
        avg = np.divide(np.sum(np.multiply(a, w), axis=axis, keepdims=keepdims), total)
    return (avg, np.broadcast_to(total, shape_of(avg))) if returned else avg


def _extreme(prim: Any, name: str) -> Callable:
    def handler(
        a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = NO, where: Any = NO
    ) -> Any:
        refuse_kwargs(name, where=where)
        a = operand(a)
        if a.size == 0 and initial is NO:
            raise ValueError(f"zero-size array to reduction operation {prim.name}imum which has no identity")
        r = prim(a, axis=axes_of(axis, ndim_of(a)), keepdims=bool(keepdims))
        if initial is not NO:
            r = (np.maximum if prim is AMAX else np.minimum)(r, initial)
        return write_out(r, out)

    return handler


implements(np.max, np.amax)(_extreme(AMAX, "numpy.max"))
implements(np.min, np.amin)(_extreme(AMIN, "numpy.min"))


@implements(np.ptp)
def _ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return write_out(np.subtract(np.max(a, axis=axis, keepdims=keepdims), np.min(a, axis=axis, keepdims=keepdims)), out)


@implements(np.cumsum)
def _cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    a = operand(a)
    if dtype is not None:
        a = a.astype(dtype)
    if axis is None:
        a, axis = reshape_of(a, (-1,)), 0
    return write_out(CUMSUM(a, axis=axis_of(axis, ndim_of(a))), out)


@implements(np.nansum)
def _nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    a = operand(a)
    return _sum(WHERE(np.isnan(a), 0.0, a), axis, dtype, out, keepdims)


@implements(np.nanmean)
def _nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    a = operand(a)
    keep = np.logical_not(np.isnan(a))
    total = _sum(WHERE(keep, a, 0.0), axis, dtype, None, keepdims)
    return write_out(np.divide(total, np.sum(keep, axis=axis, keepdims=keepdims)), out)


@implements(np.linalg.norm)
def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """NumPy's vector and matrix norms (NumPy's cases and order of checks)."""
    x = floating(operand(x))
    nd = x.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            flat = reshape_of(x, (-1,))
            r = np.sqrt(MATMUL(flat, flat) if x.dtype.kind != "c" else np.sum(_abs2(flat)))
            return np.reshape(r, (1,) * nd) if keepdims else r
        axis = tuple(range(nd))
    axes = axes_of(axis, nd)
    if len(axes) == 1:
        r = _vector_norm(x, ord, axes)
    elif len(axes) == 2:
        r = _matrix_norm(x, ord, axes)
    else:
        raise ValueError("Improper number of dimensions to norm.")
    if keepdims:
        r = np.reshape(r, tuple(1 if i in axes else n for i, n in enumerate(x.shape)))
    return r


def _vector_norm(x: Any, ord: Any, axes: tuple) -> Any:
    if ord is None or ord == 2:
        return np.sqrt(np.sum(_abs2(x), axis=axes))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    a = np.absolute(x)
    if ord == np.inf:
        return np.max(a, axis=axes)
    if ord == -np.inf:
        return np.min(a, axis=axes)
    if ord == 0:
        return np.sum(np.not_equal(x, 0), axis=axes).astype(x.dtype)
    if ord == 1:
        return np.sum(a, axis=axes)
    return np.power(np.sum(np.power(a, float(ord)), axis=axes), 1.0 / float(ord))


def _matrix_norm(x: Any, ord: Any, axes: tuple) -> Any:
    row, col = axes
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (None, "fro", "f"):
        return np.sqrt(np.sum(_abs2(x), axis=axes))
    if ord in (2, -2, "nuc"):
        values = np.linalg.svd(np.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
        if ord == "nuc":
            return np.sum(values, axis=-1)
        return (np.max if ord == 2 else np.min)(values, axis=-1)
    a = np.absolute(x)
    if ord in (1, -1):
        inner, outer = row, col
    elif ord in (np.inf, -np.inf):
        inner, outer = col, row
    else:
        raise ValueError("Invalid norm order for matrices.")
    if outer > inner:
        outer -= 1
    return (np.max if ord in (1, np.inf) else np.min)(np.sum(a, axis=inner), axis=outer)
