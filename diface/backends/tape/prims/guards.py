"""Guards: what a replay checks so that it never silently follows another path than the recording.

A branch on a traced value (`if x[0] > 0:`, `bool(...)`) records the outcome; taking a number out of the
tape (`float(t)`, `int(t)`, an index) records the number; a traced boolean mask records how many
elements it selects (the shape of what follows depends on it). A prepared replay that sees another
outcome raises `TapeMismatchError`.
"""

from __future__ import annotations

import dis
import os
import sys
from types import FrameType
from typing import Any

import numpy as np

from ...._errors import NotSupportedError, TapeMismatchError
from ..data.graph import Traced
from ..data.sites import user_location
from .prim import Prim

__all__ = ["GUARD", "formatting", "observe", "refuse_escape", "user_location", "values_key"]

#: the tape package (every layer folder below it)
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STORE_SUBSCR = dis.opmap.get("STORE_SUBSCR")
#: `a % b` (Python 3.11 on: BINARY_OP with NumPy's NB_REMAINDER argument; before: BINARY_MODULO)
_BINARY_OP = dis.opmap.get("BINARY_OP")
_REMAINDER = [op for op, _sign in getattr(dis, "_nb_ops", ())].index("NB_REMAINDER") if _BINARY_OP else -1
_BINARY_MODULO = dis.opmap.get("BINARY_MODULO")


def _caller_instruction() -> tuple[int, int] | None:
    """(opcode, argument) of the instruction the innermost frame outside the tape engine is running."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_HERE):
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code.co_code
    i = frame.f_lasti
    return (code[i], code[i + 1]) if 0 <= i < len(code) - 1 else None


def stored_into_numpy_array() -> bool:
    """Whether the user frame is storing into a subscript (`arr[i] = traced`): NumPy converts the traced
    value with float(), which would drop its derivative."""
    instruction = _caller_instruction()
    return instruction is not None and instruction[0] == _STORE_SUBSCR


def formatting() -> bool:
    """Whether the number is asked for by printf-style formatting (`"%.3f" % t`, also inside `logging`):
    the value is shown, not computed with, and its derivative is not needed."""
    instruction = _caller_instruction()
    if instruction is None:
        return False
    op, arg = instruction
    return (op == _BINARY_OP and arg == _REMAINDER) or (_BINARY_MODULO is not None and op == _BINARY_MODULO)


def refuse_store() -> None:
    raise NotSupportedError(
        f"AutoTape: a traced value was written into a plain NumPy array at {user_location()} (arr[i] = value, "
        "or out=arr): NumPy converts it to a number and its derivative would be lost. Arrays f makes with "
        "np.zeros, np.empty, np.ones, np.full, np.array or np.copy may hold traced values; this one was made "
        "another way (outside f, or computed from constants): write into np.array(arr) instead."
    )


def observe(kind: str, v: Any) -> Any:
    """The outcome a guard of `kind` checks, for a value `v` (traced or concrete)."""
    if kind == "bool":
        return bool(v)
    if kind == "float":
        return float(v)
    if kind == "int":
        return int(v)
    if kind in ("count", "equality", "check"):
        # "equality": the points where a branch's equality holds; "check": the points failing a check
        # SciPy's code makes and raises on (none when recorded), such as points within an interpolant's bounds
        return int(np.count_nonzero(v))
    if kind == "values":
        return values_key(v)
    raise KeyError(kind)


def values_key(v: Any) -> tuple:
    """An integer or boolean array's values as a comparable key (a guard on all of them)."""
    a = np.asarray(v)
    return a.shape, a.dtype.str, a.tobytes()


def _shown(key: tuple) -> str:
    """The values a `values_key` was made of, for messages."""
    shape, dtype, data = key
    return np.array2string(np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape), threshold=20, separator=", ")


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


class _Guard(Prim):
    """Checks an outcome recorded at preparation; writes nothing."""

    name = "guard"
    differentiable = False

    def forward(
        self, v: Any, out: Any = None, kind: str = "bool", expected: Any = None, what: str = "", where: str = ""
    ) -> None:
        # on a traced value (this tape replayed while another records: second order), the outcome is
        # taken as a guard of that tape, not through float()/bool(), which are f's own conversions
        now = v.observe(kind, what, where) if isinstance(v, Traced) else observe(kind, v)
        if not _same(now, expected):
            if kind == "values":  # (shape, dtype, bytes): the arrays themselves
                seen = f"were {_shown(expected)} when the tape was recorded and are {_shown(now)} now"
            else:
                seen = f"was {expected!r} when the tape was recorded and is {now!r} now"
            raise TapeMismatchError(
                f"AutoTape: this call takes another path through f than the recorded tape: {what} at {where} "
                f"{seen}. A prepared call replays "
                "the recorded operations and cannot follow another branch; prepare again at this point, or "
                "call without prep= (an unprepared call traces f again)."
            )

    def check_step(self, buf: Any, params: dict) -> Any:
        kind, expected = params["kind"], params["expected"]

        def check() -> None:
            if kind == "bool":
                ok = bool(buf) == expected
            else:
                ok = _same(observe(kind, buf), expected)
            if not ok:
                self.forward(buf, **params)

        return check


GUARD = _Guard()


def refuse_escape(what: str, where: str) -> None:
    """A number taken out of the tape from a value that depends on x would be a constant for the
    derivatives: refused, naming the place and what to write instead."""
    raise NotSupportedError(
        f"AutoTape: {what} at {where} takes a value that depends on x out of the tape as a Python number, "
        "which would drop its derivative. Keep it an array: x[0] rather than float(x[0]); np.exp(v) or "
        "math.exp(v) (math's functions of traced values are recorded), v.item() and v.tolist() (they give "
        "traced values), np.asarray(v, dtype=float) or v.astype(float) for a cast; branch on a comparison "
        "(if v > 0:); to show it, print(v), f'{v:.3f}' or '%.3f' % v work."
    )
