"""Executors for `AutoFiniteDiff(executor=...)`: one task per point, submitted together, gathered in order.

The executor plumbing (what is accepted, how tasks are mapped, how a failure comes back) is the core's
(`diface._executors`, shared with `AutoDistributed`); this module holds the task: f at one point. Every
task catches what f raises and returns it, so the caller knows exactly which point failed, whatever the
executor does with exceptions.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ... import _executors
from ..._executors import Mapper, Raised, is_process_pool, mapper_for
from ..._problem import check_output

__all__ = ["Task", "check_executor", "is_process_pool", "mapper_for", "run_tasks"]


def check_executor(executor: Any) -> None:
    """An `ArgumentError` unless `executor` is something `mapper_for` can use (or None: serial)."""
    _executors.check_executor(executor, "AutoFiniteDiff")


class Task:
    """f at one point, out of place (an in-place f writes into a fresh copy of `y_template`, or of
    `complex_template` at the complex points of complex steps), with fresh copies of the `Cache`
    contexts (tasks may run at once in threads of one process)."""

    def __init__(
        self, f: Callable, cv: tuple, caches: tuple[int, ...], y_template: Any, complex_template: Any = None
    ) -> None:
        self.f, self.cv, self.caches, self.y_template = f, cv, caches, y_template
        self.complex_template = complex_template

    def __call__(self, point: Any) -> Any:
        cv = self.cv
        if self.caches:
            cv = tuple(copy.deepcopy(v) if i in self.caches else v for i, v in enumerate(cv))
        try:
            if self.y_template is None:
                return check_output(self.f(point, *cv))
            template = self.y_template
            if self.complex_template is not None and point.dtype == self.complex_template.dtype:
                template = self.complex_template  # a real buffer would drop the imaginary part
            y = copy.deepcopy(template)
            self.f(y, point, *cv)
            return y
        except Exception as e:
            return Raised.current(e)


def check_picklable(task: Task) -> None:
    """An `ArgumentError` saying what to do where a process pool cannot pickle f or the contexts."""
    _executors.check_picklable(task, "AutoFiniteDiff(executor=<process pool>)")


def run_tasks(mapper: Mapper, task: Task, points: list, label: Callable[[int], str]) -> list:
    """f at every point through `mapper`, in order; an `EvaluationError` naming the first point where f
    raised, with f's exception as its `__cause__`."""
    return _executors.raise_first(
        mapper(task, points),
        lambda i, error: f"f raised {type(error).__name__} at {label(i)} (point {i + 1} of {len(points)}): {error}",
    )
