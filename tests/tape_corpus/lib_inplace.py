"""In-place NumPy programs of our own, written as people write simulations: time stepping into a
preallocated trajectory, finite-element assembly with `np.add.at` and a solve, a finite-volume update
of a slice, Gauss-Seidel sweeps element by element, masked writes, `np.copyto`, ufuncs with `out=`,
writes through views, buffers from `np.empty`/`np.ones`/`np.full`, conversions at the top of a
function, and the scalar escapes (`math.exp`, `float`, `.item()`, `.tolist()`) that the tape must
either follow or refuse. Masked points: night-time (a zenith beyond 90°) and negative entries."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import Case

LIBRARY = "inplace"
MODULE = None

STEPS = 20


def _oscillator(y: Any, k: Any) -> Any:
    return np.array([y[1], -k * y[0] - 0.1 * y[1]])


def euler(x: np.ndarray) -> Any:
    """Explicit Euler for a damped oscillator, the trajectory preallocated and filled row by row."""
    h, n = 0.05, STEPS
    Y = np.zeros((n + 1, 2))
    Y[0] = x[:2]
    for i in range(n):
        Y[i + 1] = Y[i] + h * _oscillator(Y[i], x[2])
    return Y[-1]


def rk4(x: np.ndarray) -> Any:
    """Classical Runge-Kutta with the stages in a preallocated (4, 2) buffer."""
    h, n = 0.1, STEPS
    Y = np.empty((n + 1, 2))
    K = np.empty((4, 2))
    Y[0, 0], Y[0, 1] = x[0], x[1]
    for i in range(n):
        y = Y[i]
        K[0] = _oscillator(y, x[2])
        K[1] = _oscillator(y + 0.5 * h * K[0], x[2])
        K[2] = _oscillator(y + 0.5 * h * K[1], x[2])
        K[3] = _oscillator(y + h * K[2], x[2])
        Y[i + 1] = y + h / 6 * (K[0] + 2 * K[1] + 2 * K[2] + K[3])
    return Y[::5].ravel()


def lotka_volterra_views(x: np.ndarray) -> Any:
    """Predator-prey with symplectic Euler, each new row written through a view (`row[:] = ...`)."""
    a, b = x[2], x[3]
    h, n = 0.02, STEPS
    Y = np.empty((n + 1, 2))
    Y[0] = x[:2]
    for i in range(n):
        row = Y[i + 1]
        row[:] = Y[i]
        row[0] += h * (a * row[0] - 0.4 * row[0] * row[1])
        row[1] += h * (0.2 * row[0] * row[1] - b * row[1])
    return Y[-1]


def _stiffness(kappa: Any, n: int) -> Any:
    K = np.zeros((n + 1, n + 1))
    local = np.array([[1.0, -1.0], [-1.0, 1.0]])
    for e in range(n):
        idx = np.array([e, e + 1])
        np.add.at(K, (idx[:, None], idx[None, :]), kappa[e] * n * local)
    return K


def fem_assembly_solve(x: np.ndarray) -> Any:
    """1-D finite elements: element conductivities x, assembled with np.add.at, Dirichlet rows written
    in place, then np.linalg.solve."""
    n = x.size
    K = _stiffness(x, n)
    F = np.full(n + 1, 1.0 / n)
    K[0, :] = 0.0
    K[0, 0] = 1.0
    F[0] = 0.0
    return np.linalg.solve(K, F)


def fem_assembly_vectorised(x: np.ndarray) -> Any:
    """The same assembly in one np.add.at over all elements (index arrays), Neumann at the right."""
    n = x.size
    rows = np.stack([np.arange(n), np.arange(n), np.arange(1, n + 1), np.arange(1, n + 1)], axis=1).ravel()
    cols = np.stack([np.arange(n), np.arange(1, n + 1), np.arange(n), np.arange(1, n + 1)], axis=1).ravel()
    vals = (x[:, None] * n * np.array([1.0, -1.0, -1.0, 1.0])).ravel()
    K = np.zeros((n + 1, n + 1))
    np.add.at(K, (rows, cols), vals)
    K[0] = 0.0
    K[0, 0] = 1.0
    F = np.ones(n + 1) / n
    F[0] = 0.0
    u = np.linalg.solve(K, F)
    return u[1:]


def finite_volume(x: np.ndarray) -> Any:
    """Upwind advection-diffusion: cell values updated by `U[1:-1] += ...`, ghost cells copied each step."""
    U = np.zeros(x.size + 2)
    U[1:-1] = x
    c, nu = 0.4, 0.2
    for _ in range(STEPS):
        U[0] = U[1]
        U[-1] = U[-2]
        flux = c * U[:-1]
        U[1:-1] += -(flux[1:] - flux[:-1]) + nu * (U[2:] - 2 * U[1:-1] + U[:-2])
    return U[1:-1]


A_SPD = np.array([[4.0, 1.0, 0.0, 0.5], [1.0, 3.0, 0.5, 0.0], [0.0, 0.5, 5.0, 1.0], [0.5, 0.0, 1.0, 4.0]])


def gauss_seidel(x: np.ndarray) -> Any:
    """Gauss-Seidel sweeps writing `u[i] = ...` element by element (right-hand side x)."""
    u = np.zeros(4)
    for _ in range(25):
        for i in range(4):
            u[i] = (x[i] - A_SPD[i, :i] @ u[:i] - A_SPD[i, i + 1 :] @ u[i + 1 :]) / A_SPD[i, i]
    return u


def jacobi_copyto(x: np.ndarray) -> Any:
    """Jacobi iterations with the previous iterate kept by np.copyto."""
    u = np.zeros(4)
    old = np.empty(4)
    d = np.diag(A_SPD)
    R = A_SPD - np.diag(d)
    for _ in range(40):
        np.copyto(old, u)
        u[:] = (x - R @ old) / d
    return u


def masked_write(x: np.ndarray) -> Any:
    """`Y[mask] = v` with a mask that depends on x (which entries are positive)."""
    Y = np.zeros(x.size)
    positive = x > 0
    Y[positive] = x[positive] ** 2
    Y[~positive] = -0.5 * x[~positive]
    return Y


def irradiance_night(x: np.ndarray) -> Any:
    """A day's irradiance from zenith angles: zero at night, written into a buffer by mask."""
    ghi = np.zeros_like(x)
    day = x < 90.0
    ghi[day] = 1100.0 * np.cos(np.radians(x[day])) ** 1.15
    return ghi


