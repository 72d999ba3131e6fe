"""What the tape records for NumPy's shape, arrangement and selection functions (reshape, transpose,
concatenate, stack, take, where, clip, copyto, ...)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ..data.graph import Traced
from ..prims.complex import IMAG, REAL
from ..prims.elementwise import CLIP, WHERE
from ..prims.guards import refuse_store
from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..prims.structure import BROADCAST_TO, CONCATENATE
from ..tracing.tracer import TapeArray, guard_masks, operand
from .common import (
    NO,
    axes_of,
    axis_of,
    dtype_of,
    equality_branch,
    implements,
    literal_like,
    ndim_of,
    reshape_of,
    transpose_of,
    unsupported,
    write_out,
)

__all__ = ["nonzero", "take_along_axis"]


@implements(np.shape)
def _shape(a: Any) -> tuple:
    return shape_of(operand(a))


@implements(np.ndim)
def _ndim_handler(a: Any) -> int:
    return ndim_of(operand(a))


@implements(np.result_type)
def _result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*(a.dtype if isinstance(a, TapeArray) else a for a in arrays_and_dtypes))


@implements(np.can_cast)
def _can_cast(from_: Any, to: Any, casting: Literal["no", "equiv", "safe", "same_kind", "unsafe"] = "safe") -> bool:
    return np.can_cast(from_.dtype if isinstance(from_, TapeArray) else from_, to, casting)


@implements(np.size)
def _size(a: Any, axis: Any = None) -> int:
    s = shape_of(operand(a))
    return math.prod(s) if axis is None else s[axis]


@implements(np.reshape)
def _reshape_handler(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None, copy: Any = None) -> Any:
    if order != "C":
        raise unsupported("numpy.reshape", f" with order={order!r}")
    r = reshape_of(a, newshape if shape is None else shape)
    return r.copy() if copy else r


@implements(np.ravel)
def _ravel(a: Any, order: str = "C") -> Any:
    if order != "C":
        raise unsupported("numpy.ravel", f" with order={order!r}")
    return reshape_of(a, (-1,))


@implements(np.transpose)
def _transpose_handler(a: Any, axes: Any = None) -> Any:
    return transpose_of(a, axes)


@implements(np.swapaxes)
def _swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    a = operand(a)
    nd = ndim_of(a)
    perm = list(range(nd))
    i, j = axis_of(axis1, nd), axis_of(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose_of(a, perm)


@implements(np.moveaxis)
def _moveaxis(a: Any, source: Any, destination: Any) -> Any:
    a = operand(a)
    nd = ndim_of(a)
    src, dst = axes_of(source, nd), axes_of(destination, nd)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [k for k in range(nd) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose_of(a, order)


@implements(np.squeeze)
def _squeeze(a: Any, axis: Any = None) -> Any:
    a = operand(a)
    s = shape_of(a)
    axes = tuple(i for i, n in enumerate(s) if n == 1) if axis is None else axes_of(axis, len(s))
    if any(s[i] != 1 for i in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return reshape_of(a, tuple(n for i, n in enumerate(s) if i not in axes))


@implements(np.expand_dims)
def _expand_dims(a: Any, axis: Any) -> Any:
    a = operand(a)
    s = shape_of(a)
    nd = len(s) + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    axes = axes_of(axis, nd)
    it = iter(s)
    return reshape_of(a, tuple(1 if i in axes else next(it) for i in range(nd)))


def _atleast(nd: int) -> Callable:
    def handler(*arys: Any) -> Any:
        res = []
        for a in arys:
            a = operand(a)
            s = shape_of(a)
            if len(s) >= nd:
                res.append(a)
            elif nd == 1:
                res.append(reshape_of(a, (1,)))
            elif nd == 2:
                res.append(reshape_of(a, (1,) * (2 - len(s)) + s))
            else:
                res.append(reshape_of(a, (1, 1, 1) if not s else (1, *s, 1) if len(s) == 1 else (*s, 1)))
        return res[0] if len(res) == 1 else tuple(res)

    return handler


implements(np.atleast_1d)(_atleast(1))
implements(np.atleast_2d)(_atleast(2))
implements(np.atleast_3d)(_atleast(3))


@implements(np.broadcast_to)
def _broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
    a = operand(array)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    r = BROADCAST_TO(a, shape=shape)
    if isinstance(r, TapeArray):
        r._readonly = True
    return r


@implements(np.broadcast_arrays)
def _broadcast_arrays(*args: Any, subok: bool = False) -> Any:
    ops = [operand(a) for a in args]
    shape = np.broadcast_shapes(*(shape_of(a) for a in ops))
    return tuple(_broadcast_to(a, shape) for a in ops)


@implements(np.concatenate)
def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrays = [operand(a) for a in arrays]
    if axis is None:
        arrays, axis = [reshape_of(a, (-1,)) for a in arrays], 0
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if dtype is not None:
        arrays = [a.astype(dtype) for a in arrays]
    nd = ndim_of(arrays[0])
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    return write_out(CONCATENATE(*arrays, axis=axis_of(axis, nd)), out)


@implements(np.stack)
def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrays = [operand(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {shape_of(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    ax = axis_of(axis, ndim_of(arrays[0]) + 1)
    return _concatenate([_expand_dims(a, ax) for a in arrays], ax, out, dtype)


@implements(np.hstack)
def _hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrs = [_atleast(1)(a) for a in tup]
    return _concatenate(arrs, 0 if arrs and ndim_of(arrs[0]) == 1 else 1, dtype=dtype)


@implements(np.vstack)
def _vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    return _concatenate([_atleast(2)(a) for a in tup], 0, dtype=dtype)


@implements(np.column_stack)
def _column_stack(tup: Any) -> Any:
    cols = []
    for a in tup:
        a = operand(a)
        cols.append(reshape_of(a, (-1, 1)) if ndim_of(a) < 2 else a)
    return _concatenate(cols, 1)


@implements(np.append)
def _append(arr: Any, values: Any, axis: Any = None) -> Any:
    return _concatenate([arr, values], axis)


@implements(np.split, np.array_split)
def _split(ary: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    a = operand(ary)
    ax = axis_of(axis, a.ndim)
    n = a.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        base, extra = divmod(n, k)
        sizes = [base + (i < extra) for i in range(k)]
        bounds = np.cumsum([0, *sizes]).tolist()
    else:
        bounds = [0, *[int(i) for i in indices_or_sections], n]
    lead = (slice(None),) * ax
    return [a[(*lead, slice(lo, hi))] for lo, hi in itertools.pairwise(bounds)]


@implements(np.flip)
def _flip(m: Any, axis: Any = None) -> Any:
    m = operand(m)
    axes = axes_of(axis, m.ndim)
    return m[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim))]


implements(np.fliplr)(lambda m: _flip(m, 1))
implements(np.flipud)(lambda m: _flip(m, 0))


@implements(np.roll)
def _roll(a: Any, shift: Any, axis: Any = None) -> Any:
    a = operand(a)
    if axis is None:
        return reshape_of(_roll(reshape_of(a, (-1,)), shift, 0), a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axes_of(axis, a.ndim)
    if len(shifts) == 1:
        shifts = tuple(shifts) * len(axes)
    for ax, s in zip(axes, shifts):
        n = a.shape[ax]
        if n == 0:
            continue
        s = int(s) % n
        if s:
            lead = (slice(None),) * ax
            a = _concatenate([a[(*lead, slice(n - s, None))], a[(*lead, slice(0, n - s))]], ax)
    return a


def _gather_along(a: Any, index: Any, axis: int) -> Any:
    """a with `index` (an integer array, literal or traced) taking the place of axis `axis`."""
    return a[(slice(None),) * axis + (index,)]


@implements(np.take)
def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    if mode != "raise":
        raise unsupported("numpy.take", f" with mode={mode!r}")
    a = operand(a)
    if axis is None:
        a, axis = reshape_of(a, (-1,)), 0
    idx = indices if isinstance(indices, Traced) else np.asarray(indices)
    return write_out(_gather_along(a, idx, axis_of(axis, a.ndim)), out)


@implements(np.take_along_axis)
def take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    a = operand(arr)
    if axis is None:
        a, axis = reshape_of(a, (-1,)), 0
    ax = axis_of(axis, a.ndim)
    idx = indices if isinstance(indices, Traced) else np.asarray(indices)
    key = []
    for i in range(a.ndim):
        if i == ax:
            key.append(idx)
        else:
            shape = [1] * a.ndim
            shape[i] = a.shape[i]
            key.append(np.arange(a.shape[i]).reshape(shape))
    return a[tuple(key)]


@implements(np.repeat)
def _repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    a = operand(a)
    if axis is None:
        a, axis = reshape_of(a, (-1,)), 0
    ax = axis_of(axis, a.ndim)
    return _gather_along(a, np.repeat(np.arange(a.shape[ax]), repeats), ax)


@implements(np.tile)
def _tile(A: Any, reps: Any) -> Any:
    a = operand(A)
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    nd = max(a.ndim, len(reps))
    a = reshape_of(a, (1,) * (nd - a.ndim) + a.shape)
    reps = (1,) * (nd - len(reps)) + reps
    index = np.ix_(*(np.arange(n * r) % n if n else np.arange(0) for n, r in zip(a.shape, reps)))
    return a[index]


@implements(np.diagonal)
def _diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    a = operand(a)
    nd = a.ndim
    i1, i2 = axis_of(axis1, nd), axis_of(axis2, nd)
    n1, n2 = a.shape[i1], a.shape[i2]
    start1, start2 = (0, offset) if offset >= 0 else (-offset, 0)
    k = max(0, min(n1 - start1, n2 - start2))
    rest = [i for i in range(nd) if i not in (i1, i2)]
    moved = transpose_of(a, (*rest, i1, i2))
    r = moved[(Ellipsis, np.arange(start1, start1 + k), np.arange(start2, start2 + k))]
    r._readonly = True
    return r


@implements(np.trace)
def _trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    return write_out(np.sum(_diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype), out)


@implements(np.diag)
def _diag(v: Any, k: int = 0) -> Any:
    v = operand(v)
    if v.ndim == 2:
        return _diagonal(v, k).copy()
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + abs(k)
    z = literal_like(v, np.zeros((n, n), dtype=v.dtype))
    i = np.arange(v.shape[0])
    z[(i, i + k) if k >= 0 else (i - k, i)] = v
    return z


def _triangle(m: Any, k: int, lower: bool) -> Any:
    m = operand(m)
    rows, cols = m.shape[-2:]
    mask = np.tri(rows, cols, k, dtype=bool)
    return WHERE(mask if lower else ~np.tri(rows, cols, k - 1, dtype=bool), m, 0.0).astype(m.dtype)


implements(np.tril)(lambda m, k=0: _triangle(m, k, True))
implements(np.triu)(lambda m, k=0: _triangle(m, k, False))


@implements(np.diff)
def _diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = NO, append: Any = NO) -> Any:
    a = operand(a)
    ax = axis_of(axis, a.ndim)
    parts = [a]
    if prepend is not NO:
        p = operand(prepend)
        parts.insert(0, np.broadcast_to(p, (*a.shape[:ax], 1, *a.shape[ax + 1 :])) if ndim_of(p) == 0 else p)
    if append is not NO:
        p = operand(append)
        parts.append(np.broadcast_to(p, (*a.shape[:ax], 1, *a.shape[ax + 1 :])) if ndim_of(p) == 0 else p)
    if len(parts) > 1:
        a = _concatenate(parts, ax)
    lead = (slice(None),) * ax
    for _ in range(n):
        a = np.subtract(a[(*lead, slice(1, None))], a[(*lead, slice(None, -1))])
    return a


@implements(np.pad)
def _pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    if mode != "constant":
        raise unsupported("numpy.pad", f" with mode={mode!r}")
    a = operand(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (a.ndim, 2))
    value = kwargs.get("constant_values", 0)
    if not isinstance(value, (int, float)):
        raise unsupported("numpy.pad", " with per-axis constant_values")
    shape = tuple(int(n + lo + hi) for n, (lo, hi) in zip(a.shape, widths))
    z = literal_like(a, np.full(shape, value, dtype=a.dtype))
    z[tuple(slice(int(lo), int(lo) + n) for n, (lo, _hi) in zip(a.shape, widths))] = a
    return z


@implements(np.where)
def _where(condition: Any, x: Any = NO, y: Any = NO) -> Any:
    if x is NO and y is NO:
        return nonzero(condition)
    if x is NO or y is NO:
        raise ValueError("either both or neither of x and y should be given")
    cond = operand(condition)  # an array, or a Python number or bool
    if dtype_of(cond) != np.bool_:
        cond = np.not_equal(cond, 0)
    x, y = operand(x), operand(y)
    equality_branch(cond, x, y)
    return WHERE(cond, x, y)


@implements(np.clip)
def _clip(
    a: Any, a_min: Any = NO, a_max: Any = NO, out: Any = None, *, min: Any = NO, max: Any = NO, **kwargs: Any
) -> Any:
    lo = min if a_min is NO else a_min
    hi = max if a_max is NO else a_max
    lo = -math.inf if lo is NO or lo is None else operand(lo)
    hi = math.inf if hi is NO or hi is None else operand(hi)
    a = operand(a)
    r = CLIP(a, lo, hi)
    if dtype_of(r) != dtype_of(a) and np.issubdtype(dtype_of(a), np.floating):
        r = r.astype(dtype_of(a))
    return write_out(r, out)


@implements(np.copyto)
def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    if not isinstance(dst, TapeArray):
        refuse_store()
    src = operand(src)
    if where is not True:
        src = WHERE(operand(where), src, dst)
    dst._assign(Ellipsis, src)


@implements(np.copy)
def _copy(a: Any, order: str = "K", subok: bool = False) -> Any:
    a = operand(a)
    return a.copy() if isinstance(a, TapeArray) else np.array(a, copy=True)


@implements(np.real)
def _real(val: Any) -> Any:
    val = operand(val)
    return REAL(val) if _is_complex(val) else val


@implements(np.imag)
def _imag(val: Any) -> Any:
    val = operand(val)
    return IMAG(val) if _is_complex(val) else np.zeros_like(val)


def _is_complex(a: Any) -> bool:
    return np.result_type(a).kind == "c" if not hasattr(a, "dtype") else a.dtype.kind == "c"


implements(np.iscomplexobj)(lambda x: _is_complex(operand(x)))
implements(np.isrealobj)(lambda x: not _is_complex(operand(x)))


# -- positions (no derivative; a traced condition guards its count) ---------------------------------------
@implements(np.nonzero)
def nonzero(a: Any) -> tuple:
    a = operand(a)
    mask = a if a.dtype == np.bool_ else np.not_equal(a, 0)
    if isinstance(mask, TapeArray):
        guard_masks((mask,))
    return tuple(
        NonDiff(lambda m, dim: np.nonzero(m)[dim], "nonzero")(mask, dim=d) for d in range(max(ndim_of(mask), 1))
    )


@implements(np.flatnonzero)
def _flatnonzero(a: Any) -> Any:
    return nonzero(reshape_of(a, (-1,)))[0]


@implements(np.argwhere)
def _argwhere(a: Any) -> Any:
    return np.stack(nonzero(a), axis=-1)


# -- writes into a buffer by position --------------------------------------------------------------------
@implements(np.put)
def _put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """`a.flat[ind] = v` (v repeated to the length of ind, as NumPy does)."""
    if not isinstance(a, TapeArray):
        refuse_store()
    if mode != "raise":
        raise unsupported("numpy.put", f" with mode={mode!r}")
    ind = np.asarray(operand(ind)).reshape(-1)
    v = operand(v)
    flat = reshape_of(v, (-1,)) if ndim_of(v) else reshape_of(v, (1,))
    n = shape_of(flat)[0]
    if n != len(ind):
        flat = np.take(flat, np.arange(len(ind)) % max(n, 1))
    flat_view = reshape_of(a, (-1,))
    flat_view[ind] = flat


@implements(np.putmask)
def _putmask(a: Any, mask: Any, values: Any) -> None:
    """`a[mask] = values`, values repeated over the selected elements as NumPy does."""
    if not isinstance(a, TapeArray):
        refuse_store()
    values = operand(values)
    if shape_of(values) in ((), shape_of(a)):
        a._assign(Ellipsis, WHERE(operand(mask), values, a))
        return
    raise unsupported("numpy.putmask", " with values of another shape than the array")


@implements(np.fill_diagonal)
def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    if not isinstance(a, TapeArray):
        refuse_store()
    n = min(shape_of(a))
    idx = np.arange(n)
    val = operand(val)
    a[(idx,) * ndim_of(a)] = val if ndim_of(val) == 0 else reshape_of(val, (-1,))[:n]


@implements(np.compress)
def _compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Any:
    a = operand(a)
    cond = operand(condition)
    if axis is None:
        a, axis = reshape_of(a, (-1,)), 0
    (index,) = nonzero(cond)
    return write_out(np.take(a, index, axis=axis), out)


@implements(np.diagflat)
def _diagflat(v: Any, k: int = 0) -> Any:
    return np.diag(reshape_of(operand(v), (-1,)), k)


@implements(np.choose)
def _choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    """`choices[a[i]][i]`: a selection among the choices by a (constant or traced) integer array."""
    if mode not in ("raise", "clip"):
        raise unsupported("numpy.choose", f" with mode={mode!r}")
    index = operand(a)
    options = [operand(c) for c in choices]
    if mode == "clip":
        index = np.clip(index, 0, len(options) - 1)
    result = options[-1]
    for k in range(len(options) - 2, -1, -1):
        result = WHERE(np.equal(index, k), options[k], result)
    return write_out(result, out)
