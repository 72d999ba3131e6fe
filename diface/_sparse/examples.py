"""Sparsity patterns of common Jacobians and Hessians, for tests, benchmarks and documentation.

>>> tridiagonal(4).to_dense().astype(int)
array([[1, 1, 0, 0],
       [1, 1, 1, 0],
       [0, 1, 1, 1],
       [0, 0, 1, 1]])
>>> laplacian_2d(100)
Pattern(shape=(10000, 10000), nnz=49600)
>>> brusselator_2d(32)
Pattern(shape=(2048, 2048), nnz=12288)
>>> total_variation_2d(4).to_dense().sum(1)
array([3, 5, 5, 3, 5, 7, 7, 3, 5, 7, 7, 3, 3, 3, 3, 1])
"""

from __future__ import annotations

import numpy as np

from ._pattern import INDEX, Pattern

__all__ = [
    "arrowhead",
    "banded",
    "block_diagonal",
    "brusselator_2d",
    "laplacian_2d",
    "random_pattern",
    "total_variation_2d",
    "tridiagonal",
]


def banded(n: int, lower: int = 1, upper: int = 1) -> Pattern:
    """(n, n), nonzero where `-lower <= j - i <= upper`."""
    i = np.repeat(np.arange(n, dtype=INDEX), lower + upper + 1)
    j = i + np.tile(np.arange(-lower, upper + 1, dtype=INDEX), n)
    keep = (j >= 0) & (j < n)
    return Pattern.from_coo(i[keep], j[keep], (n, n))


def tridiagonal(n: int) -> Pattern:
    """(n, n) tridiagonal: the Jacobian of a 1-D three-point stencil."""
    return banded(n, 1, 1)


def _grid_neighbours(nx: int, ny: int, periodic: bool) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the 5-point stencil on an nx-by-ny grid, points numbered row-major (i * ny + j)."""
    i, j = np.divmod(np.arange(nx * ny, dtype=INDEX), ny)
    rows, cols = [], []
    for di, dj in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)):
        a, b = i + di, j + dj
        if periodic:
            a, b, keep = a % nx, b % ny, np.ones(a.shape, dtype=bool)
        else:
            keep = (a >= 0) & (a < nx) & (b >= 0) & (b < ny)
        rows.append((i * ny + j)[keep])
        cols.append((a * ny + b)[keep])
    return np.concatenate(rows), np.concatenate(cols)


def laplacian_2d(nx: int, ny: int | None = None, periodic: bool = False) -> Pattern:
    """(nx·ny, nx·ny): the 5-point Laplacian on an nx-by-ny grid (row-major points), Dirichlet boundary
    (neighbours outside the grid left out) or `periodic`. Symmetric: also a Hessian pattern."""
    ny = nx if ny is None else ny
    rows, cols = _grid_neighbours(nx, ny, periodic)
    return Pattern.from_coo(rows, cols, (nx * ny, nx * ny))


def brusselator_2d(n: int = 32) -> Pattern:
    """(2n², 2n²): the residual of the 2-D Brusselator reaction-diffusion system on an n-by-n periodic grid,
    variables `[u.ravel(), v.ravel()]` (species-major, points row-major). Each species diffuses with the
    periodic 5-point stencil and reacts with the other species at the same point."""
    rows, cols = _grid_neighbours(n, n, periodic=True)
    size = n * n
    points = np.arange(size, dtype=INDEX)
    r = [rows, rows + size, points, points + size]  # u-u and v-v diffusion, u-v and v-u reaction
    c = [cols, cols + size, points + size, points]
    return Pattern.from_coo(np.concatenate(r), np.concatenate(c), (2 * size, 2 * size))


def arrowhead(n: int, width: int = 1) -> Pattern:
    """(n, n): `width` dense leading rows and columns, plus the diagonal. One-sided colorings need n
    colors; a bicoloring needs about 2·width + 1. Built from its nonzeros (O(n·width) memory)."""
    width = min(width, n)
    diagonal = np.arange(n, dtype=INDEX)
    lines = np.arange(width, dtype=INDEX)
    rows = np.concatenate([diagonal, np.repeat(lines, n), np.tile(diagonal, width)])
    cols = np.concatenate([diagonal, np.tile(diagonal, width), np.repeat(lines, n)])
    return Pattern.from_coo(rows, cols, (n, n))


def total_variation_2d(nx: int, ny: int | None = None) -> Pattern:
    """(nx·ny, nx·ny): the Hessian of the total variation `sum_ij sqrt((u[i+1,j] - u[i,j])² + (u[i,j+1] -
    u[i,j])²)` on an nx-by-ny grid (row-major points): each cell couples (i, j), (i+1, j) and (i, j+1)
    pairwise, so each point has up to 6 neighbours (a triangulated grid), plus the diagonal."""
    ny = nx if ny is None else ny
    i, j = np.divmod(np.arange(nx * ny, dtype=INDEX), ny)
    here = (i * ny + j)[(i < nx - 1) & (j < ny - 1)]
    down, right = here + ny, here + 1
    points = np.arange(nx * ny, dtype=INDEX)
    rows = np.concatenate([points, here, down, here, right, down, right])
    cols = np.concatenate([points, down, here, right, here, right, down])
    return Pattern.from_coo(rows, cols, (nx * ny, nx * ny))


def block_diagonal(blocks: int, size: int, m_size: int | None = None) -> Pattern:
    """(blocks·m_size, blocks·size): dense (m_size, size) blocks on the diagonal (m_size defaults to size)."""
    m_size = size if m_size is None else m_size
    b = np.repeat(np.arange(blocks, dtype=INDEX), m_size * size)
    local_i, local_j = np.divmod(np.tile(np.arange(m_size * size, dtype=INDEX), blocks), size)
    return Pattern.from_coo(b * m_size + local_i, b * size + local_j, (blocks * m_size, blocks * size))


def random_pattern(m: int, n: int, density: float, seed: int = 0, symmetric: bool = False) -> Pattern:
    """(m, n) with each entry nonzero with probability `density`; `symmetric` (square only) mirrors the
    upper triangle and keeps the whole diagonal, like a Hessian."""
    rng = np.random.default_rng(seed)
    dense = rng.random((m, n)) < density
    if symmetric:
        if m != n:
            raise ValueError("a symmetric pattern must be square")
        dense = np.triu(dense, 1)
        dense = dense | dense.T | np.eye(n, dtype=bool)
    return Pattern.from_dense(dense)
