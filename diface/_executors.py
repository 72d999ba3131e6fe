"""Executors: tasks submitted together to a `concurrent.futures` pool or a Dask client, gathered in order.

`AutoFiniteDiff(executor=...)` (one task per point) and `AutoDistributed` (one task per chunk of
tangents) share this. Accepted: a `concurrent.futures.Executor` (thread or process pool), a Dask
`distributed.Client` and, where the caller allows it (finite differences), any object with
`map(fn, iterable)` (a `multiprocessing.Pool`, an MPI pool, ...) or a map-like callable (`pool.map`,
as SciPy's `workers=` takes). A task catches what it raises and returns it as `Raised` with the
traceback's text, so the caller knows exactly which task failed and how, whatever the executor does
with exceptions. No executor library is imported here.
"""

from __future__ import annotations

import concurrent.futures
import os
import pickle
import traceback
from collections.abc import Callable
from typing import Any

from ._errors import ArgumentError, EvaluationError

__all__ = [
    "Mapper",
    "Raised",
    "check_executor",
    "check_picklable",
    "failure",
    "is_dask_client",
    "is_process_pool",
    "mapper_for",
    "raise_first",
    "worker_count",
]

Mapper = Callable[[Callable, list], list]


def is_dask_client(executor: Any) -> bool:
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "gather")


def check_executor(executor: Any, where: str, map_like: bool = True) -> None:
    """An `ArgumentError` (its message starting with `where`) unless `mapper_for` can use `executor`:
    a `concurrent.futures.Executor` or a Dask client, and with `map_like` None, an object with a
    `map(fn, iterable)` method or a map-like callable."""
    if isinstance(executor, concurrent.futures.Executor) or is_dask_client(executor):
        return
    if map_like and (executor is None or callable(getattr(executor, "map", None)) or callable(executor)):
        return
    accepted = (
        "a concurrent.futures.Executor, a Dask distributed.Client, an object with a map(fn, iterable) method "
        "or a map-like callable"
        if map_like
        else "a concurrent.futures.Executor (ThreadPoolExecutor, ProcessPoolExecutor) or a Dask distributed.Client"
    )
    raise ArgumentError(f"{where}: executor must be {accepted}; got {type(executor).__name__}")


def is_process_pool(executor: Any) -> bool:
    """Whether tasks are pickled with the standard pickle (a process pool; Dask uses cloudpickle)."""
    pool = getattr(executor, "__self__", executor)  # `pool.map` passed as the executor
    return isinstance(pool, concurrent.futures.ProcessPoolExecutor) or type(pool).__module__.startswith(
        "multiprocessing"
    )


def worker_count(executor: Any) -> int:
    """How many tasks `executor` runs at once: a pool's workers, a Dask cluster's threads (asked each
    time: a cluster may grow), else the machine's CPUs."""
    if is_dask_client(executor):
        threads = sum(executor.nthreads().values())
        return max(1, threads)
    workers = getattr(executor, "_max_workers", None)  # ThreadPoolExecutor and ProcessPoolExecutor
    if isinstance(workers, int) and workers > 0:
        return workers
    return os.cpu_count() or 1


def mapper_for(executor: Any) -> Mapper:
    """`map(task, items) -> list` on `executor`, all items submitted before any result is awaited."""
    if is_dask_client(executor):

        def dask_map(task: Callable, items: list) -> list:
            return list(executor.gather(executor.map(task, items, pure=False)))

        return dask_map
    if isinstance(executor, concurrent.futures.Executor) or callable(getattr(executor, "map", None)):
        return lambda task, items: list(executor.map(task, items))
    return lambda task, items: list(executor(task, items))


class Raised:
    """What a task returns where it raised: the exception and the text of its traceback (for a remote
    process, the only trace of where it happened)."""

    def __init__(self, error: BaseException, trace: str) -> None:
        self.error, self.trace = error, trace

    @classmethod
    def current(cls, error: BaseException) -> Raised:
        """The exception being handled, with its traceback's text."""
        return cls(error, traceback.format_exc())


def check_picklable(payload: Any, where: str, cloud: bool = False) -> None:
    """An `ArgumentError` saying what to do where `payload` (f and what travels with it) cannot be pickled
    to reach the workers: with the standard pickle (a process pool), or with cloudpickle (`cloud`: Dask,
    which pickles closures and lambdas too)."""
    try:
        if cloud:
            import cloudpickle  # type: ignore[import-untyped]  # Dask's serializer, installed with it

            cloudpickle.dumps(payload)
        else:
            pickle.dumps(payload)
    except Exception as e:
        advice = (
            "make f a function of picklable values (no open files, locks or live connections in its closure), "
            "or use a thread pool (concurrent.futures.ThreadPoolExecutor)"
            if cloud
            else "define f at module level (not a lambda or a nested function), or use a thread pool "
            "(concurrent.futures.ThreadPoolExecutor) or a Dask Client (which pickles closures)"
        )
        raise ArgumentError(
            f"{where}: f and its contexts must be picklable to reach the worker processes, and pickling failed "
            f"({type(e).__name__}: {e}); {advice}"
        ) from e


def failure(raised: Raised, message: str) -> EvaluationError:
    """The `EvaluationError` (`message`) for a task that raised: the task's error as its `__cause__`, the
    text of the task's traceback as its `worker_traceback` and, where the task ran in another process
    (the error has no traceback of its own here), as a note of the cause."""
    error = raised.error
    if error.__traceback__ is None and hasattr(error, "add_note"):  # raised in another process: keep its
        error.add_note(f"traceback in the worker:\n{raised.trace}")  # traceback as a note (Python 3.11 on)
    result = EvaluationError(message)
    result.worker_traceback = raised.trace  # type: ignore[attr-defined]
    result.__cause__ = error
    return result


def raise_first(values: list, describe: Callable[[int, BaseException], str]) -> list:
    """`values` where no task raised, else the `failure` whose message is `describe(i, error)` for the
    first task `i` that did."""
    for i, v in enumerate(values):
        if isinstance(v, Raised):
            raise failure(v, describe(i, v.error))
    return values
