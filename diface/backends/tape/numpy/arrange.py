"""What the tape records for NumPy's rearrangements built from the shape primitives: rollaxis, rot90,
vsplit/hsplit/dsplit, fft.fftshift/ifftshift, partition (a gather through argpartition), and r_/c_
(NumPy's index tricks, which `numpy.hooks` makes dispatch here)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ..prims.prim import shape_of
from ..tracing.tracer import operand
from .common import axes_of, axis_of, implements, ndim_of, reshape_of, transpose_of, unsupported
from .hooks import hook
from .shapes import _concatenate, _flip, _roll, _split, take_along_axis

__all__ = ["index_concatenate"]


@implements(np.rollaxis)
def _rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    a = operand(a)
    n = ndim_of(a)
    axis = axis_of(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return a[...]
    order = [k for k in range(n) if k != axis]
    order.insert(start, axis)
    return transpose_of(a, order)


@implements(np.rot90)
def _rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    m = operand(m)
    n = ndim_of(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = axis_of(axes[0], n), axis_of(axes[1], n)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return _flip(_flip(m, a0), a1)
    perm = list(range(n))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose_of(_flip(m, a1), perm)
    return _flip(transpose_of(m, perm), a1)


def _split_along(axis: int, name: str, min_ndim: int) -> Any:
    def handler(ary: Any, indices_or_sections: Any) -> Any:
        a = operand(ary)
        if ndim_of(a) < min_ndim:
            raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
        ax = 0 if (name == "hsplit" and ndim_of(a) == 1) else axis
        if isinstance(indices_or_sections, (int, np.integer)) and shape_of(a)[ax] % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
        return _split(a, indices_or_sections, ax)

    return handler


implements(np.vsplit)(_split_along(0, "vsplit", 2))
implements(np.hsplit)(_split_along(1, "hsplit", 1))
implements(np.dsplit)(_split_along(2, "dsplit", 3))


def _shift_handler(sign: int) -> Any:
    def handler(x: Any, axes: Any = None) -> Any:
        x = operand(x)
        axes = axes_of(axes, ndim_of(x))
        shape = shape_of(x)
        return _roll(x, [sign * (shape[ax] // 2) for ax in axes], axes)

    return handler


implements(np.fft.fftshift)(_shift_handler(1))
implements(np.fft.ifftshift)(_shift_handler(-1))


@implements(np.partition)
def _partition(
    a: Any, kth: Any, axis: Any = -1, kind: Literal["introselect"] = "introselect", order: Any = None
) -> Any:
    a = operand(a)
    if axis is None:
        a, axis = np.reshape(a, (-1,)), 0
    return take_along_axis(a, np.argpartition(a, kth, axis=axis, kind=kind), axis)


def index_concatenate(axis: int, ndmin: int, trans1d: int, key: Any) -> Any:
    """`np.r_[key]` / `np.c_[key]` with traced items, as NumPy's AxisConcatenator reads them: arrays,
    numbers, slices (ranges) and a leading directive ("0,2,-1"; the matrix directives "r" and "c" are
    refused)."""
    if not isinstance(key, tuple):
        key = (key,)
    pieces = []
    for k, item in enumerate(key):
        if isinstance(item, str):
            if k != 0:
                raise ValueError("special directives must be the first entry.")
            if item in ("r", "c"):
                raise unsupported("numpy.r_ / numpy.c_", f" with the matrix directive {item!r}")
            parts = [int(p) for p in item.split(",")]
            axis = parts[0]
            if len(parts) > 1:
                ndmin = parts[1]
            if len(parts) > 2:
                trans1d = parts[2]
            continue
        if isinstance(item, slice):
            start = 0 if item.start is None else item.start
            step = 1 if item.step is None else item.step
            if isinstance(step, (complex, np.complexfloating)):
                v: Any = np.linspace(start, item.stop, num=int(abs(complex(step))))
            else:
                v = np.arange(start, item.stop, step)
            if ndmin > 1:
                v = np.array(v, ndmin=ndmin)
                if trans1d != -1:
                    v = v.swapaxes(-1, trans1d)
            pieces.append(v)
            continue
        v = operand(item)
        nd = ndim_of(v)
        if nd < ndmin:
            v = np.reshape(v, (1,) * (ndmin - nd) + shape_of(v))
            if trans1d != -1:
                k2 = ndmin - nd
                k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                default = list(range(ndmin))
                v = transpose_of(v, default[:k1] + default[k2:] + default[k1:k2])
        pieces.append(v)
    return _concatenate(pieces, axis)


def _index_tricks(kept: Any, concatenator: Any, key: Any) -> Any:
    if concatenator.matrix or isinstance(key, str):
        raise unsupported("numpy.r_ / numpy.c_", " in matrix mode")
    return index_concatenate(concatenator.axis, concatenator.ndmin, concatenator.trans1d, key)


hook("numpy.lib._index_tricks_impl", "AxisConcatenator.__getitem__")(lambda: _index_tricks)


def as_strided(
    kept: Any, x: Any, shape: Any = None, strides: Any = None, subok: bool = False, writeable: bool = True
) -> Any:
    """A strided view of a traced array as a gather: the strides are read against the C-contiguous layout
    a traced array reports (`TapeArray.strides`); the result is read-only (writes would not reach x)."""
    x = operand(x)
    size = int(np.prod(shape_of(x), dtype=np.int64))
    item = x.dtype.itemsize
    shape = shape_of(x) if shape is None else tuple(int(n) for n in shape)
    if strides is None:
        strides = tuple(int(s) for s in np.empty(shape, x.dtype).strides)
    if any(s % item for s in strides):
        raise unsupported("numpy.lib.stride_tricks.as_strided", " with strides that are not multiples of the item size")
    offsets = np.zeros(shape, dtype=np.intp)
    for axis, (n, s) in enumerate(zip(shape, strides)):
        offsets = offsets + np.arange(n).reshape((-1,) + (1,) * (len(shape) - axis - 1)) * (s // item)
    if offsets.size and (offsets.min() < 0 or offsets.max() >= size):
        raise unsupported("numpy.lib.stride_tricks.as_strided", " reaching outside the array")
    r = reshape_of(x, (-1,))[offsets]
    r._readonly = True
    return r


hook("numpy.lib._stride_tricks_impl", "as_strided")(lambda: as_strided)
