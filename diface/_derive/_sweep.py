"""The standard basis of a space, in chunks, and the sweeps that apply a linear map to it.

Every Jacobian, Hessian and wrong-mode product in the core is a sweep: J applied to the basis vectors
of x (forward: the columns) or of y (reverse: the rows), a chunk at a time, stacked. The basis is
built here only:

- chunks hold at most `batch` vectors, chosen so that a chunk and its products stay within the
  size of the result (`chunk_size`): the memory a sweep needs beyond its result is about the result;
- a chunk is built when it is needed, from indices (no n x n identity), except for spaces whose
  whole identity is no larger than the result, whose chunks are built once and kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._arrays import ArrayOps
from .._kernel import Kernel, Result
from .._linearization import Linearization
from .._problem import size_of

__all__ = ["Basis", "chunk_size", "sweep_kernels", "sweep_linearization"]

#: products per chunk never exceed this (vmap and batched sweeps gain little beyond it)
MAX_BATCH = 1024
#: a chunk and its products may always use this many elements, however small the result
MIN_BUDGET = 2**16


def chunk_size(n: int, product_size: int, result_size: int, max_batch: int = MAX_BATCH) -> int:
    """Vectors per chunk of a sweep over a space of `n` elements whose products have
    `product_size` elements each: as many as fit in the result's size (and `max_batch`)."""
    budget = max(result_size, MIN_BUDGET)
    per_vector = max(1, n + product_size)
    return max(1, min(n, max_batch, budget // per_vector))


class Basis:
    """e_0 .. e_{n-1} of a space of `shape`, as chunks of shape `(k, *shape)` in the backend's arrays."""

    def __init__(self, ops: ArrayOps, shape: tuple, dtype: Any, like: Any, batch: int, result_size: int) -> None:
        self.ops = ops
        self.shape = shape
        self.dtype = dtype
        self.like = like
        self.n = n = size_of(shape)
        batch = max(1, min(batch, n)) if n else 1
        self.bounds = [(lo, min(lo + batch, n)) for lo in range(0, n, batch)]
        keep = n * n <= max(result_size, MIN_BUDGET)
        self._kept = [self._make(lo, hi) for lo, hi in self.bounds] if keep else None

    def _make(self, lo: int, hi: int) -> Any:
        return self.ops.basis_rows(self.n, lo, hi, self.dtype, self.like, self.shape)

    def chunk(self, k: int) -> Any:
        if self._kept is not None:
            return self._kept[k]
        return self._make(*self.bounds[k])

    def __len__(self) -> int:
        return len(self.bounds)


def sweep_linearization(
    lin: Linearization, forward: bool, basis: Basis, out_shape: tuple, dtype: Any, ops: ArrayOps
) -> Any:
    """J (shape `out_shape = y_shape + x_shape`) from a linearization: `push` of the x basis (columns,
    `forward`) or `pull` of the y basis (rows)."""
    if basis.n == 0:
        return ops.zeros(out_shape, dtype, basis.like)
    apply = lin.push if forward else lin.pull
    parts = [apply(basis.chunk(k)) for k in range(len(basis))]
    stacked = parts[0] if len(parts) == 1 else ops.concat(parts)
    return _assemble(ops, stacked, forward, basis.n, out_shape, dtype)


def sweep_kernels(
    basis: Basis,
    kernels: list[Kernel],
    forward: bool,
    x: Any,
    cv: tuple,
    y: Any,
    full: bool,
    out_shape: tuple,
    dtype: Any,
    ops: ArrayOps,
) -> tuple[Result | None, Any]:
    """`(first, J)` from batched kernels (one per chunk, each running f again): the first chunk's
    `Result` (its value, for the full variant) and J as in `sweep_linearization`."""
    if basis.n == 0:
        return None, ops.zeros(out_shape, dtype, basis.like)
    first, parts = None, []
    for k, kernel in enumerate(kernels):
        chunk = basis.chunk(k)
        r = kernel.run(x, ops.unstack(chunk), cv, y, full and k == 0)
        if k == 0:
            first = r
        parts.append(ops.stack(list(r.result)))
    stacked = parts[0] if len(parts) == 1 else ops.concat(parts)
    return first, _assemble(ops, stacked, forward, basis.n, out_shape, dtype)


def _assemble(ops: ArrayOps, stacked: Any, forward: bool, n: int, out_shape: tuple, dtype: Any) -> Any:
    """Stacked products (`(n, *product_shape)`) as J: columns moved last (forward), rows as they are."""
    if forward:
        stacked = ops.moveaxis(ops.reshape(stacked, (n, -1)), 0, -1)
    # no cast to `dtype`: a kernel may run on other values than it was prepared for (complex steps or
    # traced arrays of an outer engine), and the call path casts what reaches the user
    return ops.reshape(stacked, out_shape)


def kernels_per_chunk(basis: Basis, prepare: Callable[[tuple], Kernel]) -> list[Kernel]:
    """One prepared kernel per chunk size (a backend that compiles per batch size compiles at most
    twice: full chunks and the last, shorter one)."""
    made: dict[int, Kernel] = {}
    kernels = []
    for k, (lo, hi) in enumerate(basis.bounds):
        if hi - lo not in made:
            made[hi - lo] = prepare(tuple(basis.ops.unstack(basis.chunk(k))))
        kernels.append(made[hi - lo])
    return kernels
