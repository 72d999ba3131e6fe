"""AutoTape's rules for the special functions of issue 31 and the scipy.stats families and quantile
functions: lambertw, spence, entr, rel_entr, kl_div, huber and pseudo_huber (closed-form partials);
the parameter derivatives that have no closed form (gammainc/gammaincc in a, betainc/betaincc in a and
b, zeta in s, stdtr in df, and the inverse functions), which are families of primitives, exact to every
order; and the pdf/logpdf/cdf/logcdf/sf/logsf/ppf/isf of 21 continuous families.

References: autograd (the closed-form families, written by hand with autograd.numpy), analytic
derivatives (lambertw, the identities cdf(ppf(q)) = q), and mpmath at 30 digits (the parameter
derivatives). Each is checked prepared at one point and called at another, twice, forward and reverse,
and to second order (`check_rule` of test_tape_rules.py, or `check_exact` here)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diface as di

sp = pytest.importorskip("scipy.special")
stats = pytest.importorskip("scipy.stats")
mp = pytest.importorskip("mpmath")
from test_tape_rules import TAPE, check_rule  # noqa: E402

asp = pytest.importorskip("autograd.scipy.special")


def check_exact(f: Callable, x: np.ndarray, grad: np.ndarray, hess: np.ndarray, rtol: float = 1e-10) -> None:
    """f's gradient (reverse), batched pushforward (forward), Hessian and batched hvp, each prepared at
    another point and called at x twice, against the reference gradient and Hessian."""
    other = x + 0.01 * np.cos(np.arange(x.size) + 1.0)
    gtol = dict(rtol=rtol, atol=rtol * max(1.0, float(np.abs(grad).max())))
    htol = dict(rtol=10 * rtol, atol=10 * rtol * max(1.0, float(np.abs(hess).max())))
    ts = tuple(np.eye(x.size)[:2])
    prep = di.prepare_gradient(f, TAPE, other)
    push = di.prepare_pushforward(f, TAPE, other, ts)
    hessian = di.prepare_hessian(f, TAPE, other)
    hvp = di.prepare_hvp(f, TAPE, other, ts)
    for _ in range(2):
        np.testing.assert_allclose(prep.gradient(x), grad, **gtol)
        for t, r in zip(ts, push.pushforward(x, ts)):
            np.testing.assert_allclose(r, grad @ t, **gtol)
        np.testing.assert_allclose(hessian.hessian(x), hess, **htol)
        for t, r in zip(ts, hvp.hvp(x, ts)):
            np.testing.assert_allclose(r, hess @ t, **htol)


def mp_derivatives(F: Callable, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient and Hessian of the mpmath function F(*args) at x (30 digits)."""
    n = x.size
    with mp.workdps(30):
        pt = [mp.mpf(float(v)) for v in x]
        grad = np.array([float(mp.diff(F, pt, tuple(int(i == j) for i in range(n)))) for j in range(n)])
        hess = np.zeros((n, n))
        for j in range(n):
            for k in range(j, n):
                order = tuple(int(i == j) + int(i == k) for i in range(n))
                hess[j, k] = hess[k, j] = float(mp.diff(F, pt, order))
    return grad, hess


# -- closed-form special functions ----------------------------------------------------------------------
def _closed_form(xp: Any, x: Any) -> Any:
    """huber (|r| <= delta here), pseudo_huber, spence, rel_entr, kl_div and entr; by hand on autograd."""
    if xp is np:
        head = [sp.huber(x[0], x[1]), sp.pseudo_huber(x[2], x[1]), sp.spence(x[3])]
        head += [sp.rel_entr(x[0], x[3]), sp.kl_div(x[0], x[3])]
        return np.concatenate([np.stack(head), sp.entr(x)])
    huber = xp.where(xp.abs(x[1]) <= x[0], x[1] ** 2 / 2, x[0] * (xp.abs(x[1]) - x[0] / 2))
    pseudo = x[2] ** 2 * (xp.sqrt(1 + (x[1] / x[2]) ** 2) - 1)
    spence = sum((1.0 - x[3]) ** k / (k * k) for k in range(1, 60))  # Li2(1 - z), |1 - z| = 0.4 here
    rel = x[0] * xp.log(x[0] / x[3])
    return xp.concatenate([xp.stack([huber, pseudo, spence, rel, rel - x[0] + x[3]]), -x * xp.log(x)])


