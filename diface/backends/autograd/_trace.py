"""Running f on autograd's boxes: one trace at a fresh level, and the errors of f that come from
handing traced values to code that needs plain ones, explained."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._contexts import Cache
from ..._errors import ArgumentError, NotSupportedError
from ..._problem import Problem
from ._internals import AG
from ._messages import HIDDEN_BOXES, PLAIN_NUMPY, misused_box

__all__ = ["bound", "private_caches", "trace"]


def trace(root: Any, fun: Callable, x: Any) -> tuple[Any, Any]:
    """`fun(x)` with x boxed at a new trace level under `root`: (value, end node), or (value, None)
    when the value does not depend on x. Callers hold `TRACING`."""
    stack = AG.trace_stack
    outer = stack.top
    level = stack.top = outer + 1
    try:
        end = fun(AG.new_box(x, level, root))
    finally:
        stack.top = outer  # also undoes a level that an autograd.grad inside f left raised as it failed
    if AG.isbox(end) and end._trace == level:
        raw = end._value
        if (type(raw) is np.ndarray and raw.dtype == object) or AG.isbox(raw):
            if _hides_boxes(raw, level):
                raise NotSupportedError(HIDDEN_BOXES)
        return raw, end._node
    if isinstance(end, (list, tuple)):
        raise ArgumentError(f"f must return an array, got a {type(end).__name__}; build it with np.stack or np.array")
    if type(end) is np.ndarray and end.dtype == object:
        raise NotSupportedError(PLAIN_NUMPY)
    return end, None


def _hides_boxes(raw: Any, level: int) -> bool:
    """Whether a traced value's raw value holds boxes of this trace (an array of objects made of a list
    of boxes by a primitive that saw none of them), which autograd's rules never reach; a box of an outer
    trace (diface inside autograd.grad) is a value like any other."""
    if AG.isbox(raw):
        return raw._trace >= level
    return any(AG.isbox(v) and v._trace >= level for v in raw.flat)


def bound(f: Callable, cv: tuple) -> Callable:
    """`x -> f(x, *cv)`, explaining the errors that come from handing traced values to code that needs
    plain ones (any other error of f propagates unchanged)."""

    def bound_f(x: Any) -> Any:
        try:
            return f(x, *cv)
        except (TypeError, ValueError) as e:
            message = misused_box(e)
            if message is None:
                raise
            raise NotSupportedError(message) from e

    return bound_f


def private_caches(problem: Problem) -> Problem:
    """`problem` with its `Cache` arrays replaced by buffers of its own (their contents do not matter),
    for a trace that a same-point preparation keeps: the recording then never reads the caller's
    buffers, which later calls (of this or any other preparation) may overwrite."""
    if not any(isinstance(c, Cache) for c in problem.contexts):
        return problem
    contexts = tuple(
        Cache(np.zeros_like(c.value)) if isinstance(c, Cache) and isinstance(c.value, np.ndarray) else c
        for c in problem.contexts
    )
    return problem.derived(problem.f, problem.y_spec, contexts)
