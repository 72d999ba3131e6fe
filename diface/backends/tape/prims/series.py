"""Taylor arithmetic: truncated series as lists [value, c₁, ..., c_K] of normalized coefficients
(cₖ = dₖ / k!; None: a zero coefficient), and the series rules of the elementwise functions written with
it (`Prim.taylor`: `rule(alg, input series, y₀, order) -> output series`), the standard recurrences of
Taylor arithmetic.

Every product of two coefficients goes through the algebra (`SeriesAlgebra`, `analysis.taylor.Algebra`):
in Taylor mode a coefficient is a batch of directions; in the collapsed pass of the exact Laplacian the
product of two first coefficients is summed over the directions, so that the same recurrences give
s₂ = f'(u) s₂(u) + f''(u)/2 Σᵢ (u₁ᵢ)² (normalized).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

__all__ = [
    "ARCCOS",
    "ARCCOSH",
    "ARCSIN",
    "ARCSINH",
    "ARCTAN",
    "ARCTAN2",
    "ARCTANH",
    "CBRT",
    "COS",
    "COSH",
    "DIVIDE",
    "EXP",
    "EXP2",
    "EXPM1",
    "HYPOT",
    "LOG",
    "LOG10",
    "LOG1P",
    "LOG2",
    "LOGADDEXP",
    "LOGADDEXP2",
    "NoSeries",
    "POWER",
    "RECIPROCAL",
    "SIN",
    "SINH",
    "SQRT",
    "SQUARE",
    "SeriesAlgebra",
    "TAN",
    "TANH",
    "add",
    "sqrt_series",
]


class NoSeries(Exception):
    """A rule has no series at these values: the call takes the core's derivation instead."""


class SeriesAlgebra(Protocol):
    """Products of coefficients (see `analysis.taylor.Algebra`)."""

    collapsed: bool
    strong: bool

    def mul(self, i: int, a: Any, j: int, b: Any) -> Any: ...

    def times(self, c: Any, t: Any) -> Any: ...

    def over(self, t: Any, d: Any) -> Any: ...


def add(terms: Any) -> Any:
    """The sum of the terms that are not None (None if all are)."""
    r = None
    for t in terms:
        if t is None:
            continue
        r = t if r is None else r + t
    return r


# -- series arithmetic: lists [value, c₁, ..., c_K] of normalized coefficients (None: zero) -----------------
def _product(alg: SeriesAlgebra, a: list, b: list, order: int) -> list:
    """The Cauchy product, to `order`."""
    out = [a[0] * b[0]]
    for k in range(1, order + 1):
        out.append(add(alg.mul(i, a[i], k - i, b[k - i]) for i in range(k + 1)))
    return out


def _shifted(a: list, c: float) -> list:
    return [a[0] + c, *a[1:]]


def _negated(a: list) -> list:
    return [-a[0], *(None if t is None else -t for t in a[1:])]


def _quotient(alg: SeriesAlgebra, a: list, b: list, y0: Any, order: int) -> list:
    """a / b: yₖ = (aₖ - Σ_{j=1..k} bⱼ yₖ₋ⱼ) / b₀."""
    y = [y0]
    for k in range(1, order + 1):
        s = add(alg.mul(j, b[j], k - j, y[k - j]) for j in range(1, k + 1))
        top = a[k] if s is None else (-s if a[k] is None else a[k] - s)
        y.append(alg.over(top, b[0]))
    return y


def _exp(alg: SeriesAlgebra, u: list, y0: Any, order: int) -> list:
    """exp: yₖ = (1/k) Σ_{j=1..k} j uⱼ yₖ₋ⱼ."""
    y = [y0]
    for k in range(1, order + 1):
        terms = (alg.times(float(j), alg.mul(j, u[j], k - j, y[k - j])) for j in range(1, k + 1))
        y.append(alg.times(1.0 / k, add(terms)))
    return y