def test_closed_form_special_functions():
    x = np.array([1.3, 0.9, 0.7, 0.6])  # spence's series converges at 1 - 0.6 = 0.4
    check_rule(_closed_form, x, "autograd", rtol=1e-9)
    # huber beyond delta: its other branch
    check_rule(_closed_form, np.array([0.4, 1.7, 2.5, 1.3]), "autograd", rtol=1e-9)


def test_closed_form_edges():
    """entr at 0 (+inf: -log 0 - 1), rel_entr at x = 0 (-inf in x, 0 in y), spence at 1 (-1, its limit),
    and no NaN where the derivative exists."""
    g = di.gradient(lambda v: np.sum(sp.entr(v)), TAPE, np.array([0.0, 1.0, -1.0]))
    assert g.tolist() == [np.inf, -1.0, 0.0]
    g = di.gradient(lambda v: sp.rel_entr(v[0], v[1]), TAPE, np.array([0.0, 2.0]))
    assert g.tolist() == [-np.inf, 0.0]
    assert di.gradient(lambda v: sp.spence(v[0]), TAPE, np.array([1.0])).tolist() == [-1.0]
    assert di.second_derivative(lambda t: sp.spence(t), TAPE, 1.0) == pytest.approx(0.5, rel=1e-12)


def test_lambertw():
    """W' = W / (x (1 + W)), W'' = -W² (W + 2) / (x² (1 + W)³) on the real branches 0 and -1 (1 and -2 at
    x = 0); the real part taken explicitly, as real code does (lambertw returns complex)."""
    for k, x in ((0, np.array([0.3, 2.0, 7.5])), (-1, np.array([-0.3, -0.2, -0.05]))):
        f = lambda v, k=k: np.sum(np.real(sp.lambertw(v, k)) * np.arange(1.0, 4.0))
        w = sp.lambertw(x, k).real
        d1 = w / (x * (1 + w))
        d2 = -(w**2) * (w + 2) / (x**2 * (1 + w) ** 3)
        check_exact(f, x, d1 * np.arange(1.0, 4.0), np.diag(d2 * np.arange(1.0, 4.0)), rtol=1e-12)
    h = di.hessian(lambda v: np.real(sp.lambertw(v[0])), TAPE, np.array([0.0]))
    assert di.gradient(lambda v: np.real(sp.lambertw(v[0])), TAPE, np.array([0.0])).tolist() == [1.0]
    assert h.tolist() == [[-2.0]]


# -- parameter derivatives without a closed form, against mpmath ------------------------------------------
def _mp_stdtr(df: Any, t: Any) -> Any:
    """1/2 + sign(t)/2 I_y(1/2, df/2) with y = t²/(df + t²)."""
    y = t * t / (df + t * t)
    return 0.5 + mp.sign(t) * mp.betainc(mp.mpf(0.5), df / 2, 0, y, regularized=True) / 2


PARAMETER = {
    "gammainc": (lambda v: sp.gammainc(v[0], v[1]), lambda a, x: mp.gammainc(a, 0, x, regularized=True), [2.5, 1.3]),
    "gammaincc (far tail)": (
        lambda v: sp.gammaincc(v[0], v[1]),
        lambda a, x: mp.gammainc(a, x, mp.inf, regularized=True),
        [1.5, 9.0],
    ),
    "betainc": (
        lambda v: sp.betainc(v[0], v[1], v[2]),
        lambda a, b, x: mp.betainc(a, b, 0, x, regularized=True),
        [2.5, 1.7, 0.3],
    ),
    "betaincc (x past the mean)": (
        lambda v: sp.betaincc(v[0], v[1], v[2]),
        lambda a, b, x: mp.betainc(a, b, x, 1, regularized=True),
        [0.7, 3.2, 0.6],
    ),
    "zeta": (lambda v: sp.zeta(v[0], v[1]), lambda s, q: mp.zeta(s, q), [2.5, 1.7]),
    "stdtr": (lambda v: sp.stdtr(v[0], v[1]), _mp_stdtr, [3.5, -0.8]),
}


