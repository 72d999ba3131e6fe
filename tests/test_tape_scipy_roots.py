"""SciPy's root finders and minimizers inside f on AutoTape (implicit differentiation, `scipy.roots`).

The equation is the cubic y^3 + a y - b = 0 in y for p = (a, b) (for the minimizers, the stationarity
condition of y^4/4 + a y^2/2 - b y, whose gradient it is). The references are exact, never finite
differences: the implicit function theorem's derivatives written out at the root the solver returned
(`cubic`: dy/da = -y/d, dy/db = 1/d with d = 3y^2 + a, and their total derivatives), or, for systems,
the same equations on the tape solved by a few explicit Newton steps on traced values started at the
converged root (a constant), exact to rounding in first and second derivatives. Every solver is
checked in reverse and forward mode, prepared at one point and called at another, twice.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import diface as di

so = pytest.importorskip("scipy.optimize")

REVERSE, FORWARD = di.AutoTape(), di.AutoTape(mode="forward")
P0, P1 = np.array([2.0, 1.5]), np.array([1.0, 0.7])
HERE = r"test_tape_scipy_roots\.py:\d+"


def residual(y: Any, a: Any, b: Any) -> Any:
    return y**3 + a * y - b


def objective(y: Any, a: Any, b: Any) -> Any:
    return np.sum(y**4 / 4 + a * y**2 / 2 - b * y)


def cubic(y: float, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient and Hessian in p of the root y of y^3 + a y - b = 0, at the root y given."""
    a = p[0]
    d = 3 * y**2 + a
    ya, yb = -y / d, 1 / d
    da, db = 6 * y * ya + 1, 6 * y * yb
    yaa, yab, ybb = -(ya * d - y * da) / d**2, -(yb * d - y * db) / d**2, -db / d**2
    return np.array([ya, yb]), np.array([[yaa, yab], [yab, ybb]])


def halley_f(y: Any, a: Any, b: Any) -> Any:
    return residual(y, a, b), 3 * y**2 + a, 6 * y


