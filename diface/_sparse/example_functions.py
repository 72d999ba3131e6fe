"""Functions whose Jacobians (or Hessians) have the patterns of `examples`: the PDE residuals and energies
the sparse machinery is measured on, written once for any array namespace `xp` (NumPy, `jax.numpy`,
`torch`), so that a test or a benchmark runs the same f on every engine.

Each maker returns `(f, n)`: f takes a flat x of n elements.

>>> import numpy as np, diface as di
>>> from diface._sparse import examples, example_functions as ef
>>> f, n = ef.brusselator_2d(np, 8)
>>> prep = di.prepare_jacobian(f, di.AutoSparse(di.AutoTape()), np.linspace(0.1, 1.0, n))
>>> prep.sparsity_pattern.nnz == examples.brusselator_2d(8).nnz, prep.ncolors <= 10
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["arrowhead", "brusselator_2d", "laplacian_2d", "stencil_1d", "total_variation_2d"]

Maker = tuple[Callable[[Any], Any], int]


def stencil_1d(xp: Any, n: int) -> Maker:
    """A three-point stencil with a quadratic term, (n - 2) outputs: `examples.tridiagonal` less its
    first and last rows."""

    def f(x: Any) -> Any:
        return x[2:] - 2 * x[1:-1] + x[:-2] + x[1:-1] ** 2

    return f, n


def laplacian_2d(xp: Any, m: int) -> Maker:
    """The 5-point Laplacian on an m-by-m grid (zero Dirichlet boundary) plus a cubic term:
    `examples.laplacian_2d(m)`."""

    def f(x: Any) -> Any:
        u = _pad(xp, x.reshape(m, m))
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1]
        return lap.reshape(-1) + x**3

    return f, m * m


def _pad(xp: Any, u: Any) -> Any:
    """u with a ring of zeros, by concatenation (every namespace has it; `pad` is spelled differently)."""
    zc = xp.zeros_like(u[:, :1])
    u = xp.concatenate([zc, u, zc], 1)
    zr = xp.zeros_like(u[:1, :])
    return xp.concatenate([zr, u, zr], 0)


def brusselator_2d(xp: Any, m: int, alpha: float = 10.0) -> Maker:
    """The 2-D Brusselator reaction-diffusion residual on a periodic m-by-m grid, two species:
    `examples.brusselator_2d(m)`, n = 2m²."""
    h = 1.0 / (m - 1)

    def lap(w: Any) -> Any:
        near = xp.roll(w, 1, 0) + xp.roll(w, -1, 0) + xp.roll(w, 1, 1) + xp.roll(w, -1, 1)
        return (near - 4 * w) / h**2

    def f(x: Any) -> Any:
        u, v = x[: m * m].reshape(m, m), x[m * m :].reshape(m, m)
        du = 1.0 + u * u * v - 4.4 * u + alpha * lap(u)
        dv = 3.4 * u - u * u * v + alpha * lap(v)
        return xp.concatenate([du.reshape(-1), dv.reshape(-1)])

    return f, 2 * m * m


def arrowhead(xp: Any, n: int) -> Maker:
    """y₀ = Σ x, yᵢ = x₀ + xᵢ²: `examples.arrowhead(n)`, one dense row and one dense column."""

    def f(x: Any) -> Any:
        return xp.concatenate([xp.sum(x).reshape(1), x[0] + x[1:] ** 2])

    return f, n


def total_variation_2d(xp: Any, m: int, eps: float = 1e-2) -> Maker:
    """A smoothed total-variation energy of an m-by-m image (scalar): Σ √((∂ᵢu)² + (∂ⱼu)² + ε) with
    forward differences. Each cell couples (i, j), (i+1, j) and (i, j+1): its Hessian has 7 nonzeros a
    row inside the grid (a triangulated grid), which greedy star colorings cover with 8 or 9 colors (no
    periodic star coloring has fewer than 7) and acyclic ones with 4 or 5."""

    def f(x: Any) -> Any:
        u = x.reshape(m, m)
        di = u[1:, :-1] - u[:-1, :-1]
        dj = u[:-1, 1:] - u[:-1, :-1]
        return xp.sum(xp.sqrt(di**2 + dj**2 + eps))

    return f, m * m
