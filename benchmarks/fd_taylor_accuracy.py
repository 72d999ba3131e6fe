"""Accuracy of AutoFiniteDiff's Taylor coefficients (orders 1 to 4) and of its error estimate.

Over six analytic functions (exp, sin, a polynomial, a rational function, exp(sin(x)), a tanh MLP) at 16
random points and directions each (x in [-1.5, 1.5]³, v in [-1, 1]³ times 0.3, 1.3 or 2.3), every
element of every coefficient: the true error |d - d_exact| relative to max(1, |d_exact|) (median and
95th percentile), the estimate in `prep.report.error` on the same scale (median), how often the estimate
covers the true error, and the median of estimate / true error. For comparison, the coefficients of the
core's default derivation (nested central-difference pushforwards, what AutoFiniteDiff gave before it
had Taylor coefficients of its own; the core refuses it beyond order 2). Last, the exact Laplacian
(five-point stencil) against the Laplacian derived from Taylor coefficients of order two, in relative
error and evaluations of f.

    python benchmarks/fd_taylor_accuracy.py
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import diface as di
from diface._backend import Backend
from diface._table import format_table

RNG = np.random.default_rng(7)
W1, B1 = RNG.standard_normal((4, 3)) / 2, RNG.standard_normal(4) / 2
W2 = RNG.standard_normal((2, 4)) / 2
A = np.array([0.5, -0.3, 0.8])
POLY = np.polynomial.Polynomial([-7.0, 1.0, 0.0, -2.0, 0.0, 3.0])


def _tanh_polys(k):
    polys = [np.polynomial.Polynomial([0.0, 1.0])]
    for _ in range(k):
        polys.append(polys[-1].deriv() * np.polynomial.Polynomial([1.0, 0.0, -1.0]))
    return polys


TANH = _tanh_polys(4)


def _exp_sin(x, v, j):
    s = [np.sin(x + i * np.pi / 2) * v**i / math.factorial(i) for i in range(j + 1)]
    e = [np.exp(s[0])]
    for k in range(1, j + 1):
        e.append(sum(i * s[i] * e[k - i] for i in range(1, k + 1)) / k)
    return e[j] * math.factorial(j)


CASES = {
    "exp": (np.exp, lambda x, v, j: np.exp(x) * v**j),
    "sin": (np.sin, lambda x, v, j: np.sin(x + j * np.pi / 2) * v**j),
    "polynomial": (POLY, lambda x, v, j: POLY.deriv(j)(x) * v**j),
    "rational": (
        lambda x: 1 / (1 + np.dot(A, x) ** 2),
        lambda x, v, j: np.imag((-1) ** j * math.factorial(j) * (np.dot(A, x) - 1j) ** -(j + 1)) * np.dot(A, v) ** j,
    ),
    "composition": (lambda x: np.exp(np.sin(x)), _exp_sin),
    "tanh MLP": (
        lambda x: W2 @ np.tanh(W1 @ x + B1),
        lambda x, v, j: W2 @ (TANH[j](np.tanh(W1 @ x + B1)) * (W1 @ v) ** j),
    ),
}


@dataclass(frozen=True)
class NestedFiniteDiff(di.AutoFiniteDiff):
    """AutoFiniteDiff with the core's defaults: Taylor coefficients from nested pushforwards, and Laplacians
    from those of order two (what AutoFiniteDiff gave before it had its own)."""

    def prepare_taylor(self, problem, tangents, order):
        return Backend.prepare_taylor(self, problem, tangents, order)

    def prepare_laplacian(self, problem, method):
        return Backend.prepare_laplacian(self, problem, method)


@dataclass(frozen=True)
class TaylorLaplacian(di.AutoFiniteDiff):
    """AutoFiniteDiff with the core's Laplacian from its own Taylor coefficients of order two."""

    def prepare_laplacian(self, problem, method):
        return Backend.prepare_laplacian(self, problem, method)


def points(n=16):
    rng = np.random.default_rng(3)
    for i in range(n):
        yield rng.uniform(-1.5, 1.5, 3), rng.uniform(-1.0, 1.0, 3) * (0.3 + (i % 3))


def taylor_rows(dtype) -> list[list[str]]:
    errs = {j: [] for j in range(1, 5)}
    ests = {j: [] for j in range(1, 5)}
    nested = {j: [] for j in range(1, 5)}
    for f, ref in CASES.values():
        x0 = np.zeros(3, dtype)
        prep = di.prepare_taylor(f, di.AutoFiniteDiff(), x0, x0, order=4)
        slow = di.prepare_taylor(f, NestedFiniteDiff(), x0, x0, order=2)  # the core refuses order > 2
        for x, v in points():
            xd, vd = x.astype(dtype), v.astype(dtype)
            _, series = prep.taylor(xd, vd)
            _, old = slow.taylor(xd, vd)
            xs, vs = xd.astype(np.float64), vd.astype(np.float64)  # the point actually differentiated at
            for j in range(1, 5):
                exact = ref(xs, vs, j)
                scale = np.maximum(1.0, np.abs(exact))
                errs[j].extend(np.ravel(np.abs(series[j - 1] - exact) / scale))
                ests[j].extend(np.ravel(prep.report.error[0][j - 1] / scale))
                if j <= 2:
                    nested[j].extend(np.ravel(np.abs(old[j - 1] - exact) / scale))
    rows = []
    for j in range(1, 5):
        e, s, n = np.array(errs[j]), np.array(ests[j]), np.array(nested[j])
        rows.append(
            [
                np.dtype(dtype).name,
                str(j),
                f"{np.median(e):.1e}",
                f"{np.quantile(e, 0.95):.1e}",
                f"{np.median(s):.1e}",
                f"{np.mean(e <= s):.3f}",
                f"{np.median(s / np.maximum(e, 1e-300)):.0f}",
                f"{np.median(n):.1e}" if len(n) else "refused",
            ]
        )
    return rows


def laplacian_rows() -> list[list[str]]:
    f = lambda x: np.sum(np.exp(np.sin(x)) * x) + np.prod(x)
    rows = []
    for n in (3, 10):
        x = np.random.default_rng(n).uniform(-1.5, 1.5, n)
        exact = np.trace(di.hessian(f, di.AutoTape(), x))
        for name, backend in (
            ("five-point stencil", di.AutoFiniteDiff()),
            ("order-2 Taylor (Richardson)", TaylorLaplacian()),
            ("order-2 Taylor, nested", NestedFiniteDiff()),
        ):
            calls = []

            def counted(x, calls=calls):
                calls.append(1)
                return f(x)

            prep = di.prepare_laplacian(counted, backend, x)
            calls.clear()
            err = abs(prep.laplacian(x) - exact) / max(1.0, abs(exact))
            rows.append([str(n), name, f"{err:.1e}", str(len(calls))])
    return rows


if __name__ == "__main__":
    headers = ["dtype", "order", "error (median)", "error (95%)", "estimate (median)", "covered", "estimate/error",
               "nested (median)"]  # fmt: skip
    print(format_table(headers, taylor_rows(np.float64) + taylor_rows(np.float32)))
    print()
    print(format_table(["n", "Laplacian", "relative error", "evaluations of f"], laplacian_rows()))
