"""Elementwise primitives: NumPy ufuncs (and scipy.special's, see `prims.special`), `where` and `clip`.

A differentiable ufunc carries one local partial derivative per input (`partials`), a function of the
saved inputs and output (`ins`, `y`) that may write into `out`; the JVP is the sum of partial *
tangent, the VJP of input i is cotangent * partial_i (in the broadcast output shape, summed back by the
engine). Its Taylor rule (`Prim.taylor`, a series rule of `series` or linear) and its sparsity
structure (`Ufunc.pattern`) come with its partials (`partials.UfuncRules`).

Zero times anything is zero. A branch of `where` (or `maximum`, `clip`, a masked product) that is not
taken hands a zero tangent or cotangent to the operations that computed it, and there a local partial
may be infinite or NaN (sqrt at 0, a division by a clamped 0, log(0), exp overflowing): the product
of the two must be 0, not NaN, or the derivative of `where(x > 0, sqrt(x), 0)` would be NaN at every
x <= 0. The rules take such products with `strong_multiply` (0 * inf := 0, 0 * nan := 0; a nonzero
factor times inf stays inf, where the derivative does not exist). Plain products cost less, so the
sweeps use them and redo a sweep with strong products only when its result holds a NaN (`has_nan`):
a NaN-free result is the same either way. Where the rules are recorded (second order) the products
are strong where a factor may be unbounded (`Tape.unbounded`, `Prim.unbounded`), recorded as
`STRONG_MULTIPLY`, whose own derivatives are strong products too.
"""

from __future__ import annotations

import math
import sys
from functools import partial
from typing import Any

import numpy as np

from ...._sparsity import Deps, Nonlinearity
from ..data.graph import Node, Traced
from . import patterns
from .partials import DIFFERENTIABLE, NONDIFF_UFUNCS, Arg, Partial, UfuncRules, partial_value
from .prim import ALL_INPUTS, HOLOMORPHIC, NO_RULE, TAYLOR_LINEAR, Prim, into, scale
from .special import HOLOMORPHIC_SPECIAL, PRIVATE, SPECIAL, special

__all__ = [
    "CLIP",
    "NONDIFF_UFUNCS",
    "STRONG_MULTIPLY",
    "UFUNC_PRIMS",
    "WHERE",
    "Ufunc",
    "guarded_jvp_step",
    "guarded_vjp_step",
    "has_nan",
    "nan_probe",
    "quiet",
    "run_steps",
    "strong_multiply",
    "ufunc_prim",
]

#: ufuncs complex-differentiable with `prims.partials`' rules (real-coefficient expressions): see `Prim.complex`
_HOLOMORPHIC = (
    np.add, np.subtract, np.multiply, np.divide, np.power, np.float_power, np.negative, np.positive,
    np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.sqrt, np.square, np.reciprocal,
    np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
    np.arcsinh, np.arccosh, np.arctanh,
)  # fmt: skip

#: ufuncs whose Python-number operands can be converted to the output dtype once, at preparation
_ARITHMETIC = (np.add, np.subtract, np.multiply, np.divide, np.power, np.maximum, np.minimum)

#: ufuncs whose value or local partial derivatives may be infinite or NaN at finite inputs (poles,
#: branch points, domain edges, overflow): see `Prim.unbounded`
_UNBOUNDED = (
    np.divide, np.power, np.float_power, np.reciprocal, np.sqrt, np.cbrt, np.exp, np.exp2, np.expm1,
    np.log, np.log2, np.log10, np.log1p, np.arcsin, np.arccos, np.arccosh, np.arctanh, np.sinh, np.cosh,
    np.hypot, np.arctan2, np.remainder, np.fmod, np.ldexp,
)  # fmt: skip
#: of those, the ones that are bounded where their second operand is a fixed nonzero number
_BY_NONZERO = (np.divide, np.remainder, np.fmod, np.hypot, np.arctan2)
#: scipy.special ufuncs that are finite with finite derivatives at every finite input (the others count
#: as unbounded)
_BOUNDED_SPECIAL = frozenset({"expit", "log_expit", "erf", "erfc", "ndtr"})


