"""Inverse accumulation, the messages: the user's line of a tape node (`analysis.inverse`), found by recording
f once more with a tape that notes where each node was made (only on the way to a `SingularError`)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...._errors import SingularError
from ...._problem import Problem, check_output
from ..data.graph import Tape
from ..data.sites import call_site
from ..numpy.hooks import install as install_hooks
from ..recording.record import _bind
from ..tracing.tracer import TapeArray, operand, slot_of

__all__ = ["singular", "site"]


class _SiteTape(Tape):
    """A tape that notes, for each node, where the user's code made it."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: dict[int, str] = {}

    def add_node(self, prim: Any, inputs: tuple[int, ...], params: dict, value: np.ndarray) -> int:
        count = len(self.nodes)
        slot = super().add_node(prim, inputs, params, value)
        if len(self.nodes) > count:
            self.sites[count] = call_site(sys._getframe(1)).describe()
        return slot


def site(problem: Problem, x: Any, cv: tuple, y: Any, node: int | None) -> str:
    """`file:line (`source`)` of tape node `node`, found by recording f once more (an error path only)."""
    if node is None:
        return "?"
    install_hooks()
    tape = _SiteTape()
    xv = np.array(x, copy=True)
    tape.x = tape.add_slot(xv, "x", True, True)
    statics: list = []
    args = [_bind(tape, "constant", ci, (), v, statics) for ci, v in enumerate(cv)]
    try:
        if y is not None:
            tape.y = tape.add_slot(np.array(y, copy=True), "y", False, True)
            problem.f(TapeArray(tape, tape.y), TapeArray(tape, tape.x), *args)
        else:
            slot_of(tape, operand(check_output(problem.f(TapeArray(tape, tape.x), *args))))
    except Exception:  # only a message is at stake
        pass
    finally:
        tape.closed = True
    return tape.sites.get(node, f"node {node}")


def singular(problem: Problem, x: Any, cv: tuple, y: Any, node: int | None, why: str) -> SingularError:
    where = "" if node is None else f" at {site(problem, x, cv, y, node)}"
    return SingularError(
        f"J is singular at every x: f narrows{where} ({why}); inverse accumulation needs f to keep x.size "
        "numbers live through every step, each new value depending on the ones it overwrites"
    )
