"""Restarted GMRES over any array library: diface's own loop, for arrays without a library GMRES.

The Krylov vectors are arrays of the caller's library (`ArrayOps`), on their device; per iteration one
product `A v`, two rounds of classical Gram-Schmidt against the basis (two matrix-vector products with
the stacked basis) and one transfer of `restart + 1` numbers to the host, where the small Hessenberg
least-squares problem is kept in QR form by Givens rotations (Saad, *Iterative Methods for Sparse
Linear Systems*, 2nd ed., algorithm 6.9).

Shapes: `b` and `x0` are 1-D, `(n,)`; `matvec` maps `(n,)` to `(n,)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["gmres"]


def gmres(ops: Any, matvec: Callable[[Any], Any], b: Any, x0: Any, rtol: float, restart: int, cycles: int) -> Any:
    """`x` with `|A x - b| <= rtol |b|`, or the best found in `cycles` restarts of `restart` iterations
    (the caller checks the residual)."""
    bnorm = ops.norm(b)
    x = ops.zeros(b.shape, b.dtype, b) if x0 is None else x0
    if bnorm == 0.0:
        return x
    target = rtol * bnorm
    for _ in range(max(1, cycles)):
        r = b if x0 is None and _ == 0 else b - matvec(x)
        beta = ops.norm(r)
        if not beta > target:  # also stops on a non-finite residual: the caller reports it
            break
        x = x + _cycle(ops, matvec, r, beta, target, restart)
    return x


def _cycle(ops: Any, matvec: Callable[[Any], Any], r: Any, beta: float, target: float, restart: int) -> Any:
    """One GMRES cycle from residual `r` (norm `beta`): the correction to add to x."""
    m = max(1, restart)
    basis = [r / beta]
    R = np.zeros((m + 1, m))  # the Hessenberg matrix, rotated to upper triangular as it grows
    g = np.zeros(m + 1)
    g[0] = beta
    cs, sn = np.zeros(m), np.zeros(m)
    k = 0
    for j in range(m):
        w = matvec(basis[j])
        V = ops.stack(basis)
        h = ops.matmul(V, w)
        w = w - ops.matmul(h, V)
        h2 = ops.matmul(V, w)  # the second round keeps the basis orthogonal to working precision
        w = w - ops.matmul(h2, V)
        col = np.zeros(m + 1)
        col[: j + 1] = ops.to_numpy(h + h2)
        wnorm = col[j + 1] = ops.norm(w)
        for i in range(j):  # the earlier rotations, applied to the new column
            col[i], col[i + 1] = cs[i] * col[i] + sn[i] * col[i + 1], -sn[i] * col[i] + cs[i] * col[i + 1]
        denom = math.hypot(col[j], col[j + 1])
        cs[j], sn[j] = (1.0, 0.0) if denom == 0.0 else (col[j] / denom, col[j + 1] / denom)
        col[j], col[j + 1] = denom, 0.0
        g[j], g[j + 1] = cs[j] * g[j], -sn[j] * g[j]
        R[:, j] = col
        k = j + 1
        breakdown = not wnorm > 0.0 or not math.isfinite(g[j + 1])  # an invariant subspace, or NaN
        if abs(g[j + 1]) <= target or breakdown:
            break
        basis.append(w / wnorm)
    y = _back_substitute(R[:k, :k], g[:k])
    coefficients = ops.astype(ops.asarray(y, like=r), r.dtype)
    return ops.matmul(coefficients, ops.stack(basis[:k]))


def _back_substitute(U: np.ndarray, g: np.ndarray) -> np.ndarray:
    """`y` with `U y = g` for an upper-triangular `U`; a zero pivot (a singular A) gives a zero entry."""
    k = len(g)
    y = np.zeros(k)
    for i in range(k - 1, -1, -1):
        s = g[i] - U[i, i + 1 :] @ y[i + 1 :]
        y[i] = s / U[i, i] if U[i, i] != 0.0 else 0.0
    return y
