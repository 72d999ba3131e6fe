"""The standardized continuous distributions the tape's scipy.stats rules know (`scipy.stats`), each
written with NumPy calls and scipy.special ufuncs on the standardized variable z = (x - loc) / scale,
so that the tape records their derivatives in z and in the shape parameters as usual.

Each law has the log density, the cdf and sf (and their logs), the partial derivatives of its cdf in
its shape parameters (`cdf_partials`, for the quantile functions' implicit derivatives), and follows
SciPy's own formulas (`scipy.stats._continuous_distns`; log cdf and log sf, where SciPy has no formula
of their own, as SciPy's defaults: log(cdf) below the median and log1p(-sf) above it, and the other
way round), so that the values are SciPy's up to rounding: outside the support the log density is
-inf, the cdf 0 or 1, with derivative 0.

The quantile functions (`quantile`: ppf, isf) are SciPy's own, computed on plain values, with the
derivatives of the implicit relation cdf(ppf(q; θ); θ) = q: d ppf/dq = 1/pdf and d ppf/dθ = -(∂cdf/∂θ)
/ pdf at the quantile, written with the law's own log density and cdf partials on the (traced, for
second order) quantile, so that every order is exact.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..numpy.hooks import original
from ..prims.elementwise import Ufunc
from ..prims.prim import into
from ..prims.special_params import beta_moment, d_stdtr_df, gamma_moment

__all__ = ["CONTINUOUS", "Continuous", "quantile"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
#: scipy.stats' _LOGXMIN: log of the smallest normal double (loggamma's cdf switches formula below it)
_LOGXMIN = math.log(np.finfo(np.float64).tiny)


def _sp() -> Any:
    return sys.modules["scipy.special"]


def _inside(mask: Any, z: Any, fill: float) -> Any:
    """z where the mask holds, a harmless value elsewhere (so that no formula sees a value it rejects)."""
    return np.where(mask, z, fill)


def _positive(z: Any) -> tuple[Any, Any]:
    pos = np.greater(z, 0.0)
    return pos, _inside(pos, z, 1.0)


class Continuous:
    """A standardized distribution: `logpdf(z, *shapes)`, `cdf`, `sf` (and their logs: by default SciPy's
    defaults, see the module docstring), `cdf_partials` (the cdf's partial derivatives in the shape
    parameters, one per shape). `name`: the family's in scipy.stats."""

    nshapes = 0
    name = "?"

    def logpdf(self, z: Any, *s: Any) -> Any:
        raise NotImplementedError

    def cdf(self, z: Any, *s: Any) -> Any:
        raise NotImplementedError

    def sf(self, z: Any, *s: Any) -> Any:
        return np.subtract(1.0, self.cdf(z, *s))

    def logcdf(self, z: Any, *s: Any) -> Any:
        below = np.less(z, self.median(*s))
        return np.where(below, np.log(self.cdf(z, *s)), np.log1p(np.negative(self.sf(z, *s))))

    def logsf(self, z: Any, *s: Any) -> Any:
        above = np.greater(z, self.median(*s))
        return np.where(above, np.log(self.sf(z, *s)), np.log1p(np.negative(self.cdf(z, *s))))

    def median(self, *s: Any) -> Any:
        """SciPy's median, its ppf at 1/2 (where the default log cdf and log sf switch formula)."""
        return quantile(self, "ppf")(0.5, *s)

    def cdf_partials(self, z: Any, *s: Any) -> tuple:
        return ()


class _Norm(Continuous):
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


class _T(Continuous):
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

    def cdf_partials(self, z: Any, df: Any) -> tuple:
        return (d_stdtr_df((df, z), None, None),)


class _Gamma(Continuous):
    nshapes = 1

    def logpdf(self, z: Any, a: Any) -> Any:  # on [0, inf): at 0, xlogy gives SciPy's inf, 0 or -inf
        sp = _sp()
        nonneg = np.greater_equal(z, 0.0)
        zz = _inside(nonneg, z, 1.0)
        r = np.subtract(np.subtract(sp.xlogy(np.subtract(a, 1.0), zz), zz), sp.gammaln(a))
        return np.where(nonneg, r, -np.inf)

    def cdf(self, z: Any, a: Any) -> Any:
        return _sp().gammainc(a, np.maximum(z, 0.0))

    def sf(self, z: Any, a: Any) -> Any:
        return _sp().gammaincc(a, np.maximum(z, 0.0))

    def cdf_partials(self, z: Any, a: Any) -> tuple:
        return (gamma_moment(1)(a, np.maximum(z, 0.0)),)


