"""What the tape records for NumPy's reductions: sum, mean, var, std, average, prod, max, min, ptp,
cumsum, nansum, nanmean, linalg.norm."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._contract import MATMUL
from ._elementwise import WHERE
from ._np_common import (
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
from ._prim import shape_of
from ._reduce import AMAX, AMIN, CUMSUM, PROD, SUM
from ._tracer import operand

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
    return write_out(np.divide(SUM(np.multiply(d, d), axis=axes, keepdims=bool(keepdims)), max(n - ddof, 0)), out)


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
    return write_out(np.sqrt(_var(a, axis, dtype, None, ddof, keepdims)), out)


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
    x = floating(operand(x))
    if axis is None and ord is None:
        flat = reshape_of(x, (-1,))
        r = np.sqrt(MATMUL(flat, flat))
        return np.reshape(r, (1,) * x.ndim) if keepdims else r
    axes = axes_of(axis, x.ndim)
    if len(axes) == 1 or (ord in (None, "fro") and len(axes) == 2):
        if ord in (None, 2, "fro") and (ord != 2 or len(axes) == 1):
            return np.sqrt(np.sum(np.multiply(x, x), axis=axes, keepdims=keepdims))
        if len(axes) == 1 and ord == 1:
            return np.sum(np.absolute(x), axis=axes, keepdims=keepdims)
        if len(axes) == 1 and ord == np.inf:
            return np.max(np.absolute(x), axis=axes, keepdims=keepdims)
    raise unsupported("numpy.linalg.norm", f" with ord={ord!r}")