def _log(alg: SeriesAlgebra, u: list, y0: Any, order: int) -> list:
    """log: yₖ = (uₖ - (1/k) Σ_{j=1..k-1} j yⱼ uₖ₋ⱼ) / u₀."""
    y = [y0]
    for k in range(1, order + 1):
        s = add(alg.times(j / k, alg.mul(j, y[j], k - j, u[k - j])) for j in range(1, k))
        top = u[k] if s is None else (-s if u[k] is None else u[k] - s)
        y.append(alg.over(top, u[0]))
    return y


def _sqrt(alg: SeriesAlgebra, u: list, y0: Any, order: int) -> list:
    """sqrt: yₖ = (uₖ - Σ_{j=1..k-1} yⱼ yₖ₋ⱼ) / (2 y₀)."""
    y = [y0]
    twice = 2 * y0
    for k in range(1, order + 1):
        s = add(alg.mul(j, y[j], k - j, y[k - j]) for j in range(1, k))
        top = u[k] if s is None else (-s if u[k] is None else u[k] - s)
        y.append(alg.over(top, twice))
    return y


def _power(alg: SeriesAlgebra, u: list, p: Any, y0: Any, order: int) -> list:
    """u ** p for a constant p: repeated products for a whole p (exact where u₀ = 0), else
    yₖ = (1/(k u₀)) Σ_{j=1..k} (p j - (k - j)) uⱼ yₖ₋ⱼ."""
    if np.ndim(p) == 0 and not isinstance(p, (int, float)):
        p = float(p)  # a NumPy number, or a 0-d array
    if isinstance(p, (int, float)) and float(p).is_integer() and abs(p) <= 64:
        n = int(abs(p))
        result: list = [1.0] + [None] * order
        base = u
        while n:
            if n & 1:
                result = _product(alg, result, base, order)
            n >>= 1
            if n:
                base = _product(alg, base, base, order)
        if p < 0:
            result = _quotient(alg, [1.0] + [None] * order, result, y0, order)
        result[0] = y0
        return result
    if np.any(np.equal(u[0], 0)):
        return _binomial_power(alg, u, p, y0, order)
    y = [y0]
    for k in range(1, order + 1):
        terms = (alg.times(p * j - (k - j), alg.mul(j, u[j], k - j, y[k - j])) for j in range(1, k + 1))
        y.append(alg.over(add(terms), k * u[0]))
    return y


def _binomial_power(alg: SeriesAlgebra, u: list, p: Any, y0: Any, order: int) -> list:
    """u ** p where some u₀ is 0 (the recurrence divides by u₀): Σₘ C(p, m) u₀^(p-m) δᵐ with δ = u - u₀,
    a term whose binomial coefficient is 0 (a whole p < m) left out, so that 0^2.5 has derivatives 0, 0,
    then inf, as the power rule's."""
    delta = [0.0, *u[1:]]
    power = delta
    y: list = [y0] + [None] * order
    binomial: Any = 1.0
    for m in range(1, order + 1):
        binomial = binomial * (p - (m - 1)) / m
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(np.equal(binomial, 0), 0.0, binomial * np.power(u[0], np.subtract(p, m)))
        for k in range(m, order + 1):
            y[k] = add((y[k], alg.times(factor, power[k])))
        if m < order:
            power = _product(alg, power, delta, order)
    return y


def _sin_cos(alg: SeriesAlgebra, u: list, s0: Any, c0: Any, order: int, sign: float) -> tuple[list, list]:
    """(sin, cos) (sign -1) or (sinh, cosh) (sign 1): sₖ = (1/k) Σ j uⱼ cₖ₋ⱼ, cₖ = ±(1/k) Σ j uⱼ sₖ₋ⱼ."""
    s, c = [s0], [c0]
    for k in range(1, order + 1):
        s.append(add(alg.times(j / k, alg.mul(j, u[j], k - j, c[k - j])) for j in range(1, k + 1)))
        c.append(add(alg.times(sign * j / k, alg.mul(j, u[j], k - j, s[k - j])) for j in range(1, k + 1)))
    return s, c