BRACKET = (-5.0, 5.0)
TIGHT = {"xatol": 1e-13, "fatol": 1e-15}  # Nelder-Mead
#: each solver as f(p) -> the root (a 0-d traced value): several read the bracket or x0 from p too
SOLVERS: dict[str, Callable[[Any], Any]] = {
    "brentq": lambda p: so.brentq(residual, p[1] - 5.0, 5.0, args=(p[0], p[1]), xtol=1e-15),
    "brenth": lambda p: so.brenth(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "ridder": lambda p: so.ridder(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "bisect": lambda p: so.bisect(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "toms748": lambda p: so.toms748(residual, *BRACKET, args=(p[0], p[1]), xtol=1e-15),
    "newton secant": lambda p: so.newton(residual, p[1] / 3, args=(p[0], p[1]), tol=1e-14),
    "newton fprime": lambda p: so.newton(lambda y: y**3 + p[0] * y - p[1], 0.5, fprime=lambda y: 3 * y**2 + p[0]),
    "newton halley": lambda p: so.newton(
        residual, 0.5, args=(p[0], p[1]), fprime=lambda y, a, b: 3 * y**2 + a, fprime2=lambda y, a, b: 6 * y
    ),
    "newton array": lambda p: so.newton(lambda y: y**3 + p[0] * y - p[1], np.array([0.4, 0.6]), tol=1e-14)[1],
    "root_scalar": lambda p: so.root_scalar(residual, args=(p[0], p[1]), bracket=BRACKET, xtol=1e-15).root,
    "root_scalar fprime=True": lambda p: (
        so.root_scalar(lambda y: (residual(y, p[0], p[1]), 3 * y**2 + p[0]), x0=0.5, fprime=True, method="newton").root
    ),
    "root_scalar fprime2=True": lambda p: (
        so.root_scalar(halley_f, args=(p[0], p[1]), x0=0.5, fprime=True, fprime2=True, method="halley").root
    ),
    "fsolve": lambda p: so.fsolve(residual, np.array([0.5]), args=(p[0], p[1]), xtol=1e-12)[0],
    "root hybr": lambda p: so.root(residual, np.array([0.5]), args=(p[0], p[1]), tol=1e-12).x[0],
    "root lm jac=True": lambda p: so.root(
        lambda y: (residual(y, p[0], p[1]), np.diag(3 * y**2 + p[0])), np.array([0.5]), jac=True, method="lm"
    ).x[0],
    "root krylov": lambda p: so.root(residual, np.array([0.5]), args=(p[0], p[1]), method="krylov", tol=1e-13).x[0],
    "minimize_scalar": lambda p: so.minimize_scalar(objective, args=(p[0], p[1]), tol=1e-12).x,
    "minimize_scalar bounded": lambda p: (
        so.minimize_scalar(
            objective, args=(p[0], p[1]), bounds=(p[0] - 5.0, 3.0), method="bounded", options={"xatol": 1e-12}
        ).x
    ),
    "BFGS": lambda p: so.minimize(objective, np.array([0.5]), args=(p[0], p[1]), method="BFGS", tol=1e-12).x[0],
    "Nelder-Mead": lambda p: so.minimize(
        objective, np.array([0.5]), args=(p[0], p[1]), method="Nelder-Mead", options=TIGHT
    ).x[0],
    "L-BFGS-B": lambda p: so.minimize(
        objective, np.array([0.5]), args=(p[0], p[1]), method="L-BFGS-B", bounds=[(p[0] - 5.0, 3.0)], tol=1e-14
    ).x[0],
    "Newton-CG jac hess": lambda p: so.minimize(
        objective,
        np.array([0.5]),
        args=(p[0], p[1]),
        method="Newton-CG",
        jac=lambda y, a, b: y**3 + a * y - b,
        hess=lambda y, a, b: np.diag(3 * y**2 + a),
        tol=1e-13,
    ).x[0],
}


def close(actual: Any, expected: Any, name: str = "") -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-11, atol=1e-13, err_msg=name)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_each_solver_in_both_modes_prepared_elsewhere_and_to_second_order(name: str) -> None:
    f = SOLVERS[name]
    for backend in (REVERSE, FORWARD):
        y, g = di.value_and_gradient(f, backend, P0)
        assert np.asarray(y) == np.asarray(f(P0))  # SciPy's own root (f at plain values runs SciPy alone)
        close(g, cubic(float(y), P0)[0])
        prep = di.prepare_gradient(f, backend, P0)
        for _ in range(2):
            y, g = prep.value_and_gradient(P1)
            close(g, cubic(float(y), P1)[0])
    prep = di.prepare_hessian(f, REVERSE if len(name) % 2 else FORWARD, P0)
    for _ in range(2):
        y, g, h = prep.value_gradient_and_hessian(P1)
        grad, hess = cubic(float(y), P1)
        close(g, grad)
        close(h, hess)


def test_hvp_taylor_and_a_sparse_hessian() -> None:
    f = SOLVERS["brentq"]
    y = float(f(P0))
    grad, hess = cubic(y, P0)
    v = np.array([0.3, -1.0])
    for backend in (REVERSE, FORWARD):
        close(di.hvp(f, backend, P0, v), hess @ v)
    value, (first, second) = di.taylor(f, REVERSE, P0, v, order=2)
    close([value, first, second], [y, grad @ v, v @ hess @ v])
    h = di.hessian(lambda q: f(q[:2]) + q[2] ** 2, di.AutoSparse(di.AutoTape()), np.array([*P0, 0.3]))
    close(h.toarray(), np.block([[hess, np.zeros((2, 1))], [np.zeros((1, 2)), 2.0]]))


def test_full_output_forms_keep_their_shape_with_the_root_traced() -> None:
    args = lambda p: (p[0], p[1])
    forms: dict[str, Callable[[Any], Any]] = {
        "brentq .root": lambda p: so.brentq(residual, *BRACKET, args=args(p), full_output=True)[1].root,
        "brentq [0]": lambda p: so.brentq(residual, *BRACKET, args=args(p), full_output=True)[0],
        "newton": lambda p: so.newton(residual, 0.5, args=args(p), full_output=True)[0],
        "newton array .root": lambda p: so.newton(
            lambda y: y**3 + p[0] * y - p[1], np.array([0.5, 0.6]), full_output=True, tol=1e-14
        ).root[0],
        "fsolve": lambda p: so.fsolve(residual, [0.5], args=args(p), full_output=True, xtol=1e-12)[0][0],
        "root .x": lambda p: so.root(residual, [0.5], args=args(p), tol=1e-12).x[0],
        "root_scalar": lambda p: so.root_scalar(residual, args=args(p), x0=0.5, x1=0.6).root,
    }
    for name, f in forms.items():
        prep = di.prepare_gradient(f, REVERSE, P0)
        for _ in range(2):
            y, g = prep.value_and_gradient(P1)
            close(g, cubic(float(y), P1)[0], name)
    out = so.brentq(residual, *BRACKET, args=(2.0, 1.5), full_output=True)
    seen: dict[str, Any] = {}

    def keep(p: Any) -> Any:
        r = so.brentq(residual, *BRACKET, args=args(p), full_output=True)
        seen["brentq"] = r
        fs = so.fsolve(residual, [0.5], args=args(p), full_output=True)
        seen["fsolve"] = fs
        return r[0] + 0 * fs[0][0]

    di.gradient(keep, REVERSE, P0)
    assert type(seen["brentq"][1]) is type(out[1]) and seen["brentq"][1].converged
    assert seen["brentq"][1].iterations == out[1].iterations
    assert isinstance(seen["fsolve"][1]["fvec"], np.ndarray) and seen["fsolve"][2] == 1


@pytest.mark.parametrize("jac", [False, True])
def test_minimize_fun_is_the_objective_at_the_traced_optimum(jac: bool) -> None:
    """`.fun`'s gradient is the envelope theorem's: the objective's partial derivatives in p at the
    optimum, plus its gradient in y there (the solver's residual) times dy/dp."""
    fun = (lambda y, a, b: (objective(y, a, b), y**3 + a * y - b)) if jac else objective
    f = lambda p: so.minimize(fun, np.array([0.5]), args=(p[0], p[1]), jac=jac, method="BFGS", tol=1e-12)
    scalar = lambda p: so.minimize_scalar(objective, args=(p[0], p[1]), tol=1e-12)
    for minimize in (f, scalar):
        prep = di.prepare_gradient(lambda p, minimize=minimize: minimize(p).fun, REVERSE, P0)
        for _ in range(2):
            value, g = prep.value_and_gradient(P1)
            y = float(np.ravel(minimize(P1).x)[0])
            assert value == pytest.approx(objective(y, *P1), rel=1e-15)
            close(g, [y**2 / 2, -y] + residual(y, *P1) * cubic(y, P1)[0])


def system(y: Any, p: Any) -> Any:
    return np.stack([y[0] ** 3 + p[0] * y[0] - p[1] + 0.1 * y[1], y[1] ** 3 + p[1] * y[1] - p[0] + 0.2 * y[0]])


def newton_reference(y0: np.ndarray) -> Callable[[Any], Any]:
    """`system`'s root by three Newton steps on traced values from `y0`, the converged root at p."""

    def f(p: Any) -> Any:
        y = y0
        for _ in range(3):
            jac = np.stack(
                [np.stack([3 * y[0] ** 2 + p[0], 0.1 + 0 * p[0]]), np.stack([0.2 + 0 * p[0], 3 * y[1] ** 2 + p[1]])]
            )
            y = y - np.linalg.solve(jac, system(y, p))
        return y

    return f


def test_a_system_jacobian_in_each_mode_and_sparse_and_its_hvp() -> None:
    f = lambda p: so.fsolve(lambda y: system(y, p), np.array([0.5, 0.5]), xtol=1e-14)
    g = lambda p: so.root(lambda y: system(y, p), np.array([0.5, 0.5]), tol=1e-14).x
    for solve in (f, g):
        for backend in (REVERSE, FORWARD, di.AutoSparse(di.AutoTape())):
            prep = di.prepare_jacobian(solve, backend, P0)
            for _ in range(2):
                y, jac = prep.value_and_jacobian(P1)
                reference = di.jacobian(newton_reference(np.array(y)), REVERSE, P1)
                close(jac.toarray() if hasattr(jac, "toarray") else jac, reference)
    v = np.array([0.3, -1.0])
    prep = di.prepare_hvp(lambda p: np.sum(f(p) ** 2), REVERSE, P0, v)
    for _ in range(2):
        reference = lambda p: np.sum(newton_reference(f(P1))(p) ** 2)
        close(prep.hvp(P1, v), di.hessian(reference, REVERSE, P1) @ v)


def nested(p: Any) -> Any:
    """z with y(z) - 0.3 z - 0.1 a = 0, where y(z) is the root of y^3 + z y - b (a brentq inside the
    residual of a brentq; the inner bracket is read from f's p)."""

    def outer(z: Any) -> Any:
        inner = so.brentq(lambda y: y**3 + z * y - p[1], -p[1] - 5.0, p[1] + 5.0, xtol=1e-15)
        return inner - 0.3 * z - 0.1 * p[0]

    return so.brentq(outer, 0.1, 5.0, xtol=1e-15)


def nested_reference(y: float, z: float) -> Callable[[Any], Any]:
    """The same root as the system in (y, z), by Newton steps on traced values from the solution."""

    def f(p: Any) -> Any:
        w: Any = np.array([y, z])
        for _ in range(3):
            r = np.stack([w[0] ** 3 + w[1] * w[0] - p[1], w[0] - 0.3 * w[1] - 0.1 * p[0]])
            jac = np.stack([np.stack([3 * w[0] ** 2 + w[1], w[0]]), np.stack([1.0 + 0 * p[0], -0.3 + 0 * p[0]])])
            w = w - np.linalg.solve(jac, r)
        return w[1]

    return f


def test_a_solver_inside_a_residual() -> None:
    for backend in (REVERSE, FORWARD):
        prep = di.prepare_hessian(nested, backend, P0)
        for p in (P1, np.array([2.0, 3.0])):
            for _ in range(2):
                z, g, h = prep.value_gradient_and_hessian(p)
                z, b = float(z), p[1]
                y = so.brentq(lambda y: y**3 + z * y - b, -10.0, 10.0, xtol=1e-15)  # noqa: B023
                reference = nested_reference(y, z)
                close(g, di.gradient(reference, REVERSE, p))
                close(h, di.hessian(reference, REVERSE, p))


def test_a_residual_with_a_branch_replays_the_path_where_the_solver_looks() -> None:
    def f(p: Any) -> Any:
        def kinked(y: Any) -> Any:
            if y > 1.0:
                return 2.0 * y - 1.0 - p[0]
            return y - p[0]

        return so.brentq(kinked, -5.0, 5.0)

    prep = di.prepare_gradient(f, REVERSE, np.array([0.5]))
    for _ in range(2):
        close(prep.gradient(np.array([0.6])), [1.0])
    with pytest.raises(di.TapeMismatchError):  # the root is on the other branch: prepare again there
        prep.gradient(np.array([2.0]))
    close(di.gradient(f, REVERSE, np.array([2.0])), [0.5])


def test_a_solver_that_does_not_converge_raises() -> None:
    f = lambda p: so.newton(residual, 0.5, args=(p[0], p[1]), maxiter=2)
    with pytest.raises(di.ConvergenceError, match=rf"scipy\.optimize\.newton did not converge \(called at {HERE}"):
        di.gradient(f, REVERSE, P0)
    g = lambda p: so.newton(residual, 0.5, args=(p[0], p[1]), maxiter=6)
    prep = di.prepare_gradient(g, REVERSE, P0)
    close(prep.gradient(P0), cubic(float(g(P0)), P0)[0])
    for _ in range(2):
        with pytest.raises(di.ConvergenceError, match=HERE):
            prep.gradient(np.array([0.1, 40.0]))


def test_a_double_root_raises_singular() -> None:
    f = lambda p: so.brentq(lambda y: (y - p[0]) ** 3, 0.0, 2 * p[0])  # the first step hits y = p
    with pytest.raises(di.SingularError, match=rf"scipy\.optimize\.brentq.*{HERE}.*singular"):
        di.gradient(f, REVERSE, np.array([2.0]))
    prep = di.prepare_gradient(lambda p: so.brentq(residual, *BRACKET, args=(p[0], p[1])) + 0 * f(p[:1]), REVERSE, P0)
    with pytest.raises(di.SingularError, match=HERE):
        prep.gradient(P1)


def test_what_is_not_a_stationary_point_is_refused() -> None:
    args = lambda p: (p[0], p[1])
    constraint = [{"type": "ineq", "fun": lambda y: y}]
    newton_cg = {"jac": lambda y, a, b: y**3, "hessp": lambda y, v, a, b: v, "method": "Newton-CG"}
    refused: list[tuple[str, Callable[[Any], Any]]] = [
        ("with constraints", lambda p: so.minimize(objective, [0.5], args=args(p), constraints=constraint).x[0]),
        (
            "on a bound",
            lambda p: so.minimize(objective, [0.1], args=args(p), method="L-BFGS-B", bounds=[(-3, 0.2)]).x[0],
        ),
        # fminbound stops within its tolerance of the bound, where the gradient is not small
        ("on a bound", lambda p: so.minimize_scalar(objective, args=args(p), bounds=(-3, 0.2), method="bounded").x),
        ("with complex values", lambda p: so.minimize(objective, [0.5], args=args(p), jac="cs").x[0]),
        ("with hessp", lambda p: so.minimize(objective, [0.5], args=args(p), **newton_cg).x[0]),
    ]
    for why, f in refused:
        with pytest.raises(di.NotSupportedError, match=rf"(?s){why}.*{HERE}|{HERE}.*{why}"):
            di.gradient(f, REVERSE, P0)
    # prepared where the bound is inactive, called where it is active
    f = lambda p: so.minimize(objective, [0.1], args=args(p), method="L-BFGS-B", bounds=[(-3.0, 0.7)]).x[0]
    prep = di.prepare_gradient(f, REVERSE, P0)
    with pytest.raises(di.NotSupportedError, match="on a bound"):
        prep.gradient(np.array([1.0, 3.0]))


def test_a_preparation_shared_by_eight_threads() -> None:
    points = [P1 + 0.05 * k for k in range(16)]
    for name in ("brentq", "fsolve", "BFGS"):
        prep = di.prepare_gradient(SOLVERS[name], REVERSE, P0)
        serial = [prep.gradient(p) for p in points]
        with ThreadPoolExecutor(8) as pool:
            parallel = list(pool.map(prep.gradient, points))
        for a, b in zip(serial, parallel):
            np.testing.assert_array_equal(a, b)


def test_a_least_squares_fit_is_refused_and_a_solve_of_constants_is_scipys_own() -> None:
    fit = lambda p: so.root(lambda y: np.stack([y[0] - p[0], y[0] - p[1]]), np.array([0.5]), method="lm").x[0]
    with pytest.raises(di.NotSupportedError, match=rf"2 equations in 1 unknowns.*{HERE}|{HERE}.*2 equations"):
        di.gradient(fit, REVERSE, P0)
    # nothing of f's read: SciPy's call as the user wrote it (its error for a failed convergence, and an
    # optimum on a bound is fine: it is a constant)
    on_bound = lambda p: (
        p[0] * so.minimize(lambda y: np.sum((y - 3) ** 2), [0.5], method="L-BFGS-B", bounds=[(0, 1)]).x[0]
    )
    close(di.gradient(on_bound, REVERSE, P0), [1.0, 0.0])
    with pytest.raises(RuntimeError, match="Failed to converge"):
        di.gradient(lambda p: p[0] * so.brentq(lambda y: (y - 2.0) ** 3, 0.0, 3.0), REVERSE, P0)
