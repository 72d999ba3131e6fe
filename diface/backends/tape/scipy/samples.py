"""The tape's rules for scipy.integrate's rules on samples (reached through `numpy.hooks`): trapezoid, simpson,
romb, cumulative_trapezoid and cumulative_simpson, for traced samples y, sample points x and spacing dx.

Each is SciPy's formula written with the same NumPy operations on traced values (SciPy converts its
inputs to plain arrays first): a sum of products of the samples with weights that depend on the
spacing, so the tape records it exactly, linear in y. SciPy's divisions guarded by `where=` (simpson's
weights where a spacing vanishes) are `where`s of a safe quotient here, so no infinite derivative is
taken where SciPy takes 0.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..data.graph import Traced
from ..data.sites import user_location
from ..numpy.hooks import hook
from ..prims.elementwise import WHERE
from ..prims.prim import shape_of
from ..tracing.tracer import operand
from .splines import constant, folding

__all__: list[str] = []


def _array(a: Any) -> Any:
    a = constant(operand(a))
    a = a if isinstance(a, Traced) else np.asarray(a)
    return a if a.dtype.kind in "fc" else a.astype(np.float64)


def _failures(bad: Any, what: str) -> int:
    """How many points fail a check SciPy raises on (`bad` marks them); on traced values the count is
    a guard (a "check": a replay where some point fails raises `TapeMismatchError`)."""
    if isinstance(bad, Traced):
        return int(cast(Any, bad).observe("check", what, user_location()))
    return int(np.count_nonzero(bad))


def _along(a: Any, axis: int, index: Any) -> Any:
    """`a[..., index, ...]` with the index on `axis`."""
    key: list[Any] = [slice(None)] * len(shape_of(a))
    key[axis] = index
    return a[tuple(key)]


def _safe_divide(num: Any, den: Any) -> Any:
    """num / den where den != 0, else 0 (NumPy's `true_divide(..., out=zeros, where=den != 0)`)."""
    nonzero = np.not_equal(den, 0)
    return WHERE(nonzero, np.divide(num, WHERE(nonzero, den, 1.0)), 0.0)


def trapezoid(kept: Any, y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    y = _array(y)
    nd = len(shape_of(y))
    if x is None:
        d: Any = operand(dx)
    else:
        x = _array(x)
        if len(shape_of(x)) == 1:
            d = np.subtract(x[1:], x[:-1])
            shape = [1] * nd
            shape[axis] = -1
            d = np.reshape(d, tuple(shape))
        else:
            x = np.broadcast_to(x, shape_of(y))
            d = np.subtract(_along(x, axis, slice(1, None)), _along(x, axis, slice(None, -1)))
    mid = np.add(_along(y, axis, slice(1, None)), _along(y, axis, slice(None, -1)))
    return np.sum(np.divide(np.multiply(d, mid), 2.0), axis=axis)


def _basic_simpson(y: Any, start: int, stop: int, x: Any, dx: Any, axis: int) -> Any:
    s0, s1, s2 = slice(start, stop, 2), slice(start + 1, stop + 1, 2), slice(start + 2, stop + 2, 2)
    if x is None:
        terms = np.add(np.add(_along(y, axis, s0), np.multiply(4.0, _along(y, axis, s1))), _along(y, axis, s2))
        r = np.sum(terms, axis=axis)
        return np.multiply(r, np.divide(dx, 3.0))
    h = np.diff(x, axis=axis)
    h0, h1 = _along(h, axis, s0), _along(h, axis, s1)
    hsum, hprod = np.add(h0, h1), np.multiply(h0, h1)
    h0divh1 = _safe_divide(h0, h1)
    tmp = np.multiply(
        np.divide(hsum, 6.0),
        np.add(
            np.add(
                np.multiply(_along(y, axis, s0), np.subtract(2.0, _safe_divide(1.0, h0divh1))),
                np.multiply(_along(y, axis, s1), np.multiply(hsum, _safe_divide(hsum, hprod))),
            ),
            np.multiply(_along(y, axis, s2), np.subtract(2.0, h0divh1)),
        ),
    )
    return np.sum(tmp, axis=axis)


def simpson(kept: Any, y: Any, x: Any = None, *, dx: Any = 1.0, axis: int = -1) -> Any:
    y = _array(y)
    nd = len(shape_of(y))
    n = shape_of(y)[axis]
    dx = operand(dx)
    if x is not None:
        x = _array(x)
        if len(shape_of(x)) == 1:
            shape = [1] * nd
            shape[axis] = shape_of(x)[0]
            x = np.reshape(x, tuple(shape))
        elif len(shape_of(x)) != nd:
            raise ValueError("If given, shape of x must be 1-D or the same as y.")
        if shape_of(x)[axis] != n:
            raise ValueError("If given, length of x along axis must be the same as y.")
    if n % 2 == 1:
        return _basic_simpson(y, 0, n - 2, x, dx, axis)
    last, second = _along(y, axis, -1), _along(y, axis, -2)
    if n == 2:
        width = dx if x is None else np.subtract(_along(x, axis, -1), _along(x, axis, -2))
        return np.multiply(np.multiply(0.5, width), np.add(last, second))
    result = _basic_simpson(y, 0, n - 3, x, dx, axis)
    if x is None:
        h0: Any = dx
        h1: Any = dx
    else:
        diffs = np.diff(x, axis=axis)
        h0 = np.squeeze(_along(diffs, axis, slice(-2, -1)), axis=axis)
        h1 = np.squeeze(_along(diffs, axis, slice(-1, None)), axis=axis)
    alpha = _safe_divide(
        np.add(np.multiply(2, np.square(h1)), np.multiply(np.multiply(3, h0), h1)), np.multiply(6, np.add(h1, h0))
    )
    beta = _safe_divide(np.add(np.square(h1), np.multiply(np.multiply(3.0, h0), h1)), np.multiply(6, h0))
    eta = _safe_divide(np.multiply(1, np.power(h1, 3)), np.multiply(np.multiply(6, h0), np.add(h0, h1)))
    third = _along(y, axis, -3)
    end = np.subtract(np.add(np.multiply(alpha, last), np.multiply(beta, second)), np.multiply(eta, third))
    return np.add(result, end)


def romb(kept: Any, y: Any, dx: Any = 1.0, axis: int = -1, show: bool = False) -> Any:
    if show:
        return kept(y, dx, axis, show)  # prints the table of plain numbers (refused on traced values)
    y = _array(y)
    intervals = shape_of(y)[axis] - 1
    n, k = 1, 0
    while n < intervals:
        n <<= 1
        k += 1
    if n != intervals:
        raise ValueError("Number of samples must be one plus a non-negative power of 2.")
    h = np.multiply(intervals, _array(dx).astype(np.float64))
    table: dict[tuple[int, int], Any] = {}
    table[(0, 0)] = np.multiply(np.divide(np.add(_along(y, axis, 0), _along(y, axis, -1)), 2.0), h)
    start = stop = step = intervals
    for i in range(1, k + 1):
        start >>= 1
        index = slice(start, stop, step)
        step >>= 1
        new = np.multiply(h, np.sum(_along(y, axis, index), axis=axis))
        table[(i, 0)] = np.multiply(0.5, np.add(table[(i - 1, 0)], new))
        for j in range(1, i + 1):
            prev = table[(i, j - 1)]
            table[(i, j)] = np.add(prev, np.divide(np.subtract(prev, table[(i - 1, j - 1)]), (1 << (2 * j)) - 1))
        h = np.divide(h, 2.0)
    return table[(k, k)]


def cumulative_trapezoid(kept: Any, y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1, initial: Any = None) -> Any:
    y = _array(y)
    nd = len(shape_of(y))
    if shape_of(y)[axis] == 0:
        raise ValueError("At least one point is required along `axis`.")
    if x is None:
        d: Any = operand(dx)
    else:
        x = _array(x)
        if len(shape_of(x)) == 1:
            d = np.diff(x)
            shape = [1] * nd
            shape[axis] = -1
            d = np.reshape(d, tuple(shape))
        elif len(shape_of(x)) != nd:
            raise ValueError("If given, shape of x must be 1-D or the same as y.")
        else:
            d = np.diff(x, axis=axis)
        if shape_of(d)[axis] != shape_of(y)[axis] - 1:
            raise ValueError("If given, length of x along axis must be the same as y.")
    mid = np.add(_along(y, axis, slice(1, None)), _along(y, axis, slice(None, -1)))
    res = np.cumsum(np.divide(np.multiply(d, mid), 2.0), axis=axis)
    if initial is not None:
        if initial != 0:
            raise ValueError("`initial` must be `None` or `0`.")
        if not np.isscalar(initial):
            raise ValueError("`initial` parameter should be a scalar.")
        shape = list(shape_of(res))
        shape[axis] = 1
        res = np.concatenate([np.full(tuple(shape), initial, dtype=res.dtype), res], axis=axis)
    return res


def _simpson_equal(y: Any, dx: Any) -> Any:
    d, f1, f2, f3 = dx[..., :-1], y[..., :-2], y[..., 1:-1], y[..., 2:]
    inner = np.subtract(np.add(np.divide(np.multiply(5, f1), 4), np.multiply(2, f2)), np.divide(f3, 4))
    return np.multiply(np.divide(d, 3), inner)


def _simpson_unequal(y: Any, dx: Any) -> Any:
    x21, x32 = dx[..., :-1], dx[..., 1:]
    f1, f2, f3 = y[..., :-2], y[..., 1:-1], y[..., 2:]
    x31 = np.add(x21, x32)
    x21_x31, x21_x32 = np.divide(x21, x31), np.divide(x21, x32)
    x21x21_x31x32 = np.multiply(x21_x31, x21_x32)
    coeff1 = np.subtract(3, x21_x31)
    coeff2 = np.add(np.add(3, x21x21_x31x32), x21_x31)
    coeff3 = np.negative(x21x21_x31x32)
    total = np.add(np.add(np.multiply(coeff1, f1), np.multiply(coeff2, f2)), np.multiply(coeff3, f3))
    return np.multiply(np.divide(x21, 6), total)


def _cumulative_simpson_sums(y: Any, dx: Any, integrate: Any) -> Any:
    h1 = integrate(y, dx)
    h2 = np.flip(integrate(np.flip(y, axis=-1), np.flip(dx, axis=-1)), axis=-1)
    m = shape_of(h1)[-1] + 1
    # SciPy's interleaving: even entries from h1, odd from h2, the last from h2's last
    parts = []
    for j in range(m):
        if j == m - 1:
            parts.append(h2[..., -1])
        elif j % 2 == 0:
            parts.append(h1[..., j])
        else:
            parts.append(h2[..., j - 1])
    return np.cumsum(np.stack(parts, axis=-1), axis=-1)


def cumulative_simpson(kept: Any, y: Any, *, x: Any = None, dx: Any = 1.0, axis: int = -1, initial: Any = None) -> Any:
    y = _array(y)
    original = shape_of(y)
    nd = len(original)
    if not -nd <= axis < nd:
        raise ValueError(f"`axis={axis}` is not valid for `y` with `y.ndim={nd}`.")
    yy = np.swapaxes(y, axis, -1)
    if shape_of(yy)[-1] < 3:
        res = cumulative_trapezoid(None, y, x, dx=dx, axis=axis, initial=None)
        res = np.swapaxes(res, axis, -1)
    elif x is not None:
        x = _array(x)
        if not (shape_of(x) == original or (len(shape_of(x)) == 1 and shape_of(x)[0] == original[axis])):
            raise ValueError(
                "If given, shape of `x` must be the same as `y` or 1-D with the same length as `y` along `axis`."
            )
        x = np.broadcast_to(x, shape_of(yy)) if len(shape_of(x)) == 1 else np.swapaxes(x, axis, -1)
        d = np.diff(x, axis=-1)
        if _failures(np.less_equal(d, 0), "the check that x is increasing (cumulative_simpson)"):
            raise ValueError("Input x must be strictly increasing.")
        res = _cumulative_simpson_sums(yy, d, _simpson_unequal)
    else:
        d = _array(dx)
        final = list(original)
        final[axis] -= 1
        alt = list(original)
        alt[axis] = 1
        if not (len(shape_of(d)) == 0 or shape_of(d) == tuple(alt)):
            raise ValueError(
                "If provided, `dx` must either be a scalar or have the same shape as `y` but with only 1 point "
                "along `axis`."
            )
        d = np.swapaxes(np.broadcast_to(d, tuple(final)), axis, -1)
        res = _cumulative_simpson_sums(yy, d, _simpson_equal)
    if initial is not None:
        initial = _array(initial)
        alt = list(original)
        alt[axis] = 1
        if not (len(shape_of(initial)) == 0 or shape_of(initial) == tuple(alt)):
            raise ValueError(
                "If provided, `initial` must either be a scalar or have the same shape as `y` but with only 1 "
                "point along `axis`."
            )
        initial = np.swapaxes(np.broadcast_to(initial, tuple(alt)), axis, -1)
        res = np.concatenate([initial, np.add(res, initial)], axis=-1)
    return np.swapaxes(res, -1, axis)


for _name, _rule in (
    ("trapezoid", trapezoid),
    ("simpson", simpson),
    ("romb", romb),
    ("cumulative_trapezoid", cumulative_trapezoid),
    ("cumulative_simpson", cumulative_simpson),
):
    hook("scipy.integrate", _name)(lambda rule=_rule: folding(rule, False))
