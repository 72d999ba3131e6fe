"""Shared by the NumPy handlers: the registry of functions the tape records, and helpers for axes,
shapes, views, `out=` and the error for what it does not record."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.graph import Traced
from ..data.messages import ALTERNATIVES, function_name, rule_limit, unsupported
from ..data.sites import in_rule, user_location
from ..prims.guards import refuse_store
from ..prims.prim import shape_of
from ..prims.structure import RESHAPE, TRANSPOSE
from ..tracing.tracer import TapeArray, operand

__all__ = [
    "ALTERNATIVES",
    "FUNCTIONS",
    "NO",
    "axes_of",
    "axis_of",
    "dtype_of",
    "equality_branch",
    "floating",
    "function_name",
    "implements",
    "literal_like",
    "ndim_of",
    "refuse_kwargs",
    "reshape_of",
    "rule_limit",
    "transpose_of",
    "unsupported",
    "write_out",
]

FUNCTIONS: dict[Callable, Callable] = {}


def implements(*funcs: Any) -> Callable:
    def register(handler: Callable) -> Callable:
        for f in funcs:
            FUNCTIONS[f] = handler
        return handler

    return register


def write_out(result: Any, out: Any) -> Any:
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


def axes_of(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (tuple, list)):
        axis = (axis,)
    out = tuple(axis_of(a, ndim) for a in axis)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return out


def axis_of(a: Any, ndim: int) -> int:
    a = int(a)
    if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
        raise np.exceptions.AxisError(a, ndim)
    return a % ndim if ndim else 0


def refuse_kwargs(name: str, **kw: Any) -> None:
    """Keyword arguments the tape does not record (given explicitly)."""
    for k, v in kw.items():
        if v is not NO:
            raise unsupported(name, f" with {k}=")


NO = object()


def reshape_of(a: Any, shape: tuple) -> Any:
    a = operand(a)
    if not isinstance(a, TapeArray):
        return np.reshape(a, shape)
    shape = resolve_shape(shape, a.size)
    if shape == a.shape:
        return a.copy()._link(a, RESHAPE, {"shape": shape})
    r = RESHAPE(a, shape=shape)
    if np.shares_memory(r._value(), a._value()):
        r._link(a, RESHAPE, {"shape": shape})
    return r


def resolve_shape(shape: Any, size: int) -> tuple:
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


def transpose_of(a: Any, axes: Any = None) -> Any:
    a = operand(a)
    if not isinstance(a, TapeArray):
        return np.transpose(a, axes)
    nd = a.ndim
    axes = tuple(range(nd - 1, -1, -1)) if axes is None else tuple(axis_of(k, nd) for k in axes)
    if sorted(axes) != list(range(nd)):
        raise ValueError("axes don't match array")
    params = {"axes": axes}
    return TRANSPOSE(a, **params)._link(a, TRANSPOSE, params)


def ndim_of(a: Any) -> int:
    return len(shape_of(a))


def dtype_of(a: Any) -> np.dtype:
    return a.dtype if hasattr(a, "dtype") else np.result_type(a)


def floating(a: Any) -> Any:
    """An integer array as float64 (what NumPy's mean and var compute in); a Python number as an array."""
    if not hasattr(a, "dtype"):
        a = np.asarray(a)
    return a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)


def literal_like(a: Any, value: np.ndarray) -> TapeArray:
    """A constant `value` on the tape of `a` (an array f may then write traced values into)."""
    tape = a._tape
    return TapeArray(tape, tape.literal(value))


def equality_branch(cond: Any, x: Any, y: Any) -> None:
    """`np.where(v == c, a, b)` with v depending on x: where the equality holds, f is `a` at one point
    and `b` around it, so f's derivative there is the limit of b's, not a's, and the tape cannot know
    it. Refused where the equality holds at the recorded point and `b` depends on x; elsewhere the
    number of points where it holds (none) is guarded, so a prepared call that hits one raises."""
    if not isinstance(cond, TapeArray) or in_rule() is not None:  # the tape's own rules know their branches
        return
    tape = cond._tape
    slot = tape.slots[cond._read()]
    if slot.node < 0:
        return
    node = tape.nodes[slot.node]
    equal = True  # the condition is True where the equality holds (False: through a negation)
    while getattr(node.prim, "ufunc", None) in (np.logical_not, np.invert) and tape.slots[node.inputs[0]].node >= 0:
        equal = not equal
        node = tape.nodes[tape.slots[node.inputs[0]].node]
    ufunc = getattr(node.prim, "ufunc", None)
    if ufunc not in (np.equal, np.not_equal) or not any(tape.slots[s].active for s in node.inputs):
        return
    equal = equal == (ufunc is np.equal)
    around = y if equal else x  # the branch taken where the equality does not hold
    if not (isinstance(around, TapeArray) and tape.slots[around._read()].active):
        return
    value = np.asarray(tape.values[cond._read()])
    hits = int(np.count_nonzero(value if equal else ~value))
    where = user_location()
    if hits:
        raise NotSupportedError(
            f"AutoTape: np.where (or a ufunc's where=) at {where} chooses its branch by an exact equality of a "
            "value that depends on x, and the equality holds at this point: f is one branch here and the "
            "other around it, so its derivative is the limit of the other branch's, which the tape cannot "
            "compute. Differentiate at a point where the equality does not hold, or with di.AutoFiniteDiff()."
        )
    # a guard of its own kind: it keeps the derivative right, and decides no shape or sparsity pattern
    cond.observe("equality", "the number of points where np.where's equality holds (none when recorded)", where)
