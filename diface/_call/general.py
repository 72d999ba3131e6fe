"""The general path: every call a plan does not take (`diface._call.plan`), in any call shape.

`out=` buffers, an in-place f's `y=`, batches of tangents, trees, auxiliary outputs, arguments of other
specs than the prepared ones (converted, or reported by the strict check: `check_call`). One function,
`general_call`, in four steps like a plan's: check, convert in, run the kernel, deliver. The conversions
it shares with the plans are here too (`x_in`, `tangents_in`, `context_values`, `with_aux`), so that
both paths convert alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._contexts import check_contexts
from .._errors import ArgumentError
from .check import labelled
from .convert import native_context_value, native_tangent, native_x
from .prepared import Prepared

__all__ = ["check_call", "context_values", "general_call", "tangents_in", "with_aux", "x_in"]


def check_call(p: Prepared, x: Any, extra: Any, contexts: tuple, y: Any, f: Any = None, backend: Any = None) -> None:
    """Raise `PreparationMismatchError` unless the call matches the preparation (f and the backend where
    given)."""
    guard, codec = p.guard, p.codec
    if guard is None:  # made for one call: nothing to compare with
        return
    if codec is None:
        labels, values = labelled(p.op.tangent, x, extra, contexts, y)
        guard.check(labels, values, f, backend)
    else:
        labels, values = codec.labelled(x, extra, contexts, y)
        guard.check(labels, values, f, backend, codec.structure(x, extra, y))


def x_in(p: Prepared, xf: Any) -> Any:
    """The (flat) x as the kernel takes it: native arrays as they are, NumPy arrays of x's dtype as they
    are for a kernel that converts them itself, anything else converted (`native_x`)."""
    ops = p.ops
    if type(xf) is p.native_type or ops.is_native(xf):
        return xf
    if p.takes_numpy and type(xf) is np.ndarray and xf.dtype == p.problem.x_dtype:
        return xf
    return native_x(ops, xf)


def tangents_in(p: Prepared, extra: Any, xn: Any) -> tuple:
    """The call's tangents as a tuple of native arrays (NumPy ones as they are, for a kernel that takes
    them)."""
    op = p.op
    batched = type(extra) is tuple
    if batched != (p.batch is not None):
        raise ArgumentError(
            f"{op.name}: prepared for {'a tuple of tangents' if p.batch is not None else 'one tangent'}"
            f", called with {'a tuple' if batched else 'a single tangent'}"
        )
    ops, native_type = p.ops, p.native_type
    tangents = extra if batched else (extra,)
    if all(type(t) is native_type for t in tangents):
        return tangents
    if p.takes_numpy and all(type(t) is np.ndarray for t in tangents):
        return tangents  # the strict check compared their dtypes with the preparation's
    dtype = p.problem.x_dtype if op.tangent == "tx" else p.problem.y_spec[1]
    label = op.tangent or ""
    return tuple(t if ops.is_native(t) else native_tangent(ops, t, xn, dtype, op.name, label) for t in tangents)


def context_values(p: Prepared, contexts: tuple, xn: Any) -> tuple:
    """The call's context values as the kernel takes them: NumPy arrays converted to the backend's
    arrays on x's device, unless the kernel takes NumPy arrays."""
    values = tuple(c.value for c in contexts)
    if p.takes_numpy or not values:
        return values
    return tuple(native_context_value(p.ops, v, xn) for v in values)


def with_aux(p: Prepared, results: Any, full: bool, xn: Any, contexts: tuple) -> Any:
    """The results with f's auxiliary output beside them (`(result, aux)`; the full variant's value
    becomes `(value, aux)`), from one plain evaluation of f at the native flat x and the contexts."""
    codec, ops = p.codec, p.ops
    assert codec is not None  # has_aux makes a call structured
    x_native = xn if ops.is_native(xn) else native_x(ops, xn)
    cv_native = tuple(native_context_value(ops, c.value, x_native) for c in contexts)
    aux = codec.aux(x_native, cv_native, ops, p.to_user)
    if not full:
        return results, aux
    return ((results[0], aux), *results[1:])


def general_call(
    p: Prepared, full: bool, x: Any, extra: Any, contexts: tuple, out: Any, y: Any, check: bool, value: bool = False
) -> Any:
    """One operator call in any shape: the plain operator (`full=False`) or its full variant; `value`:
    the operator's value variant (`op.value_name`), the full variant's results after f(x)."""
    op = p.op
    name = op.value_name if value else op.full_name if full else op.name
    assert name is not None
    if contexts:
        check_contexts(contexts, name)
    codec, strict = p.codec, p.settings.strict
    xf, tf, yf = x, extra, y
    if codec is not None:
        leaves, matched = codec.x_leaves(x)
        if check and strict and (not matched or extra is not None or contexts or y is not None):
            check_call(p, x, extra, contexts, y)
        xf = codec.x_in(x, leaves, matched, name)
        contexts = codec.call_contexts(x, leaves, contexts)
        if extra is not None:
            tf = codec.tangents_in(extra, name)
        if y is not None:
            yf = codec.y_in(y, name)
    elif check and strict:
        check_call(p, x, extra, contexts, y)
    ops, delivery = p.ops, p.delivery
    xn = xf if type(xf) is p.native_type else x_in(p, xf)
    tn = None if op.tangent is None else tangents_in(p, tf, xn)
    cv = context_values(p, contexts, xn) if contexts else ()
    yn = None if yf is None else (yf if ops.is_native(yf) else ops.asarray(yf, like=xn))
    out_levels = None
    if out is not None:
        if codec is None:
            delivery.check_out(out, full, extra)
        else:
            out_levels = codec.out_levels(out, full, name)
    r = p.kernel.run(xn, tn, cv, yn, full)
    if yf is not None and yn is not yf:
        np.copyto(yf, ops.to_numpy(yn))
    batched = type(tf) is tuple
    if codec is None:
        results = delivery.deliver(r, full, batched, out, y)
    else:
        if y is not None:
            codec.y_back(y, yf, name)
        results = codec.decode_all(delivery.deliver(r, full, batched, None, yf), full)
        if out_levels is not None:
            if not full:
                results = codec.write(name, out_levels, (results,))[0]
            elif op.value_first:  # out= holds the derivatives, not the value
                results = (results[0], *codec.write(name, out_levels, results[1:]))
            else:
                results = codec.write(name, out_levels, results)
        if full and y is not None and op.value_first:
            results = (y, *results[1:])
        if p.settings.has_aux:
            results = with_aux(p, results, full, xn, contexts)
    if not value:
        return results
    # the value variant: f(x) first, the kernel's where it computes it, else one evaluation of f
    f_x = delivery.value(r.value if r.value is not None else p.problem.evaluate(xn, cv), None)
    return (f_x if codec is None else codec.decode("y", f_x), *results)
