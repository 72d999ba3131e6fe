"""The cumulative product along an axis (np.cumprod), with rules exact where factors are zero, to
every order.

y_k = a_0 a_1 ... a_k, so the tangent obeys the linear recurrence dy_k = a_k dy_{k-1} + y_{k-1} da_k
and the cotangent its transpose, s_j = g_j + a_{j+1} s_{j+1}, da_j = y_{j-1} s_j. Both are solved by a
scan of affine maps in log2(n) steps of products and sums (Hillis-Steele): no division, so a zero
factor needs no special case, and the rules, written with the tape's own operations, are polynomials in
a whose derivatives the tape takes again for second order, exactly at zeros too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._sparsity import Nonlinearity
from . import patterns
from .prim import HOLOMORPHIC, Prim, into, shape_of

__all__ = ["CUMPROD"]


def _shift(a: Any, d: int, axis: int, fill: float) -> Any:
    """a moved d places along `axis` (towards higher indices), `fill` in the first d places."""
    shape = list(shape_of(a))
    n = shape[axis]
    shape[axis] = d
    head = np.full(tuple(shape), fill, dtype=a.dtype)
    kept = a[(slice(None),) * axis + (slice(0, n - d),)]
    return np.concatenate([head, kept], axis=axis)


def _affine_scan(a: Any, z: Any, axis: int, b: int) -> Any:
    """The solution of w_k = a_k w_{k-1} + z_k (w_{-1} = 0) along `axis` of a (`axis + b` of z, which has
    b leading batch axes)."""
    n = shape_of(a)[axis]
    d = 1
    while d < n:
        z = np.add(z, np.multiply(a, _shift(z, d, axis + b, 0.0)))
        if 2 * d < n:
            a = np.multiply(a, _shift(a, d, axis, 1.0))
        d *= 2
    return z


class _Cumprod(Prim):
    complex = HOLOMORPHIC
    name = "cumprod"
    sparsity = staticmethod(patterns.cumulative(Nonlinearity.BILINEAR))

    def label(self) -> str:
        return "numpy.cumprod"

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return {0}, True

    def forward(self, a: Any, out: Any = None, axis: int = 0) -> Any:
        return np.cumprod(a, axis=axis, out=out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, axis: int = 0) -> Any:
        a = ins[0]
        if shape_of(a)[axis] == 0:
            return into(out, np.multiply(ts[0], 1.0))
        before = _shift(y, 1, axis, 1.0)  # y_{k-1}, 1 for k = 0
        return into(out, _affine_scan(a, np.multiply(before, ts[0]), axis, b))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, axis: int = 0) -> Any:
        a = ins[0]
        if shape_of(a)[axis] == 0:
            return into(out, np.multiply(g, 1.0))
        # s_j = g_j + a_{j+1} s_{j+1}: the same scan, read from the end
        following = _shift(np.flip(a, axis), 1, axis, 0.0)  # a_{j+1} in reversed order
        s = np.flip(_affine_scan(following, np.flip(g, axis + b), axis, b), axis + b)
        return into(out, np.multiply(_shift(y, 1, axis, 1.0), s))


CUMPROD = _Cumprod()
