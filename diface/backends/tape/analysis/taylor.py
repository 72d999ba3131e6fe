"""Taylor mode on the tape: truncated Taylor polynomials propagated through the recording, one pass per
batch of directions (`AutoTape.prepare_taylor`), and the collapsed second-order pass that carries one
summed second coefficient (`AutoTape.prepare_laplacian`, method "exact").

A prepared call replays the recording at x (the compiled forward replay, keeping every value the rules
read), then runs the plan: one step per node on the path from x to the output. A slot's coefficients
are one array `(R, *shape)`, its rows grouped by order (`Layout`): in Taylor mode K groups of B rows
(the normalized coefficients cₖ = dₖ / k! of each of the B directions), in collapsed mode n rows of
first coefficients (the directions: the basis of x) and one row holding Σᵢ c₂ of all of them. The
value (order 0) is the replay's, without a batch axis.

- linear operations (reshape, indexing, sums, concatenation, where, add, a product with a constant,
  ...) and piecewise-linear ones (abs, maximum, clip, max, remainder, ...) apply their JVP rule, taken
  at the replayed values, to all rows at once;
- bilinear ones (multiply, matmul, einsum, convolve of two traced operands) add the Cauchy cross terms
  Σᵢ P(aᵢ, bₖ₋ᵢ) (0 < i < k) to that;
- `inv` and `solve` of one square matrix: A(t) X(t) = C(t) gives Xₖ = A₀⁻¹ (Cₖ - Σⱼ Aⱼ Xₖ₋ⱼ); the
  banded solve of a constant matrix (a spline's system) is linear;
- elementwise functions (exp, log, sin, tanh, sqrt, power, divide, ...) follow the standard
  recurrences of Taylor arithmetic, written with one product `Algebra.mul`: in collapsed mode the
  product of two first coefficients is summed over the directions, so that the same recurrences give
  s₂ = f'(u) s₂(u) + f''(u)/2 Σᵢ (u₁ᵢ)² (normalized).

A recording holding an operation without a rule here (`prod`, `det`, decompositions, special
functions, complex values, ...) has no plan (`Plan.ok` False): `AutoTape` then uses the core's
derivation for the problem (nested pushforwards). Calls with traced arrays (AutoTape differentiating
what AutoTape computes) go to that derivation too.
"""

from __future__ import annotations

import copy
import math
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...._kernel import Kernel, Result
from ...._problem import Problem, size_of
from ..data.graph import Tape
from ..numpy.reductions import STD_ROOT
from ..prims.banded import BANDED_SOLVE
from ..prims.contract import EINSUM, MATMUL
from ..prims.convolve import CONVOLVE, convolve_full
from ..prims.elementwise import CLIP, UFUNC_PRIMS, WHERE, Ufunc, has_nan, quiet, strong_multiply
from ..prims.linalg import INV, SOLVE
from ..prims.prim import SUM_TO, expand_to, shape_of
from ..prims.reduce import AMAX, AMIN, CUMSUM, SUM
from ..prims.structure import ASTYPE, BROADCAST_TO, CONCATENATE, GETITEM, INDEX_ADD, RESHAPE, SETITEM, TRANSPOSE
from ..recording.record import Recording, record, recording_for, take_recording
from ..recording.replay import Replay, Replays, at_recorded_point, fresh, holds

__all__ = ["Algebra", "Layout", "NoSeries", "Plan", "TapeLaplacian", "TapeTaylor"]

#: coefficient rows times the largest slot a collapsed pass holds at once (the basis is chunked beyond)
CHUNK_BUDGET = 2**22


class NoSeries(Exception):
    """A rule has no series at these values: the call takes the core's derivation instead."""


# -- coefficient layout and products -------------------------------------------------------------------------
class Layout:
    """Rows of a coefficient array by order: `sizes[k - 1]` rows for order k."""

    def __init__(self, sizes: tuple[int, ...]) -> None:
        self.sizes = sizes
        self.order = len(sizes)
        starts = [0]
        for s in sizes:
            starts.append(starts[-1] + s)
        self.rows = [slice(0, 0)] + [slice(starts[k], starts[k + 1]) for k in range(len(sizes))]
        self.total = starts[-1]


class Algebra:
    """Products of coefficients: `mul(i, a, j, b)` is the product of an order-i and an order-j
    coefficient (order 0: a value, no batch axis). In collapsed mode two first coefficients give
    their product summed over the directions (one row). `strong`: products are strong and a zero
    numerator gives a zero quotient (0 * inf := 0, 0 / 0 := 0: a zero series through a function at a
    pole, a branch of `where` not taken), taken when a pass's result holds a NaN (see `has_nan`)."""

    def __init__(self, collapsed: bool, strong: bool = False) -> None:
        self.collapsed = collapsed
        self.strong = strong

    def mul(self, i: int, a: Any, j: int, b: Any) -> Any:
        if a is None or b is None:
            return None
        if self.collapsed and i and j:
            return _pair_sum(a, b, self.strong)
        return strong_multiply(a, b) if self.strong else a * b

    def times(self, c: Any, t: Any) -> Any:
        """t * c (None: zero)."""
        if t is None:
            return None
        return strong_multiply(t, c) if self.strong else t * c

    def over(self, t: Any, d: Any) -> Any:
        """t / d (None: zero)."""
        if t is None:
            return None
        r = t / d
        if self.strong and has_nan(np.asarray(r)):
            r = np.where(np.equal(t, 0), 0.0, r)
        return r


