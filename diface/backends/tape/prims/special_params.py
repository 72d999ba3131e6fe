"""The derivatives of scipy.special functions with respect to their parameters, which have no closed
form: the incomplete gamma function's in `a` (`gammainc`, `gammaincc`), the incomplete beta function's
in `a` and `b` (`betainc`, `betaincc`), Student's t cdf's in `df` (`stdtr`), the Hurwitz zeta
function's in `s`; and, from these, the inverse functions' (`gammaincinv`, `betaincinv`, `stdtrit`...)
in every argument by implicit differentiation.

Each derivative is a family of primitives, one per order, whose own derivatives are members of the
family (so second and higher orders are exact as the first):

- `gamma_moment(n)(a, x)` = D_n = ∫_0^x u^n p(t) dt, p the Gamma(a) density and u = log t - ψ(a)
  (its score in a): D_0 = gammainc(a, x), ∂D_n/∂a = D_{n+1} - n ψ'(a) D_{n-1}, ∂D_n/∂x = u(x)^n p(x);
- `beta_moment(n, m)(a, b, x)` = M_{n,m} = ∫_0^x u^n v^m p(t) dt, p the Beta(a, b) density, u = log t
  - ψ(a) + ψ(a+b) and v = log(1-t) - ψ(b) + ψ(a+b) (its scores in a and b): M_{0,0} = betainc(a, b, x),
  ∂M/∂a = M_{n+1,m} + n (ψ'(a+b) - ψ'(a)) M_{n-1,m} + m ψ'(a+b) M_{n,m-1}, likewise in b;
- `zeta_moment(n)(s, q)` = Z_n = Σ_k (-log(k+q))^n (k+q)^-s = ∂^n ζ(s, q)/∂s^n: ∂Z_n/∂s = Z_{n+1},
  ∂Z_n/∂q = -n Z_{n-1}(s+1, q) - s Z_n(s+1, q).

The values are computed to about 1e-13 relative accuracy (checked against mpmath at 30 digits): the
moments by double-exponential (tanh-sinh) quadrature over the tail nearer x (the other tail through the
complete moments, which are polynomials in polygamma functions, so that neither a cdf near 1 nor one
near 0 loses digits), with the variable changed so that the integrand has no interior peak; the zeta
derivatives by the Euler-Maclaurin formula differentiated exactly in s. Imported, the module enters
these derivatives into `prims.special`'s tables (before it, those inputs had `NO_RULE`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from .elementwise import Ufunc
from .prim import into
from .special import PRIVATE, SPECIAL, _d_betainc_x, _d_gammainc_x, _d_stdtr_t, _d_zeta_q, special

__all__ = ["beta_moment", "d_stdtr_df", "gamma_moment", "polygamma_value", "zeta_moment"]


# -- double-exponential quadrature over (0, 1) ---------------------------------------------------------------
#: the nodes reach this far in the tanh-sinh variable (s = expit(pi sinh t) comes within e^-85 of 0 and 1)
_T_MAX = 4.0
_LEVELS = 9
#: converged when two levels agree to this fraction of the integral of |integrand| (the last level is
#: then far more accurate: the error squares with each halving of the step)
_TOL = 1e-11


def _nodes(level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The nodes new at `level` (step 2^-level): log s, log(1 - s), s and the weights ds/dt."""
    h = 2.0**-level
    if level == 0:
        t = np.arange(-_T_MAX, _T_MAX + 0.5)
    else:
        k = np.arange(1, int(_T_MAX / h) + 1, 2)
        t = np.concatenate([-k[::-1], k]) * h
    e = math.pi * np.sinh(t)
    log_s = -np.logaddexp(0.0, -e)  # s = expit(e), kept in logs so that neither end loses digits
    log_1ms = -np.logaddexp(0.0, e)
    weight = math.pi * np.cosh(t) * np.exp(log_s + log_1ms)
    return log_s, log_1ms, np.exp(log_s), weight


_NODES = [_nodes(j) for j in range(_LEVELS)]


