"""AutoTape's rules for scipy.interpolate (CubicSpline, Pchip, Akima, make_interp_spline/BSpline,
splrep/splev, interp1d, RegularGridInterpolator) and scipy.integrate's rules on samples (trapezoid,
simpson, romb, cumulative_trapezoid, cumulative_simpson).

The references are exact: an interpolant linear in its data has the derivative in the data y_j of the
same interpolant of the unit vector e_j (SciPy on plain values), and the derivative in an evaluation
point of SciPy's own `derivative()` there; the rules on samples are linear in y too, and the trapezoid
rule is also written by hand on the tape. The nonlinear ones (Pchip, Akima, traced breakpoints) are
checked against Richardson differences at a loose tolerance. Values are SciPy's; Jacobians,
pushforwards and pullbacks are prepared at one point and called at another (the points in other
intervals), twice; one Hessian and Hessian-vector product against the analytic second derivatives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diface as di

spi = pytest.importorskip("scipy.interpolate")
si = pytest.importorskip("scipy.integrate")

TAPE = di.AutoTape()
XK = np.array([0.0, 0.3, 0.7, 1.2, 1.6, 2.0, 2.5, 3.1])  # knots
N = XK.size
Y0 = np.sin(1.3 * XK) + 0.2 * XK
P0 = np.array([0.15, 0.65, 1.25, 2.3, 2.95])  # evaluation points, each inside an interval
P1 = np.array([0.4, 1.1, 1.9, 2.7, 0.05])  # ... in other intervals
V0, V1 = np.r_[Y0, P0], np.r_[Y0[::-1] * 0.7 + 0.1, P1]


def richardson(f: Callable, v: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """The Jacobian by Richardson-extrapolated central differences (a sanity check, error ~h^4)."""
    cols = []
    for e in np.eye(v.size):
        d = lambda s, e=e: (np.asarray(f(v + s * e)) - np.asarray(f(v - s * e))) / (2 * s)
        cols.append((4 * d(h / 2) - d(h)) / 3)
    return np.stack(cols, -1)


def check(f: Callable, v0: np.ndarray, v1: np.ndarray, want: Callable, rtol: float = 1e-10) -> None:
    """f's value (SciPy's) and Jacobian (`want(v)`) at v1, prepared at v0 and called twice; batched
    pushforwards and pullbacks likewise."""
    j1 = want(v1)
    tol = dict(rtol=rtol, atol=rtol * max(1.0, np.abs(j1).max()))
    y, j = di.value_and_jacobian(f, TAPE, v1)
    np.testing.assert_allclose(y, f(v1), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(j, j1, **tol)
    prep = di.prepare_jacobian(f, TAPE, v0)
    rng = np.random.default_rng(1)
    ts = tuple(rng.standard_normal(v0.shape) for _ in range(2))
    ws = tuple(rng.standard_normal(np.shape(y)) for _ in range(2))
    push = di.prepare_pushforward(f, TAPE, v0, ts)
    pull = di.prepare_pullback(f, TAPE, v0, ws)
    for _ in range(2):
        np.testing.assert_allclose(prep.jacobian(v1), j1, **tol)
        for t, r in zip(ts, push.pushforward(v1, ts)):
            np.testing.assert_allclose(r, j1 @ t, **tol)
        for w, r in zip(ws, pull.pullback(v1, ws)):
            np.testing.assert_allclose(r, w @ j1, **tol)


# -- interpolants linear in their data: exact references ------------------------------------------------------
LINEAR: dict[str, tuple[Callable, Callable]] = {
    # name: (make(x, y) -> interpolant, derivative of the interpolant (plain) -> callable)
    "CubicSpline": (lambda x, y: spi.CubicSpline(x, y), lambda s: s.derivative()),
    "CubicSpline clamped-natural": (
        lambda x, y: spi.CubicSpline(x, y, bc_type=((1, 0.0), "natural")),
        lambda s: s.derivative(),
    ),
    "CubicSpline periodic": (
        lambda x, y: spi.CubicSpline(x, np.concatenate([y[:-1], y[:1]]), bc_type="periodic"),
        lambda s: s.derivative(),
    ),
    "make_interp_spline k=3": (lambda x, y: spi.make_interp_spline(x, y), lambda s: s.derivative()),
    "make_interp_spline k=2 clamped": (
        lambda x, y: spi.make_interp_spline(x, y, k=2, bc_type=([(1, 0.0)], None)),
        lambda s: s.derivative(),
    ),
    "BSpline.antiderivative": (
        lambda x, y: spi.make_interp_spline(x, y).antiderivative(),
        lambda s: s.derivative(),
    ),
    "interp1d cubic": (lambda x, y: spi.interp1d(x, y, kind="cubic"), None),
    "interp1d quadratic": (lambda x, y: spi.interp1d(x, y, kind="quadratic"), None),
    "interp1d linear": (lambda x, y: spi.interp1d(x, y), None),
    "interp1d nearest": (lambda x, y: spi.interp1d(x, y, kind="nearest"), None),
    "splrep/splev": (
        lambda x, y: (lambda tck: lambda p: spi.splev(p, tck))(spi.splrep(x, y)),
        None,
    ),
}


def _derivative_at(name: str, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    make, deriv = LINEAR[name]
    if deriv is not None:
        return deriv(make(XK, y))(p)
    if name == "interp1d nearest":
        return np.zeros_like(p)
    if name == "interp1d quadratic":
        return spi.make_interp_spline(XK, y, k=2).derivative()(p)
    if name.startswith("interp1d linear"):
        i = np.clip(np.searchsorted(XK, p), 1, N - 1)
        return (y[i] - y[i - 1]) / (XK[i] - XK[i - 1])
    if name.startswith("interp1d"):
        return spi.make_interp_spline(XK, y, k=3).derivative()(p)
    return spi.splev(p, spi.splrep(XK, y), der=1)


@pytest.mark.parametrize("name", list(LINEAR))
def test_interpolants_linear_in_the_data(name):
    make = LINEAR[name][0]
    f = lambda v: make(XK, v[:N])(v[N:])

    def want(v: np.ndarray) -> np.ndarray:
        y, p = v[:N], v[N:]
        in_y = np.stack([make(XK, e)(p) for e in np.eye(N)], -1)  # linear in y: the interpolant of e_j
        return np.concatenate([in_y, np.diag(_derivative_at(name, y, p))], axis=1)

    check(f, V0, V1, want)


@pytest.mark.parametrize(
    "name, make",
    [
        ("PchipInterpolator", lambda x, y: spi.PchipInterpolator(x, y)),
        ("Akima1DInterpolator", lambda x, y: spi.Akima1DInterpolator(x, y)),
        ("Akima1DInterpolator makima", lambda x, y: spi.Akima1DInterpolator(x, y, method="makima")),
        ("CubicSpline, traced knots", lambda x, y: spi.CubicSpline(x, y)),
        ("PchipInterpolator, traced knots", lambda x, y: spi.PchipInterpolator(x, y)),
    ],
)
def test_nonlinear_interpolants_against_richardson(name, make):
    if "knots" in name:  # the knots scaled by v[N]: a derivative in every breakpoint
        f = lambda v: make(XK * v[N], v[:N])(v[N + 1 :])
        v0, v1 = np.r_[Y0, 1.05, P0], np.r_[Y0 * 0.9, 0.97, P1]
    else:
        f = lambda v: make(XK, v[:N])(v[N:])
        v0, v1 = V0, V1
    want = lambda v: richardson(f, v)
    check(f, v0, v1, want, rtol=1e-6)


def test_splines_to_second_order():
    """g = Σ S(y)(p): ∂²g/∂p² = S''(p), ∂²g/∂y_j∂p = (S of e_j)'(p), ∂²g/∂y² = 0."""

    def g(v: Any) -> Any:
        return np.sum(spi.CubicSpline(XK, v[:N])(v[N:]))

    y, p = V1[:N], V1[N:]
    h = np.zeros((V1.size, V1.size))
    h[N:, N:] = np.diag(spi.CubicSpline(XK, y).derivative(2)(p))
    mixed = np.stack([spi.CubicSpline(XK, e).derivative()(p) for e in np.eye(N)])
    h[:N, N:], h[N:, :N] = mixed, mixed.T
    hess = di.prepare_hessian(g, TAPE, V0)
    ts = tuple(np.random.default_rng(2).standard_normal((2, V0.size)))
    hvp = di.prepare_hvp(g, TAPE, V0, ts)
    for _ in range(2):
        np.testing.assert_allclose(hess.hessian(V1), h, rtol=1e-10, atol=1e-10)
        for t, r in zip(ts, hvp.hvp(V1, ts)):
            np.testing.assert_allclose(r, h @ t, rtol=1e-10, atol=1e-10)
    lap = di.prepare_laplacian(g, TAPE, V0)  # Taylor mode: the banded solve of constant knots is a linear step
    for _ in range(2):
        np.testing.assert_allclose(lap.laplacian(V1), np.trace(h), rtol=1e-10)


