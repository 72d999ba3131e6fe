"""Newton's method with a sparse Jacobian: `AutoSparse` + `scipy.sparse.linalg.spsolve`.

The 2-D Bratu problem `-Δu = λ exp(u)` on the unit square (zero on the boundary), discretized by
finite differences on an m x m grid: n = m² unknowns, a Jacobian with 5 nonzeros per row. `AutoSparse`
traces the pattern from the NumPy code once, colors it (5 colors instead of n columns), and every
Newton step costs 5 Jacobian-vector products and one sparse LU.

    python docs/recipes/sparse_newton.py
"""

import time

import numpy as np
from scipy.sparse.linalg import spsolve

import diface as di

m = 100
h = 1.0 / (m + 1)
lam = 6.0


def residual(u):
    """F(u) = -Δu - λ exp(u), with u = 0 outside the grid."""
    U = u.reshape(m, m)
    P = np.pad(U, 1)
    laplacian = (P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4.0 * U) / h**2
    return (-laplacian - lam * np.exp(U)).reshape(-1)


n = m * m
start = time.perf_counter()
prep = di.prepare_jacobian(residual, di.AutoSparse(di.AutoTape()), np.zeros(n))
print(f"2-D Bratu, λ = {lam}, {m} x {m} grid: n = {n} unknowns")
print(
    f"preparation (trace, pattern, coloring): {time.perf_counter() - start:.2f} s, {prep.ncolors} colors, "
    f"{prep.sparsity_pattern.nnz} nonzeros"
)

u = np.zeros(n)
start = time.perf_counter()
for step in range(20):
    F, J = prep.value_and_jacobian(u)  # J: scipy.sparse.csr_array
    norm = np.linalg.norm(F) * h
    print(f"  step {step}: |F| = {norm:.3e}")
    if norm < 1e-10:
        break
    u = u - spsolve(J.tocsc(), F)
print(f"Newton: {step} steps in {time.perf_counter() - start:.2f} s; max u = {u.max():.6f}")
assert norm < 1e-10 and np.linalg.norm(residual(u)) * h < 1e-10
U = u.reshape(m, m)
assert np.allclose(U, U.T) and np.allclose(U, U[::-1]) and U.min() > 0  # the square's symmetry, positive
