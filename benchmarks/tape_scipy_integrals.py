"""SciPy's integrators inside f on AutoTape: accuracy and cost of quad, quad_vec and solve_ivp.

Each f integrates with traced parameters (and, for quad, traced limits); its gradient in reverse and
forward mode and, where the tape takes it, its Hessian are compared with Richardson-extrapolated central
differences of the same SciPy call (max |D - D_fd| / max |D_fd|), and with an exact reference on the
tape (a 60-point Gauss-Legendre rule; the ODE's closed-form solution). Cost: a prepared gradient at
another point against one call of f with plain NumPy and SciPy.

    python benchmarks/tape_scipy_integrals.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.integrate as si
from tape_implicit import best, rel, richardson

import diface as di
from diface._table import format_table

P0, P1 = np.array([0.7, 1.3, 0.4]), np.array([1.1, 0.5, 0.9])


def gauss(h: Callable, lo: Any, hi: Any) -> Any:
    t, w = np.polynomial.legendre.leggauss(60)
    tt = 0.5 * (hi - lo) * t + 0.5 * (hi + lo)
    return 0.5 * (hi - lo) * np.sum(w * h(tt))


def quad(p: Any) -> Any:
    return si.quad(lambda t: np.exp(-p[0] * t**2) * p[2], 0.1 * p[2], p[1], epsabs=1e-13)[0]


def quad_vec(p: Any) -> Any:
    return np.sum(si.quad_vec(lambda t: np.exp(-p * t**2), 0.0, p[0], epsabs=1e-13)[0] ** 2)


def ode(p: Any) -> Any:
    rhs = lambda t, y: np.array([-p[0] * y[0] + p[2] * y[1], -y[1] * p[2]])
    return si.solve_ivp(rhs, (0.0, 1.5), [p[1], 1.0], rtol=1e-11, atol=1e-13).y[0, -1]


def ode_exact(p: Any) -> Any:
    a, b, c = p[0], p[1], p[2]
    return b * np.exp(-1.5 * a) + c * (np.exp(-1.5 * c) - np.exp(-1.5 * a)) / (a - c)


CASES: dict[str, tuple[Callable, Callable, bool]] = {
    "quad (traced limits)": (quad, lambda p: gauss(lambda t: np.exp(-p[0] * t**2) * p[2], 0.1 * p[2], p[1]), True),
    "quad_vec": (
        quad_vec,
        lambda p: np.sum(np.stack([gauss(lambda t, q=q: np.exp(-q * t**2), 0.0, p[0]) for q in p]) ** 2),
        True,
    ),
    "solve_ivp": (ode, ode_exact, True),
}


def measure() -> list[list[str]]:
    reverse, forward = di.AutoTape(), di.AutoTape(mode="forward")
    rows = []
    for name, (f, reference, second) in CASES.items():
        plain = lambda p, f=f: float(np.asarray(f(p)))
        fd_grad, _ = richardson(plain, P1, 1e-3)
        _, fd_hess = richardson(plain, P1, 1e-2)
        prep = di.prepare_gradient(f, reverse, P0)
        g_rev, g_fwd = prep.gradient(P1), di.gradient(f, forward, P1)
        exact = di.gradient(reference, reverse, P1)
        hess = di.hessian(f, reverse, P1) if second else None
        t_f = best(lambda f=f: f(P1), number=5)
        t_g = best(lambda prep=prep: prep.gradient(P1), number=5)
        rows.append(
            [
                name,
                f"{rel(g_rev, fd_grad):.1e}",
                f"{rel(g_fwd, fd_grad):.1e}",
                "refused" if hess is None else f"{rel(hess, fd_hess):.1e}",
                f"{max(rel(g_rev, exact), rel(g_fwd, exact)):.0e}",
                f"{t_f * 1e6:.0f}",
                f"{t_g * 1e6:.0f}",
                f"{t_g / t_f:.1f}",
            ]
        )
    return rows


def main() -> None:
    header = ["integral", "reverse vs FD", "forward vs FD", "Hessian vs FD", "vs exact", "f µs", "grad µs", "grad/f"]
    print(format_table(header, measure()))


if __name__ == "__main__":
    main()
