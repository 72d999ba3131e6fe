"""Accuracy of each finite-difference method on smooth test functions (figures for the docs).

Max relative error max|D - D_exact| / max|D_exact| of the gradient of
f(x) = sum(exp(sin(x)) * x) and of the Jacobian of g(x) = tanh(A @ x) + x**3 (n = 10), and of the
Hessian of f through SecondOrder(AutoFiniteDiff(outer), AutoFiniteDiff(inner)), in float64 and float32.

    python benchmarks/fd_accuracy.py
"""

from __future__ import annotations

import numpy as np

import diface as di
from diface._tour import format_table

N = 10
A = np.random.default_rng(1).standard_normal((N, N)) / np.sqrt(N)


def f(x):
    return np.sum(np.exp(np.sin(x)) * x)


def grad_f(x):
    return np.exp(np.sin(x)) * (1 + x * np.cos(x))


def hess_f(x):
    e, c, s = np.exp(np.sin(x)), np.cos(x), np.sin(x)
    return np.diag(e * c * (1 + x * c) + e * (c - x * s))


def g(x):
    return np.tanh(A.astype(x.dtype) @ x) + x**3


def jac_g(x):
    return (1 - np.tanh(A @ x) ** 2)[:, None] * A + np.diag(3 * x**2)


def rel(d, exact):
    return float(np.max(np.abs(np.asarray(d, dtype=np.float64) - exact)) / np.max(np.abs(exact)))


def measure() -> list[list[str]]:
    x64 = np.random.default_rng(2).uniform(-1.5, 1.5, N)
    rows = []
    for dtype in (np.float64, np.float32):
        x = x64.astype(dtype)
        for method in ("forward", "backward", "central", "complex"):
            b = di.AutoFiniteDiff(method)
            hess = di.hessian(f, b, x)
            rows.append(
                [
                    np.dtype(dtype).name,
                    method,
                    f"{rel(di.gradient(f, b, x), grad_f(x64)):.1e}",
                    f"{rel(di.jacobian(g, b, x), jac_g(x64)):.1e}",
                    f"{rel(hess, hess_f(x64)):.1e}",
                ]
            )
    return rows


if __name__ == "__main__":
    print(format_table(["dtype", "method", "gradient", "jacobian", "hessian (same method nested)"], measure()))
