"""AutoTape on NumPy functions real code calls that are compositions of the tape's primitives: interp,
piecewise, select, polynomials (polyval, poly1d, polyfit, roots, vander, numpy.polynomial's evaluation
functions and classes), vectorize, cumprod and the cumulative functions, the NaN-ignoring reductions,
order statistics, cov/corrcoef, lstsq, matrix_power, multi_dot and the rest of numpy.linalg's names.

Each against an exact reference (JAX on the same code, or an analytic derivative, or the same function
written with plain operations), in forward and reverse mode, prepared at one point and called at another
(for interp and piecewise: in other segments and branches, so the replay must find them again), each call
twice, with batched pushforwards/pullbacks and second order (Hessian and Hessian-vector products)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import diface as di

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

P = np.polynomial
MODES = (di.AutoTape(mode="forward"), di.AutoTape(mode="reverse"))
TAPE = di.AutoTape()
RNG = np.random.default_rng(30)


def check(
    f: Callable,
    x: np.ndarray,
    other: np.ndarray,
    jac: Callable,
    hess: Callable | None = None,
    rtol: float = 1e-9,
) -> None:
    """f on the tape: its value is NumPy's, its Jacobian `jac(x)` in both modes (prepared at `other`,
    called at x, twice, and batched pushforwards/pullbacks), and, given `hess(x)` (the Hessian of
    sum(sin(f) * w)), second order."""
    value = np.asarray(f(x))
    want = np.asarray(jac(x)).reshape(value.shape + x.shape)
    tol = dict(rtol=rtol, atol=rtol * max(1.0, float(np.abs(want).max(initial=0.0))))
    y, j = di.value_and_jacobian(f, TAPE, x)
    np.testing.assert_allclose(y, value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j, want, **tol)
    jm = want.reshape(value.size, x.size)
    ts = tuple(RNG.standard_normal(x.shape) for _ in range(2))
    ws = tuple(RNG.standard_normal(value.shape) for _ in range(2))
    for backend in MODES:
        prep = di.prepare_jacobian(f, backend, other)
        push = di.prepare_pushforward(f, backend, other, ts)
        pull = di.prepare_pullback(f, backend, other, ws)
        for _ in range(2):
            np.testing.assert_allclose(prep.jacobian(x), want, **tol)
            for t, r in zip(ts, push.pushforward(x, ts)):
                np.testing.assert_allclose(np.ravel(r), jm @ t.ravel(), **tol)
            for w, r in zip(ws, pull.pullback(x, ws)):
                np.testing.assert_allclose(np.ravel(r), w.ravel() @ jm, **tol)
    if hess is None:
        return
    h_want = np.asarray(hess(x)).reshape(x.size, x.size)
    htol = dict(rtol=100 * rtol, atol=100 * rtol * max(1.0, float(np.abs(h_want).max(initial=0.0))))
    g = second(f, value.shape)
    hessian = di.prepare_hessian(g, TAPE, other)
    hvp = di.prepare_hvp(g, TAPE, other, ts)
    for _ in range(2):
        np.testing.assert_allclose(hessian.hessian(x).reshape(x.size, x.size), h_want, **htol)
        for t, r in zip(ts, hvp.hvp(x, ts)):
            np.testing.assert_allclose(np.ravel(r), h_want @ t.ravel(), **htol)


def second(f: Callable, shape: tuple, xp: Any = np) -> Callable:
    """sum(sin(f(x)) * w): a scalar with every second derivative of f in its Hessian."""
    w = np.cos(np.arange(int(np.prod(shape))) + 1.0).reshape(shape)
    return lambda v: xp.sum(xp.sin(f(v)) * w)


def with_jax(f: Callable, x: np.ndarray, other: np.ndarray, order: int = 1, rtol: float = 1e-9) -> None:
    """`f(xp, x)` on the tape against JAX on the same code (`order` 2: second order too; JAX's compilations
    are most of these tests' time, so most compare first order with JAX and second order otherwise)."""
    fn = lambda v: f(np, v)
    shape = np.shape(fn(x))
    jac = jax.jit(jax.jacfwd(lambda v: f(jnp, v)))
    hess = jax.jit(jax.hessian(second(lambda v: f(jnp, v), shape, jnp))) if order == 2 else None
    check(
        fn,
        x,
        other,
        lambda v: np.asarray(jac(jnp.asarray(v))),
        None if hess is None else lambda v: np.asarray(hess(jnp.asarray(v))),
        rtol,
    )


@contextmanager
def no_runtime_warnings() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


# -- interp ---------------------------------------------------------------------------------------------
XP = np.array([-2.0, -1.1, 0.0, 0.6, 1.5, 3.0])
FP = np.sin(XP) + XP


def _slopes(x: np.ndarray, xp: np.ndarray = XP, fp: np.ndarray = FP) -> np.ndarray:
    j = np.searchsorted(xp, x, side="right") - 1
    inside = (j >= 0) & (j < len(xp) - 1)
    k = np.clip(j, 0, len(xp) - 2)
    return np.where(inside, (fp[k + 1] - fp[k]) / (xp[k + 1] - xp[k]), 0.0)


def test_interp_in_x_recomputes_the_segments_at_another_point():
    x0 = np.array([-2.5, -1.5, -0.3, 0.2, 1.0, 2.2, 3.7])  # every segment and both sides
    x1 = np.array([2.9, 0.7, -1.9, 3.1, -0.05, 0.59, -2.2])  # each in another segment
    assert not np.array_equal(np.searchsorted(XP, x0), np.searchsorted(XP, x1))
    f = lambda v: np.interp(v, XP, FP)
    w = np.cos(np.arange(7.0) + 1.0)  # (see `second`: piecewise linear, so only sin's curvature)
    check(f, x1, x0, lambda v: np.diag(_slopes(v)), lambda v: np.diag(-np.sin(f(v)) * w * _slopes(v) ** 2))
    # at a knot, the slope of the segment starting there; at xp[-1], 0 (the right-hand derivative)
    knots = XP.copy()
    assert np.allclose(np.diag(di.jacobian(f, TAPE, knots)), [*_slopes(knots[:-1]), 0.0])


def test_interp_in_the_table_values_is_linear():
    x = np.array([-3.0, -1.5, 0.3, 1.2, 2.9, 4.0])
    weights = np.stack([np.interp(x, XP, e) for e in np.eye(6)], axis=1)  # exact: linear in fp
    assert np.allclose(weights.sum(axis=1), 1.0) and np.all(weights >= 0)
    w = np.cos(np.arange(6.0) + 1.0)
    hess = lambda fp: weights.T @ np.diag(-np.sin(weights @ fp) * w) @ weights
    check(lambda fp: np.interp(x, XP, fp), FP, FP[::-1].copy(), lambda fp: weights, hess)


def test_interp_in_the_knots_period_and_bounds():
    x = np.array([-3.0, -1.5, 0.3, 1.2, 2.9, 4.0])
    with_jax(lambda xp, v: xp.interp(x, v, FP), XP, XP + 0.01 * np.cos(np.arange(6.0)))
    with_jax(lambda xp, v: xp.interp(v, XP, FP, period=2.5), x + 0.05, x - 0.1)
    with_jax(lambda xp, v: xp.interp(x, XP, v, left=v[1] * 2.0, right=-v[2]), FP, FP + 0.1)
    z = FP + 1j * FP[::-1]
    assert np.array_equal(
        di.value_and_jacobian(lambda v: np.real(np.interp(v, XP, z)), TAPE, x)[0], np.real(np.interp(x, XP, z))
    )
    single = di.jacobian(lambda v: np.interp(v, [0.5], [2.0]), TAPE, x)
    assert np.array_equal(single, np.zeros((6, 6)))


def test_interp_sparsity_and_taylor():
    prep = di.prepare_jacobian(lambda v: np.interp(v, XP, FP), di.AutoSparse(di.AutoTape()), np.linspace(-1, 1, 5))
    assert prep.sparsity_pattern.toarray().astype(int).tolist() == np.eye(5, dtype=int).tolist()
    g = lambda fp: np.sum(np.interp(np.array([0.3, 1.1, -1.7]), XP, fp) ** 3)
    lap = di.prepare_laplacian(g, TAPE, FP).laplacian(FP + 0.2)
    assert np.isclose(lap, np.trace(di.hessian(g, TAPE, FP + 0.2)), rtol=1e-12)


# -- piecewise and select ------------------------------------------------------------------------------------
X5 = np.array([-2.0, -0.5, 0.3, 1.5, 2.5])
Y5 = np.array([1.0, -0.5, -0.3, -1.5, 2.5])  # other branches for elements 0, 2, 3


def test_piecewise_is_one_tape_for_every_x():
    f = lambda v: np.piecewise(v, [v < 0, v > 2], [lambda u: np.sqrt(-u), lambda u: np.log(u) * 2.0, lambda u: u**2])

    def plain(v: Any) -> Any:  # the same with where, each function at safe values where not selected
        low, high = v < 0, v > 2
        return np.where(
            low, np.sqrt(np.where(low, -v, 1.0)), np.where(high, np.log(np.where(high, v, 1.0)) * 2.0, v**2)
        )

    with no_runtime_warnings():  # sqrt and log of the unselected entries: neither computed nor warned of
        check(f, Y5, X5, lambda v: di.jacobian(plain, TAPE, v), lambda v: di.hessian(second(plain, (5,)), TAPE, v))


def test_piecewise_constants_arguments_and_closures():
    def f(v: Any) -> Any:
        return np.piecewise(
            v, [v < 0, v > 2], [0.5, lambda u, a, b=1.0: a * u * b, lambda u, a, b=1.0: np.exp(u) * v[0]], 3.0, b=2.0
        )

    def plain(v: Any) -> Any:
        return np.where(v < 0, 0.5, np.where(v > 2, 3.0 * v * 2.0, np.exp(v) * v[0]))

    jac = lambda v: di.jacobian(plain, TAPE, v)
    check(f, Y5, X5, jac, lambda v: di.hessian(second(plain, (5,)), TAPE, v))
    # a branch that selects nothing: its function still runs (at a selected value), no NaN, no warning
    g = lambda v: np.sum(np.piecewise(v, [v < 0], [lambda u: v[1] * np.sqrt(-u), lambda u: v[2] * np.log(u)]))
    prep = di.prepare_gradient(g, TAPE, X5)
    with no_runtime_warnings():
        for point in (np.abs(X5), -np.abs(X5)):
            grad = prep.gradient(point)
            assert np.all(np.isfinite(grad))
            assert np.allclose(grad, di.gradient(g, di.AutoFiniteDiff(), point), rtol=1e-6)


def test_piecewise_of_a_function_that_is_not_elementwise_is_numpys():
    f = lambda v: np.piecewise(v, [v < 0], [lambda u: u - np.mean(u), lambda u: 2.0 * u])
    assert np.array_equal(di.value_and_jacobian(f, TAPE, X5)[0], f(X5))
    x1 = np.array([-1.0, -0.7, 0.4, 1.5, 2.0])  # the same count below 0: the same tape
    j = di.prepare_jacobian(f, TAPE, X5).jacobian(x1)
    assert np.allclose(j, di.jacobian(f, di.AutoFiniteDiff(), x1), atol=1e-6)
    with pytest.raises(di.TapeMismatchError, match="number of elements"):
        di.prepare_jacobian(f, TAPE, X5).jacobian(Y5)
    # a condition known at recording: NumPy's way, no guard
    mask = np.array([True, False, True, False, False])
    h = lambda v: np.piecewise(v, [mask], [lambda u: u - np.mean(u), lambda u: np.sin(u)])
    check(h, Y5, X5, lambda v: di.jacobian(h, di.AutoFiniteDiff(), v), rtol=1e-6)


def test_select_with_traced_conditions_choices_and_default():
    f = lambda v: np.select([v < 0, v > 2], [v**2, np.exp(v)], default=v * v[0])
    plain = lambda v: np.where(v < 0, v**2, np.where(v > 2, np.exp(v), v * v[0]))
    check(f, Y5, X5, lambda v: di.jacobian(plain, TAPE, v), lambda v: di.hessian(second(plain, (5,)), TAPE, v))


# -- polynomials ------------------------------------------------------------------------------------------
C4 = np.array([0.7, -1.2, 0.4, 2.0])
T4 = np.array([-0.8, -0.1, 0.6, 1.3])


def test_polyval_poly1d_vander():
    with_jax(lambda xp, v: xp.polyval(v[:4], v[4:]), np.concatenate([C4, T4]), np.concatenate([C4[::-1], T4 + 0.1]))
    with_jax(lambda xp, v: xp.vander(v, 3) + xp.vander(v, increasing=True)[:, :3], T4, T4 + 0.3)
    p = lambda v: np.poly1d(v[:4])(v[4:])
    check(
        p,
        np.concatenate([C4, T4]),
        np.concatenate([C4 + 1, T4]),
        lambda v: di.jacobian(lambda u: np.polyval(u[:4], u[4:]), TAPE, v),
    )
    zeros = lambda v: np.trim_zeros(np.concatenate([np.zeros(2), v, np.zeros(1)]))
    assert np.array_equal(di.jacobian(zeros, TAPE, C4), np.eye(4))


def test_polyfit_in_y_x_and_weights():
    """Against the normal equations (the same least-squares solution, computed another way)."""
    x = np.linspace(-1.0, 2.0, 7)
    y = np.sin(x) + 0.3 * x**2
    w0 = np.arange(1.0, 8.0)

    def normal(xs: Any, ys: Any, w: Any) -> Any:
        v = np.stack([xs**2, xs, np.ones_like(xs)], axis=1) * w[:, None]
        return np.linalg.solve(v.T @ v, v.T @ (ys * w))

    for f, plain, v0, v1 in (
        (lambda v: np.polyfit(x, v, 2), lambda v: normal(x, v, np.ones(7)), y, y[::-1].copy()),
        (lambda v: np.polyfit(v, y, 2), lambda v: normal(v, y, np.ones(7)), x, x + 0.01 * np.cos(np.arange(7.0))),
        (lambda v: np.polyfit(x, y, 2, w=v), lambda v: normal(x, y, v), w0, w0[::-1].copy()),
    ):
        check(
            f,
            v0,
            v1,
            lambda v, p=plain: di.jacobian(p, TAPE, v),
            lambda v, p=plain: di.hessian(second(p, (3,)), TAPE, v),
            rtol=1e-8,
        )
    cov = lambda v: np.polyfit(x, v, 2, cov=True)[1]
    jcov = jax.jit(jax.jacfwd(lambda v: jnp.polyfit(jnp.asarray(x), v, 2, cov=True)[1]))
    check(cov, y, y + 0.1, lambda v: np.asarray(jcov(v)))


def test_roots_are_eigenvalues_of_the_companion_matrix():
    p = np.array([1.0, -6.0, 11.0, -6.0])  # roots 3, 2, 1
    f = lambda v: np.roots(v)

    def analytic(v: np.ndarray) -> np.ndarray:  # dr/dp_k = -r^(n-1-k) / p'(r)
        r = np.roots(v)
        return np.array(
            [[-(ri ** (len(v) - 1 - k)) / np.polyval(np.polyder(v), ri) for k in range(len(v))] for ri in r]
        )

    check(f, p + 0.01, p, analytic)

    def quadratic(v: Any) -> Any:  # the roots of v[0] x^2 + v[1] x + v[2] in closed form, larger first
        root = np.sqrt(v[1] ** 2 - 4.0 * v[0] * v[2])
        return np.stack([(-v[1] + root) / (2.0 * v[0]), (-v[1] - root) / (2.0 * v[0])])

    q = np.array([1.0, -3.0, 2.0])
    check(
        f,
        q + 0.01,
        q,
        lambda v: di.jacobian(quadratic, TAPE, v),
        lambda v: di.hessian(second(quadratic, (2,)), TAPE, v),
    )
    with pytest.raises(di.NotSupportedError, match="complex roots"):
        di.jacobian(f, TAPE, np.array([1.0, 0.0, 1.0]))
    with pytest.raises(di.TapeMismatchError):
        di.prepare_jacobian(f, TAPE, p).jacobian(np.array([0.0, 1.0, -3.0, 2.0]))
    trailing = lambda v: np.roots(np.concatenate([v, np.zeros(1)]))
    assert np.allclose(di.jacobian(trailing, TAPE, p)[:3], analytic(p)) and np.array_equal(
        di.jacobian(trailing, TAPE, p)[3], np.zeros(4)
    )


FAMILIES = {
    "polynomial": (P.polynomial.polyval, P.polynomial.polyvander, P.polynomial.polyder, P.Polynomial),
    "chebyshev": (P.chebyshev.chebval, P.chebyshev.chebvander, P.chebyshev.chebder, P.Chebyshev),
    "legendre": (P.legendre.legval, P.legendre.legvander, P.legendre.legder, P.Legendre),
    "hermite": (P.hermite.hermval, P.hermite.hermvander, P.hermite.hermder, P.Hermite),
    "hermite_e": (P.hermite_e.hermeval, P.hermite_e.hermevander, P.hermite_e.hermeder, P.HermiteE),
    "laguerre": (P.laguerre.lagval, P.laguerre.lagvander, P.laguerre.lagder, P.Laguerre),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_numpy_polynomial_evaluation(family):
    """d/dc val(x, c) is the pseudo-Vandermonde matrix, d/dx the derivative series: both exact in NumPy."""
    val, vander, der, kind = FAMILIES[family]
    v0, v1 = np.concatenate([C4, T4]), np.concatenate([C4[::-1], T4 - 0.2])

    def jac(v: np.ndarray) -> np.ndarray:
        c, x = v[:4], v[4:]
        return np.concatenate([vander(x, 3), np.diag(val(x, der(c)))], axis=1)

    hess = None
    if family == "polynomial":
        hess = lambda v: di.hessian(second(lambda u: np.polyval(u[:4][::-1], u[4:]), (4,)), TAPE, v)
    check(lambda v: val(v[4:], v[:4]), v1, v0, jac, hess)
    check(lambda v: kind(v[:4])(v[4:]), v1, v0, jac)


def test_numpy_polynomial_domains_grids_and_tensors():
    x, y = T4[:2], T4[2:]
    c = RNG.standard_normal((3, 2))
    f = lambda v: P.polynomial.polyval2d(v[:2], v[2:], c)
    g = lambda v: P.chebyshev.chebgrid2d(x, y, v.reshape(3, 2))

    def partials(v: np.ndarray) -> np.ndarray:
        along = [np.diag(P.polynomial.polyval2d(v[:2], v[2:], P.polynomial.polyder(c, axis=k))) for k in (0, 1)]
        return np.concatenate(along, axis=1)

    check(f, T4, T4 + 0.1, partials)
    vand = P.chebyshev.chebvander2d(np.repeat(x, 2), np.tile(y, 2), [2, 1])
    check(g, c.ravel(), c.ravel() + 0.1, lambda v: vand)
    domain = lambda v: P.Legendre(C4, domain=[-2.0, 1.0])(v)
    scaled = lambda v: P.legendre.legval(v * (2.0 / 3.0) + 1.0 / 3.0, C4)
    check(domain, T4, T4 + 0.1, lambda v: di.jacobian(scaled, TAPE, v))
    tensor = lambda v: P.polynomial.polyval(T4, v.reshape(3, 2))
    check(tensor, c.ravel(), c.ravel() - 0.1, lambda v: di.jacobian(tensor, di.AutoFiniteDiff(), v), rtol=1e-6)


def test_numpy_polynomial_first_used_inside_f():
    """numpy.polynomial is imported on first use: here inside f, during its first recording."""
    code = (
        "import sys, numpy as np, diface as di\n"
        "assert 'numpy.polynomial' not in sys.modules\n"
        "g = di.gradient(lambda c: np.sum(np.polynomial.Chebyshev(c)(np.array([0.5, -0.3]))), di.AutoTape(),"
        " np.array([1.0, 2.0, 3.0]))\n"
        "assert np.allclose(g, np.polynomial.chebyshev.chebvander(np.array([0.5, -0.3]), 2).sum(axis=0))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- vectorize --------------------------------------------------------------------------------------------
def _branchy(t: Any, scale: float = 1.0) -> Any:
    if t > 0:
        return t**2 * scale
    return np.sin(t) * scale


def test_vectorize_runs_the_function_per_element():
    from numpy import vectorize  # the same class: its __call__ dispatches

    x = np.array([0.5, -1.2, 2.0, 0.7])
    other = np.array([0.4, -1.0, 1.0, 0.1])  # the same branches: the guards pass
    plain = lambda v: np.where(v > 0, v**2 * 3.0, np.sin(v) * 3.0)
    check(
        lambda v: vectorize(_branchy)(v, scale=3.0),
        x,
        other,
        lambda v: di.jacobian(plain, TAPE, v),
        lambda v: di.hessian(second(plain, (4,)), TAPE, v),
    )
    two = lambda v: np.stack(
        np.vectorize(lambda a, b: (a * b, a - b), otypes=[float, float])(v[:2].reshape(2, 1), v[2:])
    )
    check(
        two,
        x,
        other,
        lambda v: di.jacobian(lambda u: np.stack([u[:2].reshape(2, 1) * u[2:], u[:2].reshape(2, 1) - u[2:]]), TAPE, v),
    )
    excluded = lambda v: np.vectorize(lambda t, s: t * s[0], excluded=[1])(v, v[1:])
    check(excluded, x, other, lambda v: di.jacobian(lambda u: u * u[1], TAPE, v))
    with pytest.raises(di.TapeMismatchError):
        di.prepare_jacobian(lambda v: vectorize(_branchy)(v), TAPE, x).jacobian(-x)
    with pytest.raises(di.NotSupportedError, match="signature="):
        di.jacobian(lambda v: np.vectorize(lambda t: t, signature="()->()")(v), TAPE, x)


# -- cumulative, differences ------------------------------------------------------------------------------------
def test_cumprod_is_exact_at_zero_factors_to_second_order():
    with_jax(
        lambda xp, v: xp.cumprod(xp.reshape(v, (2, 4)), axis=1),
        np.array([0.5, 0.0, 2.0, 0.0, 1.3, -0.4, 0.0, 0.9]),
        RNG.standard_normal(8),
    )
    with_jax(lambda xp, v: xp.cumprod(v), np.array([0.0, 1.5, 2.0, 0.7, -0.3]), np.array([0.5, 1.5, 0.0, 0.7, -0.3]))
    pattern = di.prepare_jacobian(np.cumprod, di.AutoSparse(di.AutoTape()), np.ones(4)).sparsity_pattern
    assert pattern.toarray().astype(int).tolist() == np.tril(np.ones((4, 4), dtype=int)).tolist()


def test_cumulative_functions_and_differences():
    x = np.array([0.5, -1.2, 2.0, 0.7, 1.3, -0.4])
    nan = np.array([False, True, False, False, True, False])

    def f(xp: Any, v: Any) -> Any:
        w = xp.where(nan, xp.nan, v)
        return xp.concatenate([
            xp.cumulative_sum(xp.reshape(v, (2, 3)), axis=1, include_initial=True).ravel(),
            xp.cumulative_prod(v, include_initial=True),
            xp.nancumsum(w), xp.nancumprod(w), xp.multiply.accumulate(v),
            xp.ediff1d(v, to_begin=v[:1], to_end=xp.array([5.0])),
            xp.correlate(v, xp.array([1.0, 2.0, 0.5]), "same"), xp.correlate(v[:2], v, "full"),
        ])  # fmt: skip

    with_jax(f, x, x[::-1].copy())


# -- statistics -----------------------------------------------------------------------------------------------
X8 = np.array([0.5, -1.2, 2.0, 0.7, 1.3, -0.4, 0.1, 0.9])
NAN8 = np.array([False, True, False, False, False, True, False, False])


def test_nan_reductions():
    def f(xp: Any, v: Any) -> Any:
        w = xp.reshape(xp.where(NAN8, xp.nan, v), (2, 4))
        return xp.concatenate([
            xp.nanmax(w, axis=1), xp.nanmin(w, axis=1), xp.nanprod(w, axis=0)[::2],
            xp.nanvar(w, axis=1, ddof=1), xp.nanstd(w, axis=1), xp.nanmean(w, axis=1),
        ])  # fmt: skip

    with_jax(f, X8, X8[::-1].copy())
    empty = np.array([np.nan, np.nan, 1.0, 2.0]).reshape(2, 2)
    with pytest.warns(RuntimeWarning, match="All-NaN"):
        assert np.isnan(di.value_and_jacobian(lambda v: np.nanmax(v * empty, axis=1), TAPE, np.ones(2))[0][0])


def test_order_statistics():
    def f(xp: Any, v: Any) -> Any:
        m = xp.reshape(v, (2, 4))
        w = xp.reshape(xp.where(NAN8, xp.nan, v), (2, 4))
        return xp.concatenate([
            xp.median(m, axis=1), xp.median(v[:7])[None], xp.median(m, axis=0, keepdims=True).ravel(),
            xp.quantile(m, xp.array([0.2, 0.5, 0.9]), axis=1).ravel(), xp.percentile(v, 30)[None],
            xp.nanmedian(w, axis=1), xp.nanquantile(w, 0.3, axis=1), xp.nanpercentile(w.ravel(), 65.0)[None],
            xp.quantile(v, 0.3, method="nearest")[None], xp.quantile(v, 0.45, method="midpoint")[None],
        ])  # fmt: skip

    other = X8 + 0.05 * np.cos(np.arange(8.0))  # the same order: the same positions (not required)
    with_jax(f, X8, other)
    with_jax(f, X8, X8[::-1].copy())  # another order: the sort is recomputed
    for method in ("hazen", "weibull", "inverted_cdf", "closest_observation", "averaged_inverted_cdf"):
        q = lambda v, m=method: np.quantile(v, [0.1, 0.45, 0.8], method=m)
        assert np.array_equal(di.value_and_jacobian(q, TAPE, X8)[0], q(X8))


def test_cov_and_corrcoef():
    def f(xp: Any, v: Any) -> Any:
        return xp.concatenate([
            xp.cov(xp.reshape(v, (2, 4))).ravel(), xp.cov(v)[None],
            xp.cov(xp.reshape(v, (4, 2)), v[::-1].reshape(4, 2) ** 2, rowvar=False).ravel(),
            xp.cov(xp.reshape(v, (2, 4)), aweights=xp.array([1.0, 2.0, 0.5, 1.5]), fweights=xp.array([1, 2, 1, 3]))
            .ravel(),
            xp.corrcoef(xp.reshape(v, (2, 4))).ravel(),
        ])  # fmt: skip

    with_jax(f, X8, X8[::-1].copy())


# -- linear algebra ---------------------------------------------------------------------------------------------
M3 = np.array([[2.0, 0.3, 0.1], [0.2, 1.5, 0.4], [0.1, 0.3, 3.0]])
X9 = RNG.standard_normal(9)


def test_lstsq():
    """Against the normal equations, and a rank-1 matrix's pseudo-inverse in closed form."""

    def f(v: Any) -> Any:
        x, residuals, rank, s = np.linalg.lstsq(v[:6].reshape(3, 2), v[6:], rcond=None)
        wide = np.linalg.lstsq(v[:6].reshape(2, 3), v[6:8], rcond=None)[0]
        many = np.linalg.lstsq(v[:8].reshape(4, 2), np.stack([v[:4] ** 2, v[4:8]]).T, rcond=None)[0]
        assert rank == 2
        return np.concatenate([x, residuals, s, wide, many.ravel()])

    def plain(v: Any) -> Any:
        a, w, t = v[:6].reshape(3, 2), v[:6].reshape(2, 3), v[:8].reshape(4, 2)
        x = np.linalg.solve(a.T @ a, a.T @ v[6:])
        residuals = np.sum((v[6:] - a @ x) ** 2)[None]
        s = np.sqrt(np.linalg.eigvalsh(a.T @ a))[::-1]
        wide = w.T @ np.linalg.solve(w @ w.T, v[6:8])
        many = np.linalg.solve(t.T @ t, t.T @ np.stack([v[:4] ** 2, v[4:8]]).T)
        return np.concatenate([x, residuals, s, wide, many.ravel()])

    check(
        f,
        X9,
        X9[::-1].copy(),
        lambda v: di.jacobian(plain, TAPE, v),
        lambda v: di.hessian(second(plain, (12,)), TAPE, v),
        rtol=1e-8,
    )
    rank1 = lambda v: np.linalg.lstsq(np.outer(v[:3], v[3:5]), v[5:8], rcond=None)[0]
    closed = lambda v: np.outer(v[3:5], v[:3]) @ v[5:8] / (np.sum(v[:3] ** 2) * np.sum(v[3:5] ** 2))
    check(
        rank1,
        X9,
        X9 + 0.1,
        lambda v: di.jacobian(closed, TAPE, v),
        lambda v: di.hessian(second(closed, (2,)), TAPE, v),
        rtol=1e-8,
    )


def test_matrix_power_multi_dot_and_the_array_api_names():
    def f(xp: Any, v: Any) -> Any:
        a = xp.reshape(v, (3, 3))
        b = M3 + 0.1 * a
        return xp.concatenate([
            xp.linalg.matrix_power(a * 0.5, 5).ravel(), xp.linalg.matrix_power(b, -2).ravel(),
            xp.linalg.matrix_power(a, 0).ravel() * v[0], xp.linalg.multi_dot([v[:3], M3, a, M3[:, :2]]),
            xp.linalg.multi_dot([M3, a, v[:3]]), xp.linalg.cond(b)[None], xp.linalg.cond(b, "fro")[None],
            xp.linalg.tensorinv(b, ind=1).ravel(), xp.linalg.tensorsolve(b, v[:3]),
            xp.linalg.vector_norm(a, axis=(0, 1), ord=3)[None], xp.linalg.matrix_norm(a, ord=1)[None],
            xp.linalg.outer(v[:3], v[3:6]).ravel(), xp.linalg.cross(v[:3], v[3:6]),
            xp.linalg.diagonal(a, offset=1), xp.linalg.trace(a)[None], xp.linalg.matrix_transpose(a).ravel(),
            xp.linalg.vecdot(a, v[:3]), xp.linalg.tensordot(a, M3, axes=1).ravel(),
        ])  # fmt: skip

    with_jax(f, X9, X9[::-1].copy(), rtol=1e-8)


def test_assorted_functions():
    x = np.array([0.5, -1.2, 9.0, 0.7, 1.3, -0.4, 3.1, 0.9])

    def f(xp: Any, v: Any) -> Any:
        grid = xp.stack(xp.meshgrid(v[:3], v[3:5]))
        along = xp.apply_along_axis(lambda u: xp.stack([u.sum(), (u**2).max()]), 1, xp.reshape(v, (2, 4)))
        return xp.concatenate([
            xp.i0(v), xp.unwrap(xp.cumsum(v) * 2.0), grid.ravel(), xp.dstack([v[:4], v[4:]]).ravel(), along.ravel(),
        ])  # fmt: skip

    with_jax(f, x, x + 0.1, rtol=1e-8)
    assert np.array_equal(di.jacobian(lambda v: np.unstack(v.reshape(2, 4), axis=1)[2], TAPE, x), np.eye(8)[[2, 6]])


def test_sparsity_and_taylor_through_the_compositions():
    sparse = di.AutoSparse(di.AutoTape())
    f = lambda v: np.piecewise(v, [v < 0], [lambda u: u**3, lambda u: np.exp(u)]) + np.polyval(C4, v)
    assert (
        di.prepare_jacobian(f, sparse, X5).sparsity_pattern.toarray().astype(int).tolist()
        == np.eye(5, dtype=int).tolist()
    )
    for g in (
        lambda v: np.sum(np.piecewise(v, [v < 0], [lambda u: u**3, lambda u: np.exp(u)])),
        lambda v: np.sum(np.cumprod(v) ** 2),
        lambda v: np.median(v**2) + np.sum(P.Chebyshev(v)(v)),
    ):
        lap = di.prepare_laplacian(g, TAPE, X5).laplacian(Y5)
        assert np.isclose(lap, np.trace(di.hessian(g, TAPE, Y5)), rtol=1e-10)
