"""NumPy's array builders while f is recorded: `np.array([0.0, x[0], x[1]])` is one traced array.

NumPy builds an array from a list in C, asking each traced entry for a plain array (`__array__`)
without saying what it is building; left alone, the result is a NumPy object array holding the traced
values (see `_objects`), which computes entry by entry and fails wherever a plain number among the
entries has no method for a ufunc (`np.sqrt(np.asarray([0.0, x[0]]))`: a float has no `.sqrt()`).

So while AutoTape records f, `numpy.array`, `numpy.asarray` and `numpy.asanyarray` are forwarders.
Called with a list or tuple holding traced values, they stack it on the tape (numbers among them are
constants) and return a traced array. Called with a traced array by autograd.numpy's own code (its
`array`, `stack`, ... copy their input with `np.array`), they return a copy on the tape; called so by
f itself (one or more dimensions), they raise: f asks for a plain array, which would lose the
derivative. Everything else goes to NumPy's function unchanged, and so does every call from NumPy's
or SciPy's own Python code (their conversions are judged by the function doing them, see
`_objects.converted`) and every call with `dtype=object`. What decides is the call itself: its
arguments and the library whose code makes it (from the file of the caller's code object). The module
attributes are put back when the last recording in progress ends.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ._graph import Traced
from ._hooks import traced_argument
from ._np_common import FUNCTIONS
from ._np_creation import CREATION, array_dtype, built
from ._objects import plain_array_refusal
from ._sites import call_site, library_of

__all__ = ["building"]

_NAMES = ("array", "asarray", "asanyarray")
#: libraries whose own conversions `_objects.converted` judges (the function converting is named there)
_JUDGED = ("numpy", "scipy")
_LOCK = threading.Lock()
_ACTIVE = [0]  # recordings in progress (any thread)
_ORIGINALS = {name: getattr(np, name) for name in _NAMES}


def _forwarder(original: Callable) -> Callable:
    @functools.wraps(original)
    def build(*args: Any, **kwargs: Any) -> Any:
        a = args[0] if args else None
        kind = type(a)
        if (kind is list or kind is tuple or isinstance(a, Traced)) and "like" not in kwargs:
            caller = sys._getframe(1)
            library = library_of(caller)
            if library not in _JUDGED and not _is_object(array_dtype(args, kwargs)):
                if not isinstance(a, Traced):
                    if traced_argument(a):  # (a long list: a traced value among its first entries)
                        return built(args, kwargs)
                elif library == "autograd":  # autograd.numpy's builders copy their input: a copy on the tape
                    return built(args, kwargs)
                elif library is None and a.ndim:  # f itself asks for a plain array
                    raise plain_array_refusal(call_site(caller))
        return original(*args, **kwargs)

    return build


def _is_object(dtype: Any) -> bool:
    try:
        return dtype is not None and np.dtype(dtype) == object
    except TypeError:
        return False


_FORWARDERS = {name: _forwarder(original) for name, original in _ORIGINALS.items()}
# NumPy hands `like=` calls to `__array_function__` with the function it finds under its name: a forwarder
for _name, _original in _ORIGINALS.items():
    assert FUNCTIONS[_original] in CREATION
    FUNCTIONS[_FORWARDERS[_name]] = FUNCTIONS[_original]


@contextmanager
def building() -> Iterator[None]:
    """While f is recorded: NumPy's builders are the forwarders (see the module docstring)."""
    with _LOCK:
        if _ACTIVE[0] == 0:
            _swap(_ORIGINALS, _FORWARDERS)
        _ACTIVE[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE[0] -= 1
            if _ACTIVE[0] == 0:
                _swap(_FORWARDERS, _ORIGINALS)


def _swap(old: dict, new: dict) -> None:
    """Set NumPy's attributes that are still `old` to `new` (someone else's replacement is left alone)."""
    for name, value in new.items():
        if getattr(np, name) is old[name]:
            setattr(np, name, value)
