"""What the tape records for each NumPy ufunc and function called on a traced array: the targets of
NumPy's `__array_ufunc__` and `__array_function__` protocols.

Ufuncs map to their primitive (`_elementwise`); NumPy functions to the handlers registered in the
`_np_*` modules, most of which map to one primitive or compose a few (mean = sum / n, stack =
expand_dims + concatenate, ...). Anything not listed raises `NotSupportedError` naming the function,
never a silent wrong derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import (  # noqa: F401 - they register their handlers (and _hooks' rules)
    _np_arrange,
    _np_assorted,
    _np_calculus,
    _np_contract,
    _np_cumulative,
    _np_fft,
    _np_interp,
    _np_linalg,
    _np_linalg_extra,
    _np_nondiff,
    _np_poly,
    _np_reductions,
    _np_statistics,
    _np_values,
    _np_vectorize,
    _scipy,
    _scipy_stats,
)
from ._complex import complex_ufunc
from ._contract import MATMUL
from ._dispatch import register_protocols
from ._elementwise import ufunc_prim
from ._graph import Traced
from ._guards import refuse_store
from ._index import normalize
from ._np_common import FUNCTIONS, function_name, unsupported, write_out
from ._np_creation import CREATION
from ._prim import shape_of
from ._structure import INDEX_ADD
from ._tracer import TapeArray, guard_masks, operand

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
    if where is not True:
        raise unsupported(function_name(ufunc), " with where=")
    dtype = kwargs.pop("dtype", None)
    for k in _IGNORED_UFUNC_KWARGS:
        kwargs.pop(k, None)
    if kwargs:
        raise unsupported(function_name(ufunc), f" with {', '.join(kwargs)}=")
    args = [operand(a) for a in inputs]
    if dtype is not None:
        args = [np.asarray(a).astype(dtype) if not isinstance(a, Traced) else a.astype(dtype) for a in args]
    if ufunc is np.matmul:
        result = MATMUL(*args)
    elif ufunc is getattr(np, "vecdot", None):
        result = np.sum(np.multiply(np.conjugate(args[0]), args[1]), axis=-1)
    else:
        prim = complex_ufunc(ufunc, args) or ufunc_prim(ufunc)
        if prim is None:
            raise unsupported(function_name(ufunc))
        result = prim(*args)
    return write_out(result, out)


def _add_at(a: Any, indices: Any, b: Any = None) -> None:
    if not isinstance(a, TapeArray):
        refuse_store()
    k = normalize(indices, a.shape)
    guard_masks(k.traced_masks)
    base = TapeArray(a._tape, a._read())
    new = INDEX_ADD(base, operand(b), *k.arrays, template=k.template, adv_front=k.adv_front, unique=k.unique)
    a._commit(new._slot)


register_protocols(array_ufunc, array_function)