def test_spline_methods_and_integrals():
    """derivative(), antiderivative() and integrate() of a traced CubicSpline, with traced limits."""
    cs = lambda v: spi.CubicSpline(XK, v[:N])

    def f(v: Any) -> Any:
        s = cs(v)
        return np.concatenate(
            [
                s.derivative(2)(v[N : N + 2]),
                s.antiderivative()(v[N : N + 2]),
                np.reshape(s.integrate(v[N], v[N + 1]), 1),
            ]
        )

    def want(v: np.ndarray) -> np.ndarray:
        y, (a, b) = v[:N], v[N:]
        units = [spi.CubicSpline(XK, e) for e in np.eye(N)]
        in_y = np.stack(
            [np.r_[u.derivative(2)([a, b]), u.antiderivative()([a, b]), u.integrate(a, b)] for u in units], -1
        )
        s = spi.CubicSpline(XK, y)
        in_p = np.zeros((5, 2))
        in_p[:2] = np.diag(s.derivative(3)([a, b]))
        in_p[2:4] = np.diag(s([a, b]))
        in_p[4] = [-s(a), s(b)]
        return np.concatenate([in_y, in_p], axis=1)

    check(f, np.r_[Y0, 0.2, 2.2], np.r_[Y0[::-1], 1.3, 0.4], want)


