"""AutoTape's rules for SciPy: scipy.special's ufuncs (gamma, erf and Bessel families, ...), its
Python-level functions (logsumexp, softmax, polygamma, multigammaln), scipy.stats distributions and
scipy.signal.convolve, against JAX or autograd (finite differences where neither has the function), to
second order, prepared at one point and called at another, twice (see `check_rule`)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import diface as di

sp = pytest.importorskip("scipy.special")
stats = pytest.importorskip("scipy.stats")
signal = pytest.importorskip("scipy.signal")
from scipy.special import logsumexp as early_logsumexp  # noqa: E402 - imported before any recording
from test_tape_rules import TAPE, check_rule  # noqa: E402

jsp = pytest.importorskip("jax.scipy.special")
jstats = pytest.importorskip("jax.scipy.stats")
jsignal = pytest.importorskip("jax.scipy.signal")
asp = pytest.importorskip("autograd.scipy.special")

RNG = np.random.default_rng(5)
POS = np.abs(RNG.standard_normal(4)) + 0.6  # in (0.6, ...): inside every domain below
UNIT = np.array([0.15, 0.35, 0.6, 0.8])


SP = {"numpy": sp, "jax": jsp, "autograd": asp, "fd": sp}


def special(engine: str, expression: Any) -> Any:
    """`expression(xp, special_namespace, x)` as a check_rule function for `engine`."""
    import autograd.numpy as anp
    import jax.numpy as jnp

    names = {np: "numpy", jnp: "jax", anp: "autograd"}
    return lambda xp, x: expression(xp, SP[names.get(xp, "numpy")], x)


SPECIAL_RULES: dict[str, tuple[Any, np.ndarray, str]] = {
    "gamma": (lambda xp, s, x: s.gamma(x), POS, "jax"),
    "gammaln digamma": (lambda xp, s, x: s.gammaln(x) + s.digamma(x), POS, "jax"),
    "rgamma": (lambda xp, s, x: s.rgamma(x), POS, "autograd"),
    "polygamma": (lambda xp, s, x: s.polygamma(1, x) + s.polygamma(2, x), POS, "jax"),
    "beta betaln": (lambda xp, s, x: s.beta(x, x[::-1] + 0.5) + s.betaln(x, 2.0 * x), POS, "autograd"),
    "multigammaln": (lambda xp, s, x: s.multigammaln(x + 2.0, 3), POS, "jax"),
    "erf erfc": (lambda xp, s, x: s.erf(x) * s.erfc(x - 1.0), POS, "jax"),
    "erfinv erfcinv": (lambda xp, s, x: s.erfinv(UNIT * x / 3.0) + s.erfcinv(UNIT + 0.1 * x), POS, "autograd"),
    "erfcx": (lambda xp, s, x: s.erfcx(x), POS, "jax"),
    "i0 i1 i0e i1e": (lambda xp, s, x: s.i0(x) + s.i1(x) * s.i0e(x - 1.0) + s.i1e(x), POS, "jax"),
    "j0 j1 y0 y1": (lambda xp, s, x: s.j0(x) + s.j1(x) * s.y0(x) + s.y1(x), POS, "autograd"),
    "jv iv (jn)": (lambda xp, s, x: s.jn(2, x) + s.iv(1.5, x), POS, "autograd"),
    "yn ive": (lambda xp, s, x: s.yn(1, x) * s.ive(1.0, x), POS, "autograd"),
    "kv yv k0 k1 kve": (lambda xp, s, x: s.kv(0.7, x) + s.yv(1.5, x) + s.k0(x) * s.k1(x) + s.kve(1.2, x), POS, "fd"),
    "gammainc gammaincc betainc": (
        lambda xp, s, x: s.gammainc(1.5, x) + s.gammaincc(2.5, x) + s.betainc(2.0, 3.0, UNIT * x / 3.0),
        POS,
        "jax",
    ),
    "logsumexp": (lambda xp, s, x: s.logsumexp(x), POS, "jax"),
    "logsumexp axis b keepdims": (
        lambda xp, s, x: s.logsumexp(xp.reshape(x, (2, 2)), axis=0, b=UNIT.reshape(2, 2), keepdims=True),
        POS,
        "jax",
    ),
    "logsumexp return_sign": (
        lambda xp, s, x: s.logsumexp(x, b=UNIT - 0.5, return_sign=True)[0],
        POS,
        "jax",
    ),
    "softmax log_softmax": (lambda xp, s, x: s.softmax(x) * s.log_softmax(x)[0], POS, "jax"),
    "ndtri log_ndtr expit logit": (
        lambda xp, s, x: s.ndtri(UNIT * x / 3.0) + s.log_ndtr(x) + s.expit(x) * s.logit(UNIT + 0.01 * x),
        POS,
        "jax",
    ),
}


@pytest.mark.parametrize("name", list(SPECIAL_RULES))
def test_special_rule(name):
    expression, x, engine = SPECIAL_RULES[name]
    check_rule(special(engine, expression), x, engine, rtol=1e-6 if engine == "fd" else 1e-8)


ST = {"numpy": stats, "jax": jstats, "autograd": pytest.importorskip("autograd.scipy.stats")}


def stats_of(xp: Any) -> Any:
    import autograd.numpy as anp
    import jax.numpy as jnp

    return ST["jax" if xp is jnp else "autograd" if xp is anp else "numpy"]


# (expression(xp, distributions, x), x, engine); traced parameters are positional (autograd differentiates those)
STATS_RULES: dict[str, tuple[Any, np.ndarray, str]] = {
    "norm": (
        lambda xp, d, x: xp.stack(
            [
                d.norm.logpdf(x[0], x[1], x[2]),
                d.norm.pdf(x[0], 0.3, x[2]),
                d.norm.cdf(x[0], x[1]),
                d.norm.logcdf(x[1], 0.3),
                d.norm.sf(x[0], x[1], x[2]),
                d.norm.logsf(x[1]),
            ]
        ),
        np.array([0.3, -0.2, 1.4]),
        "autograd",
    ),
    "t": (
        lambda xp, d, x: xp.stack([d.t.logpdf(x[0], x[1] + 2.0, x[2], 1.3), d.t.pdf(x[0], 3.0, 0.1, x[1] + 1.0)]),
        np.array([0.3, 0.8, -0.4]),
        "autograd",
    ),
    "t cdf": (
        lambda xp, d, x: xp.stack([d.t.cdf(x[0], 4.0, x[2]), d.t.logcdf(x[0], 3.0), d.t.sf(x[1], 2.5, x[0], 1.5)]),
        np.array([0.3, 0.8, -0.4]),
        "fd",
    ),
    "gamma": (
        lambda xp, d, x: xp.stack(
            [d.gamma.logpdf(x[0], x[1]), d.gamma.pdf(x[0], 2.5, 0.0, x[1]), d.gamma.cdf(x[0], 2.0, 0.1, x[1])]
        ),
        np.array([1.3, 1.7]),
        "jax",
    ),
    "beta": (
        lambda xp, d, x: xp.stack(
            [d.beta.logpdf(x[0], x[1], x[1] + 1.0), d.beta.pdf(x[0], 2.0, 3.0), d.beta.cdf(x[0], 2.0, 3.0)]
        ),
        np.array([0.3, 1.7]),
        "autograd",
    ),
    "chi2": (
        lambda xp, d, x: xp.stack([d.chi2.logpdf(x[0], x[1]), d.chi2.pdf(x[0], 3.0, 0.0, x[1]), d.chi2.cdf(x[0], 4.0)]),
        np.array([1.3, 2.2]),
        "jax",
    ),
    "expon laplace cauchy logistic": (
        lambda xp, d, x: xp.stack(
            [
                d.expon.logpdf(x[0], 0.0, x[1]),
                d.expon.cdf(x[0]),
                d.laplace.logpdf(x[0], x[1]),
                d.laplace.cdf(x[0], x[1]),
                d.cauchy.logpdf(x[0], x[1]),
                d.cauchy.cdf(x[0]),
                d.logistic.logpdf(x[0], x[1]),
                d.logistic.cdf(x[0], 0.0, x[1]),
            ]
        ),
        np.array([0.7, 1.2]),
        "jax",
    ),
    "poisson": (
        lambda xp, d, x: xp.stack([d.poisson.logpmf(3.0, x[0]), d.poisson.pmf(2.0, x[0]), d.poisson.cdf(2.0, x[0])]),
        np.array([1.7]),
        "autograd",
    ),
}


@pytest.mark.parametrize("name", list(STATS_RULES))
def test_stats_rule(name):
    expression, x, engine = STATS_RULES[name]
    check_rule(lambda xp, v: expression(xp, stats_of(xp), v), x, engine, rtol=1e-6 if engine == "fd" else 1e-8)


MEAN = np.array([0.2, -0.1])
COV = np.array([[1.3, 0.4], [0.4, 0.8]])


def test_multivariate_normal_and_dirichlet():
    def mvn(xp: Any, v: Any) -> Any:
        d = stats_of(xp).multivariate_normal
        points = xp.reshape(v[:6], (3, 2))
        cov = xp.reshape(v[6:10], (2, 2))
        cov = cov @ cov.T + xp.eye(2)
        return xp.concatenate(
            [d.logpdf(points, v[10:12], cov), d.pdf(points[0], MEAN, COV)[None], d.logpdf(v[0], v[1], 2.0)[None]]
        )

    check_rule(mvn, RNG.standard_normal(12), "jax")

    def dirichlet(xp: Any, v: Any) -> Any:
        d = stats_of(xp).dirichlet
        x = xp.exp(v[:3]) / xp.sum(xp.exp(v[:3]))
        alpha = xp.exp(v[3:]) + 0.5
        return xp.stack([d.logpdf(x, alpha), d.pdf(x, alpha)])

    check_rule(dirichlet, RNG.standard_normal(6), "autograd")

    def scalar(v: np.ndarray) -> Any:  # one dimension: mean and cov as numbers
        return stats.multivariate_normal.logpdf(v[0], v[1], v[2] ** 2)

    v = np.array([0.3, -0.2, 1.5])
    want = -0.5 * (np.log(2 * np.pi * v[2] ** 2) + (v[0] - v[1]) ** 2 / v[2] ** 2)
    np.testing.assert_allclose(di.value_and_gradient(scalar, TAPE, v)[0], want, rtol=1e-14)
    np.testing.assert_allclose(di.gradient(scalar, TAPE, v), di.gradient(scalar, di.AutoFiniteDiff(), v), rtol=1e-6)


def test_signal_convolve():
    import jax.numpy as jnp

    def conv(xp: Any, v: Any) -> Any:
        c = jsignal.convolve if xp is jnp else signal.convolve
        a, k = xp.reshape(v[:12], (3, 4)), xp.reshape(v[12:16], (2, 2))
        return xp.concatenate(
            [
                xp.ravel(c(a, k)),
                xp.ravel(c(a, k, mode="same")),
                xp.ravel(c(a, k, mode="valid")),
                c(v[:5], v[5:8], mode="same"),
            ]
        )

    check_rule(conv, RNG.standard_normal(16), "jax")


def test_functions_imported_before_any_recording_dispatch_too():
    x = np.array([0.3, -1.2, 2.0])
    want = np.exp(x - early_logsumexp(x))
    for _ in range(2):
        np.testing.assert_allclose(di.gradient(early_logsumexp, TAPE, x), want, rtol=1e-14)
        np.testing.assert_allclose(di.prepare_gradient(early_logsumexp, TAPE, x + 1).gradient(x), want, rtol=1e-14)


def test_hooked_functions_are_unchanged_without_traced_arguments():
    from diface.backends.tape.numpy.hooks import original

    di.gradient(lambda x: sp.logsumexp(x) + stats.norm.logpdf(x[0]), TAPE, np.ones(2))
    for f in (sp.logsumexp, sp.polygamma, stats.rv_continuous.logpdf, signal.convolve):
        assert original(f) is not f and inspect.signature(f) == inspect.signature(original(f))
    x = np.array([[0.3, -1.2], [2.0, 0.1]])
    assert sp.logsumexp(x, axis=1).tolist() == original(sp.logsumexp)(x, axis=1).tolist()
    assert (
        stats.norm.logpdf(x, 0.5, 2.0).tolist()
        == original(stats.rv_continuous.logpdf)(stats.norm, x, 0.5, 2.0).tolist()
    )
    np.testing.assert_array_equal(signal.convolve(x, x), original(signal.convolve)(x, x))
    assert stats.norm(1.0, 2.0).cdf(0.5) == stats.norm.cdf(0.5, 1.0, 2.0)


def test_what_scipy_rules_refuse():
    x = np.array([0.3, 0.8])
    with pytest.raises(
        di.NotSupportedError, match=r"scipy\.special\.jv with respect to its argument 1.*test_tape_scipy"
    ):
        di.gradient(lambda v: np.sum(sp.jv(v, 1.0)), TAPE, x)
    with pytest.raises(di.NotSupportedError, match=r"scipy\.stats\.genextreme\.logpdf.*test_tape_scipy"):
        di.gradient(lambda v: np.sum(stats.genextreme.logpdf(v, 0.5)), TAPE, x)
    with pytest.raises(di.NotSupportedError, match=r"scipy\.special\.polygamma with respect to its order n"):
        di.gradient(lambda v: np.sum(sp.polygamma(v, 1.0)), TAPE, x)
