"""Where and how every MLX computation of this backend runs: holding one lock, on the main thread or on
one daemon thread.

MLX is not thread-safe: evaluating graphs from several threads at once (one compiled function called
from 8 threads, or transformations traced concurrently) gives wrong numbers, measured on MLX 0.32 (16
of 2,400 Hessians wrong with a shared compiled function, 3 of 800 without compiling). So every kernel
call, every evaluation of f for its output's spec and every conversion between MLX and NumPy holds
`MLX_LOCK`; results leave the lock evaluated, so nothing lazy crosses it. It is reentrant (diface
inside f).

A thread that ran an `mx.compile`d function makes the process abort when it exits ("terminate called
without an active exception", measured on MLX 0.32: one worker thread calling a compiled function, then
`exit`, aborts in about half the runs). So kernels called from any thread but the main one run on one
daemon thread of this module (`on_mlx_thread`), which lives as long as the process: the caller waits for
the result, and exceptions come back to it. Work that the user's own code does with MLX in other
threads, outside diface, does not take the lock.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..._kernel import Kernel, Result, Run

__all__ = ["MLX_LOCK", "evaluated", "locked", "on_mlx_thread"]

MLX_LOCK = threading.RLock()

_JOBS: queue.SimpleQueue = queue.SimpleQueue()
_WORKER: list[threading.Thread] = []


def _serve() -> None:
    while True:
        future, fn, args = _JOBS.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(fn(*args))
        except BaseException as e:  # handed to the waiting caller
            future.set_exception(e)


def on_mlx_thread(fn: Callable, *args: Any) -> Any:
    """`fn(*args)`, on the main thread as it is, from any other thread on this module's daemon thread
    (see the module docstring), holding `MLX_LOCK` there."""
    current = threading.current_thread()
    if current is threading.main_thread() or (_WORKER and current is _WORKER[0]):
        with MLX_LOCK:
            return fn(*args)
    if not _WORKER:
        with MLX_LOCK:
            if not _WORKER:
                worker = threading.Thread(target=_serve, name="diface-mlx", daemon=True)
                worker.start()
                _WORKER.append(worker)
    future: Future = Future()
    _JOBS.put((future, _holding_lock, (fn, args)))
    return future.result()


def _holding_lock(fn: Callable, args: tuple) -> Any:
    with MLX_LOCK:
        return fn(*args)


def evaluated(r: Result) -> Result:
    """`r` with every array in it computed (MLX is lazy: what leaves a kernel is never a graph)."""
    import mlx.core as mx

    mx.eval([a for a in r if a is not None])
    return r


class _Locked:
    """A kernel's run, on the MLX thread holding `MLX_LOCK`, returning evaluated arrays."""

    __slots__ = ("run",)

    def __init__(self, run: Run) -> None:
        self.run = run

    def _evaluated(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        return evaluated(self.run(x, extra, cv, y, full))

    def __call__(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        return on_mlx_thread(self._evaluated, x, extra, cv, y, full)


def locked(kernel: Kernel) -> Kernel:
    """`kernel` whose run (and direct programs) run on the MLX thread holding `MLX_LOCK` and return
    evaluated arrays."""
    if isinstance(kernel.run, _Locked):
        return kernel
    direct = kernel.direct
    if direct is not None:
        import mlx.core as mx

        inner = direct

        def evaluated_direct(x: Any, cv: tuple) -> Any:
            r = inner(x, cv)
            mx.eval(r)
            return r

        def direct(x: Any, cv: tuple) -> Any:
            return on_mlx_thread(evaluated_direct, x, cv)

    direct_tangent = kernel.direct_tangent
    if direct_tangent is not None:
        import mlx.core as mx

        one = direct_tangent

        def evaluated_one(x: Any, t: Any, cv: tuple) -> Any:
            r = one(x, t, cv)
            mx.eval(r)
            return r

        def direct_tangent(x: Any, t: Any, cv: tuple) -> Any:
            return on_mlx_thread(evaluated_one, x, t, cv)

    return kernel.replace(run=_Locked(kernel.run), direct=direct, direct_tangent=direct_tangent)
