"""A derivative that exists is never NaN on the tape: a zero tangent or cotangent through a branch that is
not taken (`where`, `maximum`, `minimum`, `clip`, `select`, `fmax`, `fmin`, masked assignment, a product
with a mask), times a local partial that is infinite or NaN there (sqrt at 0, a division by a clamped 0,
log(0), arccos(1), power(0, 0.5), 1/0, exp overflowing), contributes zero, in forward and reverse mode,
batched, second order, Taylor mode and the Laplacian; where the derivative does not exist it stays
infinite. Values against analytic derivatives, prepared at one point and called at another, twice."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di
from diface.backends.tape.prims.elementwise import STRONG_MULTIPLY, has_nan, strong_multiply
from diface.backends.tape.recording.record import record

X0 = np.array([-1.0, 4.5, 0.5, -2.0, 9.0])
X1 = np.array([2.0, -3.0, 0.25, 1.0, -0.5])
V = np.array([1.0, -2.0, 0.5, 3.0, 1.5])
TANGENTS = (V, 2.0 * V, -V, 0.5 * V, np.ones(5))  # a batch of 5: the symbolic forward sweep
TAPE = di.AutoTape()
MODES = [di.AutoTape(mode="forward"), di.AutoTape(mode="reverse")]


def _half_root(x):  # d sqrt(x) / dx where x > 0, else 0
    return np.where(x > 0, 0.5 / np.sqrt(np.abs(x) + (x == 0)), 0.0)


def _root_curvature(x):  # d² sqrt(x) / dx² where x > 0, else 0
    return np.where(x > 0, -0.25 / (np.abs(x) + (x == 0)) ** 1.5, 0.0)


def _masked_assignment(x):
    y = x.copy()
    y[x < 0] = 0.0
    return np.sum(np.sqrt(y))


def _night(x):  # a clamped division and a mask, the way irradiance code writes them
    cosz = np.cos(x)
    dni = 100.0 / np.maximum(cosz, 0.0)
    return np.sum(np.where(cosz > 0, dni * cosz, 0.0) + np.sqrt(np.maximum(cosz, 0.0)))


def _night_gradient(x):
    c = np.cos(x)
    return np.where(c > 0, -0.5 / np.sqrt(np.abs(c)) * np.sin(x), 0.0)


#: name -> (f, gradient, Hessian diagonal or None, whether f's own values hold NaN or inf (NumPy warns))
CASES = {
    "where_nan_branch": (
        lambda x: np.sum(np.where(x > 0, np.sqrt(x), 0.0)),
        _half_root,
        _root_curvature,
        True,
    ),
    "clip": (
        lambda x: np.sum(np.sqrt(np.clip(x, 0.0, 4.0))),
        lambda x: np.where(x < 4, _half_root(x), 0.0),
        lambda x: np.where(x < 4, _root_curvature(x), 0.0),
        False,
    ),
    "minimum": (
        lambda x: np.sum(np.sqrt(-np.minimum(x, 0.0))),
        lambda x: -_half_root(-x),
        lambda x: _root_curvature(-x),
        False,
    ),
    "select": (
        lambda x: np.sum(np.select([x > 1, x > 0], [np.sqrt(x - 1), x], 0.0)),
        lambda x: np.where(x > 1, _half_root(x - 1), np.where(x > 0, 1.0, 0.0)),
        lambda x: _root_curvature(x - 1),
        True,
    ),
    "fmax_fmin_arccos": (
        lambda x: np.sum(np.arccos(np.fmax(np.fmin(x / 4, 1.0), -1.0))),
        lambda x: np.where(np.abs(x) < 4, -0.25 / np.sqrt(np.abs(1 - (x / 4) ** 2)), 0.0),
        lambda x: np.where(np.abs(x) < 4, -(x / 64) / np.abs(1 - (x / 4) ** 2) ** 1.5, 0.0),
        False,
    ),
    "masked_assignment": (_masked_assignment, _half_root, _root_curvature, False),
    "mask_product": (lambda x: np.sum(np.sqrt(x * (x > 0))), _half_root, _root_curvature, False),
    "power_half": (lambda x: np.sum(np.power(np.maximum(x, 0.0), 0.5)), _half_root, _root_curvature, False),
    "reciprocal": (
        lambda x: np.sum(np.where(x > 0, np.maximum(x, 0.0) ** -1.0, 0.0)),
        lambda x: np.where(x > 0, -1.0 / x**2, 0.0),
        lambda x: np.where(x > 0, 2.0 / x**3, 0.0),
        True,
    ),
    "log": (
        lambda x: np.sum(np.where(x > 0, np.log(np.maximum(x, 0.0)), 0.0)),
        lambda x: np.where(x > 0, 1.0 / x, 0.0),
        lambda x: np.where(x > 0, -1.0 / x**2, 0.0),
        True,
    ),
    "night": (_night, _night_gradient, None, True),
}


def _close(got, want):
    got = np.asarray(got)
    assert not np.isnan(got).any(), got
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def _quiet(own_nan):
    """f's own NaN (sqrt of a negative in a branch not taken) makes NumPy warn: the user's, not the tape's."""
    return np.errstate(divide="ignore", invalid="ignore") if own_nan else np.errstate()


