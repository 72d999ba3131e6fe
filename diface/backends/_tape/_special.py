"""The scipy.special ufuncs the tape differentiates, with their local partial derivatives.

Each entry gives one partial per input (see `_elementwise.Ufunc`): a function of the saved inputs and
output (written with ufuncs, so that it is recorded and differentiated again for second order), `None`
for an input with zero derivative, or `NO_RULE` for an input the tape has no derivative for (an order
of a Bessel function, the parameter of an incomplete gamma function): an active value there raises
`NotSupportedError` at recording. scipy.special is never imported here: a ufunc is recognised when f
uses it (scipy.special is then in `sys.modules`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ._prim import NO_RULE, into

__all__ = ["SPECIAL", "special"]

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def special() -> Any:
    return sys.modules["scipy.special"]


def _hurwitz_zeta() -> Any:
    """scipy's Hurwitz zeta ufunc zeta(s, q) (`scipy.special.zeta` is a Python function around it)."""
    return special()._ufuncs._zeta


def _trigamma(a: Any, out: Any = None) -> Any:
    """polygamma(1, a) = zeta(2, a)."""
    return _hurwitz_zeta()(2.0, a, out=out) if out is not None else _hurwitz_zeta()(2.0, a)


# -- partials --------------------------------------------------------------------------------------------------
def _d_logit(ins: tuple, y: Any, out: Any) -> Any:  # 1 / (a (1 - a))
    a = ins[0]
    return np.divide(1.0, np.multiply(a, np.subtract(1.0, a), out=out), out=out)


def _gaussian(scale: float) -> Callable:  # scale * exp(-a^2) (erf, erfc)
    return lambda ins, y, out: np.multiply(
        np.exp(np.negative(np.square(ins[0], out=out), out=out), out=out), scale, out=out
    )


def _d_ndtr(ins: tuple, y: Any, out: Any) -> Any:
    t = np.multiply(np.square(ins[0], out=out), -0.5, out=out)
    return np.divide(np.exp(t, out=out), _SQRT_2PI, out=out)


def _d_log_ndtr(ins: tuple, y: Any, out: Any) -> Any:  # pdf / cdf = exp(-a^2/2 - log_ndtr(a)) / sqrt(2 pi)
    t = np.subtract(np.multiply(np.square(ins[0], out=out), -0.5, out=out), y, out=out)
    return np.divide(np.exp(t, out=out), _SQRT_2PI, out=out)


def _d_ndtri(ins: tuple, y: Any, out: Any) -> Any:  # sqrt(2 pi) exp(y^2 / 2)
    t = np.multiply(np.square(y, out=out), 0.5, out=out)
    return np.multiply(np.exp(t, out=out), _SQRT_2PI, out=out)


def _d_erfinv(ins: tuple, y: Any, out: Any) -> Any:  # sqrt(pi)/2 exp(y^2)
    return np.multiply(np.exp(np.square(y, out=out), out=out), _SQRT_PI / 2.0, out=out)


def _d_erfcinv(ins: tuple, y: Any, out: Any) -> Any:  # -sqrt(pi)/2 exp(y^2)
    return np.multiply(np.exp(np.square(y, out=out), out=out), -_SQRT_PI / 2.0, out=out)


def _d_erfcx(ins: tuple, y: Any, out: Any) -> Any:  # 2 a y - 2 / sqrt(pi)
    return np.subtract(np.multiply(np.multiply(ins[0], y), 2.0), 2.0 / _SQRT_PI, out=out)


def _d_xlogy_x(ins: tuple, y: Any, out: Any) -> Any:  # log(b), 0 where a == 0 (xlogy's convention)
    a, b = ins
    return into(out, np.where(np.equal(a, 0), 0.0, np.log(b)))


def _d_xlog1py_x(ins: tuple, y: Any, out: Any) -> Any:
    a, b = ins
    return into(out, np.where(np.equal(a, 0), 0.0, np.log1p(b)))


