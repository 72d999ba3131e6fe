"""The kernels AutoTape hands to diface's core: a recording made at preparation and replayed per call.

A prepared kernel compiles its tape (`_compile`) once and replays it with fixed buffers. An unprepared
one (the core's single-use preparations) differentiates the values seen while recording, with no
compilation. Called with traced arrays (AutoTape differentiating what AutoTape computes: second order),
a kernel runs its tape on them (`_interpret`), which records its sweeps as nodes of the outer tape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._problem import Problem, size_of
from ._compile import Forward, Reverse, Tangent
from ._graph import Traced
from ._interpret import jvp, replay, vjp
from ._record import Recording, record, take_recording

__all__ = ["DerivativeKernel", "GradientKernel", "JacobianKernel", "PullbackKernel", "PushforwardKernel"]


def _holds(v: Any) -> bool:
    """Whether `v` is a traced array or a container holding one."""
    if isinstance(v, Traced):
        return True
    if isinstance(v, (list, tuple)):
        return any(_holds(e) for e in v)
    if isinstance(v, dict):
        return any(_holds(e) for e in v.values())
    return False


def _concrete(v: Any) -> Any:
    """Context values with traced leaves replaced by their recorded values."""
    if isinstance(v, Traced):
        return np.array(v._value(), copy=True)
    if isinstance(v, tuple):
        return tuple(_concrete(e) for e in v)
    if isinstance(v, list):
        return [_concrete(e) for e in v]
    if isinstance(v, dict):
        return {k: _concrete(e) for k, e in v.items()}
    return v


def _fresh(value: Any) -> Any:
    """A copy of f's value as NumPy would return it (a scalar for 0-d results)."""
    r = np.array(value, copy=True)
    return r[()] if r.ndim == 0 else r


def _leaf(cv: tuple, ci: int, path: tuple) -> Any:
    v = cv[ci]
    for key in path:
        v = v[key]
    return v


