"""What the tape records for a few more NumPy functions written in Python, each NumPy's own steps on
recorded operations: i0 (NumPy's Chebyshev expansions, selected by piecewise), unwrap, meshgrid,
dstack, unstack and apply_along_axis (the function run on each 1-d slice, the results stacked)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..data.graph import Traced
from ..prims.elementwise import WHERE
from ..prims.prim import shape_of
from ..tracing.tracer import operand
from .common import axis_of, implements, ndim_of, reshape_of, transpose_of
from .shapes import _concatenate

__all__: list[str] = []


@implements(np.i0)
def _i0(x: Any) -> Any:
    x = operand(x)
    if x.dtype.kind == "c":
        raise TypeError("i0 not supported for complex values")
    if x.dtype.kind != "f":
        x = x.astype(float)
    impl: Any = np.lib._function_base_impl
    x = np.abs(x)
    return np.piecewise(x, [np.less_equal(x, 8.0)], [impl._i0_1, impl._i0_2])


@implements(np.unwrap)
def _unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * math.pi) -> Any:
    p = operand(p)
    nd = ndim_of(p)
    axis = axis_of(axis, nd)
    dd = np.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(dd.dtype, period)
    if np.issubdtype(dtype, np.integer):
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = np.add(np.mod(np.subtract(dd, low), period), low)
    if ambiguous:
        ddmod = WHERE(np.logical_and(np.equal(ddmod, low), np.greater(dd, 0)), high, ddmod)
    correct = np.subtract(ddmod, dd)
    correct = WHERE(np.less(np.abs(dd), discont), 0, correct)
    first = p[(slice(None),) * axis + (slice(0, 1),)]
    rest = np.add(p[(slice(None),) * axis + (slice(1, None),)], np.cumsum(correct, axis=axis))
    up = _concatenate([first, rest], axis)
    return up if up.dtype == dtype else up.astype(dtype)


@implements(np.meshgrid)
def _meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
    n = len(xi)
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ones = (1,) * n
    out = [reshape_of(operand(x), (*ones[:i], -1, *ones[i + 1 :])) for i, x in enumerate(xi)]
    if indexing == "xy" and n > 1:
        out[0] = reshape_of(out[0], (1, -1, *ones[2:]))
        out[1] = reshape_of(out[1], (-1, 1, *ones[2:]))
    if not sparse:
        out = list(np.broadcast_arrays(*out))
    return tuple(np.copy(x) for x in out) if copy else tuple(out)


@implements(np.dstack)
def _dstack(tup: Any) -> Any:
    return _concatenate([np.atleast_3d(operand(a)) for a in tup], 2)


@implements(np.unstack)
def _unstack(x: Any, /, *, axis: int = 0) -> Any:
    x = operand(x)
    if ndim_of(x) == 0:
        raise ValueError("Input array must be at least 1-d.")
    moved = np.moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(shape_of(moved)[0]))


@implements(np.apply_along_axis)
def _apply_along_axis(func1d: Any, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    arr = operand(arr)
    nd = ndim_of(arr)
    axis = axis_of(axis, nd)
    dims = list(range(nd))
    view = transpose_of(arr, dims[:axis] + dims[axis + 1 :] + [axis])
    lanes = shape_of(view)[:-1]
    if 0 in lanes:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [operand(func1d(view[(*index, Ellipsis)], *args, **kwargs)) for index in np.ndindex(lanes)]
    shape = shape_of(results[0])
    if any(shape_of(r) != shape for r in results):
        raise ValueError("could not broadcast the results of func1d into one array (their shapes differ)")
    pieces: list[Any] = [r if isinstance(r, Traced) else np.asarray(r) for r in results]
    stacked: Any = np.stack(pieces)
    buff = np.reshape(stacked, lanes + shape)
    bd = list(range(len(lanes) + len(shape)))
    permute = bd[:axis] + bd[len(bd) - len(shape) :] + bd[axis : len(bd) - len(shape)]
    return np.transpose(buff, permute)
