"""Crossing between engines (`DifferentiateWith`): the registry of outer engines, and arrays through
host memory.

Each engine package registers a `Boundary` for its framework: whether a value is one of its arrays or
traced values (`owns`), and how f, differentiated by another backend, becomes callable inside code this
engine differentiates (`call`: a `torch.autograd.Function`, a `jax.custom_jvp`, autograd primitives,
tape primitives). Arrays cross through host NumPy arrays: `to_host` and `from_host` use the array
library's own crossing (`ArrayOps.to_host`/`from_host`: DLPack, zero-copy where the layout allows).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ._arrays import NUMPY, ArrayOps, ops_for

__all__ = ["Boundary", "boundary_for", "boundary_of", "from_host", "register_boundary", "split_constants", "to_host"]


class Boundary(Protocol):
    """An outer engine's side of `DifferentiateWith` (see the module docstring)."""

    def owns(self, a: Any) -> bool:
        """`a` is this engine's array or traced value."""
        ...

    def call(self, dw: Any, x: Any, constants: tuple) -> Any:
        """`dw`'s f at `x` as this engine differentiates it (its products asked of `dw.inner`)."""
        ...

    def inner_pushforward(self, f: Callable, x: np.ndarray, t: np.ndarray, constants: tuple) -> np.ndarray | None:
        """The pushforward of `f` (written for this engine, as the inner one) where this engine cannot
        give it through its prepared pushforward right now, else None."""
        ...


_FACTORIES: dict[str, Callable[[], Boundary]] = {}
_MADE: dict[str, Boundary] = {}


def register_boundary(framework: str, factory: Callable[[], Boundary]) -> None:
    """Make `framework`'s outer-engine side known; `factory` runs (once) only after it is imported."""
    _FACTORIES[framework] = factory


def boundary_of(framework: str) -> Boundary | None:
    """The registered boundary of `framework`, if it is registered and imported."""
    if framework not in _FACTORIES or framework not in sys.modules:
        return None
    made = _MADE.get(framework)
    if made is None:
        made = _MADE[framework] = _FACTORIES[framework]()
    return made


def boundary_for(a: Any) -> Boundary | None:
    """The boundary of the engine whose array or traced value `a` is (None for NumPy and numbers)."""
    if isinstance(a, (np.ndarray, np.generic, int, float)):
        return None
    for framework in _FACTORIES:
        boundary = boundary_of(framework)
        if boundary is not None and boundary.owns(a):
            return boundary
    return None


def is_array(a: Any) -> bool:
    return isinstance(a, (np.ndarray, np.generic)) or boundary_for(a) is not None


def split_constants(constants: Sequence[Any]) -> tuple[list, Callable[[Sequence[Any]], tuple]]:
    """The array constants, and a function putting (converted) arrays back among the other constants."""
    where = [i for i, c in enumerate(constants) if is_array(c)]
    arrays = [constants[i] for i in where]

    def rebuild(values: Sequence[Any]) -> tuple:
        out = list(constants)
        for i, v in zip(where, values, strict=True):
            out[i] = v
        return tuple(out)

    return arrays, rebuild


def to_host(a: Any, what: str = "x") -> np.ndarray:
    """`a` (any library's array, or a number) as a host NumPy array, shared where possible."""
    ops = ops_for(a)
    if ops is None or ops is NUMPY:
        return np.asarray(a)
    return ops.to_host(a, what)


def from_host(a: Any, ops: ArrayOps) -> Any:
    """A host NumPy array as `ops`'s array (shared where possible); anything else as it is."""
    if ops is NUMPY or not isinstance(a, np.ndarray):
        return a
    return ops.from_host(a)
