"""Beyond second order: `taylor` (directional derivatives of any order along a direction) and
`laplacian` (the trace of the Hessian, elementwise for vector outputs).

Shapes: `x` has shape `xs`, `f(x)` has shape `ys`; a direction `tx` is shaped like `x`; every Taylor
coefficient and the Laplacian are shaped like `y`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from .._backend import Backend
from .._call.prep import LaplacianPrep, TaylorPrep
from .._call.prepare import call, prepare
from .._contexts import Context
from .._derive import LaplacianMethod
from .._derive.laplacian import METHODS
from .._errors import ArgumentError, PreparationMismatchError
from .._optable import OPERATORS
from .second_order import _tangent_like_x

__all__ = [
    "laplacian",
    "prepare_laplacian",
    "prepare_taylor",
    "taylor",
    "taylor_coefficients",
    "value_gradient_and_laplacian",
]

_TAYLOR = OPERATORS["taylor"]
_LAPLACIAN = OPERATORS["laplacian"]


def taylor(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    order: int,
    prep: TaylorPrep | None = None,
    out: Any = None,
    has_aux: bool = False,
) -> tuple[Any, tuple]:
    """`(y, (d1, ..., dk))` with `dj = dʲ/dtʲ f(x + t·tx)` at `t = 0` (`k = order`), each shaped like
    `y`: the derivatives along the line through `x` in direction `tx` (not divided by `j!`; the Taylor
    series is `f(x + t·tx) = y + Σⱼ dⱼ tʲ / j!`).

    A tuple of directions gives a tuple of coefficient tuples, propagated together. `out=` takes a tuple
    of `order` buffers (a tuple of such tuples for a tuple of directions). How each engine computes:
    docs/taylor.md.

    Example:
        >>> import numpy as np, diface as di
        >>> y, (d1, d2, d3) = di.taylor(np.exp, di.AutoTape(), np.array([0.0, 1.0]), np.array([1.0, 2.0]), order=3)
        >>> d3.round(4)                     # 2³ e¹ in the second entry
        array([ 1.    , 21.7463])
    """
    order = _check_order(order, "taylor")
    _check_prepared_order(prep, order, "taylor")
    return call(_TAYLOR, True, f, backend, x, tx, contexts, prep, out, None, order, has_aux)


def taylor_coefficients(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any,
    *contexts: Context,
    order: int,
    prep: TaylorPrep | None = None,
    out: Any = None,
    has_aux: bool = False,
) -> tuple:
    """`(d1, ..., dk)`: `taylor` without the value.

    Example:
        >>> import numpy as np, diface as di
        >>> [float(d) for d in di.taylor_coefficients(lambda x: x**4, di.AutoTape(), 1.0, 1.0, order=4)]
        [4.0, 12.0, 24.0, 24.0]
    """
    order = _check_order(order, "taylor_coefficients")
    _check_prepared_order(prep, order, "taylor_coefficients")
    return call(_TAYLOR, False, f, backend, x, tx, contexts, prep, out, None, order, has_aux)


def prepare_taylor(
    f: Callable,
    backend: Backend,
    x: Any,
    tx: Any = None,
    *contexts: Context,
    order: int,
    strict: bool = True,
    has_aux: bool = False,
) -> TaylorPrep:
    """Prepare `taylor` (and `taylor_coefficients`) of `order` for any `x` and directions of the same
    type, dtype and shape (leave `tx` out for one direction like `x`; a tuple prepares a batch).

    Example:
        >>> import numpy as np, diface as di
        >>> prep = di.prepare_taylor(np.sin, di.AutoTape(), np.zeros(2), order=3)
        >>> y, (d1, d2, d3) = prep.taylor(np.zeros(2), np.array([1.0, 2.0]))
        >>> d3                              # -cos(0) v³
        array([-1., -8.])
    """
    order = _check_order(order, "prepare_taylor")
    tx, contexts = _tangent_like_x(x, tx, contexts)
    return prepare(
        TaylorPrep,
        f,
        backend,
        x,
        tx,
        contexts,
        None,
        strict=strict,
        options=order,
        has_aux=has_aux,
    )


def laplacian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    method: str = "exact",
    samples: int = 32,
    seed: int | None = None,
    prep: LaplacianPrep | None = None,
    out: Any = None,
) -> Any:
    """`Σᵢ ∂²f/∂xᵢ²`, shaped like `y` (for a vector `f`, the Laplacian of each output: a PDE residual's).

    `method="exact"` (default) propagates second-order Taylor coefficients along the basis of `x` and
    sums them, never forming the Hessian; engines with a collapsed Taylor mode carry the sum itself.
    `method="hutchinson"` averages `d²/dt² f(x + t·v)` over `samples` random directions `v` with entries
    ±1 (drawn anew by each call from a generator seeded with `seed`): an unbiased estimate, whose standard
    error the preparation's `report` holds.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.sum(x**3)                  # Laplacian 6 Σ x
        >>> float(di.laplacian(f, di.AutoTape(), np.array([1.0, 2.0, 3.0])))
        36.0
    """
    method_ = _method(method, samples, seed, "laplacian")
    _check_prepared_method(prep, method_, "laplacian")
    return call(_LAPLACIAN, False, f, backend, x, None, contexts, prep, out, None, method_)


def value_gradient_and_laplacian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    method: str = "exact",
    samples: int = 32,
    seed: int | None = None,
    prep: LaplacianPrep | None = None,
    out: Any = None,
) -> tuple[Any, Any, Any]:
    """`(f(x), gradient, laplacian)` for a scalar `f` (for a vector `f`, the Jacobian in the gradient's
    place); `out=(g, lap)`. See `laplacian`.

    Example:
        >>> import numpy as np, diface as di
        >>> y, g, lap = di.value_gradient_and_laplacian(lambda x: np.sum(x**3), di.AutoTape(), np.ones(2))
        >>> g, float(lap)
        (array([3., 3.]), 12.0)
    """
    method_ = _method(method, samples, seed, "value_gradient_and_laplacian")
    _check_prepared_method(prep, method_, "value_gradient_and_laplacian")
    return call(_LAPLACIAN, True, f, backend, x, None, contexts, prep, out, None, method_)


def prepare_laplacian(
    f: Callable,
    backend: Backend,
    x: Any,
    *contexts: Context,
    method: str = "exact",
    samples: int = 32,
    seed: int | None = None,
    strict: bool = True,
) -> LaplacianPrep:
    """Prepare `laplacian` (and `value_gradient_and_laplacian`) by `method` (see `laplacian`).

    Example:
        >>> import numpy as np, diface as di
        >>> prep = di.prepare_laplacian(lambda x: np.sin(x), di.AutoTape(), np.zeros(2))
        >>> prep.laplacian(np.array([0.0, np.pi / 2]))      # elementwise: -sin(x)
        array([ 0., -1.])
    """
    return prepare(
        LaplacianPrep,
        f,
        backend,
        x,
        None,
        contexts,
        None,
        strict=strict,
        options=_method(method, samples, seed, "prepare_laplacian"),
    )


# -- argument checks -----------------------------------------------------------------------------
def _check_order(order: Any, where: str) -> int:
    """`order` as an int, or `ArgumentError` (a bool is not an order)."""
    try:
        value = None if isinstance(order, bool) else operator.index(order)
    except TypeError:
        value = None
    if value is None:
        raise ArgumentError(f"{where}: order= must be a positive int (the highest coefficient), got {order!r}")
    if value < 1:
        raise ArgumentError(f"{where}: order= must be at least 1, got {value}")
    return value


def _check_prepared_order(prep: Any, order: int, where: str) -> None:
    if isinstance(prep, TaylorPrep) and prep.order != order:
        raise PreparationMismatchError(f"{where}: prepared for order={prep.order}, called with order={order}")


def _method(method: Any, samples: Any, seed: Any, where: str) -> LaplacianMethod:
    if method not in METHODS:
        raise ArgumentError(f"{where}: method= must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
        raise ArgumentError(f"{where}: samples= must be an int of at least 2 (for a standard error), got {samples!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ArgumentError(f"{where}: seed= must be an int or None, got {seed!r}")
    if method == "exact":
        return LaplacianMethod("exact")
    return LaplacianMethod("hutchinson", samples, seed)


def _check_prepared_method(prep: Any, method: LaplacianMethod, where: str) -> None:
    if isinstance(prep, LaplacianPrep) and prep.settings.options != method:
        raise PreparationMismatchError(f"{where}: prepared with {prep.settings.options}, called with {method}")
