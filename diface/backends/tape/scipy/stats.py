"""The tape's rules for scipy.stats distributions (reached through `numpy.hooks`): the pdf, logpdf, cdf,
logcdf, sf, logsf, ppf and isf of the continuous families in `scipy.stats_laws` (norm, t, gamma, beta,
chi2, expon, laplace, cauchy, logistic, lognorm, weibull_min, weibull_max, uniform, gumbel_r, gumbel_l,
pareto, invgamma, f, rayleigh, halfnorm, loggamma), the pmf, logpmf, cdf, logcdf, sf and logsf of
poisson, and multivariate_normal's and dirichlet's pdf and logpdf.

A distribution is standardized (z = (x - loc) / scale) and written with NumPy calls and
scipy.special ufuncs, so its derivatives with respect to x, loc, scale and the shape parameters are
recorded as usual. Outside the support the values are SciPy's (-inf for logpdf, 0 for pdf) with
derivative 0; where SciPy returns NaN (a scale <= 0, a shape parameter <= 0) so does the rule.

The quantile functions are SciPy's own, computed on plain values, with the derivatives of the implicit
relation cdf(ppf(q; θ); θ) = q (see `scipy.stats_laws.quantile`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.graph import Traced
from ..data.sites import user_location
from ..numpy.common import ndim_of
from ..numpy.hooks import hook
from ..prims.prim import shape_of
from ..tracing.tracer import operand
from .stats_laws import CONTINUOUS, Continuous, quantile

__all__: list[str] = []

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _sp() -> Any:
    return sys.modules["scipy.special"]


def _inside(mask: Any, z: Any, fill: float) -> Any:
    """z where the mask holds, a harmless value elsewhere (so that no formula sees a value it rejects)."""
    return np.where(mask, z, fill)


def _unknown(dist: Any, method: str) -> NotSupportedError:
    return NotSupportedError(
        f"AutoTape does not know scipy.stats.{getattr(dist, 'name', type(dist).__name__)}.{method} (called with "
        f"a traced array at {user_location()}); it knows "
        f"{', '.join(sorted(CONTINUOUS))}, poisson, multivariate_normal and dirichlet. Differentiate f with "
        "another backend (di.AutoFiniteDiff(), or di.AutoJAX() with jax.scipy.stats)."
    )


def _arguments(dist: Any, nshapes: int, x: Any, args: tuple, kwds: dict, discrete: bool) -> tuple:
    """x, the shape parameters, loc and scale, as SciPy's methods take them (positional or keyword)."""
    names = (dist.shapes or "").replace(",", " ").split()
    shapes = list(args[:nshapes])
    rest = list(args[nshapes:])
    for name in names[len(shapes) :]:
        if name not in kwds:
            raise TypeError(f"missing the shape parameter {name!r}")
        shapes.append(kwds.pop(name))
    loc = rest.pop(0) if rest else kwds.pop("loc", 0.0)
    scale = 1.0 if discrete else (rest.pop(0) if rest else kwds.pop("scale", 1.0))
    if rest or kwds:
        raise TypeError(f"unexpected arguments {rest or ''} {list(kwds) or ''}")
    return operand(x), [operand(s) for s in shapes], operand(loc), operand(scale)


def _nan_where_invalid(r: Any, shapes: list, scale: Any) -> Any:
    """r, NaN where SciPy's argument check fails: a scale <= 0 or a shape parameter <= 0 (every family
    here requires positive shapes). Recorded (a prepared call checks again) where one of them is traced."""
    checked = [scale, *shapes]
    bad: Any = None
    for v in checked:
        if not isinstance(v, Traced) and np.all(np.greater(v, 0.0)):
            continue
        b = np.logical_not(np.greater(v, 0.0))
        bad = b if bad is None else np.logical_or(bad, b)
    return r if bad is None else np.where(bad, np.nan, r)