# -- the two examples ------------------------------------------------------------------------------
@pytest.mark.parametrize("tape", [TAPE, *MODES], ids=["default", "forward", "reverse"])
def test_sqrt_of_a_clamp_has_a_zero_derivative_where_clamped(tape):
    f = lambda x: np.sqrt(np.maximum(x, 0.0))
    x = np.array([-1.0, 4.0])
    _close(di.jacobian(f, tape, x), np.diag([0.0, 0.25]))
    prep = di.prepare_jacobian(f, tape, np.array([3.0, -2.0]))
    for _ in range(2):
        _close(prep.jacobian(x), np.diag([0.0, 0.25]))
    prep = di.prepare_jacobian(f, tape, X0)
    for _ in range(2):
        _close(prep.jacobian(X1), np.diag(_half_root(X1)))
    push = di.prepare_pushforward(f, tape, X0, (V, -V))  # a batch of two: tangents written out
    for _ in range(2):
        for t, r in zip((V, -V), push.pushforward(X1, (V, -V))):
            _close(r, _half_root(X1) * t)


@pytest.mark.parametrize("tape", [TAPE, *MODES], ids=["default", "forward", "reverse"])
def test_the_branch_not_taken_contributes_nothing(tape):
    f = lambda x: np.sum(np.where(x > 0, x, np.sqrt(x * 0)))
    _close(di.gradient(f, tape, np.array([-1.0, 4.0])), [0.0, 1.0])
    prep = di.prepare_gradient(f, tape, X0)
    for _ in range(2):
        _close(prep.gradient(X1), (X1 > 0) * 1.0)
    hess = di.prepare_hessian(f, TAPE, X0)
    for _ in range(2):
        _close(hess.hessian(X1), np.zeros((5, 5)))


# -- every mode on every case -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_first_order(name):
    f, grad, _, own_nan = CASES[name]
    with _quiet(own_nan):
        for tape in MODES:
            _close(di.gradient(f, tape, X1), grad(X1))  # unprepared
            prep = di.prepare_gradient(f, tape, X0)
            push = di.prepare_pushforward(f, tape, X0, TANGENTS)
            pull = di.prepare_pullback(f, tape, X0, (1.0, -2.0))
            jac = di.prepare_jacobian(lambda x: f(x)[None], tape, X0)
            for _ in range(2):
                _close(prep.gradient(X1), grad(X1))
                for t, r in zip(TANGENTS, push.pushforward(X1, TANGENTS)):
                    _close(r, grad(X1) @ t)
                _close(pull.pullback(X1, (1.0, -2.0))[1], -2.0 * grad(X1))
                _close(jac.jacobian(X1)[0], grad(X1))


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[2] is not None])
def test_second_order(name):
    f, _, curvature, own_nan = CASES[name]
    with _quiet(own_nan):
        hess = np.diag(curvature(X1))
        _close(di.hessian(f, TAPE, X1), hess)
        prep = di.prepare_hessian(f, TAPE, X0)
        hvp = di.prepare_hvp(f, TAPE, X0, TANGENTS)
        for _ in range(2):
            _close(prep.hessian(X1), hess)
            for t, r in zip(TANGENTS, hvp.hvp(X1, TANGENTS)):
                _close(r, hess @ t)


def test_value_gradient_and_hessian_hold_no_nan():
    f, grad, curvature, _ = CASES["where_nan_branch"]
    with np.errstate(invalid="ignore"):
        prep = di.prepare_hessian(f, TAPE, X0)
        for _ in range(2):
            value, g, h = prep.value_gradient_and_hessian(X1)
            _close(value, np.sum(np.sqrt(np.maximum(X1, 0.0))))
            _close(g, grad(X1))
            _close(h, np.diag(curvature(X1)))


def test_taylor_and_laplacian():
    f, grad, curvature, _ = CASES["masked_assignment"]
    taylor = di.prepare_taylor(f, TAPE, X0, (V, -V), order=2)
    laplacian = di.prepare_laplacian(f, TAPE, X0)
    for _ in range(2):
        for t, (d1, d2) in zip((V, -V), taylor.taylor_coefficients(X1, (V, -V))):
            _close(d1, grad(X1) @ t)
            _close(d2, t @ np.diag(curvature(X1)) @ t)
        _close(laplacian.laplacian(X1), np.sum(curvature(X1)))


