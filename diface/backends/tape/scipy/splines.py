"""Piecewise polynomials and B-splines on traced values: what SciPy's interpolators compute in C
(`_ppoly.evaluate`, `fix_continuity`, `_dierckx.evaluate_spline`, the collocation matrix) and the
slopes their constructors compute, written with NumPy calls and the tape's banded solve, so that the
tape records them. `scipy.interpolate` hooks SciPy's classes onto these; every function here takes
plain arrays as well (and then computes plain arrays, recording nothing).

- A point is located with `np.searchsorted` on the breakpoints (or knots), clipped to the intervals
  as SciPy's interval search clips it (below the first: the first; at or beyond the last breakpoint:
  the last), then the interval's polynomial is evaluated: SciPy's power sum (increasing powers of
  s = x - x[i], the same operations in the same order) for a piecewise polynomial, de Boor's recursion
  (SciPy's `_deBoor_D`, step for step) for a B-spline. The search is recorded without a derivative and
  recomputed by a replay, so a prepared call at other points locates them again, no guard; the
  derivative in the point is the polynomial's derivative on its interval (at a breakpoint, the
  right-hand one, as SciPy's value there is the right-hand interval's).
- Linear systems (a cubic spline's slopes, a B-spline's collocation) are banded: `BANDED_SOLVE`, O(n)
  per solve and per derivative sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..data.graph import Traced
from ..numpy.common import literal_like
from ..prims.banded import BANDED_SOLVE
from ..prims.elementwise import WHERE
from ..prims.objects import holds_traced
from ..prims.prim import shape_of

__all__ = [
    "akima_slopes",
    "bspline_antiderivative",
    "bspline_derivative",
    "bspline_eval",
    "colloc_band",
    "constant",
    "fold",
    "folding",
    "cubic_spline_slopes",
    "hermite_coefficients",
    "is_traced",
    "pchip_slopes",
    "ppoly_antiderivative",
    "ppoly_eval",
]


def constant(a: Any) -> Any:
    """A traced array that no replay changes (an array f fills with constants, `np.array([...])` inside
    f) as its plain value, which SciPy would have taken; anything else as it is."""
    if isinstance(a, Traced) and not a._tape.slots[a._read()].variable:
        return np.asarray(a._value())
    return a


def fold(a: Any) -> Any:
    """`constant` through lists and tuples (a tck, a bc_type)."""
    if isinstance(a, Traced):
        return constant(a)
    if isinstance(a, (list, tuple)) and holds_traced(a):
        folded = [fold(v) for v in a]
        return folded if isinstance(a, list) else tuple(folded)
    return a


def folding(rule: Callable, always: bool) -> Callable:
    """A hook's rule that first takes constant traced arguments as plain values; for a rule that runs
    only on traced arguments (`always` False), SciPy's own function where none remains."""

    def run(kept: Any, *args: Any, **kwargs: Any) -> Any:
        args = tuple(fold(a) for a in args)
        kwargs = {k: fold(v) for k, v in kwargs.items()}
        if not always and not (holds_traced(args) or holds_traced(list(kwargs.values()))):
            return kept(*args, **kwargs)
        return rule(kept, *args, **kwargs)

    return run


def is_traced(*values: Any) -> bool:
    return any(isinstance(v, Traced) for v in values)


def gather(a: Any, i: Any) -> Any:
    """`a[i]` along the first axis, also for a plain `a` and a traced index (a literal of the tape)."""
    if isinstance(i, Traced) and not isinstance(a, Traced):
        a = literal_like(i, np.asarray(a))
    return a[i]


def _row(v: Any) -> Any:
    """`v` with a leading axis of length 1."""
    return np.reshape(v, (1, *shape_of(v)))


def _where_bad(bad: Any, r: Any) -> Any:
    """NaN in the rows of r (a `(p, t)` array) where the points are bad (outside, or NaN)."""
    if not isinstance(bad, Traced):
        bad = np.asarray(bad)
        if not bad.any():
            return r
    return WHERE(np.reshape(bad, (-1, 1)), np.nan, r)


