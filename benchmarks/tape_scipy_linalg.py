"""AutoTape through scipy.linalg: each function's derivatives against Richardson-extrapolated central
differences (reverse and forward Jacobians, and the Hessian of a scalar of it), and the cost of a
prepared gradient against one call of f, for a small (3 x 3) and a larger (n x n) matrix.

    python benchmarks/tape_scipy_linalg.py [n]

The error is max |exact - Richardson| / max |Richardson| (Richardson of the tape's gradient for the
Hessian); the differences carry their own error, about 1e-10 relative here.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sl

import diface as di

REVERSE, FORWARD = di.AutoTape(mode="reverse"), di.AutoTape(mode="forward")


def richardson(f: Callable, x: np.ndarray, h: float = 1e-2, levels: int = 4) -> np.ndarray:
    """The Jacobian of f at x by central differences, extrapolated over h, h/2, h/4, ... (columns)."""
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = 1.0
        table = [
            (np.asarray(f(x + (h / 2**j) * e)) - np.asarray(f(x - (h / 2**j) * e))) / (2 * h / 2**j)
            for j in range(levels)
        ]
        for m in range(1, levels):
            table = [(4**m * table[j + 1] - table[j]) / (4**m - 1) for j in range(len(table) - 1)]
        cols.append(np.ravel(table[0]))
    return np.stack(cols, axis=-1)


def relative(a: Any, b: Any) -> float:
    a, b = np.asarray(a).reshape(np.shape(b)), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def matrix(n: int, seed: int = 0, shift: float = 0.0, symmetric: bool = False) -> np.ndarray:
    a = np.random.default_rng(seed).standard_normal((n, n)) / np.sqrt(n)
    return (a @ a.T + shift * np.eye(n)) if symmetric else a + shift * np.eye(n)


def families(n: int) -> dict[str, tuple[Callable, np.ndarray]]:
    """name: (f of a vector x, x), each f a scipy.linalg call on matrices built from x."""
    a0, s0 = matrix(n, 1, 1.5), matrix(n, 2, 1.0, symmetric=True)
    b0 = np.random.default_rng(3).standard_normal(n)
    w = np.random.default_rng(4).standard_normal(n * n)

    def mat(x: Any, base: np.ndarray) -> Any:
        return base + 0.3 * np.reshape(x, (n, n))

    def sym(x: Any) -> Any:
        m = mat(x, s0)
        return 0.5 * (m + m.T) + n * 0.2 * np.eye(n)

    x = 0.3 * np.random.default_rng(5).standard_normal(n * n)
    return {
        "expm": (lambda x: sl.expm(mat(x, 0.5 * a0)), x),
        "expm_frechet": (lambda x: sl.expm_frechet(mat(x, 0.5 * a0), np.reshape(w, (n, n)))[1], x),
        "logm": (lambda x: sl.logm(mat(x, s0 + np.eye(n))), x),
        "sqrtm": (lambda x: sl.sqrtm(mat(x, s0 + np.eye(n))), x),
        "solve": (lambda x: sl.solve(mat(x, a0), b0 + x[:n]), x),
        "solve pos": (lambda x: sl.solve(sym(x), b0, assume_a="pos"), x),
        "inv": (lambda x: sl.inv(mat(x, a0)), x),
        "det": (lambda x: sl.det(mat(x, a0)), x),
        "lstsq": (lambda x: sl.lstsq(np.reshape(x, (n, n))[:, : n - 1] + a0[:, : n - 1], b0)[0], x),
        "solve_triangular": (lambda x: sl.solve_triangular(mat(x, a0 + np.eye(n)), b0, lower=True), x),
        "lu_factor+lu_solve": (lambda x: sl.lu_solve(sl.lu_factor(mat(x, a0)), b0 + x[:n]), x),
        "cho_factor+cho_solve": (lambda x: sl.cho_solve(sl.cho_factor(sym(x)), b0 + x[:n]), x),
        "cholesky": (lambda x: sl.cholesky(sym(x)), x),
        "eigh": (lambda x: (lambda e: np.concatenate([e[0], np.ravel(e[1] ** 2)]))(sl.eigh(sym(x))), x),
        "svd": (lambda x: (lambda u, s, vh: np.concatenate([s, np.ravel(u**2)]))(*sl.svd(mat(x, a0))), x),
        "pinv": (lambda x: sl.pinv(mat(x, a0)[:, : n - 1]), x),
    }


def accuracy(n: int = 3) -> None:
    print(f"error against Richardson differences ({n} x {n})")
    print(f"{'function':22s} {'reverse J':>10s} {'forward J':>10s} {'Hessian':>10s}")
    for name, (f, x) in families(n).items():
        flat = lambda v, f=f: np.ravel(f(v))
        rich = richardson(flat, x)
        jr, jf = di.jacobian(flat, REVERSE, x), di.jacobian(flat, FORWARD, x)
        weights = np.cos(np.arange(rich.shape[0]) + 1.0)

        def g(v: Any, f: Callable = f, weights: np.ndarray = weights) -> Any:
            return np.sum(np.sin(np.ravel(f(v))) * weights)

        hrich = richardson(lambda v: di.gradient(g, REVERSE, v), x)
        h = di.hessian(g, REVERSE, x)
        print(f"{name:22s} {relative(jr, rich):10.1e} {relative(jf, rich):10.1e} {relative(h, hrich):10.1e}")


def cost(n: int) -> None:
    print(f"\nprepared gradient / one call of f ({n} x {n}; best of 5 x 20)")
    for name, (f, x) in families(n).items():

        def g(v: Any, f: Callable = f) -> Any:
            return np.sum(np.sin(np.ravel(f(v))))

        prep = di.prepare_gradient(g, REVERSE, x)
        other = x * 0.9

        def best(call: Callable) -> float:
            times = []
            for _ in range(5):
                t = time.perf_counter()
                for _ in range(20):
                    call()
                times.append((time.perf_counter() - t) / 20)
            return min(times)

        tf, tg = best(lambda g=g, other=other: g(other)), best(lambda p=prep, other=other: p.gradient(other))
        print(f"{name:22s} f {tf * 1e6:9.1f} us   gradient {tg * 1e6:9.1f} us   ratio {tg / tf:5.1f}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    accuracy(3)
    for size in (3, int(sys.argv[1]) if len(sys.argv) > 1 else 20):
        cost(size)
