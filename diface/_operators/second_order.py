"""Second-order operators: `second_derivative` (scalar x), `hessian` (scalar output, shape
`x.shape + x.shape`) and `hvp` (`H(x) @ tx`, shaped like x)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend import Backend
from .._call.prep import (
    HessianPrep,
    HvpPrep,
    SecondDerivativePrep,
)
from .._call.prepare import call, prepare
from .._contexts import Context
from .._optable import OPERATORS

__all__ = [
    "gradient_and_hvp",
    "hessian",
    "hvp",
    "prepare_hessian",
    "prepare_hvp",
    "prepare_hvp_same_point",
    "prepare_second_derivative",
    "second_derivative",
    "value_derivative_and_second_derivative",
    "value_gradient_and_hessian",
    "value_gradient_and_hvp",
]

_SECOND_DERIVATIVE = OPERATORS["second_derivative"]
_HESSIAN = OPERATORS["hessian"]
_HVP = OPERATORS["hvp"]


def second_derivative(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: SecondDerivativePrep | None = None,
    out: Any = None,
) -> Any:
    """`d2y/dx2` for a scalar `x`, shaped like `y`.

    Example:
        >>> import numpy as np, diface as di
        >>> float(di.second_derivative(lambda x: x**3, di.AutoFiniteDiff(), 2.0).round(5))
        12.0
    """
    return call(_SECOND_DERIVATIVE, False, f, backend, x, None, contexts, prep, out, None)


def value_derivative_and_second_derivative(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: SecondDerivativePrep | None = None,
    out: Any = None,
) -> tuple[Any, Any, Any]:
    """`(f(x), dy/dx, d2y/dx2)`; `out=(d, d2)`. See `second_derivative`."""
    return call(_SECOND_DERIVATIVE, True, f, backend, x, None, contexts, prep, out, None)


def hessian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: HessianPrep | None = None,
    out: Any = None,
    output: str = "tree",
) -> Any:
    """Hessian of a scalar-valued `f`, of shape `x.shape + x.shape`.

    With a tree `x`: a tree like `x` of trees like `x` (as `jax.hessian`), or with `output="matrix"`
    one square matrix over the raveled leaves (`di.ravel`).

    Example:
        >>> import numpy as np, diface as di
        >>> di.hessian(lambda x: x[0] ** 2 * x[1], di.AutoFiniteDiff(), np.array([1.0, 2.0])).round(5)
        array([[4., 2.],
               [2., 0.]])
    """
    return call(_HESSIAN, False, f, backend, x, None, contexts, prep, out, None, None, output=output)


def value_gradient_and_hessian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: HessianPrep | None = None,
    out: Any = None,
    output: str = "tree",
) -> tuple[Any, Any, Any]:
    """`(f(x), gradient, hessian)`; `out=(g, H)`. See `hessian`."""
    return call(_HESSIAN, True, f, backend, x, None, contexts, prep, out, None, None, output=output)


def hvp(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    prep: HvpPrep | None = None,
    out: Any = None,
) -> Any:
    """Hessian-vector product `H(x) @ tx` of a scalar-valued `f`, shaped like `x` (a tree like `x`,
    with `tx` a tree like it, where `x` is a tree).

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: x[0] ** 2 * x[1]
        >>> di.hvp(f, di.AutoFiniteDiff(), np.array([1.0, 2.0]), np.array([1.0, 0.0])).round(5)
        array([4., 2.])
    """
    return call(_HVP, False, f, backend, x, tx, contexts, prep, out, None)


def gradient_and_hvp(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    prep: HvpPrep | None = None,
    out: Any = None,
) -> tuple[Any, Any]:
    """`(gradient, H(x) @ tx)`; `out=(g, tg)`. See `hvp`."""
    return call(_HVP, True, f, backend, x, tx, contexts, prep, out, None)


def value_gradient_and_hvp(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    prep: HvpPrep | None = None,
    out: Any = None,
) -> tuple[Any, Any, Any]:
    """`(f(x), gradient, H(x) @ tx)`; `out=(g, tg)` (the derivatives' buffers). See `hvp`.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.sum(x**3)
        >>> y, g, tg = di.value_gradient_and_hvp(f, di.AutoTape(), np.array([1.0, 2.0]), np.ones(2))
        >>> float(y), g, tg
        (9.0, array([ 3., 12.]), array([ 6., 12.]))
    """
    return call(_HVP, True, f, backend, x, tx, contexts, prep, out, None, value=True)


def prepare_second_derivative(
    f: Callable, backend: Backend, x: Any, *contexts: Context, y: Any = None, strict: bool = True
) -> SecondDerivativePrep:
    """Prepare `second_derivative` (and `value_derivative_and_second_derivative`)."""
    return prepare(SecondDerivativePrep, f, backend, x, None, contexts, y, strict=strict)


def prepare_hessian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    y: Any = None,
    strict: bool = True,
    output: str = "tree",
) -> HessianPrep:
    """Prepare `hessian` (and `value_gradient_and_hessian`)."""
    return prepare(HessianPrep, f, backend, x, None, contexts, y, strict=strict, output=output)


def prepare_hvp(
    f: Callable, backend: Backend, x: Any, tx: Any = None, *contexts: Context, y: Any = None, strict: bool = True
) -> HvpPrep:
    """Prepare `hvp` (and `gradient_and_hvp`) for any `x` and `tx` of the same type, dtype and shape.

    `tx` only tells the tangents' type: leave it out (or pass contexts right after `x`) for tangents
    like `x`.

    Example:
        >>> import numpy as np, diface as di
        >>> prep = di.prepare_hvp(lambda x: np.sum(x**3), di.AutoTape(), np.zeros(2))
        >>> prep.hvp(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        array([6., 0.])
    """
    tx, contexts = _tangent_like_x(x, tx, contexts)
    return prepare(HvpPrep, f, backend, x, tx, contexts, y, strict=strict)


def prepare_hvp_same_point(
    f: Callable, backend: Backend, x: Any, tx: Any = None, *contexts: Context, y: Any = None, strict: bool = True
) -> HvpPrep:
    """Prepare `hvp` at this very `x` (and Constant values), for tangents of the same type, dtype and
    shape (leave `tx` out for tangents like `x`)."""
    tx, contexts = _tangent_like_x(x, tx, contexts)
    return prepare(HvpPrep, f, backend, x, tx, contexts, y, strict=strict, same_point=True)


def _tangent_like_x(x: Any, tx: Any, contexts: tuple) -> tuple[Any, tuple]:
    """The tangent a preparation is made for, where the caller left it out: one like `x` (its values are
    never used, only its type, dtype and shape); a context passed in its place is the first context."""
    if isinstance(tx, Context):
        return x, (tx, *contexts)
    return (x if tx is None else tx), contexts