def test_second_derivative_of_a_scalar():
    f = lambda x: np.where(x > 0, np.sqrt(np.abs(x)), 0.0)
    prep = di.prepare_second_derivative(f, TAPE, 2.0)
    for _ in range(2):
        _close(prep.second_derivative(-1.0), 0.0)
        _close(prep.second_derivative(4.0), -0.25 * 4.0**-1.5)


def test_exp_overflowing_in_a_branch_not_taken():
    f = lambda x: np.sum(np.where(x > 30, x, np.log1p(np.exp(x))))  # softplus, overflow-safe
    x = np.array([800.0, 0.0, -3.0, 40.0])
    sigmoid = 1.0 / (1.0 + np.exp(-np.minimum(x, 30.0)))
    want = np.where(x > 30, 1.0, sigmoid)
    with np.errstate(over="ignore"):
        for tape in MODES:
            prep = di.prepare_gradient(f, tape, np.array([1.0, 2.0, 3.0, 4.0]))
            for _ in range(2):
                _close(prep.gradient(x), want)
        prep = di.prepare_hessian(f, TAPE, np.array([1.0, 2.0, 3.0, 4.0]))
        for _ in range(2):
            _close(np.diag(prep.hessian(x)), np.where(x > 30, 0.0, sigmoid * (1 - sigmoid)))


def test_missing_data_masked_by_where():
    """NaN in a context value, masked: the preparation saw finite data, the calls bring NaN."""
    f = lambda x, d: np.sum(np.where(np.isnan(d), 0.0, d * x**2))
    data = np.array([1.0, np.nan, 3.0, np.nan, 2.0])
    clean = di.Constant(np.ones(5))
    prep = di.prepare_gradient(f, TAPE, X0, clean)
    hess = di.prepare_hessian(f, TAPE, X0, clean)
    for _ in range(2):
        _close(prep.gradient(X1, di.Constant(data)), np.where(np.isnan(data), 0.0, 2 * data * X1))
        _close(hess.hessian(X1, di.Constant(data)), np.diag(np.where(np.isnan(data), 0.0, 2 * data)))


# -- where the derivative does not exist, it is not hidden ---------------------------------------------------
def test_a_derivative_that_does_not_exist_stays_infinite():
    f = lambda x: np.sum(np.sqrt(x))
    x = np.array([0.0, 4.0])
    for tape in MODES:
        prep = di.prepare_gradient(f, tape, np.array([1.0, 1.0]))
        for _ in range(2):
            g = prep.gradient(x)
            assert np.isposinf(g[0]) and g[1] == 0.25
        j = di.jacobian(np.sqrt, tape, x)
        assert np.isposinf(j[0, 0]) and j[1, 1] == 0.25 and j[0, 1] == 0 and j[1, 0] == 0
    h = di.hessian(f, TAPE, x)
    assert np.isneginf(h[0, 0]) and h[1, 1] == pytest.approx(-0.25 * 4.0**-1.5)


# -- the pieces -----------------------------------------------------------------------------------------------
def test_strong_multiply():
    inf, nan = np.inf, np.nan
    r = strong_multiply(np.array([0.0, 0.0, 2.0, 1.0, -0.0]), np.array([inf, nan, inf, nan, 3.0]))
    np.testing.assert_array_equal(r[[0, 1, 4]], 0.0)
    assert np.isposinf(r[2]) and np.isnan(r[3])
    out = np.empty(2)
    a = np.array([0.0, 2.0])
    assert strong_multiply(a, np.array([inf, 3.0]), out=out) is out
    np.testing.assert_array_equal(out, [0.0, 6.0])
    assert strong_multiply(a, np.array([-inf, 3.0]), out=a) is a  # out may be a factor
    np.testing.assert_array_equal(a, [0.0, 6.0])
    assert not has_nan(np.array([inf, -inf, 1.0])) and has_nan(np.array([1.0, nan]))
    assert has_nan(np.full(1 << 15, nan)) and has_nan(np.array([1j, complex(nan, 0)]))


def test_polynomials_pay_nothing():
    """Functions that cannot overflow or divide by zero (Rosenbrock) have no unbounded values: their
    sweeps check nothing, and their recorded derivatives take plain products; a square root makes the
    products downstream strong."""
    rosen = lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2) / 4
    assert not record(rosen, X0, (), (), None).tape.unbounded()
    clip = CASES["clip"][0]
    assert record(clip, X0, (), (), None).tape.singular()
    for f, strong in ((rosen, False), (clip, True)):
        plan = TAPE.second_order_plan(di.prepare_hessian(f, TAPE, X0).problem)
        outer = plan.linearizer.rec.tape  # f and its reverse sweep's rules, recorded
        assert any(node.prim is STRONG_MULTIPLY for node in outer.nodes) == strong
