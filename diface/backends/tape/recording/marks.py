"""`di.checkpoint` and `di.scan` on the tape: f runs as it is, and the recording is marked.

A checkpointed call marks the nodes it recorded; a scan marks where each of its steps starts and the
`checkpoints` it was given. The reverse kernels of a marked recording cut the tape at the marks
(`sweeps.segments.mark_plan`): a checkpointed call's values are let go in the first forward pass and
recomputed from a snapshot of what crosses into it when the reverse sweep reaches it; a scan's steps
are recomputed on its schedule; the rest of the tape keeps its values. Forward mode, second order and
the other analyses read the recording as if unmarked: nothing there keeps values a reverse sweep would.
From the first mark on the recording is lean: it lets go of the values no traced array holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._memory.loop import stack_outputs
from ..data.graph import Tape, Traced, current_tape

__all__ = ["TapeMemory"]


class TapeMemory:
    """The tape's `diface._memory.engines.MemoryHooks`."""

    def owns(self, a: Any) -> bool:
        """Traced arrays, and while this thread records f, NumPy arrays too (a scan whose carry starts as a
        constant and whose steps read traced values is on the tape as well)."""
        return isinstance(a, Traced) or (isinstance(a, np.ndarray) and current_tape() is not None)

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        tape = _lean(_tape_of((*args, *kwargs.values())))
        start = len(tape.nodes)
        result = fn(*args, **kwargs)
        tape.marks.append(("checkpoint", start, len(tape.nodes), None))
        return result

    def scan(self, step: Callable, carry: Any, n: int, checkpoints: Any, outputs: bool) -> Any:
        tape = _lean(_tape_of((carry,)))
        start = len(tape.nodes)
        starts = []
        outs = []
        for i in range(n):
            starts.append(len(tape.nodes))
            result = step(carry, i)
            if outputs:
                carry, out = result
                outs.append(out)
            else:
                carry = result
        tape.marks.append(("scan", start, len(tape.nodes), (tuple(starts), checkpoints)))
        return (carry, stack_outputs(outs, np.stack)) if outputs else carry


#: a marked recording lets go of the values no traced array holds (`Tape.lean`), checked whenever an
#: eighth of this many bytes accumulated (what the marked kernels recompute, the recording need not keep)
_MARKED = 64 << 20


def _lean(tape: Tape) -> Tape:
    if tape.holders is None:
        tape.lean(_MARKED)
    return tape


def _tape_of(values: tuple) -> Tape:
    """The tape recording these values: the innermost of their traced leaves', else the thread's."""
    found: list[Tape] = []

    def walk(v: Any) -> None:
        if isinstance(v, Traced):
            found.append(v._tape)
        elif isinstance(v, dict):
            for e in v.values():
                walk(e)
        elif isinstance(v, (list, tuple)):
            for e in v:
                walk(e)

    walk(values)
    if found:
        return max(found, key=lambda t: t.depth)
    tape = current_tape()
    assert tape is not None  # the hooks are asked only for values the tape owns
    return tape