def _d_gamma(ins: tuple, y: Any, out: Any) -> Any:  # gamma(a) digamma(a)
    return np.multiply(special().digamma(ins[0]), y, out=out)


def _d_rgamma(ins: tuple, y: Any, out: Any) -> Any:  # -rgamma(a) digamma(a)
    return np.negative(np.multiply(special().digamma(ins[0]), y), out=out)


def _d_beta(k: int) -> Callable:  # beta(a, b) (digamma(a or b) - digamma(a + b))
    def d(ins: tuple, y: Any, out: Any) -> Any:
        sp = special()
        return np.multiply(np.subtract(sp.digamma(ins[k]), sp.digamma(np.add(ins[0], ins[1]))), y, out=out)

    return d


def _d_betaln(k: int) -> Callable:  # digamma(a or b) - digamma(a + b)
    def d(ins: tuple, y: Any, out: Any) -> Any:
        sp = special()
        return np.subtract(sp.digamma(ins[k]), sp.digamma(np.add(ins[0], ins[1])), out=out)

    return d


def _d_betainc_x(ins: tuple, y: Any, out: Any) -> Any:  # x^(a-1) (1-x)^(b-1) / beta(a, b)
    a, b, x = ins
    sp = special()
    log = np.subtract(
        np.add(sp.xlogy(np.subtract(a, 1.0), x), sp.xlog1py(np.subtract(b, 1.0), np.negative(x))), sp.betaln(a, b)
    )
    return np.exp(log, out=out)


def _d_gammainc_x(sign: float) -> Callable:  # +- exp(-x) x^(a-1) / gamma(a)
    def d(ins: tuple, y: Any, out: Any) -> Any:
        a, x = ins
        sp = special()
        log = np.subtract(np.subtract(sp.xlogy(np.subtract(a, 1.0), x), x), sp.gammaln(a))
        return np.multiply(np.exp(log), sign, out=out)

    return d


def _d_stdtr_t(ins: tuple, y: Any, out: Any) -> Any:
    """Student's t density: the derivative of its cdf stdtr(df, t) with respect to t."""
    df, t = ins
    sp = special()
    half = np.multiply(np.add(df, 1.0), 0.5)
    log = np.subtract(sp.gammaln(half), sp.gammaln(np.multiply(df, 0.5)))
    log = np.subtract(log, np.multiply(np.log(np.multiply(df, math.pi)), 0.5))
    log = np.subtract(log, np.multiply(half, np.log1p(np.divide(np.square(t), df))))
    return np.exp(log, out=out)


def _d_zeta_q(ins: tuple, y: Any, out: Any) -> Any:  # d zeta(s, q) / dq = -s zeta(s + 1, q)
    s, q = ins
    return np.multiply(np.negative(s), _hurwitz_zeta()(np.add(s, 1.0), q), out=out)


def _bessel(fn: str, c_minus: float, c_plus: float, c_same: float = 0.0, sign_same: bool = False) -> tuple:
    """d/dx f(v, x) = c_minus f(v-1, x) + c_plus f(v+1, x) + c_same (sign(x)) f(v, x); the order v has no
    rule."""

    def d(ins: tuple, y: Any, out: Any) -> Any:
        v, x = ins
        f = getattr(special(), fn)
        r = np.add(np.multiply(f(np.subtract(v, 1.0), x), c_minus), np.multiply(f(np.add(v, 1.0), x), c_plus))
        if c_same:
            same = np.multiply(y, c_same)
            r = np.add(r, np.multiply(np.sign(x), same) if sign_same else same)
        return into(out, r)

    return (NO_RULE, d)


def _bessel_fixed(fn: str, order: float, c_minus: float, c_plus: float, c_same: float = 0.0) -> tuple:
    """A Bessel function of fixed order (j0, i1e, ...) through the general one of order `order`."""
    _, d = _bessel(fn, c_minus, c_plus, c_same, sign_same=True)
    return (lambda ins, y, out: d((order, ins[0]), y, out),)


