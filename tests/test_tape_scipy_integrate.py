"""SciPy's integrators inside f on AutoTape: quad and quad_vec by the Leibniz rule (the derivative
integrals computed by the same routine), solve_ivp by forward sensitivities and the adjoint ODE.
References are exact: the same integral by a 60-point Gauss-Legendre rule on the tape, or the ODE's
closed-form solution."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import diface as di

integrate = pytest.importorskip("scipy.integrate")

REVERSE, FORWARD = di.AutoTape(), di.AutoTape(mode="forward")
X0, X1 = np.array([0.7, 1.3, 0.4]), np.array([1.1, 0.5, 0.9])


def gauss(h, lo, hi):
    t, w = np.polynomial.legendre.leggauss(60)
    tt = 0.5 * (hi - lo) * t + 0.5 * (hi + lo)
    return 0.5 * (hi - lo) * np.sum(w * h(tt))


def quad_f(p):  # traced parameters and both limits traced
    return integrate.quad(lambda t, c: np.exp(-p[0] * t**2) * c, 0.1 * p[2], p[1], args=(p[2],), epsabs=1e-13)[0]


def quad_ref(p):
    return gauss(lambda t: np.exp(-p[0] * t**2) * p[2], 0.1 * p[2], p[1])


def quad_vec_f(p):
    return np.sum(integrate.quad_vec(lambda t: np.exp(-p * t**2), 0.0, p[0], epsabs=1e-13)[0] ** 2)


def quad_vec_ref(p):
    t, w = np.polynomial.legendre.leggauss(60)
    tt = 0.5 * p[0] * (t + 1)
    return np.sum((0.5 * p[0] * np.sum(w[:, None] * np.exp(-p[None, :] * tt[:, None] ** 2), axis=0)) ** 2)


@pytest.mark.parametrize(("f", "ref"), [(quad_f, quad_ref), (quad_vec_f, quad_vec_ref)], ids=["quad", "quad_vec"])
def test_quadrature_is_differentiated_by_the_leibniz_rule(f, ref):
    exact = di.gradient(ref, REVERSE, X1)
    np.testing.assert_allclose(f(X1), ref(X1), rtol=1e-12)
    prep = di.prepare_gradient(f, REVERSE, X0)
    for _ in range(2):
        np.testing.assert_allclose(prep.gradient(X1), exact, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(di.gradient(f, FORWARD, X1), exact, rtol=1e-9, atol=1e-12)
    # second order: the tangent integrand is recorded and integrated again
    np.testing.assert_allclose(di.hessian(f, REVERSE, X1), di.hessian(ref, REVERSE, X1), rtol=1e-8, atol=1e-11)


def test_a_constant_integrand_stays_a_plain_result():
    value = integrate.quad(lambda t: np.exp(-(t**2)), 0.0, 1.0)[0]
    np.testing.assert_allclose(
        di.gradient(lambda p: p[0] * integrate.quad(lambda t: np.exp(-(t**2)), 0.0, 1.0)[0], REVERSE, X1), [value, 0, 0]
    )


def ode_f(p):
    rhs = lambda t, y: np.array([-p[0] * y[0] + p[2] * y[1], -y[1] * p[2]])
    return integrate.solve_ivp(rhs, (0.0, 1.5), [p[1], 1.0], rtol=1e-10, atol=1e-12).y[0, -1]


def ode_exact(p):  # y1 = exp(-c t), y0' = -a y0 + c y1
    a, b, c = p[0], p[1], p[2]
    return b * np.exp(-1.5 * a) + c * (np.exp(-1.5 * c) - np.exp(-1.5 * a)) / (a - c)


def test_solve_ivp_by_forward_sensitivities_and_the_adjoint():
    exact = di.gradient(ode_exact, REVERSE, X1)
    prep = di.prepare_gradient(ode_f, REVERSE, X0)
    for _ in range(2):
        np.testing.assert_allclose(prep.gradient(X1), exact, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(di.gradient(ode_f, FORWARD, X1), exact, rtol=1e-8, atol=1e-10)
    times = np.linspace(0.0, 1.0, 5)

    def trajectory(p):
        return integrate.solve_ivp(
            lambda t, y: -p[0] * y, (0, 1), p[1:], t_eval=times, rtol=1e-10, atol=1e-12
        ).y.ravel()

    reference = lambda p: (p[1:, None] * np.exp(-p[0] * times[None, :])).ravel()
    jac = di.jacobian(reference, REVERSE, X1)
    np.testing.assert_allclose(di.jacobian(trajectory, REVERSE, X1), jac, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(di.prepare_jacobian(trajectory, FORWARD, X0).jacobian(X1), jac, rtol=1e-8, atol=1e-10)


def test_solve_ivp_to_second_order():
    # the tangent system recorded as a sub-tape and solved by a node of its own
    exact = di.hessian(ode_exact, REVERSE, X1)
    prep = di.prepare_hessian(ode_f, REVERSE, X0)
    for _ in range(2):
        np.testing.assert_allclose(prep.hessian(X1), exact, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(di.hessian(ode_f, FORWARD, X1), exact, rtol=1e-7, atol=1e-9)


def test_solve_ivp_refuses_what_it_cannot_differentiate():
    dense = lambda p: integrate.solve_ivp(lambda t, y: -p[0] * y, (0, 1), [1.0], dense_output=True).y[0, -1]
    with pytest.raises(di.NotSupportedError, match="dense_output"):
        di.gradient(dense, REVERSE, X1)


def test_a_preparation_shared_by_eight_threads():
    def f(p):
        return quad_f(p) + ode_f(p)

    exact = di.gradient(quad_ref, REVERSE, X1) + di.gradient(ode_exact, REVERSE, X1)
    prep = di.prepare_gradient(f, REVERSE, X0)
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(prep.gradient(X1))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    for r in results:
        np.testing.assert_allclose(r, exact, rtol=1e-8, atol=1e-10)