# -- piecewise polynomials ---------------------------------------------------------------------------------
def ppoly_eval(c: Any, x: Any, xp: Any, nu: int, extrapolate: Any) -> Any:
    """SciPy's PPoly evaluation (`_ppoly.evaluate`): c `(k, m, t)`, x `(m + 1,)` ascending, xp `(p,)`;
    the nu-th derivative (nu < 0: the local antiderivative) at xp, shape `(p, t)`."""
    k, m = shape_of(c)[:2]
    if extrapolate == "periodic":
        xp = np.add(x[0], np.remainder(np.subtract(xp, x[0]), np.subtract(x[-1], x[0])))
        extrapolate = False
    i = np.clip(np.subtract(np.searchsorted(x, xp, side="right"), 1), 0, m - 1)
    s = np.subtract(xp, gather(x, i))
    g = gather(np.moveaxis(c, 1, 0), i)  # (p, k, t): each point's coefficients
    res: Any = None
    z: Any = None  # None: 1
    for _ in range(-nu):
        z = s if z is None else np.multiply(z, s)
    for kp in range(k):
        if nu > 0 and kp < nu:
            continue
        prefactor = 1.0
        if nu > 0:
            for q in range(kp, kp - nu, -1):
                prefactor *= q
        elif nu < 0:
            for q in range(kp, kp - nu):
                prefactor /= q + 1
        term = g[:, k - kp - 1]
        if z is not None:
            term = np.multiply(term, np.reshape(z, (-1, 1)))
        if prefactor != 1.0:
            term = np.multiply(term, prefactor)
        res = term if res is None else np.add(res, term)
        if kp < k - 1 and kp >= nu:
            z = s if z is None else np.multiply(z, s)
    if res is None:  # a derivative of order above the degree
        res = np.multiply(g[:, 0], 0.0)
    if extrapolate:
        bad = np.isnan(xp)
    else:
        bad = np.logical_not(np.logical_and(np.greater_equal(xp, x[0]), np.less_equal(xp, x[-1])))
    return _where_bad(bad, res)


def ppoly_antiderivative(c: Any, x: Any) -> Any:
    """The coefficients `(k + 1, m, t)` of SciPy's antiderivative (PPoly.antiderivative(1)): each
    polynomial integrated, its constant the previous piece's value at the breakpoint (0 on the first),
    as `fix_continuity` sets them (a cumulative sum here, the same values to rounding)."""
    k, m = shape_of(c)[:2]
    factor = np.arange(k, 0, -1, dtype=np.float64).reshape((k,) + (1,) * (len(shape_of(c)) - 1))
    top = np.divide(c, factor)
    h = np.reshape(np.diff(x), (m,) + (1,) * (len(shape_of(c)) - 2))
    rise: Any = None  # each piece's value at its right end, less its constant
    z: Any = h
    for kp in range(1, k + 1):
        term = np.multiply(top[k - kp], z)
        rise = term if rise is None else np.add(rise, term)
        if kp < k:
            z = np.multiply(z, h)
    constants = np.concatenate([np.zeros((1, *shape_of(c)[2:])), np.cumsum(rise[: m - 1], axis=0)], axis=0)
    return np.concatenate([top, _row(constants)], axis=0)


def hermite_coefficients(dx: Any, y: Any, dydx: Any) -> Any:
    """CubicHermiteSpline's coefficients `(4, n - 1, ...)` from the slopes at the breakpoints."""
    dxr = np.reshape(dx, (shape_of(dx)[0],) + (1,) * (len(shape_of(y)) - 1))
    slope = np.divide(np.diff(y, axis=0), dxr)
    t = np.divide(np.subtract(np.add(dydx[:-1], dydx[1:]), np.multiply(2, slope)), dxr)
    return np.stack(
        (np.divide(t, dxr), np.subtract(np.divide(np.subtract(slope, dydx[:-1]), dxr), t), dydx[:-1], y[:-1])
    )


# -- the slopes of SciPy's cubic interpolators --------------------------------------------------------------
def _one(v: Any) -> Any:
    return np.reshape(v, (1,))


