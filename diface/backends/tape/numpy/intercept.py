"""NumPy's conversions and creations, and the `math` module, while f is recorded.

NumPy's conversions (`array`, `asarray`, `asanyarray`, `ascontiguousarray`, `asfortranarray`) and its
creation functions (`zeros`, `empty`, `ones`, `full`, `eye`, `identity`, the `*_like` family, `copy`)
are C functions or Python functions that never ask a traced array what to do: left alone, a conversion
of a traced array asks it for a plain array (which would lose the derivative) and a buffer made with
`np.zeros` is a plain array that cannot hold traced values. The `math` module's functions make a Python
number of their argument. So while AutoTape records f, each of them is a forwarder, both as the
attribute of its module and wherever a module imported it by name (`from numpy import asarray, zeros`,
`from math import exp`, found by scanning the modules imported so far, outside NumPy, SciPy, autograd
and diface). A forwarder runs the original unless the calling thread is recording and the caller is the
user's code (f, or a pure-Python library it calls; see `data.sites.library_of`):

- a conversion of a traced array, or of a list or tuple holding traced values, gives a traced array (the
  same array where NumPy would return its argument; a copy for `np.array`; a float `dtype=` a recorded
  cast; an integer or boolean `dtype=` a cast without derivative);
- a creation of a floating-point array gives a *buffer*: a traced array holding a constant, which f may
  then write traced values into (`Y[i] = v`, `np.add.at`, `out=`, views); until it does, every
  operation on it is folded into a constant, and C code asking it for a plain array gets its value;
- a `math` function of a traced value is the NumPy ufunc of it (a 0-d traced array: the derivative
  flows); of anything else it is the `math` function itself.

Calls from NumPy's, SciPy's or a compiled package's own code, calls with `like=` or `dtype=object`, and
calls from any other thread run the original functions unchanged. Everything is put back when the last
recording in progress ends, also when f raises.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import numpy as np

from ..data.graph import Tape, Traced, current_tape, recording_stack
from ..data.sites import compiled, library_of
from ..tracing.tracer import TapeArray
from .common import FUNCTIONS
from .creation import CREATION, array_dtype, built
from .hooks import traced_argument

__all__ = ["current_tape", "recording"]

_LOCK = threading.Lock()
_ACTIVE = [0]  # recordings in progress (any thread)


def _user_caller() -> bool:
    """Whether the caller of the forwarder (two frames up) is the user's code, autograd included (its
    numpy wrappers copy their input with `np.array`)."""
    library = library_of(sys._getframe(2))
    return library is None or library == "autograd"


# -- conversions ------------------------------------------------------------------------------------------
def _converter(name: str, original: Callable) -> Callable:
    ensure_1d = name in ("ascontiguousarray", "asfortranarray")
    copies = name == "array"

    @functools.wraps(original)
    def convert(*args: Any, **kwargs: Any) -> Any:
        tape = current_tape()
        if tape is None or not args or "like" in kwargs:
            return original(*args, **kwargs)
        a = args[0]
        traced = isinstance(a, Traced)
        if not (traced or ((type(a) is list or type(a) is tuple) and traced_argument(a))):
            if copies and _user_caller():
                return _buffer(tape, original(*args, **kwargs), a)
            return original(*args, **kwargs)
        if not _user_caller() or _is_object(array_dtype(args, kwargs)):
            return original(*args, **kwargs)
        if traced and not copies and kwargs.get("copy") is not True:
            dtype = array_dtype(args, kwargs)
            r = a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
        else:
            r = built(args, kwargs)
        if ensure_1d and r.ndim == 0:
            r = np.reshape(r, (1,))
        return r

    return convert


def _is_object(dtype: Any) -> bool:
    try:
        return dtype is not None and np.dtype(dtype) == object
    except TypeError:
        return False


# -- creations: buffers ----------------------------------------------------------------------------------
def _creator(original: Callable) -> Callable:
    @functools.wraps(original)
    def create(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        tape = current_tape()
        if tape is None or "like" in kwargs or not _user_caller():
            return value
        return _buffer(tape, value)

    return create


def _buffer(tape: Tape, value: Any, source: Any = None) -> Any:
    """A floating-point array made by the user's code as a constant on the tape (anything else as it is).
    An array NumPy did not make anew (`np.array(a, copy=False)` returns `a`) stays the caller's; the tape
    keeps a new array itself where nothing else holds it, and a copy of a view."""
    if type(value) is not np.ndarray or value.dtype.kind not in "fc" or tape.closed or value is source:
        return value
    return TapeArray(tape, tape.literal(value, owned=value.base is None))


# -- NumPy's scalar types ------------------------------------------------------------------------------------
class _ScalarTypeMeta(type):
    """The metaclass of a scalar type's forwarder: it compares, hashes and checks instances and subclasses
    as the type itself (`isinstance(v, np.float64)`, `np.issubdtype(d, np.float64)`, dict keys)."""

    original: type

    def __instancecheck__(cls, v: Any) -> bool:
        return isinstance(v, cls.original)

    def __subclasscheck__(cls, c: type) -> bool:
        return issubclass(c, cls.original)

    def __eq__(cls, other: object) -> bool:
        return other is cls or other is cls.original

    def __hash__(cls) -> int:
        return hash(cls.original)

    def __repr__(cls) -> str:
        return repr(cls.original)


def _scalar_type(original: type) -> type:
    """`np.float64(t)` of a traced array: the traced array cast (NumPy would make a number, or a plain
    array, of it); of anything else, the type's own result."""

    def new(cls: type, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], Traced) and current_tape() is not None and _user_caller():
            return args[0].astype(original)
        return original(*args, **kwargs)

    forwarder = _ScalarTypeMeta(original.__name__, (original,), {"__new__": new, "__module__": original.__module__})
    forwarder.original = original
    forwarder.__qualname__ = original.__qualname__
    return forwarder