def _pair_sum(a: Any, b: Any, strong: bool = False) -> Any:
    """Σ over the leading axis of a * b, keeping it as one row."""
    if strong:
        return np.sum(strong_multiply(a, b), axis=0, keepdims=True)
    if a.shape == b.shape and a.ndim >= 1:
        flat_a = a.reshape(a.shape[0], -1)
        return np.einsum("ij,ij->j", flat_a, b.reshape(flat_a.shape)).reshape((1, *a.shape[1:]))
    return np.sum(a * b, axis=0, keepdims=True)


def _add(terms: Any) -> Any:
    """The sum of the terms that are not None (None if all are)."""
    r = None
    for t in terms:
        if t is None:
            continue
        r = t if r is None else r + t
    return r


# -- series arithmetic: lists [value, c₁, ..., c_K] of normalized coefficients (None: zero) -----------------
def _product(alg: Algebra, a: list, b: list, order: int) -> list:
    """The Cauchy product, to `order`."""
    out = [a[0] * b[0]]
    for k in range(1, order + 1):
        out.append(_add(alg.mul(i, a[i], k - i, b[k - i]) for i in range(k + 1)))
    return out


def _shifted(a: list, c: float) -> list:
    return [a[0] + c, *a[1:]]


def _negated(a: list) -> list:
    return [-a[0], *(None if t is None else -t for t in a[1:])]


def _quotient(alg: Algebra, a: list, b: list, y0: Any, order: int) -> list:
    """a / b: yₖ = (aₖ - Σ_{j=1..k} bⱼ yₖ₋ⱼ) / b₀."""
    y = [y0]
    for k in range(1, order + 1):
        s = _add(alg.mul(j, b[j], k - j, y[k - j]) for j in range(1, k + 1))
        top = a[k] if s is None else (-s if a[k] is None else a[k] - s)
        y.append(alg.over(top, b[0]))
    return y


def _exp(alg: Algebra, u: list, y0: Any, order: int) -> list:
    """exp: yₖ = (1/k) Σ_{j=1..k} j uⱼ yₖ₋ⱼ."""
    y = [y0]
    for k in range(1, order + 1):
        terms = (alg.times(float(j), alg.mul(j, u[j], k - j, y[k - j])) for j in range(1, k + 1))
        y.append(alg.times(1.0 / k, _add(terms)))
    return y


def _log(alg: Algebra, u: list, y0: Any, order: int) -> list:
    """log: yₖ = (uₖ - (1/k) Σ_{j=1..k-1} j yⱼ uₖ₋ⱼ) / u₀."""
    y = [y0]
    for k in range(1, order + 1):
        s = _add(alg.times(j / k, alg.mul(j, y[j], k - j, u[k - j])) for j in range(1, k))
        top = u[k] if s is None else (-s if u[k] is None else u[k] - s)
        y.append(alg.over(top, u[0]))
    return y


def _sqrt(alg: Algebra, u: list, y0: Any, order: int) -> list:
    """sqrt: yₖ = (uₖ - Σ_{j=1..k-1} yⱼ yₖ₋ⱼ) / (2 y₀)."""
    y = [y0]
    twice = 2 * y0
    for k in range(1, order + 1):
        s = _add(alg.mul(j, y[j], k - j, y[k - j]) for j in range(1, k))
        top = u[k] if s is None else (-s if u[k] is None else u[k] - s)
        y.append(alg.over(top, twice))
    return y


def _power(alg: Algebra, u: list, p: Any, y0: Any, order: int) -> list:
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
        y.append(alg.over(_add(terms), k * u[0]))
    return y


def _binomial_power(alg: Algebra, u: list, p: Any, y0: Any, order: int) -> list:
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
            y[k] = _add((y[k], alg.times(factor, power[k])))
        if m < order:
            power = _product(alg, power, delta, order)
    return y


def _sin_cos(alg: Algebra, u: list, s0: Any, c0: Any, order: int, sign: float) -> tuple[list, list]:
    """(sin, cos) (sign -1) or (sinh, cosh) (sign 1): sₖ = (1/k) Σ j uⱼ cₖ₋ⱼ, cₖ = ±(1/k) Σ j uⱼ sₖ₋ⱼ."""
    s, c = [s0], [c0]
    for k in range(1, order + 1):
        s.append(_add(alg.times(j / k, alg.mul(j, u[j], k - j, c[k - j])) for j in range(1, k + 1)))
        c.append(_add(alg.times(sign * j / k, alg.mul(j, u[j], k - j, s[k - j])) for j in range(1, k + 1)))
    return s, c


