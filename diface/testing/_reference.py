"""Smooth NumPy test functions with analytic derivatives, for accuracy checks and benchmarks."""

from __future__ import annotations

import numpy as np

__all__ = ["MATRIX", "exp_sin", "exp_sin_gradient", "exp_sin_hessian", "tanh_cubic", "tanh_cubic_jacobian"]

#: the fixed (10, 10) matrix of `tanh_cubic`
MATRIX = np.random.default_rng(1).standard_normal((10, 10)) / np.sqrt(10)


def exp_sin(x: np.ndarray) -> np.ndarray:
    """sum(exp(sin(x)) * x): array -> scalar."""
    return np.sum(np.exp(np.sin(x)) * x)


def exp_sin_gradient(x: np.ndarray) -> np.ndarray:
    return np.exp(np.sin(x)) * (1 + x * np.cos(x))


def exp_sin_hessian(x: np.ndarray) -> np.ndarray:
    e, c, s = np.exp(np.sin(x)), np.cos(x), np.sin(x)
    return np.diag(e * c * (1 + x * c) + e * (c - x * s))


def tanh_cubic(x: np.ndarray) -> np.ndarray:
    """tanh(MATRIX @ x) + x**3: (10,) -> (10,), in x's dtype."""
    return np.tanh(MATRIX.astype(x.dtype) @ x) + x**3


def tanh_cubic_jacobian(x: np.ndarray) -> np.ndarray:
    return (1 - np.tanh(MATRIX @ x) ** 2)[:, None] * MATRIX + np.diag(3 * x**2)
