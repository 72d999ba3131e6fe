"""SciPy's root finders and minimizers inside f on AutoTape (implicit differentiation): accuracy and cost.

For y(p), the root of y^3 + a y - b = 0 (p = (a, b); for the minimizers the optimum of
y^4/4 + a y^2/2 - b y), each solver's gradient in reverse and forward mode and its Hessian are compared
with Richardson-extrapolated central differences of the root re-solved by the same SciPy call at p +- h
(max |D - D_fd| / max |D_fd|; the differences carry the solver's own tolerance divided by h), with
the implicit function theorem's derivatives written out at the root the solver returned (both modes,
both Hessians: the tape should agree to rounding), and with those of the true root (the derivative of
the root a solver returned is off by about the solver's error in the root). Cost: a prepared gradient
(`prep.gradient` at another point) and a prepared Hessian against one call of f with plain NumPy and
SciPy.

    python benchmarks/tape_implicit.py
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.optimize as so

import diface as di
from diface._table import format_table

P0, P1 = np.array([2.0, 1.5]), np.array([1.8, 1.2])
BRACKET = (-5.0, 5.0)


def residual(y: Any, a: Any, b: Any) -> Any:
    return y**3 + a * y - b


def objective(y: Any, a: Any, b: Any) -> Any:
    return np.sum(y**4 / 4 + a * y**2 / 2 - b * y)


SOLVERS: dict[str, Callable[[Any], Any]] = {
    "brentq": lambda p: so.brentq(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "brenth": lambda p: so.brenth(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "ridder": lambda p: so.ridder(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "bisect": lambda p: so.bisect(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "toms748": lambda p: so.toms748(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "newton (secant)": lambda p: so.newton(residual, 0.5, args=(p[0], p[1]), tol=1e-14),
    "newton fprime": lambda p: so.newton(residual, 0.5, fprime=lambda y, a, b: 3 * y**2 + a, args=(p[0], p[1])),
    "newton array": lambda p: so.newton(residual, np.array([0.5, 0.6]), args=(p[0], p[1]), tol=1e-14)[0],
    "root_scalar": lambda p: so.root_scalar(residual, args=(p[0], p[1]), bracket=BRACKET, xtol=1e-15).root,
    "fsolve": lambda p: so.fsolve(residual, np.array([0.5]), args=(p[0], p[1]), xtol=1e-12)[0],
    "root hybr": lambda p: so.root(residual, np.array([0.5]), args=(p[0], p[1]), tol=1e-12).x[0],
    "root lm": lambda p: so.root(residual, np.array([0.5]), args=(p[0], p[1]), method="lm", tol=1e-12).x[0],
    "root krylov": lambda p: so.root(residual, np.array([0.5]), args=(p[0], p[1]), method="krylov", tol=1e-13).x[0],
    "minimize_scalar": lambda p: so.minimize_scalar(objective, args=(p[0], p[1]), tol=1e-12).x,
    "minimize BFGS": lambda p: so.minimize(objective, np.array([0.5]), args=(p[0], p[1]), method="BFGS", tol=1e-12).x[
        0
    ],
    "minimize Nelder-Mead": lambda p: so.minimize(
        objective, np.array([0.5]), args=(p[0], p[1]), method="Nelder-Mead", options={"xatol": 1e-13, "fatol": 1e-15}
    ).x[0],
    "minimize L-BFGS-B": lambda p: so.minimize(
        objective, np.array([0.5]), args=(p[0], p[1]), method="L-BFGS-B", bounds=[(-3.0, 3.0)], tol=1e-14
    ).x[0],
}


#: the root at P0 to the last bit (brentq at its tightest): the derivatives of the true root
TRUE_ROOT = so.brentq(residual, *BRACKET, args=(P0[0], P0[1]), xtol=1e-300, rtol=4 * np.finfo(float).eps)


def exact(y: float, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The implicit function theorem's gradient and Hessian of the root, at the root y given."""
    d = 3 * y**2 + p[0]
    ya, yb = -y / d, 1 / d
    da, db = 6 * y * ya + 1, 6 * y * yb
    yaa, yab, ybb = -(ya * d - y * da) / d**2, -(yb * d - y * db) / d**2, -db / d**2
    return np.array([ya, yb]), np.array([[yaa, yab], [yab, ybb]])


def richardson(f: Callable[[np.ndarray], float], p: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of f at p by central differences at h and h/2, Richardson-extrapolated."""
    n = p.size
    e = np.eye(n)

    def grad(h: float) -> np.ndarray:
        return np.array([(f(p + h * e[i]) - f(p - h * e[i])) / (2 * h) for i in range(n)])

    def hess(h: float) -> np.ndarray:
        out = np.empty((n, n))
        for i in range(n):
            for j in range(n):
                a, b = h * e[i], h * e[j]
                out[i, j] = (f(p + a + b) - f(p + a - b) - f(p - a + b) + f(p - a - b)) / (4 * h * h)
        return out

    return (4 * grad(h / 2) - grad(h)) / 3, (4 * hess(h / 2) - hess(h)) / 3


def rel(d: Any, reference: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(d) - reference)) / np.max(np.abs(reference)))


def best(fn: Callable[[], Any], number: int = 20) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def measure() -> list[list[str]]:
    reverse, forward = di.AutoTape(), di.AutoTape(mode="forward")
    rows = []
    for name, f in SOLVERS.items():
        plain = lambda p, f=f: float(np.asarray(f(p)))
        fd_grad, _ = richardson(plain, P0, 1e-3)
        _, fd_hess = richardson(plain, P0, 1e-2)
        y, g_rev = di.value_and_gradient(f, reverse, P0)
        g_fwd = di.gradient(f, forward, P0)
        prep_h = di.prepare_hessian(f, reverse, P0)
        hess = prep_h.hessian(P0)
        hess_fwd = di.hessian(f, forward, P0)
        grad_x, hess_x = exact(float(y), P0)
        true_grad, true_hess = exact(TRUE_ROOT, P0)
        prep = di.prepare_gradient(f, reverse, P0)
        prep.gradient(P1)
        t_f = best(lambda f=f: f(P1))
        t_g = best(lambda prep=prep: prep.gradient(P1))
        t_h = best(lambda prep_h=prep_h: prep_h.hessian(P1), number=5)
        rows.append(
            [
                name,
                f"{rel(g_rev, fd_grad):.1e}",
                f"{rel(g_fwd, fd_grad):.1e}",
                f"{rel(hess, fd_hess):.1e}",
                f"{max(rel(g_rev, grad_x), rel(g_fwd, grad_x), rel(hess, hess_x), rel(hess_fwd, hess_x)):.0e}",
                f"{max(rel(g_rev, true_grad), rel(hess, true_hess)):.0e}",
                f"{t_f * 1e6:.0f}",
                f"{t_g * 1e6:.0f}",
                f"{t_g / t_f:.1f}",
                f"{t_h / t_f:.1f}",
            ]
        )
    return rows


if __name__ == "__main__":
    header = [
        "solver",
        "grad rev vs FD",
        "grad fwd vs FD",
        "hessian vs FD",
        "vs IFT at its root",
        "vs true root's",
        "f (us)",
        "prep grad (us)",
        "grad / f",
        "hessian / f",
    ]
    print(format_table(header, measure()))
