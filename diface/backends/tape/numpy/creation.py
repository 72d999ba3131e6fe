"""What the tape records for NumPy's creation functions: `*_like`, creation with `like=x` (constants on
the tape), arrays built from lists holding traced values (stacked), and `linspace`, `logspace`,
`geomspace` with traced end points (derivatives with respect to start and stop)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..prims.prim import shape_of
from ..prims.structure import BROADCAST_TO
from ..tracing.tracer import TapeArray, holds_traced, operand
from .common import FUNCTIONS, axis_of, dtype_of, implements, literal_like, unsupported

__all__ = ["CREATION", "array_dtype", "built"]


def _like(func: Any) -> Callable:
    def handler(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, **kw: Any) -> Any:
        a = operand(a)
        value = func(np.empty(shape_of(a), dtype=dtype_of(a)), dtype=dtype, shape=shape)
        return literal_like(a, np.zeros_like(value) if func is np.empty_like else value)

    return handler


implements(np.zeros_like)(_like(np.zeros_like))
implements(np.ones_like)(_like(np.ones_like))
implements(np.empty_like)(_like(np.empty_like))


@implements(np.full_like)
def _full_like(
    a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None, **kw: Any
) -> Any:
    a = operand(a)
    dtype = np.dtype(dtype) if dtype is not None else dtype_of(a)
    shape = shape_of(a) if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    fill = operand(fill_value)
    if isinstance(fill, TapeArray):
        return BROADCAST_TO(fill, shape=shape).astype(dtype)
    return literal_like(a, np.full(shape, fill, dtype=dtype))


def array_dtype(args: tuple, kwargs: dict) -> Any:
    """The `dtype` of a call to np.array, np.asarray or np.asanyarray (the second positional argument)."""
    return kwargs.get("dtype", args[1] if len(args) > 1 else None)


def built(args: tuple, kwargs: dict) -> TapeArray:
    """`np.array(*args, **kwargs)` of a traced array, or of a list, tuple or object array holding traced
    values (stacked): a new traced array (writing into it leaves the argument as it is), with `dtype` and
    `ndmin` applied."""
    a = args[0]
    r = a.copy() if isinstance(a, TapeArray) else operand(a)  # a copy of a buffer is a buffer
    dtype = array_dtype(args, kwargs)
    if dtype is not None and np.dtype(dtype) != r.dtype:
        r = r.astype(dtype)
    ndmin = kwargs.get("ndmin", 0)
    if r.ndim < ndmin:
        r = np.reshape(r, (1,) * (ndmin - r.ndim) + r.shape)
    return r


def _create(func: Any, like: TapeArray, *args: Any, **kwargs: Any) -> Any:
    """A creation function called with `like=` a traced array, or with traced values inside a list."""
    if func in (np.array, np.asarray, np.asanyarray) and args and holds_traced(args[0]):
        return built(args, kwargs)
    if any(holds_traced(a) for a in (*args, *kwargs.values())):
        raise unsupported(f"numpy.{func.__name__}", " with a traced argument other than like=")
    return literal_like(like, np.asarray(func(*args, **kwargs)))


# -- evenly spaced values -------------------------------------------------------------------------------------
def linspace(
    start: Any,
    stop: Any,
    num: Any = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: int = 0,
    *,
    device: Any = None,
) -> Any:
    """NumPy's linspace: start + i * step, the last value exactly stop (with endpoint)."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = operand(start), operand(stop)
    div = (num - 1) if endpoint else num
    shape = np.broadcast_shapes(shape_of(start), shape_of(stop))
    delta = np.subtract(stop, start)
    if not isinstance(delta, TapeArray) or delta.dtype.kind != "f":
        delta = np.asarray(delta, dtype=np.float64) if not isinstance(delta, TapeArray) else delta.astype(np.float64)
    grid = np.arange(num, dtype=delta.dtype).reshape((-1,) + (1,) * len(shape))
    step = np.divide(delta, div) if div > 0 else np.multiply(delta, np.nan)
    y = np.add(np.multiply(grid, step if div > 0 else delta), start)
    y = np.broadcast_to(y, (num, *shape))
    if endpoint and num > 1:
        last = np.reshape(np.broadcast_to(stop, shape), (1, *shape))
        y = np.concatenate([y[:-1], last.astype(y.dtype)])
    if axis != 0:
        y = np.moveaxis(y, 0, axis_of(axis, len(shape) + 1))
    if dtype is not None:
        y = y.astype(dtype)
    return (y, step) if retstep else y


def logspace(
    start: Any, stop: Any, num: Any = 50, endpoint: bool = True, base: Any = 10.0, dtype: Any = None, axis: int = 0
) -> Any:
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    base = operand(base)
    if len(shape_of(base)):
        base = np.expand_dims(base, axis)
    r = np.power(base, y)
    return r.astype(dtype) if dtype is not None else r


def geomspace(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0) -> Any:
    """Positive (or negative) end points: sign * exp(linspace(log|start|, log|stop|)), the end points exact."""
    start, stop = operand(start), operand(stop)
    sign = np.sign(start)
    if np.any(np.equal(start, 0)) or np.any(np.equal(stop, 0)):
        raise ValueError("Geometric sequence cannot include zero")
    if np.any(np.not_equal(sign, np.sign(stop))):
        raise unsupported("numpy.geomspace", " between end points of different signs (complex values)")
    y = np.exp(linspace(np.log(np.abs(start)), np.log(np.abs(stop)), num=num, endpoint=endpoint))
    y = np.multiply(y, sign)
    num = operator.index(num)
    if num:  # the end points exactly, as NumPy sets them
        shape = shape_of(y)[1:]
        parts = [np.reshape(np.broadcast_to(start, shape), (1, *shape)).astype(y.dtype)]
        middle = y[1:-1] if endpoint and num > 1 else y[1:]
        parts.append(middle)
        if endpoint and num > 1:
            parts.append(np.reshape(np.broadcast_to(stop, shape), (1, *shape)).astype(y.dtype))
        y = np.concatenate(parts)
    if axis != 0:
        y = np.moveaxis(y, 0, axis_of(axis, len(shape_of(y))))
    return y.astype(dtype) if dtype is not None else y


def _spaced(handler: Callable) -> Callable:
    """linspace and friends: with traced end points, the handler; called with like= only, a constant."""

    def create(func: Any, like: TapeArray, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("like", None)
        if any(holds_traced(a) for a in (*args, *kwargs.values())):
            return handler(*args, **kwargs)
        return literal_like(like, np.asarray(func(*args, **kwargs)))

    return create


CREATION = {_create}
for _f in (np.zeros, np.ones, np.empty, np.full, np.array, np.asarray, np.asanyarray, np.arange, np.eye, np.identity):
    FUNCTIONS[_f] = _create
for _space, _h in ((np.linspace, linspace), (np.logspace, logspace), (np.geomspace, geomspace)):
    FUNCTIONS[_space] = _spaced(_h)
    CREATION.add(FUNCTIONS[_space])
