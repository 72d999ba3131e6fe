"""Traced values inside NumPy object arrays: what NumPy's C code builds from lists holding traced values
(`np.sin([x, 2 * x])`, `np.array([x[:2], x[1:]], dtype=object)`; `np.array` and `np.asarray` of such a
list stack it on the tape instead, see `numpy.intercept`).

NumPy builds an array from a list by asking each element for an array (`__array__`) and copying what it
gets, without telling the elements what it is doing, so a list of traced values cannot become a traced
array on the way in. Instead each traced value answers with an object array of `Element`s (one per
entry, each a handle on one entry of the traced value; NumPy keeps a 0-d traced value itself): NumPy's
object arrays compute with their entries' Python operators and methods, which record on the tape as
usual, and the tape stacks an object array back into one traced array (`lift`) wherever one reaches it:
in a NumPy function or ufunc called on it together with a traced array, and as f's output.

An `Element` has no `dtype` (NumPy's `mean` would otherwise turn it into a number through
`dtype.type(...)`), and converting it to a number raises: that only happens when NumPy casts the object
array to floats, which would lose the derivative.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.graph import Traced
from ..data.messages import ALTERNATIVES, rule_limit
from ..data.sites import call_site, in_rule, user_location
from .guards import stored_into_numpy_array

__all__ = [
    "Element",
    "as_elements",
    "converted",
    "holds_traced",
    "lift",
    "lifts",
    "plain_array_refusal",
    "refuse_in_library",
    "unwrap",
]


class Element:
    """One entry of a traced value, held in a NumPy object array."""

    __slots__ = ("_index", "_value", "_whole")

    def __init__(self, whole: Any, index: int | None) -> None:
        self._whole = whole  # a traced array (a fixed version: a handle on its slot)
        self._index = index  # the flat index of the entry, None: the whole (0-d) array
        self._value: Any = None

    def traced(self) -> Any:
        """The entry as a 0-d traced array (made on first use)."""
        v = self._value
        if v is None:
            s = self._whole
            v = self._value = s if self._index is None else np.reshape(s, (-1,))[self._index]
        return v

    shape = ()
    ndim = 0
    size = 1

    def __repr__(self) -> str:
        return f"Element({self.traced()!r})"

    # -- NumPy protocols: as the traced value itself ----------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """The ufunc again, on the traced value (NumPy then hands it to the tape)."""
        return _wrap(getattr(ufunc, method)(*(unwrap(a) for a in inputs), **kwargs))

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        """The function again, on the traced value (NumPy then hands it to the tape)."""
        unwrapped = tuple(_unwrap_sequence(a) for a in args)
        return _wrap(func(*unwrapped, **{k: _unwrap_sequence(v) for k, v in kwargs.items()}))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.traced().__array__(dtype, copy)

    def __getattr__(self, name: str) -> Any:
        """NumPy's object loops call a method named after the ufunc (`np.sin` calls `.sin()`)."""
        ufunc = getattr(np, name, None)
        if isinstance(ufunc, np.ufunc) and not name.startswith("_"):
            return lambda *args: _wrap(ufunc(self.traced(), *(unwrap(a) for a in args)))
        raise AttributeError(f"'Element' (a traced value inside a NumPy object array) has no attribute {name!r}")

    # -- numbers: refused (a cast of the object array would lose the derivative) --------------------------
    def _refuse(self, what: str) -> Any:
        raise NotSupportedError(
            f"AutoTape: {what} of a traced value held in a NumPy object array (built by NumPy from traced "
            f"values) at {call_site(sys._getframe(2)).describe()}: NumPy does this when it casts the object array "
            "to numbers (astype(float), "
            "np.asarray(..., dtype=float), np.float64(...)), which would lose the derivative. Build the "
            f"array without a dtype, or with np.stack([...]). {ALTERNATIVES}"
        )

    def __float__(self) -> float:
        return self._refuse("float()")

    def __int__(self) -> int:
        return self._refuse("int()")

    def __complex__(self) -> complex:
        return self._refuse("complex()")

    def __index__(self) -> int:
        return self._refuse("an index")

    def __bool__(self) -> bool:
        return bool(self.traced())

    # -- arithmetic: on the traced value, results kept as elements -------------------------------------------
    def __add__(self, o: Any) -> Any:
        return _wrap(np.add(self.traced(), unwrap(o)))

    def __radd__(self, o: Any) -> Any:
        return _wrap(np.add(unwrap(o), self.traced()))

    def __sub__(self, o: Any) -> Any:
        return _wrap(np.subtract(self.traced(), unwrap(o)))

    def __rsub__(self, o: Any) -> Any:
        return _wrap(np.subtract(unwrap(o), self.traced()))

    def __mul__(self, o: Any) -> Any:
        return _wrap(np.multiply(self.traced(), unwrap(o)))

    def __rmul__(self, o: Any) -> Any:
        return _wrap(np.multiply(unwrap(o), self.traced()))

    def __truediv__(self, o: Any) -> Any:
        return _wrap(np.divide(self.traced(), unwrap(o)))

    def __rtruediv__(self, o: Any) -> Any:
        return _wrap(np.divide(unwrap(o), self.traced()))

    def __floordiv__(self, o: Any) -> Any:
        return _wrap(np.floor_divide(self.traced(), unwrap(o)))

    def __rfloordiv__(self, o: Any) -> Any:
        return _wrap(np.floor_divide(unwrap(o), self.traced()))

    def __mod__(self, o: Any) -> Any:
        return _wrap(np.remainder(self.traced(), unwrap(o)))

    def __rmod__(self, o: Any) -> Any:
        return _wrap(np.remainder(unwrap(o), self.traced()))

    def __pow__(self, o: Any) -> Any:
        return _wrap(self.traced() ** unwrap(o))

    def __rpow__(self, o: Any) -> Any:
        return _wrap(np.power(unwrap(o), self.traced()))

    def __matmul__(self, o: Any) -> Any:
        return _wrap(np.matmul(self.traced(), unwrap(o)))

    def __rmatmul__(self, o: Any) -> Any:
        return _wrap(np.matmul(unwrap(o), self.traced()))

    def __neg__(self) -> Any:
        return _wrap(np.negative(self.traced()))

    def __pos__(self) -> Any:
        return _wrap(np.positive(self.traced()))

    def __abs__(self) -> Any:
        return _wrap(np.absolute(self.traced()))

    def __lt__(self, o: Any) -> Any:
        return _wrap(np.less(self.traced(), unwrap(o)))

    def __le__(self, o: Any) -> Any:
        return _wrap(np.less_equal(self.traced(), unwrap(o)))

    def __gt__(self, o: Any) -> Any:
        return _wrap(np.greater(self.traced(), unwrap(o)))

    def __ge__(self, o: Any) -> Any:
        return _wrap(np.greater_equal(self.traced(), unwrap(o)))

    def __eq__(self, o: Any) -> Any:
        return _wrap(np.equal(self.traced(), unwrap(o)))

    def __ne__(self, o: Any) -> Any:
        return _wrap(np.not_equal(self.traced(), unwrap(o)))

    __hash__ = None  # type: ignore[assignment]


