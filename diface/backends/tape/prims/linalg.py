"""Linear algebra primitives: inv, solve, det and log|det| (stacks of matrices broadcast as NumPy does).

With Y = inv(A): d inv = -Y dA Y; solve(A, b) = x has dx = solve(A, db - dA x); d det = det tr(Y dA);
d log|det| = tr(Y dA). The rules are written with these same operations, so they are recorded and
differentiated again for second order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import patterns
from .prim import HOLOMORPHIC, Prim, expand_to, into, reduce_to, shape_of
from .series import add

__all__ = ["DET", "INV", "LOGABSDET", "SOLVE"]


def _t(a: Any) -> Any:
    return np.swapaxes(a, -1, -2)


class _Square(Prim):
    """inv(A) and solve(A, C) (`solves`): Taylor series of one square A by the recurrence of A(t) X(t) = C(t)
    (C = I for inv): Xₖ = A₀⁻¹ (Cₖ - Σ_{j=1..k} Aⱼ Xₖ₋ⱼ)."""

    solves = False
    sparsity = staticmethod(patterns.per_matrix)

    def taylor_step(self, traced: list[int], shapes: list[tuple]) -> tuple[str, Any] | None:
        square = len(shapes[0]) == 2 and shapes[0][0] == shapes[0][1]  # one matrix, not a stack
        return ("own", self.taylor_coefficients) if square and (not self.solves or len(shapes[1]) in (1, 2)) else None

    def taylor_coefficients(
        self, ins: tuple, y: Any, ts: tuple, layout: Any, alg: Any, full: tuple, dtype: Any
    ) -> np.ndarray:
        """X's coefficients `full` (rows by order, `layout`) from A's and C's (`ts`, None: constant)."""
        order, rows = layout.order, layout.rows
        a0 = ins[0]
        vector = self.solves and len(shape_of(ins[1])) == 1
        ta = ts[0]
        tc = ts[1] if self.solves else None
        x0 = y[:, None] if vector else y
        xs: list = [x0]
        out = np.empty(full, dtype)
        for k in range(1, order + 1):
            rhs = None if tc is None else (tc[rows[k]][..., None] if vector else tc[rows[k]])
            if ta is not None:
                s = add(_matrix_product(alg.collapsed, j, ta[rows[j]], k - j, xs[k - j]) for j in range(1, k + 1))
                rhs = -s if rhs is None else rhs - s
            if rhs is None:
                xk = None
            elif not self.solves:
                xk = np.matmul(y, rhs)
            else:
                xk = np.linalg.solve(a0, rhs)
            xs.append(xk)
            if xk is None:
                out[rows[k]] = 0
            else:
                out[rows[k]] = xk[..., 0] if vector else xk
        return out


def _matrix_product(collapsed: bool, i: int, a: Any, j: int, b: Any) -> Any:
    """a @ b for coefficients of orders i and j (order 0: no batch axis; two batched ones row by row,
    summed over the rows in collapsed mode)."""
    if a is None or b is None:
        return None
    r = np.matmul(a, b)
    return np.sum(r, axis=0, keepdims=True) if collapsed and i and j else r


class _Inv(_Square):
    complex = HOLOMORPHIC
    name = "inv"

    def forward(self, a: Any, out: Any = None) -> Any:
        return into(out, np.linalg.inv(a))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        return np.negative(np.matmul(np.matmul(y, ts[0]), y), out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        yt = _t(y)
        return reduce_to(np.negative(np.matmul(np.matmul(yt, g), yt)), shape_of(ins[0]), b, out)


INV = _Inv()


def _solve(a: Any, rhs: Any, vector: bool) -> Any:
    """solve for a right-hand side that is a (stack of) vector(s) or matrices, batch axes included."""
    if vector:
        return np.linalg.solve(a, rhs[..., None])[..., 0]
    return np.linalg.solve(a, rhs)


def _times_solution(m: Any, x: Any, vector: bool) -> Any:
    return np.matmul(m, x[..., None])[..., 0] if vector else np.matmul(m, x)


class _Solve(_Square):
    """`solve(a, b)`: b a vector (NumPy 2: exactly when b is 1-D) or a stack of matrices."""

    complex = HOLOMORPHIC
    name = "solve"
    solves = True

    def forward(self, a: Any, c: Any, out: Any = None) -> Any:
        return into(out, np.linalg.solve(a, c))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        a, c = ins
        vector = len(shape_of(c)) == 1
        ta, tc = ts
        if b:  # batch axis first, then the broadcast batch dimensions of a and c
            ny = len(shape_of(y))
            ta = None if ta is None else expand_to(ta, (0,) * (ny + vector), b)
            tc = None if tc is None else expand_to(tc, (0,) * ny, b)
        rhs = tc
        if ta is not None:
            da_y = _times_solution(ta, y, vector)
            rhs = np.negative(da_y) if rhs is None else np.subtract(rhs, da_y)
        return into(out, _solve(a, rhs, vector))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        a, c = ins
        vector = len(shape_of(c)) == 1
        gc = _solve(_t(a), g, vector)
        if i == 1:
            return reduce_to(gc, shape_of(c), b, out)
        if vector:
            ga = np.multiply(gc[..., :, None], np.expand_dims(y, -2))
        else:
            ga = np.matmul(gc, _t(y))
        return reduce_to(np.negative(ga), shape_of(a), b, out)


SOLVE = _Solve()


class _LogAbsDet(Prim):
    """log |det A| (the second output of slogdet)."""

    name = "logabsdet"
    sparsity = staticmethod(patterns.per_matrix)

    def forward(self, a: Any, out: Any = None) -> Any:
        return into(out, np.linalg.slogdet(a)[1])

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        return np.sum(np.multiply(_t(INV(ins[0])), ts[0]), axis=(-2, -1), out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        return np.multiply(g[..., None, None], _t(INV(ins[0])), out=out)


LOGABSDET = _LogAbsDet()


class _Det(Prim):
    complex = HOLOMORPHIC
    name = "det"
    sparsity = staticmethod(patterns.per_matrix)

    def forward(self, a: Any, out: Any = None) -> Any:
        return into(out, np.linalg.det(a))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        trace = np.sum(np.multiply(_t(INV(ins[0])), ts[0]), axis=(-2, -1))
        return np.multiply(y, trace, out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        scale = np.multiply(g, y)
        return np.multiply(scale[..., None, None], _t(INV(ins[0])), out=out)


DET = _Det()
