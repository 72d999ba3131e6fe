"""`di.scan`: a loop of known length whose reverse sweep keeps at most a given number of snapshots."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from diface._errors import ArgumentError

from .engines import hooks_for
from .loop import Carry, plain_loop, split_output
from .schedule import check_checkpoints, check_steps

__all__ = ["scan"]


def scan(
    step: Callable[[Any, int], Any], carry: Any, n: int, *, checkpoints: int | str | None = None, outputs: bool = False
) -> Any:
    """Run `carry = step(carry, i)` for `i in range(n)` and return the final carry, differentiably on every
    engine, keeping at most `checkpoints` snapshots of the carry for the reverse sweep.

    `checkpoints=None` keeps every step (the engine records the loop as it is); an int `s >= 1` keeps at
    most `s` carries (the initial one included) on the binomial (Revolve) schedule, which recomputes the
    fewest steps possible, `diface._memory.schedule.revolve_bound(n, s)`; `"sqrt"` keeps one carry per
    segment of `ceil(sqrt(n))` steps and recomputes each segment once. With `outputs=True`, `step`
    returns `(carry, output)` and `scan` returns `(carry, outputs)`, the outputs stacked leafwise along
    a new leading axis. The carry is a tree (dicts, lists, tuples, named tuples of arrays) that keeps its
    structure, shapes and dtypes across steps (else `ShapeError`). Values no engine differentiates
    (NumPy arrays, finite differences) run the plain loop; see docs/memory.md for each engine's mechanism.

    >>> import numpy as np
    >>> import diface as di
    >>> di.scan(lambda c, i: c + i, np.zeros(2), 4)
    array([6., 6.])
    >>> c, ys = di.scan(lambda c, i: (2 * c, c.sum()), np.ones(2), 3, checkpoints=2, outputs=True)
    >>> c, ys
    (array([8., 8.]), array([2., 4., 8.]))
    """
    n = check_steps(n)
    spec_checkpoints = check_checkpoints(checkpoints, allow_none=True)
    if not callable(step):
        raise ArgumentError(f"di.scan: step must be a callable step(carry, i), got {type(step).__name__}")
    if not isinstance(outputs, bool):
        raise ArgumentError(f"di.scan: outputs must be True or False, got {outputs!r}")
    if outputs and n == 0:
        raise ArgumentError(
            "di.scan: outputs=True with n=0 has no outputs to stack (their shapes come from step, which "
            "does not run): pass n >= 1 or outputs=False"
        )
    spec = Carry(carry)
    leaves = spec.flatten(carry)
    hooks = hooks_for(leaves)
    engine_scan = getattr(hooks, "scan", None)
    if engine_scan is None or (spec_checkpoints is None and not getattr(hooks, "loop_program", False)):
        return plain_loop(step, carry, n, outputs, spec)

    def checked(c: Any, i: Any) -> Any:
        at = i if isinstance(i, int) else None
        new, out = split_output(step(c, i), outputs, at)
        spec.check(new, at)
        return (new, out) if outputs else new

    return engine_scan(checked, carry, n, spec_checkpoints, outputs)
