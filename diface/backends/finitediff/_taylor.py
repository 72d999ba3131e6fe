"""Taylor coefficients and Laplacians of `AutoFiniteDiff`: central differences with Richardson extrapolation.

## Taylor coefficients (orders 1 to 4)

Along a direction v, g(t) = f(x + t·v) and dⱼ = g⁽ʲ⁾(0). The central difference of order j at step s,

    D₁(s) = (g(s) - g(-s)) / 2s                     D₂(s) = (g(s) - 2 g(0) + g(-s)) / s²
    D₃(s) = (g(2s) - 2 g(s) + 2 g(-s) - g(-2s)) / 2s³
    D₄(s) = (g(2s) - 4 g(s) + 6 g(0) - 4 g(-s) + g(-2s)) / s⁴,

has an error series in even powers of s, so Richardson extrapolation over the steps h, 2h, 4h removes
its s² and s⁴ terms: R₁(s) = (4 D(s) - D(2s)) / 3 (error O(h⁴)), R₂ = (16 R₁(h) - R₁(2h)) / 15
(error O(h⁶)). The coefficient is R₂. Orders 1 and 2 share one step and the points t = 0, ±h, ±2h, ±4h;
orders 3 and 4 share a longer step and the points t = 0, ±h, ±2h, ±4h, ±8h: f runs at 6 points per
direction for orders up to 2 and 14 for orders 3 and 4, and at x once for all directions (from order 2
on, or where the value is asked for). Odd orders are formed from the odd parts g(t) - g(-t), even orders
from the even parts g(t) + g(-t) - 2 g(0), so a zero direction gives exact zeros. The steps balance
the rounding error, which grows like eps / hʲ, against the error estimate below, which shrinks like h⁴:

    h = c · max(1, max |xᵢ| over vᵢ ≠ 0) / max |v|,   c = eps^(1/8) / 4 (orders 1, 2), eps^(1/10) / 4 (3, 4)

(eps: machine epsilon of x's dtype; `step=` replaces c for both pairs). The rounding error of R₂ is at
most about κⱼ eps |f| / hʲ (κⱼ = Σ|w|, the weights of its stencil: κⱼ / cʲ = 7, 90, 280 and 5900 for j =
1..4), the truncation error O(h⁶) well below it for smooth f: coefficients are accurate to about
eps^(aⱼ) relative, aⱼ = 7/8, 3/4, 2/3, 1/2 for j = 1..4 (`AutoFiniteDiff.taylor_accuracy_exponent`, the
float64 bound with its constant absorbed). Measured over the functions of
benchmarks/fd_taylor_accuracy.py, relative to max(1, |dⱼ|): medians 1e-14, 4e-12, 1e-10 and 3e-8 in
float64 (95th percentiles 1e-13, 8e-11, 3e-9, 2e-6), against 5e-12 and 1e-8 for the nested pushforwards
the core derives otherwise (which it refuses beyond order 2); in float32 medians 3e-7, 3e-6, 6e-5 and
4e-4 (95th percentile of order 4: 0.4). The error is relative to the largest element of v: elements of y
moved by small elements of v alone get the same absolute error on a smaller coefficient.

## The error estimate

`error = |R₂ - R₁(h)| + K · eps · Σₘ |wₘ| |g(tₘ)| / hʲ` per element of y, K = 2: the difference between
the last two Richardson levels (an estimate of the error of R₁(h), which R₂ improves on by a factor of
order h², so it is conservative where truncation dominates), plus a bound of the rounding error of R₂
(weights wₘ of its stencil on the values g(tₘ), each taken as accurate to K ulps). On smooth test
functions (exp, sin, polynomials, rational functions, compositions, a tanh MLP) it exceeds the true
error in more than 99% of cases, by a median factor of 20 to 100 (benchmarks/fd_taylor_accuracy.py).
It assumes f is smooth on the points' span (up to 8h along v for orders 3 and 4) and evaluated to a
few ulps: a kink, a discontinuity or noisy f breaks it.

## Laplacian (method="exact")

Σᵢ ∂²f/∂xᵢ² from the direct stencil along each component: with hᵢ = c · max(1, |xᵢ|), c = eps^(1/6)
(the step actually taken, (xᵢ + hᵢ) - xᵢ), the five-point stencil

    ∂²f/∂xᵢ² ≈ (-f(x + 2hᵢeᵢ) + 16 f(x + hᵢeᵢ) - 30 f(x) + 16 f(x - hᵢeᵢ) - f(x - 2hᵢeᵢ)) / 12hᵢ²,

the Richardson extrapolation of the three-point second difference over hᵢ and 2hᵢ (4n + 1 evaluations,
error O(h⁴): each second difference accurate to about eps^(2/3) relative to f, the accuracy of central
first differences; their sum's rounding error grows with n: 1e-10 for n = 3, 7e-10 for n = 10 in
benchmarks/fd_taylor_accuracy.py). The full variant's
Jacobian comes from the same points: ∂f/∂xᵢ ≈ (f(x - 2hᵢeᵢ) - 8 f(x - hᵢeᵢ) + 8 f(x + hᵢeᵢ) -
f(x + 2hᵢeᵢ)) / 12hᵢ, likewise the Richardson extrapolation of (f(x + hᵢeᵢ) - f(x - hᵢeᵢ)) / 2hᵢ.

Both always use central differences, whatever the engine's `method` (the complex step gives no
cancellation-free higher derivatives). Points are evaluated by the engine's evaluator: one at a time,
or all of one call together with `vectorized=True` or `executor=`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._errors import NotSupportedError
from ..._kernel import Kernel, Result
from ..._problem import Problem, size_of
from ._batching import BatchRunner, EvaluationCount

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = ["MAX_ORDER", "TaylorReport", "prepare_fd_laplacian", "prepare_fd_taylor", "taylor_accuracy_exponent"]

MAX_ORDER = 4
#: rounding allowance of the error estimate: each value of f taken as accurate to K ulps
K_ROUNDING = 2.0
_TINY = 1e-30  # floor of |v| in the step along v (keeps h finite for a zero direction)

# -- stencils ---------------------------------------------------------------------------------------
# D_j(s) as weights on g(m s): the minimal central differences
# as (numerator, denominator); exact fractions are made at the first preparation (`fractions` is not
# imported with diface: it costs as much as this module)
_BASE: dict[int, dict[int, tuple[int, int]]] = {
    1: {1: (1, 2), -1: (-1, 2)},
    2: {1: (1, 1), 0: (-2, 1), -1: (1, 1)},
    3: {2: (1, 2), 1: (-1, 1), -1: (1, 1), -2: (-1, 2)},
    4: {2: (1, 1), 1: (-4, 1), 0: (6, 1), -1: (-4, 1), -2: (1, 1)},
}
# the points of each pair of orders, as positive multiples of its step (each also taken negative)
_GRID_LOW = (1, 2, 4)  # orders 1 and 2
_GRID_HIGH = (1, 2, 4, 8)  # orders 3 and 4
# c = _C * eps ** (1 / _ROOT[high pair]): the step of orders (1, 2) and of orders (3, 4)
_C = 0.25
_ROOT = {False: 8, True: 10}


def _combine(*terms: tuple[Fraction, dict[int, Fraction]]) -> dict[int, Fraction]:
    out: dict[int, Fraction] = {}
    for c, weights in terms:
        for m, w in weights.items():
            out[m] = out[m] + c * w if m in out else c * w
    return out


def _levels(j: int) -> tuple[dict[int, Fraction], dict[int, Fraction]]:
    """(R₂, R₁(h)) of order j as weights on g(m h), times hʲ."""
    from fractions import Fraction  # at run time: not imported with diface

    d = [{m * r: Fraction(*w) / Fraction(r) ** j for m, w in _BASE[j].items()} for r in (1, 2, 4)]
    r1 = [_combine((Fraction(4, 3), d[i]), (Fraction(-1, 3), d[i + 1])) for i in (0, 1)]
    return _combine((Fraction(16, 15), r1[0]), (Fraction(-1, 15), r1[1])), r1[0]


def _half_columns(order: int) -> list[tuple[bool, int]]:
    """The positive points of one direction, as (high pair?, multiple); each is also taken negative."""
    cols = [(False, m) for m in _GRID_LOW]
    if order >= 3:
        cols += [(True, m) for m in _GRID_HIGH]
    return cols


@cache
def _matrices(order: int) -> tuple[np.ndarray, np.ndarray]:
    """The stencils of `order`'s coefficients over the `_half_columns(order)` of one direction.

    First: rows 2(j-1) and 2(j-1)+1 hold R₂ and R₁(h) of order j (times hʲ) as weights on the odd parts
    g(mh) - g(-mh) (odd j) or the even parts g(mh) + g(-mh) - 2 g(0) (even j): the weights of g(mh),
    which are those of g(-mh) up to sign, and of g(0) the negated sum of the others. Second: row j-1
    holds the absolute weights of R₂ on [g(0), g(mh)..., g(-mh)...] (for the rounding bound).
    """
    cols = _half_columns(order)
    k = len(cols)
    w = np.zeros((2 * order, k))
    a = np.zeros((order, 1 + 2 * k))
    for j in range(1, order + 1):
        high = j >= 3
        best, previous = _levels(j)
        for row, weights in enumerate((best, previous)):
            for i, (h, mult) in enumerate(cols):
                if h == high:
                    w[2 * (j - 1) + row, i] = float(weights.get(mult, 0))
        for i, (h, mult) in enumerate(cols):
            if h == high:
                a[j - 1, 1 + i] = abs(float(best.get(mult, 0)))
                a[j - 1, 1 + k + i] = abs(float(best.get(-mult, 0)))
        a[j - 1, 0] = abs(float(best.get(0, 0)))
    return w, a


#: the accuracy exponent of each order (see the module docstring)
_ACCURACY = {1: 7 / 8, 2: 3 / 4, 3: 2 / 3, 4: 1 / 2}


def taylor_accuracy_exponent(order: int, input_accuracy: float = 1.0) -> float:
    """a such that the coefficient of `order` is accurate to about eps ** a (relative): the rounding error
    of R₂, about κ eps / hʲ at the step h ~ eps^(1/8) (orders 1, 2) or eps^(1/10) (orders 3, 4), with the
    float64 constant κ absorbed; values of f accurate to eps ** input_accuracy scale it."""
    return input_accuracy * _ACCURACY[order]


def _check_order(order: int) -> None:
    if order > MAX_ORDER:
        raise NotSupportedError(
            f"AutoFiniteDiff computes Taylor coefficients up to order {MAX_ORDER} (central differences "
            f"lose accuracy with every order: about eps^0.6 at order 4); order {order} needs an exact "
            "engine, such as di.AutoTape() or di.AutoJAX()"
        )


# -- the report -------------------------------------------------------------------------------------
@dataclass
class TaylorReport:
    """What `AutoFiniteDiff`'s Taylor kernel measured in its last call: an estimate of the error of each
    coefficient (see `diface.backends.finitediff._taylor`: the difference of the last two Richardson
    levels plus a rounding bound; conservative, typically 10 to 100 times the true error).

    Attributes:
        order: the highest coefficient.
        steps: the steps h of orders (1, 2) and (3, 4) (relative factors c; the step along v is
            `c * max(1, max |x_i| over v_i != 0) / max |v|`).
        error: for the last call, a tuple per direction of a tuple of `order` NumPy arrays shaped like y
            (None before the first call). A preparation shared by threads holds whichever call finished
            last.
    """

    order: int
    steps: tuple[float, float]
    _error: Any = field(default=None, repr=False)
    _ops: Any = field(default=None, repr=False)

    @property
    def error(self) -> tuple[tuple[np.ndarray, ...], ...] | None:
        errors = self._error  # one read: another thread may replace it meanwhile
        if errors is None:
            return None
        to_numpy = self._ops.to_numpy
        return tuple(tuple(np.asarray(to_numpy(e)) for e in series) for series in errors)


# -- evaluation ---------------------------------------------------------------------------------------
def _central(backend: Any) -> Any:
    """The engine with central differences (what these kernels compute by), for its batch runner."""
    return backend if backend.method == "central" else dataclasses.replace(backend, method="central")


class _Points:
    """f at a base point and a list of points, by the engine's evaluator: in a batch (vectorized f, or
    an executor) or one at a time (an in-place f writing into a scratch buffer, each value copied)."""

    def __init__(self, backend: Any, problem: Problem) -> None:
        self.problem, self.ops = problem, problem.ops
        self.batched = backend.batched
        self.runner = BatchRunner(_central(backend), problem) if self.batched else None
        self.vectorized = backend.vectorized

    def __call__(self, x: Any, points: list, cv: tuple, y: Any, base: bool, label: Any) -> tuple[Any, Any]:
        """(f(x) or None, the values at `points` stacked); f(x) is written into y where there is one."""
        ops, problem = self.ops, self.problem
        if self.runner is not None:
            fx, values = self.runner(x if base else None, ops.stack(points), cv, label)
            if y is not None:
                ops.copyto(y, fx)
                fx = y
            return fx, values
        fx = problem.evaluate(x, cv, y) if base else None
        buf = None if y is None else ops.zeros(*problem.y_spec, y)
        values = []
        for p in points:
            v = problem.evaluate(p, cv, buf)
            values.append(ops.copy(v) if buf is not None else v)
        return fx, ops.stack(values)

    def count(self, points: int, base: bool) -> EvaluationCount:
        total = points + base
        return EvaluationCount(total, 1 if self.vectorized else total)


# -- Taylor coefficients ------------------------------------------------------------------------------
def prepare_fd_taylor(backend: Any, problem: Problem, tangents: tuple, order: int) -> Kernel:
    """The kernel of `AutoFiniteDiff.prepare_taylor` (see the module docstring)."""
    _check_order(order)
    ops = problem.ops
    x_dtype = problem.x_dtype
    y_shape, y_dtype = problem.y_spec
    dtype = ops.result_type(x_dtype, y_dtype)
    m = size_of(y_shape)
    eps = ops.eps(x_dtype) ** backend.input_accuracy
    user = None if backend.step is None else float(backend.step)
    steps = (user or _C * eps ** (1 / _ROOT[False]), user or _C * eps ** (1 / _ROOT[True]))
    report = TaylorReport(order, steps, _ops=ops)
    evaluate = _Points(backend, problem)
    cols = _half_columns(order)
    k = len(cols)
    w_np, a_np = _matrices(order)
    like = problem.x
    real = ops.real_dtype(dtype)
    odd = ops.astype(ops.asarray(w_np, like=like), dtype)
    absolute = ops.astype(ops.asarray(a_np, like=like), real)
    if order == 1:  # order 1 alone needs no f(x) (unless the value is asked for): its weight is zero
        absolute = ops.astype(ops.asarray(a_np[:, 1:], like=like), real)
    empty = size_of(problem.x_shape) == 0
    rounding = K_ROUNDING * eps

    def label_for(base: bool) -> Any:
        def label(i: int) -> str:
            if base and i == 0:
                return "the base point x"
            d, r = divmod(i - base, 2 * k)
            side, c = divmod(r, k)
            high, mult = cols[c]
            return f"direction {d}, x {'-' if side else '+'} {mult} h{'34' if high else '12'} v"

        return label

    def taylor(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        base = order >= 2 or full or y is not None
        if empty or not tangents:
            value = problem.evaluate(x, cv, y) if base else None
            report._error = tuple(tuple(ops.zeros(y_shape, dtype, x) for _ in range(order)) for _ in tangents)
            zero = tuple(tuple(ops.zeros(y_shape, dtype, x) for _ in range(order)) for _ in tangents)
            return Result(value if full else None, result=zero)
        hs: list[tuple[Any, Any]] = []
        points: list[Any] = []
        for v in tangents:
            size = ops.max(ops.abs(v))
            reach = ops.max(ops.abs(x) * ops.astype(v != 0, x_dtype))  # no bool arithmetic in the array API
            scale = ops.maximum(reach, 1.0) / ops.maximum(size, _TINY)
            h = (ops.astype(steps[0] * scale, x_dtype), ops.astype(steps[1] * scale, x_dtype))
            hs.append(h)
            points.extend(x + (sign * mult * h[high]) * v for sign in (1, -1) for high, mult in cols)
        fx, values = evaluate(x, points, cv, y, base, label_for(base))
        values = ops.reshape(ops.astype(values, dtype), (len(tangents), 2 * k, m))
        center = ops.reshape(ops.astype(fx, dtype), (1, m)) if order >= 2 else None
        series, errors = [], []
        for d, h in enumerate(hs):
            g = values[d, ...]
            up, down = g[:k, ...], g[k:, ...]
            # R₂ and R₁(h) of each order, times hʲ: odd orders from the odd parts, even from the even
            levels = levels_even = ops.matmul(odd, up - down)
            if center is not None:
                levels_even = ops.matmul(odd, (up - center) + (down - center))
                g = ops.concat([center, g])
            bound = ops.matmul(absolute, ops.abs(g))  # (order, m)
            coefficients, estimates = [], []
            for j in range(1, order + 1):
                rows = levels if j % 2 else levels_even
                hj = h[j >= 3] ** j
                best = rows[2 * (j - 1), ...] / hj
                previous = rows[2 * (j - 1) + 1, ...] / hj
                coefficients.append(ops.reshape(best, y_shape))
                estimate = ops.abs(best - previous) + rounding * bound[j - 1, ...] / hj
                estimates.append(ops.reshape(estimate, y_shape))
            series.append(tuple(coefficients))
            errors.append(tuple(estimates))
        report._error = tuple(errors)
        return Result(fx if full else None, result=tuple(series))

    return Kernel(taylor, evaluations=evaluate.count(2 * k * len(tangents), order >= 2), report=report)


# -- Laplacian ------------------------------------------------------------------------------------------
_LAPLACIAN_C = 1.0
_LAPLACIAN_ROOT = 6
_MULTIPLES = (1, -1, 2, -2)
_CHUNK_ELEMENTS = 1 << 22  # elements of the perturbed points built at once by the serial evaluator


def prepare_fd_laplacian(backend: Any, problem: Problem) -> Kernel:
    """The exact Laplacian kernel of `AutoFiniteDiff` (and the Jacobian from the same points; see the
    module docstring)."""
    ops = problem.ops
    x_shape, x_dtype = problem.x_shape, problem.x_dtype
    y_shape, y_dtype = problem.y_spec
    dtype = ops.result_type(x_dtype, y_dtype)
    n, m = size_of(x_shape), size_of(y_shape)
    eps = ops.eps(x_dtype) ** backend.input_accuracy
    c = float(backend.step) if backend.step is not None else _LAPLACIAN_C * eps ** (1 / _LAPLACIAN_ROOT)
    evaluate = _Points(backend, problem)
    # a batch holds every point; the serial evaluator builds them a chunk of components at a time
    chunk = n if backend.batched else max(1, min(n, _CHUNK_ELEMENTS // max(1, 4 * n)))
    bounds = [(lo, min(lo + chunk, n)) for lo in range(0, n, chunk)]

    def label_for(base: bool, lo: int, hi: int) -> Any:
        k = hi - lo

        def label(i: int) -> str:
            if base and i == 0:
                return "the base point x"
            side, col = divmod(i - base, k)
            mult = _MULTIPLES[side]
            flat = lo + col
            where = f"x[{', '.join(map(str, np.unravel_index(flat, x_shape)))}]" if x_shape else "x"
            return f"component {flat} ({where} {'+' if mult > 0 else '-'} {abs(mult)} h)"

        return label

    def laplacian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if n == 0:
            value = problem.evaluate(x, cv, y) if (full or y is not None) else None
            zero = ops.zeros(y_shape, dtype, x)
            return Result(value if full else None, ops.zeros(y_shape + x_shape, dtype, x) if full else None, zero)
        flat_x = ops.reshape(x, (n,))
        h = c * ops.maximum(ops.abs(flat_x), 1.0)
        h = (flat_x + h) - flat_x  # the step actually taken
        fx, center, total, columns = None, None, None, []
        for k, (lo, hi) in enumerate(bounds):
            basis = ops.basis_rows(n, lo, hi, x_dtype, x, (n,))
            hk = ops.reshape(h[lo:hi], (hi - lo, 1))
            block = [flat_x + basis * (mult * hk) for mult in _MULTIPLES]
            points = ops.unstack(ops.reshape(ops.concat(block), (4 * (hi - lo), *x_shape)))
            value, values = evaluate(x, points, cv, y, k == 0, label_for(k == 0, lo, hi))
            if k == 0:
                fx = value
                center = ops.reshape(ops.astype(fx, dtype), (1, m))
            v = ops.reshape(ops.astype(values, dtype), (4, hi - lo, m))
            up, down, up2, down2 = v[0, ...], v[1, ...], v[2, ...], v[3, ...]
            hh = ops.astype(ops.reshape(h[lo:hi], (1, hi - lo)), dtype)
            # five-point second differences, each row taken about f(x) first (less cancellation)
            second = (16 * ((up - center) + (down - center)) - ((up2 - center) + (down2 - center))) / 12
            part = ops.matmul(1 / (hh * hh), second)  # (1, m): the sum over this chunk's components
            total = part if total is None else total + part
            if full:
                columns.append((8 * (up - down) - (up2 - down2)) / (12 * ops.reshape(hh, (hi - lo, 1))))
        lap = ops.reshape(total, y_shape)
        if not full:
            return Result(result=lap)
        stacked = columns[0] if len(columns) == 1 else ops.concat(columns)  # (n, m)
        jac = ops.reshape(ops.moveaxis(stacked, 0, -1), y_shape + x_shape)
        return Result(fx, jac, lap)

    return Kernel(laplacian, evaluations=evaluate.count(4 * n, True))
