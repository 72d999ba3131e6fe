"""Functions of f's that SciPy calls back on plain values (the residual of a root finder, an objective,
an integrand), recorded as sub-tapes.

A callback `fn(y, *args)` is recorded once on a tape of its own (`Tape.child`), with `y` as that tape's
x. What it reads from f (traced values it closes over or receives in `args`) becomes an input of the
sub-tape, a *capture* (`Tape.capture`): the sub-tape is a function g(y, c) of its variable and of f's
values, which later calls replay on plain values (`evaluate`) without running the callback's Python
code again, and whose derivatives in y and in c the sweeps of `sweeps.interpret` give exactly. A replay whose
guards fail (the callback took another branch at this y) records it again while f is being recorded;
in a prepared call (f is not run) it raises `TapeMismatchError`.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import NotSupportedError, TapeMismatchError
from ..data.graph import Tape, Traced
from ..data.sites import user_location
from ..numpy.intercept import recording
from ..prims.prim import Prim
from ..sweeps.interpret import jvp_from, replay, vjp_to
from ..tracing.tracer import TapeArray, operand, slot_of

__all__ = [
    "Callback",
    "CallbackPrim",
    "LastCall",
    "SubTape",
    "call_scipy",
    "flat",
    "gradient_tape",
    "inside",
    "plain_value",
    "record_sub",
    "tangent_batch",
    "bound_arguments",
    "own_slot",
    "record_callback",
    "replayed",
]


class SubTape:
    """A callback recorded as a function of its variable and of the values of f's it captured."""

    def __init__(self, tape: Tape, scalar: bool) -> None:
        self.tape = tape
        #: the callback received a Python float (SciPy's scalar solvers): it is given one again
        self.scalar = scalar
        self.live = tape.live_nodes()
        self.forward_order = tape.forward_nodes()
        self.reverse_order = tape.reverse_nodes()
        #: the enclosing tape's slots this sub-tape reads, and its own slots holding them, in order
        self.outer = [outer for outer, _ in tape.captures]
        self.own = [own for _, own in tape.captures]
        self.shape = tape.slots[tape.output].shape

    def env(self, y: Any, captured: list) -> list:
        """The sub-tape's slots with its inputs set: `y` and the captured values (plain or traced)."""
        tape = self.tape
        env = list(tape.values)
        env[tape.x] = y
        for own, value in zip(self.own, captured):
            env[own] = value
        return env

    def run(self, env: list) -> Any:
        """Fill `env` by a forward replay; the callback's value."""
        replay(self.tape, env, self.live)
        return env[self.tape.output]

    def evaluate(self, y: Any, captured: list) -> np.ndarray:
        """The callback's value at plain `y` (guards raise `TapeMismatchError` off its path)."""
        return np.asarray(self.run(self.env(np.asarray(y, dtype=self.tape.slots[self.tape.x].dtype), captured)))

    def jacobian_y(self, env: list) -> Any:
        """d value / d y, as a matrix (value size x y size), on the values of a filled `env`."""
        tape = self.tape
        x = tape.x
        n = int(np.prod(tape.slots[x].shape, dtype=np.int64))
        m = int(np.prod(self.shape, dtype=np.int64))
        basis = np.eye(n).reshape((n, *tape.slots[x].shape))
        columns = []
        for k in range(n):
            t = jvp_from(tape, env, {x: basis[k]}, self.forward_order)
            columns.append(np.zeros(m) if t is None else np.reshape(t, (m,)))
        if not columns:
            return np.zeros((m, 0))
        return np.stack(columns, axis=-1)

    def seeds(self, tangents: list) -> dict[int, Any]:
        """Tangents given per capture (None: none) as the sweeps take them (own slot -> tangent)."""
        return {own: t for own, t in zip(self.own, tangents) if t is not None}

    def tangent(self, env: list, seeds: dict[int, Any]) -> Any:
        """The value's tangent for tangents of some captures (own slot -> tangent); None if none."""
        if not seeds:
            return None
        return jvp_from(self.tape, env, seeds, self.forward_order)

    def cotangents(self, env: list, cotangent: Any) -> dict[int, Any]:
        """The cotangents of y and of the captures (own slot -> cotangent) for the value's cotangent."""
        return vjp_to(self.tape, env, cotangent, self.reverse_order)