@pytest.mark.parametrize("name", list(PARAMETER))
def test_parameter_derivatives(name):
    f, F, x = PARAMETER[name]
    x = np.array(x)
    check_exact(f, x, *mp_derivatives(F, x), rtol=1e-10)


def test_stdtr_at_zero():
    """At t = 0 d stdtr/d df = 0, and d² stdtr/(d df dt) is the derivative in df of the density at 0,
    (ψ((df+1)/2) - ψ(df/2) - 1/df) / (2 sqrt(df) B(df/2, 1/2))."""
    df = 3.5
    want = (sp.digamma((df + 1) / 2) - sp.digamma(df / 2) - 1 / df) / (2 * math.sqrt(df) * sp.beta(df / 2, 0.5))
    h = di.hessian(lambda v: sp.stdtr(v[0], v[1]), TAPE, np.array([df, 0.0]))
    np.testing.assert_allclose(h[0, 1], want, rtol=1e-11)
    np.testing.assert_allclose(h[1, 0], want, rtol=1e-11)
    assert h[1, 1] == 0.0
    assert di.gradient(lambda v: sp.stdtr(v[0], v[1]), TAPE, np.array([df, 0.0]))[0] == 0.0


def test_inverse_functions():
    """g(θ, f(θ, y)) = y for the inverses: derivative 1 in y, 0 in θ, Hessian 0 (all of the inverse's
    partials, first and second, meet the function's)."""
    cases = [
        (lambda v: sp.gammaincinv(v[0], sp.gammainc(v[0], v[1])), [2.5, 1.3]),
        (lambda v: sp.gammainccinv(v[0], sp.gammaincc(v[0], v[1])), [2.5, 1.3]),
        (lambda v: sp.betaincinv(v[0], v[1], sp.betainc(v[0], v[1], v[2])), [2.5, 1.7, 0.3]),
        (lambda v: sp.betainccinv(v[0], v[1], sp.betaincc(v[0], v[1], v[2])), [2.5, 1.7, 0.3]),
        (lambda v: sp.stdtrit(v[0], sp.stdtr(v[0], v[1])), [3.5, -0.8]),
    ]
    for f, x in cases:
        x = np.array(x)
        grad = np.zeros(x.size)
        grad[-1] = 1.0
        check_exact(f, x, grad, np.zeros((x.size, x.size)), rtol=1e-9)


# -- scipy.stats: the closed-form families against autograd -------------------------------------------------
def _anp() -> tuple[Any, Any]:
    import autograd.numpy as anp

    return anp, asp


def _ndtr(z: Any) -> Any:
    return 0.5 * asp.erfc(-z / math.sqrt(2.0))


def _ndtri(q: Any) -> Any:
    return -math.sqrt(2.0) * asp.erfcinv(2.0 * q)