def test_tabulated_data_at_traced_points():
    """Objects built outside f from plain data, evaluated at traced points (n = 300 knots)."""
    x = np.linspace(0.0, 10.0, 300)
    table = np.sin(x) + 0.1 * x
    objects = [spi.CubicSpline(x, table), spi.make_interp_spline(x, table, k=5), spi.interp1d(x, table, kind="cubic")]
    derivatives = [objects[0].derivative(), objects[1].derivative(), spi.make_interp_spline(x, table).derivative()]
    for obj, deriv in zip(objects, derivatives):
        want = lambda p, deriv=deriv: np.diag(deriv(p))
        check(lambda p, obj=obj: obj(p), np.array([0.5, 3.3, 9.1]), np.array([7.2, 0.05, 4.4]), want)


def test_constant_knots_made_inside_f():
    """Knots f builds with np.array (a constant on the tape, as in pvlib's Perez-Driesse splines) are
    taken as SciPy takes them; the derivative in the point is splev's der=1."""
    knots = [0.0, 0.0, 0.0, 0.2, 0.5, 0.8, 1.0, 1.0, 1.0]
    coefs = np.array([0.1, 0.5, -0.2, 0.3, 0.7, 0.2, 0.0, 0.0, 0.0])
    f = lambda z: spi.splev(z, (np.array(knots), coefs, 2))
    want = lambda z: np.diag(spi.splev(z, (np.array(knots), coefs, 2), der=1))
    check(f, np.array([0.1, 0.6]), np.array([0.45, 0.9]), want)
    # data made inside f: SciPy's own functions where no traced value remains, refusals included
    smooth = lambda z: spi.splev(z, spi.splrep(np.linspace(0.0, 1.0, 9), np.array(coefs), s=0.01))
    grid = lambda: spi.RegularGridInterpolator((np.array(knots[2:7]),) * 2, np.eye(5), method="cubic")
    g = lambda z: smooth(z) + grid()([[0.3, 0.4]])[0] + si.simpson(np.array([1.0, 2.0, 4.0]))
    h = lambda z: np.diag(spi.splev(z, spi.splrep(np.linspace(0.0, 1.0, 9), np.array(coefs), s=0.01), der=1))
    check(g, np.array([0.1, 0.6]), np.array([0.45, 0.9]), h)


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_regular_grid_interpolator(method):
    gx, gy = XK[:4], XK[:3]
    values0 = np.outer(np.cos(gx), gy + 1.0)
    pts0, pts1 = np.array([[0.1, 0.2], [0.9, 0.4], [1.1, 0.6]]), np.array([[0.45, 0.65], [0.2, 0.1], [0.8, 0.35]])
    rgi = lambda values: spi.RegularGridInterpolator((gx, gy), np.reshape(values, (4, 3)), method=method)
    f = lambda v: rgi(v[:12])(np.reshape(v[12:], (3, 2)))

    def want(v: np.ndarray) -> np.ndarray:
        in_values = np.stack([rgi(e)(np.reshape(v[12:], (3, 2))) for e in np.eye(12)], -1)  # linear in values
        return np.concatenate([in_values, richardson(lambda q: f(np.r_[v[:12], q]), v[12:])], axis=1)

    check(f, np.r_[values0.ravel(), pts0.ravel()], np.r_[values0.ravel()[::-1], pts1.ravel()], want, rtol=1e-7)


