"""The scipy.special ufuncs the tape differentiates, with their local partial derivatives.

Each entry gives one partial per input (see `prims.elementwise.Ufunc`): a function of the saved inputs and
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

from ...._sparsity import Nonlinearity
from .partials import rules
from .prim import NO_RULE, into

_QUOTIENT = Nonlinearity.QUOTIENT

__all__ = ["HOLOMORPHIC_SPECIAL", "PRIVATE", "SPECIAL", "special"]

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


def _d_lambertw(ins: tuple, y: Any, out: Any) -> Any:
    """W'(z) = W / (z (1 + W)) = exp(-W) / (1 + W): finite at z = 0 (where it is 1), infinite at the branch
    point -1/e; the same on every branch k."""
    return np.divide(np.exp(np.negative(y)), np.add(y, 1.0), out=out)


def _d_spence(ins: tuple, y: Any, out: Any) -> Any:
    """spence(z) = ∫_1^z log(t) / (1 - t) dt: the derivative log(z) / (1 - z) = -log1p(u)/u with u = z - 1,
    by its Taylor series sum_k (-u)^k / (k + 1) near u = 0 (to 20 terms at |u| < 0.05: exact to rounding,
    and so are its own derivatives there: log(z)/(1 - z) at z = 1 is 0/0, its limit -1)."""
    z = ins[0]
    u = np.subtract(z, 1.0)
    near = np.less(np.abs(u), 0.05)
    uu = np.where(near, 0.5, u)
    far = np.negative(np.divide(np.log1p(uu), uu))
    un = np.where(near, u, 0.0)
    series: Any = -1.0 / 21.0
    for k in range(19, -1, -1):  # -(1 - u/2 + u^2/3 - ...), by Horner's rule
        series = np.add(np.multiply(np.negative(un), series), -1.0 / (k + 1))
    return into(out, np.where(near, series, far))


def _d_entr(ins: tuple, y: Any, out: Any) -> Any:
    """entr(x) = -x log x: -(log x + 1) for x > 0 (+inf at 0); entr is -inf for x < 0, derivative 0."""
    x = ins[0]
    negative = np.less(x, 0.0)
    return into(out, np.where(negative, 0.0, np.negative(np.add(np.log(np.where(negative, 1.0, x)), 1.0))))


def _inside_rel_entr(ins: tuple) -> tuple:
    """(where x > 0 and y > 0, x there, y there): rel_entr and kl_div are x log(x/y) (+ y - x) there, 0 at
    x = 0 <= y and +inf elsewhere (derivative 0 in both)."""
    x, y = ins
    inside = np.logical_and(np.greater(x, 0.0), np.greater(y, 0.0))
    return inside, np.where(inside, x, 1.0), np.where(inside, y, 1.0)


def _d_rel_entr(k: int, kl: bool) -> Callable:
    def d(ins: tuple, y: Any, out: Any) -> Any:
        x, yy = ins
        inside, xs, ys = _inside_rel_entr(ins)
        if k == 0:  # log(x/y) + 1 (kl_div: log(x/y)); -inf at x = 0 < y
            r = np.log(np.divide(xs, ys)) if kl else np.add(np.log(np.divide(xs, ys)), 1.0)
            at_zero = np.logical_and(np.equal(x, 0.0), np.greater(yy, 0.0))
            return into(out, np.where(inside, r, np.where(at_zero, -np.inf, 0.0)))
        r = np.negative(np.divide(xs, ys))  # -x/y (kl_div: 1 - x/y; 1 at x = 0 < y)
        if kl:
            r = np.add(r, 1.0)
            at_zero = np.logical_and(np.equal(x, 0.0), np.greater(yy, 0.0))
            return into(out, np.where(inside, r, np.where(at_zero, 1.0, 0.0)))
        return into(out, np.where(inside, r, 0.0))

    return d


def _d_huber(k: int) -> Callable:
    """huber(δ, r) = r²/2 for |r| <= δ, δ (|r| - δ/2) beyond (inf for δ < 0)."""

    def d(ins: tuple, y: Any, out: Any) -> Any:
        delta, r = ins
        quadratic = np.less_equal(np.abs(r), delta)
        linear = np.logical_and(np.logical_not(quadratic), np.greater_equal(delta, 0.0))
        if k == 0:
            return into(out, np.where(linear, np.subtract(np.abs(r), delta), 0.0))
        return into(out, np.where(quadratic, r, np.where(linear, np.multiply(delta, np.sign(r)), 0.0)))

    return d


def _d_pseudo_huber(k: int) -> Callable:
    """pseudo_huber(δ, r) = δ² (sqrt(1 + (r/δ)²) - 1), for δ > 0: d/dr = r δ / sigma and d/dδ = (sigma - δ)² / sigma
    with sigma = sqrt(δ² + r²). SciPy gives 0 at δ = 0 and inf for δ < 0: derivative 0 there."""

    def d(ins: tuple, y: Any, out: Any) -> Any:
        delta, r = ins
        positive = np.greater(delta, 0.0)
        dd = np.where(positive, delta, 1.0)
        sigma = np.sqrt(np.add(np.square(dd), np.square(r)))
        if k == 1:  # r δ / sigma
            return into(out, np.where(positive, np.divide(np.multiply(r, dd), sigma), 0.0))
        return into(out, np.where(positive, np.divide(np.square(np.subtract(sigma, dd)), sigma), 0.0))

    return d


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
    # for sparsity detection a quotient, as divide: nonlinear in (x, y), linear in x where y is a number
    "xlogy": lambda: rules(_d_xlogy_x, lambda ins, y, out: np.divide(ins[0], ins[1], out=out), pattern=_QUOTIENT),
    "xlog1py": lambda: rules(
        _d_xlog1py_x,
        lambda ins, y, out: np.divide(ins[0], np.add(ins[1], 1.0, out=out), out=out),
        pattern=_QUOTIENT,
    ),
    "spence": lambda: (_d_spence,),
    "entr": lambda: (_d_entr,),
    "rel_entr": lambda: (_d_rel_entr(0, False), _d_rel_entr(1, False)),
    "kl_div": lambda: (_d_rel_entr(0, True), _d_rel_entr(1, True)),
    "huber": lambda: (_d_huber(0), _d_huber(1)),
    "pseudo_huber": lambda: (_d_pseudo_huber(0), _d_pseudo_huber(1)),
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
    "_lambertw": lambda: (_d_lambertw, None, None),
}

#: of these, the complex-differentiable ones (their partials are real-coefficient expressions of the saved
#: values, see `Prim.complex`)
HOLOMORPHIC_SPECIAL = frozenset({"_lambertw"})