def cubic_spline_slopes(x: Any, dx: Any, y: Any, bc: list) -> Any:
    """CubicSpline's slopes at the breakpoints (SciPy's linear systems, written with the tape's banded
    solve): bc holds two of 'not-a-knot', 'periodic', (1, value), (2, value), as SciPy validated them."""
    n = shape_of(x)[0]
    trail = shape_of(y)[1:]
    dxr = np.reshape(dx, (n - 1,) + (1,) * len(trail))
    slope = np.divide(np.diff(y, axis=0), dxr)
    if n == 2:
        bc = [(1, slope[0]) if b in ("not-a-knot", "periodic") else b for b in bc]
    if n == 3 and bc[0] == "not-a-knot" and bc[1] == "not-a-knot":
        zero, one = np.zeros(1), np.ones(1)
        a = np.stack(
            [
                np.concatenate([one, one, zero]),
                np.concatenate([_one(dx[1]), _one(np.multiply(2, np.add(dx[0], dx[1]))), _one(dx[0])]),
                np.concatenate([zero, one, one]),
            ]
        )
        b = np.stack(
            [
                np.multiply(2, slope[0]),
                np.multiply(3, np.add(np.multiply(dxr[0], slope[1]), np.multiply(dxr[1], slope[0]))),
                np.multiply(2, slope[1]),
            ]
        )
        return np.reshape(np.linalg.solve(a, np.reshape(b, (3, -1))), shape_of(b))
    if n == 3 and bc[0] == "periodic":
        t = np.divide(np.sum(np.divide(slope, dxr), axis=0), np.sum(np.divide(1.0, dxr), axis=0))
        return np.broadcast_to(t, (n, *trail))
    diagonal = np.multiply(2, np.add(dx[:-1], dx[1:]))
    inner = np.multiply(3, np.add(np.multiply(dxr[1:], slope[:-1]), np.multiply(dxr[:-1], slope[1:])))
    if bc[0] == "periodic":
        return _periodic_slopes(dx, dxr, slope, diagonal, inner, n)
    (d0, u0, b0), (dn, ln, bn) = _start_row(x, dx, dxr, y, slope, bc[0]), _end_row(x, dx, dxr, y, slope, bc[1])
    zero = np.zeros(1)
    ab = np.stack(
        [
            np.concatenate([zero, _one(u0), dx[:-1]]),
            np.concatenate([_one(d0), diagonal, _one(dn)]),
            np.concatenate([dx[1:], _one(ln), zero]),
        ]
    )
    b = np.concatenate([_row(b0), inner, _row(bn)], axis=0)
    return np.reshape(BANDED_SOLVE(ab, np.reshape(b, (n, -1)), lower=1, upper=1), shape_of(b))


def _start_row(x: Any, dx: Any, dxr: Any, y: Any, slope: Any, bc: Any) -> tuple:
    """(diagonal, upper, right-hand side) of the first row."""
    if bc == "not-a-knot":
        d = np.subtract(x[2], x[0])
        rhs = np.add(
            np.multiply(np.multiply(np.add(dxr[0], np.multiply(2, d)), dxr[1]), slope[0]),
            np.multiply(np.square(dxr[0]), slope[1]),
        )
        return dx[1], d, np.divide(rhs, d)
    order, value = bc
    if order == 1:
        return 1.0, 0.0, value
    rhs = np.add(np.multiply(np.multiply(-0.5, value), np.square(dx[0])), np.multiply(3, np.subtract(y[1], y[0])))
    return np.multiply(2, dx[0]), dx[0], rhs


def _end_row(x: Any, dx: Any, dxr: Any, y: Any, slope: Any, bc: Any) -> tuple:
    """(diagonal, lower, right-hand side) of the last row."""
    if bc == "not-a-knot":
        d = np.subtract(x[-1], x[-3])
        rhs = np.add(
            np.multiply(np.square(dxr[-1]), slope[-2]),
            np.multiply(np.multiply(np.add(np.multiply(2, d), dxr[-1]), dxr[-2]), slope[-1]),
        )
        return dx[-2], d, np.divide(rhs, d)
    order, value = bc
    if order == 1:
        return 1.0, 0.0, value
    rhs = np.add(np.multiply(np.multiply(0.5, value), np.square(dx[-1])), np.multiply(3, np.subtract(y[-1], y[-2])))
    return np.multiply(2, dx[-1]), dx[-1], rhs