def _wrap(r: Any) -> Any:
    """A 0-d traced result as an element (it may land in an object array), anything else as it is."""
    if isinstance(r, Traced) and r.ndim == 0:
        return Element(r, None)
    return r


def _unwrap_sequence(a: Any) -> Any:
    """`unwrap`, also inside a list or tuple (the arrays of np.concatenate, ...)."""
    if isinstance(a, (list, tuple)) and not hasattr(a, "_fields"):
        return type(a)(_unwrap_sequence(v) for v in a)
    return unwrap(a)


def unwrap(a: Any) -> Any:
    """An element's traced value; an object array holding traced values as one traced array."""
    if isinstance(a, Element):
        return a.traced()
    if lifts(a):
        return lift(a)
    return a


def as_elements(t: Any) -> np.ndarray:
    """An object array of t's shape whose entries are elements of t (t: a traced array)."""
    handle = t.copy()  # this version of t: later writes into t make new versions, not this one
    out = np.empty(handle.shape, dtype=object)
    if handle.ndim == 0:
        out[()] = Element(handle, None)
        return out
    flat = out.reshape(-1)
    for i in range(flat.size):
        flat[i] = Element(handle, i)
    return out


def lifts(a: Any) -> bool:
    """Whether `a` is a NumPy object array holding traced values (or elements)."""
    return (
        isinstance(a, np.ndarray)
        and a.dtype.kind == "O"
        and any(isinstance(_entry_value(v), (Element, Traced)) for v in a.reshape(-1))
    )


def _entry_value(v: Any) -> Any:
    """An object array's entry, looking into 0-d object arrays (NumPy nests them: np.array([a, b]) of
    0-d object arrays holds the arrays)."""
    while isinstance(v, np.ndarray) and v.dtype.kind == "O" and v.ndim == 0:
        v = v[()]
    return v


def lift(a: np.ndarray) -> Any:
    """An object array of elements, traced values and numbers as one traced array: runs of elements that
    are a whole traced array in order take that array (reshaped), the rest are stacked one by one."""
    flat = [_entry_value(v) for v in a.reshape(-1)]
    pieces: list[Any] = []
    i = 0
    while i < len(flat):
        v = flat[i]
        if isinstance(v, Element) and v._index == 0:
            src = v._whole
            n = src.size
            run = flat[i : i + n]
            if len(run) == n and all(_entry(e, src, k) for k, e in enumerate(run)):
                pieces.append(np.reshape(src, (-1,)))
                i += n
                continue
        pieces.append(np.reshape(_scalar(v), (1,)))
        i += 1
    if not pieces:
        return np.zeros(a.shape)
    traced = [p for p in pieces if isinstance(p, Traced)]
    dtype = np.result_type(*(p.dtype for p in traced)) if traced else None
    if dtype is not None:
        pieces = [p if isinstance(p, Traced) else np.asarray(p, dtype=np.result_type(dtype, p.dtype)) for p in pieces]
    r = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    return np.reshape(r, a.shape)