def _integral(alg: SeriesAlgebra, u: list, g: list, y0: Any, order: int) -> list:
    """y with y' = g u': yₖ = (1/k) Σ_{j=1..k} j uⱼ gₖ₋ⱼ (g to order - 1)."""
    y = [y0]
    for k in range(1, order + 1):
        y.append(add(alg.times(j / k, alg.mul(j, u[j], k - j, g[k - j])) for j in range(1, k + 1)))
    return y


def _tan_like(alg: SeriesAlgebra, u: list, y0: Any, order: int, sign: float) -> list:
    """tan (sign 1) or tanh (sign -1): y' = (1 ± y²) u', g built alongside y."""
    y = [y0]
    g = [1.0 + sign * y0 * y0]
    for k in range(1, order + 1):
        y.append(add(alg.times(j / k, alg.mul(j, u[j], k - j, g[k - j])) for j in range(1, k + 1)))
        if k < order:
            g.append(alg.times(sign, add(alg.mul(i, y[i], k - i, y[k - i]) for i in range(k + 1))))
    return y


def _inverse_trig(name: str) -> Callable:
    """arctan, arcsin, ...: y' = g(u) u' with g's series from u's."""

    def rule(alg: SeriesAlgebra, u: list, y0: Any, order: int) -> list:
        m = order - 1
        sq = _product(alg, u, u, m)
        if name == "arctan":
            q = _shifted(sq, 1.0)
            g = _quotient(alg, [1.0] + [None] * m, q, 1.0 / q[0], m)
        elif name == "arctanh":
            q = _shifted(_negated(sq), 1.0)
            g = _quotient(alg, [1.0] + [None] * m, q, 1.0 / q[0], m)
        else:
            q = {
                "arcsin": _shifted(_negated(sq), 1.0),
                "arccos": _shifted(_negated(sq), 1.0),
                "arcsinh": _shifted(sq, 1.0),
                "arccosh": _shifted(sq, -1.0),
            }[name]
            g = _power(alg, q, -0.5, q[0] ** -0.5, m)
            if name == "arccos":
                g = _negated(g)
        return _integral(alg, u, g, y0, order)

    return rule