def _periodic_slopes(dx: Any, dxr: Any, slope: Any, diagonal: Any, inner: Any, n: int) -> Any:
    """SciPy's periodic cubic spline (n >= 4): a cyclic tridiagonal system, solved as SciPy solves it
    (two banded solves and the corner's elimination)."""
    zero = np.zeros(1)
    # the (n - 2)-square banded part Ac of the cyclic matrix (SciPy's A[:, :-1] after the edits)
    ab = np.stack(
        [
            np.concatenate([zero, _one(dx[-1]), dx[: n - 4]]),
            np.concatenate([_one(np.multiply(2, np.add(dx[-1], dx[0]))), diagonal[: n - 3]]),
            dx[1 : n - 1],
        ]
    )
    b_first = np.multiply(3, np.add(np.multiply(dxr[0], slope[-1]), np.multiply(dxr[-1], slope[0])))
    b_last = np.multiply(3, np.add(np.multiply(dxr[-1], slope[-2]), np.multiply(dxr[-2], slope[-1])))
    b1 = np.concatenate([_row(b_first), inner[: n - 3]], axis=0)  # (n - 2, ...)
    trail = shape_of(b1)[1:]
    width = int(np.prod(trail, dtype=np.int64)) if trail else 1
    e_first = np.concatenate([_one(np.negative(dx[0])), np.zeros(n - 3)])
    e_last = np.concatenate([np.zeros(n - 3), _one(np.negative(dx[-3]))])
    b2 = np.reshape(np.add(e_first, e_last), (n - 2, 1))
    b2 = np.broadcast_to(b2, (n - 2, width))
    both = BANDED_SOLVE(ab, np.concatenate([np.reshape(b1, (n - 2, width)), b2], axis=1), lower=1, upper=1)
    s1 = np.reshape(both[:, :width], shape_of(b1))
    s2 = np.reshape(both[:, width:], shape_of(b1))
    a_m1_0, a_m1_m2 = dx[-2], dx[-1]
    a_m1_m1 = np.multiply(2, np.add(dx[-1], dx[-2]))
    num = np.subtract(np.subtract(b_last, np.multiply(a_m1_0, s1[0])), np.multiply(a_m1_m2, s1[-1]))
    den = np.add(np.add(a_m1_m1, np.multiply(a_m1_0, s2[0])), np.multiply(a_m1_m2, s2[-1]))
    s_m1 = np.divide(num, den)
    head = np.add(s1, np.multiply(s_m1, s2))
    return np.concatenate([head, _row(s_m1), head[:1]], axis=0)


def _edge_case(h0: Any, h1: Any, m0: Any, m1: Any) -> Any:
    """PchipInterpolator's one-sided three-point slope at an end, shape-preserving."""
    d = np.divide(np.subtract(np.multiply(np.add(np.multiply(2, h0), h1), m0), np.multiply(h0, m1)), np.add(h0, h1))
    mask = np.not_equal(np.sign(d), np.sign(m0))
    mask2 = np.logical_and(np.not_equal(np.sign(m0), np.sign(m1)), np.greater(np.abs(d), np.multiply(3.0, np.abs(m0))))
    mmm = np.logical_and(np.logical_not(mask), mask2)
    return WHERE(mask, 0.0, WHERE(mmm, np.multiply(3.0, m0), d))