def _integrate(integrand: Callable, args: tuple[np.ndarray, ...]) -> np.ndarray:
    """∫_0^1 integrand(log s, log(1-s), *args) ds for each element of the 1-d arrays `args` (the
    integrand broadcasts an (n, 1) column of each against a row of nodes)."""
    size = args[0].size
    total = np.zeros(size)
    scale = np.zeros(size)
    todo = np.arange(size)
    previous = np.zeros(size)
    for level in range(_LEVELS):
        log_s, log_1ms, _, weight = _NODES[level]
        cols = tuple(a[todo, None] for a in args)
        with np.errstate(all="ignore"):
            f = integrand(log_s, log_1ms, *cols) * weight
        f = np.where(np.isfinite(f), f, 0.0) if level == 0 else f
        h = 2.0**-level
        part = h * np.sum(f, axis=1)
        abs_part = h * np.sum(np.abs(f), axis=1)
        if level == 0:
            total[todo] = part
            scale[todo] = abs_part
        else:
            total[todo] = total[todo] / 2.0 + part
            scale[todo] = scale[todo] / 2.0 + abs_part
        if level >= 3:
            close = np.abs(total[todo] - previous[todo]) <= _TOL * scale[todo]
            close |= ~np.isfinite(total[todo])
            todo = todo[~close]
            if not todo.size:
                return total
        previous[todo] = total[todo]
    raise NotSupportedError(
        "AutoTape: the quadrature for a parameter derivative of scipy.special's incomplete gamma or beta "
        f"function did not converge (at {todo.size} of {size} points); differentiate f with "
        "di.AutoFiniteDiff() there"
    )


# -- complete moments: polynomials in polygamma values --------------------------------------------------------
def polygamma_value(k: int, a: Any) -> Any:
    """polygamma(k, a) on plain values."""
    sp = special()
    return sp.digamma(a) if k == 0 else sp.polygamma(k, a)


def _moments_from_cumulants(kappa: Callable[[int, int], Any], n: int, m: int) -> Any:
    """The joint moment E[U^n V^m] of centred variables with joint cumulants kappa(i, j) (i + j >= 2),
    by the recursion mu_{n+1,m} = sum_{i<=n, j<=m} C(n,i) C(m,j) kappa(i+1, j) mu_{n-i,m-j}."""
    memo: dict[tuple[int, int], Any] = {(0, 0): 1.0}

    def mu(p: int, r: int) -> Any:
        if (p, r) in memo:
            return memo[(p, r)]
        total: Any = 0.0
        if p > 0:
            for i in range(p):
                for j in range(r + 1):
                    if i + 1 + j >= 2:
                        total = total + math.comb(p - 1, i) * math.comb(r, j) * kappa(i + 1, j) * mu(p - 1 - i, r - j)
        else:
            for j in range(r):
                if j + 1 >= 2:
                    total = total + math.comb(r - 1, j) * kappa(0, j + 1) * mu(0, r - 1 - j)
        memo[(p, r)] = total
        return total

    return mu(n, m)


def _gamma_full(n: int, a: np.ndarray) -> Any:
    """E[u^n] under Gamma(a): cumulants psi^(k-1)(a)."""
    return _moments_from_cumulants(lambda i, j: polygamma_value(i - 1, a), n, 0)


def _beta_full(n: int, m: int, a: np.ndarray, b: np.ndarray) -> Any:
    ab = a + b

    def kappa(i: int, j: int) -> Any:
        if j == 0:
            return polygamma_value(i - 1, a) - polygamma_value(i - 1, ab)
        if i == 0:
            return polygamma_value(j - 1, b) - polygamma_value(j - 1, ab)
        return -polygamma_value(i + j - 1, ab)

    return _moments_from_cumulants(kappa, n, m)


# -- the incomplete gamma function's moments ------------------------------------------------------------------
def _rate(a: np.ndarray, slope: np.ndarray, curvature: np.ndarray) -> np.ndarray:
    """κ for τ = -log(s)/κ: about the rate at which the log density falls from the end at x (its slope and
    curvature in τ there), so that its mass spans a few units of log s; at most a, so that for a small
    a the singularity t^(a-1) at 0 is taken away whole (then the integrand is bounded at s = 0)."""
    return np.minimum(a, slope + np.sqrt(curvature) + 1.0)


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _stirling(a: np.ndarray) -> np.ndarray:
    """gammaln(a) - ((a - 1/2) log a - a + log(2 pi)/2), by its asymptotic series where a >= 10."""
    sp = special()
    big = a >= 10.0
    ab = np.where(big, a, 10.0)
    inv2 = 1.0 / (ab * ab)
    series = (1.0 / 12.0 + inv2 * (-1.0 / 360.0 + inv2 * (1.0 / 1260.0 + inv2 * (-1.0 / 1680.0 + inv2 / 1188.0)))) / ab
    small = np.where(big, 1.0, a)
    direct = sp.gammaln(small) - ((small - 0.5) * np.log(small) - small + _LOG_SQRT_2PI)
    return np.where(big, series, direct)


