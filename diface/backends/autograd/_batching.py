"""Batched forward-mode rules: how a stack of tangents (a leading batch axis) goes through one recorded
primitive at once, where autograd's JVP rules take one tangent at a time.

`kind_of` classifies a recorded node; `push_batch` applies the batched rule of its kind:

- "elementwise": a ufunc multiplies the batch by its partial derivatives (the caller's `partial`,
  evaluated once per node from the JVP rule at a tangent of ones, or from the VJP rule where autograd
  has no JVP rule: "partials"; a complex argument takes the rule at 1 and at 1j, since `conj` and `abs`
  are only real-linear in their tangent);
- "matmul": `matmul`/`dot` with one side traced, as one matrix product of the whole batch;
- "getitem", "untake" (basic indexing and its transpose), "sum", "reshape", "where", and the shape
  functions ("expand_dims", "squeeze", "transpose", "swapaxes", "moveaxis", "broadcast_to"): the same
  operation with every axis moved one place to the right;
- "add": the accumulations of a backward pass, whose JVP is the sum of the tangents.

Any other primitive is "loop": its JVP rule runs once per tangent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._internals import AG

__all__ = ["kind_of", "push_batch"]

_SHAPE_FUNCTIONS = ("expand_dims", "squeeze", "transpose", "swapaxes", "moveaxis", "broadcast_to")


def kind_of(node: Any, shape: tuple | None) -> str:
    """How a batch of tangents goes through `node` (whose value has `shape`)."""
    if shape is None:
        return "loop"
    fun, args, kwargs = node.fun, node.args, node.kwargs
    raw = getattr(fun, "fun", None)
    if isinstance(raw, np.ufunc) and raw.signature is None and raw.nout == 1 and not kwargs:
        return "elementwise"
    if fun is AG.getitem and _basic_index(args[1]):
        return "getitem"
    if fun is AG.untake and _basic_index(args[1]):
        return "untake"
    anp = AG.anp
    if fun is anp.sum and len(args) == 1 and set(kwargs) <= {"axis", "keepdims"}:
        return "sum"
    if fun is anp.reshape and kwargs.get("order", "C") == "C" and len(args) == 2:
        return "reshape"
    if fun in AG.accumulations:
        return "add"
    if (fun is anp.matmul or (fun is anp.dot and max(np.ndim(a) for a in args) <= 2)) and not kwargs:
        if len(args) == 2 and all(_matmul_form(np.ndim(args[0]), np.ndim(args[1]), a) for a in node.argnums):
            return "matmul"
        return "loop"
    if fun is getattr(anp, "_original_where", anp.where) and len(args) == 3 and not kwargs and 0 not in node.argnums:
        return "where"
    for name in _SHAPE_FUNCTIONS:
        if fun is getattr(anp, name) and node.argnums == (0,):
            return name
    return "loop"


def push_batch(
    kind: str, node: Any, shape: tuple, ins: list, count: int, partial: Callable[[Any, int, Any], Any]
) -> np.ndarray:
    """The tangents of `node`'s value (stacked: `(count, *shape)`) from those of its traced arguments
    (`ins`, stacked likewise, in the order of `node.argnums`); `partial(node, argnum, t)` is an
    elementwise primitive's JVP in argument `argnum` at tangents `t`."""
    args = node.args
    out: Any  # the stacked tangents (None until a first term)
    if kind == "elementwise" or kind == "partials":
        out = None
        for argnum, t in zip(node.argnums, ins):
            term = partial(node, argnum, _ranked(t, count, len(shape)))
            out = term if out is None else out + term
    elif kind == "matmul":
        out = None
        for argnum, t in zip(node.argnums, ins):
            term = _matmul(args[0], args[1], argnum, t)
            out = term if out is None else out + term
    elif kind == "where":
        out = None
        for argnum, t in zip(node.argnums, ins):
            t = _ranked(t, count, len(shape))
            term = np.where(args[0], t, 0.0) if argnum == 1 else np.where(args[0], 0.0, t)
            out = term if out is None else out + term
    elif kind == "getitem":
        out = ins[0][_batched_index(args[1])]
    elif kind == "untake":
        vs = args[2]
        out = np.zeros((count, *vs.shape), vs.dtype)
        out[_batched_index(args[1])] = ins[0]
    elif kind == "sum":
        axes = _batched_axes(node.kwargs.get("axis"), np.ndim(args[0]))
        out = np.sum(ins[0], axis=axes, keepdims=node.kwargs.get("keepdims", False))
    elif kind == "reshape":
        out = np.reshape(ins[0], (count, *shape))
    elif kind == "add":
        out = ins[0]
        for t in ins[1:]:
            out = out + t
    else:
        out = _shape_function(kind, node, shape, ins[0], count)
    if out.shape[1:] != shape:
        out = np.broadcast_to(out, (count, *shape))
    return out