def _laws() -> dict[str, tuple[list, Callable, Callable, Callable, Callable]]:
    """name: (shapes, logpdf(z, *s), cdf, ppf, isf) by hand with autograd.numpy (the standardized law)."""
    anp, s = _anp()
    log, exp, expm1, log1p = anp.log, anp.exp, anp.expm1, anp.log1p
    return {
        "norm": ([], lambda z: -(z**2) / 2 - 0.5 * math.log(2 * math.pi), _ndtr, _ndtri, lambda q: -_ndtri(q)),
        "expon": ([], lambda z: -z, lambda z: -expm1(-z), lambda q: -log1p(-q), lambda q: -log(q)),
        "laplace": (
            [],
            lambda z: -anp.abs(z) - math.log(2.0),
            lambda z: anp.where(z < 0, 0.5 * exp(z), 1 - 0.5 * exp(-z)),
            lambda q: anp.where(q < 0.5, log(2 * q), -log(2 - 2 * q)),
            lambda q: -anp.where(q < 0.5, log(2 * q), -log(2 - 2 * q)),
        ),
        "cauchy": (
            [],
            lambda z: -log(math.pi * (1 + z**2)),
            lambda z: anp.arctan(z) / math.pi + 0.5,
            lambda q: anp.tan(math.pi * (q - 0.5)),
            lambda q: -anp.tan(math.pi * (q - 0.5)),
        ),
        "logistic": ([], lambda z: -z - 2 * log1p(exp(-z)), s.expit, s.logit, lambda q: -s.logit(q)),
        "lognorm": (
            [0.7],
            lambda z, c: -(log(z) ** 2) / (2 * c**2) - log(c * z * math.sqrt(2 * math.pi)),
            lambda z, c: _ndtr(log(z) / c),
            lambda q, c: exp(c * _ndtri(q)),
            lambda q, c: exp(-c * _ndtri(q)),
        ),
        "weibull_min": (
            [1.7],
            lambda z, c: log(c) + (c - 1) * log(z) - z**c,
            lambda z, c: -expm1(-(z**c)),
            lambda q, c: (-log1p(-q)) ** (1 / c),
            lambda q, c: (-log(q)) ** (1 / c),
        ),
        "weibull_max": (
            [1.7],
            lambda z, c: log(c) + (c - 1) * log(-z) - (-z) ** c,
            lambda z, c: exp(-((-z) ** c)),
            lambda q, c: -((-log(q)) ** (1 / c)),
            lambda q, c: -((-log1p(-q)) ** (1 / c)),
        ),
        "uniform": ([], lambda z: 0.0 * z, lambda z: z, lambda q: q, lambda q: 1 - q),
        "gumbel_r": (
            [],
            lambda z: -z - exp(-z),
            lambda z: exp(-exp(-z)),
            lambda q: -log(-log(q)),
            lambda q: -log(-log1p(-q)),
        ),
        "gumbel_l": (
            [],
            lambda z: z - exp(z),
            lambda z: -expm1(-exp(z)),
            lambda q: log(-log1p(-q)),
            lambda q: log(-log(q)),
        ),
        "pareto": (
            [2.5],
            lambda z, b: log(b) - (b + 1) * log(z),
            lambda z, b: 1 - z ** (-b),
            lambda q, b: (1 - q) ** (-1 / b),
            lambda q, b: q ** (-1 / b),
        ),
        "rayleigh": (
            [],
            lambda z: log(z) - z**2 / 2,
            lambda z: -expm1(-(z**2) / 2),
            lambda q: anp.sqrt(-2 * log1p(-q)),
            lambda q: anp.sqrt(-2 * log(q)),
        ),
        "halfnorm": (
            [],
            lambda z: 0.5 * math.log(2 / math.pi) - z**2 / 2,
            lambda z: s.erf(z / math.sqrt(2)),
            lambda q: _ndtri((1 + q) / 2),
            lambda q: -_ndtri(q / 2),
        ),
    }


#: a point inside each family's support (standardized), with loc 0.2 + 0.1 x and scale 1.3 + 0.2 x
_INSIDE = {"weibull_max": -0.9, "pareto": 1.6, "laplace": -0.6, "gumbel_l": -0.4, "uniform": 0.35}


def _family(name: str) -> tuple[Callable, np.ndarray]:
    """f(xp, x) = the eight methods at x = [data, q, *shapes, loc, scale], SciPy's on NumPy and the law's
    formulas on autograd."""
    shapes = _laws()[name][0]
    k = len(shapes)

    def f(xp: Any, x: Any) -> Any:
        d, q, s, loc, scale = x[0], x[1], [x[2 + i] for i in range(k)], x[2 + k], x[3 + k]
        if xp is np:
            dist = getattr(stats, name)
            return np.stack(
                [
                    getattr(dist, m)(d if m not in ("ppf", "isf") else q, *s, loc=loc, scale=scale)
                    for m in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")
                ]
            )
        _, logpdf, cdf, ppf, isf = _laws()[name]
        z = (d - loc) / scale
        lp = logpdf(z, *s) - xp.log(scale)
        c = cdf(z, *s)
        return xp.stack(
            [lp, xp.exp(lp), c, xp.log(c), 1 - c, xp.log(1 - c), loc + scale * ppf(q, *s), loc + scale * isf(q, *s)]
        )

    x = np.array([0.2 + 1.3 * _INSIDE.get(name, 0.8), 0.3, *shapes, 0.2, 1.3])
    return f, x


