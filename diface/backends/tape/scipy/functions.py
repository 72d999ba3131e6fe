"""The tape's rules for SciPy's Python-level functions (reached through `numpy.hooks`): scipy.special's
logsumexp, softmax, log_softmax, polygamma, multigammaln, zeta, and scipy.signal.convolve. Each is
written with NumPy calls and scipy.special ufuncs on traced values, so the tape records it as usual."""

from __future__ import annotations

import math
import operator
import sys
from typing import Any

import numpy as np

from ..numpy.common import axes_of, ndim_of, unsupported, write_out
from ..numpy.hooks import hook
from ..prims.convolve import CONVOLVE, centered
from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..tracing.tracer import operand

__all__: list[str] = []

_STOP = NonDiff(lambda a: np.asarray(a), "stop_gradient")


def _special() -> Any:
    return sys.modules["scipy.special"]


def logsumexp(
    kept: Any, a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False
) -> Any:
    a = operand(a)
    if not np.issubdtype(a.dtype, np.inexact):
        a = a.astype(np.float64)
    if b is not None:
        b = operand(b)
        shape = np.broadcast_shapes(shape_of(a), shape_of(b))
        a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    if ndim_of(a) == 0:
        a = np.reshape(a, (1,))
        b = None if b is None else np.reshape(b, (1,))
    axes = axes_of(axis, ndim_of(a))
    top = _STOP(np.max(a, axis=axes, keepdims=True))  # a constant shift: no derivative flows through it
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(np.subtract(a, top))
    if b is not None:
        e = np.multiply(b, e)
    s = np.sum(e, axis=axes, keepdims=True)
    sign = None
    if return_sign:
        sign = np.sign(s)
        s = np.abs(s)
    out = np.add(np.log(s), top)
    if not keepdims:
        out = np.squeeze(out, axis=axes)
        sign = None if sign is None else np.squeeze(sign, axis=axes)
    return (out, sign) if return_sign else out


def softmax(kept: Any, x: Any, axis: Any = None) -> Any:
    x = operand(x)
    return np.exp(np.subtract(x, logsumexp(None, x, axis=axis, keepdims=True)))


def log_softmax(kept: Any, x: Any, axis: Any = None) -> Any:
    x = operand(x)
    return np.subtract(x, logsumexp(None, x, axis=axis, keepdims=True))


def polygamma(kept: Any, n: Any, x: Any) -> Any:
    """polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x), digamma for n = 0 (n: not differentiated)."""
    sp = _special()
    n = operand(n)
    if isinstance(n, np.ndarray) or isinstance(n, (int, float)):
        order = np.asarray(n)
        if np.all(order == 0):
            return sp.digamma(x)
        factor = np.where(order % 2 == 1, 1.0, -1.0) * sp.gamma(order + 1.0)
        higher = np.multiply(factor, sp._ufuncs._zeta(order + 1.0, x))
        return higher if np.all(order != 0) else np.where(order == 0, sp.digamma(x), higher)
    raise unsupported("scipy.special.polygamma", " with respect to its order n")


def multigammaln(kept: Any, a: Any, d: Any) -> Any:
    d = operator.index(np.asarray(d)[()])
    a = operand(a)
    if np.any(np.less_equal(a, 0.5 * (d - 1))):
        raise ValueError(f"condition a > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    gammaln = _special().gammaln
    terms = [gammaln(np.subtract(a, (j - 1.0) / 2.0)) for j in range(1, d + 1)]
    return np.add(np.sum(np.stack(terms), axis=0), d * (d - 1) * 0.25 * math.log(math.pi))


def zeta(kept: Any, x: Any, q: Any = None, out: Any = None) -> Any:
    if q is None:
        raise unsupported("scipy.special.zeta", " (the Riemann zeta function) with respect to its argument")
    r = _special()._ufuncs._zeta(operand(x), operand(q))
    if out is not None:
        return write_out(r, out)
    return r


def signal_convolve(kept: Any, in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    a, c = operand(in1), operand(in2)
    if ndim_of(a) != ndim_of(c):
        raise ValueError("in1 and in2 should have the same dimensionality")
    if ndim_of(a) == 0:
        return np.multiply(a, c)
    full = CONVOLVE(a, c)
    if mode == "full":
        return full
    s1, s2 = shape_of(a), shape_of(c)
    if mode == "same":
        return centered(full, s1)
    if mode == "valid":
        if not (all(p >= q for p, q in zip(s1, s2)) or all(q >= p for p, q in zip(s1, s2))):
            raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")
        return centered(full, tuple(abs(p - q) + 1 for p, q in zip(s1, s2)))
    raise ValueError("Acceptable mode flags are 'valid', 'same', or 'full'.")


for _name, _rule in (
    ("logsumexp", logsumexp),
    ("softmax", softmax),
    ("log_softmax", log_softmax),
    ("polygamma", polygamma),
    ("multigammaln", multigammaln),
    ("zeta", zeta),
):
    hook("scipy.special", _name)(lambda rule=_rule: rule)
hook("scipy.signal", "convolve")(lambda: signal_convolve)
