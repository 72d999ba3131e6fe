"""What the tape records for NumPy's statistics: the NaN-ignoring reductions (nanmax, nanmin, nanprod,
nanvar, nanstd), order statistics (median, quantile, percentile and their nan- forms) and cov,
corrcoef.

Order statistics are gathers from the sorted values (`np.sort`, itself a gather through argsort): which
sorted positions are read, and with which interpolation weight, depends only on the number of values and
on q, so NumPy's own table of methods computes them (on plain numbers: at recording, or at each replay
for the nan- forms, whose number of values per lane depends on the data, by an operation without
derivative). The result is NumPy's interpolation formula on the gathered values: linear in the sorted
values, its derivative goes to the elements at those positions (with ties, to the one the sort put
there). q is not differentiated.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from ..data.graph import Traced
from ..prims.elementwise import WHERE
from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..tracing.tracer import constant, operand
from .common import NO, axes_of, floating, implements, refuse_kwargs, unsupported, write_out
from .reductions import STD_ROOT
from .shapes import take_along_axis

__all__: list[str] = []


def _kept(value: Any) -> Any:
    return False if value is NO else bool(value)


def _warn_all_nan(empty: Any) -> None:
    """NumPy's warning for a slice of NaNs only (at recording, where it sees one)."""
    if np.any(empty._value() if isinstance(empty, Traced) else empty):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)


# -- NaN-ignoring reductions --------------------------------------------------------------------------------
def _nan_extreme(reduce: Any, fill: float, name: str) -> Any:
    def handler(
        a: Any, axis: Any = None, out: Any = None, keepdims: Any = NO, initial: Any = NO, where: Any = NO
    ) -> Any:
        refuse_kwargs(name, where=where)
        a = operand(a)
        keep = _kept(keepdims)
        if not np.issubdtype(a.dtype, np.inexact):
            r = (
                reduce(a, axis=axis, keepdims=keep)
                if initial is NO
                else reduce(a, axis=axis, keepdims=keep, initial=initial)
            )
            return write_out(r, out)
        nan = np.isnan(a)
        r = reduce(WHERE(nan, fill, a), axis=axis, keepdims=keep)
        if initial is not NO:
            r = (np.maximum if reduce is np.max else np.minimum)(r, initial)
        empty = np.all(nan, axis=axis, keepdims=keep)
        _warn_all_nan(empty)
        r = WHERE(empty, np.nan, r)  # an all-NaN slice: NaN, as NumPy
        return write_out(r, out)

    return handler


implements(np.nanmax)(_nan_extreme(np.max, -np.inf, "numpy.nanmax"))
implements(np.nanmin)(_nan_extreme(np.min, np.inf, "numpy.nanmin"))


@implements(np.nanprod)
def _nanprod(
    a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = NO, initial: Any = NO, where: Any = NO
) -> Any:
    refuse_kwargs("numpy.nanprod", where=where)
    a = operand(a)
    if np.issubdtype(a.dtype, np.inexact):
        a = WHERE(np.isnan(a), 1.0, a)
    kw = {} if initial is NO else {"initial": initial}
    return np.prod(a, axis=axis, dtype=dtype, out=out, keepdims=_kept(keepdims), **kw)


@implements(np.nanvar)
def _nanvar(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: Any = 0,
    keepdims: Any = NO,
    *,
    where: Any = NO,
    mean: Any = NO,
    correction: Any = NO,
) -> Any:
    refuse_kwargs("numpy.nanvar", where=where, mean=mean)
    if correction is not NO:
        ddof = correction
    a = operand(a)
    a = a.astype(dtype) if dtype is not None else floating(a)
    keep = _kept(keepdims)
    valid = np.logical_not(np.isnan(a))
    arr = WHERE(valid, a, 0.0)
    count = np.sum(valid, axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # as NumPy's: an empty slice warns below
        avg = np.divide(np.sum(arr, axis=axis, keepdims=True), count)
        d = WHERE(valid, np.subtract(arr, avg), 0.0)
        sq = np.real(np.multiply(d, np.conjugate(d))) if d.dtype.kind == "c" else np.multiply(d, d)
        dof = np.subtract(np.sum(valid, axis=axis, keepdims=keep), ddof)
        var = np.divide(np.sum(sq, axis=axis, keepdims=keep), dof)
    bad = np.less_equal(dof, 0)
    if np.any(bad._value() if isinstance(bad, Traced) else bad):
        warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=3)
    return write_out(WHERE(bad, np.nan, var), out)


