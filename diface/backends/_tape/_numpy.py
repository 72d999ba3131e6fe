"""What the tape records for each NumPy ufunc and function called on a traced array.

`array_ufunc` and `array_function` are the targets of the NumPy protocols. Most functions map to one
primitive or compose a few (mean = sum / n, stack = expand_dims + concatenate, ...); anything not listed
raises `NotSupportedError` naming the function, never a silent wrong derivative.
"""

from __future__ import annotations

import itertools
import math
import string
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ._contract import EINSUM, MATMUL, explicit_subscripts
from ._elementwise import CLIP, UFUNC_PRIMS, WHERE
from ._graph import Traced
from ._guards import refuse_store
from ._prim import shape_of
from ._reduce import AMAX, AMIN, CUMSUM, PROD, SUM, NonDiff
from ._structure import BROADCAST_TO, CONCATENATE, RESHAPE, TRANSPOSE
from ._tracer import TapeArray, guard_masks, holds_traced, operand

__all__ = ["FUNCTIONS", "array_function", "array_ufunc", "unsupported"]

FUNCTIONS: dict[Callable, Callable] = {}
_IGNORED_UFUNC_KWARGS = ("casting", "order", "subok")


def unsupported(name: str, why: str = "") -> NotSupportedError:
    return NotSupportedError(
        f"AutoTape does not know how to differentiate {name}{why} (called with a traced array). Write it "
        "with the NumPy operations the tape records (see the Tape section of docs/backends.md), or "
        "differentiate this function with another backend (AutoFiniteDiff(), AutoAutograd(), AutoJAX())."
    )


def _name(func: Any) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    return f"{module}.{getattr(func, '__name__', repr(func))}"


def implements(*funcs: Any) -> Callable:
    def register(handler: Callable) -> Callable:
        for f in funcs:
            FUNCTIONS[f] = handler
        return handler

    return register


def array_function(func: Any, args: tuple, kwargs: dict, like: TapeArray | None = None) -> Any:
    handler = FUNCTIONS.get(func)
    if handler is None:
        raise unsupported(_name(func))
    if handler in _CREATION:
        return handler(func, like, *args, **kwargs)
    return handler(*args, **kwargs)


def _write_out(result: Any, out: Any) -> Any:
    """`out=`: write the result into a traced array (a new version of it)."""
    if out is None:
        return result
    if isinstance(out, tuple):
        if len(out) != 1:
            raise unsupported("a ufunc with several outputs")
        out = out[0]
    if not isinstance(out, TapeArray):
        refuse_store()
    rdtype = result.dtype if hasattr(result, "dtype") else np.result_type(result)
    if not np.can_cast(rdtype, out.dtype, casting="same_kind"):
        raise TypeError(
            f"Cannot cast output from dtype('{rdtype}') to dtype('{out.dtype}') with casting rule 'same_kind'"
        )
    out._assign(Ellipsis, result)
    return out


# -- ufuncs ---------------------------------------------------------------------------------------------
_REDUCE = {
    np.add: "sum",
    np.multiply: "prod",
    np.maximum: "max",
    np.minimum: "min",
    np.logical_and: "all",
    np.logical_or: "any",
}


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    out = kwargs.pop("out", None)
    if method == "reduce":
        name = _REDUCE.get(ufunc)
        if name is None:
            raise unsupported(f"numpy.{ufunc.__name__}.reduce")
        kwargs.setdefault("axis", 0)
        return _write_out(getattr(np, name)(*inputs, **kwargs), out)
    if method == "accumulate" and ufunc is np.add:
        kwargs.setdefault("axis", 0)
        return _write_out(np.cumsum(*inputs, **kwargs), out)
    if method == "at" and ufunc is np.add:
        return _add_at(*inputs)
    if method == "outer":
        a, b = (operand(v) for v in inputs)
        a = np.reshape(a, shape_of(a) + (1,) * len(shape_of(b)))
        return _write_out(ufunc(a, b, **kwargs), out)
    if method != "__call__":
        raise unsupported(f"numpy.{ufunc.__name__}.{method}")
    where = kwargs.pop("where", True)
    if where is not True:
        raise unsupported(f"numpy.{ufunc.__name__}", " with where=")
    dtype = kwargs.pop("dtype", None)
    for k in _IGNORED_UFUNC_KWARGS:
        kwargs.pop(k, None)
    if kwargs:
        raise unsupported(f"numpy.{ufunc.__name__}", f" with {', '.join(kwargs)}=")
    args = [operand(a) for a in inputs]
    if dtype is not None:
        args = [np.asarray(a).astype(dtype) if not isinstance(a, Traced) else a.astype(dtype) for a in args]
    if ufunc is np.matmul:
        result = MATMUL(*args)
    elif ufunc is getattr(np, "vecdot", None):
        result = np.sum(np.multiply(args[0], args[1]), axis=-1)
    else:
        prim = UFUNC_PRIMS.get(ufunc)
        if prim is None:
            raise unsupported(f"numpy.{ufunc.__name__}")
        result = prim(*args)
    return _write_out(result, out)


