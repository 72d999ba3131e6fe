"""First-order operators without tangents: `derivative` (scalar x), `gradient` (scalar output) and
`jacobian` (shape `y.shape + x.shape`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend import Backend
from .._call.prep import (
    DerivativePrep,
    GradientPrep,
    JacobianPrep,
)
from .._call.prepare import call, prepare
from .._contexts import Context
from .._optable import OPERATORS

__all__ = [
    "derivative",
    "gradient",
    "jacobian",
    "prepare_derivative",
    "prepare_gradient",
    "prepare_jacobian",
    "value_and_derivative",
    "value_and_gradient",
    "value_and_jacobian",
]

_DERIVATIVE = OPERATORS["derivative"]
_GRADIENT = OPERATORS["gradient"]
_JACOBIAN = OPERATORS["jacobian"]


def derivative(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: DerivativePrep | None = None,
    out: Any = None,
    y: Any = None,
    has_aux: bool = False,
) -> Any:
    """`dy/dx` for a scalar `x` (a number or a shape-() array), shaped like `y`.

    Example:
        >>> import numpy as np, diface as di
        >>> float(di.derivative(np.sin, di.AutoFiniteDiff(), 0.0).round(8))
        1.0
    """
    return call(_DERIVATIVE, False, f, backend, x, None, contexts, prep, out, y, None, has_aux=has_aux)


def value_and_derivative(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: DerivativePrep | None = None,
    out: Any = None,
    y: Any = None,
    has_aux: bool = False,
) -> tuple[Any, Any]:
    """`(f(x), dy/dx)`; see `derivative`."""
    return call(_DERIVATIVE, True, f, backend, x, None, contexts, prep, out, y, None, has_aux=has_aux)


def gradient(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: GradientPrep | None = None,
    out: Any = None,
    has_aux: bool = False,
) -> Any:
    """Gradient of a scalar-valued `f`, shaped like `x`: a tree like `x` where `x` is a tree (a dict of
    parameters, say). `has_aux=True`: `f` returns `(loss, aux)`, the call `(gradient, aux)`.

    Example:
        >>> import numpy as np, diface as di
        >>> di.gradient(lambda x: np.sum(x**2), di.AutoFiniteDiff(), np.array([1.0, 2.0])).round(6)
        array([2., 4.])
        >>> params = {"w": np.array([1.0, 2.0]), "b": np.array(0.5)}
        >>> g = di.gradient(lambda p: np.sum(p["w"] ** 2) * p["b"], di.AutoFiniteDiff(), params)
        >>> sorted(g), g["w"].round(6), round(float(g["b"]), 6)
        (['b', 'w'], array([1., 2.]), 5.0)
    """
    return call(_GRADIENT, False, f, backend, x, None, contexts, prep, out, None, None, has_aux=has_aux)


def value_and_gradient(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: GradientPrep | None = None,
    out: Any = None,
    has_aux: bool = False,
) -> tuple[Any, Any]:
    """`(f(x), gradient)`; see `gradient`."""
    return call(_GRADIENT, True, f, backend, x, None, contexts, prep, out, None, None, has_aux=has_aux)


def jacobian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: JacobianPrep | None = None,
    out: Any = None,
    y: Any = None,
    has_aux: bool = False,
    output: str = "tree",
) -> Any:
    """Jacobian of shape `y.shape + x.shape`.

    With trees: a tree like `f(x)` whose leaves are trees like `x` (block `[i][j]` of shape
    `y_i.shape + x_j.shape`, as `jax.jacobian`), or with `output="matrix"` one matrix of shape
    `(y leaves' total size, x leaves' total size)` over the raveled leaves (`di.ravel`).
    `has_aux=True` returns `(jacobian, aux)`.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.array([x[0] * x[1], x[1] ** 2])
        >>> di.jacobian(f, di.AutoFiniteDiff(), np.array([2.0, 3.0])).round(6)
        array([[3., 2.],
               [0., 6.]])
    """
    return call(_JACOBIAN, False, f, backend, x, None, contexts, prep, out, y, None, has_aux=has_aux, output=output)


def value_and_jacobian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    prep: JacobianPrep | None = None,
    out: Any = None,
    y: Any = None,
    has_aux: bool = False,
    output: str = "tree",
) -> tuple[Any, Any]:
    """`(f(x), jacobian)`; see `jacobian`."""
    return call(_JACOBIAN, True, f, backend, x, None, contexts, prep, out, y, None, has_aux=has_aux, output=output)


def prepare_derivative(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    y: Any = None,
    strict: bool = True,
    has_aux: bool = False,
) -> DerivativePrep:
    """Prepare `derivative` (and `value_and_derivative`) for any scalar `x` of the same type and dtype."""
    return prepare(DerivativePrep, f, backend, x, None, contexts, y, strict=strict, has_aux=has_aux)


def prepare_gradient(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    y: Any = None,
    strict: bool = True,
    has_aux: bool = False,
) -> GradientPrep:
    """Prepare `gradient` (and `value_and_gradient`) for any `x` of the same type, dtype and shape.

    Example:
        >>> import numpy as np, diface as di
        >>> prep = di.prepare_gradient(lambda x: np.sum(x**2), di.AutoFiniteDiff(), np.zeros(3))
        >>> prep.gradient(np.array([1.0, 2.0, 3.0])).round(6)
        array([2., 4., 6.])
    """
    return prepare(GradientPrep, f, backend, x, None, contexts, y, strict=strict, has_aux=has_aux)


def prepare_jacobian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    y: Any = None,
    strict: bool = True,
    has_aux: bool = False,
    output: str = "tree",
) -> JacobianPrep:
    """Prepare `jacobian` (and `value_and_jacobian`) for any `x` of the same type, dtype and shape."""
    return prepare(JacobianPrep, f, backend, x, None, contexts, y, strict=strict, has_aux=has_aux, output=output)