#: name in scipy.special -> partials (built when first used)
SPECIAL: dict[str, Callable[[], tuple]] = {
    "exp10": lambda: (lambda ins, y, out: np.multiply(y, math.log(10.0), out=out),),
    "exp2": lambda: (lambda ins, y, out: np.multiply(y, math.log(2.0), out=out),),
    "expit": lambda: (lambda ins, y, out: np.multiply(y, np.subtract(1.0, y, out=out), out=out),),
    "log_expit": lambda: (lambda ins, y, out: special().expit(np.negative(ins[0]), out=out),),
    "logit": lambda: (_d_logit,),
    "erf": lambda: (_gaussian(2.0 / _SQRT_PI),),
    "erfc": lambda: (_gaussian(-2.0 / _SQRT_PI),),
    "erfinv": lambda: (_d_erfinv,),
    "erfcinv": lambda: (_d_erfcinv,),
    "erfcx": lambda: (_d_erfcx,),
    "ndtr": lambda: (_d_ndtr,),
    "log_ndtr": lambda: (_d_log_ndtr,),
    "ndtri": lambda: (_d_ndtri,),
    "gamma": lambda: (_d_gamma,),
    "rgamma": lambda: (_d_rgamma,),
    "gammaln": lambda: (lambda ins, y, out: special().digamma(ins[0], out=out),),
    "loggamma": lambda: (lambda ins, y, out: special().digamma(ins[0], out=out),),
    "digamma": lambda: (lambda ins, y, out: _trigamma(ins[0], out),),
    "gammasgn": lambda: (None,),
    "beta": lambda: (_d_beta(0), _d_beta(1)),
    "betaln": lambda: (_d_betaln(0), _d_betaln(1)),
    "betainc": lambda: (NO_RULE, NO_RULE, _d_betainc_x),
    "gammainc": lambda: (NO_RULE, _d_gammainc_x(1.0)),
    "gammaincc": lambda: (NO_RULE, _d_gammainc_x(-1.0)),
    "stdtr": lambda: (NO_RULE, _d_stdtr_t),
    "xlogy": lambda: (_d_xlogy_x, lambda ins, y, out: np.divide(ins[0], ins[1], out=out)),
    "xlog1py": lambda: (_d_xlog1py_x, lambda ins, y, out: np.divide(ins[0], np.add(ins[1], 1.0, out=out), out=out)),
    "jv": lambda: _bessel("jv", 0.5, -0.5),
    "yv": lambda: _bessel("yv", 0.5, -0.5),
    "yn": lambda: _bessel("yv", 0.5, -0.5),
    "iv": lambda: _bessel("iv", 0.5, 0.5),
    "kv": lambda: _bessel("kv", -0.5, -0.5),
    "ive": lambda: _bessel("ive", 0.5, 0.5, -1.0, sign_same=True),
    "kve": lambda: _bessel("kve", -0.5, -0.5, 1.0),
    "j0": lambda: _bessel_fixed("jv", 0.0, 0.5, -0.5),
    "j1": lambda: _bessel_fixed("jv", 1.0, 0.5, -0.5),
    "y0": lambda: _bessel_fixed("yv", 0.0, 0.5, -0.5),
    "y1": lambda: _bessel_fixed("yv", 1.0, 0.5, -0.5),
    "i0": lambda: _bessel_fixed("iv", 0.0, 0.5, 0.5),
    "i1": lambda: _bessel_fixed("iv", 1.0, 0.5, 0.5),
    "i0e": lambda: _bessel_fixed("ive", 0.0, 0.5, 0.5, -1.0),
    "i1e": lambda: _bessel_fixed("ive", 1.0, 0.5, 0.5, -1.0),
    "k0": lambda: _bessel_fixed("kv", 0.0, -0.5, -0.5),
    "k1": lambda: _bessel_fixed("kv", 1.0, -0.5, -0.5),
}

#: ufuncs of scipy.special._ufuncs that the public Python functions call (zeta, polygamma)
PRIVATE: dict[str, Callable[[], tuple]] = {
    "_zeta": lambda: (NO_RULE, _d_zeta_q),
}
