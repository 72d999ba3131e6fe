"""Values, tangents and cotangents fitted to the shapes they belong to, and results made the caller's.

autograd's rules do not always return a (co)tangent shaped like its value: its rule for `np.where`
hands a lower-rank branch (a scalar `x` in `np.where(c, x, array)`) a cotangent of the output's shape,
which then spreads to every later rule and ends in a wrongly shaped or wrong result; indexing gives
sparse tangents. Every (co)tangent is fitted here where it arises: summed over the axes it was
broadcast along, broadcast up from a lower rank, or densified.

Nor do its JVP rules always return a real tangent for a real value: the rule for `np.linalg.norm` of a
complex array is `sum(g * conj(x)) / norm`, without the real part, and the imaginary part it leaves
turns into a wrong real result as soon as the tangent meets a complex number. autograd alone (1.9):

    f = lambda v: anp.real(anp.linalg.norm(anp.stack([v[0] + 1j * v[1]])) * (1 + 1j))  # = |z|
    make_jvp(f)(np.array([0.6, 0.8]))(np.array([0.0, 1.0]))[1]  # 0.2, where d|z|/dv1 = 0.8

A tangent of a real value is real: `tangent_like` keeps the real part of a complex one (as autograd's
VJP rules do with `match_complex`), which is the derivative wherever the rule's real part is right.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ._internals import AG

__all__ = [
    "broadcastable",
    "fit_cotangent",
    "fit_tangent",
    "fresh",
    "open_containers",
    "shape_or_none",
    "tangent_like",
    "value_shape",
]


def shape_or_none(value: Any) -> tuple | None:
    """The shape of an array value (a box's shape inside a nested trace), None for anything else. Boxes
    are opened here rather than asked (their `shape` is an untraced primitive call: slow)."""
    box_types = AG.box_types
    while type(value) in box_types:
        value = value._value
    shape = getattr(value, "shape", None)
    if shape is None:
        return () if isinstance(value, (float, int, complex)) else None
    return shape if type(shape) is tuple else tuple(shape)


def value_shape(value: Any) -> tuple | None:
    """The shape a tangent of `value` has (None for values that are not arrays, such as tuples)."""
    raw = AG.getval(value)
    if isinstance(raw, (np.ndarray, np.generic, float, int)):
        return np.shape(raw)
    if isinstance(raw, AG.SparseObject) and isinstance(raw.vs, AG.ArrayVSpace):
        return tuple(raw.vs.shape)
    return None  # containers (the list, tuple or dict cotangents of an autograd.grad inside f) included


def broadcastable(small: tuple, big: tuple) -> bool:
    return len(small) <= len(big) and all(a in (1, b) for a, b in zip(reversed(small), reversed(big)))


def fresh(r: Any, *inputs: Any) -> Any:
    """`r` as an array the caller may keep and write: a copy when it is a view, read-only, or one
    of `inputs` (identity rules hand their cotangent back)."""
    if type(r) is np.ndarray and (not r.flags.owndata or not r.flags.writeable or any(r is i for i in inputs)):
        return r.copy()
    return r


def fit_cotangent(g: Any, shape: tuple) -> Any:
    """A cotangent a rule returned with another shape than its value's: summed over the axes it was
    broadcast along (or broadcast up from a lower rank)."""
    anp = AG.anp
    g_shape = tuple(anp.shape(g))
    lead = len(g_shape) - len(shape)
    if lead >= 0 and all(a == b or b == 1 for a, b in zip(g_shape[lead:], shape)):
        axes = tuple(range(lead)) + tuple(lead + i for i, (a, b) in enumerate(zip(g_shape[lead:], shape)) if a != b)
        return anp.reshape(anp.sum(g, axis=axes), shape)
    if broadcastable(g_shape, shape):
        return anp.broadcast_to(g, shape)
    raise NotSupportedError(
        f"an autograd reverse-mode rule returned a cotangent of shape {g_shape} for a value of shape {shape}"
    )


def fit_tangent(t: Any, shape: tuple | None) -> Any:
    """A tangent as a dense array shaped like its value (sparse tangents of indexing densified, lower
    ranks broadcast)."""
    if type(AG.getval(t)) is AG.SparseObject:
        t = AG.sparse_add(AG.vspace(t), None, t)
    if shape is None:
        return t
    t_shape = np.shape(t)
    if t_shape == shape:
        return t
    if broadcastable(t_shape, shape):
        return AG.anp.broadcast_to(t, shape)
    raise NotSupportedError(
        f"an autograd forward-mode rule returned a tangent of shape {t_shape} for a value of shape {shape}"
    )


def tangent_like(t: Any, value: Any) -> Any:
    """`fit_tangent`, and the real part of a complex tangent of a real value; with a fast path for the
    common case (an array shaped like its value, complex only if the value is)."""
    if type(t) is np.ndarray and type(value) is np.ndarray and t.shape == value.shape:
        if t.dtype.kind != "c" or value.dtype.kind == "c":
            return t
        return np.real(t)
    shape = value_shape(value)
    t = fit_tangent(t, shape)
    if shape is None:  # a container (the tuple an autograd.grad inside f returns): its tangent is one too
        return t
    if np.iscomplexobj(AG.getval(t)) and not np.iscomplexobj(AG.getval(value)):
        return AG.anp.real(t)
    return t


def open_containers(out: Any) -> Any:
    """f's output with autograd's container boxes opened: inside a trace, `autograd.numpy.split` and
    other functions returning a list or tuple give a `SequenceBox` (a dict: a `DictBox`), one traced
    value; the core flattens f's output as a tree of lists, tuples and dicts, so each such box becomes
    the container it holds, of boxes (`box[i]` is traced). Plain values are returned as they are."""
    if isinstance(out, (list, tuple)):
        opened = [open_containers(v) for v in out]
        if all(a is b for a, b in zip(opened, out)):
            return out
        return type(out)(opened) if type(out) in (list, tuple) else type(out)(*opened)  # namedtuples
    if isinstance(out, dict):
        return {k: open_containers(v) for k, v in out.items()} if type(out) is dict else out
    if type(out) not in AG.box_types:
        return out
    raw = AG.getval(out)
    if isinstance(raw, (list, tuple)):
        items = [open_containers(out[i]) for i in range(len(raw))]
        return tuple(items) if isinstance(raw, tuple) else items
    if isinstance(raw, dict):
        return {k: open_containers(out[k]) for k in raw}
    return out