# -- math ---------------------------------------------------------------------------------------------------
def _scalar(a: Any) -> Any:
    """A traced argument of a math function as a 0-d traced array (math takes numbers: size 1)."""
    if isinstance(a, Traced) and a.ndim:
        if a.size != 1:
            raise TypeError("only length-1 arrays can be converted to Python scalars")
        return np.reshape(cast(Any, a), ())
    return a


def _math_rule(name: str) -> Callable | None:
    """What `math.<name>` computes on traced values, or None where math's own function is right (it
    asks the value for a number through a method the traced array answers: floor, ceil, trunc)."""
    ufuncs = {
        "exp": np.exp, "expm1": np.expm1, "exp2": np.exp2, "log1p": np.log1p, "log2": np.log2,
        "log10": np.log10, "sqrt": np.sqrt, "cbrt": np.cbrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
        "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
        "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "fabs": np.fabs,
        "atan2": np.arctan2, "copysign": np.copysign, "fmod": np.fmod, "degrees": np.degrees,
        "radians": np.radians, "pow": np.float_power,
    }  # fmt: skip
    if name in ufuncs:
        ufunc = ufuncs[name]
        return lambda *args: ufunc(*(_scalar(a) for a in args))
    if name == "log":
        return lambda a, base=math.e: np.log(_scalar(a)) / (1.0 if base == math.e else np.log(_scalar(base)))
    if name == "hypot":
        return lambda *args: np.sqrt(sum(np.square(_scalar(a)) for a in args))
    if name in ("isnan", "isinf", "isfinite"):
        test = getattr(np, name)
        return lambda a: bool(test(_scalar(a)))
    if name == "isclose":
        return lambda a, b, *, rel_tol=1e-9, abs_tol=0.0: bool(
            np.abs(np.subtract(a, b)) <= np.maximum(rel_tol * np.maximum(np.abs(a), np.abs(b)), abs_tol)
        )
    if name == "fsum":
        return lambda values: _fold(np.add, values, 0.0)
    if name == "prod":
        return lambda values, *, start=1: _fold(np.multiply, values, start)
    if name in ("erf", "erfc", "gamma", "lgamma"):
        return _special_rule(name)
    return None


def _fold(ufunc: np.ufunc, values: Any, start: Any) -> Any:
    total = start
    for v in values:
        total = ufunc(total, _scalar(v))
    return total


def _special_rule(name: str) -> Callable:
    def rule(a: Any) -> Any:
        import scipy.special as special  # the tape's rules for scipy.special's ufuncs (`prims.special`)

        return getattr(special, {"lgamma": "gammaln"}.get(name, name))(_scalar(a))

    return rule


def _math_forwarder(name: str, original: Callable) -> Callable | None:
    rule = _math_rule(name)
    if rule is None:
        return None
    folds = name in ("fsum", "prod")  # of an iterable (a generator too: taken once, as a list)

    @functools.wraps(original)
    def forward(*args: Any, **kwargs: Any) -> Any:
        if folds and args:
            args = (list(args[0]), *args[1:])
            if any(isinstance(v, Traced) for v in args[0]):
                return rule(*args, **kwargs)
        elif any(isinstance(a, Traced) for a in args):
            return rule(*args, **kwargs)
        return original(*args, **kwargs)

    return forward


# -- the forwarders and where they are installed --------------------------------------------------------------
_CONVERSIONS = ("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray")
_CREATIONS: tuple[str, ...] = ("zeros", "empty", "ones", "full", "eye", "identity", "zeros_like", "ones_like")
_CREATIONS += ("empty_like", "full_like", "copy")
_SCALAR_TYPES = ("float64", "float32")


