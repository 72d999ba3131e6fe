"""What the tape records for the NumPy functions whose results carry no derivative (argmax, argsort,
count_nonzero, isclose, ...), and sort (a gather through argsort); nonzero is in `numpy.shapes`, histogram,
bincount, unique and digitize in `numpy.counts`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..tracing.tracer import operand
from .common import FUNCTIONS, implements, reshape_of, write_out
from .shapes import take_along_axis

__all__: list[str] = []


# -- values without derivatives ------------------------------------------------------------------------------------
def _nondiff(func: Any, name: str | None = None, **fixed: Any) -> Callable:
    prim = NonDiff(func, name)

    def handler(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        return write_out(prim(*(operand(a) for a in args), **kwargs, **fixed), out)

    return handler


for _f in (
    np.argmax,
    np.argmin,
    np.argsort,
    np.argpartition,
    np.count_nonzero,
    np.any,
    np.all,
    np.isclose,
    np.round,
    np.around,
    np.searchsorted,
    np.isin,
    np.lexsort,
    np.nanargmax,
    np.nanargmin,
    np.isposinf,
    np.isneginf,
):
    FUNCTIONS[_f] = _nondiff(_f)


@implements(np.fix)
def _fix(x: Any, out: Any = None) -> Any:
    return np.trunc(x, out=out)  # NumPy's fix is trunc


@implements(np.allclose)
def _allclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    return bool(np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@implements(np.array_equal)
def _array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    a1, a2 = operand(a1), operand(a2)
    if shape_of(a1) != shape_of(a2):
        return False
    eq = np.equal(a1, a2)
    if equal_nan:
        eq = np.logical_or(eq, np.logical_and(np.isnan(a1), np.isnan(a2)))
    return bool(np.all(eq))


@implements(np.sort)
def _sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    a = operand(a)
    if axis is None:
        a, axis = reshape_of(a, (-1,)), 0
    return take_along_axis(a, np.argsort(a, axis=axis, kind=kind), axis)