QUADRATURE: dict[str, Callable] = {
    "trapezoid": lambda y, x: si.trapezoid(y, x=x),
    "simpson odd": lambda y, x: si.simpson(y[:7], x=x[:7]),
    "simpson even": lambda y, x: si.simpson(y, x=x),
    "simpson dx": lambda y, x: si.simpson(y, dx=x[1] - x[0]),
    "cumulative_trapezoid": lambda y, x: si.cumulative_trapezoid(y, x=x, initial=0),
    "cumulative_simpson": lambda y, x: si.cumulative_simpson(y, x=x),
    "romb": lambda y, x: si.romb(y[:5], dx=x[1] - x[0]),
}


@pytest.mark.parametrize("name", list(QUADRATURE))
def test_rules_on_samples(name):
    rule = QUADRATURE[name]
    f = lambda v: np.atleast_1d(rule(v[:N], v[N:]))

    def want(v: np.ndarray) -> np.ndarray:
        in_y = np.stack([np.atleast_1d(rule(e, v[N:])) for e in np.eye(N)], -1)  # linear in y
        return np.concatenate([in_y, richardson(lambda x: f(np.r_[v[:N], x]), v[N:])], axis=1)

    check(f, np.r_[Y0, XK], np.r_[Y0 * 1.3 - 0.2, XK * 0.8 + 0.1], want, rtol=1e-7)


def test_trapezoid_against_the_formula_on_the_tape():
    f = lambda v: si.trapezoid(np.exp(-v[:N] * v[N:]), x=v[N:])
    by_hand = lambda v: np.sum(np.diff(v[N:]) * (np.exp(-v[:N] * v[N:])[1:] + np.exp(-v[:N] * v[N:])[:-1]) / 2.0)
    v1 = np.r_[Y0, XK]
    prep = di.prepare_gradient(f, TAPE, np.r_[Y0 * 0.5, XK * 1.1])
    for _ in range(2):
        np.testing.assert_allclose(prep.gradient(v1), di.gradient(by_hand, TAPE, v1), rtol=1e-13, atol=1e-15)


def test_checks_scipy_raises_on_are_guards():
    """interp1d raises outside its data and CubicSpline on breakpoints out of order: a prepared call at
    such a point raises TapeMismatchError, naming the check."""
    f = lambda v: np.sum(spi.interp1d(XK, v[:N])(v[N:]))
    prep = di.prepare_gradient(f, TAPE, V0)
    with pytest.raises(ValueError, match="above the interpolation range"):
        di.gradient(f, TAPE, np.r_[Y0, P0 + 1.0])
    with pytest.raises(di.TapeMismatchError, match="no point is above the data"):
        prep.gradient(np.r_[Y0, P0 + 1.0])
    g = lambda v: np.sum(spi.CubicSpline(v[:N], Y0)(P0))
    prep = di.prepare_gradient(g, TAPE, XK)
    with pytest.raises(di.TapeMismatchError, match="x is increasing"):
        prep.gradient(XK[::-1].copy())


def test_sparsity_detection_passes_the_new_nodes():
    f = lambda v: spi.interp1d(XK, v[:N], kind="cubic")(v[N:]) + si.cumulative_trapezoid(v[:N], XK)[:5]
    dense = di.jacobian(f, TAPE, V0)
    sparse = di.jacobian(f, di.AutoSparse(TAPE), V0)
    np.testing.assert_allclose(sparse.toarray() if hasattr(sparse, "toarray") else sparse, dense, rtol=1e-14)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda v: spi.make_interp_spline(XK * v[0], Y0)(0.5), "make_interp_spline with traced x"),
        (lambda v: spi.splev(0.5, spi.splrep(XK, Y0 * v[0], s=0.1)), r"splrep with s > 0"),
        (lambda v: spi.CubicSpline(XK, Y0 - v[0]).roots(), "CubicSpline.solve"),
        (lambda v: spi.BSpline(np.r_[0, 0, 0, 0, 1, 2, 2, 2, 2.0] * v[0], np.ones(5), 3)(0.5), "traced knot"),
        (
            lambda v: spi.RegularGridInterpolator((XK[:4], XK[:4]), np.eye(4) * v[0], method="cubic")([[0.5, 0.5]]),
            "method 'cubic'",
        ),
    ],
)
def test_what_is_refused_names_the_line(call, match):
    with pytest.raises(di.NotSupportedError, match=match) as info:
        di.gradient(lambda v: np.sum(call(v)), TAPE, np.array([1.0, 0.5]))
    assert "test_tape_scipy_interpolate.py" in str(info.value)