def _entry(e: Any, whole: Any, k: int) -> bool:
    return isinstance(e, Element) and e._whole is whole and e._index == k


def _scalar(v: Any) -> Any:
    if isinstance(v, Element):
        return v.traced()
    if isinstance(v, Traced):
        if v.ndim != 0:
            raise NotSupportedError(
                "AutoTape: a NumPy object array holds a traced array as one of its entries; build arrays "
                "from traced arrays with np.stack([...]) or np.array([...]) of a list"
            )
        return v
    return np.asarray(v, dtype=np.result_type(v)) if not isinstance(v, np.ndarray) else v


def converted(t: Any, dtype: Any) -> np.ndarray:
    """What a traced array gives NumPy when NumPy asks it for a plain array (`__array__`).

    Decided by who asks, from the frames of the call: NumPy's or SciPy's Python code converting it is
    refused naming that function, unless it is a NumPy function building an array from a list or tuple
    holding it; a cast to numbers (`dtype=float`) and a store into a plain NumPy array (`out[:] = t`)
    are refused; otherwise NumPy's C code is building an array that holds it (from a list given to a
    ufunc, `dtype=object`), which gets an object array of elements that record.
    f asking for a plain array itself (`np.asarray(t)`) gets the traced array instead (see `numpy.intercept`).
    A constant on the tape (a buffer made in f that holds no traced value yet) gives its value."""
    tape = t._tape
    slot = t._read()
    if not tape.slots[slot].variable:
        return np.array(tape.values[slot], dtype=dtype)  # writable, as a conversion's result may be written
    if tape.slots[slot].dtype.kind in "biu" and not in_rule():
        # integers and booleans carry no derivative (an index, a mask into a plain array): their values
        # are guarded, so that a prepared call with others raises instead of reusing these
        t.observe("values", "integer or boolean values taken out of the tape (an index or a mask)", user_location())
        return np.array(tape.values[slot], dtype=dtype)
    site = call_site(sys._getframe(2))
    rule = in_rule()
    if rule is not None:
        raise rule_limit(rule, f"{site.function or 'numpy.asarray'} (a conversion to a plain NumPy array)")
    numbers = dtype is not None and np.dtype(dtype) != object
    if site.function is not None:
        if not numbers and site.function.startswith("numpy.") and _list_argument(site):
            return as_elements(t)
        raise _in_library(site)
    if numbers or stored_into_numpy_array():
        raise plain_array_refusal(site)
    return as_elements(t)


def plain_array_refusal(site: Any) -> NotSupportedError:
    """The error for turning a traced array into a plain NumPy array at `site` (a `data.sites.Site`)."""
    return NotSupportedError(
        f"AutoTape: {site.describe()} turns a traced array into a plain NumPy array (C code converting "
        "it to numbers, or a write into an array that f did not make with NumPy's creation functions), which "
        "would lose its derivative. Inside f, x is a traced array: arrays f makes with np.zeros, np.empty, "
        "np.ones, np.full, np.array or np.copy may hold traced values, and np.asarray(x) keeps x traced; "
        "an array made another way (a computation on constants, a.copy() of an array from outside f) "
        f"cannot: make it with np.array(a) first. {ALTERNATIVES}"
    )


def _list_argument(site: Any) -> bool:
    """Whether the library function at `site` was given a list or tuple holding traced values."""
    return any(isinstance(a, (list, tuple)) and _holds(a) for a in site.arguments)


def holds_traced(a: Any) -> bool:
    """Whether `a` is a traced array, an element of one, or a (nested) sequence or object array holding
    one."""
    return (
        isinstance(a, (Traced, Element))
        or (isinstance(a, (list, tuple)) and any(holds_traced(v) for v in a))
        or (isinstance(a, np.ndarray) and a.dtype.kind == "O" and lifts(a))
    )


_holds = holds_traced


def _in_library(site: Any) -> NotSupportedError:
    hint = ""
    if _list_argument(site):
        hint = " Pass it np.stack([...]) of the traced values rather than a list (NumPy makes a number of it)."
    return NotSupportedError(
        f"AutoTape cannot differentiate {site.function} (called with a traced array at {site.describe()}): "
        f"it converts its input into a plain NumPy array or number, which would lose the derivative.{hint} "
        f"{ALTERNATIVES}"
    )


def refuse_in_library(t: Any) -> None:
    """Raise when NumPy or SciPy code (not the user's) is turning a traced value into a Python number."""
    site = call_site(sys._getframe(2))
    if site.function is not None:
        raise _in_library(site)