def _add_at(a: Any, indices: Any, b: Any = None) -> None:
    from ._index import normalize
    from ._structure import INDEX_ADD

    if not isinstance(a, TapeArray):
        refuse_store()
    k = normalize(indices, a.shape)
    guard_masks(k.traced_masks)
    base = TapeArray(a._tape, a._read())
    new = INDEX_ADD(base, operand(b), *k.arrays, template=k.template, adv_front=k.adv_front, unique=k.unique)
    a._commit(new._slot)


# -- helpers ---------------------------------------------------------------------------------------------
def _axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (tuple, list)):
        axis = (axis,)
    out = tuple(_axis(a, ndim) for a in axis)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return out


def _axis(a: Any, ndim: int) -> int:
    a = int(a)
    if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
        raise np.exceptions.AxisError(a, ndim)
    return a % ndim if ndim else 0


def _no(name: str, **kw: Any) -> None:
    """Keyword arguments the tape does not record (given explicitly)."""
    for k, v in kw.items():
        if v is not _NO:
            raise unsupported(name, f" with {k}=")


_NO = object()


def _reshape(a: Any, shape: tuple) -> Any:
    a = operand(a)
    if not isinstance(a, TapeArray):
        return np.reshape(a, shape)
    shape = _resolve_shape(shape, a.size)
    if shape == a.shape:
        return a.copy()._link(a, RESHAPE, {"shape": shape})
    r = RESHAPE(a, shape=shape)
    if np.shares_memory(r._value(), a._value()):
        r._link(a, RESHAPE, {"shape": shape})
    return r


def _resolve_shape(shape: Any, size: int) -> tuple:
    if isinstance(shape, (int, np.integer)) or isinstance(shape, Traced):
        shape = (shape,)
    shape = [int(n) for n in shape]
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(n for n in shape if n != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[shape.index(-1)] = size // known
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return tuple(shape)


def _transpose(a: Any, axes: Any = None) -> Any:
    a = operand(a)
    if not isinstance(a, TapeArray):
        return np.transpose(a, axes)
    nd = a.ndim
    axes = tuple(range(nd - 1, -1, -1)) if axes is None else tuple(_axis(k, nd) for k in axes)
    if sorted(axes) != list(range(nd)):
        raise ValueError("axes don't match array")
    params = {"axes": axes}
    return TRANSPOSE(a, **params)._link(a, TRANSPOSE, params)


def _ndim(a: Any) -> int:
    return len(shape_of(a))


# -- reductions ------------------------------------------------------------------------------------------
@implements(np.sum)
def _sum(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = _NO,
    where: Any = _NO,
) -> Any:
    _no("numpy.sum", where=where)
    a = operand(a)
    if dtype is not None:
        a = a.astype(dtype)
    r = SUM(a, axis=_axes(axis, _ndim(a)), keepdims=bool(keepdims))
    return _write_out(r if initial is _NO else np.add(r, initial), out)


def _count(shape: tuple, axes: tuple) -> int:
    return math.prod(shape[i] for i in axes)


def _floating(a: Any) -> Any:
    return a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)