def _forwarders() -> dict[int, tuple[Any, Any]]:
    """id(original) -> (original, forwarder), for NumPy's and math's functions."""
    table: dict[int, tuple[Any, Any]] = {}
    for name in _CONVERSIONS:
        original = getattr(np, name)
        table[id(original)] = (original, _converter(name, original))
    for name in _CREATIONS:
        original = getattr(np, name)
        table[id(original)] = (original, _creator(original))
    for name in _SCALAR_TYPES:
        original = getattr(np, name)
        table[id(original)] = (original, _scalar_type(original))
    for name in dir(math):
        original = getattr(math, name)
        if isinstance(original, types.BuiltinFunctionType):
            forwarder = _math_forwarder(name, original)
            if forwarder is not None:
                table[id(original)] = (original, forwarder)
    return table


_TABLE = _forwarders()
# NumPy hands `like=` calls to `__array_function__` with the function it finds under its name: a forwarder
for _original, _forwarder in _TABLE.values():
    if _original in FUNCTIONS:
        FUNCTIONS[_forwarder] = FUNCTIONS[_original]
assert all(FUNCTIONS[getattr(np, name)] in CREATION for name in ("array", "asarray", "asanyarray"))

#: (namespace, name, original, forwarder) for each name bound to an original: numpy's and math's own
#: attributes first, then those found in other modules
_BINDINGS: list[tuple[dict, str, Any, Any]] = [
    (vars(module), name, getattr(module, name), _TABLE[id(getattr(module, name))][1])
    for module, names in (
        (np, (*_CONVERSIONS, *_CREATIONS, *_SCALAR_TYPES, "double")),
        (math, tuple(n for n in dir(math) if id(getattr(math, n)) in _TABLE)),
    )
    for name in names
]
_BOUND = {(id(namespace), attr) for namespace, attr, _, _ in _BINDINGS}
_SCANNED: set[str] = {"numpy", "math"}
_SEEN = [0]  # len(sys.modules) at the last scan
_SIZES: dict[int, int] = {}  # id of a volatile namespace -> its number of names at its last scan
#: modules whose own references are left as they are (their calls run the originals anyway)
_SKIPPED = ("numpy", "scipy", "diface", "autograd", "math", "builtins", "sys")
#: the standard library's directory: its modules never call NumPy, and their math calls stay math's
_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep


def _scan(volatile: tuple[dict, ...]) -> None:
    """Find the names bound to an original in the modules imported since the last scan, and again in
    the `volatile` namespaces (`__main__` and f's own module, which may import more after a recording)
    where they have gained names. A compiled package's modules are left as they are: their calls run
    the originals anyway (see `_user_caller`)."""
    if len(sys.modules) != _SEEN[0]:
        _SEEN[0] = len(sys.modules)
        for name, module in list(sys.modules.items()):
            if name in _SCANNED:
                continue
            _SCANNED.add(name)
            namespace = getattr(module, "__dict__", None)
            top = name.partition(".")[0]
            if top in _SKIPPED or not isinstance(namespace, dict) or _in_stdlib(module):
                continue
            found = _bound_in(namespace)
            if found and not compiled(top):  # (asked only of the few modules that bind an original)
                _bind(found)
    for namespace in volatile:
        if _SIZES.get(id(namespace)) != len(namespace):
            _SIZES[id(namespace)] = len(namespace)
            _bind(_bound_in(namespace))


def _in_stdlib(module: Any) -> bool:
    path = getattr(module, "__file__", None)
    return isinstance(path, str) and path.startswith(_STDLIB) and "site-packages" not in path


def _bound_in(namespace: dict) -> list[tuple[dict, str, Any, Any]]:
    """The names of `namespace` bound to an original, with their forwarders."""
    found = []
    for attr, value in list(namespace.items()):
        entry = _TABLE.get(id(value))
        if entry is not None and entry[0] is value:
            found.append((namespace, attr, value, entry[1]))
    return found


def _bind(found: list[tuple[dict, str, Any, Any]]) -> None:
    for binding in found:
        key = (id(binding[0]), binding[1])
        if key not in _BOUND:
            _BOUND.add(key)
            _BINDINGS.append(binding)


def _install(forward: bool) -> None:
    """Put the forwarders in place (or the originals back); someone else's replacement is left alone."""
    if forward:
        for namespace, attr, original, forwarder in _BINDINGS:
            if namespace.get(attr) is original:
                namespace[attr] = forwarder
    else:
        for namespace, attr, original, forwarder in _BINDINGS:
            if namespace.get(attr) is forwarder:
                namespace[attr] = original


@contextmanager
def recording(tape: Tape, f: Any) -> Iterator[None]:
    """While the calling thread records `tape` of `f`: the forwarders are in place (see the module
    docstring)."""
    tapes = recording_stack()
    main = getattr(sys.modules.get("__main__"), "__dict__", None)
    volatile = tuple(d for d in (main, getattr(f, "__globals__", None)) if isinstance(d, dict))
    with _LOCK:
        if _ACTIVE[0] == 0:
            _scan(volatile)
            _install(True)
        _ACTIVE[0] += 1
    tapes.append(tape)
    try:
        yield
    finally:
        tapes.pop()
        with _LOCK:
            _ACTIVE[0] -= 1
            if _ACTIVE[0] == 0:
                _install(False)