# -- helpers -----------------------------------------------------------------------------------------
def _basic_index(idx: Any) -> bool:
    """Whether `idx` is basic indexing (integers, slices, None, Ellipsis), which a leading batch
    axis does not change."""
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(
        i is None
        or i is Ellipsis
        or isinstance(i, slice)
        or (isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)))
        for i in items
    )


def _batched_index(idx: Any) -> tuple:
    return (slice(None), *(idx if isinstance(idx, tuple) else (idx,)))


def _batched_axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(1, ndim + 1))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim + 1 for a in axes)


def _shifted(axis: Any, ndim: int) -> Any:
    """An axis argument (an int or a sequence of them) of an array of `ndim` dimensions, for the
    batch: counted from the front, one place further."""
    if isinstance(axis, (int, np.integer)):
        return int(axis) % ndim + 1
    return tuple(int(a) % ndim + 1 for a in axis)


def _ranked(t: np.ndarray, count: int, ndim: int) -> np.ndarray:
    """A batch of tangents of a lower-rank argument, with ones inserted after the batch axis so that
    it broadcasts against values of rank `ndim` as the argument did."""
    missing = ndim - (t.ndim - 1)
    return t.reshape((count,) + (1,) * missing + t.shape[1:]) if missing > 0 else t


def _matmul_form(a_ndim: int, b_ndim: int, argnum: int) -> bool:
    """Whether `matmul(a, b)` with the tangents of argument `argnum` stacked has a batched form."""
    if argnum == 0:
        return (a_ndim == 1 and b_ndim in (1, 2)) or (a_ndim >= 2 and (b_ndim == 1 or 2 <= b_ndim <= a_ndim))
    return (b_ndim == 1 and a_ndim in (1, 2)) or (b_ndim >= 2 and a_ndim <= b_ndim)


def _matmul(a: Any, b: Any, argnum: int, t: np.ndarray) -> np.ndarray:
    """`matmul(t_k, b)` (argnum 0) or `matmul(a, t_k)` (argnum 1) for every tangent t_k of the batch."""
    if argnum == 0:
        return np.matmul(t, b)  # (k, ..., m, n) @ b, or (k, n) @ b: the batch axis leads either way
    if np.ndim(b) == 1:
        return np.matmul(t, a) if np.ndim(a) == 1 else np.matmul(t, np.swapaxes(a, -1, -2))
    return np.matmul(a, t)


def _argument(node: Any, position: int, keyword: str, default: Any = None) -> Any:
    args = node.args
    return args[position] if len(args) > position else node.kwargs.get(keyword, default)


def _shape_function(kind: str, node: Any, shape: tuple, t: np.ndarray, count: int) -> np.ndarray:
    ndim = t.ndim - 1
    if kind == "expand_dims":
        return np.expand_dims(t, _shifted(_argument(node, 1, "axis"), len(shape)))
    if kind == "squeeze":
        axis = _argument(node, 1, "axis")
        if axis is None:
            axis = tuple(i for i, s in enumerate(t.shape[1:]) if s == 1)
        return np.squeeze(t, _shifted(axis, ndim))
    if kind == "transpose":
        axes = _argument(node, 1, "axes")
        axes = range(ndim - 1, -1, -1) if axes is None else axes
        return np.transpose(t, (0, *_shifted(tuple(axes), ndim)))
    if kind == "swapaxes":
        return np.swapaxes(t, _shifted(_argument(node, 1, "axis1"), ndim), _shifted(_argument(node, 2, "axis2"), ndim))
    if kind == "moveaxis":
        source, destination = _argument(node, 1, "source"), _argument(node, 2, "destination")
        return np.moveaxis(t, _shifted(source, ndim), _shifted(destination, ndim))
    # broadcast_to
    return np.broadcast_to(_ranked(t, count, len(shape)), (count, *shape))