class _Chi2(_Gamma):
    def logpdf(self, z: Any, df: Any) -> Any:
        half = np.multiply(df, 0.5)
        return np.subtract(super().logpdf(np.multiply(z, 0.5), half), math.log(2.0))

    def cdf(self, z: Any, df: Any) -> Any:
        return super().cdf(np.multiply(z, 0.5), np.multiply(df, 0.5))

    def sf(self, z: Any, df: Any) -> Any:
        return super().sf(np.multiply(z, 0.5), np.multiply(df, 0.5))

    def cdf_partials(self, z: Any, df: Any) -> tuple:
        (d,) = super().cdf_partials(np.multiply(z, 0.5), np.multiply(df, 0.5))
        return (np.multiply(d, 0.5),)


class _Beta(Continuous):
    nshapes = 2

    def logpdf(self, z: Any, a: Any, b: Any) -> Any:  # on [0, 1], SciPy's inf or -inf at the ends
        sp = _sp()
        inside = np.logical_and(np.greater_equal(z, 0.0), np.less_equal(z, 1.0))
        zz = _inside(inside, z, 0.5)
        r = np.add(sp.xlogy(np.subtract(a, 1.0), zz), sp.xlog1py(np.subtract(b, 1.0), np.negative(zz)))
        return np.where(inside, np.subtract(r, sp.betaln(a, b)), -np.inf)

    def cdf(self, z: Any, a: Any, b: Any) -> Any:
        return _sp().betainc(a, b, np.clip(z, 0.0, 1.0))

    def sf(self, z: Any, a: Any, b: Any) -> Any:
        return _sp().betaincc(a, b, np.clip(z, 0.0, 1.0))

    def cdf_partials(self, z: Any, a: Any, b: Any) -> tuple:
        zz = np.clip(z, 0.0, 1.0)
        return (beta_moment(1, 0)(a, b, zz), beta_moment(0, 1)(a, b, zz))


