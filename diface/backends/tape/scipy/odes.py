"""`scipy.integrate.solve_ivp` inside f: the solution of an ODE whose right-hand side and initial state
are traced, differentiated by forward sensitivities.

The right-hand side fun(t, y, *args) is recorded as a sub-tape (`scipy.callbacks`) of z = (t, y), capturing
the values c of f's it reads; the solution at the output times enters f's tape as an `OdeSolution` node
of (c, y0), and a replay solves again on the right-hand side's replay, with the same method and
tolerances. A tangent (dc, dy0) is carried by the tangent ODE solved beside the state,

    S' = df/dy S + df/dc dc,   S(t0) = dy0,

one augmented system for a batch of tangents, to the solver's tolerance. Reverse mode solves the adjoint
ODE backwards, l' = -(df/dy)^T l with l jumping by the cotangent at each output time, beside
m' = -(df/dc)^T l, on the state's dense output: one backward solve for any number of parameters.
Without `t_eval`, the output times are those of the recording, and a prepared call returns the
solution at those times. On traced values (second order) the tangent system is itself recorded as a
sub-tape and solved by a node of its own, so every order works the same way. Events and dense output
are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import ConvergenceError, NotSupportedError
from ..data.graph import Tape, Traced, current_tape
from ..data.sites import user_location
from ..numpy.hooks import hook
from ..prims.objects import holds_traced
from ..prims.prim import into, shape_of
from ..tracing.tracer import TapeArray, operand
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
    record_sub,
    tangent_batch,
)

__all__ = ["OdeSolution"]


class Integrator:
    """The user's solve_ivp call, made again on other right-hand sides (a replay's, the tangent and
    adjoint systems'), with the same method and options."""

    def __init__(
        self, original: Callable, label: str, where: str, t_span: Any, times: np.ndarray, method: Any, options: dict
    ) -> None:
        self.original = original
        self.label = label
        self.where = where
        self.t0 = float(t_span[0])
        self.t_span = t_span
        self.times = times
        self.method = method
        self.rtol = options.get("rtol", 1e-3)
        self.atol = options.get("atol", 1e-6)
        self.rest = {p: v for p, v in options.items() if p not in ("rtol", "atol")}

    def _run(self, f: Callable, t_span: Any, w0: np.ndarray, atol: Any, **extra: Any) -> Any:
        r = self.original(f, t_span, w0, method=self.method, rtol=self.rtol, atol=atol, **self.rest, **extra)
        if r.status != 0:
            raise ConvergenceError(f"{self.label} failed (called at {self.where}): {r.message}")
        return r

    def at_times(self, f: Callable, w0: np.ndarray, copies: int) -> np.ndarray:
        """The states at the output times of w' = f(t, w), w holding `copies` stacked systems."""
        atol = np.tile(self.atol, copies) if np.ndim(self.atol) else self.atol
        r = self._run(f, self.t_span, w0, atol, t_eval=self.times)
        if r.y.shape[1] != self.times.size:
            raise ConvergenceError(f"{self.label} failed (called at {self.where}): {r.message}")
        return np.asarray(r.y)

    def dense(self, f: Callable, y0: np.ndarray, copies: int) -> Callable:
        """The solution of y' = f(t, y) as a function of t (SciPy's dense output)."""
        end = float(self.times[-1]) if self.times.size else self.t0
        atol = np.tile(self.atol, copies) if np.ndim(self.atol) else self.atol
        return self._run(f, (self.t0, end), y0, atol, dense_output=True).sol

    def between(self, f: Callable, w: np.ndarray, start: float, stop: float) -> np.ndarray:
        """w at `stop` for w' = f(t, w) from w at `start` (the adjoint system, backwards in time)."""
        if start == stop:
            return w
        return np.asarray(self._run(f, (start, stop), w, float(np.min(self.atol))).y[:, -1])