def ufunc_out(x: np.ndarray) -> Any:
    """Ufuncs writing into one buffer with out=."""
    buf = np.empty(x.size)
    np.multiply(x, x, out=buf)
    np.add(buf, 1.0, out=buf)
    np.sqrt(buf, out=buf)
    np.log(buf, out=buf)
    return buf


def ufunc_out_where(x: np.ndarray) -> Any:
    """np.divide(..., out=buf, where=mask): the entries not selected keep the buffer's value."""
    buf = np.full(x.size, 1.0)
    np.divide(1.0, x, out=buf, where=np.abs(x) > 0.5)
    return buf * x


def view_writes(x: np.ndarray) -> Any:
    """Writes through a row view, a strided slice and a transposed view."""
    Y = np.zeros((3, x.size))
    row = Y[1]
    row[:] = np.sin(x)
    Y[2, ::2] = x[::2] ** 2
    Y.T[:, 0] = x * 3.0
    return Y.sum(axis=0)


def full_and_ones(x: np.ndarray) -> Any:
    """np.full and np.ones buffers updated with *= and += slices."""
    Y = np.full(x.size, 2.0)
    Y[1:] *= x[:-1]
    Z = np.ones((2, x.size))
    Z[0] += Y
    Z[1, :] = Z[0] * x
    return Z.ravel()


def cumulative_loop(x: np.ndarray) -> Any:
    """A running product written element by element."""
    P = np.ones(x.size)
    for i in range(1, x.size):
        P[i] = P[i - 1] * x[i] + 0.1 * x[i - 1]
    return P


def converted_at_the_top(x: np.ndarray) -> Any:
    """np.asarray(x, dtype=float) and np.array(x, copy=True) at the top, then in-place centring."""
    x = np.asarray(x, dtype=float)
    y = np.array(x, copy=True)
    y -= y.mean()
    y *= y
    return y + np.atleast_1d(x)[0]


def math_exp(x: np.ndarray) -> Any:
    """math.exp and math.sin of entries of x."""
    return np.array([math.exp(x[0]) * x[1], math.sin(x[1]) + x[2], math.sqrt(x[2])])


def float_escape(x: np.ndarray) -> Any:
    """float(x[0]) used as a number."""
    a = float(x[0])
    return x * a + a**2


def item_escape(x: np.ndarray) -> Any:
    """.item() of an entry of x."""
    return x * x[1].item()


