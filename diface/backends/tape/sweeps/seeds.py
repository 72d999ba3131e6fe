"""Basis seeds: a forward sweep whose tangents are rows of the identity (a chunk of a Jacobian's or
Hessian's columns) touches only the ones of what derives linearly from them.

In a sweep compiled for the identity chunk `lo .. lo + B` (row r of the seed is e_(lo + r), fixed at
compilation), a symbolic tangent term `coef * base` whose base is a view of the seed is zero except
where the view meets the ones: writing it out adds `coef` at those positions only, O(size of a slot)
instead of O(B x size). For functions made of elementwise operations and slices (Rosenbrock, finite
differences, separable sums) whole Hessian chunks are written this way.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

__all__ = ["FIXED_SEEDS", "identity_scatter", "identity_seed"]

#: basis sweeps (Jacobians, Hessians) of up to this many result elements keep one compiled sweep, with
#: its fixed identity seed, per chunk of the basis; larger ones one sweep per chunk size, seeded per call
FIXED_SEEDS = 2**22


def identity_seed(seed: np.ndarray, lo: int) -> None:
    """Fill a batched seed (B, *x_shape) with the identity rows e_lo .. e_(lo + B - 1)."""
    flat = seed.reshape(seed.shape[0], -1)
    flat[...] = 0
    rows = np.arange(seed.shape[0])
    flat[rows, lo + rows] = 1


def _offsets(view: np.ndarray, owner: np.ndarray) -> np.ndarray | None:
    """The flat element index in `owner` (C-contiguous) of every element of `view` (a view into it)."""
    size = owner.itemsize
    start = view.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    if view.itemsize != size or start % size or any(s % size for s in view.strides):
        return None
    idx = np.full(view.shape, start // size, np.int64)
    for axis, (n, stride) in enumerate(zip(view.shape, view.strides)):
        shape = [1] * view.ndim
        shape[axis] = n
        idx += (np.arange(n, dtype=np.int64) * (stride // size)).reshape(shape)
    return idx


def identity_scatter(seed: np.ndarray, lo: int, base: Any, coef: Any, sign: float, region: Any, out: Any) -> Any:
    """A step adding `sign * coef * base` into `region` (a view of the batched buffer `out`) where
    `base` is a view of the identity seed: only the elements where base holds a one. None where that
    does not apply (a base that is not such a view, shapes that broadcast)."""
    batch = seed.shape[0]
    if (
        not isinstance(base, np.ndarray)
        or base.shape != region.shape
        or base.dtype != seed.dtype
        or not base.shape
        or base.shape[0] != batch
        or base.strides[0] != seed.strides[0]
        or region.strides[0] != out.strides[0]
        or not np.may_share_memory(base, seed)
        or not out.flags.c_contiguous
    ):
        return None
    cols, where = _offsets(base, seed), _offsets(region, out)
    if cols is None or where is None:
        return None
    width = seed[0].size
    cols = cols[0].reshape(-1)
    if cols.size == 0 or cols.min() < 0 or cols.max() >= width:
        return None
    rows = cols - lo  # base row r holds its one where the column is lo + r
    hit = np.flatnonzero((rows >= 0) & (rows < batch))
    dest = rows[hit] * out[0].size + where[0].reshape(-1)[hit]
    return partial(_scatter_add, out.reshape(-1), dest, coef, base.shape[1:], hit, sign)


def _scatter_add(flat: np.ndarray, dest: np.ndarray, coef: Any, shape: tuple, hit: np.ndarray, sign: float) -> None:
    if coef is None:
        flat[dest] += sign
    elif sign == 1.0:
        flat[dest] += np.broadcast_to(coef, shape).reshape(-1)[hit]
    else:
        flat[dest] += np.broadcast_to(coef, shape).reshape(-1)[hit] * sign