class OdeSolution(CallbackPrim):
    """Y = solve_ivp's solution at fixed times; differentiable in the right-hand side's captures
    (inputs 0..k-1) and in y0 (input k, when traced)."""

    def __init__(self, rhs: SubTape, integrator: Integrator, label: str, where: str, y0: Any, copies: int = 1) -> None:
        self.rhs = rhs
        self.integrator = integrator
        self.name = label
        self.where = where
        self.k = len(rhs.outer)
        #: y0 when it is fixed (None: it is input k)
        self.y0 = y0
        #: the state stacks this many copies of the user's (a tangent system: the state and its tangents)
        self.copies = copies

    def _split(self, ins: tuple) -> tuple[list, Any]:
        return list(ins[: self.k]), (ins[self.k] if self.y0 is None else None)

    def _start(self, ins: tuple) -> np.ndarray:
        y0 = self._split(ins)[1]
        return np.asarray(self.y0 if y0 is None else y0, dtype=np.float64)

    def forward(self, *ins: Any, out: Any = None) -> Any:
        caps, _ = self._split(ins)
        rhs = self.rhs

        def fun(t: float, y: np.ndarray) -> np.ndarray:
            return rhs.evaluate(np.concatenate(([t], y)), caps)

        return into(out, self.integrator.at_times(fun, self._start(ins), self.copies))

    def _tangent_rhs(self, z: Any, caps: list, tangents: list[list]) -> Any:
        """The tangent system's right-hand side at z = (t, y, S_1, ..., S_count), plain or traced:
        y' = f(t, y), S_j' = df/dy S_j + df/dc tangents[j]."""
        rhs = self.rhs
        n = int(np.prod(rhs.shape, dtype=np.int64))
        env = rhs.env(z[: 1 + n], caps)
        rhs.run(env)
        parts = [np.reshape(env[rhs.tape.output], (n,))]
        for j, item in enumerate(tangents):
            seeds = rhs.seeds(item)
            seeds[rhs.tape.x] = np.concatenate((np.zeros(1), z[1 + n * (j + 1) : 1 + n * (j + 2)]))
            r = rhs.tangent(env, seeds)
            parts.append(np.zeros(n) if r is None else np.reshape(r, (n,)))
        return np.concatenate(parts)

    def _sensitivities(self, ins: tuple, tangents: list[list], start: list) -> Any:
        """The solution's tangents for a batch: tangents[j][i] for capture i, start[j] for y0. On traced
        values (second order) the tangent system is recorded as a sub-tape of the traced values' tape
        and solved by a node of its own."""
        caps, moving = self._split(ins)
        y0 = moving if moving is not None else self.y0
        n = int(shape_of(y0)[0])
        w0 = np.concatenate([y0, *(np.zeros(n) if t is None else np.reshape(t, (n,)) for t in start)])
        copies = self.copies * (1 + len(tangents))
        traced = [v for v in (*ins, *start, *(t for item in tangents for t in item)) if isinstance(v, Traced)]
        if not traced:
            w = self.integrator.at_times(
                lambda t, w: self._tangent_rhs(np.concatenate(([t], w)), caps, tangents), np.asarray(w0), copies
            )
        else:

            def build(z: TapeArray) -> Any:
                sub = z._tape
                inner = [[inside(sub, t) for t in item] for item in tangents]
                return self._tangent_rhs(z, [inside(sub, c) for c in caps], inner)

            tape = traced[0]._tape
            system = SubTape(record_sub(tape, np.zeros(1 + n * (1 + len(tangents))), build), False)
            fixed = None if isinstance(w0, Traced) else np.asarray(w0)
            node = OdeSolution(system, self.integrator, self.name, self.where, fixed, copies)
            w = node(*(TapeArray(tape, s) for s in system.outer), *([w0] if fixed is None else []))
        return np.stack([w[n * (j + 1) : n * (j + 2)] for j in range(len(tangents))])

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        items = [self._split(tuple(item)) for item in tangent_batch(ts, b)]
        r = self._sensitivities(ins, [tc for tc, _ in items], [ty0 for _, ty0 in items])
        return into(out, r[0] if b == 0 else r)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        if any(isinstance(v, Traced) for v in (*ins, g)):
            # second order: the Jacobian in input i by tangent systems (one per element), contracted
            target = shape_of(ins[i])
            m = int(np.prod(target, dtype=np.int64))
            basis = list(np.eye(m).reshape((m, *target)))
            if i < self.k:
                jac = self._sensitivities(
                    ins, [[e if c == i else None for c in range(self.k)] for e in basis], [None] * m
                )
            else:
                jac = self._sensitivities(ins, [[None] * self.k for _ in basis], basis)
            axes = tuple(range(b, b + len(shape_of(y))))
            r = np.tensordot(g, jac, axes=(axes, tuple(range(1, 1 + len(axes)))))
            return np.reshape(r, shape_of(g)[:b] + target)
        if b == 0:
            r = self._adjoint(ins, g)[i]
        else:
            r = np.stack([self._adjoint(ins, g[j])[i] for j in range(shape_of(g)[0])])
        return into(out, r)

    def _adjoint(self, ins: tuple, g: Any) -> list:
        """The cotangents of every input for the output cotangent g (state size, times): the adjoint ODE
        l' = -(df/dy)^T l, with l jumping by g's column at each output time, solved backwards beside
        m' = -(df/dc)^T l; then cbar = m(t0), y0bar = l(t0). The reverse sweep asks for one input at a
        time: the last solve is kept (by value) for the next input."""
        known = _LAST.get(self, (*ins, g))
        if known is not None:
            return known
        caps, _ = self._split(ins)
        rhs, integrator = self.rhs, self.integrator
        y0 = self._start(ins)
        n = y0.size
        x = rhs.tape.x
        sizes = [int(np.prod(shape_of(c), dtype=np.int64)) for c in caps]

        def fun(t: float, y: np.ndarray) -> np.ndarray:
            return rhs.evaluate(np.concatenate(([t], y)), caps)

        state = integrator.dense(fun, y0, self.copies)

        def adjoint(t: float, w: np.ndarray) -> np.ndarray:
            env = rhs.env(np.concatenate(([t], state(t))), caps)
            rhs.run(env)
            cots = rhs.cotangents(env, w[:n])
            parts = [-flat(cots.get(x), n + 1)[1:]]
            parts += [-flat(cots.get(s), size) for s, size in zip(rhs.own, sizes)]
            return np.concatenate(parts)

        g = np.asarray(g, dtype=np.float64)
        times = integrator.times
        w = np.zeros(n + sum(sizes))
        now = float(times[-1]) if times.size else integrator.t0
        for k in range(times.size - 1, -1, -1):
            w = integrator.between(adjoint, w, now, float(times[k]))
            now = float(times[k])
            w[:n] += g[:, k]
        w = integrator.between(adjoint, w, now, integrator.t0)
        result: list = []
        offset = n
        for c, size in zip(caps, sizes):
            result.append(np.reshape(w[offset : offset + size], shape_of(c)))
            offset += size
        if self.y0 is None:
            result.append(w[:n].copy())
        return _LAST.put(self, (*ins, g), result)


