"""What the tape records for each NumPy ufunc and function called on a traced array: the targets of
NumPy's `__array_ufunc__` and `__array_function__` protocols.

Ufuncs map to their primitive (`prims.elementwise`); NumPy functions to the handlers registered in the
`numpy/` modules, most of which map to one primitive or compose a few (mean = sum / n, stack =
expand_dims + concatenate, ...). Anything not listed raises `NotSupportedError` naming the function,
never a silent wrong derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.dispatch import register_protocols
from ..data.graph import Traced
from ..data.index import normalize

# imported for their registrations: the handlers of NumPy's functions and the hooks' rules
from ..prims import special_params  # noqa: F401
from ..prims.complex import complex_ufunc
from ..prims.contract import MATMUL
from ..prims.elementwise import WHERE, ufunc_prim
from ..prims.guards import refuse_store, user_location
from ..prims.prim import shape_of
from ..prims.structure import INDEX_ADD
from ..scipy import (  # noqa: F401
    functions,
    interpolate,
    odes,
    quadrature,
    roots,
    samples,
    solvers,
    stats,
    tables,
)
from ..scipy import linalg as scipy_linalg  # noqa: F401
from ..tracing.tracer import TapeArray, guard_masks, holds_traced, operand, refuse_inner
from . import (  # noqa: F401
    arrange,
    assorted,
    calculus,
    contract,
    counts,
    cumulative,
    fft,
    interp,
    linalg,
    linalg_extra,
    nondiff,
    poly,
    reductions,
    statistics,
    values,
    vectorize,
)
from .common import FUNCTIONS, dtype_of, equality_branch, function_name, unsupported, write_out
from .creation import CREATION

__all__ = ["array_function", "array_ufunc"]

_IGNORED_UFUNC_KWARGS = ("casting", "order", "subok")


def array_function(func: Any, args: tuple, kwargs: dict, like: TapeArray | None = None) -> Any:
    handler = FUNCTIONS.get(func)
    if handler is None:
        raise unsupported(function_name(func))
    if handler in CREATION:
        return handler(func, like, *args, **kwargs)
    return handler(*args, **kwargs)


# -- ufuncs ---------------------------------------------------------------------------------------------
_REDUCE: dict[np.ufunc, str] = {
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
            raise unsupported(f"{function_name(ufunc)}.reduce")
        kwargs.setdefault("axis", 0)
        return write_out(getattr(np, name)(*inputs, **kwargs), out)
    if method == "accumulate" and ufunc in (np.add, np.multiply):
        kwargs.setdefault("axis", 0)
        return write_out((np.cumsum if ufunc is np.add else np.cumprod)(*inputs, **kwargs), out)
    if method == "at" and ufunc is np.add:
        return _add_at(*inputs)
    if method == "outer":
        a, b = (operand(v) for v in inputs)
        a = np.reshape(a, shape_of(a) + (1,) * len(shape_of(b)))
        return write_out(ufunc(a, b, **kwargs), out)
    if method != "__call__":
        raise unsupported(f"{function_name(ufunc)}.{method}")
    where = kwargs.pop("where", True)
    dtype = kwargs.pop("dtype", None)
    for k in _IGNORED_UFUNC_KWARGS:
        kwargs.pop(k, None)
    if kwargs:
        raise unsupported(function_name(ufunc), f" with {', '.join(kwargs)}=")
    args = [operand(a) for a in inputs]
    if dtype is not None:
        args = [np.asarray(a).astype(dtype) if not isinstance(a, Traced) else a.astype(dtype) for a in args]
    if where is not True:
        return _masked_call(ufunc, args, where, out)
    return write_out(_call(ufunc, args), out)


def _call(ufunc: np.ufunc, args: list) -> Any:
    if ufunc is np.matmul:
        result = MATMUL(*args)
    elif ufunc is getattr(np, "vecdot", None):
        result = np.sum(np.multiply(np.conjugate(args[0]), args[1]), axis=-1)
    else:
        prim = complex_ufunc(ufunc, args) or ufunc_prim(ufunc)
        if prim is None:
            raise unsupported(function_name(ufunc))
        result = prim(*args)
    return result


#: a value inside the domain of every ufunc (and of its derivatives) but arccosh's, written into the entries
#: a `where=` mask leaves out before the ufunc sees them
_SAFE = 0.5
_SAFE_FOR: dict[Any, float] = {np.arccosh: 2.0}


def _masked_call(ufunc: np.ufunc, args: list, where: Any, out: Any) -> Any:
    """`ufunc(*args, out=out, where=where)`: the result where the mask holds, `out` as it was elsewhere,
    i.e. `np.where(mask, ufunc(*args), out)`. The entries left out are replaced by a safe value before the
    ufunc (`np.where(mask, a, 0.5)`), so that neither the value nor the derivative computed there (1 / 0,
    log(0), ...) reaches the result: their derivative is exactly 0, never NaN.

    Without `out=`, NumPy leaves those entries uninitialised: for a boolean or integer result (a
    comparison, no derivative) they are False / 0 here, one of the values NumPy may leave; a floating
    result is refused, since an undefined value would flow into the derivatives."""
    name = function_name(ufunc)
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if ufunc.nout != 1 or ufunc is np.matmul or ufunc is getattr(np, "vecdot", None):
        raise unsupported(name, " with where=")
    if out is not None and not isinstance(out, TapeArray):
        refuse_store()
    mask = _mask(where)
    safe = _SAFE_FOR.get(ufunc, _SAFE)
    guarded = [
        WHERE(mask, a, safe) if not isinstance(a, (int, float, complex)) and dtype_of(a).kind in "fc" else a
        for a in args
    ]
    result = _call(ufunc, guarded)
    if out is not None:
        equality_branch(mask, result, out)
        return write_out(WHERE(mask, result, out), out)
    if dtype_of(result).kind not in "biu":
        raise NotSupportedError(
            f"AutoTape: {name} with where= and no out= (at {user_location()}): NumPy leaves the entries where "
            "the condition is False uninitialised, so the result (and its derivative) is undefined there. Pass "
            "out= (e.g. out=np.zeros_like(x)), or write np.where(mask, ..., fallback)."
        )
    return WHERE(mask, result, np.zeros((), dtype=dtype_of(result)))


def _mask(where: Any) -> Any:
    """A ufunc's `where=` as a boolean mask, cast as NumPy casts it: a traced mask must be boolean; a
    plain one is True exactly where NumPy would write (lists of ints and Python numbers are taken, an
    integer or float array is a TypeError)."""
    if holds_traced(where) and not isinstance(where, Traced):
        where = operand(where)  # a list holding traced values, stacked
    if isinstance(where, Traced):
        if where.dtype != np.bool_:
            raise TypeError(
                f"Cannot cast array data from dtype('{where.dtype}') to dtype('bool') according to the rule 'safe'"
            )
        return where
    mask = np.zeros(np.shape(where), dtype=bool)
    np.logical_or(mask, True, out=mask, where=where)
    return mask


def _add_at(a: Any, indices: Any, b: Any = None) -> None:
    if not isinstance(a, TapeArray):
        refuse_store()
    k = normalize(indices, a.shape)
    guard_masks(k.traced_masks)
    refuse_inner(operand(b), a._tape)
    base = TapeArray(a._tape, a._read())
    new = INDEX_ADD(base, operand(b), *k.arrays, template=k.template, adv_front=k.adv_front, unique=k.unique)
    a._commit(new._slot)


register_protocols(array_ufunc, array_function)
