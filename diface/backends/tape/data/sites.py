"""Where an operation happens: the user's line (the first frame outside NumPy, SciPy, autograd's wrappers
and diface), the NumPy or SciPy function the user called there, and the derivative rule the tape is
recording at the moment (second order records the rules of the first derivative). The messages of the
tape's errors and guards are built from these."""

from __future__ import annotations

import functools
import importlib.machinery
import inspect
import linecache
import os
import sys
import threading
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ...._user_code import is_user_code

__all__ = ["Site", "call_site", "compiled", "function_of", "in_rule", "library_of", "recording_rule", "user_location"]

#: packages whose frames are not the user's code (but those registered as users' code: diface's test kit)
_LIBRARIES = ("numpy", "scipy", "autograd", "diface")
#: libraries whose functions a user calls by name (autograd's frames are wrappers around NumPy's)
_NAMED = ("numpy", "scipy")


def _package_dir(name: str) -> str | None:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


@functools.lru_cache(maxsize=4096)
def _library(path: str) -> str | None:
    """The library a source file belongs to (None: the user's code)."""
    path = os.path.abspath(path)
    for name in _LIBRARIES:
        d = _package_dir(name)
        if d and path.startswith(d):
            return name
    return None


def library_of(frame: FrameType) -> str | None:
    """The library whose code the frame runs ("numpy", "scipy", "autograd", "diface", or the top-level
    name of a package that ships compiled extensions, such as "pandas"; None: the user's), from the file
    of its code object and the package of its module; a package registered as users' code
    (`diface._user_code`) is the user's.

    Pure-Python packages (a published library of NumPy code) are the user's code: they reach arrays only
    through NumPy's functions, which hand a traced array to the tape. A compiled package may hand an
    array to its own C code, which needs a real `numpy.ndarray`: its frames are a library's."""
    module = frame.f_globals.get("__name__", "")
    if is_user_code(module):
        return None
    known = _library(frame.f_code.co_filename)
    if known is not None:
        return known
    top = module.partition(".")[0] if isinstance(module, str) else ""
    return top if top and compiled(top) else None


@functools.lru_cache(maxsize=1024)
def compiled(top: str) -> bool:
    """Whether the package `top` (a top-level module name) ships compiled extension modules."""
    module = sys.modules.get(top)
    paths = list(getattr(module, "__path__", None) or ())
    if not paths:  # a single module: compiled if its own file is an extension
        return str(getattr(module, "__file__", "")).endswith(_EXTENSIONS)
    for path in paths:
        for _root, _dirs, files in os.walk(path):
            if any(name.endswith(_EXTENSIONS) for name in files):
                return True
    return False


_EXTENSIONS = (*importlib.machinery.EXTENSION_SUFFIXES, ".so", ".pyd")


def user_frame(frame: FrameType | None = None) -> FrameType | None:
    """The innermost frame of the user's code, from `frame` (default: the caller) outwards."""
    frame = frame or sys._getframe(1)
    while frame is not None and library_of(frame) is not None:
        frame = frame.f_back
    return frame


