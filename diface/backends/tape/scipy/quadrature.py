"""`scipy.integrate.quad` and `quad_vec` inside f: the integral of a traced integrand between traced
limits, differentiated by the Leibniz rule.

The integrand h(t, c) is recorded as a sub-tape (`scipy.callbacks`) capturing the values c of f's it reads;
the integral enters f's tape as a `Quadrature` node of (c, a, b), computed by the same SciPy routine
with the user's tolerances, and a replay integrates the integrand's replay at the new values. Its
derivative is again an integral, computed by the same routine:

    dI = integral_a^b (dh/dc dc) dt + h(b) db - h(a) da,     cbar = ybar integral_a^b dh/dc dt,

the tangent (or cotangent) integrand evaluated by the sub-tape's sweeps at each quadrature point. On
traced values (second order) the tangent integrand is itself recorded as a sub-tape and integrated by a
`Quadrature` node, so every order differentiates the same way. Each derivative is exact to the
quadrature's tolerance.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.graph import Tape, Traced, current_tape
from ..data.sites import user_location
from ..numpy.hooks import hook
from ..prims.prim import into, shape_of
from ..tracing.tracer import TapeArray
from .callbacks import (
    Callback,
    CallbackPrim,
    LastCall,
    SubTape,
    bound_arguments,
    call_scipy,
    flat,
    inside,
    own_slot,
    plain_value,
    record_sub,
    replayed,
    tangent_batch,
)

__all__ = ["Quadrature"]

#: integrate(fn, a, b, vector) -> the integral of fn over [a, b] (vector: fn returns arrays)
Integrate = Callable[[Callable, float, float, bool], np.ndarray]


class Quadrature(CallbackPrim):
    """I = the integral of `integrand` (a sub-tape in t) over [a, b]; differentiable in the captures
    (inputs 0..k-1) and in each limit that is an input (inputs k, k+1: `limits`)."""

    def __init__(self, integrand: SubTape, integrate: Integrate, label: str, limits: tuple[Any, Any]) -> None:
        self.integrand = integrand
        self.integrate = integrate
        self.name = label
        self.k = len(integrand.outer)
        #: the limits: None where the limit is an input of the node, else its fixed value
        self.limits = limits

    def _split(self, ins: tuple, fixed: bool = True) -> tuple[list, Any, Any]:
        """(captures, a, b) from the inputs (or their tangents: a fixed limit has none)."""
        rest = list(ins[self.k :])
        a, b = (rest.pop(0) if limit is None else limit if fixed else None for limit in self.limits)
        return list(ins[: self.k]), a, b

    def forward(self, *ins: Any, out: Any = None) -> Any:
        caps, a, b = self._split(ins)
        vector = self.integrand.shape != ()
        return into(out, np.asarray(self.integrate(replayed([(self.integrand, caps)]), float(a), float(b), vector)))

    def _at(self, t: Any, caps: list) -> Any:
        """The integrand at t (plain or traced)."""
        return self.integrand.run(self.integrand.env(t, caps))

    def _limit_terms(self, caps: list, a: Any, b: Any, ta: Any, tb: Any) -> Any:
        term = None
        if tb is not None:
            term = np.multiply(self._at(b, caps), tb)
        if ta is not None:
            low = np.multiply(self._at(a, caps), ta)
            term = np.negative(low) if term is None else np.subtract(term, low)
        return term

    def jvp(self, ins: tuple, y: Any, ts: tuple, b_: int, out: Any = None) -> Any:
        caps, a, b = self._split(ins)
        shape = shape_of(y)

        def one(item: list) -> Any:
            tangents, ta, tb = self._split(tuple(item), fixed=False)
            total = self._limit_terms(caps, a, b, ta, tb)
            if any(t is not None for t in tangents):
                inner = self._tangent_integral(caps, a, b, tangents)
                total = inner if total is None else np.add(total, inner)
            return np.zeros(shape) if total is None else total

        r = [one(item) for item in tangent_batch(ts, b_)]
        return into(out, r[0] if b_ == 0 else np.stack(r))

    def _tangent_integral(self, caps: list, a: Any, b: Any, tangents: list) -> Any:
        """The integral of the integrand's tangent for tangents of the captures."""
        integrand = self.integrand
        if _any_traced(caps, a, b, tangents):
            return self._derived(
                caps, a, b, tangents, lambda env, extra: integrand.tangent(env, integrand.seeds(extra))
            )
        seeds = integrand.seeds(tangents)

        def tangent_at(t: float) -> Any:
            env = integrand.env(np.asarray(t), caps)
            integrand.run(env)
            r = integrand.tangent(env, seeds)
            r = np.zeros(integrand.shape) if r is None else np.asarray(r)
            return float(r) if r.ndim == 0 else r

        return self.integrate(tangent_at, float(a), float(b), integrand.shape != ())

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b_: int, out: Any = None) -> Any:
        caps, a, b = self._split(ins)
        integrand = self.integrand
        if i >= self.k:  # a limit: +- g . h(limit)
            upper = [which for which in (0, 1) if self.limits[which] is None][i - self.k] == 1
            at = self._at(b if upper else a, caps)
            axes = tuple(range(b_, b_ + len(integrand.shape)))
            r = np.sum(np.multiply(g, at), axis=axes) if axes else np.multiply(g, at)
            return into(out, r if upper else np.negative(r))
        own = integrand.tape.captures[i][1]
        target = shape_of(ins[i])

        def one(cot: Any) -> Any:
            if _any_traced(caps, a, b, [cot]):
                return self._derived(
                    caps, a, b, [cot], lambda env, extra: integrand.cotangents(env, extra[0]).get(own), target
                )

            if integrand.shape == () and int(np.prod(target, dtype=np.int64)) == 1 and b_ == 0:
                # a scalar integral in a scalar: g times the tangent integral (SciPy's scalar routine)
                tangents = [np.ones(target) if c == i else None for c in range(self.k)]
                return np.multiply(cot, self._tangent_integral(caps, a, b, tangents))
            return self._cotangent_integrals(caps, a, b, cot)[i]

        r = one(g) if b_ == 0 else np.stack([one(g[j]) for j in range(shape_of(g)[0])])
        return into(out, r)

    def _cotangent_integrals(self, caps: list, a: Any, b: Any, cot: Any) -> list:
        """Every capture's cotangent for the integral's cotangent `cot` (plain values): the integral of
        the integrand's cotangents, all captures in one vector integral; the reverse sweep asks for
        one input at a time, and the next finds them kept (`LastCall`)."""
        known = _LAST.get(self, (*caps, a, b, cot))
        if known is not None:
            return known
        integrand = self.integrand
        shapes = [shape_of(c) for c in caps]
        sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]

        def cotangents_at(t: float) -> Any:
            env = integrand.env(np.asarray(t), caps)
            integrand.run(env)
            cots = integrand.cotangents(env, cot)
            return np.concatenate([flat(cots.get(own), size) for own, size in zip(integrand.own, sizes)])

        stacked = self.integrate(cotangents_at, float(a), float(b), True)
        ends = np.cumsum(sizes)
        result = [np.reshape(stacked[end - size : end], shape) for end, size, shape in zip(ends, sizes, shapes)]
        return _LAST.put(self, (*caps, a, b, cot), result)

    def _derived(self, caps: list, a: Any, b: Any, extra: list, sweep: Callable, shape: tuple | None = None) -> Any:
        """On traced values: the integral of `sweep(env at t, extra)` (a tangent or cotangent of the
        integrand) recorded as a sub-tape of the traced values' tape and integrated by a new node."""
        tape = next(v._tape for v in (*caps, a, b, *extra) if isinstance(v, Traced))
        mid = _plain(a) + _plain(b)

        def build(t: TapeArray) -> Any:
            sub = t._tape
            env = self.integrand.env(t, [inside(sub, v) for v in caps])
            self.integrand.run(env)
            r = sweep(env, [inside(sub, v) for v in extra])
            return np.zeros(self.integrand.shape if shape is None else shape) if r is None else r

        derived = SubTape(record_sub(tape, 0.5 * mid if np.isfinite(mid) else 0.0, build), True)
        limits = (None if isinstance(a, Traced) else _plain(a), None if isinstance(b, Traced) else _plain(b))
        node = Quadrature(derived, self.integrate, self.name, limits)
        args: list[Any] = [TapeArray(tape, s) for s in derived.outer]
        args += [v for v in (a, b) if isinstance(v, Traced)]
        return node(*args) if args else node.forward()