class _Expon(Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.where(np.less(z, 0.0), -np.inf, np.negative(z))

    def cdf(self, z: Any) -> Any:
        return np.negative(np.expm1(np.negative(np.maximum(z, 0.0))))

    def sf(self, z: Any) -> Any:
        return np.exp(np.negative(np.maximum(z, 0.0)))

    def logsf(self, z: Any) -> Any:
        return np.negative(np.maximum(z, 0.0))


class _Laplace(Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.subtract(np.negative(np.abs(z)), math.log(2.0))

    def cdf(self, z: Any) -> Any:
        half = np.multiply(np.exp(np.negative(np.abs(z))), 0.5)
        return np.where(np.less(z, 0.0), half, np.subtract(1.0, half))

    def sf(self, z: Any) -> Any:
        return self.cdf(np.negative(z))


class _Cauchy(Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.negative(np.log(np.multiply(np.add(np.square(z), 1.0), math.pi)))

    def cdf(self, z: Any) -> Any:
        return np.divide(np.arctan2(1.0, np.negative(z)), math.pi)

    def sf(self, z: Any) -> Any:
        return np.divide(np.arctan2(1.0, z), math.pi)


class _Logistic(Continuous):
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


# -- the families added with the quantile functions -----------------------------------------------------------
class _Lognorm(Continuous):
    nshapes = 1

    def logpdf(self, z: Any, s: Any) -> Any:
        pos, zz = _positive(z)
        lz = np.log(zz)
        r = np.subtract(np.divide(np.square(lz), np.multiply(np.square(s), -2.0)), np.add(np.log(s), lz))
        return np.where(pos, np.subtract(r, _LOG_SQRT_2PI), -np.inf)

    def _w(self, z: Any, s: Any) -> tuple[Any, Any]:
        pos, zz = _positive(z)
        return pos, np.divide(np.log(zz), s)

    def cdf(self, z: Any, s: Any) -> Any:
        pos, w = self._w(z, s)
        return np.where(pos, _sp().ndtr(w), 0.0)

    def sf(self, z: Any, s: Any) -> Any:
        pos, w = self._w(z, s)
        return np.where(pos, _sp().ndtr(np.negative(w)), 1.0)

    def logcdf(self, z: Any, s: Any) -> Any:
        pos, w = self._w(z, s)
        return np.where(pos, _sp().log_ndtr(w), -np.inf)

    def logsf(self, z: Any, s: Any) -> Any:
        pos, w = self._w(z, s)
        return np.where(pos, _sp().log_ndtr(np.negative(w)), 0.0)

    def cdf_partials(self, z: Any, s: Any) -> tuple:  # d ndtr(log z / s)/ds = -phi(w) w / s
        pos, w = self._w(z, s)
        phi = np.divide(np.exp(np.multiply(np.square(w), -0.5)), _SQRT_2PI)
        return (np.where(pos, np.negative(np.divide(np.multiply(phi, w), s)), 0.0),)


class _WeibullMin(Continuous):
    nshapes = 1

    def logpdf(self, z: Any, c: Any) -> Any:
        nonneg = np.greater_equal(z, 0.0)
        zz = _inside(nonneg, z, 1.0)
        r = np.subtract(np.add(np.log(c), _sp().xlogy(np.subtract(c, 1.0), zz)), np.power(zz, c))
        return np.where(nonneg, r, -np.inf)

    def _power(self, z: Any, c: Any) -> tuple[Any, Any, Any]:
        pos, zz = _positive(z)
        return pos, zz, np.power(zz, c)

    def cdf(self, z: Any, c: Any) -> Any:
        pos, _, p = self._power(z, c)
        return np.where(pos, np.negative(np.expm1(np.negative(p))), 0.0)

    def sf(self, z: Any, c: Any) -> Any:
        pos, _, p = self._power(z, c)
        return np.where(pos, np.exp(np.negative(p)), 1.0)

    def logsf(self, z: Any, c: Any) -> Any:
        pos, _, p = self._power(z, c)
        return np.where(pos, np.negative(p), 0.0)

    def cdf_partials(self, z: Any, c: Any) -> tuple:  # e^(-z^c) z^c log z
        pos, zz, p = self._power(z, c)
        return (np.where(pos, np.multiply(np.multiply(np.exp(np.negative(p)), p), np.log(zz)), 0.0),)


class _WeibullMax(Continuous):
    nshapes = 1

    def logpdf(self, z: Any, c: Any) -> Any:
        nonpos = np.less_equal(z, 0.0)
        w = np.negative(_inside(nonpos, z, -1.0))
        r = np.subtract(np.add(np.log(c), _sp().xlogy(np.subtract(c, 1.0), w)), np.power(w, c))
        return np.where(nonpos, r, -np.inf)

    def _power(self, z: Any, c: Any) -> tuple[Any, Any, Any]:
        neg = np.less(z, 0.0)
        w = np.negative(_inside(neg, z, -1.0))
        return neg, w, np.power(w, c)

    def cdf(self, z: Any, c: Any) -> Any:
        neg, _, p = self._power(z, c)
        return np.where(neg, np.exp(np.negative(p)), 1.0)

    def logcdf(self, z: Any, c: Any) -> Any:
        neg, _, p = self._power(z, c)
        return np.where(neg, np.negative(p), 0.0)

    def sf(self, z: Any, c: Any) -> Any:
        neg, _, p = self._power(z, c)
        return np.where(neg, np.negative(np.expm1(np.negative(p))), 0.0)

    def cdf_partials(self, z: Any, c: Any) -> tuple:  # -e^(-w^c) w^c log w, w = -z
        neg, w, p = self._power(z, c)
        return (np.where(neg, np.negative(np.multiply(np.multiply(np.exp(np.negative(p)), p), np.log(w))), 0.0),)


class _Uniform(Continuous):
    def logpdf(self, z: Any) -> Any:
        inside = np.logical_and(np.greater_equal(z, 0.0), np.less_equal(z, 1.0))
        return np.where(inside, np.multiply(z, 0.0), -np.inf)

    def cdf(self, z: Any) -> Any:
        return np.clip(z, 0.0, 1.0)


class _GumbelR(Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.subtract(np.negative(z), np.exp(np.negative(z)))

    def cdf(self, z: Any) -> Any:
        return np.exp(np.negative(np.exp(np.negative(z))))

    def logcdf(self, z: Any) -> Any:
        return np.negative(np.exp(np.negative(z)))

    def sf(self, z: Any) -> Any:
        return np.negative(np.expm1(np.negative(np.exp(np.negative(z)))))


class _GumbelL(Continuous):
    def logpdf(self, z: Any) -> Any:
        return np.subtract(z, np.exp(z))

    def cdf(self, z: Any) -> Any:
        return np.negative(np.expm1(np.negative(np.exp(z))))

    def sf(self, z: Any) -> Any:
        return np.exp(np.negative(np.exp(z)))

    def logsf(self, z: Any) -> Any:
        return np.negative(np.exp(z))


class _Pareto(Continuous):
    nshapes = 1

    def logpdf(self, z: Any, b: Any) -> Any:
        inside = np.greater_equal(z, 1.0)
        zz = _inside(inside, z, 1.0)
        r = np.subtract(np.log(b), np.multiply(np.add(b, 1.0), np.log(zz)))
        return np.where(inside, r, -np.inf)

    def _power(self, z: Any, b: Any) -> tuple[Any, Any, Any]:
        above = np.greater(z, 1.0)
        zz = _inside(above, z, 2.0)
        return above, zz, np.power(zz, np.negative(b))

    def cdf(self, z: Any, b: Any) -> Any:
        above, _, p = self._power(z, b)
        return np.where(above, np.subtract(1.0, p), 0.0)

    def sf(self, z: Any, b: Any) -> Any:
        above, _, p = self._power(z, b)
        return np.where(above, p, 1.0)

    def cdf_partials(self, z: Any, b: Any) -> tuple:  # z^-b log z
        above, zz, p = self._power(z, b)
        return (np.where(above, np.multiply(p, np.log(zz)), 0.0),)


class _Invgamma(Continuous):
    nshapes = 1

    def logpdf(self, z: Any, a: Any) -> Any:
        pos, zz = _positive(z)
        r = np.multiply(np.add(a, 1.0), np.log(zz))
        r = np.subtract(np.negative(r), np.add(_sp().gammaln(a), np.divide(1.0, zz)))
        return np.where(pos, r, -np.inf)

    def cdf(self, z: Any, a: Any) -> Any:
        pos, zz = _positive(z)
        return np.where(pos, _sp().gammaincc(a, np.divide(1.0, zz)), 0.0)

    def sf(self, z: Any, a: Any) -> Any:
        pos, zz = _positive(z)
        return np.where(pos, _sp().gammainc(a, np.divide(1.0, zz)), 1.0)

    def cdf_partials(self, z: Any, a: Any) -> tuple:
        pos, zz = _positive(z)
        return (np.where(pos, np.negative(gamma_moment(1)(a, np.divide(1.0, zz))), 0.0),)


class _F(Continuous):
    nshapes = 2

    def logpdf(self, z: Any, dfn: Any, dfd: Any) -> Any:
        sp = _sp()
        nonneg = np.greater_equal(z, 0.0)
        zz = _inside(nonneg, z, 1.0)
        hn, hm = np.multiply(dfn, 0.5), np.multiply(dfd, 0.5)
        r = np.add(np.multiply(hm, np.log(dfd)), np.multiply(hn, np.log(dfn)))
        r = np.add(r, sp.xlogy(np.subtract(hn, 1.0), zz))
        tail = np.add(np.multiply(np.add(hn, hm), np.log(np.add(dfd, np.multiply(dfn, zz)))), sp.betaln(hn, hm))
        return np.where(nonneg, np.subtract(r, tail), -np.inf)

    def _w(self, z: Any, dfn: Any) -> tuple[Any, Any, Any]:
        pos, zz = _positive(z)
        return pos, zz, np.multiply(dfn, zz)

    def cdf(self, z: Any, dfn: Any, dfd: Any) -> Any:  # fdtr: betainc(n/2, m/2, n z / (m + n z))
        pos, _, nz = self._w(z, dfn)
        w = np.divide(nz, np.add(dfd, nz))
        return np.where(pos, _sp().betainc(np.multiply(dfn, 0.5), np.multiply(dfd, 0.5), w), 0.0)

    def sf(self, z: Any, dfn: Any, dfd: Any) -> Any:  # fdtrc: betainc(m/2, n/2, m / (m + n z))
        pos, _, nz = self._w(z, dfn)
        w = np.divide(dfd, np.add(dfd, nz))
        return np.where(pos, _sp().betainc(np.multiply(dfd, 0.5), np.multiply(dfn, 0.5), w), 1.0)

    def cdf_partials(self, z: Any, dfn: Any, dfd: Any) -> tuple:
        """I_w(n/2, m/2) with w = n z / (n z + m): dw/dn = z m / (n z + m)², dw/dm = -n z / (n z + m)²."""
        sp = _sp()
        pos, zz, nz = self._w(z, dfn)
        hn, hm = np.multiply(dfn, 0.5), np.multiply(dfd, 0.5)
        total = np.add(dfd, nz)
        w = np.divide(nz, total)
        log_density = np.add(sp.xlogy(np.subtract(hn, 1.0), w), sp.xlog1py(np.subtract(hm, 1.0), np.negative(w)))
        density = np.exp(np.subtract(log_density, sp.betaln(hn, hm)))
        scaled = np.divide(density, np.square(total))
        d_n = np.add(np.multiply(beta_moment(1, 0)(hn, hm, w), 0.5), np.multiply(scaled, np.multiply(zz, dfd)))
        d_m = np.subtract(np.multiply(beta_moment(0, 1)(hn, hm, w), 0.5), np.multiply(scaled, nz))
        return (np.where(pos, d_n, 0.0), np.where(pos, d_m, 0.0))


class _Rayleigh(Continuous):
    def logpdf(self, z: Any) -> Any:
        nonneg = np.greater_equal(z, 0.0)
        zz = _inside(nonneg, z, 1.0)
        return np.where(nonneg, np.subtract(np.log(zz), np.multiply(np.square(zz), 0.5)), -np.inf)

    def _half_square(self, z: Any) -> tuple[Any, Any]:
        pos, zz = _positive(z)
        return pos, np.multiply(np.square(zz), 0.5)

    def cdf(self, z: Any) -> Any:
        pos, h = self._half_square(z)
        return np.where(pos, np.negative(np.expm1(np.negative(h))), 0.0)

    def sf(self, z: Any) -> Any:
        pos, h = self._half_square(z)
        return np.where(pos, np.exp(np.negative(h)), 1.0)

    def logsf(self, z: Any) -> Any:
        pos, h = self._half_square(z)
        return np.where(pos, np.negative(h), 0.0)


class _Halfnorm(Continuous):
    def logpdf(self, z: Any) -> Any:
        nonneg = np.greater_equal(z, 0.0)
        return np.where(nonneg, np.subtract(0.5 * math.log(2.0 / math.pi), np.multiply(np.square(z), 0.5)), -np.inf)

    def cdf(self, z: Any) -> Any:
        pos, zz = _positive(z)
        return np.where(pos, _sp().erf(np.divide(zz, math.sqrt(2.0))), 0.0)

    def sf(self, z: Any) -> Any:
        pos, zz = _positive(z)
        return np.where(pos, np.multiply(_sp().ndtr(np.negative(zz)), 2.0), 1.0)


class _Loggamma(Continuous):
    """log of a Gamma(c) variable: cdf gammainc(c, e^z), by its first series term below SciPy's _LOGXMIN."""

    nshapes = 1

    def logpdf(self, z: Any, c: Any) -> Any:
        return np.subtract(np.subtract(np.multiply(c, z), np.exp(z)), _sp().gammaln(c))

    def _lead(self, z: Any, c: Any) -> tuple[Any, Any]:
        low = np.less(z, _LOGXMIN)
        return low, np.subtract(np.multiply(c, z), _sp().gammaln(np.add(c, 1.0)))

    def cdf(self, z: Any, c: Any) -> Any:
        low, lead = self._lead(z, c)
        return np.where(low, np.exp(lead), _sp().gammainc(c, np.exp(z)))

    def sf(self, z: Any, c: Any) -> Any:
        low, lead = self._lead(z, c)
        return np.where(low, np.negative(np.expm1(lead)), _sp().gammaincc(c, np.exp(z)))

    def cdf_partials(self, z: Any, c: Any) -> tuple:
        low, lead = self._lead(z, c)
        first = np.multiply(np.exp(lead), np.subtract(z, _sp().digamma(np.add(c, 1.0))))
        return (np.where(low, first, gamma_moment(1)(c, np.exp(z))),)


# -- quantile functions -------------------------------------------------------------------------------------
class _Quantile(Ufunc):
    """The standardized ppf (or isf) of a family, `q, *shapes -> z`: the value SciPy's own, on plain
    values; the partial derivatives from the implicit relation cdf(z; θ) = q (sf(z; θ) = q for isf),
    written with the law's log density and cdf partials on the saved (traced, for second order) z:
    dz/dq = ±1/pdf(z), dz/dθ = -(∂cdf/∂θ)(z)/pdf(z): 0 at q = 0 and 1 (z is an end of the support, which no
    shape moves) and where z underflowed to an end, its density 0 and ∂cdf/∂θ 0 there (what remains of
    the derivative is below the smallest double)."""

    def __init__(self, law: Continuous, method: str) -> None:
        stats = sys.modules["scipy.stats"]
        dist = getattr(stats, law.name)
        kept = original(getattr(stats.rv_continuous, method))

        def compute(q: Any, *shapes: Any) -> Any:
            with np.errstate(all="ignore"):
                return np.asarray(kept(dist, q, *shapes), dtype=np.float64)

        compute.__name__ = f"{law.name}_{method}"
        self._law = law
        self._sign = -1.0 if method == "isf" else 1.0
        label = f"scipy.stats.{law.name}.{method}"
        super().__init__(compute, self._partials(), label=label, unbounded=True)  # type: ignore[arg-type]
        self.name = f"{law.name}.{method}"

    def _partials(self) -> tuple:
        law, sign = self._law, self._sign

        def inverse_density(ins: tuple, z: Any) -> Any:
            return np.exp(np.negative(law.logpdf(z, *ins[1:])))

        def d_q(ins: tuple, z: Any, out: Any) -> Any:
            return np.multiply(inverse_density(ins, z), sign, out=out)

        def d_shape(i: int) -> Callable:
            def d(ins: tuple, z: Any, out: Any) -> Any:
                q = ins[0]
                inside = np.logical_and(np.greater(q, 0.0), np.less(q, 1.0))
                partial = law.cdf_partials(z, *ins[1:])[i]
                inverse = inverse_density(ins, z)
                # 0/0 where z underflowed to an end of the support (the density there 0)
                lost = np.logical_and(np.equal(partial, 0.0), np.isinf(inverse))
                r = np.negative(np.multiply(partial, inverse))
                return into(out, np.where(np.logical_and(inside, np.logical_not(lost)), r, 0.0))

            return d

        return (d_q, *(d_shape(i) for i in range(law.nshapes)))

    def forward(self, *ins: Any, out: Any = None) -> Any:
        return into(out, self.ufunc(*ins))

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        return lambda: self.forward(*ins, out=out)


#: (family, method) -> its quantile primitive
_QUANTILES: dict[tuple[str, str], _Quantile] = {}


def quantile(law: Continuous, method: str) -> _Quantile:
    """The primitive of a family's standardized ppf or isf (`method`), made when first used."""
    key = (law.name, method)
    prim = _QUANTILES.get(key)
    if prim is None:
        prim = _QUANTILES[key] = _Quantile(law, method)
    return prim


CONTINUOUS: dict[str, Continuous] = {
    "norm": _Norm(),
    "t": _T(),
    "gamma": _Gamma(),
    "chi2": _Chi2(),
    "beta": _Beta(),
    "expon": _Expon(),
    "laplace": _Laplace(),
    "cauchy": _Cauchy(),
    "logistic": _Logistic(),
    "lognorm": _Lognorm(),
    "weibull_min": _WeibullMin(),
    "weibull_max": _WeibullMax(),
    "uniform": _Uniform(),
    "gumbel_r": _GumbelR(),
    "gumbel_l": _GumbelL(),
    "pareto": _Pareto(),
    "invgamma": _Invgamma(),
    "f": _F(),
    "rayleigh": _Rayleigh(),
    "halfnorm": _Halfnorm(),
    "loggamma": _Loggamma(),
}
for _name, _law in CONTINUOUS.items():
    _law.name = _name