class _Kernel:
    """Records `f` at preparation; each call replays (prepared), reuses the recorded values (unprepared,
    at the recorded point) or runs the tape on traced arrays."""

    #: compile even for a single call (the Jacobian runs many sweeps)
    compile_single_use = False

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.rec: Recording = take_recording(problem)
        self._fwd: Forward | None = None
        self._sweeps: dict = {}
        if not problem.single_use:
            self.compile()

    def compile(self) -> None:
        """Build the replay and the sweeps the calls will run (at preparation, so calls only run them)."""
        self.forward()

    # -- recordings --------------------------------------------------------------------------------------
    def _rerecord(self, x: Any, cv: tuple, y: Any) -> Recording:
        self.rec = record(self.problem.f, x, self.problem.contexts, cv, y)
        self._fwd = None
        self._sweeps = {}
        return self.rec

    def _current(self, x: Any, cv: tuple, y: Any) -> Recording:
        """The recording valid for these context values (recorded again if a static one changed)."""
        rec = self.rec
        if (rec.statics and not rec.statics_match(cv)) or not rec.leaves_match(cv):
            rec = self._rerecord(x, cv, y)
        return rec

    def forward(self) -> Forward:
        if self._fwd is None:
            self._fwd = Forward(self.rec.tape)
            self.rec.tape.release_values()  # the buffers hold what replays need
        return self._fwd

    def sweep(self, kind: str, batch: int | None) -> Any:
        key = (kind, batch)
        s = self._sweeps.get(key)
        if s is None:
            s = self._sweeps[key] = (Reverse if kind == "reverse" else Tangent)(self.rec.tape, self.forward(), batch)
        return s

    # -- calls -------------------------------------------------------------------------------------------
    def __call__(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        if _holds(x) or _holds(extra) or _holds(cv):
            return self._on_traced(x, extra, cv, y, full)
        if self.problem.single_use and self.compile_single_use is False:
            return self._unprepared(x, extra, cv, y, full)
        self._current(x, cv, y)
        if self._fwd is None:
            self.compile()
        fwd = self._fwd
        fwd.run(x, cv, y)
        value = None
        if y is not None:
            np.copyto(y, fwd.output)
            value = y
        elif full:
            value = _fresh(fwd.output)
        return value, self.replayed(fwd, x, extra)

    def _unprepared(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        rec = self.rec
        if not self._at_recorded_point(rec, x, cv):
            rec = self._rerecord(x, cv, y)
        tape = rec.tape
        env = tape.values
        output = _fresh(env[tape.output])
        if y is not None:
            np.copyto(y, output)
        value = y if y is not None else output if full else None
        return value, self.interpreted(tape, env, extra)

    @staticmethod
    def _at_recorded_point(rec: Recording, x: Any, cv: tuple) -> bool:
        tape = rec.tape
        if not np.array_equal(tape.values[tape.x], x):
            return False
        if rec.statics and not rec.statics_match(cv):
            return False
        for s, kind, ci, path in tape.inputs:
            if kind == "constant":
                try:
                    v = _leaf(cv, ci, path)
                except (KeyError, IndexError, TypeError):
                    return False
                if not np.array_equal(tape.values[s], v):
                    return False
        return True

    def _on_traced(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        if y is not None:
            raise NotSupportedError("AutoTape cannot differentiate an in-place function f(y, x) inside a traced f")
        rec = self.rec
        if rec.statics and not rec.statics_match(cv):
            rec = self._rerecord(_concrete(x), _concrete(cv), y)
        tape = rec.tape
        env = list(tape.values)
        env[tape.x] = x
        for s, _kind, ci, path in tape.inputs:
            env[s] = _leaf(cv, ci, path)
        replay(tape, env, tape.live_nodes())
        return (env[tape.output] if full else None), self.interpreted(tape, env, extra)

    # -- per operator ------------------------------------------------------------------------------------
    def replayed(self, fwd: Forward, x: Any, extra: Any) -> Any:
        raise NotImplementedError

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        raise NotImplementedError


def _zeros_or(r: Any, shape: tuple, dtype: Any) -> Any:
    return np.zeros(shape, dtype) if r is None else r


def _batch(n: int) -> int | None:
    """The batch size of a sweep for n tangents (None: one tangent, no batch axis)."""
    return None if n == 1 else n


class GradientKernel(_Kernel):
    """Reverse mode, seed 1 (a scalar output)."""

    def compile(self) -> None:
        self.sweep("reverse", None).seed[...] = 1

    def replayed(self, fwd: Forward, x: Any, extra: Any) -> Any:
        return np.array(self._sweeps["reverse", None].run(), copy=True)

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        out = tape.slots[tape.output]
        g = vjp(tape, env, np.ones(out.shape, out.dtype), tape.reverse_nodes())
        x = tape.slots[tape.x]
        return _zeros_or(g, x.shape, x.dtype)


class _BatchedKernel(_Kernel):
    """A sweep over a batch of tangents (pushforward) or cotangents (pullback): one sweep with a leading
    batch axis, the tangents copied into its seed."""

    kind = "?"

    def __init__(self, problem: Problem, n: int) -> None:
        self.n = n
        super().__init__(problem)

    def compile(self) -> None:
        self.sweep(self.kind, _batch(self.n))

    def replayed(self, fwd: Forward, x: Any, tangents: tuple) -> Any:
        n = len(tangents)
        sweep = self.sweep(self.kind, _batch(n))
        if n == 1:
            np.copyto(sweep.seed, tangents[0])
            return (np.array(sweep.run(), copy=True),)
        for k, t in enumerate(tangents):
            np.copyto(sweep.seed[k, ...], t)
        r = sweep.run()
        return tuple(np.array(r[k, ...], copy=True) for k in range(n))


class PullbackKernel(_BatchedKernel):
    """Reverse mode over a batch of output cotangents."""

    kind = "reverse"

    def interpreted(self, tape: Any, env: list, cotangents: tuple) -> Any:
        order = tape.reverse_nodes()
        x = tape.slots[tape.x]
        return tuple(_zeros_or(vjp(tape, env, t, order), x.shape, x.dtype) for t in cotangents)


class PushforwardKernel(_BatchedKernel):
    """Forward mode over a batch of input tangents."""

    kind = "forward"

    def interpreted(self, tape: Any, env: list, tangents: tuple) -> Any:
        order = tape.forward_nodes()
        y = tape.slots[tape.output]
        return tuple(_zeros_or(jvp(tape, env, t, order), y.shape, y.dtype) for t in tangents)


class DerivativeKernel(_Kernel):
    """Forward mode, seed 1 (a scalar input)."""

    def compile(self) -> None:
        self.sweep("forward", None).seed[...] = 1

    def replayed(self, fwd: Forward, x: Any, extra: Any) -> Any:
        return np.array(self._sweeps["forward", None].run(), copy=True)

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        x, y = tape.slots[tape.x], tape.slots[tape.output]
        return _zeros_or(jvp(tape, env, np.ones(x.shape, x.dtype), tape.forward_nodes()), y.shape, y.dtype)


class JacobianKernel(_Kernel):
    """The Jacobian by batched sweeps over the basis: forward (columns) when x has no more elements than
    y, reverse (rows) otherwise, `batch` basis vectors per sweep."""

    compile_single_use = True

    def __init__(self, problem: Problem, batch: int) -> None:
        self.batch = batch
        x_shape, (y_shape, y_dtype) = problem.x_shape, problem.y_spec
        self.n, self.m = size_of(x_shape), size_of(y_shape)
        self.mode = "forward" if self.n <= self.m else "reverse"
        self.dtype = np.result_type(problem.x_dtype, y_dtype)
        super().__init__(problem)

    def compile(self) -> None:
        for lo, hi in self._chunks():
            self.sweep(self.mode, _batch(hi - lo))

    def _chunks(self) -> list[tuple[int, int]]:
        size = self.n if self.mode == "forward" else self.m
        step = max(1, min(self.batch, size))
        return [(lo, min(lo + step, size)) for lo in range(0, size, step)]

    def replayed(self, fwd: Forward, x: Any, extra: Any) -> Any:
        tape = self.rec.tape
        n, m = self.n, self.m
        jac = np.zeros((m, n), self.dtype)
        forward = self.mode == "forward"
        for lo, hi in self._chunks():
            k = hi - lo
            sweep = self._sweeps[self.mode, _batch(k)]
            seed = sweep.seed.reshape(k, -1)
            seed[...] = 0
            seed[np.arange(k), np.arange(lo, hi)] = 1
            r = np.reshape(sweep.run(), (k, -1))
            if forward:
                jac[:, lo:hi] = r.T
            else:
                jac[lo:hi, :] = r
        return jac.reshape(tape.slots[tape.output].shape + tape.slots[tape.x].shape)

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        x, y = tape.slots[tape.x], tape.slots[tape.output]
        forward = self.mode == "forward"
        size = self.n if forward else self.m
        shape = x.shape if forward else y.shape
        order = tape.forward_nodes() if forward else tape.reverse_nodes()
        parts = []
        for i in range(size):
            e = np.zeros(size, x.dtype if forward else y.dtype)
            e[i] = 1
            e = e.reshape(shape)
            r = jvp(tape, env, e, order) if forward else vjp(tape, env, e, order)
            parts.append(_zeros_or(r, y.shape if forward else x.shape, self.dtype))
        if not parts:
            return np.zeros(y.shape + x.shape, self.dtype)
        stacked = np.stack(parts, axis=-1 if forward else 0)
        return np.reshape(stacked, y.shape + x.shape)
