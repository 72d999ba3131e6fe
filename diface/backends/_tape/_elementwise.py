"""Elementwise primitives: NumPy ufuncs (and scipy.special's, see `_special`), `where` and `clip`.

A differentiable ufunc carries one local partial derivative per input, a function of the saved inputs
and output (`ins`, `y`) that may write into `out`; the JVP is the sum of partial * tangent, the VJP of
input i is cotangent * partial_i (in the broadcast output shape, summed back by the engine).
"""

from __future__ import annotations

import math
import sys
from functools import partial
from typing import Any

import numpy as np

from ._prim import NO_RULE, Prim, into, scale
from ._special import PRIVATE, SPECIAL, special

__all__ = ["CLIP", "NONDIFF_UFUNCS", "UFUNC_PRIMS", "WHERE", "Ufunc", "ufunc_prim"]

Partial = Any  # a number, Arg(k) (the value of input k), or a function (ins, y, out) -> array


class Arg(int):
    """A partial derivative equal to the value of input k (d(a*b)/da = b)."""


def partial_value(p: Partial, ins: tuple, y: Any, out: Any) -> Any:
    if isinstance(p, Arg):
        return ins[p]
    if isinstance(p, (int, float)):
        return p
    return p(ins, y, out)


#: ufuncs whose Python-number operands can be converted to the output dtype once, at preparation
_ARITHMETIC = (np.add, np.subtract, np.multiply, np.divide, np.power, np.maximum, np.minimum)