#: the last adjoint solve of each thread
_LAST = LastCall()


def _rule(original: Callable, *args: Any, **kwargs: Any) -> Any:
    tape = current_tape()
    if tape is None:
        return original(*args, **kwargs)
    return _solve_inside_f(original, tape, args, kwargs)


def _refuse(where: str, what: str) -> NotSupportedError:
    return NotSupportedError(
        f"AutoTape does not differentiate scipy.integrate.solve_ivp with {what} (called at {where}); pass "
        "t_eval for the times you need, or write the integrator with NumPy steps (the tape records them)"
    )


def _solve_inside_f(original: Callable, tape: Tape, args: tuple, kwargs: dict) -> Any:
    label = "scipy.integrate.solve_ivp"
    where = user_location()
    user, extra = bound_arguments(original, args, kwargs)
    options = dict(user.pop("options", {}))
    fun, t_span, y0 = user["fun"], user["t_span"], user["y0"]
    for p, what in (("events", "events"), ("dense_output", "dense_output=True"), ("vectorized", "vectorized=True")):
        if user.get(p):
            raise _refuse(where, what)
    if holds_traced(t_span) or holds_traced(user.get("t_eval")) or any(holds_traced(v) for v in options.values()):
        raise _refuse(where, "traced times or options")
    y0 = operand(y0) if holds_traced(y0) else np.asarray(y0)
    y0_plain = np.asarray(y0._tape.values[y0._read()] if isinstance(y0, Traced) else y0, dtype=np.float64)
    if y0_plain.ndim != 1 or y0_plain.dtype.kind == "c":
        raise _refuse(where, "a complex or non-vector y0")
    n = y0_plain.size
    errors: list[BaseException] = []
    cb = Callback(tape, lambda z, *a: fun(z[0], z[1:], *a), extra, label, errors)

    def rhs(t: float, y: np.ndarray) -> Any:
        return cb(np.concatenate(([t], y)))

    method, t_eval = user.get("method", "RK45"), user.get("t_eval")
    result = call_scipy(original, errors, rhs, t_span, y0_plain, method=method, t_eval=t_eval, **options)
    if result.status != 0:
        raise ConvergenceError(f"{label} failed (called at {where}): {result.message}")
    times = np.array(result.t)
    sub = cb.at(np.concatenate(([times[-1] if times.size else t_span[0]], result.y[:, -1] if times.size else y0_plain)))
    moving = isinstance(y0, Traced) and y0._tape.slots[y0._read()].variable
    if not sub.outer and not moving:
        return result
    integrator = Integrator(original, label, where, t_span, times, method, options)
    node = OdeSolution(sub, integrator, label, where, None if moving else y0_plain)
    inputs = [*sub.outer, *([own_slot(tape, y0)] if isinstance(y0, Traced) and moving else [])]
    slot = tape.add_node(node, tuple(inputs), {}, np.array(result.y, dtype=np.float64).reshape(n, times.size))
    result.y = TapeArray(tape, slot)
    return result


hook("scipy.integrate", "solve_ivp", always=True)(lambda: _rule)
