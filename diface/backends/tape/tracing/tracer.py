"""`TapeArray`: the traced array `f` receives while AutoTape records it.

NumPy hands every operation on it to the tape: ufuncs through `__array_ufunc__`, NumPy functions
through `__array_function__`, Python operators and methods here. Each computes its value at once and
appends a node. Writing into a traced array makes a new version of it (a new slot); views keep NumPy's
semantics: a view made by basic indexing, reshape or transpose reads the current version of its base, and
writing into the view writes into the base. Converting a traced array to a plain array or a number
(`np.asarray`, `float`, `bool`) either raises or records a guard (see `prims.guards`).
"""

from __future__ import annotations

import builtins
import operator
import sys
import weakref
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

from ...._errors import NotSupportedError
from ..data.dispatch import array_function, array_ufunc
from ..data.graph import Tape, Traced
from ..data.index import normalize
from ..data.sites import library_of
from ..prims.guards import (
    GUARD,
    formatting,
    refuse_escape,
    refuse_store,
    stored_into_numpy_array,
    user_location,
    values_key,
)
from ..prims.objects import Element, converted, holds_traced, lift, lifts, refuse_in_library
from ..prims.structure import ASTYPE, BROADCAST_TO, GETITEM, RESHAPE, SETITEM, TRANSPOSE
from .array_methods import Operators

__all__ = ["MissingAttribute", "TapeArray", "constant", "holds_traced", "operand", "refuse_inner", "slot_of"]

# the values NumPy's functions take for these arguments (as numpy.ndarray's methods declare them)
_OrderACF = Literal["A", "C", "F"]
_OrderKACF = Literal["K", "A", "C", "F"]
_TakeMode = Literal["raise", "wrap", "clip"]


