"""The sparse Jacobian of `AutoSparse(AutoTape())`: compressed products in one replay of the tape.

A call replays f's tape once and runs one batched sweep per direction the coloring uses (forward over
its column seeds, reverse over its row seeds), compiled at preparation like a chunk of a dense
Jacobian, then reads the nonzeros out of the products with the coloring's decompression plan. The
seeds are copied into the sweeps' seed buffers at each call (a sweep may reuse its seed buffer).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._problem import Problem
from ...._sparse._plans import decompress
from ..recording.replay import Replay
from ..sweeps.interpret import jvp, vjp
from .first_order import _Kernel

__all__ = ["SparseJacobianKernel"]


class SparseJacobianKernel(_Kernel):
    """`Result(value or None, result=nonzeros)` of J in the coloring's pattern (CSR order)."""

    compile_single_use = True

    def __init__(self, problem: Problem, coloring: Any) -> None:
        y_shape, y_dtype = problem.y_spec
        self.dtype = np.result_type(problem.x_dtype, y_dtype)
        self.plan = coloring.plan().batch_first()
        # (direction, stacked seeds (count, *space shape), product size)
        self.directions = []
        if coloring.forward:
            self.directions.append(("forward", _stacked(coloring.forward_seed(), problem.x_shape, self.dtype)))
        if coloring.reverse:
            self.directions.append(("reverse", _stacked(coloring.reverse_seed(), y_shape, self.dtype)))
        super().__init__(problem)

    def prime(self, replay: Replay) -> list:
        return [(replay.sweep(kind, len(seeds)), seeds) for kind, seeds in self.directions]

    def replayed(self, replay: Replay, extra: Any) -> Any:
        products = {}
        for (sweep, seeds), (kind, _) in zip(replay.main, self.directions):
            np.copyto(sweep.seed, seeds)
            products[kind] = np.reshape(sweep.run(), (len(seeds), -1))
        return self._decompress(products)

    def interpreted(self, tape: Any, env: list, extra: Any) -> Any:
        products = {}
        for kind, seeds in self.directions:
            order = tape.forward_nodes() if kind == "forward" else tape.reverse_nodes()
            sweep = jvp if kind == "forward" else vjp
            rows = [sweep(tape, env, s, order) for s in seeds]
            out = tape.slots[tape.output if kind == "forward" else tape.x]
            rows = [np.zeros(out.shape, self.dtype) if r is None else r for r in rows]
            products[kind] = np.reshape(np.stack(rows), (len(seeds), -1))
        return self._decompress(products)

    def _decompress(self, products: dict) -> Any:
        if not products:  # no nonzero at all
            return np.zeros(0, self.dtype)
        return decompress(self.plan, products.get("forward"), products.get("reverse"))


def _stacked(seed: np.ndarray, shape: tuple, dtype: Any) -> np.ndarray:
    """A (size, c) 0/1 seed matrix as c stacked vectors of `shape`."""
    stacked = np.ascontiguousarray(seed.T, dtype=dtype).reshape((seed.shape[1], *shape))
    stacked.flags.writeable = False
    return stacked
