"""The public operators, their value variants and their preparations.

Every function here is a thin entry into the shared call path of `diface._prep`. Shapes: `x` has shape
`xs`, `f(x)` has shape `ys`; a tangent `tx` is shaped like `x` and a cotangent `ty` like `y`.

Trees: `x`, `f(x)`, tangents and `y` may be dicts, lists, tuples, namedtuples or JAX pytrees of arrays
(docs/trees.md); results are laid out as JAX and `torch.func` lay them out (a gradient is a tree like
`x`, a Jacobian a tree like `y` of trees like `x`), or as one matrix over the raveled leaves with
`output="matrix"`. `has_aux=True`: `f` returns `(output, aux)` and the operator `(result, aux)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._backend import Backend
from ._contexts import Context
from ._derive import InverseSolver
from ._errors import NotSupportedError, PreparationMismatchError
from ._optable import OPERATORS, Operator
from ._prep_classes import (
    DerivativePrep,
    GradientPrep,
    HessianPrep,
    HvpPrep,
    InversePullbackPrep,
    InversePushforwardPrep,
    JacobianPrep,
    PullbackPrep,
    PushforwardPrep,
    SecondDerivativePrep,
)
from ._prepare import call, prepare

__all__ = [
    "derivative",
    "gradient",
    "gradient_and_hvp",
    "hessian",
    "hvp",
    "inverse_pullback",
    "inverse_pushforward",
    "jacobian",
    "prepare_derivative",
    "prepare_gradient",
    "prepare_hessian",
    "prepare_hvp",
    "prepare_hvp_same_point",
    "prepare_inverse_pullback",
    "prepare_inverse_pullback_same_point",
    "prepare_inverse_pushforward",
    "prepare_inverse_pushforward_same_point",
    "prepare_jacobian",
    "prepare_pullback",
    "prepare_pullback_same_point",
    "prepare_pushforward",
    "prepare_pushforward_same_point",
    "prepare_second_derivative",
    "pullback",
    "pushforward",
    "second_derivative",
    "value_and_derivative",
    "value_and_gradient",
    "value_and_inverse_pullback",
    "value_and_inverse_pushforward",
    "value_and_jacobian",
    "value_and_pullback",
    "value_and_pushforward",
    "value_derivative_and_second_derivative",
    "value_gradient_and_hessian",
]

_PUSHFORWARD = OPERATORS["pushforward"]
_PULLBACK = OPERATORS["pullback"]
_DERIVATIVE = OPERATORS["derivative"]
_GRADIENT = OPERATORS["gradient"]
_JACOBIAN = OPERATORS["jacobian"]
_SECOND_DERIVATIVE = OPERATORS["second_derivative"]
_HESSIAN = OPERATORS["hessian"]
_HVP = OPERATORS["hvp"]
_INVERSE_PUSHFORWARD = OPERATORS["inverse_pushforward"]
_INVERSE_PULLBACK = OPERATORS["inverse_pullback"]


# -- pushforward -----------------------------------------------------------------------------------
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


# -- pullback --------------------------------------------------------------------------------------
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


# -- derivative ------------------------------------------------------------------------------------
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


# -- second derivative -----------------------------------------------------------------------------
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


# -- gradient --------------------------------------------------------------------------------------
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


# -- jacobian --------------------------------------------------------------------------------------
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


# -- hessian ---------------------------------------------------------------------------------------
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


# -- hvp -------------------------------------------------------------------------------------------
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


# -- preparation -----------------------------------------------------------------------------------
def _no_inplace(name: str, y: Any) -> None:
    if y is not None:
        raise NotSupportedError(
            f"prepare_{name}: in-place functions f(y, x) do not apply, {name} needs "
            + ("a scalar x" if name == "second_derivative" else "a scalar output")
        )


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
    return prepare(_PUSHFORWARD, f, backend, x, tx, contexts, y, strict=strict, has_aux=has_aux)


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
    return prepare(_PUSHFORWARD, f, backend, x, tx, contexts, y, strict=strict, same_point=True, has_aux=has_aux)


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
    return prepare(_PULLBACK, f, backend, x, ty, contexts, y, strict=strict, has_aux=has_aux)


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
    return prepare(_PULLBACK, f, backend, x, ty, contexts, y, strict=strict, same_point=True, has_aux=has_aux)


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
    return prepare(_DERIVATIVE, f, backend, x, None, contexts, y, strict=strict, has_aux=has_aux)


def prepare_second_derivative(
    f: Callable, backend: Backend, x: Any, *contexts: Context, y: Any = None, strict: bool = True
) -> SecondDerivativePrep:
    """Prepare `second_derivative` (and `value_derivative_and_second_derivative`)."""
    _no_inplace("second_derivative", y)
    return prepare(_SECOND_DERIVATIVE, f, backend, x, None, contexts, None, strict=strict)


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
    _no_inplace("gradient", y)
    return prepare(_GRADIENT, f, backend, x, None, contexts, None, strict=strict, has_aux=has_aux)


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
    return prepare(_JACOBIAN, f, backend, x, None, contexts, y, strict=strict, has_aux=has_aux, output=output)


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
    _no_inplace("hessian", y)
    return prepare(_HESSIAN, f, backend, x, None, contexts, None, strict=strict, output=output)


def prepare_hvp(
    f: Callable, backend: Backend, x: Any, tx: Any, *contexts: Context, y: Any = None, strict: bool = True
) -> HvpPrep:
    """Prepare `hvp` (and `gradient_and_hvp`) for any `x` and `tx` of the same type, dtype and shape."""
    _no_inplace("hvp", y)
    return prepare(_HVP, f, backend, x, tx, contexts, None, strict=strict)


def prepare_hvp_same_point(
    f: Callable, backend: Backend, x: Any, tx: Any, *contexts: Context, y: Any = None, strict: bool = True
) -> HvpPrep:
    """Prepare `hvp` at this very `x` (and Constant values), for tangents of the same type, dtype and
    shape."""
    _no_inplace("hvp", y)
    return prepare(_HVP, f, backend, x, tx, contexts, None, strict=strict, same_point=True)


# -- Jacobian-inverse products ---------------------------------------------------------------------
def inverse_pushforward(
    f: Callable,
    backend: Backend,
    x: Any,
    ty: Any,
    *contexts: Context,
    method: str = "auto",
    rtol: float | None = None,
    maxiter: int | None = None,
    prep: InversePushforwardPrep | None = None,
    out: Any = None,
    y: Any = None,
) -> Any:
    """`dx = J(x)⁻¹ ty`: the solution of `J dx = ty`, shaped like `x`, for a square Jacobian
    (`y.size == x.size`, else `ShapeError`).

    `ty` is shaped like `y`; a tuple of them gives a tuple of solutions (one factorization or
    linearization serves them all). `method`:

    - `"accumulate"`: inverse accumulation over the engine's recorded program, without forming J
      (backends whose `prepare_inverse_linearize` has a plan for f, else `NotSupportedError`);
    - `"dense"`: J from the backend, LU-factored (`SingularError` where J is singular);
    - `"krylov"`: GMRES over pushforwards, to relative residual `rtol` (default 1e-10 in float64) within
      `maxiter` products (default `max(2 n, 200)`), else `ConvergenceError`;
    - `"auto"`: accumulate where there is a plan, dense up to n = 1000 unknowns, else krylov.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.array([2.0 * x[0], x[0] + x[1] ** 3])    # J = [[2, 0], [1, 3 x1²]]
        >>> di.inverse_pushforward(f, di.AutoFiniteDiff(), np.array([1.0, 1.0]), np.array([2.0, 4.0])).round(6)
        array([1., 1.])
    """
    return _inverse(_INVERSE_PUSHFORWARD, False, f, backend, x, ty, contexts, prep, out, y, method, rtol, maxiter)


def value_and_inverse_pushforward(
    f: Callable,
    backend: Backend,
    x: Any,
    ty: Any,
    *contexts: Context,
    method: str = "auto",
    rtol: float | None = None,
    maxiter: int | None = None,
    prep: InversePushforwardPrep | None = None,
    out: Any = None,
    y: Any = None,
) -> tuple[Any, Any]:
    """`(f(x), J(x)⁻¹ ty)`; see `inverse_pushforward`.

    Example:
        >>> import numpy as np, diface as di
        >>> y, dx = di.value_and_inverse_pushforward(np.exp, di.AutoFiniteDiff(), np.zeros(2), np.ones(2))
        >>> y, dx.round(6)
        (array([1., 1.]), array([1., 1.]))
    """
    return _inverse(_INVERSE_PUSHFORWARD, True, f, backend, x, ty, contexts, prep, out, y, method, rtol, maxiter)


def inverse_pullback(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    method: str = "auto",
    rtol: float | None = None,
    maxiter: int | None = None,
    prep: InversePullbackPrep | None = None,
    out: Any = None,
    y: Any = None,
) -> Any:
    """`dy = J(x)⁻ᵀ tx`: the solution of `Jᵀ dy = tx` (equivalently `dy @ J = tx`), shaped like `y`, for
    a square Jacobian. `tx` is shaped like `x`; a tuple gives a tuple. Methods as in
    `inverse_pushforward` (`"krylov"` runs GMRES over pullbacks).

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.array([2.0 * x[0], x[0] + x[1] ** 3])    # Jᵀ = [[2, 1], [0, 3 x1²]]
        >>> di.inverse_pullback(f, di.AutoFiniteDiff(), np.array([1.0, 1.0]), np.array([3.0, 3.0])).round(6)
        array([1., 1.])
    """
    return _inverse(_INVERSE_PULLBACK, False, f, backend, x, tx, contexts, prep, out, y, method, rtol, maxiter)


def value_and_inverse_pullback(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    method: str = "auto",
    rtol: float | None = None,
    maxiter: int | None = None,
    prep: InversePullbackPrep | None = None,
    out: Any = None,
    y: Any = None,
) -> tuple[Any, Any]:
    """`(f(x), J(x)⁻ᵀ tx)`; see `inverse_pullback`."""
    return _inverse(_INVERSE_PULLBACK, True, f, backend, x, tx, contexts, prep, out, y, method, rtol, maxiter)


def prepare_inverse_pushforward(
    f: Callable,
    backend: Backend,
    x: Any,
    ty: Any,
    *contexts: Context,
    method: str = "auto",
    rtol: float | None = None,
    maxiter: int | None = None,
    y: Any = None,
    strict: bool = True,
) -> InversePushforwardPrep:
    """Prepare `inverse_pushforward` (and its value variant) for any `x` and `ty` of the same array type,
    dtype and shape. `prep.method` says which method `"auto"` chose; each call makes the factorization
    (dense) or linearization (accumulate, krylov) at its own x.

    Example:
        >>> import numpy as np, diface as di
        >>> prep = di.prepare_inverse_pushforward(np.sinh, di.AutoFiniteDiff(), np.zeros(3), np.zeros(3))
        >>> prep.method
        'dense'
        >>> prep(np.zeros(3), np.ones(3)).round(6)                   # J = diag(cosh 0) = I
        array([1., 1., 1.])
    """
    solver = InverseSolver.checked(method, rtol, maxiter, "prepare_inverse_pushforward")
    return prepare(_INVERSE_PUSHFORWARD, f, backend, x, ty, contexts, y, strict=strict, options=solver)


def prepare_inverse_pushforward_same_point(
    f: Callable,
    backend: Backend,
    x: Any,
    ty: Any,
    *contexts: Context,
    method: str = "auto",
    rtol: float | None = None,
    maxiter: int | None = None,
    y: Any = None,
    strict: bool = True,
) -> InversePushforwardPrep:
    """Prepare `inverse_pushforward` at this very `x` (and Constant values): J is factored (dense) or f
    linearized (accumulate, krylov) once, now; every call only solves.

    Example:
        >>> import numpy as np, diface as di
        >>> x = np.array([1.0, 2.0])
        >>> prep = di.prepare_inverse_pushforward_same_point(lambda x: x**2, di.AutoFiniteDiff(), x, x)
        >>> prep(x, np.array([2.0, 4.0])).round(6)                   # J = diag(2 x)
        array([1., 1.])
    """
    solver = InverseSolver.checked(method, rtol, maxiter, "prepare_inverse_pushforward_same_point")
    return prepare(_INVERSE_PUSHFORWARD, f, backend, x, ty, contexts, y, strict=strict, same_point=True, options=solver)


def prepare_inverse_pullback(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    method: str = "auto",
    rtol: float | None = None,
    maxiter: int | None = None,
    y: Any = None,
    strict: bool = True,
) -> InversePullbackPrep:
    """Prepare `inverse_pullback` (and its value variant) for any `x` and `tx` of the same array type,
    dtype and shape; see `prepare_inverse_pushforward`."""
    solver = InverseSolver.checked(method, rtol, maxiter, "prepare_inverse_pullback")
    return prepare(_INVERSE_PULLBACK, f, backend, x, tx, contexts, y, strict=strict, options=solver)


def prepare_inverse_pullback_same_point(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    method: str = "auto",
    rtol: float | None = None,
    maxiter: int | None = None,
    y: Any = None,
    strict: bool = True,
) -> InversePullbackPrep:
    """Prepare `inverse_pullback` at this very `x` (and Constant values): the factorization or
    linearization is made once, now."""
    solver = InverseSolver.checked(method, rtol, maxiter, "prepare_inverse_pullback_same_point")
    return prepare(_INVERSE_PULLBACK, f, backend, x, tx, contexts, y, strict=strict, same_point=True, options=solver)


def _inverse(
    op: Operator,
    full: bool,
    f: Callable,
    backend: Backend,
    x: Any,
    t: Any,
    contexts: tuple,
    prep: Any,
    out: Any,
    y: Any,
    method: Any,
    rtol: Any,
    maxiter: Any,
) -> Any:
    """A Jacobian-inverse product: its settings checked (and, with `prep=`, compared with the
    preparation's) before anything runs."""
    where = op.full_name if full else op.name
    solver = InverseSolver.checked(method, rtol, maxiter, where)
    if isinstance(prep, (InversePushforwardPrep, InversePullbackPrep)) and prep.op is op:
        prepared = prep.solver
        differs = [
            f"{name}={asked!r} (prepared: {had!r})"
            for name, asked, had in (
                ("method", solver.method, prep.method),
                ("rtol", solver.rtol, prepared.rtol),
                ("maxiter", solver.maxiter, prepared.maxiter),
            )
            if asked not in (None, "auto") and asked != had
        ]
        if differs:
            raise PreparationMismatchError(
                f"{where}: {', '.join(differs)}; the preparation fixes the method and its settings: drop them "
                f"from the call, or prepare again with di.prepare_{op.name}(..., {differs[0].split(' ')[0]})"
            )
    return call(op, full, f, backend, x, t, contexts, prep, out, y, solver)