def quiet() -> Any:
    """The floating-point errors the sweeps leave silent, as a context: a partial at a pole (1/0) is
    computed and then multiplied by a zero (see `strong_multiply`), which is no error of the user's."""
    return np.errstate(divide="ignore", invalid="ignore", over="ignore")


def run_steps(steps: list, silent: bool) -> None:
    """Run a prepared replay's or sweep's steps, with `quiet()` floating-point errors where `silent`."""
    if silent:
        with quiet():
            for step in steps:
                step()
    else:
        for step in steps:
            step()


class Ufunc(Prim):
    """A NumPy ufunc with one output; `partials` None for the piecewise-constant ones. `taylor` and
    `taylor_linear_in`: see `Prim`; `pattern`: how the output elements depend on the matching input
    elements, for sparsity detection (linear, bilinear (a product), a quotient, or nonlinear)."""

    elementwise = True
    inplace = True
    sparsity = staticmethod(patterns.elementwise)

    def __init__(
        self,
        ufunc: np.ufunc,
        partials: tuple[Partial, ...] | None,
        label: str | None = None,
        unbounded: bool | None = None,
        taylor: Any = None,
        pattern: Nonlinearity = Nonlinearity.NONLINEAR,
        taylor_linear_in: frozenset = frozenset(),
    ) -> None:
        self.ufunc = ufunc
        self.taylor = taylor
        self.taylor_linear_in = taylor_linear_in
        self.pattern = pattern
        self.name = ufunc.__name__
        self._label = label or f"numpy.{self.name}"
        #: empty for the piecewise-constant ones (not differentiable: their rules are never called)
        self.partials: tuple[Partial, ...] = partials or ()
        self.differentiable = partials is not None
        self.nondiff = frozenset(i for i, p in enumerate(partials or ()) if p is None or p is NO_RULE)
        self.no_rule = frozenset(i for i, p in enumerate(partials or ()) if p is NO_RULE)
        self.linear = ufunc in (np.add, np.subtract, np.negative, np.positive, np.multiply)
        if ufunc in _HOLOMORPHIC and label is None:
            self.complex = HOLOMORPHIC
        self._unbounded = (ufunc in _UNBOUNDED) if unbounded is None else unbounded

    def label(self) -> str:
        return self._label

    def unbounded(self, literals: tuple) -> bool:
        if not self._unbounded or not self.differentiable:
            return False
        fixed = literals[1] if len(literals) == 2 else None
        if fixed is None:
            return True
        c = np.asarray(fixed)
        if self.ufunc in (np.power, np.float_power):  # a fixed whole exponent >= 0: a polynomial
            return not (c.dtype.kind in "iub" or (c.dtype.kind == "f" and np.all(c >= 0) and np.all(c == np.round(c))))
        if self.ufunc in _BY_NONZERO:  # divided by a fixed nonzero number (a mean): finite, and so its partials
            return not (c.dtype.kind in "iubf" and np.all(np.isfinite(c)) and np.all(c != 0))
        return True

    def forward(self, *ins: Any, out: Any = None) -> Any:
        return self.ufunc(*ins, out=out)

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        inputs: set = set()
        output = False
        for i in active:
            p = self.partials[i]
            if isinstance(p, Arg):
                inputs.add(int(p))
            elif not isinstance(p, (int, float)):
                marked = getattr(p, "reads", None)
                if marked is None:
                    return ALL_INPUTS, True
                inputs |= marked[0]
                output = output or marked[1]
        return inputs, output

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        if self.ufunc in _ARITHMETIC and out.dtype.kind == "f":
            ins = tuple(np.asarray(a, dtype=out.dtype) if isinstance(a, (int, float)) else a for a in ins)
        if self.ufunc in (np.maximum, np.minimum):  # a positional out is deprecated for these two
            return partial(self.ufunc, *ins, out=out)
        return partial(self.ufunc, *ins, out)

    # `guard`: products of tangents and partials by `strong_multiply` (0 * inf := 0)
    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, guard: bool = False) -> Any:
        times = _strong_scale if guard else scale
        r = None
        for i, t in enumerate(ts):
            if t is None:
                continue
            p = partial_value(self.partials[i], ins, y, None)
            if r is None:
                r = times(t, p, out)
            else:
                r = np.add(r, times(t, p), out=out)
        return r

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, guard: bool = False) -> Any:
        p = partial_value(self.partials[i], ins, y, out if b == 0 else None)
        return _strong_scale(g, p, out) if guard else scale(g, p, out)

    # prepared sweeps: one NumPy call per term, no temporaries allocated per call
    def jvp_step(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> Any:
        terms = [(self.partials[i], t) for i, t in enumerate(ts) if t is not None]
        # terms with a partial of +-1 last: they are added straight into the buffer
        terms.sort(key=lambda term: _unit(term[0]) != 0)
        steps = [_scaled_step(terms[0][0], ins, y, terms[0][1], b, out)]
        for p, t in terms[1:]:
            sign = _unit(p)
            if sign:
                steps.append(partial(np.add if sign == 1 else np.subtract, out, t, out))
            else:
                tmp = np.empty(out.shape, out.dtype)
                steps += [_scaled_step(p, ins, y, t, b, tmp), partial(np.add, out, tmp, out)]
        return steps[0] if len(steps) == 1 else partial(_run, tuple(steps))

    def vjp_linear(self, i: int, ins: tuple, g: Any, b: int, params: dict) -> tuple[int, Any] | None:
        p = self.partials[i]
        return (int(p), g) if isinstance(p, (int, float)) and not isinstance(p, Arg) and p in (1, -1) else None

    def vjp_step(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any, params: dict) -> Any:
        return _scaled_step(self.partials[i], ins, y, g, b, out)


def _unit(p: Partial) -> int:
    """1 or -1 for a partial derivative that is that constant, else 0."""
    return int(p) if isinstance(p, (int, float)) and not isinstance(p, Arg) and p in (1, -1) else 0


def _scaled_step(p: Partial, ins: tuple, y: Any, t: Any, b: int, out: Any) -> Any:
    """A step writing `p * t` into `out` (t a tangent or cotangent, b leading batch axes; p broadcasts
    against its trailing axes)."""
    if isinstance(p, Arg):
        return partial(np.multiply, t, ins[p], out)
    if isinstance(p, (int, float)):
        return partial(np.multiply, t, p, out) if p not in (1, -1) else _sign_step(p, t, out)
    scaled = getattr(p, "scaled_input", None)
    if scaled is not None and t.size and not any(t.strides[b:]):  # t one value (per batch row), broadcast
        k, c = scaled
        one = t[(*(slice(None),) * b, *(slice(0, 1),) * (t.ndim - b), Ellipsis)]
        factor = np.empty(one.shape, out.dtype)
        return partial(_scaled_input, ins[k], one, c, factor, out)
    if b == 0:
        return partial(_times_partial, p, ins, y, t, out)
    scratch = np.empty(out.shape[b:], out.dtype)  # the partial itself, without the batch axis
    return partial(_times_partial_into, p, ins, y, t, scratch, out)


def _scaled_input(a: Any, one: Any, c: float, factor: Any, out: Any) -> None:
    np.multiply(one, c, factor)  # one element (per batch row)
    np.multiply(a, factor, out)


def _times_partial(p: Any, ins: tuple, y: Any, t: Any, out: Any) -> None:
    np.multiply(p(ins, y, out), t, out)


def _times_partial_into(p: Any, ins: tuple, y: Any, t: Any, scratch: Any, out: Any) -> None:
    np.multiply(t, p(ins, y, scratch), out)


def _run(steps: tuple) -> None:
    for step in steps:
        step()


# -- strong products: 0 * inf := 0 ---------------------------------------------------------------------
#: up to this many elements `has_nan` takes a dot product (one BLAS call), beyond a minimum (no threads)
_DOT_SIZE = 1 << 14


def has_nan(r: Any) -> bool:
    """Whether the array `r` holds a NaN: one pass, no temporary for real arrays (NaN propagates
    through a sum of squares and through minimum; an infinity does not make a NaN there)."""
    kind = r.dtype.kind
    if kind not in "fc" or r.size == 0:
        return False
    if kind == "f":
        if r.size <= _DOT_SIZE:
            flat = r.reshape(-1)
            return math.isnan(np.dot(flat, flat))
        return bool(np.isnan(np.minimum.reduce(r, axis=None)))
    return bool(np.isnan(r).any())


def nan_probe(r: np.ndarray) -> Any:
    """A zero-argument check of whether the buffer `r` holds a NaN (`has_nan`), made once for a buffer
    a compiled sweep checks at every call: a dot product of a flat view where one fits."""
    if r.dtype.kind == "f" and 0 < r.size <= _DOT_SIZE:
        flat = r.reshape(-1)
        if np.shares_memory(flat, r):
            return partial(_dot_is_nan, flat)
    return partial(has_nan, r)


def _dot_is_nan(flat: np.ndarray) -> bool:
    return math.isnan(np.dot(flat, flat))


def strong_multiply(a: Any, b: Any, out: Any = None) -> Any:
    """`a * b`, and 0 wherever a or b is 0, even where the other is infinite or NaN: the product of a
    tangent or cotangent with a local partial derivative (see the module docstring). On traced values
    it records `STRONG_MULTIPLY` (second order), whose derivatives are strong products too."""
    if isinstance(a, Traced) or isinstance(b, Traced):
        return STRONG_MULTIPLY.apply(a, b, out=out)
    return _strong(a, b, out)


def _strong(a: Any, b: Any, out: Any) -> Any:
    alias = out is not None and any(isinstance(v, np.ndarray) and np.may_share_memory(out, v) for v in (a, b))
    with np.errstate(invalid="ignore"):
        r = np.multiply(a, b) if alias or out is None else np.multiply(a, b, out=out)
    if not has_nan(np.asarray(r)):
        return into(out, r)
    zero = np.logical_or(np.equal(a, 0), np.equal(b, 0))  # before out is written: it may be a or b
    if out is None:
        return np.where(zero, np.zeros((), np.result_type(r)), r)
    if r is not out:
        np.copyto(out, r)
    np.copyto(out, 0, where=zero)
    return out


def _strong_into(a: Any, b: Any, out: Any, nan: Any) -> None:
    """`strong_multiply` into a buffer that is neither factor, `nan` its `nan_probe` (a prepared step:
    the floating-point errors are the replay's to silence)."""
    np.multiply(a, b, out)
    if nan():
        np.copyto(out, 0, where=np.logical_or(np.equal(a, 0), np.equal(b, 0)))


def _strong_scale(t: Any, p: Any, out: Any = None) -> Any:
    """`scale` (t * p, cheap for 1 and -1) as a strong product."""
    if isinstance(p, (int, float)) and p in (1, -1):
        return scale(t, p, out)
    return strong_multiply(t, p, out)


def _checked(step: Any, out: Any, again: Any) -> None:
    step()
    if has_nan(out):
        again()


def guarded_jvp_step(prim: Prim, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> Any:
    """`prim.jvp_step` in a sweep that takes strong products: the step as it is, and where a ufunc's
    result holds a NaN, its JVP again with strong products."""
    step = prim.jvp_step(ins, y, ts, b, out, params)
    if not isinstance(prim, Ufunc) or all(t is None or _unit(p) for p, t in zip(prim.partials, ts)):
        return step
    return partial(_checked, step, out, partial(_strong_jvp, prim, ins, y, ts, b, out))


def guarded_vjp_step(prim: Prim, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any, params: dict) -> Any:
    """`prim.vjp_step` in a sweep that takes strong products (see `guarded_jvp_step`)."""
    step = prim.vjp_step(i, ins, y, g, b, out, params)
    if not isinstance(prim, Ufunc) or _unit(prim.partials[i]):
        return step
    return partial(_checked, step, out, partial(_strong_vjp, prim, i, ins, y, g, b, out))


def _strong_jvp(prim: Ufunc, ins: tuple, y: Any, ts: tuple, b: int, out: Any) -> None:
    np.copyto(out, prim.jvp(ins, y, ts, b, None, guard=True))


def _strong_vjp(prim: Ufunc, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any) -> None:
    np.copyto(out, prim.vjp(i, ins, y, g, b, None, guard=True))


def _sign_step(sign: float, t: Any, out: Any) -> Any:
    return partial(np.copyto, out, t) if sign == 1 else partial(np.negative, t, out)


def _make_prims() -> dict[np.ufunc, Ufunc]:
    prims = {}
    for ufunc, rules in DIFFERENTIABLE.items():
        prims[ufunc] = Ufunc(
            ufunc, rules.partials, taylor=rules.taylor, pattern=rules.pattern, taylor_linear_in=rules.taylor_linear_in
        )
    for ufunc in NONDIFF_UFUNCS:
        prims[ufunc] = Ufunc(ufunc, None)
    return prims


UFUNC_PRIMS: dict[np.ufunc, Ufunc] = _make_prims()


class _StrongMultiply(Ufunc):
    """`strong_multiply` as a primitive: the products of tangents with partials that a rule recorded on
    traced values takes (second order). Its partials are multiply's; a sweep that redoes itself with
    strong products (see `has_nan`) takes strong products here too."""

    inplace = False  # its value is fixed where a factor is 0: the factors must outlive the product

    def forward(self, *ins: Any, out: Any = None) -> Any:
        return _strong(ins[0], ins[1], out)

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        return partial(_strong_into, ins[0], ins[1], out, nan_probe(out))  # out: its own buffer (not inplace)

    def unbounded(self, literals: tuple) -> bool:
        return False


STRONG_MULTIPLY = _StrongMultiply(np.multiply, (Arg(1), Arg(0)), unbounded=False, pattern=Nonlinearity.BILINEAR)
STRONG_MULTIPLY.name = "strong_multiply"


# -- where and clip: the structural notes' routing rules -------------------------------------------
class _Where(Prim):
    """`where(cond, a, b)`: the condition is metadata; cotangents route to a where it holds, to b
    elsewhere (summed over broadcast axes)."""

    name = "where"
    elementwise = True
    nondiff = frozenset({0})
    linear = True
    complex = HOLOMORPHIC
    taylor = TAYLOR_LINEAR

    @staticmethod
    def sparsity(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
        """A condition known at recording selects elements exactly; a traced one takes both branches."""
        if isinstance(ins[0], Deps):  # a condition computed from inputs: either branch
            return Deps.elementwise(shape, [run.deps(v) for v in ins[1:]], Nonlinearity.LINEAR)
        return patterns.move(run, node, ins, shape)

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return {0}, False  # the condition

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
    taylor = TAYLOR_LINEAR
    sparsity = staticmethod(patterns.linear)

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
    """The primitive of a NumPy ufunc, or of one of the scipy.special ufuncs in `prims.special.SPECIAL`."""
    prim = UFUNC_PRIMS.get(ufunc)
    if prim is None and "scipy.special" in sys.modules:
        sp = special()
        for table, module in ((SPECIAL, sp), (PRIVATE, getattr(sp, "_ufuncs", None))):
            for name, partials in table.items():
                if getattr(module, name, None) is ufunc:
                    made = partials()
                    rules = made if isinstance(made, UfuncRules) else UfuncRules(made)
                    prim = Ufunc(
                        ufunc,
                        rules.partials,
                        label=f"scipy.special.{name}",
                        unbounded=name not in _BOUNDED_SPECIAL,
                        taylor=rules.taylor,
                        pattern=rules.pattern,
                    )
                    prim.name = name
                    if name in HOLOMORPHIC_SPECIAL:
                        prim.complex = HOLOMORPHIC
                    UFUNC_PRIMS[ufunc] = prim
                    return prim
    return prim