class Ufunc(Prim):
    """A NumPy ufunc with one output; `partials` None for the piecewise-constant ones."""

    elementwise = True

    def __init__(self, ufunc: np.ufunc, partials: tuple[Partial, ...] | None, label: str | None = None) -> None:
        self.ufunc = ufunc
        self.name = ufunc.__name__
        self._label = label or f"numpy.{self.name}"
        self.partials = partials
        self.differentiable = partials is not None
        self.nondiff = frozenset(i for i, p in enumerate(partials or ()) if p is None or p is NO_RULE)
        self.no_rule = frozenset(i for i, p in enumerate(partials or ()) if p is NO_RULE)
        self.linear = ufunc in (np.add, np.subtract, np.negative, np.positive, np.multiply)

    def label(self) -> str:
        return self._label

    def forward(self, *ins: Any, out: Any = None) -> Any:
        return self.ufunc(*ins, out=out)

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        if self.ufunc in _ARITHMETIC and out.dtype.kind == "f":
            ins = tuple(np.asarray(a, dtype=out.dtype) if isinstance(a, (int, float)) else a for a in ins)
        if self.ufunc in (np.maximum, np.minimum):  # a positional out is deprecated for these two
            return partial(self.ufunc, *ins, out=out)
        return partial(self.ufunc, *ins, out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        r = None
        for i, t in enumerate(ts):
            if t is None:
                continue
            p = partial_value(self.partials[i], ins, y, None)
            if r is None:
                r = scale(t, p, out)
            else:
                r = np.add(r, scale(t, p), out=out)
        return r

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        p = partial_value(self.partials[i], ins, y, out if b == 0 else None)
        return scale(g, p, out)

    # prepared sweeps: one or two NumPy calls per step, no temporaries
    def jvp_step(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> Any:
        active = [i for i, t in enumerate(ts) if t is not None]
        if len(active) == 1:
            i = active[0]
            p = self.partials[i]
            if isinstance(p, Arg):
                return partial(np.multiply, ts[i], ins[p], out)
            if isinstance(p, (int, float)):
                return partial(np.multiply, ts[i], p, out) if p not in (1, -1) else _sign_step(p, ts[i], out)
            if b == 0:
                return partial(_times_partial, p, ins, y, ts[i], out)
        return super().jvp_step(ins, y, ts, b, out, params)

    def vjp_linear(self, i: int, ins: tuple, g: Any, b: int, params: dict) -> tuple[int, Any] | None:
        p = self.partials[i]
        return (int(p), g) if isinstance(p, (int, float)) and not isinstance(p, Arg) and p in (1, -1) else None

    def vjp_step(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any, params: dict) -> Any:
        p = self.partials[i]
        if isinstance(p, Arg):
            return partial(np.multiply, g, ins[p], out)
        if isinstance(p, (int, float)):
            return partial(np.multiply, g, p, out)
        if b == 0:
            return partial(_times_partial, p, ins, y, g, out)
        return super().vjp_step(i, ins, y, g, b, out, params)


def _times_partial(p: Any, ins: tuple, y: Any, t: Any, out: Any) -> None:
    np.multiply(p(ins, y, out), t, out)


def _sign_step(sign: int, t: Any, out: Any) -> Any:
    return partial(np.copyto, out, t) if sign == 1 else partial(np.negative, t, out)


# -- local partial derivatives ------------------------------------------------------------------
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _reciprocal_of(k: int, c: float = 1.0) -> Partial:
    return lambda ins, y, out: np.divide(c, ins[k], out=out)


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

    return d


def _inv_sqrt_a2_plus(c: float) -> Partial:  # 1 / sqrt(a^2 + c)
    def d(ins: tuple, y: Any, out: Any) -> Any:
        t = np.add(np.square(ins[0], out=out), c, out=out)
        return np.divide(1.0, np.sqrt(t, out=out), out=out)

    return d


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

    return d


def _hypot_part(k: int) -> Partial:
    return lambda ins, y, out: np.divide(ins[k], y, out=out)


def _arctan2_part(k: int) -> Partial:  # d atan2(a, c)/da = c / (a^2 + c^2), d/dc = -a / (a^2 + c^2)
    def d(ins: tuple, y: Any, out: Any) -> Any:
        a, c = ins
        r2 = np.add(np.square(a), np.square(c))
        return np.divide(c, r2, out=out) if k == 0 else np.negative(np.divide(a, r2, out=out), out=out)

    return d


def _logaddexp_part(k: int, base2: bool) -> Partial:
    def d(ins: tuple, y: Any, out: Any) -> Any:
        t = np.subtract(ins[k], y, out=out)
        return np.exp2(t, out=out) if base2 else np.exp(t, out=out)

    return d


def _d_copysign(ins: tuple, y: Any, out: Any) -> Any:  # sign(a) * sign(b) with the sign bit of b
    return np.multiply(np.sign(ins[0]), np.copysign(1.0, ins[1]), out=out)


def _neg_quotient(rounding: Any) -> Partial:  # d remainder(a, b)/db = -round(a / b)
    return lambda ins, y, out: np.negative(rounding(np.divide(ins[0], ins[1])), out=out)


_ONE, _MINUS_ONE = 1.0, -1.0

_DIFFERENTIABLE: dict[np.ufunc, tuple] = {
    np.add: (_ONE, _ONE),
    np.subtract: (_ONE, _MINUS_ONE),
    np.multiply: (Arg(1), Arg(0)),
    np.divide: (_reciprocal_of(1), _d_divide_denominator),
    np.power: (_d_power_base, _d_power_exponent),
    np.float_power: (_d_power_base, _d_power_exponent),
    np.negative: (_MINUS_ONE,),
    np.positive: (_ONE,),
    np.conjugate: (_ONE,),
    np.exp: (lambda ins, y, out: y,),
    np.exp2: (lambda ins, y, out: np.multiply(y, _LN2, out=out),),
    np.expm1: (lambda ins, y, out: np.add(y, 1.0, out=out),),
    np.log: (_reciprocal_of(0),),
    np.log2: (_reciprocal_of(0, 1.0 / _LN2),),
    np.log10: (_reciprocal_of(0, 1.0 / _LN10),),
    np.log1p: (_d_log1p,),
    np.sqrt: (lambda ins, y, out: np.divide(0.5, y, out=out),),
    np.cbrt: (_d_cbrt,),
    np.square: (lambda ins, y, out: np.multiply(ins[0], 2.0, out=out),),
    np.reciprocal: (_d_reciprocal,),
    np.sin: (lambda ins, y, out: np.cos(ins[0], out=out),),
    np.cos: (_neg_sin,),
    np.tan: (_one_plus_y2,),
    np.arcsin: (_inv_sqrt_one_minus_a2(1.0),),
    np.arccos: (_inv_sqrt_one_minus_a2(-1.0),),
    np.arctan: (_inv_one_plus_a2,),
    np.sinh: (lambda ins, y, out: np.cosh(ins[0], out=out),),
    np.cosh: (lambda ins, y, out: np.sinh(ins[0], out=out),),
    np.tanh: (_one_minus_y2,),
    np.arcsinh: (_inv_sqrt_a2_plus(1.0),),
    np.arccosh: (_inv_sqrt_a2_plus(-1.0),),
    np.arctanh: (_inv_one_minus_a2,),
    np.absolute: (lambda ins, y, out: np.sign(ins[0], out=out),),
    np.fabs: (lambda ins, y, out: np.sign(ins[0], out=out),),
    np.maximum: (_chooser(0, np.greater), _chooser(1, np.greater)),
    np.minimum: (_chooser(0, np.less), _chooser(1, np.less)),
    np.fmax: (_chooser(0, np.greater), _chooser(1, np.greater)),
    np.fmin: (_chooser(0, np.less), _chooser(1, np.less)),
    np.hypot: (_hypot_part(0), _hypot_part(1)),
    np.arctan2: (_arctan2_part(0), _arctan2_part(1)),
    np.logaddexp: (_logaddexp_part(0, False), _logaddexp_part(1, False)),
    np.logaddexp2: (_logaddexp_part(0, True), _logaddexp_part(1, True)),
    np.deg2rad: (math.pi / 180.0,),
    np.radians: (math.pi / 180.0,),
    np.rad2deg: (180.0 / math.pi,),
    np.degrees: (180.0 / math.pi,),
    np.copysign: (_d_copysign, None),
    np.remainder: (_ONE, _neg_quotient(np.floor)),
    np.fmod: (_ONE, _neg_quotient(np.trunc)),
    np.ldexp: (lambda ins, y, out: np.ldexp(1.0, ins[1], out=out), None),
}

#: ufuncs whose derivative is zero wherever it exists (piecewise constant, or not real-valued)
NONDIFF_UFUNCS = (
    np.sign, np.floor, np.ceil, np.trunc, np.rint, np.floor_divide, np.heaviside, np.signbit,
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.isnan, np.isinf, np.isfinite, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert,
    np.left_shift, np.right_shift, np.gcd, np.lcm, np.spacing, np.nextafter,
)  # fmt: skip


def _make_prims() -> dict[np.ufunc, Ufunc]:
    prims = {}
    for ufunc, partials in _DIFFERENTIABLE.items():
        prims[ufunc] = Ufunc(ufunc, partials)
    for ufunc in NONDIFF_UFUNCS:
        prims[ufunc] = Ufunc(ufunc, None)
    return prims


UFUNC_PRIMS: dict[np.ufunc, Ufunc] = _make_prims()


# -- where and clip: the structural notes' routing rules -------------------------------------------
class _Where(Prim):
    """`where(cond, a, b)`: the condition is metadata; cotangents route to a where it holds, to b
    elsewhere (summed over broadcast axes)."""

    name = "where"
    elementwise = True
    nondiff = frozenset({0})
    linear = True

    def forward(self, cond: Any, a: Any, b: Any, out: Any = None) -> Any:
        if out is None:
            return np.where(cond, a, b)
        np.copyto(out, b)
        np.copyto(out, a, where=cond)
        return out

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        ta = 0.0 if ts[1] is None else ts[1]
        tb = 0.0 if ts[2] is None else ts[2]
        return self.apply(ins[0], ta, tb, out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        return self.apply(ins[0], g, 0.0, out=out) if i == 1 else self.apply(ins[0], 0.0, g, out=out)


WHERE = _Where()


class _Clip(Prim):
    """`clip(x, lo, hi)` = minimum(maximum(x, lo), hi): the cotangent goes to hi where the result is hi,
    to lo where x < lo (and the result is not hi), to x elsewhere (x exactly on a bound counts as
    inside)."""

    name = "clip"
    elementwise = True

    def forward(self, a: Any, lo: Any, hi: Any, out: Any = None) -> Any:
        return np.clip(a, lo, hi, out=out)

    @staticmethod
    def _regions(ins: tuple) -> tuple[Any, Any, Any]:
        a, lo, hi = ins
        at_hi = np.greater(np.maximum(a, lo), hi)
        at_lo = np.logical_and(np.less(a, lo), np.logical_not(at_hi))
        inside = np.logical_not(np.logical_or(at_hi, at_lo))
        return inside, at_lo, at_hi

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        regions = self._regions(ins)
        r = None
        for mask, t in zip(regions, ts):
            if t is not None:
                term = np.where(mask, t, 0.0)
                r = term if r is None else np.add(r, term)
        return into(out, r)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        return WHERE.apply(self._regions(ins)[i], g, 0.0, out=out)


CLIP = _Clip()


# -- scipy.special ufuncs (recognised when scipy.special is imported; never imported here) ---------------
def ufunc_prim(ufunc: np.ufunc) -> Ufunc | None:
    """The primitive of a NumPy ufunc, or of one of the scipy.special ufuncs in `_special.SPECIAL`."""
    prim = UFUNC_PRIMS.get(ufunc)
    if prim is None and "scipy.special" in sys.modules:
        sp = special()
        for table, module in ((SPECIAL, sp), (PRIVATE, getattr(sp, "_ufuncs", None))):
            for name, partials in table.items():
                if getattr(module, name, None) is ufunc:
                    prim = Ufunc(ufunc, partials(), label=f"scipy.special.{name}")
                    prim.name = name
                    UFUNC_PRIMS[ufunc] = prim
                    return prim
    return prim