@implements(np.mean)
def _mean(
    a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, where: Any = _NO
) -> Any:
    _no("numpy.mean", where=where)
    a = operand(a)
    a = a.astype(dtype) if dtype is not None else _floating(a)
    axes = _axes(axis, a.ndim)
    return _write_out(np.divide(SUM(a, axis=axes, keepdims=bool(keepdims)), _count(a.shape, axes)), out)


@implements(np.var)
def _var(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: Any = 0,
    keepdims: bool = False,
    where: Any = _NO,
    mean: Any = _NO,
    correction: Any = _NO,
) -> Any:
    _no("numpy.var", where=where, mean=mean, correction=correction)
    a = operand(a)
    a = a.astype(dtype) if dtype is not None else _floating(a)
    axes = _axes(axis, a.ndim)
    n = _count(a.shape, axes)
    d = np.subtract(a, np.divide(SUM(a, axis=axes, keepdims=True), n))
    return _write_out(np.divide(SUM(np.multiply(d, d), axis=axes, keepdims=bool(keepdims)), max(n - ddof, 0)), out)


@implements(np.std)
def _std(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: Any = 0,
    keepdims: bool = False,
    where: Any = _NO,
    mean: Any = _NO,
    correction: Any = _NO,
) -> Any:
    _no("numpy.std", where=where, mean=mean, correction=correction)
    return _write_out(np.sqrt(_var(a, axis, dtype, None, ddof, keepdims)), out)


@implements(np.average)
def _average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *, keepdims: bool = False) -> Any:
    a = _floating(operand(a))
    if weights is None:
        avg = _mean(a, axis, keepdims=keepdims)
        total = np.asarray(float(_count(a.shape, _axes(axis, a.ndim))))
    else:
        w = operand(weights)
        if shape_of(w) != a.shape:
            if axis is None or len(shape_of(w)) != 1:
                raise unsupported("numpy.average", " with weights of another shape than a (and no axis)")
            ax = _axis(axis, a.ndim)
            w = np.reshape(w, tuple(a.shape[i] if i == ax else 1 for i in range(a.ndim)))
            w = np.broadcast_to(w, a.shape)
        total = np.sum(w, axis=axis, keepdims=keepdims)
        avg = np.divide(np.sum(np.multiply(a, w), axis=axis, keepdims=keepdims), total)
    return (avg, np.broadcast_to(total, shape_of(avg))) if returned else avg


@implements(np.prod)
def _prod(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = _NO,
    where: Any = _NO,
) -> Any:
    _no("numpy.prod", where=where)
    a = operand(a)
    if dtype is not None:
        a = a.astype(dtype)
    r = PROD(a, axis=_axes(axis, _ndim(a)), keepdims=bool(keepdims))
    return _write_out(r if initial is _NO else np.multiply(r, initial), out)


def _extreme(prim: Any, name: str) -> Callable:
    def handler(
        a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = _NO, where: Any = _NO
    ) -> Any:
        _no(name, where=where)
        a = operand(a)
        if a.size == 0 and initial is _NO:
            raise ValueError(f"zero-size array to reduction operation {prim.name}imum which has no identity")
        r = prim(a, axis=_axes(axis, _ndim(a)), keepdims=bool(keepdims))
        if initial is not _NO:
            r = (np.maximum if prim is AMAX else np.minimum)(r, initial)
        return _write_out(r, out)

    return handler


implements(np.max, np.amax)(_extreme(AMAX, "numpy.max"))
implements(np.min, np.amin)(_extreme(AMIN, "numpy.min"))


@implements(np.ptp)
def _ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return _write_out(
        np.subtract(np.max(a, axis=axis, keepdims=keepdims), np.min(a, axis=axis, keepdims=keepdims)), out
    )


@implements(np.cumsum)
def _cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    a = operand(a)
    if dtype is not None:
        a = a.astype(dtype)
    if axis is None:
        a, axis = _reshape(a, (-1,)), 0
    return _write_out(CUMSUM(a, axis=_axis(axis, _ndim(a))), out)


@implements(np.nansum)
def _nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    a = operand(a)
    return _sum(WHERE(np.isnan(a), 0.0, a), axis, dtype, out, keepdims)


