"""The engines diface ships, as the command line and the test kit know them.

Each engine package registers its backend class here with the name it has on the command line
(`python -m diface compare --backends NAME[:ARG]`), the module functions for it are written with (the
test kit binds its scenarios to it: `numpy`, `autograd.numpy`, `torch`, `jax.numpy`) and any global
setting the float64 kit needs first (JAX's 64-bit mode), and where the engine's own fastest calls
are, which `python -m diface bench` measures diface against (`direct`: "module:function", imported
only when benchmarking). The core never reads this registry; the backend contract carries none of it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._backend import Backend

__all__ = ["Engine", "engine_of", "engines", "namespace_of", "register_engine"]


@dataclass(frozen=True)
class Engine:
    """One registered engine (see the module docstring)."""

    backend: type[Backend]
    name: str
    namespace: str
    float64: Callable[[], None] | None = None
    #: "package.module:function" of `direct(operator, f, x, v, numpy_in)`, the engine's own fastest call of
    #: an operator (see `diface.testing._references.direct_call`), or None
    direct: str | None = None

    def module(self) -> ModuleType:
        """The module functions for this engine are written with (imported now)."""
        return importlib.import_module(self.namespace)

    def configure_for_float64(self) -> None:
        """Switch the engine to 64-bit floats where that is a global setting (nothing for most)."""
        if self.float64 is not None:
            self.float64()


_ENGINES: dict[str, Engine] = {}


def register_engine(
    backend: type[Backend],
    *,
    name: str,
    namespace: str,
    float64: Callable[[], None] | None = None,
    direct: str | None = None,
) -> Engine:
    """Register `backend` (a `Backend` subclass) under the command-line `name`, with the module its
    functions are written with; `float64` switches the engine to 64-bit floats where that is global;
    `direct` names the function giving the engine's own fastest call of an operator (for benchmarks)."""
    engine = Engine(backend, name, namespace, float64, direct)
    _ENGINES[name] = engine
    return engine


def engines() -> dict[str, Engine]:
    """The registered engines by command-line name (their backend classes; no framework is imported)."""
    return dict(_ENGINES)


def engine_of(backend: Any) -> Engine | None:
    """The engine that runs f for `backend`: its own, or, through wrappers (`SecondOrder`, `AutoSparse`,
    `MixedMode`), the engine of the backend they wrap."""
    while True:
        for engine in _ENGINES.values():
            if type(backend) is engine.backend:
                return engine
        inner = getattr(backend, "wrapped", None)
        if inner is None:
            for engine in _ENGINES.values():  # a subclass of a registered engine
                if isinstance(backend, engine.backend):
                    return engine
            return None
        backend = inner


def namespace_of(backend: Any) -> ModuleType:
    """The module functions for `backend` are written with (NumPy for an engine nobody registered)."""
    engine = engine_of(backend)
    return engine.module() if engine is not None else importlib.import_module("numpy")
