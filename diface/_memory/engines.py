"""The engines' side of `di.checkpoint` and `di.scan`: each engine package registers `MemoryHooks` for its
framework, made only once the framework is imported (as `diface._boundary` does for `DifferentiateWith`);
a call finds the hooks by the values it is given (the engine whose arrays or traced values they are).
Values no engine owns (NumPy arrays, numbers: f evaluated by finite differences, or outside any
derivative) take the plain path: nothing is stored, so nothing needs recomputing."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, Protocol

__all__ = ["MemoryHooks", "hooks_for", "register_memory"]


class MemoryHooks(Protocol):
    """One engine's recomputation: `owns(a)` says whether `a` is the engine's array or traced value;
    `checkpoint(fn, args, kwargs)` calls `fn` so that reverse mode recomputes its intermediates instead of
    keeping them; `scan(step, carry, n, schedule, outputs)` runs the loop: `schedule` is the checked
    `checkpoints` argument (an int s, `"sqrt"`, or None where the hooks set `loop_program = True`: the
    engine compiles even the unbounded loop, as JAX's `lax.scan`), which an engine driven by actions turns
    into them with `diface._memory.schedule.actions(n, schedule)`; `step` is already wrapped to check the
    carry (`diface._memory.loop.Carry.check`). Hooks without `scan` leave `di.scan` to the plain loop."""

    def owns(self, a: Any) -> bool: ...

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any: ...

    def scan(self, step: Callable, carry: Any, n: int, schedule: Any, outputs: bool) -> Any: ...


_FACTORIES: dict[str, Callable[[], MemoryHooks]] = {}
_MADE: dict[str, MemoryHooks] = {}


def register_memory(framework: str, factory: Callable[[], MemoryHooks]) -> None:
    """Make `framework`'s hooks known; `factory` runs (once) only after `framework` is imported."""
    _FACTORIES[framework] = factory


def hooks_for(leaves: Iterable[Any]) -> MemoryHooks | None:
    """The hooks of the engine owning the first of `leaves` some imported engine owns, or None."""
    active = []
    for framework, factory in _FACTORIES.items():
        if framework in sys.modules:
            made = _MADE.get(framework)
            if made is None:
                made = _MADE[framework] = factory()
            active.append(made)
    if not active:
        return None
    for leaf in leaves:
        for hooks in active:
            if hooks.owns(leaf):
                return hooks
    return None
