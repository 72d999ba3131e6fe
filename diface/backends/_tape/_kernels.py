"""The kernels AutoTape hands to diface's core: a recording made at preparation and replayed per call.

A prepared kernel compiles its tape (`_compile`) once and replays it with fixed buffers. An unprepared
one (the core's single-use preparations) differentiates the values seen while recording, with no
compilation. Called with traced arrays (AutoTape differentiating what AutoTape computes: second order),
a kernel runs its tape on them (`_interpret`), which records its sweeps as nodes of the outer tape.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._problem import Problem, size_of
from ._compile import Forward, Reverse, Tangent
from ._graph import Traced
from ._interpret import jvp, vjp
from ._interpret import replay as run_tape
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


class Replay:
    """One thread's prepared replay of a recording: the compiled forward replay and the sweeps, over
    buffers of its own. The recording is shared by every thread and never written."""

    __slots__ = ("checks", "fwd", "main", "rec", "sweeps")

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        #: the call's contexts must be compared with the recording (statics, or traced leaves' shapes)
        self.checks = bool(rec.statics or rec.tape.inputs)
        self.fwd = Forward(rec.tape)
        rec.tape.release_values()  # the buffers hold what replays need (idempotent: any thread may do it)
        self.sweeps: dict = {}
        #: what the kernel's calls run (set by the kernel's `prime`)
        self.main: Any = None

    def sweep(self, kind: str, batch: int | None) -> Any:
        key = (kind, batch)
        s = self.sweeps.get(key)
        if s is None:
            s = self.sweeps[key] = (Reverse if kind == "reverse" else Tangent)(self.rec.tape, self.fwd, batch)
        return s

    def valid_for(self, cv: tuple) -> bool:
        rec = self.rec
        return not self.checks or ((not rec.statics or rec.statics_match(cv)) and rec.leaves_match(cv))


class _Kernel:
    """Records `f` at preparation; each call replays (prepared), reuses the recorded values (unprepared,
    at the recorded point) or runs the tape on traced arrays.

    Threads: the recording is immutable once made; every thread replays it over its own buffers (a
    `Replay` built on the thread's first call, kept in a `threading.local`), so any number of threads
    may call one kernel at once. A call whose static contexts differ from the recording records `f`
    again into the calling thread's replay only.
    """

    #: compile even for a single call (the Jacobian runs many sweeps)
    compile_single_use = False

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        #: the recording made at preparation (never replaced: see `_replay_for`)
        self.rec: Recording = take_recording(problem)
        self._local = threading.local()
        if not problem.single_use:
            self._replay(self.rec)

    def copy(self) -> _Kernel:
        """An independent kernel: the same recording, its own buffers (built for this thread now)."""
        twin = copy.copy(self)
        twin._local = threading.local()
        if not self.problem.single_use:
            twin._replay(twin.rec)
        return twin

    # -- replays -----------------------------------------------------------------------------------------
    def _replay(self, rec: Recording) -> Replay:
        """A new replay of `rec` for the calling thread (compiled now), which its later calls use."""
        replay = Replay(rec)
        replay.main = self.prime(replay)
        self._local.replay = replay
        return replay

    def _replay_for(self, x: Any, cv: tuple, y: Any) -> Replay:
        """The calling thread's replay, valid for these context values (recorded again if a static one
        changed, or a traced leaf changed shape)."""
        try:
            replay = self._local.replay
        except AttributeError:
            replay = self._replay(self.rec)
        if replay.checks and not replay.valid_for(cv):
            rec = self.rec
            if not ((not rec.statics or rec.statics_match(cv)) and rec.leaves_match(cv)):
                rec = record(self.problem.f, x, self.problem.contexts, cv, y)
            replay = self._replay(rec)
        return replay

    def prime(self, replay: Replay) -> Any:
        """Build the sweeps the calls will run (so that calls only run them); returns `replay.main`."""
        return None

    # -- calls -------------------------------------------------------------------------------------------
    def __call__(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        if _holds(x) or _holds(extra) or _holds(cv):
            return self._on_traced(x, extra, cv, y, full)
        if self.problem.single_use and self.compile_single_use is False:
            return self._unprepared(x, extra, cv, y, full)
        replay = self._replay_for(x, cv, y)
        fwd = replay.fwd
        fwd.run(x, cv, y)
        value = None
        if y is not None:
            np.copyto(y, fwd.output)
            value = y
        elif full:
            value = _fresh(fwd.output)
        return value, self.replayed(replay, extra)

    def _unprepared(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        rec = self.rec
        if not self._at_recorded_point(rec, x, cv):
            rec = record(self.problem.f, x, self.problem.contexts, cv, y)
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
        if tape.values[tape.x] is None or not np.array_equal(tape.values[tape.x], x):
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
            rec = record(self.problem.f, _concrete(x), self.problem.contexts, _concrete(cv), y)
        tape = rec.tape
        env = list(tape.values)
        env[tape.x] = x
        for s, _kind, ci, path in tape.inputs:
            env[s] = _leaf(cv, ci, path)
        run_tape(tape, env, tape.live_nodes())
        return (env[tape.output] if full else None), self.interpreted(tape, env, extra)

    # -- per operator ------------------------------------------------------------------------------------
    def replayed(self, replay: Replay, extra: Any) -> Any:
        raise NotImplementedError

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        raise NotImplementedError


def _zeros_or(r: Any, shape: tuple, dtype: Any) -> Any:
    """A result of an interpreted sweep as a fresh array (it may be a view of the caller's tangent or of a
    recorded value), zeros where nothing flowed; traced results (second order) as they are."""
    if r is None:
        return np.zeros(shape, dtype)
    return r if isinstance(r, Traced) else np.array(r, copy=True)


def _batch(n: int) -> int | None:
    """The batch size of a sweep for n tangents (None: one tangent, no batch axis)."""
    return None if n == 1 else n


class GradientKernel(_Kernel):
    """Reverse mode, seed 1 (a scalar output)."""

    def prime(self, replay: Replay) -> Any:
        sweep = replay.sweep("reverse", None)
        sweep.seed[...] = 1
        return sweep

    def replayed(self, replay: Replay, extra: Any) -> Any:
        return np.array(replay.main.run(), copy=True)

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

    def prime(self, replay: Replay) -> Any:
        return replay.sweep(self.kind, _batch(self.n))

    def replayed(self, replay: Replay, tangents: tuple) -> Any:
        n = len(tangents)
        sweep = replay.main if n == self.n else replay.sweep(self.kind, _batch(n))
        if n == 1:
            np.copyto(sweep.seed, tangents[0])
            return (np.array(sweep.run(), copy=True),)
        seed = sweep.seed
        for k, t in enumerate(tangents):
            np.copyto(seed[k, ...], t)
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

    def prime(self, replay: Replay) -> Any:
        sweep = replay.sweep("forward", None)
        sweep.seed[...] = 1
        return sweep

    def replayed(self, replay: Replay, extra: Any) -> Any:
        return np.array(replay.main.run(), copy=True)

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        x, y = tape.slots[tape.x], tape.slots[tape.output]
        return _zeros_or(jvp(tape, env, np.ones(x.shape, x.dtype), tape.forward_nodes()), y.shape, y.dtype)


class JacobianKernel(_Kernel):
    """The Jacobian by batched sweeps over the basis: forward (columns) when x has no more elements than
    y, reverse (rows) otherwise, `batch` basis vectors per sweep. An empty x or y gives an empty (or
    zero) Jacobian without a sweep."""

    compile_single_use = True

    def __init__(self, problem: Problem, batch: int) -> None:
        self.batch = batch
        x_shape, (y_shape, y_dtype) = problem.x_shape, problem.y_spec
        self.mode = "forward" if size_of(x_shape) <= size_of(y_shape) else "reverse"
        self.dtype = np.result_type(problem.x_dtype, y_dtype)
        super().__init__(problem)

    def prime(self, replay: Replay) -> Any:
        """(x shape, y shape, chunks): the sizes come from the replay's recording, each chunk is
        (lo, hi, sweep, its seed as a matrix, where its ones go)."""
        tape = replay.rec.tape
        x_shape, y_shape = tape.slots[tape.x].shape, tape.slots[tape.output].shape
        size = size_of(x_shape if self.mode == "forward" else y_shape)
        step = max(1, min(self.batch, size))
        chunks = []
        for lo in range(0, size, step):
            hi = min(lo + step, size)
            sweep = replay.sweep(self.mode, _batch(hi - lo))
            k = hi - lo
            seed = sweep.seed.reshape(k, -1)  # a view: the seed buffer is contiguous
            assert np.shares_memory(seed, sweep.seed)
            chunks.append((lo, hi, sweep, seed, (np.arange(k), np.arange(lo, hi))))
        return x_shape, y_shape, chunks

    def replayed(self, replay: Replay, extra: Any) -> Any:
        x_shape, y_shape, chunks = replay.main
        n, m = size_of(x_shape), size_of(y_shape)
        jac = np.zeros((m, n), self.dtype)
        forward = self.mode == "forward"
        for lo, hi, sweep, seed, ones in chunks:
            seed[...] = 0
            seed[ones] = 1
            r = np.reshape(sweep.run(), (hi - lo, -1))
            if forward:
                jac[:, lo:hi] = r.T
            else:
                jac[lo:hi, :] = r
        return jac.reshape(y_shape + x_shape)

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        x, y = tape.slots[tape.x], tape.slots[tape.output]
        forward = self.mode == "forward"
        shape = x.shape if forward else y.shape
        size = size_of(shape)
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