def continuous(method: str) -> Callable:
    def rule(kept: Any, dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
        law = CONTINUOUS.get(getattr(dist, "name", ""))
        if law is None:
            raise _unknown(dist, method)
        x, shapes, loc, scale = _arguments(dist, law.nshapes, x, args, kwds, False)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # as SciPy's methods are
            return _continuous(law, method, x, shapes, loc, scale)

    return rule


def _continuous(law: Continuous, method: str, x: Any, shapes: list, loc: Any, scale: Any) -> Any:
    """The method of the standardized law at x, loc and scale."""
    if method in ("ppf", "isf"):
        z = quantile(law, method)(x, *shapes)
        return _nan_where_invalid(np.add(np.multiply(z, scale), loc), shapes, scale)
    z = np.divide(np.subtract(x, loc), scale)
    if method in ("pdf", "logpdf"):
        r = np.subtract(law.logpdf(z, *shapes), np.log(scale))
        r = np.exp(r) if method == "pdf" else r
    else:
        r = getattr(law, method)(z, *shapes)
    return _nan_where_invalid(r, shapes, scale)


def discrete(method: str) -> Callable:
    """poisson (mu), k = x - loc: an integer, so no derivative flows through k."""

    def rule(kept: Any, dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
        if getattr(dist, "name", "") != "poisson":
            raise _unknown(dist, method)
        x, (mu,), loc, _ = _arguments(dist, 1, x, args, kwds, True)
        k = np.floor(np.subtract(x, loc))
        sp = _sp()
        if method in ("pmf", "logpmf"):
            valid = np.logical_and(np.equal(k, np.subtract(x, loc)), np.greater_equal(k, 0.0))
            kk = _inside(valid, k, 0.0)
            r = np.subtract(np.subtract(sp.xlogy(kk, mu), sp.gammaln(np.add(kk, 1.0))), mu)
            r = np.where(valid, r, -np.inf)
            return np.exp(r) if method == "pmf" else r
        negative = np.less(k, 0.0)
        kk = _inside(negative, 0.0, k)
        cdf = np.where(negative, 0.0, sp.gammaincc(np.add(kk, 1.0), mu))
        sf = np.where(negative, 1.0, sp.gammainc(np.add(kk, 1.0), mu))
        return {"cdf": cdf, "sf": sf, "logcdf": np.log(cdf), "logsf": np.log(sf)}[method]

    return rule


# -- multivariate --------------------------------------------------------------------------------------------
def _squeeze(r: Any) -> Any:
    return np.squeeze(r) if ndim_of(r) else r


def mvn(method: str) -> Callable:
    def rule(
        kept: Any, dist: Any, x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False, **kw: Any
    ) -> Any:
        x = operand(x)
        dim = shape_of(operand(mean))[-1] if mean is not None and ndim_of(operand(mean)) else None
        cov = operand(1.0 if cov is None else cov)
        if dim is None:
            dim = 1 if mean is None and ndim_of(cov) < 2 else shape_of(cov)[0] if ndim_of(cov) >= 2 else 1
        mean = np.zeros(dim) if mean is None else operand(mean)
        if ndim_of(cov) == 0:
            cov = np.multiply(cov, np.eye(dim))
        elif ndim_of(cov) == 1:
            cov = np.multiply(cov, np.eye(dim))
        if ndim_of(x) == 0:
            x = np.reshape(x, (1,))
        if ndim_of(x) == 1:
            x = np.reshape(x, (-1, 1) if dim == 1 else (1, -1))
        d = np.subtract(x, mean)
        if allow_singular:
            s, u = np.linalg.eigh(cov)
            eps = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s))
            keep = np.greater(s, eps)
            inv_s = np.where(keep, np.divide(1.0, np.where(keep, s, 1.0)), 0.0)
            log_det = np.sum(np.where(keep, np.log(np.where(keep, s, 1.0)), 0.0))
            rank = np.sum(keep.astype(np.float64))
            maha = np.sum(np.multiply(np.square(np.matmul(d, u)), inv_s), axis=-1)
            r = np.multiply(np.add(np.add(np.multiply(rank, 2.0 * _LOG_SQRT_2PI), log_det), maha), -0.5)
        else:
            sign_logdet = np.linalg.slogdet(cov)
            sol = np.linalg.solve(cov, np.swapaxes(d, -1, -2))
            maha = np.sum(np.multiply(d, np.swapaxes(sol, -1, -2)), axis=-1)
            r = np.multiply(np.add(np.add(dim * 2.0 * _LOG_SQRT_2PI, sign_logdet.logabsdet), maha), -0.5)
        r = _squeeze(r)
        return np.exp(r) if method == "pdf" else r

    return rule


def dirichlet(method: str) -> Callable:
    def rule(kept: Any, dist: Any, x: Any, alpha: Any) -> Any:
        sp = _sp()
        x, alpha = operand(x), operand(alpha)
        k = shape_of(alpha)[0]
        if shape_of(x)[0] == k - 1:
            x = np.concatenate([x, np.reshape(np.subtract(1.0, np.sum(x, axis=0)), (1, *shape_of(x)[1:]))])
        a = np.reshape(alpha, (k,) + (1,) * (ndim_of(x) - 1))
        log_b = np.subtract(np.sum(sp.gammaln(alpha)), sp.gammaln(np.sum(alpha)))
        r = np.subtract(np.sum(sp.xlogy(np.subtract(a, 1.0), x), axis=0), log_b)
        r = _squeeze(r)
        return np.exp(r) if method == "pdf" else r

    return rule


for _m in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"):
    hook("scipy.stats", f"rv_continuous.{_m}")(lambda m=_m: continuous(m))
for _m in ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf"):
    hook("scipy.stats", f"rv_discrete.{_m}")(lambda m=_m: discrete(m))
for _m in ("pdf", "logpdf"):
    hook("scipy.stats._multivariate", f"multivariate_normal_gen.{_m}")(lambda m=_m: mvn(m))
    hook("scipy.stats._multivariate", f"dirichlet_gen.{_m}")(lambda m=_m: dirichlet(m))
