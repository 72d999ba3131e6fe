"""Jacobian-inverse products: `inverse_pushforward` (`J⁻¹ t`, solving `J dx = t`) and
`inverse_pullback` (`J⁻ᵀ t`, solving `Jᵀ dy = t`), for square Jacobians."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend import Backend
from .._call.prep import InversePullbackPrep, InversePushforwardPrep
from .._call.prepare import call, prepare
from .._contexts import Context
from .._derive import InverseSolver
from .._errors import PreparationMismatchError
from .._optable import OPERATORS, Operator

__all__ = [
    "inverse_pullback",
    "inverse_pushforward",
    "prepare_inverse_pullback",
    "prepare_inverse_pullback_same_point",
    "prepare_inverse_pushforward",
    "prepare_inverse_pushforward_same_point",
    "value_and_inverse_pullback",
    "value_and_inverse_pushforward",
]

_INVERSE_PUSHFORWARD = OPERATORS["inverse_pushforward"]
_INVERSE_PULLBACK = OPERATORS["inverse_pullback"]


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
    return prepare(InversePushforwardPrep, f, backend, x, ty, contexts, y, strict=strict, options=solver)


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
    return prepare(
        InversePushforwardPrep, f, backend, x, ty, contexts, y, strict=strict, same_point=True, options=solver
    )


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
    return prepare(InversePullbackPrep, f, backend, x, tx, contexts, y, strict=strict, options=solver)


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
    return prepare(InversePullbackPrep, f, backend, x, tx, contexts, y, strict=strict, same_point=True, options=solver)


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
                ("method", solver.method, "dense" if prep.method == "sparse-lu" else prep.method),
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