@pytest.mark.parametrize("name", list(_laws()))
def test_closed_form_family(name):
    f, x = _family(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_rule(f, x, "autograd", rtol=1e-9)


# -- scipy.stats: the families whose cdf and quantiles need the parameter derivatives --------------------
SHAPED = {  # name: (shapes, data, mpmath cdf(z, *shapes))
    "t": ([3.5], 0.0, lambda z, df: _mp_stdtr(df, z)),
    "gamma": ([2.5], 1.3, lambda z, a: mp.gammainc(a, 0, z, regularized=True)),
    "chi2": ([3.5], 2.2, lambda z, k: mp.gammainc(k / 2, 0, z / 2, regularized=True)),
    "beta": ([2.5, 1.7], 0.4, lambda z, a, b: mp.betainc(a, b, 0, z, regularized=True)),
    "invgamma": ([2.5], 0.7, lambda z, a: mp.gammainc(a, 1 / z, mp.inf, regularized=True)),
    "f": ([4.5, 6.5], 0.9, lambda z, n, m: mp.betainc(n / 2, m / 2, 0, n * z / (n * z + m), regularized=True)),
    "loggamma": ([2.5], 0.6, lambda z, c: mp.gammainc(c, 0, mp.exp(z), regularized=True)),
}


@pytest.mark.parametrize("name", list(SHAPED))
def test_shaped_family(name):
    """The cdf in data and shapes against mpmath; ppf(cdf(x)) = x and isf(sf(x)) = x (derivative 1 in x,
    0 in the shapes, loc and scale, Hessian 0: the quantiles' implicit derivatives, to second order); the
    densities in everything against SciPy's formulas written with autograd where autograd has them."""
    shapes, d, F = SHAPED[name]
    dist = getattr(stats, name)
    k = len(shapes)
    x = np.array([d, *shapes])
    cdf = lambda v: dist.cdf(v[0], *v[1:])
    check_exact(cdf, x, *mp_derivatives(F, x), rtol=1e-10)
    y = np.array([d * 1.3 + 0.2, *shapes, 0.2, 1.3])  # data, shapes, loc, scale
    args = lambda v: (*v[1 : 1 + k], v[1 + k], v[2 + k])
    grad = np.eye(y.size)[0]
    check_exact(lambda v: dist.ppf(dist.cdf(v[0], *args(v)), *args(v)), y, grad, np.zeros((y.size, y.size)), 1e-9)
    check_exact(lambda v: dist.isf(dist.sf(v[0], *args(v)), *args(v)), y, grad, np.zeros((y.size, y.size)), 1e-9)


def test_values_are_scipys():
    """Every method of every family at points inside, on the edge of and outside the support, and at
    invalid parameters (NaN), is SciPy's value; its gradient holds no NaN where the value is finite."""
    laws = _laws()
    families = {**{n: v[0] for n, v in laws.items()}, **{n: v[0] for n, v in SHAPED.items()}}
    points = {"z": [-2.0, 0.0, 0.5, 1.0, 3.0], "q": [0.0, 1e-12, 0.4, 1.0, 1.5]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, shapes in families.items():
            dist = getattr(stats, name)
            for m in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"):
                for p in points["q" if m in ("ppf", "isf") else "z"]:
                    for scale in (1.2, -1.0):
                        f = lambda v, m=m, dist=dist: getattr(dist, m)(v[0], *v[1:-1], loc=0.1, scale=v[-1])
                        x = np.array([p, *shapes, scale])
                        value, grad = di.value_and_gradient(f, TAPE, x)
                        want = getattr(dist, m)(p, *shapes, loc=0.1, scale=scale)
                        np.testing.assert_allclose(value, want, rtol=1e-13, err_msg=f"{name}.{m}({p})")
                        if np.isfinite(want):
                            assert not np.isnan(grad).any(), f"{name}.{m}({p})"


def test_unknown_family_is_refused():
    with pytest.raises(di.NotSupportedError, match=r"scipy\.stats\.genpareto\.ppf.*test_tape_scipy_special"):
        di.gradient(lambda v: stats.genpareto.ppf(0.3, v[0]), TAPE, np.array([0.5]))
