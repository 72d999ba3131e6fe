"""The one lock every preparation and kernel call of this backend holds while it runs.

autograd keeps one piece of mutable tracing state per process: the trace counter
`autograd.tracer.trace_stack.top`. A trace takes level top + 1, nested traces (ours, and any
`autograd.grad` that f or a rule calls) take higher ones, and a primitive called with boxes of several
levels differentiates with respect to the highest. Threads tracing at once share the counter, so a
trace nested in one thread can get a level at or below its own outer trace's once another thread's
trace ends, and f's values are then differentiated with respect to the wrong trace (wrong results, or
errors such as `_RecordNode has no attribute vjp`); rules that run autograd (odeint's VJP) move the
counter during a backward pass too. Everything else autograd keeps (the registries of rules and box
types) is only read while differentiating, and boxes carry their level and node with them.

So every preparation and every kernel call holds `TRACING` while it runs, as does the evaluation of f
for its output's shape: one thread's traces then take exactly the levels they take single-threaded.
So do the linearizers, linearizations and plans this backend hands the core (`locked`), which other
parts of diface (AutoSparse's compressed sweeps) call directly.
It is reentrant (diface inside f). The kernels' own state (fallback switches, cached partial
derivatives, linearizations kept for same-point calls) is only touched under it too. autograd traces
started outside diface (autograd.grad called directly in another thread) do not take it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from ..._kernel import Kernel, Result, Run
from ._internals import load

__all__ = ["TRACING", "locked", "serialized"]

TRACING = threading.RLock()


def serialized(prepare: Callable) -> Callable:
    """A method returning a kernel (`prepare_*`, a plan's `hvp`, ...), made to hold `TRACING` while it
    prepares and to return a kernel that holds it while it runs."""

    @functools.wraps(prepare)
    def serialized_prepare(self: Any, *args: Any) -> Kernel:
        with TRACING:
            load()
            kernel = prepare(self, *args)
        if isinstance(kernel.run, _Serialized):  # from another serialized method
            return kernel
        # a direct program would run outside the lock
        return kernel.replace(run=_Serialized(kernel.run), direct=None, direct_tangent=None)

    return serialized_prepare


class _Serialized:
    """A kernel's run, holding `TRACING` while it runs."""

    __slots__ = ("run",)

    def __init__(self, run: Run) -> None:
        self.run = run

    def __call__(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        with TRACING:
            return self.run(x, extra, cv, y, full)


def locked(fn: Callable) -> Callable:
    """`fn`, holding `TRACING` while it runs."""

    @functools.wraps(fn)
    def locked_fn(*args: Any, **kwargs: Any) -> Any:
        with TRACING:
            return fn(*args, **kwargs)

    return locked_fn
