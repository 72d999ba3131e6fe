"""AutoTape's linearizations (`Backend.prepare_linearize`): the forward replay run once at x into the
calling thread's buffers, then batched sweeps applied to it as often as asked.

`push` runs the forward-mode sweep and `pull` the reverse sweep over a whole batch at once (one sweep
with a leading batch axis), compiled per batch size on first use and kept with the thread's replay, so
that repeated products on one linearization (basis sweeps, sparse colors, Krylov solves) cost only
their sweeps. A linearization reads the buffers of its thread's replay: it is valid until that thread
linearizes the same preparation again, and is not shared between threads.

Called with traced arrays (AutoTape differentiating what AutoTape computes), the linearizer runs the
tape on them and its products record the sweeps on the outer tape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ...._linearization import Linearization
from ...._problem import Problem
from ..recording.record import Recording, record, take_recording
from ..recording.replay import Replay, Replays, concrete, fresh, holds, traced_env
from ..sweeps.interpret import jvp, vjp

__all__ = ["ReplayLinearization", "TapeLinearizer"]


class ReplayLinearization(Linearization):
    """f linearized at one point: the forward values in a thread's replay. `value` (f(x), or the `y` an
    in-place f wrote) and `primal` (a second-order recording's f(x), see `Recording.keep`) are copied
    out of the buffers when first asked for."""

    shareable = False

    def __init__(self, replay: Replay, y: Any) -> None:
        self.replay = replay
        self._value = y
        self._primal: Any = None

    @property
    def value(self) -> Any:
        if self._value is None:
            self._value = fresh(self.replay.fwd.output)
        return self._value

    @property
    def primal(self) -> Any:
        keep = self.replay.rec.keep
        if self._primal is None and keep:
            self._primal = fresh(self.replay.fwd.bufs[keep[0]])
        return self._primal

    def push(self, tangents: Any) -> Any:
        return self._apply("forward", tangents)

    def product(self, tangent: Any) -> Any:
        """One pushforward, of a tangent without a batch axis."""
        sweep = self.replay.sweep("forward", None)
        np.copyto(sweep.seed, tangent)
        return np.array(sweep.run(), copy=True)

    def pull(self, cotangents: Any) -> Any:
        return self._apply("reverse", cotangents)

    def _apply(self, kind: str, vectors: Any) -> Any:
        vectors = np.asarray(vectors)
        n = vectors.shape[0]
        if n == 1:  # one vector: the sweep without a batch axis (its steps are the leanest)
            sweep = self.replay.sweep(kind, None)
            np.copyto(sweep.seed, vectors[0])
            return np.array(sweep.run(), copy=True)[None]
        sweep = self.replay.sweep(kind, n)
        np.copyto(sweep.seed, vectors)
        return np.array(sweep.run(), copy=True)


class TracedLinearization(Linearization):
    """The tape run on traced values: products record the sweeps, one vector at a time."""

    shareable = False

    def __init__(self, rec: Recording, env: list, value: Any) -> None:
        self.rec = rec
        self.tape = rec.tape
        self.env = env
        self.value = value
        self.primal = env[rec.keep[0]] if rec.keep else None

    def push(self, tangents: Any) -> Any:
        tape = self.tape
        out = tape.slots[tape.output]
        order = tape.forward_nodes()
        return _stacked([jvp(tape, self.env, t, order) for t in tangents], out.shape, out.dtype)

    def pull(self, cotangents: Any) -> Any:
        tape = self.tape
        x = tape.slots[tape.x]
        order = tape.reverse_nodes()
        return _stacked([vjp(tape, self.env, c, order) for c in cotangents], x.shape, x.dtype)


def _stacked(rows: list, shape: tuple, dtype: Any) -> Any:
    rows = [np.zeros(shape, dtype) if r is None else r for r in rows]
    if not rows:
        return np.zeros((0, *shape), dtype)
    return np.stack([np.broadcast_to(r, shape) if np.shape(r) != shape else r for r in rows])


class TapeLinearizer:
    """`linearizer(x, cv, y) -> Linearization` for a problem (see the module docstring).

    `rec` and `record_again` replace the problem's recording and how to record again (a second-order
    plan records the derivative map of f, not f). The thread's replay is compiled at preparation (on
    first use for single-use problems); its sweeps on first use per batch size.
    """

    def __init__(
        self,
        problem: Problem,
        rec: Recording | None = None,
        record_again: Callable[[Any, tuple, Any], Recording] | None = None,
    ) -> None:
        self.problem = problem
        self._record_again = record_again
        rec = rec if rec is not None else take_recording(problem)
        self.replays = Replays(rec, self._record, _no_main, not problem.single_use, problem.context_values)

    @property
    def rec(self) -> Recording:
        return self.replays.rec

    def _record(self, x: Any, cv: tuple, y: Any) -> Recording:
        if self._record_again is not None:
            return self._record_again(x, cv, y)
        return record(self.problem.f, x, self.problem.contexts, cv, y)

    def __call__(self, x: Any, cv: tuple, y: Any) -> Linearization:
        if holds(x) or holds(cv):
            return self._traced(x, cv, y)
        replay = self.replays.run(x, cv, y)
        if y is not None:
            np.copyto(y, replay.fwd.output)
        return ReplayLinearization(replay, y)

    def _traced(self, x: Any, cv: tuple, y: Any) -> Linearization:
        if y is not None:
            raise NotSupportedError("AutoTape cannot differentiate an in-place function f(y, x) inside a traced f")
        rec = self.rec
        if rec.statics and not rec.statics_match(cv):
            rec = self._record(concrete(x), concrete(cv), None)
        env = traced_env(rec.tape, x, cv)
        return TracedLinearization(rec, env, env[rec.tape.output])


def _no_main(replay: Replay) -> None:
    return None