@implements(np.nanmean)
def _nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    a = operand(a)
    keep = np.logical_not(np.isnan(a))
    total = _sum(WHERE(keep, a, 0.0), axis, dtype, None, keepdims)
    return _write_out(np.divide(total, np.sum(keep, axis=axis, keepdims=keepdims)), out)


@implements(np.linalg.norm)
def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    x = _floating(operand(x))
    if axis is None and ord is None:
        flat = _reshape(x, (-1,))
        r = np.sqrt(MATMUL(flat, flat))
        return np.reshape(r, (1,) * x.ndim) if keepdims else r
    axes = _axes(axis, x.ndim)
    if len(axes) == 1 or (ord in (None, "fro") and len(axes) == 2):
        if ord in (None, 2, "fro") and (ord != 2 or len(axes) == 1):
            return np.sqrt(np.sum(np.multiply(x, x), axis=axes, keepdims=keepdims))
        if len(axes) == 1 and ord == 1:
            return np.sum(np.absolute(x), axis=axes, keepdims=keepdims)
        if len(axes) == 1 and ord == np.inf:
            return np.max(np.absolute(x), axis=axes, keepdims=keepdims)
    raise unsupported("numpy.linalg.norm", f" with ord={ord!r}")


# -- shapes ------------------------------------------------------------------------------------------------
@implements(np.shape)
def _shape(a: Any) -> tuple:
    return shape_of(operand(a))


@implements(np.ndim)
def _ndim_handler(a: Any) -> int:
    return _ndim(operand(a))


@implements(np.size)
def _size(a: Any, axis: Any = None) -> int:
    s = shape_of(operand(a))
    return math.prod(s) if axis is None else s[axis]


@implements(np.reshape)
def _reshape_handler(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None, copy: Any = None) -> Any:
    if order != "C":
        raise unsupported("numpy.reshape", f" with order={order!r}")
    r = _reshape(a, newshape if shape is None else shape)
    return r.copy() if copy else r


@implements(np.ravel)
def _ravel(a: Any, order: str = "C") -> Any:
    if order != "C":
        raise unsupported("numpy.ravel", f" with order={order!r}")
    return _reshape(a, (-1,))


@implements(np.transpose)
def _transpose_handler(a: Any, axes: Any = None) -> Any:
    return _transpose(a, axes)


