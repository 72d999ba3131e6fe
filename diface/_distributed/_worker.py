"""The worker's side of `AutoDistributed`: one task evaluates one chunk of tangents.

A task carries a `Job` (what one preparation on the driver is about: f, the dense backend, the
operator, the specs; the same for every task of the preparation), the point and the contexts as
NumPy arrays, and a `Chunk` (a range of the basis, built on the worker, or a block of explicit
tangents). The worker prepares the dense backend's batched kernel once per job and chunk size and
keeps it in a module-level cache (`_KERNELS`), so that compiled programs (JAX, torch) are built on
the worker and never travel; the driver's preparation makes the job's `token`, which stands for f,
the contexts and the point's spec. A task returns NumPy arrays (or `Raised` where it failed).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .._contexts import Cache, Context
from .._executors import Raised
from .._kernel import Kernel
from .._problem import Problem, size_of

__all__ = ["Block", "Chunk", "Job", "Work", "clear_cache"]

#: the operators a task evaluates: the dense backend's batched kernels
OPERATORS = ("pushforward", "pullback", "hvp")

#: kernels kept per process (least recently used dropped first)
CACHE_SIZE = 64

_KERNELS: OrderedDict[tuple, Kernel] = OrderedDict()
_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget every kernel this process prepared (tests; memory)."""
    with _LOCK:
        _KERNELS.clear()


@dataclass(frozen=True)
class Job:
    """What every task of one preparation carries.

    Attributes:
        token: names the driver's preparation (f, contexts, the point's spec): the cache key's root.
        f: the user's function (pickled to reach a process: pickle for a process pool, cloudpickle
            for Dask).
        backend: the dense backend, which prepares and runs the kernels on the worker.
        operator: "pushforward", "pullback" or "hvp".
        x_shape: the shape of the point, as the driver has it.
        y_spec: f's output (shape, dtype), so that the worker need not evaluate f to learn it.
        space: (shape, NumPy dtype) of the basis vectors a `Chunk` of the basis stands for.
        step: tangents per kernel call within a chunk of the basis (the serial sweep's chunk size,
            so that no kernel call is larger than the serial one's); None: the whole chunk.
        single_use: the driver's preparation serves one call (unprepared operators): the workers'
            kernels may skip what pays off over many calls only (jit compilation).
    """

    token: str
    f: Callable
    backend: Any
    operator: str
    x_shape: tuple
    y_spec: tuple
    space: tuple
    step: int | None = None
    single_use: bool = False


@dataclass(frozen=True)
class Chunk:
    """Tangents `lo` to `hi` of one call: rows of the basis of `Job.space` (`tangents` None) or the
    explicit tangents stacked (`(hi - lo, *shape)`, NumPy); `full`: also f(x) and the lower-order result."""

    lo: int
    hi: int
    tangents: np.ndarray | None
    full: bool


@dataclass(frozen=True)
class Block:
    """What one task returns: the products stacked (`(hi - lo, *product shape)`), and for a `full` chunk
    f(x) and the lower-order result (the gradient of `hvp`), all NumPy."""

    products: np.ndarray
    value: np.ndarray | None = None
    lower: np.ndarray | None = None


class Work:
    """A task: the job at one point (`x`, `contexts` with NumPy values: `Context` types and values),
    applied to each `Chunk`."""

    def __init__(self, job: Job, x: np.ndarray, contexts: tuple[tuple[type, Any], ...]) -> None:
        self.job, self.x, self.contexts = job, x, contexts

    def __call__(self, chunk: Chunk) -> Block | Raised:
        try:
            return self._run(chunk)
        except Exception as e:
            return Raised.current(e)

    def _run(self, chunk: Chunk) -> Block:
        job = self.job
        ops = job.backend.array_ops(self.x)
        x = ops.asarray(self.x)
        contexts = tuple(kind(_native(ops, v, copy_it=kind is Cache)) for kind, v in self.contexts)
        cv = tuple(c.value for c in contexts)
        step = job.step or max(1, chunk.hi - chunk.lo)
        parts, value, lower = [], None, None
        for lo in range(chunk.lo, chunk.hi, step):
            hi = min(lo + step, chunk.hi)
            tangents = self._tangents(ops, x, chunk, lo, hi)
            kernel = _kernel(job, hi - lo, partial(self._prepare, ops, x, contexts, tangents))
            full = chunk.full and lo == chunk.lo
            r = kernel.run(x, tangents, cv, None, full)
            if full:
                value = None if r.value is None else ops.to_numpy(r.value)
                lower = None if r.lower is None else ops.to_numpy(r.lower)
            parts.append(np.stack([ops.to_numpy(p) for p in r.result]))
        products = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return Block(products, value, lower)

    def _tangents(self, ops: Any, x: Any, chunk: Chunk, lo: int, hi: int) -> tuple:
        if chunk.tangents is not None:
            return tuple(ops.unstack(ops.asarray(chunk.tangents[lo - chunk.lo : hi - chunk.lo], like=x)))
        shape, dtype = self.job.space
        rows = np.zeros((hi - lo, size_of(shape)), dtype)
        rows[np.arange(hi - lo), np.arange(lo, hi)] = 1
        return tuple(ops.unstack(ops.asarray(rows.reshape((hi - lo, *shape)), like=x)))

    def _prepare(self, ops: Any, x: Any, contexts: tuple[Context, ...], tangents: tuple) -> Kernel:
        job = self.job
        problem = Problem(job.f, x, contexts, None, ops, single_use=job.single_use, y_spec=job.y_spec)
        prepare = getattr(job.backend, f"prepare_{job.operator}")
        return prepare(problem, tangents)


def _native(ops: Any, value: Any, copy_it: bool) -> Any:
    """A context value off the wire: NumPy arrays as the worker's native arrays; a `Cache` copied for
    each task (tasks of one process may run at once in threads)."""
    if isinstance(value, np.ndarray):
        return ops.asarray(value.copy() if copy_it else value)
    return copy.deepcopy(value) if copy_it else value


def _kernel(job: Job, count: int, make: Callable[[], Kernel]) -> Kernel:
    """The kernel of `job` for `count` tangents in this thread: made once, then from the cache (a
    kernel may keep buffers, so threads of one process each have their own)."""
    key = (job.token, job.backend, job.operator, job.x_shape, count, threading.get_ident())
    with _LOCK:
        kernel = _KERNELS.get(key)
        if kernel is not None:
            _KERNELS.move_to_end(key)
            return kernel
    kernel = make()
    with _LOCK:
        _KERNELS[key] = kernel
        while len(_KERNELS) > CACHE_SIZE:
            _KERNELS.popitem(last=False)
    return kernel