class TapeArray(Traced, Operators):
    """An array being recorded on a tape: behaves like a NumPy array inside `f`."""

    __slots__ = ("__weakref__", "_parent", "_readonly", "_root", "_seen", "_slot", "_tape", "_version", "_view")
    __array_priority__ = 1000.0
    __pandas_priority__ = 5000  # pandas defers its arithmetic with a traced array to the traced array
    __hash__ = None

    def __init__(self, tape: Tape, slot: int) -> None:
        self._tape = tape
        self._slot = slot
        self._parent: TapeArray | None = None
        self._view: tuple[Any, dict] | None = None  # (prim, params) that made this view of _parent
        self._root: TapeArray | None = None  # the base array whose writes views follow (None: this one,
        # without a reference cycle, so that a traced array dies when f lets go of it)
        self._seen = 0
        self._version = 0
        self._readonly = False
        holders = tape.holders
        if holders is not None:  # a lean recording lets go of the values no traced array holds
            holders.append(weakref.ref(self))

    def _wrap(self, slot: int) -> TapeArray:
        return TapeArray(self._tape, slot)

    # -- versions and views -------------------------------------------------------------------------
    def _read(self) -> int:
        """The slot holding this array's current value (re-reading a view whose base was written)."""
        parent = self._parent
        if parent is None:
            return self._slot
        version = self._base()._version
        if self._seen != version:
            prim, params = cast("tuple[Any, dict]", self._view)  # set with _parent (`_link`)
            fresh = prim(TapeArray(self._tape, parent._read()), **params)
            self._slot = fresh._slot
            self._seen = version
        return self._slot

    def _base(self) -> TapeArray:
        """The array whose versions views of this one follow (itself, or the base of its views)."""
        return self if self._root is None else self._root

    def _link(self, parent: TapeArray, prim: Any, params: dict) -> TapeArray:
        """Make this array a view of `parent` made by `prim` (NumPy would return a view)."""
        self._parent = parent
        self._view = (prim, params)
        self._root = parent._base()
        self._seen = self._base()._version
        self._readonly = parent._readonly
        return self

    def _commit(self, slot: int) -> None:
        """This array now holds `slot`; a view writes it through into its base."""
        self._slot = slot
        parent = self._parent
        if parent is None:
            self._version += 1
            return
        prim, params = cast("tuple[Any, dict]", self._view)  # set with _parent (`_link`)
        new = TapeArray(self._tape, slot)
        if prim is GETITEM:
            base = TapeArray(self._tape, parent._read())
            updated = SETITEM(base, new, template=params["template"], adv_front=0, unique=True)
        elif prim is RESHAPE:
            updated = RESHAPE(new, shape=parent.shape)
        elif prim is TRANSPOSE:
            inverse = tuple(int(k) for k in np.argsort(params["axes"]))
            updated = TRANSPOSE(new, axes=inverse)
        else:  # pragma: no cover - only the three view primitives link
            raise AssertionError(prim)
        parent._commit(updated._slot)
        self._seen = self._base()._version

    def _assign(self, key: Any, value: Any) -> None:
        """`self[key] = value`."""
        if self._readonly:
            raise ValueError("assignment destination is read-only")
        tape = self._tape
        shape, dtype = self.shape, self.dtype
        k = normalize(key, shape)
        if any(isinstance(a, Traced) and a.dtype != np.bool_ for a in k.arrays):
            raise NotSupportedError(
                f"AutoTape: assigning through traced integer index arrays (a[idx] = v with idx computed from "
                f"x or a Constant, at {user_location()}) is not supported; build the result with np.where or "
                "np.concatenate"
            )
        if not k.unique:
            raise NotSupportedError(
                f"AutoTape: an assignment a[idx] = v whose index arrays select an element twice (at "
                f"{user_location()}) is not supported (NumPy keeps the last write); make the indices distinct"
            )
        guard_masks(k.traced_masks)
        value = operand(value)
        refuse_inner(value, tape)
        if k.covers_all:
            new = value
            if np.shape(value) != shape:
                new = BROADCAST_TO(new, shape=shape)
            if _dtype(new) != dtype:
                new = ASTYPE(new, dtype=dtype)
            self._commit(slot_of(tape, new))
            return
        base = TapeArray(tape, self._read())
        new = SETITEM(base, value, *k.arrays, template=k.template, adv_front=k.adv_front, unique=True)
        self._commit(new._slot)

    # -- what the user's code sees ------------------------------------------------------------------
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        """`numpy.ndarray` for the user's code (and the pure-Python libraries it calls), so that
        `isinstance(x, np.ndarray)` takes the array path a library has for NumPy arrays; the tape's own
        code, NumPy, SciPy and compiled packages see `TapeArray` (`type(x)` is always `TapeArray`)."""
        frame = sys._getframe(1)
        seen = _CLASS_SEEN_FROM.get(frame.f_code.co_filename)
        if seen is None:  # (isinstance asks on every check that fails by type: the tape's own, mostly)
            seen = _CLASS_SEEN_FROM[frame.f_code.co_filename] = np.ndarray if library_of(frame) is None else TapeArray
        return seen

    # -- array attributes ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._tape.slots[self._slot].shape

    @property
    def dtype(self) -> np.dtype:
        return self._tape.slots[self._slot].dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def strides(self) -> tuple:
        """The strides of a C-contiguous array of this shape (what `as_strided` reads them against)."""
        strides, step = [], self.itemsize
        for n in reversed(self.shape):
            strides.append(step)
            step *= max(n, 1)
        return tuple(reversed(strides))

    @property
    def T(self) -> TapeArray:
        return cast(TapeArray, np.transpose(self))  # NumPy hands np.transpose to the tape: a TapeArray

    @property
    def mT(self) -> TapeArray:
        return cast(TapeArray, np.swapaxes(self, -1, -2))

    @property
    def real(self) -> TapeArray:
        return np.real(self) if self.dtype.kind == "c" else self

    @property
    def imag(self) -> TapeArray:
        return cast(TapeArray, np.imag(self) if self.dtype.kind == "c" else np.zeros_like(self))

    def _value(self) -> Any:
        """The value seen while recording (for display and guards: no derivative flows through it)."""
        return self._tape.values[self._read()]

    def __repr__(self) -> str:
        return f"TapeArray({np.array2string(np.asarray(self._value()), separator=', ')}, dtype={self.dtype})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self._value()[()] if self.ndim == 0 else self._value(), spec)

    # -- NumPy protocols ----------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        if not all(issubclass(t, (TapeArray, np.ndarray, np.generic)) for t in types):
            return NotImplemented
        return array_function(func, args, kwargs, self)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """NumPy asks for a plain array: an object array of this value's entries when NumPy is building an
        array from a list holding it (see `prims.objects`), else an error naming the call."""
        return converted(self, dtype)

    # -- conversions to Python: guards ----------------------------------------------------------------
    def _take(self, kind: str, what: str, where: str | None = None, escape: bool = False) -> Any:
        """A Python bool, float or int out of this size-1 value, recorded as a guard (see `prims.guards`).
        `escape`: the number would carry the derivative (float() of a value that depends on x), so taking
        it is refused, unless printf-style formatting asks for it (to show it)."""
        if self.size != 1:
            if kind == "bool":
                raise ValueError(
                    "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()"
                )
            raise TypeError("only length-1 arrays can be converted to Python scalars")
        value = self._value()
        outcome = bool(value) if kind == "bool" else float(value) if kind == "float" else operator.index(value.item())
        if escape and self._tape.slots[self._read()].active:
            if formatting():
                return outcome  # shown, not computed with: no guard either
            refuse_escape(what, where or user_location())
        self._guard(kind, outcome, what, where)
        return outcome

    def _guard(self, kind: str, outcome: Any, what: str, where: str | None) -> None:
        """Record that a replay must see `outcome` again (nothing to check if this value is fixed)."""
        slot = self._read()
        if self._tape.slots[slot].variable:
            where = where or user_location()
            self._tape.add_guard(GUARD, slot, {"kind": kind, "expected": outcome, "what": what, "where": where})

    def observe(self, kind: str, what: str, where: str) -> Any:
        if kind in ("count", "equality", "check", "values"):
            outcome = values_key(self._value()) if kind == "values" else int(np.count_nonzero(self._value()))
            self._guard(kind, outcome, what, where)
            return outcome
        return self._take(kind, what, where)  # f's own conversion was judged when it was recorded

    def __bool__(self) -> bool:
        return self._take("bool", "a branch on a traced value (bool())")

    def __float__(self) -> float:
        """A number taken out of the tape (a guard; see `_take`), whatever f calls to take it: float(t),
        np.float64(t) and a cast of an object array holding t reach here alike. Refused where the value
        depends on x (its derivative would be lost), where NumPy or SciPy code makes the number, or where
        f writes t into a plain NumPy array."""
        if stored_into_numpy_array():
            refuse_store()
        refuse_in_library(self)  # NumPy or SciPy making a number of it (np.float64(t) inside np.mean, ...)
        return self._take("float", "float() (a Python number) of a traced value", escape=True)

    def __int__(self) -> int:
        """An integer taken out of the tape: a step function of the value, whose derivative is zero (a
        guard keeps prepared calls on the recorded integer)."""
        if stored_into_numpy_array():
            refuse_store()
        if self.dtype.kind in "fc":  # the guard is on the integer: a replay may change the fraction
            return int(cast(TapeArray, np.trunc(self))._take("float", "int() of a traced value"))
        return self._take("int", "int() of a traced value")

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":
            raise TypeError("only integer arrays can be converted to an index")
        return self._take("int", "a traced integer used as a Python index")

    def __complex__(self) -> complex:
        refuse_in_library(self)
        return complex(self._take("float", "complex() of a traced value", escape=True))

    def __floor__(self) -> int:
        return int(np.floor(self))

    def __ceil__(self) -> int:
        return int(np.ceil(self))

    def __trunc__(self) -> int:
        return int(np.trunc(self))

    def __round__(self, ndigits: int | None = None) -> Any:
        if ndigits is None:
            return int(np.round(self))
        return np.round(self, ndigits)

    def item(self, *args: Any) -> Any:
        """The element as a 0-d traced array for floating-point values (the derivative flows through it
        as through x[i]); integers and booleans as Python numbers (guards)."""
        a = self[args] if args else self
        if a.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        if a.dtype == np.bool_:
            return a._take("bool", "item() of a traced value")
        if a.dtype.kind in "fc":
            return np.reshape(a, ()).copy()
        return a._take("int", "item() of a traced value")

    def tolist(self) -> Any:
        """Nested lists of `item()`s: 0-d traced arrays for floating-point values."""
        if self.ndim == 0:
            return self.item()
        return [a.tolist() for a in self]

    def __getattr__(self, name: str) -> Any:
        """NumPy's object loops call a method named after the ufunc (`np.sin` on an object array holding
        traced values calls `.sin()` on each): the ufunc itself."""
        ufunc = getattr(np, name, None)
        if isinstance(ufunc, np.ufunc) and not name.startswith("_"):
            return lambda *args: ufunc(self, *args)
        if name.startswith("__"):
            raise AttributeError(f"'TapeArray' object has no attribute {name!r}")
        raise MissingAttribute(
            f"AutoTape: a traced array has no attribute {name!r} (asked for at {user_location()}). Inside f, "
            "x and what is computed from it are traced arrays standing in for NumPy arrays: they have NumPy's "
            "array attributes and methods, not those of other types (a pandas Series' .iloc, .values, an "
            "array's .ctypes or .data). Pass NumPy arrays to the code being differentiated."
        )

    @property
    def flags(self) -> Any:
        """What NumPy's flags say of a C-contiguous array that owns its data (a traced array has no
        memory layout of its own)."""
        return _Flags(not self._readonly, self.ndim <= 1)

    @property
    def base(self) -> None:
        return None

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        np.put(self, indices, values, mode=mode)  # type: ignore[arg-type]

    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None) -> Any:
        return np.searchsorted(self, v, side=side, sorter=sorter)  # type: ignore[call-overload]

    def compress(self, condition: Any, axis: Any = None, out: Any = None) -> Any:
        return np.compress(condition, self, axis=axis, out=out)

    def ptp(self, axis: Any = None, keepdims: bool = False) -> Any:
        return np.ptp(self, axis=axis, keepdims=keepdims)

    # -- containers -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Any:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def __contains__(self, value: Any) -> bool:
        return bool(np.any(np.equal(self, value)))

    def __getitem__(self, key: Any) -> TapeArray:
        k = normalize(key, self.shape)
        guard_masks(k.traced_masks)
        params = {"template": k.template, "adv_front": k.adv_front, "unique": k.unique}
        r = GETITEM(self, *k.arrays, **params)
        return r._link(self, GETITEM, params) if k.basic_view else r

    def __setitem__(self, key: Any, value: Any) -> None:
        self._assign(key, value)

    def __copy__(self) -> TapeArray:
        return self.copy()

    def __deepcopy__(self, memo: dict) -> TapeArray:
        return self.copy()

    # -- methods ------------------------------------------------------------------------------------------
    def copy(self, order: str = "C") -> TapeArray:
        return TapeArray(self._tape, self._read())  # versions are immutable: a new handle is a copy

    def astype(
        self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True
    ) -> TapeArray:
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self.copy() if copy else self
        if self.dtype.kind == "c" and dtype.kind != "c":
            # NumPy drops the imaginary part (with a ComplexWarning): the same real part, differentiated
            return np.real(self).astype(dtype, copy=False)
        return ASTYPE(self, dtype=dtype)

    def view(self, dtype: Any = None, type: Any = None) -> TapeArray:
        """A view of the same values (`a.view(np.ndarray)`); reinterpreting the bytes is refused."""
        if isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray):
            dtype = None  # a.view(np.ndarray): the same values
        if dtype is not None and np.dtype(dtype) != self.dtype:
            raise NotSupportedError(
                f"AutoTape does not know how to differentiate numpy.ndarray.view with another dtype (a "
                f"reinterpretation of the bytes, at {user_location()})"
            )
        return cast(TapeArray, np.reshape(self, self.shape))  # a view of self (writes go through), as NumPy's

    def fill(self, value: Any) -> None:
        self._assign(Ellipsis, value)

    def reshape(self, *shape: Any, order: _OrderACF = "C") -> Any:
        return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def transpose(self, *axes: Any) -> Any:
        given: Any = axes
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            given = axes[0]
        return np.transpose(self, given or None)

    def swapaxes(self, a: int, b: int) -> Any:
        return np.swapaxes(self, a, b)

    def squeeze(self, axis: Any = None) -> Any:
        return np.squeeze(self, axis)

    def ravel(self, order: _OrderKACF = "C") -> Any:
        return np.ravel(self, order)

    def flatten(self, order: _OrderKACF = "C") -> Any:
        return np.ravel(self, order).copy()

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        return np.max(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        return np.min(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def std(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        return np.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def var(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        return np.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        return np.cumprod(self, axis=axis, dtype=dtype, out=out)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return np.all(self, axis=axis, out=out, keepdims=keepdims)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return np.any(self, axis=axis, out=out, keepdims=keepdims)

    def argmax(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return np.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return np.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def argsort(self, axis: int = -1, kind: Any = None, order: Any = None) -> Any:
        return np.argsort(self, axis=axis, kind=kind, order=order)

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None) -> None:
        self._assign(Ellipsis, np.sort(self, axis=axis, kind=kind, order=order))

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kw: Any) -> Any:
        return np.clip(self, min, max, out=out, **kw)

    def dot(self, b: Any, out: Any = None) -> Any:
        return np.dot(self, b, out=out)

    def nonzero(self) -> Any:
        return np.nonzero(self)

    def repeat(self, repeats: Any, axis: Any = None) -> Any:
        return np.repeat(self, repeats, axis=axis)

    def take(self, indices: Any, axis: Any = None, out: Any = None, mode: _TakeMode = "raise") -> Any:
        return np.take(self, indices, axis=axis, out=out, mode=mode)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        return np.round(self, decimals, out)

    def conj(self) -> Any:
        return np.conjugate(self)

    conjugate = conj


#: source file -> the class a traced array reports to code of that file (`TapeArray.__class__`)
_CLASS_SEEN_FROM: dict[str, type] = {}


class MissingAttribute(NotSupportedError, AttributeError):
    """An attribute a traced array does not have: an AttributeError (so `hasattr` is False) that says
    why, in diface's terms."""


@dataclass(frozen=True)
class _Flags:
    writeable: bool
    f_contiguous: bool
    c_contiguous: bool = True
    contiguous: bool = True
    owndata: bool = True
    aligned: bool = True
    writebackifcopy: bool = False

    def __getitem__(self, name: str) -> bool:
        key = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous", "C": "c_contiguous", "F": "f_contiguous"}
        return bool(getattr(self, key.get(name.upper(), name.lower())))


def _dtype(a: Any) -> np.dtype:
    return a.dtype if hasattr(a, "dtype") else np.result_type(a)


def constant(a: Any) -> Any:
    """`a` as a plain value where it is a traced array holding a constant (a buffer f made that holds
    no traced value yet), else `a` itself: for the handlers that take a differentiated argument only as
    a constant."""
    if isinstance(a, Traced):
        slot = a._read()
        if not a._tape.slots[slot].variable:
            return a._tape.values[slot]
    return a


def refuse_inner(value: Any, tape: Tape) -> None:
    """Refuse writing a value of a callback's sub-tape (`scipy.callbacks`) into an array of an enclosing
    recording: the array would hold a value that exists only while the callback runs."""
    if isinstance(value, Traced) and value._tape.depth > tape.depth:
        raise NotSupportedError(
            f"AutoTape: a function SciPy calls back writes a value computed from its own argument into an "
            f"array of f's (at {user_location()}); keep such values inside the callback and return them"
        )


def slot_of(tape: Tape, a: Any) -> int:
    """The slot of a traced array, or a new literal slot for a plain value."""
    return a._read() if isinstance(a, Traced) else tape.literal(a)


def operand(a: Any) -> Any:
    """An argument as the tape takes it: traced arrays as they are, numbers as numbers, sequences and
    object arrays holding traced values stacked, anything else as a NumPy array."""
    if isinstance(a, Traced) or (isinstance(a, (int, float, bool, complex)) and not isinstance(a, np.generic)):
        return a
    if isinstance(a, np.ndarray):
        if a.dtype.kind == "O":
            if lifts(a):
                return lift(a)
            numbers = np.array(a.tolist())  # an object array of numbers (from NumPy's object loops)
            return numbers if numbers.dtype.kind in "biuf" else a
        return a
    if isinstance(a, (list, tuple)) and _holds_traced(a):
        return np.stack([operand(v) for v in a])
    if isinstance(a, Element):
        return a.traced()
    if type(a).__module__.partition(".")[0] == "pandas":
        raise NotSupportedError(
            f"AutoTape: a traced value meets a pandas {type(a).__name__} at {user_location()}; the tape computes "
            "with NumPy arrays and would lose what the pandas object means (its index and alignment). Pass "
            "NumPy arrays (series.to_numpy()) to the code being differentiated, or differentiate it with "
            "di.AutoFiniteDiff()."
        )
    return np.asarray(a)


def _holds_traced(seq: Any) -> bool:
    return any(holds_traced(v) for v in seq)


def guard_masks(masks: Any) -> None:
    """A traced boolean mask fixes how many elements it selects: guard the count."""
    for mask in masks:
        mask.observe("count", "the number of elements a traced mask selects", user_location())