@implements(np.swapaxes)
def _swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    a = operand(a)
    nd = _ndim(a)
    perm = list(range(nd))
    i, j = _axis(axis1, nd), _axis(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return _transpose(a, perm)


@implements(np.moveaxis)
def _moveaxis(a: Any, source: Any, destination: Any) -> Any:
    a = operand(a)
    nd = _ndim(a)
    src, dst = _axes(source, nd), _axes(destination, nd)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [k for k in range(nd) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose(a, order)


@implements(np.squeeze)
def _squeeze(a: Any, axis: Any = None) -> Any:
    a = operand(a)
    s = shape_of(a)
    axes = tuple(i for i, n in enumerate(s) if n == 1) if axis is None else _axes(axis, len(s))
    if any(s[i] != 1 for i in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return _reshape(a, tuple(n for i, n in enumerate(s) if i not in axes))


@implements(np.expand_dims)
def _expand_dims(a: Any, axis: Any) -> Any:
    a = operand(a)
    s = shape_of(a)
    nd = len(s) + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    axes = _axes(axis, nd)
    it = iter(s)
    return _reshape(a, tuple(1 if i in axes else next(it) for i in range(nd)))


def _atleast(nd: int) -> Callable:
    def handler(*arys: Any) -> Any:
        res = []
        for a in arys:
            a = operand(a)
            s = shape_of(a)
            if len(s) >= nd:
                res.append(a)
            elif nd == 1:
                res.append(_reshape(a, (1,)))
            elif nd == 2:
                res.append(_reshape(a, (1,) * (2 - len(s)) + s))
            else:
                res.append(_reshape(a, (1, 1, 1) if not s else (1, *s, 1) if len(s) == 1 else (*s, 1)))
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
    args = [operand(a) for a in args]
    shape = np.broadcast_shapes(*(shape_of(a) for a in args))
    return tuple(_broadcast_to(a, shape) for a in args)


@implements(np.concatenate)
def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrays = [operand(a) for a in arrays]
    if axis is None:
        arrays, axis = [_reshape(a, (-1,)) for a in arrays], 0
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if dtype is not None:
        arrays = [a.astype(dtype) for a in arrays]
    nd = _ndim(arrays[0])
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    return _write_out(CONCATENATE(*arrays, axis=_axis(axis, nd)), out)


@implements(np.stack)
def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrays = [operand(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {shape_of(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    ax = _axis(axis, _ndim(arrays[0]) + 1)
    return _concatenate([_expand_dims(a, ax) for a in arrays], ax, out, dtype)


@implements(np.hstack)
def _hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrs = [_atleast(1)(a) for a in tup]
    return _concatenate(arrs, 0 if arrs and _ndim(arrs[0]) == 1 else 1, dtype=dtype)


@implements(np.vstack)
def _vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    return _concatenate([_atleast(2)(a) for a in tup], 0, dtype=dtype)


@implements(np.column_stack)
def _column_stack(tup: Any) -> Any:
    cols = []
    for a in tup:
        a = operand(a)
        cols.append(_reshape(a, (-1, 1)) if _ndim(a) < 2 else a)
    return _concatenate(cols, 1)


@implements(np.append)
def _append(arr: Any, values: Any, axis: Any = None) -> Any:
    return _concatenate([arr, values], axis)


@implements(np.split, np.array_split)
def _split(ary: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    a = operand(ary)
    ax = _axis(axis, a.ndim)
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
    axes = _axes(axis, m.ndim)
    return m[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim))]


implements(np.fliplr)(lambda m: _flip(m, 1))
implements(np.flipud)(lambda m: _flip(m, 0))


@implements(np.roll)
def _roll(a: Any, shift: Any, axis: Any = None) -> Any:
    a = operand(a)
    if axis is None:
        return _reshape(_roll(_reshape(a, (-1,)), shift, 0), a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = _axes(axis, a.ndim)
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
        a, axis = _reshape(a, (-1,)), 0
    idx = indices if isinstance(indices, Traced) else np.asarray(indices)
    return _write_out(_gather_along(a, idx, _axis(axis, a.ndim)), out)


@implements(np.take_along_axis)
def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    a = operand(arr)
    if axis is None:
        a, axis = _reshape(a, (-1,)), 0
    ax = _axis(axis, a.ndim)
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
        a, axis = _reshape(a, (-1,)), 0
    ax = _axis(axis, a.ndim)
    return _gather_along(a, np.repeat(np.arange(a.shape[ax]), repeats), ax)


@implements(np.tile)
def _tile(A: Any, reps: Any) -> Any:
    a = operand(A)
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    nd = max(a.ndim, len(reps))
    a = _reshape(a, (1,) * (nd - a.ndim) + a.shape)
    reps = (1,) * (nd - len(reps)) + reps
    index = np.ix_(*(np.arange(n * r) % n if n else np.arange(0) for n, r in zip(a.shape, reps)))
    return a[index]


@implements(np.diagonal)
def _diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    a = operand(a)
    nd = a.ndim
    i1, i2 = _axis(axis1, nd), _axis(axis2, nd)
    n1, n2 = a.shape[i1], a.shape[i2]
    start1, start2 = (0, offset) if offset >= 0 else (-offset, 0)
    k = max(0, min(n1 - start1, n2 - start2))
    rest = [i for i in range(nd) if i not in (i1, i2)]
    moved = _transpose(a, (*rest, i1, i2))
    r = moved[(Ellipsis, np.arange(start1, start1 + k), np.arange(start2, start2 + k))]
    r._readonly = True
    return r


@implements(np.trace)
def _trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    return _write_out(np.sum(_diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype), out)


@implements(np.diag)
def _diag(v: Any, k: int = 0) -> Any:
    v = operand(v)
    if v.ndim == 2:
        return _diagonal(v, k).copy()
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + abs(k)
    z = _literal_like(v, np.zeros((n, n), dtype=v.dtype))
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
def _diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = _NO, append: Any = _NO) -> Any:
    a = operand(a)
    ax = _axis(axis, a.ndim)
    parts = [a]
    if prepend is not _NO:
        p = operand(prepend)
        parts.insert(0, np.broadcast_to(p, (*a.shape[:ax], 1, *a.shape[ax + 1 :])) if _ndim(p) == 0 else p)
    if append is not _NO:
        p = operand(append)
        parts.append(np.broadcast_to(p, (*a.shape[:ax], 1, *a.shape[ax + 1 :])) if _ndim(p) == 0 else p)
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
    z = _literal_like(a, np.full(shape, value, dtype=a.dtype))
    z[tuple(slice(int(lo), int(lo) + n) for n, (lo, _hi) in zip(a.shape, widths))] = a
    return z


@implements(np.where)
def _where(condition: Any, x: Any = _NO, y: Any = _NO) -> Any:
    if x is _NO and y is _NO:
        return _nonzero(condition)
    if x is _NO or y is _NO:
        raise ValueError("either both or neither of x and y should be given")
    cond = operand(condition)
    if cond.dtype != np.bool_:
        cond = np.not_equal(cond, 0)
    return WHERE(cond, operand(x), operand(y))


@implements(np.clip)
def _clip(
    a: Any, a_min: Any = _NO, a_max: Any = _NO, out: Any = None, *, min: Any = _NO, max: Any = _NO, **kwargs: Any
) -> Any:
    lo = min if a_min is _NO else a_min
    hi = max if a_max is _NO else a_max
    lo = -math.inf if lo is _NO or lo is None else operand(lo)
    hi = math.inf if hi is _NO or hi is None else operand(hi)
    a = operand(a)
    r = CLIP(a, lo, hi)
    if _dtype(r) != _dtype(a) and np.issubdtype(_dtype(a), np.floating):
        r = r.astype(_dtype(a))
    return _write_out(r, out)


def _dtype(a: Any) -> np.dtype:
    return a.dtype if hasattr(a, "dtype") else np.result_type(a)


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
    return operand(val)


@implements(np.imag)
def _imag(val: Any) -> Any:
    return np.zeros_like(operand(val))


implements(np.iscomplexobj)(lambda x: False)
implements(np.isrealobj)(lambda x: True)


# -- creation -------------------------------------------------------------------------------------------------
def _literal_like(a: Any, value: np.ndarray) -> TapeArray:
    tape = a._tape
    return TapeArray(tape, tape.literal(value))


def _like(func: Any) -> Callable:
    def handler(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, **kw: Any) -> Any:
        a = operand(a)
        value = func(np.empty(shape_of(a), dtype=_dtype(a)), dtype=dtype, shape=shape)
        return _literal_like(a, np.zeros_like(value) if func is np.empty_like else value)

    return handler


implements(np.zeros_like)(_like(np.zeros_like))
implements(np.ones_like)(_like(np.ones_like))
implements(np.empty_like)(_like(np.empty_like))


@implements(np.full_like)
def _full_like(
    a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, **kw: Any
) -> Any:
    a = operand(a)
    dtype = np.dtype(dtype) if dtype is not None else _dtype(a)
    shape = shape_of(a) if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    fill = operand(fill_value)
    if isinstance(fill, TapeArray):
        return BROADCAST_TO(fill, shape=shape).astype(dtype)
    return _literal_like(a, np.full(shape, fill, dtype=dtype))


def _create(func: Any, like: TapeArray, *args: Any, **kwargs: Any) -> Any:
    if func in (np.array, np.asarray, np.asanyarray) and args and holds_traced(args[0]):
        r = operand(args[0])
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        return r.astype(dtype) if dtype is not None else r
    return _literal_like(like, np.asarray(func(*args, **kwargs)))


_CREATION = {_create}
for _f in (
    np.zeros,
    np.ones,
    np.empty,
    np.full,
    np.array,
    np.asarray,
    np.asanyarray,
    np.arange,
    np.eye,
    np.identity,
    np.linspace,
):
    FUNCTIONS[_f] = _create


# -- contractions -----------------------------------------------------------------------------------------------
def _letters(n: int, skip: str = "") -> str:
    return "".join(ch for ch in string.ascii_letters if ch not in skip)[:n]


@implements(np.einsum)
def _einsum(
    *operands: Any, out: Any = None, optimize: Any = False, dtype: Any = None, order: str = "K", casting: str = "safe"
) -> Any:
    if not operands or not isinstance(operands[0], str):
        raise unsupported("numpy.einsum", " in the sublist form (pass a subscripts string)")
    subscripts, ops = operands[0], [operand(a) for a in operands[1:]]
    if dtype is not None:
        ops = [a.astype(dtype) for a in ops]
    subs = explicit_subscripts(subscripts, [shape_of(a) for a in ops])
    return _write_out(EINSUM(*ops, subscripts=subs, optimize=optimize), out)


@implements(np.tensordot)
def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    a, b = operand(a), operand(b)
    na, nb = _ndim(a), _ndim(b)
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(na - int(axes), na)), list(range(int(axes)))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    ax_a = [_axis(k, na) for k in ax_a]
    ax_b = [_axis(k, nb) for k in ax_b]
    la = list(_letters(na))
    lb = list(_letters(nb, "".join(la)))
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    out = [la[i] for i in range(na) if i not in ax_a] + [lb[j] for j in range(nb) if j not in ax_b]
    return EINSUM(a, b, subscripts="".join(la) + "," + "".join(lb) + "->" + "".join(out), optimize=False)


@implements(np.dot)
def _dot(a: Any, b: Any, out: Any = None) -> Any:
    a, b = operand(a), operand(b)
    na, nb = _ndim(a), _ndim(b)
    if na == 0 or nb == 0:
        r = np.multiply(a, b)
    elif na <= 2 and nb <= 2:
        r = MATMUL(a, b)
    else:
        r = _tensordot(a, b, ([-1], [-2 if nb >= 2 else -1]))
    return _write_out(r, out)


@implements(np.vdot)
def _vdot(a: Any, b: Any) -> Any:
    return MATMUL(_reshape(a, (-1,)), _reshape(b, (-1,)))


@implements(np.inner)
def _inner(a: Any, b: Any) -> Any:
    a, b = operand(a), operand(b)
    if _ndim(a) == 0 or _ndim(b) == 0:
        return np.multiply(a, b)
    if _ndim(a) == 1 and _ndim(b) == 1:
        return MATMUL(a, b)
    return _tensordot(a, b, ([-1], [-1]))


@implements(np.outer)
def _outer(a: Any, b: Any, out: Any = None) -> Any:
    a, b = _reshape(a, (-1, 1)), _reshape(b, (1, -1))
    return _write_out(np.multiply(a, b), out)


@implements(np.linalg.matmul)
def _linalg_matmul(x1: Any, x2: Any) -> Any:
    return MATMUL(operand(x1), operand(x2))


# -- values without derivatives ------------------------------------------------------------------------------------
def _nondiff(func: Any, name: str | None = None, **fixed: Any) -> Callable:
    prim = NonDiff(func, name)

    def handler(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        return _write_out(prim(*(operand(a) for a in args), **kwargs, **fixed), out)

    return handler


for _f in (
    np.argmax,
    np.argmin,
    np.argsort,
    np.count_nonzero,
    np.any,
    np.all,
    np.isclose,
    np.round,
    np.around,
    np.searchsorted,
    np.isin,
):
    FUNCTIONS[_f] = _nondiff(_f)


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
        a, axis = _reshape(a, (-1,)), 0
    return _take_along_axis(a, np.argsort(a, axis=axis, kind=kind), axis)


@implements(np.nonzero)
def _nonzero(a: Any) -> tuple:
    a = operand(a)
    mask = a if a.dtype == np.bool_ else np.not_equal(a, 0)
    if isinstance(mask, TapeArray):
        guard_masks((mask,))
    return tuple(NonDiff(lambda m, dim: np.nonzero(m)[dim], "nonzero")(mask, dim=d) for d in range(max(_ndim(mask), 1)))


@implements(np.flatnonzero)
def _flatnonzero(a: Any) -> Any:
    return _nonzero(_reshape(a, (-1,)))[0]


@implements(np.argwhere)
def _argwhere(a: Any) -> Any:
    return np.stack(_nonzero(a), axis=-1)
