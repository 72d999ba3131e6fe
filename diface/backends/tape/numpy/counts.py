"""What the tape records for NumPy's counting functions: histogram, histogram_bin_edges, bincount, unique
(and the array API's unique_values, unique_counts, unique_inverse, unique_all), digitize.

Their integer results (counts, bin numbers, indices) carry no derivative: prepared calls recompute them
with NumPy's own function, and where one fixes a shape (the number of unique values, the length of a
bincount) a guard makes a replay that would see another shape raise `TapeMismatchError`. What is
differentiable is recorded as such: the bin edges of a histogram computed from the data's range are
linspace(min, max) (derivatives flow to the smallest and the largest element), a weighted histogram or
bincount is linear in its weights (the weights summed per bin), a density divides by the bin widths, and
the values np.unique returns are a gather of the input at the indices of the values it keeps.
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

import numpy as np

from ..data.graph import Traced
from ..data.index import normalize
from ..data.sites import user_location
from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..prims.structure import INDEX_ADD
from ..tracing.tracer import TapeArray, operand
from .common import NO, axis_of, dtype_of, implements, literal_like, ndim_of, reshape_of, unsupported

__all__: list[str] = []


def _observed_int(v: Any, what: str) -> int:
    """A traced integer the tape's shapes depend on, as a number (a guard: a replay that sees another one
    raises `TapeMismatchError`), or a plain one as it is."""
    if isinstance(v, TapeArray):
        return int(v.observe("int", what, user_location()))
    return operator.index(np.asarray(v).item())


# -- digitize -----------------------------------------------------------------------------------------------------
_DIGITIZE = NonDiff(np.digitize)


@implements(np.digitize)
def _digitize(x: Any, bins: Any, right: bool = False) -> Any:
    return _DIGITIZE(operand(x), operand(bins), right=bool(right))


# -- histogram ----------------------------------------------------------------------------------------------------
def _numpy_bins(edges: Any, lo: Any, hi: Any, n: int, has_range: bool) -> dict:
    """The bins= and range= arguments as the user gave them to NumPy: `n` bins (and the range), or edges."""
    if not n:
        return {"bins": edges}
    return {"bins": n, "range": (lo, hi) if has_range else None}


def _counts(a: Any, edges: Any, lo: Any, hi: Any, n: int = 0, has_range: bool = False) -> Any:
    """NumPy's histogram counts."""
    return np.histogram(a, **_numpy_bins(edges, lo, hi, n, has_range))[0]


def _bin_index(a: Any, edges: Any, lo: Any, hi: Any, n: int = 0, has_range: bool = False) -> Any:
    """The bin of each element as NumPy's histogram assigns it (edges[k] <= a < edges[k + 1], the last bin
    closed), and the number of bins for the elements outside them (and NaN)."""
    e = np.histogram_bin_edges(a, **_numpy_bins(edges, lo, hi, n, has_range))
    flat = np.ravel(a)
    nbins = len(e) - 1
    k = np.searchsorted(e, flat, side="right") - 1
    k[flat == e[-1]] = nbins - 1
    k[(k < 0) | (k >= nbins)] = nbins
    return k


_COUNTS = NonDiff(_counts, "histogram")
_BIN_INDEX = NonDiff(_bin_index, "histogram")


def _edges(a: Any, bins: Any, range: Any) -> tuple[Any, tuple, dict]:
    """NumPy's bin edges, traced where they depend on traced values (the range: given, or the data's min
    and max), with the inputs and parameters of the nodes counting into them."""
    if isinstance(bins, str):
        raise unsupported("numpy.histogram", f" with bins={bins!r} (the number of bins would depend on the values)")
    if ndim_of(operand(bins)) == 1:
        edges = operand(bins)
        if not isinstance(edges, Traced):
            edges = np.asarray(edges)
            if np.any(edges[:-1] > edges[1:]):
                raise ValueError("`bins` must increase monotonically, when an array")
        return edges, (edges, 0.0, 0.0), {"n": 0, "has_range": False}
    n = operator.index(bins)
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    params = {"n": n, "has_range": range is not None}
    if range is not None:
        lo, hi = (operand(v) for v in range)
    elif np.prod(shape_of(a)) == 0:
        lo, hi = 0.0, 1.0
    else:
        lo, hi = np.min(a), np.max(a)
    inputs = (0.0, lo, hi)
    if not isinstance(lo, Traced) and not isinstance(hi, Traced):  # NumPy's own edges (from a's dtype)
        edges = np.histogram_bin_edges(np.zeros(0, dtype_of(a)), n, (lo, hi) if range is not None else None)
        return (literal_like(a, edges) if isinstance(a, TapeArray) else edges), inputs, params
    if range is not None and np.greater(lo, hi):  # a branch on traced values: a guard
        raise ValueError("max must be larger than min in range parameter.")
    kind = np.result_type(*(v.dtype if isinstance(v, Traced) else v for v in (lo, hi, a)))
    kind = kind if np.issubdtype(kind, np.inexact) else np.dtype(np.float64)
    same = np.equal(lo, hi)  # NumPy widens an empty range by 0.5 on each side
    first = np.where(same, np.subtract(lo, 0.5), lo)
    last = np.where(same, np.add(hi, 0.5), hi)
    return np.linspace(first, last, n + 1, endpoint=True, dtype=kind), inputs, params


@implements(np.histogram_bin_edges)
def _histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    return _edges(operand(a), bins, range)[0]