#: the last cotangent integrals of each thread
_LAST = LastCall()


def _plain(v: Any) -> float:
    return float(plain_value(v))


def _any_traced(*groups: Any) -> bool:
    for g in groups:
        for v in g if isinstance(g, list) else (g,):
            if isinstance(v, Traced):
                return True
    return False


# -- the hooks ---------------------------------------------------------------------------------------------
def _quad_rule(name: str) -> Callable:
    label = f"scipy.integrate.{name}"

    def rule(original: Callable, *args: Any, **kwargs: Any) -> Any:
        tape = current_tape()
        if tape is None:
            return original(*args, **kwargs)
        return _integrate_inside_f(original, name, label, tape, args, kwargs)

    return rule


#: the options of each routine that change what it computes but not what it is differentiated in
_FORWARDED = {
    "quad": ("epsabs", "epsrel", "limit", "points"),
    "quad_vec": ("epsabs", "epsrel", "norm", "limit", "points", "quadrature"),
}


def _integrate_inside_f(original: Callable, name: str, label: str, tape: Tape, args: tuple, kwargs: dict) -> Any:
    where = user_location()
    user, extra = bound_arguments(original, args, kwargs)
    fn = user["func" if name == "quad" else "f"]
    for p in ("weight", "wvar", "wopts", "complex_func", "full_output"):
        if user.get(p):
            raise NotSupportedError(
                f"AutoTape does not differentiate {label} with {p}= (called at {where}); write the weight "
                "into the integrand"
            )
    options = {p: user[p] for p in _FORWARDED[name] if p in user}
    for p, v in options.items():
        if isinstance(v, Traced) or (isinstance(v, (list, tuple)) and any(isinstance(e, Traced) for e in v)):
            options[p] = np.asarray([_plain(e) for e in v]) if p == "points" else _plain(v)  # type: ignore[union-attr]
    scalar_routine = original if name == "quad" else None
    vector_routine = _vector_routine(name, original)

    def integrate(f: Callable, a: float, b: float, vector: bool) -> np.ndarray:
        if vector or scalar_routine is None:
            return np.asarray(vector_routine(f, a, b, **_vector_options(name, options))[0])
        return np.asarray(scalar_routine(f, a, b, **options)[0])

    errors: list[BaseException] = []
    integrand = Callback(tape, fn, extra, label, errors)
    limits = [user["a"], user["b"]]
    plain = [_plain(v) for v in limits]
    result = call_scipy(original, errors, integrand, plain[0], plain[1], **options)
    sub = integrand.at(0.5 * (plain[0] + plain[1]) if np.all(np.isfinite(plain)) else 0.0)
    traced_limits: list[Any] = [v for v in limits if isinstance(v, Traced) and v._tape.slots[v._read()].variable]
    if not sub.outer and not traced_limits:
        return result
    moving = [any(v is w for w in traced_limits) for v in limits]
    fixed = (None if moving[0] else plain[0], None if moving[1] else plain[1])
    node = Quadrature(sub, integrate, label, fixed)
    inputs = [*sub.outer, *(own_slot(tape, v) for v in traced_limits)]
    slot = tape.add_node(node, tuple(inputs), {}, np.asarray(result[0], dtype=np.float64))
    return (TapeArray(tape, slot), *result[1:])


def _vector_routine(name: str, original: Callable) -> Callable:
    if name == "quad_vec":
        return original
    return sys.modules["scipy.integrate"].quad_vec  # imported: f called quad


def _vector_options(name: str, options: dict) -> dict:
    if name == "quad_vec":
        return options
    return {p: v for p, v in options.items() if p in ("epsabs", "epsrel", "limit", "points")}


for _name in _FORWARDED:
    hook("scipy.integrate", _name, always=True)(lambda name=_name: _quad_rule(name))
