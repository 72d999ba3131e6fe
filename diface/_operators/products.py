"""Pushforwards (JVPs) and pullbacks (VJPs): `J(x) @ tx` shaped like y, `ty @ J(x)` shaped like x."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend import Backend
from .._call.prep import PullbackPrep, PushforwardPrep
from .._call.prepare import call, prepare
from .._contexts import Context
from .._optable import OPERATORS

__all__ = [
    "prepare_pullback",
    "prepare_pullback_same_point",
    "prepare_pushforward",
    "prepare_pushforward_same_point",
    "pullback",
    "pushforward",
    "value_and_pullback",
    "value_and_pushforward",
]

_PUSHFORWARD = OPERATORS["pushforward"]
_PULLBACK = OPERATORS["pullback"]


def pushforward(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    prep: PushforwardPrep | None = None,
    out: Any = None,
    y: Any = None,
    has_aux: bool = False,
) -> Any:
    """Jacobian-vector product `J(x) @ tx`, shaped like `y`.

    `tx` is shaped like `x`; a tuple of tangents gives a tuple of results, computed together where
    the backend can batch. With trees, `tx` is a tree like `x` and the result a tree like `f(x)`;
    `has_aux=True` returns `(result, aux)`.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.array([x[0] * x[1], x[1] ** 2])
        >>> di.pushforward(f, di.AutoFiniteDiff(), np.array([2.0, 3.0]), np.array([1.0, 0.0])).round(6)
        array([3., 0.])
    """
    return call(_PUSHFORWARD, False, f, backend, x, tx, contexts, prep, out, y, None, has_aux=has_aux)


def value_and_pushforward(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    prep: PushforwardPrep | None = None,
    out: Any = None,
    y: Any = None,
    has_aux: bool = False,
) -> tuple[Any, Any]:
    """`(f(x), J(x) @ tx)`; see `pushforward`."""
    return call(_PUSHFORWARD, True, f, backend, x, tx, contexts, prep, out, y, None, has_aux=has_aux)


def pullback(
    f: Callable,
    backend: Backend,
    x: Any,
    ty: Any,
    *contexts: Context,
    prep: PullbackPrep | None = None,
    out: Any = None,
    y: Any = None,
    has_aux: bool = False,
) -> Any:
    """Vector-Jacobian product `ty @ J(x)`, shaped like `x`.

    `ty` is shaped like `y`; a tuple of cotangents gives a tuple of results. With trees, `ty` is a
    tree like `f(x)` and the result a tree like `x`; `has_aux=True` returns `(result, aux)`.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.array([x[0] * x[1], x[1] ** 2])
        >>> di.pullback(f, di.AutoFiniteDiff(), np.array([2.0, 3.0]), np.array([1.0, 1.0])).round(6)
        array([3., 8.])
    """
    return call(_PULLBACK, False, f, backend, x, ty, contexts, prep, out, y, None, has_aux=has_aux)


def value_and_pullback(
    f: Callable,
    backend: Backend,
    x: Any,
    ty: Any,
    *contexts: Context,
    prep: PullbackPrep | None = None,
    out: Any = None,
    y: Any = None,
    has_aux: bool = False,
) -> tuple[Any, Any]:
    """`(f(x), ty @ J(x))`; see `pullback`."""
    return call(_PULLBACK, True, f, backend, x, ty, contexts, prep, out, y, None, has_aux=has_aux)


def prepare_pushforward(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    y: Any = None,
    strict: bool = True,
    has_aux: bool = False,
) -> PushforwardPrep:
    """Prepare `pushforward` (and `value_and_pushforward`) for any `x` and `tx` of the same array type,
    dtype and shape, and contexts of the same types and shapes.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: x**2
        >>> prep = di.prepare_pushforward(f, di.AutoFiniteDiff(), np.zeros(2), np.zeros(2))
        >>> prep.pushforward(np.array([1.0, 2.0]), np.array([1.0, 1.0])).round(6)
        array([2., 4.])
    """
    return prepare(PushforwardPrep, f, backend, x, tx, contexts, y, strict=strict, has_aux=has_aux)


def prepare_pushforward_same_point(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    y: Any = None,
    strict: bool = True,
    has_aux: bool = False,
) -> PushforwardPrep:
    """Prepare `pushforward` at this very `x` (and Constant values), for tangents of the same type,
    dtype and shape; backends may cache the linearization at `x`."""
    return prepare(PushforwardPrep, f, backend, x, tx, contexts, y, strict=strict, same_point=True, has_aux=has_aux)


def prepare_pullback(
    f: Callable,
    backend: Backend,
    x: Any,
    ty: Any,
    *contexts: Context,
    y: Any = None,
    strict: bool = True,
    has_aux: bool = False,
) -> PullbackPrep:
    """Prepare `pullback` (and `value_and_pullback`) for any `x` and `ty` of the same array type,
    dtype and shape.

    Example:
        >>> import numpy as np, diface as di
        >>> prep = di.prepare_pullback(lambda x: x**2, di.AutoFiniteDiff(), np.zeros(2), np.zeros(2))
        >>> prep(np.array([1.0, 2.0]), np.array([1.0, 1.0])).round(6)
        array([2., 4.])
    """
    return prepare(PullbackPrep, f, backend, x, ty, contexts, y, strict=strict, has_aux=has_aux)


def prepare_pullback_same_point(
    f: Callable,
    backend: Backend,
    x: Any,
    ty: Any,
    *contexts: Context,
    y: Any = None,
    strict: bool = True,
    has_aux: bool = False,
) -> PullbackPrep:
    """Prepare `pullback` at this very `x` (and Constant values), for cotangents of the same type,
    dtype and shape; backends may keep the forward pass."""
    return prepare(PullbackPrep, f, backend, x, ty, contexts, y, strict=strict, same_point=True, has_aux=has_aux)