@implements(np.nanstd)
def _nanstd(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: Any = 0,
    keepdims: Any = NO,
    *,
    where: Any = NO,
    mean: Any = NO,
    correction: Any = NO,
) -> Any:
    var = _nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return write_out(STD_ROOT(var), out)


# -- order statistics ---------------------------------------------------------------------------------------
def _sorted_lanes(a: Any, axis: Any) -> tuple[Any, tuple, tuple]:
    """(a sorted along its reduced axes, moved last and flattened into one; the lanes' shape; the shape
    of the result with keepdims)."""
    nd = len(shape_of(a))
    axes = axes_of(axis, nd)
    shape = shape_of(a)
    rest = tuple(k for k in range(nd) if k not in axes)
    lanes = tuple(shape[k] for k in rest)
    n = int(np.prod([shape[k] for k in axes], dtype=np.int64))
    moved = np.transpose(a, rest + axes) if rest + axes != tuple(range(nd)) else a
    flat = np.reshape(moved, (*lanes, n))
    kept = tuple(1 if k in axes else shape[k] for k in range(nd))
    return np.sort(flat, axis=-1), lanes, kept


def _finish(r: Any, lanes: tuple, kept: tuple, keepdims: bool, lead: tuple = ()) -> Any:
    if keepdims:
        return np.reshape(r, lead + kept)
    return r


def _counts(s: Any, ignore_nan: bool) -> Any:
    """The number of values of each lane: n, or (nan- forms) those that are not NaN (sorted last)."""
    n = shape_of(s)[-1]
    if ignore_nan and np.issubdtype(s.dtype, np.inexact):
        return np.sum(np.logical_not(np.isnan(s)), axis=-1)
    return np.full(shape_of(s)[:-1], n, dtype=np.intp)


def _gather(s: Any, index: Any) -> Any:
    """s[..., index] per lane: index has shape lead + lanes (lead: q's shape); the result too."""
    lead = shape_of(index)[: len(shape_of(index)) - (len(shape_of(s)) - 1)]
    sb = np.broadcast_to(s, lead + shape_of(s))
    return take_along_axis(sb, np.expand_dims(index, -1), -1)[..., 0]


def _median_of(a: Any, axis: Any, keepdims: bool, ignore_nan: bool) -> Any:
    a = operand(a)
    if axis is not None and not isinstance(axis, (tuple, list)):
        axis = operator.index(axis)
    s, lanes, kept = _sorted_lanes(a, axis)
    n = shape_of(s)[-1]
    if n == 0:
        raise unsupported("numpy.median", " of an empty array")
    count = _counts(s, ignore_nan)
    lo = np.maximum(np.floor_divide(np.subtract(count, 1), 2), 0)
    hi = np.minimum(np.floor_divide(count, 2), n - 1)
    low, high = _gather(s, lo), _gather(s, hi)
    r = WHERE(np.equal(lo, hi), np.divide(low, 1.0), np.divide(np.add(low, high), 2.0))  # NumPy's mean of them
    if np.issubdtype(s.dtype, np.inexact):
        r = _nan_lanes(s, count, r, ignore_nan)
    return _finish(r, lanes, kept, keepdims)


def _nan_lanes(s: Any, count: Any, r: Any, ignore_nan: bool) -> Any:
    """NaN where a lane holds a NaN (an all-NaN lane for the nan- forms, with NumPy's warning)."""
    if ignore_nan:
        empty = np.equal(count, 0)
        _warn_all_nan(empty)
        return WHERE(empty, np.nan, r)
    last = s[..., -1]
    return WHERE(np.isnan(last), last, r)


@implements(np.median)
def _median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False) -> Any:
    return write_out(_median_of(a, axis, bool(keepdims), False), out)


@implements(np.nanmedian)
def _nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: Any = NO) -> Any:
    return write_out(_median_of(a, axis, _kept(keepdims), True), out)


