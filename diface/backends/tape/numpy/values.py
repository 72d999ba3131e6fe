"""What the tape records for NumPy's elementwise functions written in Python (not ufuncs): sinc, angle,
nan_to_num, select, real_if_close, iscomplex, isreal, i0 (on real arrays)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..prims.complex import ANGLE, DEGREES
from ..prims.elementwise import WHERE, Ufunc
from ..prims.prim import into
from ..tracing.tracer import operand
from .common import dtype_of, implements

__all__: list[str] = []


def _sinc_value(a: Any, out: Any = None) -> Any:
    return into(out, np.sinc(a))


def _d_sinc(ins: tuple, y: Any, out: Any) -> Any:
    """(cos(pi a) - sinc(a)) / a, 0 at a = 0."""
    a = ins[0]
    zero = np.equal(a, 0.0)
    safe = WHERE(zero, 1.0, a)
    r = np.divide(np.subtract(np.cos(np.multiply(safe, math.pi)), y), safe)
    return into(out, WHERE(zero, 0.0, r))


class _Sinc(Ufunc):
    """np.sinc (a Python function in NumPy) as an elementwise primitive."""

    inplace = False  # its forward is not the ufunc's

    def forward(self, *ins: Any, out: Any = None) -> Any:
        return _sinc_value(ins[0], out)

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        return lambda: _sinc_value(ins[0], out)


SINC = _Sinc(np.sin, (_d_sinc,), label="numpy.sinc")
SINC.name = "sinc"


@implements(np.sinc)
def _sinc(x: Any) -> Any:
    return SINC(operand(x))


@implements(np.angle)
def _angle(z: Any, deg: bool = False) -> Any:
    z = operand(z)
    if z.dtype.kind == "c":
        r = ANGLE(z)
    else:
        r = np.arctan2(np.zeros_like(z), z)  # real input: 0 or pi, derivative 0
    return np.multiply(r, DEGREES) if deg else r


@implements(np.nan_to_num)
def _nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    x = operand(x)
    info = np.finfo(x.dtype) if np.issubdtype(x.dtype, np.floating) else None
    if info is None:
        return x[...]
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    r = WHERE(np.isnan(x), nan, x)
    r = WHERE(np.logical_and(np.isinf(x), np.greater(x, 0)), hi, r)
    r = WHERE(np.logical_and(np.isinf(x), np.less(x, 0)), lo, r)
    return r.astype(x.dtype)


@implements(np.select)
def _select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    conds = [operand(c) for c in condlist]
    for i, c in enumerate(conds):
        if dtype_of(c) != np.bool_:  # as NumPy: conditions are boolean, never numbers read as truth values
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    r = operand(default)
    for cond, choice in reversed(list(zip(conds, choicelist))):
        r = WHERE(cond, operand(choice), r)
    return r


@implements(np.real_if_close)
def _real_if_close(a: Any, tol: float = 100) -> Any:
    a = operand(a)
    if a.dtype.kind == "c":  # its result's dtype would depend on the values: a branch the tape cannot record
        raise NotSupportedError(
            "AutoTape does not record numpy.real_if_close on a complex value (whether the result is real depends "
            "on the values); take np.real explicitly"
        )
    return a[...]


@implements(np.iscomplex)
def _iscomplex(x: Any) -> Any:
    x = operand(x)
    if x.dtype.kind == "c":
        return np.not_equal(np.imag(x), 0)
    return np.zeros(np.shape(x), dtype=bool)


@implements(np.isreal)
def _isreal(x: Any) -> Any:
    x = operand(x)
    if x.dtype.kind == "c":
        return np.equal(np.imag(x), 0)
    return np.ones(np.shape(x), dtype=bool)
