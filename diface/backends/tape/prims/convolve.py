"""Convolution: the full n-d convolution of two arrays with the same number of dimensions (np.convolve,
scipy.signal.convolve; their "same" and "valid" modes are centred slices of it). It is linear in each
operand; the transpose of convolving with c is correlating with c, a full convolution with c flipped
whose centre part is kept."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...._sparsity import Deps
from ..data.graph import Node, Traced
from . import patterns
from .prim import TAYLOR_BILINEAR, Prim, into, shape_of

__all__ = ["CONVOLVE", "centered", "convolve_full"]


def centered(a: Any, shape: tuple, b: int = 0) -> Any:
    """The centre part of `a` (b leading batch axes) with trailing shape `shape`."""
    full = shape_of(a)[b:]
    if full == tuple(shape):
        return a
    key = tuple(slice((n - s) // 2, (n - s) // 2 + s) for n, s in zip(full, shape))
    return a[(slice(None),) * b + key]


def convolve_full(p: Any, q: Any, bp: int = 0, bq: int = 0) -> Any:
    """Full convolution over the trailing dimensions; `p` may have bp leading batch axes (or q bq)."""
    if isinstance(p, Traced) or isinstance(q, Traced):
        return CONVOLVE(p, q)  # recorded (bp = bq = 0 on traced values)
    p, q = np.asarray(p), np.asarray(q)
    if bp or bq:  # one operand with a batch axis: convolve each slice
        batched, other = (p, q) if bp else (q, p)
        return np.stack([convolve_full(s, other) if bp else convolve_full(other, s) for s in batched])
    if p.ndim <= 1:
        if p.size == 0 or q.size == 0:
            return np.zeros((max(p.size + q.size - 1, 0),), np.result_type(p, q))
        return np.convolve(np.atleast_1d(p), np.atleast_1d(q))
    if p.size == 0 or q.size == 0:
        return np.zeros(tuple(max(n + m - 1, 0) for n, m in zip(p.shape, q.shape)), np.result_type(p, q))
    return sys.modules["scipy.signal"].convolve(p, q, mode="full", method="direct")


def _flipped(a: Any, b: int = 0) -> Any:
    nd = len(shape_of(a)) - b
    return a[(slice(None),) * b + (slice(None, None, -1),) * nd]


class _Convolve(Prim):
    """`convolve(a, c)`: the full convolution (same number of dimensions)."""

    name = "convolve"
    linear = True
    taylor = TAYLOR_BILINEAR

    def taylor_cross(self, ins: tuple, pair: tuple[int, int], a: Any, b: Any, params: dict, collapsed: bool) -> Any:
        r = np.stack([convolve_full(p, q) for p, q in zip(a, b)])
        return np.sum(r, axis=0, keepdims=True) if collapsed else r

    @staticmethod
    def sparsity(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
        """The full convolution: out[p + q] sums a[p] c[q] (a known operand's zeros give no terms)."""
        where = [
            np.nonzero(np.ones(v.shape, dtype=bool) if isinstance(v, Deps) else np.asarray(v.value) != 0) for v in ins
        ]
        pa, pc = where
        count_a, count_c = (p[0].size if p else 1 for p in where)
        if count_a * count_c > patterns.TERMS_LIMIT:
            return patterns.multilinear(run, ins, shape, None)
        ia = np.repeat(np.ravel_multi_index(pa, ins[0].shape), count_c) if pa else np.zeros(count_c, dtype=np.int64)
        ic = np.tile(np.ravel_multi_index(pc, ins[1].shape), count_a) if pc else np.zeros(count_a, dtype=np.int64)
        axes = [np.repeat(x, count_c) + np.tile(y, count_a) for x, y in zip(pa, pc)]
        out = np.ravel_multi_index(axes, shape).astype(np.int64) if axes else np.zeros(ia.size, dtype=np.int64)
        return patterns.multilinear(run, ins, shape, (out, [ia.astype(np.int64), ic.astype(np.int64)]))

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return {1 - i for i in active}, False  # each operand's rule reads the other one

    def label(self) -> str:
        return "a convolution"

    def forward(self, a: Any, c: Any, out: Any = None) -> Any:
        return into(out, convolve_full(a, c))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        a, c = ins
        r = None
        if ts[0] is not None:
            r = convolve_full(ts[0], c, bp=b)
        if ts[1] is not None:
            term = convolve_full(a, ts[1], bq=b)
            r = term if r is None else np.add(r, term)
        return into(out, r)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        other = ins[1 - i]
        r = convolve_full(g, _flipped(other), bp=b)
        # the correlation's "valid" part: the shape of input i, starting at len(other) - 1 along each axis
        key = tuple(slice(m - 1, m - 1 + n) for n, m in zip(shape_of(ins[i]), shape_of(other)))
        return into(out, r[(slice(None),) * b + key])


CONVOLVE = _Convolve()
