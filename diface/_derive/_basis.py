"""Sweeps of a batched primitive over the standard basis of a space."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._arrays import ArrayOps
from .._problem import Kernel, size_of

__all__ = ["BasisSweep"]

# Seeds for spaces up to this many elements are built once, at preparation (an n x n identity);
# larger spaces build each chunk's seeds when it is needed, to bound memory by batch * n.
_CACHED_SEEDS_UP_TO = 2048


class BasisSweep:
    """Evaluate a batched primitive on the basis vectors e_0 .. e_{n-1} of a space of `shape`, in
    chunks of `batch`, and stack the last entry of each result along `axis`.

    `prepare(seeds)` returns the kernel to use for a chunk of that many seeds; it is called once for
    full chunks and once more for a shorter last chunk, so a backend that compiles per batch size
    compiles at most twice.
    """

    def __init__(
        self,
        ops: ArrayOps,
        shape: tuple,
        dtype: Any,
        like: Any,
        batch: int,
        prepare: Callable[[tuple], Kernel],
    ) -> None:
        self.ops = ops
        self.shape = shape
        self.dtype = dtype
        self.like = like
        self.n = n = size_of(shape)
        batch = max(1, min(batch, n))
        self.bounds = [(start, min(start + batch, n)) for start in range(0, n, batch)]
        self._eye = ops.eye(n, dtype, like) if 0 < n <= _CACHED_SEEDS_UP_TO else None
        self._seeds = [self._make_seeds(lo, hi) for lo, hi in self.bounds] if self._eye is not None else None
        kernels: dict[int, Kernel] = {}
        self.kernels = []
        for k, (lo, hi) in enumerate(self.bounds):
            if hi - lo not in kernels:
                kernels[hi - lo] = prepare(self.seeds(k))
            self.kernels.append(kernels[hi - lo])

    def _make_seeds(self, lo: int, hi: int) -> tuple:
        ops = self.ops
        if self._eye is not None:
            rows = self._eye[lo:hi]
        elif ops.mutable:
            rows = ops.zeros((hi - lo, self.n), self.dtype, self.like)
            for i in range(hi - lo):
                rows[i, lo + i] = 1
        else:  # immutable arrays: slice a temporary identity
            rows = ops.eye(self.n, self.dtype, self.like)[lo:hi]
        return tuple(ops.reshape(rows[i], self.shape) for i in range(hi - lo))

    def seeds(self, k: int) -> tuple:
        if self._seeds is not None:
            return self._seeds[k]
        return self._make_seeds(*self.bounds[k])

    def run(
        self, x: Any, cv: tuple, y: Any, full: bool, axis: int, out_shape: tuple, out_dtype: Any
    ) -> tuple[tuple | None, Any]:
        """`(first, stacked)`: the first chunk's whole result tuple (None for an empty space) and the
        last entries of all chunks' results stacked along `axis` and reshaped to `out_shape`."""
        ops = self.ops
        if self.n == 0:
            return None, ops.zeros(out_shape, out_dtype, self.like)
        first = None
        parts: list = []
        for k, kernel in enumerate(self.kernels):
            r = kernel(x, self.seeds(k), cv, y, full and k == 0)
            if k == 0:
                first = r
            parts.extend(r[-1])
        return first, ops.reshape(ops.stack(parts, axis=axis), out_shape)
