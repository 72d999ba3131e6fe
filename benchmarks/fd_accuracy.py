"""Accuracy of each finite-difference method on smooth test functions (figures for the docs).

Max relative error max|D - D_exact| / max|D_exact| of the gradient of
f(x) = sum(exp(sin(x)) * x) and of the Jacobian of g(x) = tanh(A @ x) + x**3 (n = 10), and of the
Hessian of f through SecondOrder(AutoFiniteDiff(outer), AutoFiniteDiff(inner)), in float64 and float32.

    python benchmarks/fd_accuracy.py
"""

from __future__ import annotations

import numpy as np

import diface as di
from diface._table import format_table
from diface.testing import _reference as ref

N = 10


def rel(d, exact):
    return float(np.max(np.abs(np.asarray(d, dtype=np.float64) - exact)) / np.max(np.abs(exact)))


def measure() -> list[list[str]]:
    x64 = np.random.default_rng(2).uniform(-1.5, 1.5, N)
    rows = []
    for dtype in (np.float64, np.float32):
        x = x64.astype(dtype)
        for method in ("forward", "backward", "central", "complex"):
            b = di.AutoFiniteDiff(method)
            hess = di.hessian(ref.exp_sin, b, x)
            rows.append(
                [
                    np.dtype(dtype).name,
                    method,
                    f"{rel(di.gradient(ref.exp_sin, b, x), ref.exp_sin_gradient(x64)):.1e}",
                    f"{rel(di.jacobian(ref.tanh_cubic, b, x), ref.tanh_cubic_jacobian(x64)):.1e}",
                    f"{rel(hess, ref.exp_sin_hessian(x64)):.1e}",
                ]
            )
    return rows


if __name__ == "__main__":
    print(format_table(["dtype", "method", "gradient", "jacobian", "hessian (same method nested)"], measure()))