def tolist_escape(x: np.ndarray) -> Any:
    """.tolist() and a list comprehension over Python floats."""
    values = x.tolist()
    return np.array([v**2 + 1.0 for v in values])


def python_loop_over_entries(x: np.ndarray) -> Any:
    """Iterating over x and building a list of arrays, then np.array of the list."""
    out = []
    for xi in x:
        out.append(np.exp(-xi) * xi)
    return np.array(out)


def put_and_fill_diagonal(x: np.ndarray) -> Any:
    """np.put into a buffer, then np.fill_diagonal of a matrix with traced values and a solve."""
    d = np.zeros(x.size)
    np.put(d, np.arange(x.size), 2.0 + x**2)
    A = np.full((x.size, x.size), 0.1)
    np.fill_diagonal(A, d)
    return np.linalg.solve(A, np.ones(x.size))


def gaussian_elimination(x: np.ndarray) -> Any:
    """Gaussian elimination in place on a matrix built from x (`A[i] -= f * A[k]`), back substitution
    element by element."""
    n = x.size
    A = np.eye(n) * 4.0 + np.outer(x, np.ones(n)) * 0.1
    b = x.copy()
    for k in range(n):
        for i in range(k + 1, n):
            factor = A[i, k] / A[k, k]
            A[i, k:] -= factor * A[k, k:]
            b[i] -= factor * b[k]
    u = np.zeros(n)
    for i in range(n - 1, -1, -1):
        u[i] = (b[i] - A[i, i + 1 :] @ u[i + 1 :]) / A[i, i]
    return u


def scatter_add_weights(x: np.ndarray) -> Any:
    """Binning weighted values into cells with np.add.at (fixed cell indices)."""
    cells = np.array([0, 2, 1, 2, 0])
    out = np.zeros(3)
    np.add.at(out, cells, x * np.array([1.0, 0.5, 2.0, 1.5, 1.0]))
    return out


def sort_in_place(x: np.ndarray) -> Any:
    """y.sort() of a copy, weighted by rank."""
    y = x.copy()
    y.sort()
    return y * np.arange(1, x.size + 1)


def leapfrog_swap(x: np.ndarray) -> Any:
    """The wave equation by leapfrog, three buffers rotated by swapping names, the new one written in place."""
    n = x.size
    prev, cur = x.copy(), x.copy()
    nxt = np.empty(n)
    r2 = 0.25
    for _ in range(STEPS):
        nxt[1:-1] = 2 * cur[1:-1] - prev[1:-1] + r2 * (cur[2:] - 2 * cur[1:-1] + cur[:-2])
        nxt[0] = nxt[-1] = 0.0
        prev, cur, nxt = cur, nxt, prev
    return cur


def newton_while(x: np.ndarray) -> Any:
    """Cube roots by Newton's method with a while loop on the residual (a branch on traced values)."""
    y = np.ones(x.size)
    while np.max(np.abs(y**3 - x)) > 1e-13:
        y = y - (y**3 - x) / (3 * y**2)
    return y


def clip_out(x: np.ndarray) -> Any:
    """np.clip into a buffer with out=, then an in-place power."""
    buf = np.empty(x.size)
    np.clip(x, 0.2, 0.8, out=buf)
    buf **= 2
    return buf


def explicit_heat_2d(x: np.ndarray) -> Any:
    """Explicit heat equation on a 4 x 4 grid: the interior updated in place with a 5-point stencil,
    boundary values (x) written into the frame each step."""
    T = np.zeros((4, 4))
    for _ in range(10):
        T[0, :] = x[0]
        T[-1, :] = x[1]
        T[:, 0] = x[2]
        T[:, -1] = x[3]
        T[1:-1, 1:-1] += 0.2 * (T[2:, 1:-1] + T[:-2, 1:-1] + T[1:-1, 2:] + T[1:-1, :-2] - 4 * T[1:-1, 1:-1])
    return T[1:-1, 1:-1].ravel()