def pchip_slopes(x: Any, y: Any) -> Any:
    """PchipInterpolator's slopes (`_find_derivatives`): the weighted harmonic mean of the neighbouring
    secants where they have one sign, 0 where they change sign or one vanishes. The harmonic mean is
    computed on safe values where it is not taken (so no infinite derivative meets a zero one)."""
    shape = shape_of(y)
    if len(shape) == 1:
        x, y = np.reshape(x, (-1, 1)), np.reshape(y, (-1, 1))
    else:
        x = np.reshape(x, (shape[0],) + (1,) * (len(shape) - 1))
    hk = np.subtract(x[1:], x[:-1])
    mk = np.divide(np.subtract(y[1:], y[:-1]), hk)
    if shape[0] == 2:
        return np.reshape(np.concatenate([mk, mk], axis=0), shape)
    smk = np.sign(mk)
    condition = np.logical_or(np.logical_or(np.not_equal(smk[1:], smk[:-1]), np.equal(mk[1:], 0)), np.equal(mk[:-1], 0))
    w1 = np.add(np.multiply(2, hk[1:]), hk[:-1])
    w2 = np.add(hk[1:], np.multiply(2, hk[:-1]))
    m0, m1 = WHERE(condition, 1.0, mk[:-1]), WHERE(condition, 1.0, mk[1:])
    whmean = np.divide(np.add(np.divide(w1, m0), np.divide(w2, m1)), np.add(w1, w2))
    inner = WHERE(condition, 0.0, np.divide(1.0, whmean))
    first = _edge_case(hk[0], hk[1], mk[0], mk[1])
    last = _edge_case(hk[-1], hk[-2], mk[-1], mk[-2])
    return np.reshape(np.concatenate([_row(first), inner, _row(last)], axis=0), shape)


def akima_slopes(x: Any, dx: Any, y: Any, method: str) -> Any:
    """Akima1DInterpolator's slopes (method 'akima' or 'makima'), as SciPy computes them."""
    n = shape_of(x)[0]
    trail = shape_of(y)[1:]
    if n == 2:
        xv = np.reshape(x, (n,) + (1,) * len(trail))
        mk = np.divide(np.subtract(y[1:], y[:-1]), np.subtract(xv[1:], xv[:-1]))
        return np.concatenate([mk, mk], axis=0)
    mid = np.divide(np.diff(y, axis=0), np.reshape(dx, (n - 1,) + (1,) * len(trail)))
    m1 = np.subtract(np.multiply(2.0, mid[0]), mid[1])
    m0 = np.subtract(np.multiply(2.0, m1), mid[0])
    mm2 = np.subtract(np.multiply(2.0, mid[-1]), mid[-2])
    mm1 = np.subtract(np.multiply(2.0, mm2), mid[-1])
    m = np.concatenate([_row(m0), _row(m1), mid, _row(mm2), _row(mm1)], axis=0)
    t = np.multiply(0.5, np.add(m[3:], m[:-3]))
    dm = np.abs(np.diff(m, axis=0))
    if method == "makima":
        pm = np.abs(np.add(m[1:], m[:-1]))
        f1 = np.add(dm[2:], np.multiply(0.5, pm[2:]))
        f2 = np.add(dm[:-2], np.multiply(0.5, pm[:-2]))
    else:
        f1, f2 = dm[2:], dm[:-2]
    f12 = np.add(f1, f2)
    ind = np.greater(f12, np.multiply(1.0e-9, np.max(f12)))
    safe = WHERE(ind, f12, 1.0)
    weighted = np.add(m[1 : n + 1], np.multiply(np.divide(f2, safe), np.subtract(m[2 : n + 2], m[1 : n + 1])))
    return WHERE(ind, weighted, t)


# -- B-splines ---------------------------------------------------------------------------------------------
def interval(t: Any, k: int, xp: Any) -> Any:
    """SciPy's `_find_interval` with extrapolation: t[l] <= x < t[l + 1], l clipped to [k, n - 1]."""
    n = shape_of(t)[0] - k - 1
    return np.clip(np.subtract(np.searchsorted(t, xp, side="right"), 1), k, n - 1)


def basis(t: Any, k: int, ell: Any, xp: Any, nu: int) -> list:
    """The k + 1 B-splines of degree k (or their nu-th derivatives) nonzero on the intervals `ell` at xp:
    SciPy's `_deBoor_D`, step for step (a Python float 1.0 stands for ones)."""
    if nu > k:
        zero = np.multiply(xp, 0.0)
        return [zero] * (k + 1)
    near = {o: gather(t, np.add(ell, o)) for o in range(1 - k, k + 1)}
    h: list[Any] = [1.0] + [0.0] * k
    for j in range(1, k + 1):
        hh = h[:j]
        h[0] = 0.0
        for n in range(1, j + 1):
            xb, xa = near[n], near[n - j]
            if j <= k - nu:
                w = np.divide(hh[n - 1], np.subtract(xb, xa))
                left = np.multiply(w, np.subtract(xb, xp))
                h[n - 1] = left if isinstance(h[n - 1], float) and h[n - 1] == 0.0 else np.add(h[n - 1], left)
                h[n] = np.multiply(w, np.subtract(xp, xa))
            else:
                w = np.divide(np.multiply(j, hh[n - 1]), np.subtract(xb, xa))
                h[n - 1] = np.subtract(h[n - 1], w)
                h[n] = w
    return h