def _integral(alg: Algebra, u: list, g: list, y0: Any, order: int) -> list:
    """y with y' = g u': yₖ = (1/k) Σ_{j=1..k} j uⱼ gₖ₋ⱼ (g to order - 1)."""
    y = [y0]
    for k in range(1, order + 1):
        y.append(_add(alg.times(j / k, alg.mul(j, u[j], k - j, g[k - j])) for j in range(1, k + 1)))
    return y


def _tan_like(alg: Algebra, u: list, y0: Any, order: int, sign: float) -> list:
    """tan (sign 1) or tanh (sign -1): y' = (1 ± y²) u', g built alongside y."""
    y = [y0]
    g = [1.0 + sign * y0 * y0]
    for k in range(1, order + 1):
        y.append(_add(alg.times(j / k, alg.mul(j, u[j], k - j, g[k - j])) for j in range(1, k + 1)))
        if k < order:
            g.append(alg.times(sign, _add(alg.mul(i, y[i], k - i, y[k - i]) for i in range(k + 1))))
    return y


def _inverse_trig(name: str) -> Callable:
    """arctan, arcsin, ...: y' = g(u) u' with g's series from u's."""

    def rule(alg: Algebra, u: list, y0: Any, order: int) -> list:
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

    def rule(alg: Algebra, us: list, y0: Any, order: int) -> list:
        return fn(alg, us[0], y0, order)

    return rule


