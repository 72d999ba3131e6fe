"""Recording `f`: its inputs as traced arrays, run once, its output found.

Inputs of the tape: x (active), and the leaves of the context values: floating-point arrays and
numbers of a `Constant` (so a preparation replays with new values), arrays of a `Cache` (f may write into
them; a replay never reads what they held unless f reads before writing). Constant leaves that are not
floating point (integers, strings, objects, integer arrays) are static: recorded by value, compared at
each prepared call, and the tape is recorded again if one changed. Tuples, lists and dicts are walked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...._contexts import Cache
from ...._errors import NotSupportedError
from ...._problem import ComplexOutput, check_output
from ..data.graph import Tape
from ..numpy import protocols  # noqa: F401 - NumPy's protocols and the hooks' rules, registered before any recording
from ..numpy.hooks import install as install_hooks
from ..numpy.intercept import recording
from ..tracing.tracer import TapeArray, operand, slot_of

__all__ = ["Recording", "record"]


@dataclass
class Recording:
    """A tape and how the call arguments bind to it."""

    tape: Tape
    #: static context leaves: (context index, path, value at recording)
    statics: list
    #: slots besides the output whose values a replay keeps for its owner (see `Forward`)
    keep: tuple = ()

    def output_spec(self) -> tuple[tuple, Any]:
        """(shape, dtype) of f's output, as recorded."""
        slot = self.tape.slots[self.tape.output]
        return slot.shape, slot.dtype

    def matches(self, cv: tuple) -> bool:
        """A replay of this recording is valid for these context values: the same statics, the traced
        leaves in the same shapes."""
        return (not self.statics or self.statics_match(cv)) and self.leaves_match(cv)

    def statics_match(self, cv: tuple) -> bool:
        for ci, path, value in self.statics:
            v = cv[ci]
            try:
                for key in path:
                    v = v[key]
            except (KeyError, IndexError, TypeError):
                return False
            if not same_value(v, value):
                return False
        return True

    def leaves_match(self, cv: tuple) -> bool:
        """The traced context leaves still have the recorded shapes (with strict=False, or inside a
        container, nothing else checks them)."""
        slots = self.tape.slots
        for s, _kind, ci, path in self.tape.inputs:
            v = cv[ci]
            try:
                for key in path:
                    v = v[key]
            except (KeyError, IndexError, TypeError):
                return False
            if np.shape(v) != slots[s].shape:
                return False
        return True


def same_value(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except Exception:  # objects without a usable equality: changed unless identical
        return False


def record(f: Any, x: Any, contexts: tuple, cv: tuple, y: Any, budget: int | None = None) -> Recording:
    """Trace `f` at `x` with context values `cv` (and the output buffer `y` of an in-place f); with a
    memory `budget` (bytes), leanly: values no traced array holds any more are let go (`Tape.lean`)."""
    install_hooks()
    tape = Tape()
    if budget is not None:
        tape.lean(budget)
    xv = np.array(x, copy=True)
    if xv.dtype.kind == "c":
        raise NotSupportedError(_COMPLEX_ENDS.format("x is"))
    tape.x = tape.add_slot(xv, "x", True, True)
    xv.flags.writeable = False
    statics: list = []
    args = [
        _bind(tape, "cache" if isinstance(c, Cache) else "constant", ci, (), v, statics)
        for ci, (c, v) in enumerate(zip(contexts, cv))
    ]
    xt = TapeArray(tape, tape.x)
    try:
        with recording(tape, f):
            if y is not None:
                yv = np.array(y, copy=True)
                tape.y = tape.add_slot(yv, "y", False, True)
                yt = TapeArray(tape, tape.y)
                result = f(yt, xt, *args)
                if result is not None:
                    raise NotSupportedError("an in-place function f(y, x) must write into y and return None")
                tape.output = yt._read()
            else:
                result = check_output(f(xt, *args))  # None, a list, a str, ...: an ArgumentError saying so
                tape.output = slot_of(tape, operand(result))
    finally:
        tape.closed = True
    tape.let_go()  # a lean recording keeps only what traced arrays still hold (the output)
    if tape.slots[tape.output].dtype.kind == "c":  # the call path prepares the real problem of pairs
        raise ComplexOutput(_COMPLEX_ENDS.format("f returned"))
    return Recording(tape, statics)


#: complex values are differentiated inside f only: its input and output are real arrays
_COMPLEX_ENDS = (
    "AutoTape: {} a complex array; the tape differentiates real functions of real arrays (complex values "
    "inside f are fine): pass the real and imaginary parts as a real array and return np.stack([y.real, "
    "y.imag], axis=-1)"
)


def _bind(tape: Tape, kind: str, ci: int, path: tuple, v: Any, statics: list) -> Any:
    """The value f receives for a context leaf: traced where it is an input of the tape."""
    if isinstance(v, np.ndarray):
        if kind == "cache" or v.dtype.kind == "f":
            value = np.array(v, copy=True)
            slot = tape.add_slot(value, kind, False, True)
            value.flags.writeable = False
            tape.inputs.append((slot, kind, ci, path))
            return TapeArray(tape, slot)
        statics.append((ci, path, np.array(v, copy=True)))
        return v
    if kind == "constant" and isinstance(v, (float, np.floating)) and not isinstance(v, bool):
        weak = not isinstance(v, np.generic)
        number = float(v) if weak else np.asarray(v)
        slot = tape.add_slot(number, kind, False, True, weak=weak)
        tape.inputs.append((slot, kind, ci, path))
        return TapeArray(tape, slot)
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return tuple(_bind(tape, kind, ci, (*path, i), e, statics) for i, e in enumerate(v))
    if isinstance(v, list):
        return [_bind(tape, kind, ci, (*path, i), e, statics) for i, e in enumerate(v)]
    if isinstance(v, dict):
        return {k: _bind(tape, kind, ci, (*path, k), e, statics) for k, e in v.items()}
    statics.append((ci, path, v))
    return v


def recording_for(problem: Any, budget: int | None = None) -> Recording:
    """The recording of a problem's f, made once: `AutoTape.output_spec` makes it, the first kernel
    prepared for the problem takes it over (see `take_recording`); lean with a memory `budget`."""
    rec = problem.memo.get(_MEMO)
    if rec is None:
        rec = problem.memo[_MEMO] = record(
            problem.f, problem.x, problem.contexts, problem.context_values, problem.y, budget
        )
    return rec


def take_recording(problem: Any, budget: int | None = None) -> Recording:
    """The problem's recording for a kernel to own: the one `recording_for` made, else a new one."""
    rec = problem.memo.pop(_MEMO, None)
    if rec is not None:
        return rec
    return record(problem.f, problem.x, problem.contexts, problem.context_values, problem.y, budget)


_MEMO = "AutoTape recording"