def _exp_minus(w: Any) -> Any:
    """e^w - 1 - w, without the cancellation of expm1(w) - w near 0."""
    series = w * (1.0 / 362880.0)
    for k in range(8, 1, -1):  # w^2/2! + w^3/3! + ... + w^9/9!, by Horner's rule
        series = w * (1.0 / math.factorial(k) + series)
    return np.where(np.abs(w) < 0.05, w * series, np.expm1(w) - w)


def _gamma_prefactor(a: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """log(a^a / Γ(a) / κ) - a = the log density's constant part, written so that it cancels with the
    a log(x/a) - x of the rest in the exponent a (log λ + 1 - λ) + ... (λ = x/a) without losing digits."""
    return 0.5 * np.log(a) - _LOG_SQRT_2PI - _stirling(a) - np.log(kappa)


def _gamma_lower(n: int, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∫_0^x u^n p dt, through t = x e^-τ, τ = -log(s)/κ (for x < a the density falls from τ = 0 on). The
    log density times dt/dτ is a (1 + w - e^w) + const with w = log(x/a) - τ."""
    sp = special()
    log_x = np.log(x)
    kappa = _rate(a, a - x, x)
    pre = _gamma_prefactor(a, kappa)
    log_ratio = np.log(x / a)
    centre = log_x - sp.digamma(a)

    def integrand(log_s: Any, log_1ms: Any, a: Any, kappa: Any, pre: Any, log_ratio: Any, centre: Any) -> Any:
        tau = -log_s / kappa
        f = np.exp(pre + kappa * tau - a * _exp_minus(log_ratio - tau))
        return f * (centre - tau) ** n if n else f

    return _integrate(integrand, (a, kappa, pre, log_ratio, centre))


def _gamma_upper(n: int, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∫_x^∞ u^n p dt, through t = x e^τ, τ = -log(s)/κ (for x >= a the density falls from τ = 0 on): the
    exponent is a (1 + w - e^w) + const with w = log(x/a) + τ."""
    sp = special()
    log_x = np.log(x)
    kappa = x - a + np.sqrt(x) + 1.0
    pre = _gamma_prefactor(a, kappa)
    log_ratio = np.log(x / a)
    centre = log_x - sp.digamma(a)

    def integrand(log_s: Any, log_1ms: Any, a: Any, kappa: Any, pre: Any, log_ratio: Any, centre: Any) -> Any:
        tau = -log_s / kappa
        f = np.exp(pre + kappa * tau - a * _exp_minus(log_ratio + tau))
        return f * (centre + tau) ** n if n else f

    return _integrate(integrand, (a, kappa, pre, log_ratio, centre))


def _gamma_moment_value(n: int, a: Any, x: Any) -> np.ndarray:
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (x >= 0) & ~np.isnan(x)
    out[valid & (x == 0)] = 0.0
    full = valid & np.isposinf(x)
    if full.any():
        out[full] = _gamma_full(n, a[full])
    lower = valid & (x > 0) & (x < a)
    if lower.any():
        out[lower] = _gamma_lower(n, a[lower], x[lower])
    upper = valid & (x >= a) & np.isfinite(x)
    if upper.any():
        au, xu = a[upper], x[upper]
        out[upper] = _gamma_full(n, au) - _gamma_upper(n, au, xu)
    return out.reshape(shape)


# -- the incomplete beta function's moments -------------------------------------------------------------------
def _digamma_shift(b: np.ndarray, a: np.ndarray) -> np.ndarray:
    """ψ(b + a) - ψ(b), without the cancellation of the difference where a is small against b (then by
    its Taylor series in a, whose terms fall like (a/b)^k / k)."""
    sp = special()
    small = a < 0.125 * b
    if not small.any():
        return sp.digamma(b + a) - sp.digamma(b)
    bb = np.where(small, b, 1.0)
    aa = np.where(small, a, 0.0)
    series = np.zeros_like(bb)
    power = np.ones_like(bb)
    ratio = float(np.max(aa / bb))
    terms = 1 if ratio == 0.0 else min(18, math.ceil(-37.0 / math.log(ratio)))
    for k in range(1, terms + 1):
        power = power * aa / k
        series = series + power * sp.polygamma(k, bb)
    return np.where(small, series, sp.digamma(b + a) - sp.digamma(b))


def _beta_lower(n: int, m: int, a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∫_0^x u^n v^m p dt, through t = x e^-τ, τ = -log(s)/κ, for x at most the mean a/(a+b) (there the
    density falls from τ = 0 on)."""
    sp = special()
    log_x = np.log(x)
    odds = x / (1.0 - x)
    kappa = _rate(a, a - (b - 1.0) * odds, np.abs(b - 1.0) * odds / (1.0 - x))
    pre = a * log_x - sp.betaln(a, b) - np.log(kappa)
    cu = log_x + _digamma_shift(a, b)
    cv = _digamma_shift(b, a)

    def integrand(log_s: Any, log_1ms: Any, a: Any, b: Any, x: Any, kappa: Any, pre: Any, cu: Any, cv: Any) -> Any:
        tau = -log_s / kappa
        log_1mt = np.log1p(-x * np.exp(-tau))
        f = np.exp(pre + (kappa - a) * tau + (b - 1.0) * log_1mt)
        if n:
            f = f * (cu - tau) ** n
        if m:
            f = f * (log_1mt + cv) ** m
        return f

    return _integrate(integrand, (a, b, x, kappa, pre, cu, cv))


def _beta_moment_value(n: int, m: int, a: Any, b: Any, x: Any) -> np.ndarray:
    a, b, x = (np.asarray(v, dtype=np.float64) for v in (a, b, x))
    a, b, x = np.broadcast_arrays(a, b, x)
    shape = a.shape
    a, b, x = a.ravel(), b.ravel(), x.ravel()
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
    out[valid & (x == 0)] = 0.0
    whole = valid & (x == 1)
    if whole.any():
        out[whole] = _beta_full(n, m, a[whole], b[whole])
    inside = valid & (x > 0) & (x < 1)
    lower = inside & (x * (a + b) <= a)
    if lower.any():
        out[lower] = _beta_lower(n, m, a[lower], b[lower], x[lower])
    upper = inside & ~lower
    if upper.any():
        au, bu, xu = a[upper], b[upper], x[upper]
        out[upper] = _beta_full(n, m, au, bu) - _beta_lower(m, n, bu, au, 1.0 - xu)
    return out.reshape(shape)


# -- the Hurwitz zeta function's derivatives in s: Euler-Maclaurin ------------------------------------------
_EM_TERMS = 14  # Bernoulli terms
_EM_DIRECT = 16  # terms summed directly (more where s is large: see _zeta_moment_value)


@cache
def _bernoulli_factors() -> tuple[float, ...]:
    """B_2j / (2j)! for j = 1.._EM_TERMS."""
    b = special().bernoulli(2 * _EM_TERMS)
    return tuple(float(b[2 * j]) / math.factorial(2 * j) for j in range(1, _EM_TERMS + 1))


def _zeta_moment_value(n: int, s: Any, q: Any) -> np.ndarray:
    """∂^n ζ(s, q)/∂s^n: ζ = Σ_{k<N} (k+q)^-s + (N+q)^(1-s)/(s-1) + (N+q)^-s/2 + Σ_j B_2j/(2j)! (s)_{2j-1}
    (N+q)^(-s-2j+1) + R, each term differentiated exactly n times in s."""
    s, q = np.broadcast_arrays(np.asarray(s, dtype=np.float64), np.asarray(q, dtype=np.float64))
    shape = s.shape
    s, q = s.ravel(), q.ravel()
    out = np.full(s.shape, np.nan)
    valid = (s > 1) & (q > 0) & np.isfinite(s) & np.isfinite(q)
    if valid.any():
        out[valid] = _euler_maclaurin(n, s[valid], q[valid])
    return out.reshape(shape)


def _euler_maclaurin(n: int, s: np.ndarray, q: np.ndarray) -> np.ndarray:
    big = int(min(np.max(s), 600.0))  # the Bernoulli terms converge while s + 2j < 2 pi (N + q)
    count = max(_EM_DIRECT, math.ceil((big + 2 * _EM_TERMS) / (2.0 * math.pi)) + 2)
    k = np.arange(count, dtype=np.float64)
    log_k = np.log(k[None, :] + q[:, None])
    total = np.sum((-log_k) ** n * np.exp(-s[:, None] * log_k), axis=1)
    big_n = count + q
    log_n = np.log(big_n)
    sigma = s - 1.0
    # (N+q)^(1-s)/(s-1): its n-th derivative is (-1)^n n! e^(-sigmaL) Σ_{i<=n} (sigmaL)^i/i! / sigma^(n+1)
    series = sum((sigma * log_n) ** i / math.factorial(i) for i in range(n + 1))
    total += (-1.0) ** n * math.factorial(n) * np.exp(-sigma * log_n) * series / sigma ** (n + 1)
    total += 0.5 * (-log_n) ** n * np.exp(-s * log_n)
    # the Bernoulli terms: (s)_{2j-1} carried as its Taylor coefficients in s up to order n
    coeffs = [np.ones_like(s)] + [np.zeros_like(s) for _ in range(n)]
    factors = _bernoulli_factors()
    rising = 0
    for j in range(1, _EM_TERMS + 1):
        while rising < 2 * j - 1:  # times (s + rising + ε)
            coeffs = [coeffs[i] * (s + rising) + (coeffs[i - 1] if i else 0.0) for i in range(n + 1)]
            rising += 1
        e = np.exp(-(s + 2 * j - 1) * log_n)
        term = sum(math.comb(n, i) * math.factorial(i) * coeffs[i] * (-log_n) ** (n - i) * e for i in range(n + 1))
        total += factors[j - 1] * term
    return total


# -- the primitives ---------------------------------------------------------------------------------------
class _Series(Ufunc):
    """One member of a family of functions (an order of a derivative), elementwise like a ufunc, whose
    partial derivatives are members of the family (`partials`, built when first needed)."""

    def __init__(self, name: str, label: str, compute: Callable, partials: Callable[[], tuple]) -> None:
        compute.__name__ = name
        super().__init__(compute, None, label=label, unbounded=True)  # type: ignore[arg-type]
        self._make_partials = partials
        self.differentiable = True
        self.name = name

    @property
    def partials(self) -> tuple:
        made = self.__dict__.get("_partials")
        if made is None:
            made = self.__dict__["_partials"] = self._make_partials()
        return made

    @partials.setter
    def partials(self, value: tuple) -> None:
        if value:
            self.__dict__["_partials"] = value

    def forward(self, *ins: Any, out: Any = None) -> Any:
        with np.errstate(all="ignore"):
            return into(out, self.ufunc(*ins))

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        return lambda: self.forward(*ins, out=out)


def _psi(k: int, a: Any) -> Any:
    """polygamma(k, a), recorded on traced values: digamma, or (-1)^(k+1) k! zeta(k+1, a)."""
    sp = special()
    if k == 0:
        return sp.digamma(a)
    return np.multiply(sp._ufuncs._zeta(float(k + 1), a), (-1.0) ** (k + 1) * math.factorial(k))


def _times(c: Any, v: Any) -> Any:
    return np.multiply(v, c)


@cache
def gamma_moment(n: int) -> Any:
    """D_n(a, x) (see the module docstring); D_0 is scipy.special.gammainc itself."""
    if n == 0:
        return special().gammainc

    def d_a(ins: tuple, y: Any, out: Any) -> Any:
        a, x = ins
        r = gamma_moment(n + 1)(a, x)
        if n:
            r = np.subtract(r, np.multiply(_times(float(n), _psi(1, a)), gamma_moment(n - 1)(a, x)))
        return into(out, r)

    def d_x(ins: tuple, y: Any, out: Any) -> Any:
        a, x = ins
        density = _d_gammainc_x(1.0)(ins, y, None)
        u = np.subtract(np.log(x), special().digamma(a))
        return into(out, np.where(np.equal(density, 0.0), 0.0, np.multiply(np.power(u, float(n)), density)))

    return _Series(
        f"gammainc_da{n}",
        f"the derivative of order {n} of scipy.special.gammainc in a",
        lambda a, x: _gamma_moment_value(n, a, x),
        lambda: (d_a, d_x),
    )


@cache
def beta_moment(n: int, m: int) -> Any:
    """M_{n,m}(a, b, x) (see the module docstring); M_{0,0} is scipy.special.betainc itself."""
    if n == 0 and m == 0:
        return special().betainc

    def lower(p: int, r: int, a: Any, b: Any, x: Any) -> Any:
        return beta_moment(p, r)(a, b, x)

    def d_param(first: bool) -> Callable:
        def d(ins: tuple, y: Any, out: Any) -> Any:
            a, b, x = ins
            r = lower(n + 1, m, a, b, x) if first else lower(n, m + 1, a, b, x)
            t_ab = _psi(1, np.add(a, b))
            if n:  # n * du/dθ * M_{n-1,m}
                du = np.subtract(t_ab, _psi(1, a)) if first else t_ab
                r = np.add(r, np.multiply(_times(float(n), du), lower(n - 1, m, a, b, x)))
            if m:
                dv = t_ab if first else np.subtract(t_ab, _psi(1, b))
                r = np.add(r, np.multiply(_times(float(m), dv), lower(n, m - 1, a, b, x)))
            return into(out, r)

        return d

    def d_x(ins: tuple, y: Any, out: Any) -> Any:
        a, b, x = ins
        sp = special()
        density = _d_betainc_x(ins, y, None)
        psi_ab = sp.digamma(np.add(a, b))
        r = density
        if n:
            u = np.add(np.subtract(np.log(x), sp.digamma(a)), psi_ab)
            r = np.multiply(np.power(u, float(n)), r)
        if m:
            v = np.add(np.subtract(np.log1p(np.negative(x)), sp.digamma(b)), psi_ab)
            r = np.multiply(np.power(v, float(m)), r)
        return into(out, np.where(np.equal(density, 0.0), 0.0, r))

    return _Series(
        f"betainc_d{n}{m}",
        f"the derivative of order ({n}, {m}) of scipy.special.betainc in (a, b)",
        lambda a, b, x: _beta_moment_value(n, m, a, b, x),
        lambda: (d_param(True), d_param(False), d_x),
    )


@cache
def zeta_moment(n: int) -> Any:
    """Z_n(s, q) = ∂^n ζ(s, q)/∂s^n; Z_0 is scipy.special's Hurwitz zeta ufunc itself."""
    if n == 0:
        return special()._ufuncs._zeta

    def d_s(ins: tuple, y: Any, out: Any) -> Any:
        return into(out, zeta_moment(n + 1)(*ins))

    def d_q(ins: tuple, y: Any, out: Any) -> Any:
        s, q = ins
        s1 = np.add(s, 1.0)
        r = np.multiply(np.negative(s), zeta_moment(n)(s1, q))
        r = np.subtract(r, _times(float(n), zeta_moment(n - 1)(s1, q)))
        return into(out, r)

    return _Series(
        f"zeta_ds{n}",
        f"the derivative of order {n} of scipy.special.zeta in s",
        lambda s, q: _zeta_moment_value(n, s, q),
        lambda: (d_s, d_q),
    )


# -- the tables' new entries ------------------------------------------------------------------------------------
def _d_gammainc_a(sign: float) -> Callable:
    def d(ins: tuple, y: Any, out: Any) -> Any:
        r = gamma_moment(1)(*ins)
        return into(out, r if sign > 0 else np.negative(r))

    return d


def _d_betainc_param(k: int, sign: float) -> Callable:
    def d(ins: tuple, y: Any, out: Any) -> Any:
        r = beta_moment(1 - k, k)(*ins)
        return into(out, r if sign > 0 else np.negative(r))

    return d


def _d_betaincc_x(ins: tuple, y: Any, out: Any) -> Any:
    return np.negative(_d_betainc_x(ins, y, None), out=out)


def d_stdtr_df(ins: tuple, y: Any, out: Any) -> Any:
    """d stdtr(df, t)/ddf = t K(df, t). With x = df/(df+t²), stdtr = 1/2 + sign(t)/2 (1 - I_x(df/2, 1/2)), so
    t K = -sign(t)/4 M_{1,0}(df/2, 1/2, x) - t x^(df/2-1) (df+t²)^(-3/2) / (2 B(df/2, 1/2)) (the second term is
    I's x-partial times dx/ddf, simplified to be finite at t = 0). K is even in t and smooth; at t = 0 it
    is its limit (ψ((df+1)/2) - ψ(df/2) - 1/df) / (2 sqrt(df) B(df/2, 1/2)), the derivative in df of the
    density at 0, so that the derivative in t of t K (a second derivative) holds there too."""
    df, t = ins
    sp = special()
    half = np.multiply(df, 0.5)
    zero = np.equal(t, 0.0)
    tt = np.where(zero, 1.0, t)
    r2 = np.add(df, np.square(tt))
    x = np.divide(df, r2)
    beta = sp.betaln(half, 0.5)
    first = np.divide(beta_moment(1, 0)(half, 0.5, x), np.multiply(np.abs(tt), -4.0))
    log = np.subtract(np.subtract(sp.xlogy(np.subtract(half, 1.0), x), np.multiply(np.log(r2), 1.5)), beta)
    k = np.subtract(first, np.multiply(np.exp(log), 0.5))
    shift = np.subtract(np.subtract(sp.digamma(np.add(half, 0.5)), sp.digamma(half)), np.divide(1.0, df))
    limit = np.multiply(shift, np.multiply(np.exp(np.subtract(np.multiply(np.log(df), -0.5), beta)), 0.5))
    return into(out, np.multiply(t, np.where(zero, limit, k)))


def _inverse(f_partials: Callable[[], tuple], density: Callable, value_at: int, lower: bool = True) -> Callable:
    """The partials of an inverse function y = g(..., p) of f(..., y) = p (argument `value_at` of f is the
    one solved for, the last argument of g is p): dy/dp = 1/f_y, dy/dθ = -f_θ/f_y."""

    def make() -> tuple:
        fp = f_partials()

        def at(ins: tuple, y: Any) -> tuple:
            params = list(ins[:-1])
            params.insert(value_at, y)
            return tuple(params)

        def d_p(ins: tuple, y: Any, out: Any) -> Any:
            return np.divide(1.0, density(at(ins, y)), out=out)

        def d_theta(i: int) -> Callable:
            j = i if i < value_at else i + 1

            def d(ins: tuple, y: Any, out: Any) -> Any:
                args = at(ins, y)
                return into(out, np.negative(np.divide(fp[j](args, None, None), density(args))))

            return d

        return (*(d_theta(i) for i in range(len(fp) - 1)), d_p)

    return make


def _register() -> None:
    SPECIAL["gammainc"] = lambda: (_d_gammainc_a(1.0), _d_gammainc_x(1.0))
    SPECIAL["gammaincc"] = lambda: (_d_gammainc_a(-1.0), _d_gammainc_x(-1.0))
    SPECIAL["betainc"] = lambda: (_d_betainc_param(0, 1.0), _d_betainc_param(1, 1.0), _d_betainc_x)
    SPECIAL["betaincc"] = lambda: (_d_betainc_param(0, -1.0), _d_betainc_param(1, -1.0), _d_betaincc_x)
    SPECIAL["stdtr"] = lambda: (d_stdtr_df, _d_stdtr_t)
    PRIVATE["_zeta"] = lambda: (lambda ins, y, out: into(out, zeta_moment(1)(*ins)), _d_zeta_q)
    # inverses: gammaincinv(a, p) solves gammainc(a, y) = p, and so on
    gamma_density = _d_gammainc_x(1.0)
    SPECIAL["gammaincinv"] = _inverse(SPECIAL["gammainc"], lambda args: gamma_density(args, None, None), 1)
    SPECIAL["gammainccinv"] = _inverse(
        SPECIAL["gammaincc"], lambda args: np.negative(gamma_density(args, None, None)), 1
    )
    SPECIAL["betaincinv"] = _inverse(SPECIAL["betainc"], lambda args: _d_betainc_x(args, None, None), 2)
    SPECIAL["betainccinv"] = _inverse(SPECIAL["betaincc"], lambda args: _d_betaincc_x(args, None, None), 2)
    SPECIAL["stdtrit"] = _inverse(SPECIAL["stdtr"], lambda args: _d_stdtr_t(args, None, None), 1)


_register()