def _r_sin(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return _sin_cos(alg, us[0], y0, np.cos(us[0][0]), order, -1.0)[0]


def _r_cos(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return _sin_cos(alg, us[0], np.sin(us[0][0]), y0, order, -1.0)[1]


def _r_sinh(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return _sin_cos(alg, us[0], y0, np.cosh(us[0][0]), order, 1.0)[0]


def _r_cosh(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return _sin_cos(alg, us[0], np.sinh(us[0][0]), y0, order, 1.0)[1]


def _r_exp2(alg: Algebra, us: list, y0: Any, order: int) -> list:
    ln2 = math.log(2.0)
    return _exp(alg, [us[0][0], *(alg.times(ln2, t) for t in us[0][1:])], y0, order)


def _r_expm1(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return [y0, *_exp(alg, us[0], y0 + 1.0, order)[1:]]


def _log_base(base: float) -> Callable:
    def rule(alg: Algebra, us: list, y0: Any, order: int) -> list:
        y = _log(alg, us[0], y0, order)
        return [y0, *(alg.times(1.0 / math.log(base), t) for t in y[1:])]

    return rule


def _r_log1p(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return _log(alg, _shifted(us[0], 1.0), y0, order)


def _r_square(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return [y0, *_product(alg, us[0], us[0], order)[1:]]


def _r_multiply(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return [y0, *_product(alg, us[0], us[1], order)[1:]]


def _r_divide(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return _quotient(alg, us[0], us[1], y0, order)


def _r_reciprocal(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return _quotient(alg, [1.0] + [None] * order, us[0], y0, order)


def _r_cbrt(alg: Algebra, us: list, y0: Any, order: int) -> list:
    return _power(alg, us[0], 1.0 / 3.0, y0, order)


def _r_std_root(alg: Algebra, us: list, y0: Any, order: int) -> list:
    """np.std's square root: sqrt's series where the variance is positive, zero where it is 0 (its
    derivative there is taken as 0, see `_np_reductions._d_std_root`)."""
    positive = np.greater(y0, 0.0)
    y = _sqrt(alg, us[0], np.where(positive, y0, 1.0), order)
    return [y0, *(None if t is None else np.where(positive, t, 0.0) for t in y[1:])]


def _r_hypot(alg: Algebra, us: list, y0: Any, order: int) -> list:
    a, c = us
    q = _product(alg, a, a, order)
    q = [p_ if r_ is None else r_ if p_ is None else p_ + r_ for p_, r_ in zip(q, _product(alg, c, c, order))]
    return _sqrt(alg, q, y0, order)


def _r_arctan2(alg: Algebra, us: list, y0: Any, order: int) -> list:
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
    return [y0, *(_add((p_, r_)) for p_, r_ in zip(ya[1:], yc[1:]))]


def _logaddexp(scale: float) -> Callable:
    """logaddexp (scale 1) and logaddexp2 (scale ln 2): m + log(exp(a - m) + exp(b - m)) with m the
    larger value (a constant, so each exp is at most 1)."""

    def rule(alg: Algebra, us: list, y0: Any, order: int) -> list:
        a, b = ([u[0] * scale, *(alg.times(scale, t) for t in u[1:])] for u in us)
        m = np.maximum(a[0], b[0])
        ea = _exp(alg, [a[0] - m, *a[1:]], np.exp(a[0] - m), order)
        eb = _exp(alg, [b[0] - m, *b[1:]], np.exp(b[0] - m), order)
        total = [ea[0] + eb[0], *(_add((p_, r_)) for p_, r_ in zip(ea[1:], eb[1:]))]
        y = _log(alg, total, None, order)
        return [y0, *(alg.times(1.0 / scale, t) for t in y[1:])]

    return rule


def _r_power(alg: Algebra, us: list, y0: Any, order: int) -> list:
    a, p = us
    if all(t is None for t in p[1:]):  # a constant exponent
        return _power(alg, a, p[0], y0, order)
    if np.any(np.equal(a[0], 0)):  # exp(p log a) has no series there (the power rule takes log 0 as 0)
        raise NoSeries("a power with a traced exponent at a zero base")
    log_a = _log(alg, a, np.log(a[0]), order)  # a^p = exp(p log a)
    return _exp(alg, _product(alg, p, log_a, order), y0, order)


#: the elementwise functions with a series rule: rule(alg, input series, y₀, order) -> series
SERIES: dict[np.ufunc, Callable] = {
    np.exp: _unary(_exp),
    np.exp2: _r_exp2,
    np.expm1: _r_expm1,
    np.log: _unary(_log),
    np.log2: _log_base(2.0),
    np.log10: _log_base(10.0),
    np.log1p: _r_log1p,
    np.sqrt: _unary(_sqrt),
    np.cbrt: _r_cbrt,
    np.square: _r_square,
    np.reciprocal: _r_reciprocal,
    np.multiply: _r_multiply,
    np.divide: _r_divide,
    np.power: _r_power,
    np.float_power: _r_power,
    np.sin: _r_sin,
    np.cos: _r_cos,
    np.sinh: _r_sinh,
    np.cosh: _r_cosh,
    np.tan: _unary(lambda alg, u, y0, order: _tan_like(alg, u, y0, order, 1.0)),
    np.tanh: _unary(lambda alg, u, y0, order: _tan_like(alg, u, y0, order, -1.0)),
    np.arctan: _unary(_inverse_trig("arctan")),
    np.arctanh: _unary(_inverse_trig("arctanh")),
    np.arcsin: _unary(_inverse_trig("arcsin")),
    np.arccos: _unary(_inverse_trig("arccos")),
    np.arcsinh: _unary(_inverse_trig("arcsinh")),
    np.arccosh: _unary(_inverse_trig("arccosh")),
    np.hypot: _r_hypot,
    np.arctan2: _r_arctan2,
    np.logaddexp: _logaddexp(1.0),
    np.logaddexp2: _logaddexp(math.log(2.0)),
}

#: ufuncs whose JVP rule, taken at the values, gives every coefficient: linear, or linear on each piece
#: (their partial derivatives are piecewise constant)
LINEAR_UFUNCS = (
    np.add, np.subtract, np.negative, np.positive, np.conjugate, np.absolute, np.fabs, np.maximum,
    np.minimum, np.fmax, np.fmin, np.copysign, np.remainder, np.fmod, np.deg2rad, np.radians, np.rad2deg,
    np.degrees, np.ldexp,
)  # fmt: skip

_SERIES_PRIMS = {id(UFUNC_PRIMS[u]): rule for u, rule in SERIES.items()} | {id(STD_ROOT): _r_std_root}
_LINEAR_PRIMS = {id(UFUNC_PRIMS[u]) for u in LINEAR_UFUNCS} | {
    id(p)
    for p in (
        RESHAPE, TRANSPOSE, BROADCAST_TO, ASTYPE, GETITEM, INDEX_ADD, SETITEM, CONCATENATE, SUM, CUMSUM, SUM_TO,
        WHERE, CLIP, AMAX, AMIN,
    )
}  # fmt: skip
#: linear in each operand: with one traced operand a linear step, with two the Cauchy cross terms too
_BILINEAR = {id(UFUNC_PRIMS[np.multiply]), id(MATMUL), id(EINSUM), id(CONVOLVE)}
#: elementwise rules that are linear in the numerator alone
_DIVIDE = id(UFUNC_PRIMS[np.divide])


# -- cross terms of bilinear operations on two batched operands -------------------------------------------------
def _cross(prim: Any, ins: tuple, pair: tuple[int, int], a: Any, b: Any, params: dict, alg: Algebra) -> Any:
    """P(a, b) of the bilinear `prim` in the operands `pair` (the others at their values), both with a
    leading batch axis; summed over it (one row) where `alg.collapsed`."""
    collapsed = alg.collapsed
    i, j = pair
    if prim is EINSUM:
        lhs, rhs = params["subscripts"].split("->")
        terms = lhs.split(",")
        z = next(ch for ch in string.ascii_letters if ch not in params["subscripts"])
        subs = ",".join(z + s if k in pair else s for k, s in enumerate(terms)) + "->" + ("" if collapsed else z) + rhs
        operands = [a if k == i else b if k == j else v for k, v in enumerate(ins)]
        r = np.einsum(subs, *operands, optimize=params.get("optimize", False))
        return r[None] if collapsed else r
    if prim is MATMUL:
        r = _batched_matmul(a, b, len(shape_of(ins[0])), len(shape_of(ins[1])))
    elif prim is CONVOLVE:
        r = np.stack([convolve_full(p, q) for p, q in zip(a, b)])
    else:  # multiply: aligned to the output's dimensions
        r = None
    if r is None:
        return _pair_sum(a, b, alg.strong) if collapsed else alg.times(a, b)
    return np.sum(r, axis=0, keepdims=True) if collapsed else r


def _matmul_linear(ins: tuple, ts: tuple) -> Any:
    """matmul with one traced operand of 1 or 2 dimensions, its rows of coefficients as one matrix
    product (None: other shapes, left to the JVP rule)."""
    a, c = ins
    na, nc = len(shape_of(a)), len(shape_of(c))
    if na not in (1, 2) or nc not in (1, 2):
        return None
    if ts[0] is not None:
        t = ts[0]
        if na == 1:  # (R, n) @ c
            return np.matmul(t, c)
        r = np.matmul(t.reshape(-1, t.shape[-1]), c)  # (R m, n) @ c
        return r.reshape(t.shape[:2] + r.shape[1:])
    t = ts[1]
    rows = t.shape[0]
    if nc == 1:  # a @ t for each row t (R, n): t @ a^T
        return np.matmul(t, a.T if na == 2 else a)
    if na == 1:  # a (n,) @ t (R, n, p)
        return np.matmul(a, t)
    r = np.matmul(a, np.moveaxis(t, 0, 1).reshape(t.shape[1], -1))  # (m, n) @ (n, R p)
    return np.moveaxis(r.reshape(r.shape[0], rows, t.shape[2]), 1, 0)


def _batched_matmul(a: Any, b: Any, na: int, nb: int) -> Any:
    """matmul of each batch row of a with the same row of b (NumPy's 1-D promotion)."""
    n = a.shape[0]
    pa = a.reshape(n, 1, *a.shape[1:]) if na == 1 else a
    pb = b.reshape(*b.shape, 1) if nb == 1 else b
    nd = max(pa.ndim, pb.ndim) - 1
    pa, pb = expand_to(pa, (0,) * nd, 1), expand_to(pb, (0,) * nd, 1)
    r = np.matmul(pa, pb)
    if na == 1:
        r = r[..., 0, :]
    if nb == 1:
        r = r[..., 0]
    return r


# -- the plan: one step per node from x to the output ---------------------------------------------------------------
@dataclass(frozen=True)
class _Step:
    node: Any
    kind: str  # "linear", "bilinear", "series", "linalg"
    rule: Any
    #: slots whose coefficients die at this step
    dead: tuple


class Plan:
    """The Taylor steps of a tape (see the module docstring); `ok` False where some node on the path
    from x to the output has no rule (`reason` names it)."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        slots, nodes = tape.slots, tape.nodes
        order = tape.forward_nodes()
        self.ok = True
        self.reason = ""
        self.largest = max([size_of(slots[tape.x].shape)] + [size_of(slots[nodes[k].output].shape) for k in order])
        kinds: list[tuple[Any, str, Any]] = []
        active: set[int] = {tape.x}
        for k in order:
            node = nodes[k]
            prim = node.prim
            traced = [i for i, s in enumerate(node.inputs) if i not in prim.nondiff and s in active]
            active.add(node.output)
            kind = _kind(prim, traced, node, slots)
            if any(slots[s].dtype.kind == "c" for s in (node.output, *node.inputs) if s in active):
                kind = None
            if kind is None:
                self.ok, self.reason = False, prim.label()
                break
            kinds.append((node, *kind))
        last: dict[int, int] = {}
        for j, (node, _, _) in enumerate(kinds):
            for s in node.inputs:
                last[s] = j
        self.steps = [
            _Step(node, kind, rule, tuple(s for s in set(node.inputs) if last[s] == j and s != tape.output))
            for j, (node, kind, rule) in enumerate(kinds)
        ]
        #: the slots whose values the steps read (a replay keeps them)
        self.keep = tuple(sorted({s for st in self.steps for s in (*st.node.inputs, st.node.output)} | {tape.output}))

    def run(self, vals: list, seed: np.ndarray, layout: Layout, alg: Algebra, basis: tuple | None = None) -> Any:
        """The output's coefficients `(layout.total, *y_shape)` for x's `seed` (None: f does not depend
        on x), given every slot's value in `vals`. `basis` (lo, hi): the seed is e_lo .. e_{hi-1} and
        then zero rows (a product of a vector x with a matrix then takes the matrix's rows). A result
        holding a NaN is computed again with strong products (`Algebra.strong`)."""
        with quiet():  # the rules' factors at poles (1 / u₀ at u₀ = 0), multiplied by 0
            out = self._run(vals, seed, layout, alg, basis)
            if out is not None and not alg.strong and has_nan(out):
                out = self._run(vals, seed, layout, Algebra(alg.collapsed, strong=True), basis)
        return out

    def _run(self, vals: list, seed: np.ndarray, layout: Layout, alg: Algebra, basis: tuple | None) -> Any:
        tape = self.tape
        env: dict[int, Any] = {tape.x: seed}
        for step in self.steps:
            node = step.node
            r = _on_basis(step, vals, tape, layout, basis) if basis is not None else None
            env[node.output] = _apply(step, vals, env, layout, alg, self.tape.slots) if r is None else r
            for s in step.dead:
                env.pop(s, None)
        return env.get(tape.output)


def _kind(prim: Any, traced: list, node: Any, slots: list) -> tuple[str, Any] | None:
    key = id(prim)
    if prim is INV or prim is SOLVE:  # one square matrix (and a vector or matrix right-hand side)
        shapes = [slots[s].shape for s in node.inputs]
        square = len(shapes[0]) == 2 and shapes[0][0] == shapes[0][1]
        return ("linalg", None) if square and (prim is INV or len(shapes[1]) in (1, 2)) else None
    if key in _LINEAR_PRIMS:
        return "linear", None
    if prim is BANDED_SOLVE and traced == [1]:  # a spline's system with constant breakpoints: linear
        return "linear", None
    if key == _DIVIDE and traced == [0]:
        return "linear", None
    if key in _BILINEAR:
        if len(traced) <= 1:
            return "linear", None
        if len(traced) == 2:
            return "bilinear", tuple(traced)
        return None
    rule = _SERIES_PRIMS.get(key)
    if rule is not None:
        return "series", rule
    return None


def _aligned(t: Any, ndim: int) -> Any:
    """A coefficient array (leading rows axis) with size-1 axes up to `ndim` trailing axes."""
    missing = ndim - (t.ndim - 1)
    return t if missing <= 0 else t.reshape((t.shape[0],) + (1,) * missing + t.shape[1:])


def _on_basis(step: _Step, vals: list, tape: Tape, layout: Layout, basis: tuple) -> Any:
    """x @ c or c @ x for x a vector whose coefficients are basis vectors then zeros: c's rows (or
    columns), then zeros."""
    node = step.node
    if node.prim is not MATMUL or (tape.x == node.inputs[0]) == (tape.x == node.inputs[1]):
        return None
    first = node.inputs[0] == tape.x
    a, c = vals[node.inputs[0]], vals[node.inputs[1]]
    x, m = (a, c) if first else (c, a)
    if x.ndim != 1 or np.ndim(m) != 2:
        return None
    lo, hi = basis
    out = np.zeros((layout.total, m.shape[1] if first else m.shape[0]), np.result_type(a, c))
    out[: hi - lo] = m[lo:hi] if first else m[:, lo:hi].T
    return out


def _apply(step: _Step, vals: list, env: dict, layout: Layout, alg: Algebra, slots: list) -> Any:
    node = step.node
    prim = node.prim
    out_slot = slots[node.output]
    full = (layout.total, *out_slot.shape)
    ins = tuple(vals[s] for s in node.inputs)
    y = vals[node.output]
    nondiff = prim.nondiff
    ts = tuple(None if i in nondiff else env.get(s) for i, s in enumerate(node.inputs))
    nd = len(out_slot.shape)
    if prim.elementwise:
        ts = tuple(None if t is None else _aligned(t, nd) for t in ts)
    if step.kind == "series":
        return _series(step.rule, ins, y, ts, layout, alg, full, out_slot.dtype, nd)
    if step.kind == "linalg":
        return _linalg(prim, ins, y, ts, layout, alg, full, out_slot.dtype)
    r = _matmul_linear(ins, ts) if prim is MATMUL and step.kind == "linear" else None
    if r is None:
        if alg.strong and isinstance(prim, Ufunc):
            r = prim.jvp(ins, y, ts, 1, None, guard=True)
        else:
            r = prim.jvp(ins, y, ts, 1, None, **node.params)
    if step.kind == "bilinear":
        i, j = step.rule
        r = np.array(np.broadcast_to(r, full), dtype=np.result_type(r, out_slot.dtype))
        rows = layout.rows
        for k in range(2, layout.order + 1):
            for m in range(1, k):
                c = _cross(prim, ins, (i, j), ts[i][rows[m]], ts[j][rows[k - m]], node.params, alg)
                r[rows[k]] += c
        return r
    if np.shape(r) != full:
        r = np.broadcast_to(r, full)
    return r


def _series(
    rule: Callable, ins: tuple, y: Any, ts: tuple, layout: Layout, alg: Algebra, full: tuple, dtype: Any, nd: int
) -> Any:
    order, rows = layout.order, layout.rows
    us = []
    for v, t in zip(ins, ts):
        if t is None:
            us.append([v] + [None] * order)
        else:
            us.append([v] + [t[rows[k]] for k in range(1, order + 1)])
    traced = [i for i, t in enumerate(ts) if t is not None]
    if alg.collapsed and len(traced) == 1:
        ys = _collapsed_unary(rule, us, traced[0], y, alg)
    else:
        ys = rule(alg, us, y, order)
    out = np.empty(full, dtype)
    for k in range(1, order + 1):
        c = ys[k]
        if c is None:
            out[rows[k]] = 0
        else:
            out[rows[k]] = c
    return out


def _matrix_product(alg: Algebra, i: int, a: Any, j: int, b: Any) -> Any:
    """a @ b for coefficients of orders i and j (order 0: no batch axis; two batched ones row by row,
    summed over the rows in collapsed mode)."""
    if a is None or b is None:
        return None
    r = np.matmul(a, b)
    return np.sum(r, axis=0, keepdims=True) if alg.collapsed and i and j else r


def _linalg(prim: Any, ins: tuple, y: Any, ts: tuple, layout: Layout, alg: Algebra, full: tuple, dtype: Any) -> Any:
    """inv(A) and solve(A, C) for one square A: with A(t) X(t) = C(t) (C = I for inv),
    Xₖ = A₀⁻¹ (Cₖ - Σ_{j=1..k} Aⱼ Xₖ₋ⱼ)."""
    order, rows = layout.order, layout.rows
    a0 = ins[0]
    vector = prim is SOLVE and len(shape_of(ins[1])) == 1
    ta = ts[0]
    tc = ts[1] if prim is SOLVE else None
    x0 = y[:, None] if vector else y
    xs: list = [x0]
    out = np.empty(full, dtype)
    for k in range(1, order + 1):
        rhs = None if tc is None else (tc[rows[k]][..., None] if vector else tc[rows[k]])
        if ta is not None:
            s = _add(_matrix_product(alg, j, ta[rows[j]], k - j, xs[k - j]) for j in range(1, k + 1))
            rhs = -s if rhs is None else rhs - s
        if rhs is None:
            xk = None
        elif prim is INV:
            xk = np.matmul(y, rhs)
        else:
            xk = np.linalg.solve(a0, rhs)
        xs.append(xk)
        if xk is None:
            out[rows[k]] = 0
        else:
            out[rows[k]] = xk[..., 0] if vector else xk
    return out


def _collapsed_unary(rule: Callable, us: list, i: int, y: Any, alg: Algebra) -> list:
    """The collapsed pass through a function of one traced input u: y₁ = f'(u) u₁ and
    y₂ = f'(u) s₂ + f''(u)/2 Σ u₁², f' and f''/2 being the rule's coefficients along a unit direction
    (computed without the batch)."""
    unit: list[list] = [[u[0], None, None] for u in us]
    unit[i][1] = 1.0
    d = rule(Algebra(False, alg.strong), unit, y, 2)
    u1, u2 = us[i][1], us[i][2]
    y1 = alg.times(d[1], u1)
    squares = _pair_sum(u1, u1)
    y2 = _add((alg.times(d[1], u2), alg.times(d[2], squares)))
    return [y, y1, y2]


# -- kernels ----------------------------------------------------------------------------------------------------
@dataclass
class TaylorRecording(Recording):
    """A recording with its plan (the replay keeps the values the plan reads: `keep`)."""

    plan: Any = None


def _with_plan(rec: Recording, plan: Plan | None = None) -> TaylorRecording:
    if plan is None or plan.tape is not rec.tape:
        plan = Plan(rec.tape)
    return TaylorRecording(rec.tape, rec.statics, plan.keep if plan.ok else rec.keep, plan)


def plan_for(problem: Problem) -> Plan:
    """The plan of the problem's recording (made once, and kept with it for the kernel prepared next)."""
    plan = problem.memo.get(_MEMO)
    if plan is None:
        plan = problem.memo[_MEMO] = Plan(recording_for(problem).tape)
    return plan


_MEMO = "AutoTape Taylor plan"


class _TaylorKernel:
    """Records f at preparation (the recording `plan_for` made), replays it per call and runs its plan;
    calls with traced arrays, and recordings without a plan (made again for changed static contexts),
    go to `fallback()`, the core's derivation, made when first needed."""

    def __init__(self, problem: Problem, fallback: Callable[[], Kernel]) -> None:
        self.problem = problem
        self._fallback_factory = fallback
        self._fallback: Kernel | None = None
        self._lock = threading.Lock()
        self.compiled = not problem.single_use
        rec = _with_plan(take_recording(problem), problem.memo.pop(_MEMO, None))
        self.replays = Replays(rec, self._record, self._prime, self.compiled, problem.context_values)

    def _record(self, x: Any, cv: tuple, y: Any) -> Recording:
        return _with_plan(record(self.problem.f, x, self.problem.contexts, cv, y))

    def _prime(self, replay: Replay) -> Any:
        return None

    def copy(self) -> Any:
        """An independent kernel: the same recording and plan, buffers of its own."""
        twin = copy.copy(self)
        twin._lock = threading.Lock()
        twin._fallback = None
        twin.replays = self.replays.copy(self.compiled, twin._record, twin._prime)
        return twin

    def kernel(self) -> Kernel:
        """This kernel as the core takes it (copied with `copy`)."""
        return Kernel(self.run, copy=lambda: self.copy().kernel())

    def run(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        raise NotImplementedError

    def fallback(self) -> Kernel:
        with self._lock:
            if self._fallback is None:
                self._fallback = self._fallback_factory()
            return self._fallback

    def values(self, x: Any, cv: tuple, y: Any) -> tuple[Any, list, Any] | None:
        """(plan, every slot's value at x, f(x)'s buffer), or None where the recording has no plan."""
        if self.compiled:
            replay = self.replays.run(x, cv, y)
            rec = replay.rec
            vals = replay.fwd.bufs
        else:
            rec = self.replays.rec
            if not at_recorded_point(rec, x, cv):
                rec = self._record(x, cv, y)
            vals = rec.tape.values
        assert isinstance(rec, TaylorRecording)
        plan = rec.plan
        if not plan.ok:
            return None
        return plan, vals, vals[rec.tape.output]

    def value_of(self, output: Any, y: Any, full: bool) -> Any:
        if y is not None:
            np.copyto(y, output)
            return y
        return fresh(output) if full else None


class TapeTaylor(_TaylorKernel):
    """Taylor coefficients of `order` along a batch of directions (one pass per call)."""

    def __init__(self, problem: Problem, order: int, fallback: Callable[[], Kernel]) -> None:
        self.order = order
        y_shape, y_dtype = problem.y_spec
        self.y_shape = y_shape
        self.dtype = np.result_type(problem.x_dtype, y_dtype)
        super().__init__(problem, fallback)

    def run(self, x: Any, tangents: Any, cv: tuple, y: Any, full: bool) -> Result:
        if holds(x) or holds(tangents) or holds(cv):
            return self.fallback().run(x, tangents, cv, y, full)
        got = self.values(x, cv, y)
        if got is None:
            return self.fallback().run(x, tangents, cv, y, full)
        plan, vals, output = got
        b, order = len(tangents), self.order
        layout = Layout((b,) * order)
        x_slot = plan.tape.slots[plan.tape.x]
        seed = np.zeros((layout.total, *x_slot.shape), x_slot.dtype)
        for i, t in enumerate(tangents):
            seed[i] = t
        try:
            out = plan.run(vals, seed, layout, Algebra(False))
        except NoSeries:
            return self.fallback().run(x, tangents, cv, y, full)
        series = []
        for i in range(b):
            coefficients = []
            for k in range(1, order + 1):
                if out is None:
                    coefficients.append(np.zeros(self.y_shape, self.dtype))
                else:
                    c = out[layout.rows[k].start + i] * float(math.factorial(k))
                    coefficients.append(np.array(c, dtype=self.dtype, copy=True))
            series.append(tuple(coefficients))
        return Result(self.value_of(output, y, full), result=tuple(series))


class TapeLaplacian(_TaylorKernel):
    """The exact Laplacian by the collapsed pass: the basis of x as the first coefficients (in chunks),
    one summed second coefficient; the Jacobian from the first coefficients."""

    def __init__(self, problem: Problem, fallback: Callable[[], Kernel]) -> None:
        y_shape, y_dtype = problem.y_spec
        self.y_shape = y_shape
        self.x_shape = problem.x_shape
        self.dtype = np.result_type(problem.x_dtype, y_dtype)
        super().__init__(problem, fallback)

    def run(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if holds(x) or holds(cv):
            return self.fallback().run(x, extra, cv, y, full)
        got = self.values(x, cv, y)
        if got is None:
            return self.fallback().run(x, extra, cv, y, full)
        plan, vals, output = got
        x_shape, y_shape = self.x_shape, self.y_shape
        n, m = size_of(x_shape), size_of(y_shape)
        lap = np.zeros(y_shape, self.dtype)
        jac = np.zeros((m, n), self.dtype) if full else None
        step = max(1, min(n, CHUNK_BUDGET // max(1, plan.largest)))
        x_dtype = plan.tape.slots[plan.tape.x].dtype
        alg = Algebra(True)
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            c = hi - lo
            layout = Layout((c, 1))
            seed = np.zeros((c + 1, n), x_dtype)
            seed[np.arange(c), np.arange(lo, hi)] = 1
            try:
                out = plan.run(vals, seed.reshape((c + 1, *x_shape)), layout, alg, (lo, hi))
            except NoSeries:
                return self.fallback().run(x, extra, cv, y, full)
            if out is None:
                continue
            lap += 2 * out[c]
            if jac is not None:
                jac[:, lo:hi] = np.reshape(out[:c], (c, m)).T
        if not full:
            return Result(result=lap)
        value = self.value_of(output, y, True)
        assert jac is not None
        return Result(value, jac.reshape(y_shape + x_shape), lap)
