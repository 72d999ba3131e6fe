"""Dispatch for the Python-level SciPy and NumPy functions the tape knows but NumPy's protocols do not
reach: they turn their inputs into plain arrays with np.asarray before anything the tape could see
(scipy.special.logsumexp, softmax, polygamma, multigammaln, zeta, the scipy.stats distributions'
pdf/logpdf/cdf/..., scipy.signal.convolve, NumPy's r_/c_, as_strided, vectorize and numpy.polynomial's
evaluation functions).

When AutoTape records f, each such function of a module already imported (NumPy's own modules are
imported then: numpy.polynomial is otherwise imported on first use, which may be inside f) is made to
dispatch on traced arguments, once per function (under a lock): the function object itself is changed
in place, its code replaced by a forwarder, so that every reference to it dispatches, including one
taken before (`from scipy.special import logsumexp`). Called without a traced argument, the forwarder runs the
function's own code, unchanged; with one, it runs the tape's rule for it. `inspect.signature` still
shows the original signature, and `original(f)` returns the function as it was.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from ..data.graph import current_tape
from ..prims.objects import holds_traced
from .common import FUNCTIONS

__all__ = ["HOOKS", "install", "original", "traced_argument"]

#: (module, path to the function inside it, rule): rule(original, *args, **kwargs) runs on traced arguments
HOOKS: list[tuple[str, str, Callable[[], Callable]]] = []

_LOCK = threading.Lock()
_DONE: set[tuple[str, str]] = set()
_SEEN = [-1]  # len(sys.modules) at the last look: nothing new to hook while it is unchanged
_MARK = "__diface_tape_original__"


def hook(module: str, path: str, always: bool = False) -> Callable:
    """Register a rule (a factory of it, imported on first use) for `module.path`: it runs on traced
    arguments, and with `always` on any call made while the calling thread records a tape (a function
    that calls back f's code, which may compute with traced values it closes over)."""

    def register(factory: Callable[[], Callable]) -> Callable[[], Callable]:
        HOOKS.append((module, path, factory))
        if always:
            ALWAYS.add((module, path))
        return factory

    return register


#: the (module, path) of hooks whose rule runs on every call made while recording
ALWAYS: set[tuple[str, str]] = set()


def install() -> None:
    """Make the registered functions of the modules imported so far dispatch to their rules."""
    if len(_DONE) == len(HOOKS) or len(sys.modules) == _SEEN[0]:
        return
    with _LOCK:
        _SEEN[0] = len(sys.modules)
        for module, path, factory in HOOKS:
            if (module, path) in _DONE:
                continue
            if module not in sys.modules:
                if not module.startswith("numpy."):
                    continue
                importlib.import_module(module)  # NumPy's own (numpy.polynomial is imported on first use)
            target: Any = sys.modules[module]
            for name in path.split("."):
                target = getattr(target, name, None)
            if isinstance(target, types.FunctionType):
                _swap(target, factory, (module, path) in ALWAYS)
            elif isinstance(getattr(target, "_implementation", None), types.FunctionType):
                # a function NumPy dispatches through __array_function__ itself: the tape's handler for it
                FUNCTIONS[target] = functools.partial(_dispatched, factory, target._implementation)
            _DONE.add((module, path))


def _dispatched(factory: Callable[[], Callable], implementation: Callable, *args: Any, **kwargs: Any) -> Any:
    return factory()(implementation, *args, **kwargs)


def original(func: Any) -> Any:
    """The function as it was before `install` changed it (itself if it was not changed)."""
    return getattr(func, _MARK, func)


def _swap(func: types.FunctionType, factory: Callable[[], Callable], always: bool) -> None:
    if getattr(func, _MARK, None) is not None:
        return
    kept = types.FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
    kept.__kwdefaults__ = func.__kwdefaults__
    kept.__qualname__ = func.__qualname__
    kept.__module__ = func.__module__
    kept.__doc__ = func.__doc__
    signature = inspect.signature(func)
    rules: list[Callable] = []

    def dispatch(args: tuple, kwargs: dict) -> Any:
        if (
            (always and current_tape() is not None)
            or any(traced_argument(a) for a in args)
            or any(traced_argument(v) for v in kwargs.values())
        ):
            if not rules:
                rules.append(factory())
            return rules[0](kept, *args, **kwargs)
        return kept(*args, **kwargs)

    forwarder = _forwarder(len(func.__closure__ or ()))
    func.__code__ = forwarder.__code__
    func.__defaults__ = None
    func.__kwdefaults__ = {"__diface_dispatch__": dispatch}
    func.__signature__ = signature  # type: ignore[attr-defined]
    setattr(func, _MARK, kept)


#: how many entries of a list argument are looked at for traced values (a long list of numbers passed to
#: SciPy is not scanned to its end; a traced value beyond is refused later, when SciPy converts it)
_SCAN = 64


def traced_argument(a: Any) -> bool:
    """Whether an argument is traced or holds traced values (a list: among its first `_SCAN` entries)."""
    if isinstance(a, (list, tuple)) and len(a) > _SCAN:
        return holds_traced(a[:_SCAN])
    return holds_traced(a)


def _forwarder(cells: int) -> types.FunctionType:
    """A function `(*args, **kwargs) -> dispatch(args, kwargs)` whose code refers to `cells` free
    variables (a function's code can only be replaced by code with as many)."""
    names = [f"_cell{i}" for i in range(cells)]
    body = [
        "def make():",
        *(f"    {n} = None" for n in names),
        "    def forward(*args, __diface_dispatch__=None, **kwargs):",
        *([f"        if __diface_dispatch__ is None: return ({', '.join(names)},)"] if names else []),
        "        return __diface_dispatch__(args, kwargs)",
        "    return forward",
    ]
    namespace: dict = {}
    # compiled as this file's code: its frames belong to diface (messages name the user's line, not these)
    exec(compile("\n".join(body), __file__, "exec"), namespace)
    return namespace["make"]()