def user_location(frame: FrameType | None = None) -> str:
    """`file:line` of the innermost frame of the user's code."""
    frame = user_frame(frame or sys._getframe(1))
    return "?" if frame is None else f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _source(frame: FrameType) -> str:
    """The source text of the expression the frame is executing (a call), or its line: for messages only,
    never for a decision (f compiled from a string has none)."""
    code = frame.f_code
    try:
        positions = list(code.co_positions())[frame.f_lasti // 2]
        start, end, col, end_col = positions
    except (IndexError, ValueError, TypeError, AttributeError):
        start = end = col = end_col = None
    if start is None:
        return linecache.getline(code.co_filename, frame.f_lineno).strip()
    lines = [linecache.getline(code.co_filename, n) for n in range(start, (end or start) + 1)]
    if not any(lines):
        return ""
    if col is None or end_col is None:
        return " ".join(line.strip() for line in lines)
    if len(lines) == 1:
        return lines[0][col:end_col].strip()
    return " ".join([lines[0][col:].strip(), *(line.strip() for line in lines[1:-1]), lines[-1][:end_col].strip()])


def _public_module(module: str, name: str, target: Any) -> str:
    """The shortest module path that exports `target` (a class, or a function's code) under `name`:
    numpy, not numpy._core.fromnumeric."""
    parts = module.split(".")
    for k in range(1, len(parts) + 1):
        prefix = ".".join(parts[:k])
        obj = getattr(sys.modules.get(prefix), name, None)
        if obj is None:
            continue
        if obj is target:
            return prefix
        for candidate in (obj, getattr(obj, "_implementation", None), getattr(obj, "__wrapped__", None)):
            if getattr(candidate, "__code__", None) is target:
                return prefix
    return module


def function_of(frame: FrameType) -> str:
    """The public name of the function a library frame runs (`scipy.stats.norm.logpdf`, `numpy.mean`)."""
    code = frame.f_code
    module = frame.f_globals.get("__name__", "?")
    name = code.co_name
    qualname = getattr(code, "co_qualname", name)
    if code.co_argcount and code.co_varnames[0] == "self":
        owner = frame.f_locals.get("self")
        dist = getattr(owner, "dist", owner)  # a frozen scipy.stats distribution
        dist_name = getattr(dist, "name", None)
        if module.startswith("scipy.stats") and isinstance(dist_name, str):
            return f"scipy.stats.{dist_name}.{name}"
        cls = type(owner)
        public = _public_instance(cls.__module__, owner)
        if public is not None:
            return f"{public}.{name}"
        return f"{_public_module(cls.__module__, cls.__name__, cls)}.{cls.__name__}.{name}"
    if "." not in qualname:
        return f"{_public_module(module, name, code)}.{name}"
    return f"{module}.{qualname}"


def _public_instance(module: str, owner: Any) -> str | None:
    """`scipy.stats.multivariate_normal` for the object exported under that name (None if none is)."""
    parts = module.split(".")
    for k in range(1, len(parts) + 1):
        prefix = ".".join(parts[:k])
        for name, obj in vars(sys.modules.get(prefix, object())).items():
            if obj is owner and not name.startswith("_"):
                return f"{prefix}.{name}"
    return None


def _wrapped(frame: FrameType) -> str | None:
    """For a decorator's wrapper (a function defined inside another), the public name of the NumPy or
    SciPy function it wraps (found among its variables), else None."""
    if "<locals>" not in getattr(frame.f_code, "co_qualname", ""):
        return None
    for value in frame.f_locals.values():
        qualname = getattr(value, "__qualname__", "")
        module = getattr(value, "__module__", "") or ""
        if callable(value) and "<locals>" not in qualname and module.split(".")[0] in _NAMED:
            code = getattr(value, "__code__", None)
            name = getattr(value, "__name__", qualname)
            return f"{_public_module(module, name, code if code is not None else value)}.{qualname}"
    return None


@dataclass
class Site:
    """A call seen from inside NumPy: where in the user's code, and through which library function."""

    #: `file:line` in the user's code
    where: str
    #: the source text of the user's call (may be empty: for messages only)
    source: str
    #: the NumPy or SciPy function the user called (None: a conversion like np.asarray called directly)
    function: str | None
    #: that function's arguments (its frame's parameters; empty without a function)
    arguments: tuple = ()

    def describe(self) -> str:
        code = f" (`{self.source}`)" if self.source and len(self.source) <= 120 else ""
        return f"{self.where}{code}"


def call_site(frame: FrameType | None = None) -> Site:
    """The site of the operation running now (called from inside the tape engine)."""
    frame = frame or sys._getframe(1)
    outermost = None  # the outermost NumPy/SciPy frame below the user's
    wrapped = None  # the function a decorator's wrapper there calls
    while frame is not None:
        library = library_of(frame)
        if library is None:
            break
        if library in _NAMED:
            outermost, wrapped = frame, _wrapped(frame)
        frame = frame.f_back
    where = "?" if frame is None else f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    source = "" if frame is None else _source(frame)
    if outermost is not None:
        code = outermost.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        args = tuple(outermost.f_locals.get(v) for v in code.co_varnames[:n])
        if code.co_flags & inspect.CO_VARARGS:
            args += tuple(outermost.f_locals.get(code.co_varnames[n], ()))
        return Site(where, source, wrapped or function_of(outermost), args)
    return Site(where, source, None)


# -- the rule being recorded --------------------------------------------------------------------------------------
_RULE = threading.local()


def recording_rule(prim: Any) -> None:
    """Mark that the tape is now running `prim`'s derivative rule on traced values (None: done)."""
    _RULE.prim = prim


def in_rule() -> Any:
    """The primitive whose derivative rule is being recorded, or None."""
    return getattr(_RULE, "prim", None)
