"""Which mode a basis sweep runs in: the backend's choice, or, for `mode="auto"`, the problem's.

A Jacobian of shape (m, n) costs n pushforwards (forward mode: the columns) or m pullbacks (reverse
mode: the rows). `"auto"` takes the mode with fewer products; where the counts are close (within a
factor `CLOSE`), a reusable preparation builds both kernels and times them at the preparation point,
keeping the faster (a pullback costs a few pushforwards, but how many depends on f and the engine).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .._errors import ArgumentError
from .._kernel import Kernel
from .._problem import Problem, size_of

__all__ = ["AUTO", "CLOSE", "choose_kernel", "preferred_mode", "sweep_mode"]

AUTO = "auto"
#: counts within this factor of each other are timed (reusable preparations only)
CLOSE = 4.0


def sweep_mode(backend: Any, problem: Problem | None = None) -> str:
    """The mode the basis sweeps of `backend` run in on `problem`: its `mode` where it has it natively,
    else its one native mode; for "auto", the mode with fewer products (forward on a tie)."""
    modes = backend.native_modes
    if not modes:
        raise TypeError(f"{backend!r} declares no native mode: implement prepare_pushforward or prepare_pullback")
    mode = backend.mode
    if mode == AUTO:
        if len(modes) == 1:
            return next(iter(modes))
        return preferred_mode(problem) if problem is not None else "reverse"
    if mode in modes:
        return mode
    return next(iter(sorted(modes)))


def preferred_mode(problem: Problem) -> str:
    """Forward where x has no more elements than f's output (fewer or as many columns as rows)."""
    n, m = size_of(problem.x_shape), size_of(problem.y_spec[0])
    return "forward" if n <= m else "reverse"


def _close(problem: Problem) -> bool:
    n, m = size_of(problem.x_shape), size_of(problem.y_spec[0])
    if min(n, m) == 0:
        return False
    return max(n, m) / min(n, m) <= CLOSE


def choose_kernel(backend: Any, problem: Problem, build: Callable[[str], Kernel], repeats: int = 3) -> Kernel:
    """`build(mode)` for the mode `backend` sweeps in on `problem`. With `mode="auto"` on an engine with
    both modes, a reusable preparation of a problem whose product counts are close builds both and
    keeps the one that ran faster at the preparation point (best of `repeats` calls each, interleaved)."""
    if backend.mode not in (AUTO, *backend.native_modes, "forward", "reverse"):
        raise ArgumentError(f"{backend!r}: unknown mode {backend.mode!r}")
    if backend.mode != AUTO or len(backend.native_modes) < 2 or problem.single_use or not _close(problem):
        return build(sweep_mode(backend, problem))
    kernels = {mode: build(mode) for mode in ("forward", "reverse")}
    y = problem.y
    scratch = None if y is None else problem.ops.copy(y)
    best = dict.fromkeys(kernels, float("inf"))
    for _ in range(repeats):
        for mode, kernel in kernels.items():
            start = time.perf_counter()
            result = kernel.run(problem.x, None, problem.context_values, scratch, False)
            problem.ops.block_until_ready(result.result)
            best[mode] = min(best[mode], time.perf_counter() - start)
    return kernels[min(best, key=best.__getitem__)]