def bspline_eval(t: np.ndarray, c: Any, k: int, xp: Any, nu: int, extrapolate: Any) -> Any:
    """SciPy's B-spline evaluation (`_dierckx.evaluate_spline`): c `(nc, m)`, xp `(p,)`: `(p, m)`."""
    n = shape_of(t)[0] - k - 1
    if extrapolate == "periodic":
        xp = np.add(t[k], np.remainder(np.subtract(xp, t[k]), t[n] - t[k]))
        extrapolate = False
    ell = interval(t, k, xp)
    h = basis(t, k, ell, xp, nu)
    out: Any = None
    for a in range(k + 1):
        term = gather(c, np.add(ell, a - k))
        if not isinstance(h[a], float):
            term = np.multiply(term, np.reshape(h[a], (-1, 1)))
        out = term if out is None else np.add(out, term)
    if extrapolate:
        bad = np.isnan(xp)
    else:
        bad = np.logical_not(np.logical_and(np.greater_equal(xp, t[k]), np.less_equal(xp, t[n])))
    return _where_bad(bad, out)


def colloc_band(x: np.ndarray, t: np.ndarray, k: int, left: list, right: list) -> np.ndarray:
    """The collocation matrix of make_interp_spline (plain values), in solve_banded's storage with k
    bands on each side: the rows of the derivatives `left` at x[0], of the values at x, of the
    derivatives `right` at x[-1]."""
    nt = t.shape[0] - k - 1
    ab = np.zeros((2 * k + 1, nt))

    def put(rows: np.ndarray, points: np.ndarray, nu: int) -> None:
        ell = interval(t, k, points)
        h = basis(t, k, ell, points, nu)
        for a in range(k + 1):
            col = ell - k + a
            ab[k + rows - col, col] = h[a]

    for r, nu in enumerate(left):
        put(np.array([r]), x[:1], nu)
    put(np.arange(x.shape[0]) + len(left), x, 0)
    for r, nu in enumerate(right):
        put(np.array([nt - len(right) + r]), x[-1:], nu)
    return ab


def bspline_derivative(t: np.ndarray, c: Any, k: int, nu: int) -> tuple:
    """SciPy's splder on (t, c, k), c padded to len(t): the derivative's (t, c, k)."""
    sh = (slice(None),) + (None,) * (len(shape_of(c)) - 1)
    for _ in range(nu):
        dt = t[k + 1 : -1] - t[1 : -k - 1]
        if np.any(dt == 0):
            raise ValueError(f"The spline has internal repeated knots and is not differentiable {nu} times")
        c = np.divide(np.multiply(np.subtract(c[1 : -1 - k], c[: -2 - k]), k), dt[sh])
        c = np.concatenate([c, np.zeros((k, *shape_of(c)[1:]))], axis=0)
        t = t[1:-1]
        k -= 1
    return t, c, k


def bspline_antiderivative(t: np.ndarray, c: Any, k: int, nu: int) -> tuple:
    """SciPy's splantider on (t, c, k), c padded to len(t): the antiderivative's (t, c, k)."""
    sh = (slice(None),) + (None,) * (len(shape_of(c)) - 1)
    for _ in range(nu):
        dt = t[k + 1 :] - t[: -k - 1]
        c = np.divide(np.cumsum(np.multiply(c[: -k - 1], dt[sh]), axis=0), k + 1)
        c = np.concatenate([np.zeros((1, *shape_of(c)[1:])), c, np.broadcast_to(c[-1:], (k + 2, *shape_of(c)[1:]))])
        t = np.r_[t[0], t, t[-1]]
        k += 1
    return t, c, k
