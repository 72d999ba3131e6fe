"""Jacobian-free Newton-Krylov: each Newton step solved by GMRES on `di.jacobian_operator`.

The same 2-D Bratu problem as the sparse Newton recipe, without forming J: `jacobian_operator`
linearizes the residual once at each iterate (the tape records the forward pass), and GMRES applies J by
pushforwards. A cheap preconditioner (the inverse of the Laplacian part, by a fast sine transform) keeps
the Krylov iterations few.

    python docs/recipes/newton_krylov.py
"""

import time

import numpy as np
from scipy.fft import dstn, idstn
from scipy.sparse.linalg import LinearOperator, gmres

import diface as di

m = 100
h = 1.0 / (m + 1)
lam = 6.0
n = m * m


def residual(u):
    U = u.reshape(m, m)
    P = np.pad(U, 1)
    laplacian = (P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4.0 * U) / h**2
    return (-laplacian - lam * np.exp(U)).reshape(-1)


# -Δ's eigenvalues on the grid: its inverse is a division in the sine basis
k = np.arange(1, m + 1)
eigen = (4.0 / h**2) * (np.sin(k * np.pi * h / 2) ** 2)
eigen = eigen[:, None] + eigen[None, :]
inverse_laplacian = LinearOperator(
    (n, n), matvec=lambda r: idstn(dstn(r.reshape(m, m), type=1) / eigen, type=1).reshape(-1)
)

u = np.zeros(n)
products = 0
start = time.perf_counter()
for step in range(20):
    F = residual(u)
    norm = np.linalg.norm(F) * h
    if norm < 1e-10:
        break
    J = di.jacobian_operator(residual, di.AutoTape(), u)  # J at u: products only, never formed
    residuals: list = []
    du, info = gmres(J, -F, M=inverse_laplacian, rtol=1e-12, callback=residuals.append)
    assert info == 0
    products += len(residuals)
    print(f"  step {step}: |F| = {norm:.3e}, {len(residuals)} GMRES iterations")
    u = u + du
print(
    f"JFNK: {step} Newton steps, {products} Jacobian-vector products in all, {time.perf_counter() - start:.2f} s; "
    f"max u = {u.max():.6f}"
)
assert norm < 1e-10