#: name -> (f, x0, x1, masked points)
PROGRAMS: dict[str, tuple[Callable[[np.ndarray], Any], list[float], list[float], tuple[list[float], ...]]] = {
    "euler": (euler, [1.0, 0.0, 2.0], [0.8, 0.3, 1.5], ()),
    "rk4": (rk4, [1.0, 0.0, 2.0], [0.8, 0.3, 1.5], ()),
    "lotka_volterra_views": (lotka_volterra_views, [2.0, 1.0, 0.6, 0.3], [1.5, 1.2, 0.5, 0.4], ()),
    "fem_assembly_solve": (fem_assembly_solve, [1.0, 2.0, 1.5, 0.8], [1.2, 0.7, 2.2, 1.1], ()),
    "fem_assembly_vectorised": (fem_assembly_vectorised, [1.0, 2.0, 1.5, 0.8], [1.2, 0.7, 2.2, 1.1], ()),
    "finite_volume": (finite_volume, [0.0, 1.0, 0.5, 0.2], [0.3, 0.8, 0.9, 0.1], ()),
    "gauss_seidel": (gauss_seidel, [1.0, 2.0, 0.5, 1.5], [0.4, 1.1, 2.0, 0.3], ()),
    "jacobi_copyto": (jacobi_copyto, [1.0, 2.0, 0.5, 1.5], [0.4, 1.1, 2.0, 0.3], ()),
    "masked_write": (masked_write, [0.5, -0.3, 1.2, 0.8], [0.9, 0.4, -0.7, 1.1], ([-0.5, 0.6, -0.2, -1.0],)),
    "irradiance_night": (irradiance_night, [30.0, 50.0, 70.0], [40.0, 20.0, 60.0], ([40.0, 100.0, 120.0],)),
    "ufunc_out": (ufunc_out, [0.5, -0.3, 1.2], [0.9, 0.4, -0.7], ()),
    "ufunc_out_where": (ufunc_out_where, [0.8, -0.9, 1.2], [0.9, 1.4, -0.7], ([0.2, 1.4, -0.1],)),
    "view_writes": (view_writes, [0.5, -0.3, 1.2, 0.8], [0.9, 0.4, -0.7, 1.1], ()),
    "full_and_ones": (full_and_ones, [0.5, -0.3, 1.2], [0.9, 0.4, -0.7], ()),
    "cumulative_loop": (cumulative_loop, [0.5, 1.3, 1.2, 0.8], [0.9, 0.4, 1.7, 1.1], ()),
    "converted_at_the_top": (converted_at_the_top, [0.5, -0.3, 1.2], [0.9, 0.4, -0.7], ()),
    "math_exp": (math_exp, [0.5, 0.3, 1.2], [0.9, 0.4, 0.7], ()),
    "float_escape": (float_escape, [0.5, -0.3, 1.2], [0.9, 0.4, -0.7], ()),
    "item_escape": (item_escape, [0.5, -0.3, 1.2], [0.9, 0.4, -0.7], ()),
    "tolist_escape": (tolist_escape, [0.5, -0.3, 1.2], [0.9, 0.4, -0.7], ()),
    "python_loop_over_entries": (python_loop_over_entries, [0.5, -0.3, 1.2], [0.9, 0.4, -0.7], ()),
    "put_and_fill_diagonal": (put_and_fill_diagonal, [0.5, -0.3, 1.2], [0.9, 0.4, -0.7], ()),
    "gaussian_elimination": (gaussian_elimination, [0.5, -0.3, 1.2, 0.8], [0.9, 0.4, -0.7, 1.1], ()),
    "scatter_add_weights": (scatter_add_weights, [0.5, -0.3, 1.2, 0.8, 0.1], [0.9, 0.4, -0.7, 1.1, 0.6], ()),
    "sort_in_place": (sort_in_place, [0.5, -0.3, 1.2, 0.8], [0.9, 0.4, -0.7, 1.1], ([1.1, 0.4, -0.7, 0.9],)),
    "leapfrog_swap": (leapfrog_swap, [0.0, 0.5, 1.0, 0.4, 0.0], [0.0, 0.7, 0.6, 0.9, 0.0], ()),
    "newton_while": (newton_while, [2.0, 5.0, 9.0], [3.0, 1.5, 7.0], ()),
    "clip_out": (clip_out, [0.5, 0.3, 1.2], [0.9, 0.4, 0.7], ([0.1, 0.5, 0.9],)),
    "explicit_heat_2d": (explicit_heat_2d, [1.0, 0.0, 0.5, 0.2], [0.3, 0.8, 0.9, 0.1], ()),
}


def cases() -> list[Case]:
    return [
        Case(
            LIBRARY,
            name,
            f,
            np.array(x0, dtype=float),
            np.array(x1, dtype=float),
            tuple(np.array(m, dtype=float) for m in masked),
        )
        for name, (f, x0, x1, masked) in PROGRAMS.items()
    ]
