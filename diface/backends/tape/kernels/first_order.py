"""The kernels AutoTape hands to diface's core: a recording made at preparation and replayed per call.

A prepared kernel compiles its tape (`sweeps.compile`) once and replays it with planned buffers, one replay
per thread (`recording.replay`). An unprepared one (the core's single-use preparations) differentiates the
values seen while recording, with no compilation. Called with traced arrays (AutoTape differentiating
what AutoTape computes: second order), a kernel runs its tape on them (`sweeps.interpret`), which records its
sweeps as nodes of the outer tape.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ...._derive._sweep import chunk_size
from ...._errors import NotSupportedError
from ...._kernel import Kernel, Result
from ...._problem import Problem, size_of
from ..data.graph import Traced
from ..recording.record import Recording, record, take_recording
from ..recording.replay import Replay, Replays, at_recorded_point, concrete, fresh, holds, traced_env
from ..sweeps.interpret import jvp, vjp
from ..sweeps.seeds import FIXED_SEEDS, identity_seed
from ..sweeps.segments import Segmented
from .bounded import bounded_for, report_of

__all__ = ["DerivativeKernel", "GradientKernel", "JacobianKernel", "PullbackKernel", "PushforwardKernel"]


class _Kernel:
    """Records `f` at preparation; each call replays (prepared), reuses the recorded values (unprepared,
    at the recorded point) or runs the tape on traced arrays.

    Threads: see `recording.replay.Replays` (any number of threads may call one kernel at once). `replayed=False`
    makes a kernel that only runs on traced arrays (the inner derivative of a second-order plan), which
    compiles nothing.
    """

    #: compile even for a single call (the Jacobian runs many sweeps)
    compile_single_use = False
    #: its sweeps run in reverse (what `di.checkpoint` and `di.scan` marks segment)
    reverse = True

    def __init__(self, problem: Problem, replayed: bool = True, budget: int | None = None) -> None:
        self.problem = problem
        self.budget = budget
        rec = take_recording(problem, budget)
        #: the segmented sweeps (a memory budget, or marks), else None: a compiled replay
        self.bounded = bounded_for(rec, budget, self.reverse, problem.single_use) if replayed else None
        self.report = report_of(None if self.bounded is None else self.bounded.plan, rec, budget, self.reverse)
        #: calls replay a compiled tape (else they differentiate the recorded values, or record)
        self.compiled = self.bounded is None and replayed and (not problem.single_use or self.compile_single_use)
        now = self.bounded is None and replayed and not problem.single_use
        self.replays = Replays(rec, self._record, self.prime, now, problem.context_values)

    @property
    def rec(self) -> Recording:
        """The recording made at preparation (never replaced)."""
        return self.replays.rec

    def _record(self, x: Any, cv: tuple, y: Any) -> Recording:
        return record(self.problem.f, x, self.problem.contexts, cv, y, self.budget)

    def copy(self) -> _Kernel:
        """An independent kernel: the same recording, its own buffers (built for this thread now)."""
        twin = copy.copy(self)
        if self.bounded is None:
            twin.replays = self.replays.copy(self.compiled and not self.problem.single_use, twin._record, twin.prime)
        return twin

    def kernel(self) -> Kernel:
        """This kernel as the core takes it (copied with `copy`)."""
        return Kernel(self.run, copy=lambda: self.copy().kernel(), report=self.report)

    def prime(self, replay: Replay) -> Any:
        """Build the sweeps the calls will run (so that calls only run them); returns `replay.main`."""
        return None

    # -- calls -------------------------------------------------------------------------------------------
    def run(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if holds(x) or holds(extra) or holds(cv):
            return self._on_traced(x, extra, cv, y, full)
        if self.bounded is not None:
            return self._segmented(x, extra, cv, y, full)
        if not self.compiled:
            return self._unprepared(x, extra, cv, y, full)
        replay = self.replays.run(x, cv, y)
        fwd = replay.fwd
        value = None
        if y is not None:
            np.copyto(y, fwd.output)
            value = y
        elif full:
            value = fresh(fwd.output)
        return Result(value, result=self.replayed(replay, extra))

    def _unprepared(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool, rec: Recording | None = None) -> Result:
        """The recording's sweeps interpreted at x (`rec`: this recording, made at x, else the kernel's,
        recorded again where x or the contexts differ)."""
        if rec is None:
            rec = self.rec
            if not at_recorded_point(rec, x, cv):
                rec = self._record(x, cv, y)
        tape = rec.tape
        # a lean recording (a budget, or marks) let go of its values: run it again at the recorded point
        env = tape.values if tape.holders is None else traced_env(tape, x, cv)
        output = fresh(env[tape.output])
        if y is not None:
            np.copyto(y, output)
        value = y if y is not None else output if full else None
        return Result(value, result=self.interpreted(tape, env, extra))

    def _segmented(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        seg = self.bounded
        assert seg is not None
        rec = self.rec
        if rec.statics and not rec.statics_match(cv):
            rec = self._record(x, cv, y)
            again = bounded_for(rec, self.budget, self.reverse, True)
            if again is None:  # the new recording has no marks: nothing to cut, differentiate it whole
                return self._unprepared(x, extra, cv, y, full, rec)
            seg = again
        value, result = self.segmented(seg, np.asarray(x), cv, extra)
        if y is not None:
            np.copyto(y, value)
            value = y
        elif full:
            value = fresh(value)
        return Result(value if y is not None or full else None, result=result)

    def _on_traced(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if y is not None:
            raise NotSupportedError("AutoTape cannot differentiate an in-place function f(y, x) inside a traced f")
        rec = self.rec
        if rec.statics and not rec.statics_match(cv):
            rec = self._record(concrete(x), concrete(cv), y)
        tape = rec.tape
        env = traced_env(tape, x, cv)
        return Result(env[tape.output] if full else None, result=self.interpreted(tape, env, extra))

    # -- per operator ------------------------------------------------------------------------------------
    def replayed(self, replay: Replay, extra: Any) -> Any:
        raise NotImplementedError

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        raise NotImplementedError

    def segmented(self, seg: Segmented, x: Any, cv: tuple, extra: Any) -> tuple[Any, Any]:
        """(f's value, the result) by the segmented sweeps."""
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

    def segmented(self, seg: Segmented, x: Any, cv: tuple, extra: Any) -> tuple[Any, Any]:
        tape = seg.tape
        out, xs = tape.slots[tape.output], tape.slots[tape.x]
        value, (g,) = seg.pull(x, cv, [np.ones(out.shape, out.dtype)])
        return value, _zeros_or(g, xs.shape, xs.dtype)


class _BatchedKernel(_Kernel):
    """A sweep over a batch of tangents (pushforward) or cotangents (pullback): one sweep with a leading
    batch axis, the tangents copied into its seed."""

    kind = "?"

    def __init__(self, problem: Problem, n: int, budget: int | None = None) -> None:
        self.n = n
        super().__init__(problem, budget=budget)

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

    def segmented(self, seg: Segmented, x: Any, cv: tuple, cotangents: tuple) -> tuple[Any, Any]:
        xs = seg.tape.slots[seg.tape.x]
        value, gs = seg.pull(x, cv, [np.asarray(t) for t in cotangents])
        return value, tuple(_zeros_or(g, xs.shape, xs.dtype) for g in gs)


class PushforwardKernel(_BatchedKernel):
    """Forward mode over a batch of input tangents."""

    kind = "forward"
    reverse = False

    def interpreted(self, tape: Any, env: list, tangents: tuple) -> Any:
        order = tape.forward_nodes()
        y = tape.slots[tape.output]
        return tuple(_zeros_or(jvp(tape, env, t, order), y.shape, y.dtype) for t in tangents)

    def segmented(self, seg: Segmented, x: Any, cv: tuple, tangents: tuple) -> tuple[Any, Any]:
        ys = seg.tape.slots[seg.tape.output]
        value, ts = seg.push(x, cv, [np.asarray(t) for t in tangents])
        return value, tuple(_zeros_or(t, ys.shape, ys.dtype) for t in ts)


class DerivativeKernel(_Kernel):
    """Forward mode, seed 1 (a scalar input)."""

    reverse = False

    def segmented(self, seg: Segmented, x: Any, cv: tuple, extra: Any) -> tuple[Any, Any]:
        tape = seg.tape
        xs, ys = tape.slots[tape.x], tape.slots[tape.output]
        value, (t,) = seg.push(x, cv, [np.ones(xs.shape, xs.dtype)])
        return value, _zeros_or(t, ys.shape, ys.dtype)

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
    """The Jacobian by batched sweeps over the basis in `mode`: forward (columns) or reverse (rows), in
    chunks that stay within the Jacobian's size (at most `max_batch` vectors). Forward sweeps keep their
    identity seeds (one compiled sweep per chunk, up to a size: `sweeps.seeds`), so that what derives linearly
    from x is written at its nonzeros only. An empty x or y gives an empty (or zero) Jacobian."""

    compile_single_use = True

    def __init__(self, problem: Problem, mode: str, max_batch: int, budget: int | None = None) -> None:
        self.mode = mode
        self.reverse = mode == "reverse"
        self.max_batch = max_batch
        self.dtype = np.result_type(problem.x_dtype, problem.y_spec[1])
        super().__init__(problem, budget=budget)

    def segmented(self, seg: Segmented, x: Any, cv: tuple, extra: Any) -> tuple[Any, Any]:
        """Rows (reverse: the output basis, `max_batch` cotangents per schedule run) or columns (forward:
        one streamed pass per column)."""
        tape = seg.tape
        xs, ys = tape.slots[tape.x], tape.slots[tape.output]
        n, m = size_of(xs.shape), size_of(ys.shape)
        jac = np.zeros((m, n), self.dtype)
        value = None
        size = m if self.reverse else n
        for lo in range(0, max(size, 1), self.max_batch):
            hi = min(lo + self.max_batch, size)
            basis = []
            for i in range(lo, hi):
                e = np.zeros(size, ys.dtype if self.reverse else xs.dtype)
                e[i] = 1
                basis.append(e.reshape(ys.shape if self.reverse else xs.shape))
            if self.reverse:
                value, rows = seg.pull(x, cv, basis)
                for i, r in zip(range(lo, hi), rows):
                    if r is not None:
                        jac[i, :] = np.reshape(r, -1)
            else:
                value, cols = seg.push(x, cv, basis)
                for i, c in zip(range(lo, hi), cols):
                    if c is not None:
                        jac[:, i] = np.reshape(c, -1)
        return value, jac.reshape(ys.shape + xs.shape)

    def prime(self, replay: Replay) -> Any:
        """(x shape, y shape, chunks): the sizes come from the replay's recording, each chunk is
        (lo, hi, sweep, whether its seed is fixed)."""
        tape = replay.rec.tape
        x_shape, y_shape = tape.slots[tape.x].shape, tape.slots[tape.output].shape
        n, m = size_of(x_shape), size_of(y_shape)
        forward = self.mode == "forward"
        size, product = (n, m) if forward else (m, n)
        step = chunk_size(size, product, n * m, self.max_batch)
        fixed = forward and (step >= size or n * m <= FIXED_SEEDS)
        chunks = []
        for lo in range(0, size, step):
            hi = min(lo + step, size)
            sweep = replay.sweep(self.mode, hi - lo, lo if fixed else None)
            chunks.append((lo, hi, sweep, fixed))
        return x_shape, y_shape, chunks

    def replayed(self, replay: Replay, extra: Any) -> Any:
        x_shape, y_shape, chunks = replay.main
        n, m = size_of(x_shape), size_of(y_shape)
        jac = np.empty((m, n), self.dtype) if chunks else np.zeros((m, n), self.dtype)
        forward = self.mode == "forward"
        for lo, hi, sweep, fixed in chunks:
            if not fixed:
                identity_seed(sweep.seed, lo)
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