def _unary(fn: Callable) -> Callable:
    """A rule of one input from a series function fn(alg, u, y0, order)."""

    def rule(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
        return fn(alg, us[0], y0, order)

    return rule


def _r_sin(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return _sin_cos(alg, us[0], y0, np.cos(us[0][0]), order, -1.0)[0]


def _r_cos(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return _sin_cos(alg, us[0], np.sin(us[0][0]), y0, order, -1.0)[1]


def _r_sinh(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return _sin_cos(alg, us[0], y0, np.cosh(us[0][0]), order, 1.0)[0]


def _r_cosh(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return _sin_cos(alg, us[0], np.sinh(us[0][0]), y0, order, 1.0)[1]


def _r_exp2(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    ln2 = math.log(2.0)
    return _exp(alg, [us[0][0], *(alg.times(ln2, t) for t in us[0][1:])], y0, order)


def _r_expm1(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return [y0, *_exp(alg, us[0], y0 + 1.0, order)[1:]]


def _log_base(base: float) -> Callable:
    def rule(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
        y = _log(alg, us[0], y0, order)
        return [y0, *(alg.times(1.0 / math.log(base), t) for t in y[1:])]

    return rule


def _r_log1p(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return _log(alg, _shifted(us[0], 1.0), y0, order)


def _r_square(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return [y0, *_product(alg, us[0], us[0], order)[1:]]


def _r_divide(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return _quotient(alg, us[0], us[1], y0, order)


def _r_reciprocal(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return _quotient(alg, [1.0] + [None] * order, us[0], y0, order)


def _r_cbrt(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    return _power(alg, us[0], 1.0 / 3.0, y0, order)


def _r_hypot(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    a, c = us
    q = _product(alg, a, a, order)
    q = [p_ if r_ is None else r_ if p_ is None else p_ + r_ for p_, r_ in zip(q, _product(alg, c, c, order))]
    return _sqrt(alg, q, y0, order)


def _r_arctan2(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    """arctan2(a, c): y' = (c a' - a c') / (a² + c²), the two factors' series from the inputs'."""
    a, c = us
    m = order - 1
    q = [
        p_ if r_ is None else r_ if p_ is None else p_ + r_
        for p_, r_ in zip(_product(alg, a, a, m), _product(alg, c, c, m))
    ]
    ga = _quotient(alg, c[: m + 1], q, c[0] / q[0], m)
    gc = _negated(_quotient(alg, a[: m + 1], q, a[0] / q[0], m))
    ya = _integral(alg, a, ga, y0, order)
    yc = _integral(alg, c, gc, y0, order)
    return [y0, *(add((p_, r_)) for p_, r_ in zip(ya[1:], yc[1:]))]


def _logaddexp(scale: float) -> Callable:
    """logaddexp (scale 1) and logaddexp2 (scale ln 2): m + log(exp(a - m) + exp(b - m)) with m the
    larger value (a constant, so each exp is at most 1)."""

    def rule(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
        a, b = ([u[0] * scale, *(alg.times(scale, t) for t in u[1:])] for u in us)
        m = np.maximum(a[0], b[0])
        ea = _exp(alg, [a[0] - m, *a[1:]], np.exp(a[0] - m), order)
        eb = _exp(alg, [b[0] - m, *b[1:]], np.exp(b[0] - m), order)
        total = [ea[0] + eb[0], *(add((p_, r_)) for p_, r_ in zip(ea[1:], eb[1:]))]
        y = _log(alg, total, None, order)
        return [y0, *(alg.times(1.0 / scale, t) for t in y[1:])]

    return rule


def _r_power(alg: SeriesAlgebra, us: list, y0: Any, order: int) -> list:
    a, p = us
    if all(t is None for t in p[1:]):  # a constant exponent
        return _power(alg, a, p[0], y0, order)
    if np.any(np.equal(a[0], 0)):  # exp(p log a) has no series there (the power rule takes log 0 as 0)
        raise NoSeries("a power with a traced exponent at a zero base")
    log_a = _log(alg, a, np.log(a[0]), order)  # a^p = exp(p log a)
    return _exp(alg, _product(alg, p, log_a, order), y0, order)


# -- the elementwise functions' rules, as `Prim.taylor` takes them (named after the NumPy ufunc) ------------
sqrt_series = _sqrt

EXP = _unary(_exp)
EXP2 = _r_exp2
EXPM1 = _r_expm1
LOG = _unary(_log)
LOG2 = _log_base(2.0)
LOG10 = _log_base(10.0)
LOG1P = _r_log1p
SQRT = _unary(_sqrt)
CBRT = _r_cbrt
SQUARE = _r_square
RECIPROCAL = _r_reciprocal
DIVIDE = _r_divide
POWER = _r_power
SIN = _r_sin
COS = _r_cos
SINH = _r_sinh
COSH = _r_cosh
TAN = _unary(lambda alg, u, y0, order: _tan_like(alg, u, y0, order, 1.0))
TANH = _unary(lambda alg, u, y0, order: _tan_like(alg, u, y0, order, -1.0))
ARCTAN = _unary(_inverse_trig("arctan"))
ARCTANH = _unary(_inverse_trig("arctanh"))
ARCSIN = _unary(_inverse_trig("arcsin"))
ARCCOS = _unary(_inverse_trig("arccos"))
ARCSINH = _unary(_inverse_trig("arcsinh"))
ARCCOSH = _unary(_inverse_trig("arccosh"))
HYPOT = _r_hypot
ARCTAN2 = _r_arctan2
LOGADDEXP = _logaddexp(1.0)
LOGADDEXP2 = _logaddexp(math.log(2.0))