def record_sub(outer: Tape, x0: Any, build: Callable[[TapeArray], Any]) -> Tape:
    """A sub-tape of `outer` whose variable x starts at `x0` (copied): `build(x)` computes its output
    from the traced x (values of enclosing tapes it reads are captured); the sub-tape is closed after."""
    sub = outer.child()
    value = np.array(x0, dtype=np.result_type(x0, np.float64), copy=True)
    sub.x = sub.add_slot(value, "x", True, True)
    value.flags.writeable = False
    try:
        sub.output = own_slot(sub, build(TapeArray(sub, sub.x)))
    finally:
        sub.closed = True
    return sub


def record_callback(outer: Tape, fn: Callable, y: Any, args: tuple, label: str) -> SubTape:
    """Record `fn(y, *args)` (y plain) on a sub-tape of `outer`, the tape the calling thread records."""
    scalar = isinstance(y, (float, int)) and not isinstance(y, bool)

    def build(yt: TapeArray) -> Any:
        with recording(yt._tape, fn):
            return operand(fn(yt, *args))

    sub = record_sub(outer, y, build)
    slot = sub.slots[sub.output]
    if slot.dtype.kind not in "fc":
        raise NotSupportedError(
            f"AutoTape: the function {label} calls (at {user_location()}) returned {slot.dtype} values; "
            "return floating-point values"
        )
    if slot.dtype.kind == "c" or sub.slots[sub.x].dtype.kind == "c":
        raise NotSupportedError(
            f"AutoTape differentiates {label} (at {user_location()}) for real functions of real "
            "variables only; split complex values into real and imaginary parts"
        )
    return SubTape(sub, scalar)


class Callback:
    """A callback of f's as SciPy calls it while f is recorded: the first call records it (a
    `SubTape`), later calls replay that recording, and record again where it took another branch."""

    def __init__(
        self, outer: Tape, fn: Callable, args: tuple, label: str, errors: list, pick: Callable | None = None
    ) -> None:
        self.outer = outer
        self.fn = fn if pick is None else (lambda y, *a: pick(fn(y, *a)))
        self.args = args
        self.label = label
        #: exceptions raised inside the callback (SciPy's C code may turn them into others)
        self.errors = errors
        self.sub: SubTape | None = None
        #: every recording made, one per path the callback took (a branch on its argument): a prepared
        #: call replays whichever holds at each point the solver visits
        self.paths: list[SubTape] = []

    def __call__(self, y: Any, *_: Any) -> Any:
        try:
            return self._call(y)
        except BaseException as error:
            self.errors.append(error)
            raise

    def _call(self, y: Any) -> Any:
        if np.iscomplexobj(y):  # a replay would drop the imaginary part: a silently wrong value
            raise NotSupportedError(
                f"AutoTape: {self.label} (called at {user_location()}) calls f's function with complex "
                "values (a complex-step derivative: jac='cs'?); AutoTape records it for real values only: "
                "pass jac='2-point', a derivative function, or jac=True"
            )
        for sub in sorted(self.paths, key=lambda s: s is not self.sub):  # the last one used first
            try:
                value = sub.evaluate(y, [self.outer.values[s] for s in sub.outer])
            except TapeMismatchError:
                continue
            self.sub = sub
            return _as_returned(sub, value)
        sub = self.sub = record_callback(self.outer, self.fn, y, self.args, self.label)
        self.paths.append(sub)
        return _as_returned(sub, np.array(sub.tape.values[sub.tape.output]))

    def others(self, sub: SubTape) -> list[SubTape]:
        """`sub` and the recordings of the other paths after it."""
        return [sub, *(s for s in self.paths if s is not sub)]

    def at(self, y: Any) -> SubTape:
        """The recording valid at `y` (recorded again there if the last one's guards fail)."""
        self(y)
        assert self.sub is not None
        return self.sub


def _as_returned(sub: SubTape, value: np.ndarray) -> Any:
    return float(value) if sub.scalar and value.ndim == 0 else value


def inside(sub: Tape, value: Any) -> Any:
    """`value` as a value of the sub-tape `sub`: a traced value of an enclosing tape captured."""
    if isinstance(value, Traced) and value._tape is not sub:
        return TapeArray(sub, sub.capture(value._tape, value._read()))
    return value


def own_slot(tape: Tape, value: Any) -> int:
    """The slot of `tape` holding a traced value of it or of an enclosing tape (captured), or a plain
    value (a literal)."""
    if not isinstance(value, Traced):
        return slot_of(tape, value)
    return value._read() if value._tape is tape else tape.capture(value._tape, value._read())


