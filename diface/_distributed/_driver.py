"""The driver's side of `AutoDistributed`: one call's tangents split into chunks, one task per chunk,
the blocks written into one preallocated result as they arrive.

`Spread` runs one batched operator (the dense backend's pushforward, pullback or hvp) over chunks of
tangents: explicit ones (a batched call) or the basis of a space (a Jacobian's columns or rows, a
Hessian's columns), built on the workers from their indices. The point and the contexts travel as
NumPy arrays; what comes back is converted to the caller's arrays once, when the result is complete.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, NoReturn

import numpy as np

from .._executors import Raised, check_picklable, failure, is_dask_client, is_process_pool, worker_count
from .._problem import Problem
from ._worker import Block, Chunk, Job, Work

__all__ = ["Spread", "numpy_dtype"]


def numpy_dtype(ops: Any, dtype: Any, like: Any) -> np.dtype:
    """The NumPy dtype of the library's `dtype` (what its arrays become on the wire)."""
    return ops.to_numpy(ops.zeros((0,), dtype, like)).dtype


class Spread:
    """One operator of one problem evaluated on `executor`, `chunk` tangents per task (None: as even as
    the executor's workers allow); `space`/`step` for sweeps of a basis (see `Job`)."""

    def __init__(
        self,
        backend: Any,
        problem: Problem,
        operator: str,
        space: tuple = ((), np.float64),
        step: int | None = None,
    ) -> None:
        self.executor, self.chunk = backend.executor, backend.chunk
        self.problem, self.ops = problem, problem.ops
        self.job = Job(
            token=uuid.uuid4().hex,
            f=problem.f,
            backend=backend.dense,
            operator=operator,
            x_shape=problem.x_shape,
            y_spec=problem.y_spec,
            space=space,
            step=step,
            single_use=problem.single_use,
        )
        if is_process_pool(self.executor) or is_dask_client(self.executor):
            where = f"AutoDistributed(executor=<{'Dask client' if is_dask_client(self.executor) else 'process pool'}>)"
            check_picklable(self._work(problem.x, problem.context_values), where, is_dask_client(self.executor))

    def _work(self, x: Any, cv: tuple) -> Work:
        ops = self.ops
        contexts = tuple(
            (type(c), ops.to_numpy(v) if ops.is_native(v) else v)
            for c, v in zip(self.problem.contexts, cv, strict=True)
        )
        return Work(self.job, ops.to_numpy(x), contexts)

    def bounds(self, count: int) -> list[tuple[int, int]]:
        """(lo, hi) of each chunk of `count` tangents."""
        if count == 0:
            return []
        size = self.chunk if self.chunk is not None else -(-count // worker_count(self.executor))
        step = self.job.step
        if self.chunk is None and step is not None and size > step:  # whole kernel calls per task
            size = -(-size // step) * step
        return [(lo, min(lo + size, count)) for lo in range(0, count, size)]

    def run(
        self, x: Any, cv: tuple, count: int, tangents: np.ndarray | None, full: bool
    ) -> Iterator[tuple[int, int, Block]]:
        """`(lo, hi, block)` for each chunk of `count` tangents (`tangents` stacked, or None: the basis of
        the job's space), in order, as the tasks finish; only the first chunk's is `full`. An
        `EvaluationError` names the chunk whose task failed, with the worker's traceback."""
        work = self._work(x, cv)
        bounds = self.bounds(count)
        chunks = [
            Chunk(lo, hi, None if tangents is None else tangents[lo:hi], full and k == 0)
            for k, (lo, hi) in enumerate(bounds)
        ]
        for k, block in enumerate(_submit(self.executor, work, chunks)):
            lo, hi = bounds[k]
            if isinstance(block, Raised):
                _fail(block, k, len(bounds), lo, hi, count, self.job.operator)
            assert isinstance(block, Block)
            yield lo, hi, block


def _submit(executor: Any, work: Work, chunks: list[Chunk]) -> Iterator[Block | Raised]:
    """Every chunk submitted at once; the blocks in order, each as soon as it and those before it are done."""
    if is_dask_client(executor):
        futures = executor.map(work, chunks, pure=False)
        try:
            for future in futures:
                yield future.result()
        finally:
            executor.cancel([f for f in futures if not f.done()])
        return
    yield from executor.map(work, chunks)


def _fail(raised: Raised, k: int, chunks: int, lo: int, hi: int, count: int, operator: str) -> NoReturn:
    error = raised.error
    raise failure(
        raised,
        f"AutoDistributed: the task of chunk {k + 1} of {chunks} ({operator} along tangents {lo} to {hi - 1} of "
        f"{count}) raised {type(error).__name__}: {error}",
    )
