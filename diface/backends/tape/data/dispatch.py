"""Where NumPy's protocols on a traced array go: the handlers of ufuncs and NumPy functions, registered
by the modules that define them (`numpy.protocols`, imported before any recording), so that the traced array
(`tracing.tracer`) needs no import of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PROTOCOLS", "array_function", "array_ufunc", "register_protocols"]

#: "ufunc": handler(ufunc, method, inputs, kwargs); "function": handler(func, args, kwargs, traced)
PROTOCOLS: dict[str, Callable] = {}


def register_protocols(ufunc: Callable, function: Callable) -> None:
    PROTOCOLS["ufunc"] = ufunc
    PROTOCOLS["function"] = function


def array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    return PROTOCOLS["ufunc"](ufunc, method, inputs, kwargs)


def array_function(func: Any, args: tuple, kwargs: dict, traced: Any) -> Any:
    return PROTOCOLS["function"](func, args, kwargs, traced)
