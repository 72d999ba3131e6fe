"""The local partial derivatives of NumPy's ufuncs: one per input, a number, `Arg(k)` (the value of
input k) or a function `(ins, y, out) -> array` of the saved inputs and output, written with ufuncs
(so that it is recorded, and differentiated again, for second order) and writing into `out` where it
can. `reads` marks what a function reads (`Prim.saves`: a replay keeps only the values the sweeps read).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ...._sparsity import Nonlinearity
from . import series
from .prim import TAYLOR_BILINEAR, TAYLOR_LINEAR, into

__all__ = [
    "DIFFERENTIABLE",
    "NONDIFF_UFUNCS",
    "Arg",
    "Partial",
    "UfuncRules",
    "partial_value",
    "reads",
    "rules",
    "scaled_input",
]

Partial = Any  # a number, Arg(k) (the value of input k), or a function (ins, y, out) -> array


class Arg(int):
    """A partial derivative equal to the value of input k (d(a*b)/da = b)."""


def reads(fn: Any, *inputs: int, y: bool = False) -> Any:
    """`fn`, a partial derivative, marked as reading only these inputs (and the output if `y`): see
    `Prim.saves`. Unmarked partials read everything."""
    fn.reads = (frozenset(inputs), y)
    return fn


def scaled_input(k: int, c: float) -> Partial:
    """The partial derivative `c * ins[k]` (d(a^2)/da = 2 a), marked as such: a prepared sweep whose
    cotangent is one value broadcast (a sum's) multiplies the input by c times it in one pass."""
    fn = reads(lambda ins, y, out: np.multiply(ins[k], c, out=out), k)
    fn.scaled_input = (k, c)
    return fn


def partial_value(p: Partial, ins: tuple, y: Any, out: Any) -> Any:
    if isinstance(p, Arg):
        return ins[p]
    if isinstance(p, (int, float)):
        return p
    return p(ins, y, out)


# -- local partial derivatives ------------------------------------------------------------------
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _reciprocal_of(k: int, c: float = 1.0) -> Partial:
    return reads(lambda ins, y, out: np.divide(c, ins[k], out=out), k)


def _d_divide_denominator(ins: tuple, y: Any, out: Any) -> Any:  # d(a/b)/db = -y/b
    return np.negative(np.divide(y, ins[1], out=out), out=out)


def _d_power_base(ins: tuple, y: Any, out: Any) -> Any:  # p a^(p-1), 0 where p == 0
    a, p = ins
    if isinstance(p, (int, float)):
        if p == 0:
            return 0.0
        return np.multiply(np.power(a, p - 1, out=out), p, out=out)
    zero = np.equal(p, 0)
    r = np.multiply(np.power(a, np.where(zero, 1.0, np.subtract(p, 1.0))), p)
    return into(out, np.where(zero, 0.0, r))


def _d_power_exponent(ins: tuple, y: Any, out: Any) -> Any:  # log(a) y, 0 where a == 0
    a = ins[0]
    return np.multiply(np.log(np.where(np.equal(a, 0), 1.0, a)), y, out=out)


def _d_log1p(ins: tuple, y: Any, out: Any) -> Any:
    return np.divide(1.0, np.add(ins[0], 1.0, out=out), out=out)


def _d_cbrt(ins: tuple, y: Any, out: Any) -> Any:  # 1 / (3 y^2)
    return np.divide(1.0 / 3.0, np.square(y, out=out), out=out)


def _d_reciprocal(ins: tuple, y: Any, out: Any) -> Any:  # -y^2
    return np.negative(np.square(y, out=out), out=out)


def _one_plus_y2(ins: tuple, y: Any, out: Any) -> Any:
    return np.add(np.square(y, out=out), 1.0, out=out)


def _one_minus_y2(ins: tuple, y: Any, out: Any) -> Any:
    return np.subtract(1.0, np.square(y, out=out), out=out)


def _inv_sqrt_one_minus_a2(c: float) -> Partial:
    def d(ins: tuple, y: Any, out: Any) -> Any:
        t = np.subtract(1.0, np.square(ins[0], out=out), out=out)
        return np.divide(c, np.sqrt(t, out=out), out=out)

    return reads(d, 0)


def _inv_sqrt_a2_plus(c: float) -> Partial:  # 1 / sqrt(a^2 + c)
    def d(ins: tuple, y: Any, out: Any) -> Any:
        t = np.add(np.square(ins[0], out=out), c, out=out)
        return np.divide(1.0, np.sqrt(t, out=out), out=out)

    return reads(d, 0)


def _inv_one_plus_a2(ins: tuple, y: Any, out: Any) -> Any:
    return np.divide(1.0, np.add(np.square(ins[0], out=out), 1.0, out=out), out=out)


def _inv_one_minus_a2(ins: tuple, y: Any, out: Any) -> Any:
    return np.divide(1.0, np.subtract(1.0, np.square(ins[0], out=out), out=out), out=out)


def _neg_sin(ins: tuple, y: Any, out: Any) -> Any:
    return np.negative(np.sin(ins[0], out=out), out=out)


def _chooser(k: int, wins: Any) -> Partial:
    """maximum/minimum: 1 where input k wins, 1/2 on ties (the cotangent is split evenly)."""

    def d(ins: tuple, y: Any, out: Any) -> Any:
        a, c = ins if k == 0 else (ins[1], ins[0])
        half = np.multiply(np.equal(a, c), 0.5, out=out)
        return np.add(half, wins(a, c), out=out)

    return reads(d, 0, 1)


def _hypot_part(k: int) -> Partial:
    return reads(lambda ins, y, out: np.divide(ins[k], y, out=out), k, y=True)


def _arctan2_part(k: int) -> Partial:  # d atan2(a, c)/da = c / (a^2 + c^2), d/dc = -a / (a^2 + c^2)
    def d(ins: tuple, y: Any, out: Any) -> Any:
        a, c = ins
        r2 = np.add(np.square(a), np.square(c))
        return np.divide(c, r2, out=out) if k == 0 else np.negative(np.divide(a, r2, out=out), out=out)

    return reads(d, 0, 1)


def _logaddexp_part(k: int, base2: bool) -> Partial:
    def d(ins: tuple, y: Any, out: Any) -> Any:
        t = np.subtract(ins[k], y, out=out)
        return np.exp2(t, out=out) if base2 else np.exp(t, out=out)

    return reads(d, k, y=True)


def _d_copysign(ins: tuple, y: Any, out: Any) -> Any:  # sign(a) * sign(b) with the sign bit of b
    return np.multiply(np.sign(ins[0]), np.copysign(1.0, ins[1]), out=out)


def _neg_quotient(rounding: Any) -> Partial:  # d remainder(a, b)/db = -round(a / b)
    return lambda ins, y, out: np.negative(rounding(np.divide(ins[0], ins[1])), out=out)


_ONE, _MINUS_ONE = 1.0, -1.0


class UfuncRules(NamedTuple):
    """What the tape knows of one ufunc: its partial derivatives (one per input), its Taylor rule
    (`Prim.taylor`, with `Prim.taylor_linear_in`) and its second-order structure for sparsity detection
    (`Ufunc.pattern`: linear, bilinear, a quotient, or nonlinear)."""

    partials: tuple
    taylor: Any = None
    pattern: Nonlinearity = Nonlinearity.NONLINEAR
    taylor_linear_in: frozenset = frozenset()


def rules(
    *partials: Partial, taylor: Any = None, pattern: Nonlinearity = Nonlinearity.NONLINEAR, taylor_linear_in: Any = ()
) -> UfuncRules:
    """A ufunc's `UfuncRules`: `rules(d/da, d/db, taylor=..., pattern=...)`."""
    return UfuncRules(tuple(partials), taylor, pattern, frozenset(taylor_linear_in))


L, B, Q = Nonlinearity.LINEAR, Nonlinearity.BILINEAR, Nonlinearity.QUOTIENT

#: every differentiable NumPy ufunc: its partials, its Taylor rule, its sparsity structure

DIFFERENTIABLE: dict[np.ufunc, UfuncRules] = {
    np.add: rules(_ONE, _ONE, taylor=TAYLOR_LINEAR, pattern=L),
    np.subtract: rules(_ONE, _MINUS_ONE, taylor=TAYLOR_LINEAR, pattern=L),
    np.multiply: rules(Arg(1), Arg(0), taylor=TAYLOR_BILINEAR, pattern=B),
    np.divide: rules(
        _reciprocal_of(1),
        reads(_d_divide_denominator, 1, y=True),
        taylor=series.DIVIDE,
        taylor_linear_in={0},
        pattern=Q,
    ),
    np.power: rules(_d_power_base, _d_power_exponent, taylor=series.POWER),
    np.float_power: rules(_d_power_base, _d_power_exponent, taylor=series.POWER),
    np.negative: rules(_MINUS_ONE, taylor=TAYLOR_LINEAR, pattern=L),
    np.positive: rules(_ONE, taylor=TAYLOR_LINEAR, pattern=L),
    np.conjugate: rules(_ONE, taylor=TAYLOR_LINEAR, pattern=L),
    np.exp: rules(reads(lambda ins, y, out: y, y=True), taylor=series.EXP),
    np.exp2: rules(reads(lambda ins, y, out: np.multiply(y, _LN2, out=out), y=True), taylor=series.EXP2),
    np.expm1: rules(reads(lambda ins, y, out: np.add(y, 1.0, out=out), y=True), taylor=series.EXPM1),
    np.log: rules(_reciprocal_of(0), taylor=series.LOG),
    np.log2: rules(_reciprocal_of(0, 1.0 / _LN2), taylor=series.LOG2),
    np.log10: rules(_reciprocal_of(0, 1.0 / _LN10), taylor=series.LOG10),
    np.log1p: rules(reads(_d_log1p, 0), taylor=series.LOG1P),
    np.sqrt: rules(reads(lambda ins, y, out: np.divide(0.5, y, out=out), y=True), taylor=series.SQRT),
    np.cbrt: rules(reads(_d_cbrt, y=True), taylor=series.CBRT),
    np.square: rules(scaled_input(0, 2.0), taylor=series.SQUARE),
    np.reciprocal: rules(reads(_d_reciprocal, y=True), taylor=series.RECIPROCAL),
    np.sin: rules(reads(lambda ins, y, out: np.cos(ins[0], out=out), 0), taylor=series.SIN),
    np.cos: rules(reads(_neg_sin, 0), taylor=series.COS),
    np.tan: rules(reads(_one_plus_y2, y=True), taylor=series.TAN),
    np.arcsin: rules(_inv_sqrt_one_minus_a2(1.0), taylor=series.ARCSIN),
    np.arccos: rules(_inv_sqrt_one_minus_a2(-1.0), taylor=series.ARCCOS),
    np.arctan: rules(reads(_inv_one_plus_a2, 0), taylor=series.ARCTAN),
    np.sinh: rules(reads(lambda ins, y, out: np.cosh(ins[0], out=out), 0), taylor=series.SINH),
    np.cosh: rules(reads(lambda ins, y, out: np.sinh(ins[0], out=out), 0), taylor=series.COSH),
    np.tanh: rules(reads(_one_minus_y2, y=True), taylor=series.TANH),
    np.arcsinh: rules(_inv_sqrt_a2_plus(1.0), taylor=series.ARCSINH),
    np.arccosh: rules(_inv_sqrt_a2_plus(-1.0), taylor=series.ARCCOSH),
    np.arctanh: rules(reads(_inv_one_minus_a2, 0), taylor=series.ARCTANH),
    np.absolute: rules(reads(lambda ins, y, out: np.sign(ins[0], out=out), 0), taylor=TAYLOR_LINEAR, pattern=L),
    np.fabs: rules(reads(lambda ins, y, out: np.sign(ins[0], out=out), 0), taylor=TAYLOR_LINEAR, pattern=L),
    np.maximum: rules(_chooser(0, np.greater), _chooser(1, np.greater), taylor=TAYLOR_LINEAR, pattern=L),
    np.minimum: rules(_chooser(0, np.less), _chooser(1, np.less), taylor=TAYLOR_LINEAR, pattern=L),
    np.fmax: rules(_chooser(0, np.greater), _chooser(1, np.greater), taylor=TAYLOR_LINEAR, pattern=L),
    np.fmin: rules(_chooser(0, np.less), _chooser(1, np.less), taylor=TAYLOR_LINEAR, pattern=L),
    np.hypot: rules(_hypot_part(0), _hypot_part(1), taylor=series.HYPOT),
    np.arctan2: rules(_arctan2_part(0), _arctan2_part(1), taylor=series.ARCTAN2),
    np.logaddexp: rules(_logaddexp_part(0, False), _logaddexp_part(1, False), taylor=series.LOGADDEXP),
    np.logaddexp2: rules(_logaddexp_part(0, True), _logaddexp_part(1, True), taylor=series.LOGADDEXP2),
    np.deg2rad: rules(math.pi / 180.0, taylor=TAYLOR_LINEAR, pattern=L),
    np.radians: rules(math.pi / 180.0, taylor=TAYLOR_LINEAR, pattern=L),
    np.rad2deg: rules(180.0 / math.pi, taylor=TAYLOR_LINEAR, pattern=L),
    np.degrees: rules(180.0 / math.pi, taylor=TAYLOR_LINEAR, pattern=L),
    np.copysign: rules(_d_copysign, None, taylor=TAYLOR_LINEAR, pattern=L),
    np.remainder: rules(_ONE, _neg_quotient(np.floor), taylor=TAYLOR_LINEAR, pattern=L),
    np.fmod: rules(_ONE, _neg_quotient(np.trunc), taylor=TAYLOR_LINEAR, pattern=L),
    np.ldexp: rules(lambda ins, y, out: np.ldexp(1.0, ins[1], out=out), None, taylor=TAYLOR_LINEAR, pattern=L),
}

#: ufuncs whose derivative is zero wherever it exists (piecewise constant, or not real-valued)
NONDIFF_UFUNCS = (
    np.sign, np.floor, np.ceil, np.trunc, np.rint, np.floor_divide, np.heaviside, np.signbit,
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.isnan, np.isinf, np.isfinite, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert,
    np.left_shift, np.right_shift, np.gcd, np.lcm, np.spacing, np.nextafter,
)  # fmt: skip
