"""Executors for `AutoFiniteDiff(executor=...)`: one task per point, submitted together, gathered in order.

Accepted: a `concurrent.futures.Executor` (thread or process pool), a Dask `distributed.Client`, any
object with `map(fn, iterable)` (a `multiprocessing.Pool`, an MPI pool, ...) or a map-like callable
(`pool.map`, as SciPy's `workers=` takes). Every task catches what f raises and returns it, so the
caller knows exactly which point failed, whatever the executor does with exceptions.
"""

from __future__ import annotations

import concurrent.futures
import copy
import pickle
import traceback
from collections.abc import Callable
from typing import Any

from ..._errors import ArgumentError, EvaluationError
from ..._problem import check_output

__all__ = ["Task", "check_executor", "is_process_pool", "mapper_for", "run_tasks"]

Mapper = Callable[[Callable, list], list]


def _is_dask_client(executor: Any) -> bool:
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "gather")


def check_executor(executor: Any) -> None:
    """An `ArgumentError` unless `executor` is something `mapper_for` can use."""
    if executor is None or isinstance(executor, concurrent.futures.Executor) or _is_dask_client(executor):
        return
    if callable(getattr(executor, "map", None)) or callable(executor):
        return
    raise ArgumentError(
        "AutoFiniteDiff: executor must be a concurrent.futures.Executor, a Dask distributed.Client, an "
        f"object with a map(fn, iterable) method or a map-like callable; got {type(executor).__name__}"
    )


def is_process_pool(executor: Any) -> bool:
    """Whether tasks are pickled with the standard pickle (a process pool; Dask uses cloudpickle)."""
    pool = getattr(executor, "__self__", executor)  # `pool.map` passed as the executor
    return isinstance(pool, concurrent.futures.ProcessPoolExecutor) or type(pool).__module__.startswith(
        "multiprocessing"
    )


def mapper_for(executor: Any) -> Mapper:
    """`map(task, points) -> list` on `executor`, all points submitted before any result is awaited."""
    if _is_dask_client(executor):

        def dask_map(task: Callable, points: list) -> list:
            return list(executor.gather(executor.map(task, points, pure=False)))

        return dask_map
    if isinstance(executor, concurrent.futures.Executor) or callable(getattr(executor, "map", None)):
        return lambda task, points: list(executor.map(task, points))
    return lambda task, points: list(executor(task, points))


class _Raised:
    """What a task returns where f raised: the exception and, for a remote process, its traceback."""

    def __init__(self, error: BaseException, trace: str) -> None:
        self.error, self.trace = error, trace


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
            return _Raised(e, traceback.format_exc())


def check_picklable(task: Task) -> None:
    """An `ArgumentError` saying what to do where a process pool cannot pickle f or the contexts."""
    try:
        pickle.dumps(task)
    except Exception as e:
        raise ArgumentError(
            f"AutoFiniteDiff(executor=<process pool>): f and its contexts must be picklable to reach the "
            f"worker processes, and pickling failed ({type(e).__name__}: {e}); define f at module level "
            "(not a lambda or a nested function), or use a thread pool (concurrent.futures."
            "ThreadPoolExecutor) or a Dask Client (which pickles closures)"
        ) from e


def run_tasks(mapper: Mapper, task: Task, points: list, label: Callable[[int], str]) -> list:
    """f at every point through `mapper`, in order; an `EvaluationError` naming the first point where f
    raised, with f's exception as its `__cause__`."""
    values = mapper(task, points)
    for i, v in enumerate(values):
        if isinstance(v, _Raised):
            error = v.error
            if error.__traceback__ is None and hasattr(error, "add_note"):  # raised in another process: keep its
                error.add_note(f"traceback in the worker:\n{v.trace}")  # traceback as a note (Python 3.11 on)
            raise EvaluationError(
                f"f raised {type(error).__name__} at {label(i)} (point {i + 1} of {len(points)}): {error}"
            ) from error
    return values