@implements(np.histogram)
def _histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> Any:
    """(counts, edges). Counts: NumPy's, recomputed on replay (no derivative); with weights, the weights
    summed per bin (linear in them); with density, divided by the total and the bin widths."""
    a = operand(a)
    edges, inputs, params = _edges(a, bins, range)
    nbins = shape_of(edges)[0] - 1
    if weights is None:
        counts = _COUNTS(a, *inputs, **params)
    else:
        w = operand(weights)
        if shape_of(w) != shape_of(a):
            raise ValueError("weights should have the same shape as a.")
        index = _BIN_INDEX(a, *inputs, **params)
        counts = _add_into(nbins + 1, reshape_of(w, (-1,)), index, dtype_of(w))[:nbins]
    if density:
        widths = np.diff(edges).astype(np.float64)
        counts = np.divide(np.divide(counts, widths), np.sum(counts))
    return counts, edges


def _add_into(n: int, w: Any, index: Any, dtype: Any) -> Any:
    """zeros(n) with w[i] added at index[i] (repeated indices accumulate): linear in w."""
    k = normalize((index,), (n,))
    return INDEX_ADD(np.zeros(n, dtype=dtype), w, *k.arrays, template=k.template, adv_front=0, unique=k.unique)


# -- bincount -----------------------------------------------------------------------------------------------------
_BINCOUNT = NonDiff(np.bincount)
_BINCOUNT_LENGTH = NonDiff(lambda x, minlength: np.asarray(np.bincount(x, minlength=minlength).shape[0]), "bincount")


@implements(np.bincount)
def _bincount(x: Any, weights: Any = None, minlength: Any = 0) -> Any:
    """Counts (no derivative), or the weights summed per value of x (linear in the weights). The length
    depends on max(x): a guard where x is traced."""
    x = operand(x)
    minlength = operator.index(minlength)
    n = _observed_int(_BINCOUNT_LENGTH(x, minlength=minlength), "the length of numpy.bincount (max(x) + 1)")
    if weights is None:
        return _BINCOUNT(x, minlength=n)
    w = operand(weights)
    if shape_of(w) != shape_of(x):
        raise ValueError("The weights and list don't have the same length.")
    w = w.astype(np.float64) if dtype_of(w) != np.float64 else w  # NumPy sums the weights as doubles
    return _add_into(n, w, x if isinstance(x, Traced) else np.asarray(x, dtype=np.intp), np.float64)


# -- unique -------------------------------------------------------------------------------------------------------
def _unique_part(a: Any, which: int = 0, flags: tuple = (), kwargs: tuple = ()) -> Any:
    """Output `which` of NumPy's unique with these flags (return_index, return_inverse, return_counts),
    and for which = -1 the indices whose elements are the values NumPy returns, in its order."""
    ri, rv, rc = flags
    kw = dict(kwargs)
    result = np.unique(a, return_index=ri, return_inverse=rv, return_counts=rc, **kw)
    result = result if isinstance(result, tuple) else (result,)
    if which >= 0:
        return result[which]
    if kw.get("axis") is not None:
        return np.unique(a, return_index=True, **kw)[1]
    values, flat = result[0], np.ravel(a)
    order = np.argsort(flat, kind="stable")
    return order[np.searchsorted(flat[order], values)]  # the first element equal to each value


_UNIQUE = NonDiff(_unique_part, "unique")


def _unique_count(a: Any, flags: tuple = (), kwargs: tuple = ()) -> Any:
    """How many values NumPy's unique returns."""
    return np.asarray(_unique_part(a, 0, flags, kwargs).shape[dict(kwargs).get("axis") or 0])


_UNIQUE_COUNT = NonDiff(_unique_count, "unique")


def _unique(
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: Any = None,
    *,
    equal_nan: bool = True,
    sorted: Any = NO,
) -> Any:
    a = operand(ar)
    flags = (bool(return_index), bool(return_inverse), bool(return_counts))
    kw: dict = {"equal_nan": bool(equal_nan)}
    if axis is not None:
        kw["axis"] = axis_of(axis, ndim_of(a))
    if sorted is not NO:
        kw["sorted"] = bool(sorted)
    kwargs = tuple(kw.items())
    if not isinstance(a, TapeArray):  # a constant (np.unique reached another way than the protocol)
        unique: Any = np.unique
        return unique(a, *flags, **kw)
    _observed_int(_UNIQUE_COUNT(a, flags=flags, kwargs=kwargs), "the number of unique values (numpy.unique)")
    first = _UNIQUE(a, which=-1, flags=flags, kwargs=kwargs)
    if axis is None:
        values = reshape_of(a, (-1,))[first]
    else:
        ax = kw["axis"]
        values = a[(slice(None),) * ax + (first,)]
    out = [values]
    for k, flag in enumerate(flags):
        if flag:
            out.append(_UNIQUE(a, which=1 + sum(flags[:k]), flags=flags, kwargs=kwargs))
    return out[0] if len(out) == 1 else tuple(out)


implements(np.unique)(_unique)


#: NumPy >= 2.3: unique_values leaves its values unsorted (np.unique's sorted=False)
_UNSORTED = {"sorted": False} if "sorted" in inspect.signature(np.unique).parameters else {}


def _array_api_unique(name: str, flags: tuple, named: bool) -> None:
    """np.unique_values, unique_counts, unique_inverse, unique_all (NumPy 2): `np.unique` with NumPy's
    flags, in NumPy's result type (a named tuple)."""
    func = getattr(np, name, None)
    if func is None:
        return

    def handler(x: Any) -> Any:
        if not named:
            return _unique(x, *flags, equal_nan=False, **_UNSORTED)
        return type(func(np.zeros(1)))(*_unique(x, *flags, equal_nan=False))

    implements(func)(handler)


_array_api_unique("unique_values", (False, False, False), False)
_array_api_unique("unique_counts", (False, False, True), True)
_array_api_unique("unique_inverse", (False, True, False), True)
_array_api_unique("unique_all", (True, True, True), True)