def _methods() -> dict:
    """NumPy's table of quantile methods (`get_virtual_index`, `fix_gamma`), the linear one if absent."""
    table = getattr(np.lib._function_base_impl, "_QuantileMethods", None)
    if isinstance(table, dict):
        return table
    return {"linear": {"get_virtual_index": lambda n, q: (n - 1) * q, "fix_gamma": lambda gamma, _: gamma}}


def _positions(count: np.ndarray, q: np.ndarray, method: str) -> np.ndarray:
    """[previous, next, gamma] of NumPy's `_quantile` for lanes of `count` values, stacked (shape
    (3,) + q.shape + count.shape), on plain numbers."""
    props = _methods()[method]
    qb = np.reshape(q, q.shape + (1,) * count.ndim)
    cb = np.reshape(count, (1,) * q.ndim + count.shape)
    top = np.maximum(cb - 1, 0)
    v = np.asanyarray(props["get_virtual_index"](cb, qb))
    v, top = np.broadcast_arrays(v, top)
    if props["fix_gamma"] is None or (method == "linear" and np.issubdtype(v.dtype, np.integer)):
        index = np.clip(v, 0, top)
        return np.stack([index, index, np.zeros(v.shape)]).astype(np.float64)
    previous = np.floor(v)
    following = previous + 1
    above = v >= top
    below = v < 0
    nan = np.isnan(v)
    previous = np.where(above | nan, top, np.where(below, 0, previous))
    following = np.where(above | nan, top, np.where(below, 0, np.minimum(following, top)))
    gamma = np.asanyarray(props["fix_gamma"](np.asanyarray(v - previous), v), dtype=v.dtype)
    return np.stack([previous, following, np.broadcast_to(gamma, v.shape)]).astype(np.float64)


def _quantile_of(
    a: Any, q: Any, axis: Any, method: str, keepdims: bool, ignore_nan: bool, weights: Any, name: str
) -> Any:
    if weights is not None:
        raise unsupported(name, " with weights=")
    q = constant(q)
    if isinstance(q, Traced) or (isinstance(q, (list, tuple)) and any(isinstance(v, Traced) for v in q)):
        raise unsupported(name, " with respect to q (a traced q)")
    weak = type(q) in (int, float)
    q = np.asanyarray(q)
    if q.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    if method not in _methods():
        raise ValueError(f"{method!r} is not a valid method. Use one of: {_methods().keys()}")
    a = operand(a)
    if a.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    s, lanes, kept = _sorted_lanes(a, axis)
    if shape_of(s)[-1] == 0:
        raise unsupported(name, " of an empty array")
    count = _counts(s, ignore_nan)
    if isinstance(count, Traced):
        where = NonDiff(lambda c: _positions(np.asarray(c), q, method), "quantile_positions")(count)
    else:
        where = _positions(count, q, method)
    previous, following = where[0].astype(np.intp), where[1].astype(np.intp)
    gamma = where[2]
    if weak and np.issubdtype(s.dtype, np.floating):
        gamma = gamma.astype(s.dtype)
    low, high = _gather(s, previous), _gather(s, following)
    diff = np.subtract(high, low)
    r = WHERE(
        np.greater_equal(gamma, 0.5),
        np.subtract(high, np.multiply(diff, np.subtract(1, gamma))),
        np.add(low, np.multiply(diff, gamma)),
    )  # NumPy's _lerp
    if np.issubdtype(s.dtype, np.inexact):
        r = _nan_lanes(s, count, r, ignore_nan)
    return _finish(r, lanes, kept, keepdims, q.shape)


def _quantile_handler(name: str, scale: float, ignore_nan: bool) -> Any:
    def handler(
        a: Any,
        q: Any,
        axis: Any = None,
        out: Any = None,
        overwrite_input: bool = False,
        method: str = "linear",
        keepdims: Any = NO,
        *,
        weights: Any = None,
        interpolation: Any = None,
    ) -> Any:
        if interpolation is not None:
            method = interpolation
        if scale != 1.0:
            q = constant(q)
            if isinstance(q, Traced):
                raise unsupported(name, " with respect to q (a traced q)")
            weak = type(q) in (int, float)
            q = np.true_divide(q, scale)
            if weak:
                q = float(q)
        r = _quantile_of(a, q, axis, method, _kept(keepdims), ignore_nan, weights, name)
        return write_out(r, out)

    return handler


