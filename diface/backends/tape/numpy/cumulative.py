"""What the tape records for NumPy's cumulative functions and differences: cumprod (and
multiply.accumulate), cumulative_sum, cumulative_prod, nancumsum, nancumprod, ediff1d, and correlate
(a convolution with the reversed conjugate, as NumPy computes it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..prims.elementwise import WHERE
from ..prims.prim import shape_of
from ..prims.scan import CUMPROD
from ..tracing.tracer import operand
from .common import axis_of, dtype_of, implements, ndim_of, reshape_of, write_out
from .contract import _convolve
from .shapes import _concatenate

__all__: list[str] = []


def _lanes(a: Any, axis: Any, dtype: Any) -> tuple[Any, int]:
    a = operand(a)
    if dtype is not None:
        a = a.astype(dtype)
    if axis is None:
        return reshape_of(a, (-1,)), 0
    return a, axis_of(axis, ndim_of(a))


@implements(np.cumprod)
def _cumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    a, axis = _lanes(a, axis, dtype)
    if a.dtype == np.bool_:
        a = a.astype(np.int_)
    return write_out(CUMPROD(a, axis=axis), out)


def _cumulative(name: str, cumulate: Any, identity: float) -> Any:
    def handler(
        x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None, include_initial: bool = False
    ) -> Any:
        x = operand(x)
        if axis is None:
            if ndim_of(x) > 1:
                raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
            if ndim_of(x) == 0:
                x = reshape_of(x, (1,))
            axis = 0
        r = cumulate(x, axis=axis, dtype=dtype)
        if include_initial:
            ax = axis_of(axis, ndim_of(r))
            shape = list(shape_of(r))
            shape[ax] = 1
            r = _concatenate([np.full(tuple(shape), identity, dtype=r.dtype), r], ax)
        return write_out(r, out)

    handler.__name__ = name
    return handler


implements(np.cumulative_sum)(_cumulative("cumulative_sum", np.cumsum, 0.0))
implements(np.cumulative_prod)(_cumulative("cumulative_prod", np.cumprod, 1.0))


@implements(np.nancumsum)
def _nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    a = operand(a)
    if np.issubdtype(a.dtype, np.inexact):
        a = WHERE(np.isnan(a), 0.0, a)
    return np.cumsum(a, axis=axis, dtype=dtype, out=out)


@implements(np.nancumprod)
def _nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    a = operand(a)
    if np.issubdtype(a.dtype, np.inexact):
        a = WHERE(np.isnan(a), 1.0, a)
    return _cumprod(a, axis, dtype, out)


@implements(np.ediff1d)
def _ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    a = reshape_of(operand(ary), (-1,))
    dtype = a.dtype
    pieces = []
    for extra, name in ((to_begin, "to_begin"), (to_end, "to_end")):
        if extra is None:
            continue
        if not np.can_cast(dtype_of(operand(extra)), dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
    if to_begin is not None:
        pieces.append(np.reshape(operand(to_begin), (-1,)).astype(dtype))
    pieces.append(np.subtract(a[1:], a[:-1]))
    if to_end is not None:
        pieces.append(np.reshape(operand(to_end), (-1,)).astype(dtype))
    return pieces[0] if len(pieces) == 1 else _concatenate(pieces, 0)


@implements(np.correlate)
def _correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    """NumPy's correlate: the convolution of a with v reversed and conjugated, the longer one first (and
    the result reversed when v is the longer)."""
    a, v = operand(a), operand(v)
    if ndim_of(a) != 1 or ndim_of(v) != 1:
        raise ValueError("object too deep for desired array")
    if shape_of(a)[0] == 0 or shape_of(v)[0] == 0:
        raise ValueError(f"{'a' if shape_of(a)[0] == 0 else 'v'} cannot be empty")
    if shape_of(a)[0] >= shape_of(v)[0]:
        return _convolve(a, _conj(v)[::-1], mode)
    return _convolve(_conj(v), a[::-1], mode)[::-1]


def _conj(v: Any) -> Any:
    return np.conjugate(v) if v.dtype.kind == "c" else v
