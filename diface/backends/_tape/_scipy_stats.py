"""The tape's rules for scipy.stats distributions (reached through `_hooks`): the pdf, logpdf, cdf,
logcdf, sf and logsf of norm, t, gamma, beta, chi2, expon, laplace, cauchy and logistic, the pmf,
logpmf, cdf, logcdf, sf and logsf of poisson, and multivariate_normal's and dirichlet's pdf and logpdf.

A distribution is standardized (z = (x - loc) / scale) and written with NumPy calls and
scipy.special ufuncs, so its derivatives with respect to x, loc, scale and the shape parameters are
recorded as usual (shape parameters that enter only through functions without a derivative, such as
gammainc's first argument, raise `NotSupportedError` when traced). Outside the support the values are
SciPy's (-inf for logpdf, 0 for pdf) with derivative 0.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ._hooks import hook
from ._np_common import ndim_of
from ._prim import shape_of
from ._sites import user_location
from ._tracer import operand

__all__: list[str] = []

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _sp() -> Any:
    return sys.modules["scipy.special"]


def _inside(mask: Any, z: Any, fill: float) -> Any:
    """z where the mask holds, a harmless value elsewhere (so that no formula sees a value it rejects)."""
    return np.where(mask, z, fill)


# -- continuous: log density, log cdf and log sf of the standardized variable --------------------------------
class _Continuous:
    """A standardized distribution: `logpdf(z, *shapes)`, `cdf`, `sf` (and their logs by default)."""

    nshapes = 0

    def logpdf(self, z: Any, *s: Any) -> Any:
        raise NotImplementedError

    def cdf(self, z: Any, *s: Any) -> Any:
        raise NotImplementedError

    def sf(self, z: Any, *s: Any) -> Any:
        return np.subtract(1.0, self.cdf(z, *s))

    def logcdf(self, z: Any, *s: Any) -> Any:
        return np.log(self.cdf(z, *s))

    def logsf(self, z: Any, *s: Any) -> Any:
        return np.log(self.sf(z, *s))


class _Norm(_Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.subtract(np.multiply(np.square(z), -0.5), _LOG_SQRT_2PI)

    def cdf(self, z: Any) -> Any:
        return _sp().ndtr(z)

    def sf(self, z: Any) -> Any:
        return _sp().ndtr(np.negative(z))

    def logcdf(self, z: Any) -> Any:
        return _sp().log_ndtr(z)

    def logsf(self, z: Any) -> Any:
        return _sp().log_ndtr(np.negative(z))


class _T(_Continuous):
    nshapes = 1

    def logpdf(self, z: Any, df: Any) -> Any:
        sp = _sp()
        half = np.multiply(np.add(df, 1.0), 0.5)
        c = np.subtract(sp.gammaln(half), sp.gammaln(np.multiply(df, 0.5)))
        c = np.subtract(c, np.multiply(np.log(np.multiply(df, math.pi)), 0.5))
        return np.subtract(c, np.multiply(half, np.log1p(np.divide(np.square(z), df))))

    def cdf(self, z: Any, df: Any) -> Any:
        return _sp().stdtr(df, z)

    def sf(self, z: Any, df: Any) -> Any:
        return _sp().stdtr(df, np.negative(z))


class _Gamma(_Continuous):
    nshapes = 1

    def logpdf(self, z: Any, a: Any) -> Any:
        sp = _sp()
        pos = np.greater(z, 0.0)
        zz = _inside(pos, z, 1.0)
        r = np.subtract(np.subtract(sp.xlogy(np.subtract(a, 1.0), zz), zz), sp.gammaln(a))
        return np.where(pos, r, -np.inf)

    def cdf(self, z: Any, a: Any) -> Any:
        return _sp().gammainc(a, np.maximum(z, 0.0))

    def sf(self, z: Any, a: Any) -> Any:
        return _sp().gammaincc(a, np.maximum(z, 0.0))


class _Chi2(_Gamma):
    def logpdf(self, z: Any, df: Any) -> Any:
        half = np.multiply(df, 0.5)
        return np.subtract(super().logpdf(np.multiply(z, 0.5), half), math.log(2.0))

    def cdf(self, z: Any, df: Any) -> Any:
        return super().cdf(np.multiply(z, 0.5), np.multiply(df, 0.5))

    def sf(self, z: Any, df: Any) -> Any:
        return super().sf(np.multiply(z, 0.5), np.multiply(df, 0.5))


class _Beta(_Continuous):
    nshapes = 2

    def logpdf(self, z: Any, a: Any, b: Any) -> Any:
        sp = _sp()
        inside = np.logical_and(np.greater(z, 0.0), np.less(z, 1.0))
        zz = _inside(inside, z, 0.5)
        r = np.add(sp.xlogy(np.subtract(a, 1.0), zz), sp.xlog1py(np.subtract(b, 1.0), np.negative(zz)))
        return np.where(inside, np.subtract(r, sp.betaln(a, b)), -np.inf)

    def cdf(self, z: Any, a: Any, b: Any) -> Any:
        return _sp().betainc(a, b, np.clip(z, 0.0, 1.0))


class _Expon(_Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.where(np.less(z, 0.0), -np.inf, np.negative(z))

    def cdf(self, z: Any) -> Any:
        return np.negative(np.expm1(np.negative(np.maximum(z, 0.0))))

    def sf(self, z: Any) -> Any:
        return np.exp(np.negative(np.maximum(z, 0.0)))

    def logsf(self, z: Any) -> Any:
        return np.negative(np.maximum(z, 0.0))


class _Laplace(_Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.subtract(np.negative(np.abs(z)), math.log(2.0))

    def cdf(self, z: Any) -> Any:
        half = np.multiply(np.exp(np.negative(np.abs(z))), 0.5)
        return np.where(np.less(z, 0.0), half, np.subtract(1.0, half))

    def sf(self, z: Any) -> Any:
        return self.cdf(np.negative(z))


class _Cauchy(_Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.negative(np.log(np.multiply(np.add(np.square(z), 1.0), math.pi)))

    def cdf(self, z: Any) -> Any:
        return np.add(np.divide(np.arctan(z), math.pi), 0.5)

    def sf(self, z: Any) -> Any:
        return self.cdf(np.negative(z))


class _Logistic(_Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.subtract(np.negative(z), np.multiply(np.logaddexp(0.0, np.negative(z)), 2.0))

    def cdf(self, z: Any) -> Any:
        return _sp().expit(z)

    def sf(self, z: Any) -> Any:
        return _sp().expit(np.negative(z))

    def logcdf(self, z: Any) -> Any:
        return _sp().log_expit(z)

    def logsf(self, z: Any) -> Any:
        return _sp().log_expit(np.negative(z))


CONTINUOUS: dict[str, _Continuous] = {
    "norm": _Norm(),
    "t": _T(),
    "gamma": _Gamma(),
    "chi2": _Chi2(),
    "beta": _Beta(),
    "expon": _Expon(),
    "laplace": _Laplace(),
    "cauchy": _Cauchy(),
    "logistic": _Logistic(),
}


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


def continuous(method: str) -> Callable:
    def rule(kept: Any, dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
        law = CONTINUOUS.get(getattr(dist, "name", ""))
        if law is None:
            raise _unknown(dist, method)
        x, shapes, loc, scale = _arguments(dist, law.nshapes, x, args, kwds, False)
        z = np.divide(np.subtract(x, loc), scale)
        if method in ("pdf", "logpdf"):
            r = np.subtract(law.logpdf(z, *shapes), np.log(scale))
            return np.exp(r) if method == "pdf" else r
        return getattr(law, method)(z, *shapes)

    return rule


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


for _m in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
    hook("scipy.stats", f"rv_continuous.{_m}")(lambda m=_m: continuous(m))
for _m in ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf"):
    hook("scipy.stats", f"rv_discrete.{_m}")(lambda m=_m: discrete(m))
for _m in ("pdf", "logpdf"):
    hook("scipy.stats._multivariate", f"multivariate_normal_gen.{_m}")(lambda m=_m: mvn(m))
    hook("scipy.stats._multivariate", f"dirichlet_gen.{_m}")(lambda m=_m: dirichlet(m))
