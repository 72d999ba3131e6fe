"""The banded linear solve: `BANDED_SOLVE(ab, c, lower=, upper=)` is
`scipy.linalg.solve_banded((lower, upper), ab, c)`, the matrix A held in LAPACK's band storage
(`ab[upper + i - j, j] = A[i, j]`, shape `(lower + upper + 1, n)`) and the right-hand side `c` of shape
`(n, m)`. The splines of `scipy.interpolate` solve their linear systems with it, in O(n) per solve
where `np.linalg.solve` on the dense matrix would take O(n^3).

With x = A⁻¹ c: dx = A⁻¹ (dc - dA x); the cotangent of c is A⁻ᵀ g (a banded solve with the transposed
band, `(upper, lower)`), that of A the band of -(A⁻ᵀ g) xᵀ. The rules are written with the primitive
itself and NumPy's slicing, concatenation and products, so they record on traced values (second
order). The entries of `ab` outside the matrix (its corners) are ignored, as LAPACK ignores them, and
get no cotangent.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from . import patterns
from .prim import HOLOMORPHIC, Prim, into, shape_of

__all__ = ["BANDED_SOLVE", "band_matvec", "band_transpose"]


def _shift(a: Any, s: int, axis: int) -> Any:
    """`r[i] = a[i - s]` along `axis` (zeros where `i - s` falls outside)."""
    n = shape_of(a)[axis]
    if s == 0:
        return a
    shape = list(shape_of(a))
    if abs(s) >= n:
        return np.zeros(shape, dtype=a.dtype)
    shape[axis] = abs(s)
    pad = np.zeros(shape, dtype=a.dtype)
    index: list[Any] = [slice(None)] * len(shape)
    if s > 0:
        index[axis] = slice(0, n - s)
        return np.concatenate([pad, a[tuple(index)]], axis=axis)
    index[axis] = slice(-s, n)
    return np.concatenate([a[tuple(index)], pad], axis=axis)


def band_matvec(ab: Any, x: Any, lower: int, upper: int) -> Any:
    """A x for A in band storage `ab` (`(..., lower + upper + 1, n)`) and x of shape `(n, m)`: `(..., n, m)`."""
    total: Any = None
    for r in range(lower + upper + 1):
        v = np.multiply(ab[..., r, :, None], x)  # v[j] = A[j + r - upper, j] x[j]
        term = _shift(v, r - upper, -2)
        total = term if total is None else np.add(total, term)
    return total


def band_outer(g: Any, x: Any, lower: int, upper: int) -> Any:
    """The band of g xᵀ (g `(..., n, m)`, x `(n, m)`, summed over m): `(..., lower + upper + 1, n)`."""
    rows = [np.sum(np.multiply(_shift(g, upper - r, -2), x), axis=-1) for r in range(lower + upper + 1)]
    return np.stack(rows, axis=-2)


def band_transpose(ab: Any, lower: int, upper: int) -> Any:
    """Aᵀ in band storage (its `(upper, lower)` bands) from A's `ab` (`(..., lower + upper + 1, n)`)."""
    width = lower + upper + 1
    rows = [_shift(ab[..., width - 1 - r, :], lower - r, -1) for r in range(width)]
    return np.stack(rows, axis=-2)


class _BandedSolve(Prim):
    """`solve_banded((lower, upper), ab, c)` for a right-hand side of shape `(n, m)`."""

    complex = HOLOMORPHIC
    name = "solve_banded"
    #: linear in the right-hand side: a spline's system with constant breakpoints
    taylor_linear_in = frozenset({1})
    sparsity = staticmethod(patterns.per_matrix)

    def label(self) -> str:
        return "scipy.linalg.solve_banded"

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (0,), 0 in active

    def forward(self, ab: Any, c: Any, out: Any = None, lower: int = 1, upper: int = 1) -> Any:
        linalg = importlib.import_module("scipy.linalg")
        return into(out, linalg.solve_banded((lower, upper), ab, c, check_finite=False))

    def solve(self, ab: Any, rhs: Any, b: int, lower: int, upper: int) -> Any:
        """A⁻¹ rhs for a right-hand side with `b` leading batch axes (solved as more columns)."""
        if not b:
            return self.apply(ab, rhs, lower=lower, upper=upper)
        k, n, m = shape_of(rhs)
        wide = np.reshape(np.moveaxis(rhs, 0, -1), (n, m * k))
        return np.moveaxis(np.reshape(self.apply(ab, wide, lower=lower, upper=upper), (n, m, k)), -1, 0)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, lower: int = 1, upper: int = 1) -> Any:
        ab, _ = ins
        tab, tc = ts
        rhs = tc
        if tab is not None:
            da_y = band_matvec(tab, y, lower, upper)
            rhs = np.negative(da_y) if rhs is None else np.subtract(rhs, da_y)
        return into(out, self.solve(ab, rhs, b, lower, upper))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, lower: int = 1, upper: int = 1) -> Any:
        gc = self.solve(band_transpose(ins[0], lower, upper), g, b, upper, lower)
        if i == 1:
            return into(out, gc)
        return into(out, np.negative(band_outer(gc, y, lower, upper)))


BANDED_SOLVE = _BandedSolve()
