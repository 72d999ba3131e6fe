"""Replays of one recording, one per thread: what kernels and linearizations run.

A `Replay` is one thread's compiled replay of a recording: the forward replay and the sweeps (by kind
and batch size, compiled when first asked for), over buffers of its own (an `Arena`). `Replays` keeps a
recording and gives each thread its replay: the recording is shared by every thread and never
written, so any number of threads may call one preparation at once. A call whose static contexts
differ from the recording records `f` again, into the calling thread's replay only; a call whose
context arrays are other objects than those the replay reads in place compiles it again, copying
them from then on.

The helpers at the end serve the calls made with traced arrays (AutoTape differentiating what AutoTape
computes) and the unprepared calls, which run or differentiate the recording without compiling it.
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..data.buffers import Arena
from ..data.graph import Tape, Traced
from ..sweeps.compile import Forward, Reverse
from ..sweeps.interpret import replay as run_tape
from ..sweeps.tangent import Tangent
from .record import Recording

__all__ = ["Replay", "Replays", "at_recorded_point", "concrete", "fresh", "holds", "leaf", "traced_env"]


class Replay:
    """One thread's compiled replay of a recording (see the module docstring)."""

    __slots__ = ("arena", "checks", "fwd", "main", "rec", "sweeps")

    def __init__(self, rec: Recording, cv: tuple | None) -> None:
        self.rec = rec
        #: the call's contexts must be compared with the recording (statics, or traced leaves' shapes)
        self.checks = bool(rec.statics or rec.tape.inputs)
        self.arena = Arena()
        self.fwd = Forward(rec.tape, self.arena, rec.keep, cv)
        rec.tape.release_values()  # the buffers hold what replays need (idempotent: any thread may do it)
        self.sweeps: dict = {}
        #: what the owner's calls run (set by its `prime`)
        self.main: Any = None

    def sweep(self, kind: str, batch: int | None, identity: int | None = None) -> Any:
        """The compiled sweep of `kind` ("reverse" or "forward") over `batch` vectors (None: one, with
        no batch axis), made on first use. `identity`: a forward sweep whose seed is fixed to the
        identity rows from that index on (never write its seed; see `sweeps.seeds`)."""
        key = (kind, batch, identity)
        s = self.sweeps.get(key)
        if s is None:
            tape = self.rec.tape
            if kind == "reverse":
                s = Reverse(tape, self.fwd, batch, self.arena)
            else:
                s = Tangent(tape, self.fwd, batch, self.arena, identity)
            self.sweeps[key] = s
        return s

    def valid_for(self, cv: tuple) -> bool:
        return not self.checks or self.rec.matches(cv)


class Replays:
    """A recording and each thread's replay of it.

    `record(x, cv, y)` records f again (for static contexts that changed); `prime(replay)` builds what
    the owner's calls run (kept as `replay.main`). With `now`, the calling thread's replay is compiled
    at once (preparation does the work), reading the context arrays `cv` in place.
    """

    def __init__(
        self,
        rec: Recording,
        record: Callable[[Any, tuple, Any], Recording],
        prime: Callable[[Replay], Any],
        now: bool,
        cv: tuple | None,
    ) -> None:
        self.rec = rec
        # the owner's methods, held weakly: the owner holds this object, and a cycle through its bound
        # methods would keep a dropped preparation's buffers until the cyclic collector runs
        self.record = _weakly(record)
        self.prime = _weakly(prime)
        self._local = threading.local()
        self._cv = cv
        if now:
            self.make(rec, cv)

    def copy(
        self, now: bool, record: Callable[[Any, tuple, Any], Recording], prime: Callable[[Replay], Any]
    ) -> Replays:
        """The same recording for another owner (its `record` and `prime`), no replays yet (the calling
        thread's compiled now, with `now`)."""
        return Replays(self.rec, record, prime, now, self._cv)

    def make(self, rec: Recording, cv: tuple | None) -> Replay:
        """A new replay of `rec` for the calling thread, which its later calls use."""
        replay = Replay(rec, cv)
        replay.main = self.prime(replay)
        self._local.replay = replay
        return replay

    def get(self, x: Any, cv: tuple, y: Any) -> Replay:
        """The calling thread's replay, valid for these context values (recorded again if a static one
        changed, or a traced leaf changed shape)."""
        try:
            replay = self._local.replay
        except AttributeError:
            replay = self.make(self.rec, cv)
        if replay.checks and not replay.valid_for(cv):
            rec = self.rec if self.rec.matches(cv) else self.record(x, cv, y)
            replay = self.make(rec, cv)
        return replay

    def run(self, x: Any, cv: tuple, y: Any) -> Replay:
        """The calling thread's replay, its forward replay run at x."""
        replay = self.get(x, cv, y)
        if not replay.fwd.run(x, cv, y):  # other context arrays than compiled for: copy them from now on
            replay = self.make(replay.rec, None)
            replay.fwd.run(x, cv, y)
        return replay


def _weakly(fn: Callable) -> Callable:
    """`fn`, holding its object weakly where it is a bound method."""
    if not isinstance(fn, types.MethodType):
        return fn
    method = weakref.WeakMethod(fn)
    return lambda *args: cast(Callable, method())(*args)  # called only while its object is alive


# -- calls with traced arrays, and unprepared calls --------------------------------------------------------
def holds(v: Any) -> bool:
    """Whether `v` is a traced array or a container holding one."""
    if isinstance(v, Traced):
        return True
    if isinstance(v, (list, tuple)):
        return any(holds(e) for e in v)
    if isinstance(v, dict):
        return any(holds(e) for e in v.values())
    return False


def concrete(v: Any) -> Any:
    """Context values with traced leaves replaced by their recorded values."""
    if isinstance(v, Traced):
        return np.array(v._value(), copy=True)
    if isinstance(v, tuple):
        return tuple(concrete(e) for e in v)
    if isinstance(v, list):
        return [concrete(e) for e in v]
    if isinstance(v, dict):
        return {k: concrete(e) for k, e in v.items()}
    return v


def fresh(value: Any) -> Any:
    """A copy of f's value as NumPy would return it (a scalar for 0-d results)."""
    r = np.array(value, copy=True)
    return r[()] if r.ndim == 0 else r


def leaf(cv: tuple, ci: int, path: tuple) -> Any:
    v = cv[ci]
    for key in path:
        v = v[key]
    return v


def traced_env(tape: Tape, x: Any, cv: tuple) -> list:
    """The tape run on (possibly traced) x and context values: every slot's value, in a list."""
    env = list(tape.values)
    env[tape.x] = x
    for s, _kind, ci, path in tape.inputs:
        env[s] = leaf(cv, ci, path)
    run_tape(tape, env, tape.live_nodes())
    return env


def at_recorded_point(rec: Recording, x: Any, cv: tuple) -> bool:
    """Whether x and the context values are those the recording saw (its values can be used as they are)."""
    tape = rec.tape
    if tape.values[tape.x] is None or not np.array_equal(tape.values[tape.x], x):
        return False
    if rec.statics and not rec.statics_match(cv):
        return False
    for s, kind, ci, path in tape.inputs:
        if kind == "constant":
            try:
                v = leaf(cv, ci, path)
            except (KeyError, IndexError, TypeError):
                return False
            if not np.array_equal(tape.values[s], v):
                return False
    return True