implements(np.quantile)(_quantile_handler("numpy.quantile", 1.0, False))
implements(np.percentile)(_quantile_handler("numpy.percentile", 100.0, False))
implements(np.nanquantile)(_quantile_handler("numpy.nanquantile", 1.0, True))
implements(np.nanpercentile)(_quantile_handler("numpy.nanpercentile", 100.0, True))


# -- covariance ---------------------------------------------------------------------------------------------
def _as_rows(m: Any, dtype: Any, rowvar: bool) -> Any:
    m = operand(m)
    if len(shape_of(m)) > 2:
        raise ValueError("m has more than 2 dimensions")
    x = m.astype(dtype) if m.dtype != dtype else m
    if len(shape_of(x)) < 2:
        x = np.reshape(x, (1,) * (2 - len(shape_of(x))) + shape_of(x))
    return x, m


def _weights(w: Any, n: int, name: str, integer: bool) -> Any:
    w = operand(w)
    if not isinstance(w, Traced):
        w = np.asarray(w, dtype=float)
        if integer and not np.all(w == np.around(w)):
            raise TypeError("fweights must be integer")
        if w.ndim <= 1 and w.shape[:1] == (n,) and np.any(w < 0):
            raise ValueError(f"{name} cannot be negative")
    elif w.dtype != np.float64:
        w = w.astype(np.float64)
    if len(shape_of(w)) > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if shape_of(w)[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    return w


@implements(np.cov)
def _cov(
    m: Any,
    y: Any = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: Any = None,
    fweights: Any = None,
    aweights: Any = None,
    *,
    dtype: Any = None,
) -> Any:
    """NumPy's cov, step by step (the same operations, on the tape)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = operand(m)
    y = None if y is None else operand(y)
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64) if y is None else np.result_type(m.dtype, y.dtype, np.float64)
    x, m = _as_rows(m, dtype, rowvar)
    if not rowvar and len(shape_of(m)) != 1:
        x = np.transpose(x)
    if shape_of(x)[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        yr, _ = _as_rows(y, dtype, rowvar)
        if not rowvar and shape_of(yr)[0] != 1:
            yr = np.transpose(yr)
        x = np.concatenate((x, yr), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    n = shape_of(x)[1]
    w = None
    fw = None if fweights is None else _weights(fweights, n, "fweights", True)
    aw = None if aweights is None else _weights(aweights, n, "aweights", False)
    if fw is not None:
        w = fw
    if aw is not None:
        w = aw if w is None else np.multiply(w, aw)
    avg, w_sum = np.average(x, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact: Any = n - ddof
    elif ddof == 0:
        fact = w_sum
    elif aw is None:
        fact = np.subtract(w_sum, ddof)
    else:
        fact = np.subtract(w_sum, np.divide(np.multiply(ddof, np.sum(np.multiply(w, aw))), w_sum))
    if not isinstance(fact, Traced) and fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    x = np.subtract(x, avg[:, None])
    xt = np.transpose(x) if w is None else np.transpose(np.multiply(x, w))
    c = np.dot(x, np.conjugate(xt) if xt.dtype.kind == "c" else xt)
    with np.errstate(divide="ignore"):
        c = np.multiply(c, np.true_divide(1, fact))
    return np.squeeze(c)


@implements(np.corrcoef)
def _corrcoef(x: Any, y: Any = None, rowvar: bool = True, bias: Any = NO, ddof: Any = NO, *, dtype: Any = None) -> Any:
    c = _cov(x, y, rowvar, dtype=dtype)
    if len(shape_of(c)) == 0:
        return np.divide(c, c)
    d = np.diagonal(c)
    stddev = np.sqrt(np.real(d) if d.dtype.kind == "c" else d)
    c = np.divide(c, stddev[:, None])
    c = np.divide(c, stddev[None, :])
    if c.dtype.kind == "c":
        return np.add(np.clip(np.real(c), -1, 1), np.multiply(1j, np.clip(np.imag(c), -1, 1)))
    return np.clip(c, -1, 1)