def replayed(paths: list[tuple[SubTape, list]]) -> Callable:
    """The callback at plain values in a prepared call (f is not run): a replay of the first of its
    recordings (with their captured values) whose path holds at the point; none: `TapeMismatchError`."""

    def call(y: Any, *_: Any) -> Any:
        for sub, captured in paths[:-1]:
            try:
                return _as_returned(sub, sub.evaluate(y, captured))
            except TapeMismatchError:
                continue
        sub, captured = paths[-1]
        return _as_returned(sub, sub.evaluate(y, captured))

    return call


def gradient_tape(outer: Tape, objective: SubTape, y: Any) -> SubTape:
    """The gradient in y of a scalar callback, recorded as a sub-tape of `outer` (the residual of the
    stationarity condition of an inner minimization)."""

    def build(yt: TapeArray) -> Any:
        sub = yt._tape
        env = objective.env(yt, [TapeArray(sub, sub.capture(outer, s)) for s in objective.outer])
        objective.run(env)
        g = objective.cotangents(env, np.ones(objective.shape)).get(objective.tape.x)
        return np.zeros(yt.shape) if g is None else g

    return SubTape(record_sub(outer, np.asarray(y, dtype=np.float64), build), objective.scalar)


class LastCall:
    """The last result of a computation on plain arrays, per thread, found again by value: a reverse
    sweep asks a node for one input's cotangent at a time, and the nodes whose cotangents come from one
    solve (an implicit root's dg/dy, an ODE's adjoint) compute them all at the first request. Buffers
    are reused between calls, so the inputs are compared by value, never by identity."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, owner: object, values: tuple) -> Any:
        last = getattr(self._local, "last", None)
        if last is None or last[0] is not owner or len(last[1]) != len(values):
            return None
        for a, b in zip(last[1], values):
            b = np.asarray(b)
            if a.shape != b.shape or not np.array_equal(a, b):
                return None
        return last[2]

    def put(self, owner: object, values: tuple, result: Any) -> Any:
        self._local.last = (owner, tuple(np.array(v) for v in values), result)
        return result


def flat(v: Any, size: int) -> np.ndarray:
    """A sweep's tangent or cotangent as a flat float vector of `size` (zeros where the sweep gave None)."""
    return np.zeros(size) if v is None else np.reshape(np.asarray(v, dtype=np.float64), (size,))


def plain_value(v: Any) -> np.ndarray:
    """The value of a traced array as recorded, or `v` as an array."""
    return np.asarray(v._value() if isinstance(v, Traced) else v)


def bound_arguments(original: Callable, args: tuple, kwargs: dict) -> tuple[dict, tuple]:
    """The arguments of a call of SciPy's `original` by name, and its `args=` (what SciPy passes on to
    the callbacks) as a tuple: SciPy takes a single value or any sequence there."""
    signature = inspect.signature(original)
    user = dict(signature.bind(*args, **kwargs).arguments)
    default = signature.parameters["args"].default if "args" in signature.parameters else ()
    extra = user.get("args", default)
    if extra is None and default is None:  # solve_ivp's args=None: no arguments
        return user, ()
    return user, tuple(extra) if isinstance(extra, (tuple, list)) else (extra,)


def tangent_batch(ts: tuple, b: int) -> list[list]:
    """A rule's input tangents as a list of tangent lists, one per tangent of the batch (b = 1: each
    tangent's leading axis; b = 0: the one)."""
    if b == 0:
        return [list(ts)]
    count = next(t.shape[0] for t in ts if t is not None)
    return [[None if t is None else t[j] for t in ts] for j in range(count)]


def call_scipy(original: Callable, errors: list, *args: Any, **kwargs: Any) -> Any:
    """SciPy's function on wrapped callbacks: an exception raised inside one of them (`errors`) is
    raised as it was, whatever SciPy's C code turned it into (a `SystemError`, `minpack.error`, ...)."""
    try:
        result = original(*args, **kwargs)
    except BaseException as error:
        if errors:
            raise errors[0] from error
        raise
    if errors:
        raise errors[0]
    return result


class CallbackPrim(Prim):
    """A node computed by a SciPy routine from a callback's recording (a root, an integral, an ODE's
    solution): named as the user called it, its sparsity dense (`Prim.dense_pattern`)."""

    dense_pattern = True

    def label(self) -> str:
        return self.name
