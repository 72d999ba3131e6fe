"""`Prep`: the result of a `prepare_*` call, and one class per operator with a method per variant
(`GradientPrep.gradient`, `GradientPrep.value_and_gradient`, ...).

A preparation holds what preparation made (`Prepared`: the kernel, the strict check, the delivery, the
codec, the settings) and one plan per variant (`diface._call.plan`). Every call is `run`: a call without
`out=` or `y=` goes to its variant's plan, which takes the prepared specs straight to the kernel and
sends anything else to the general path (`diface._call.general`); `out=` and `y=` calls go to the
general path. `prep.route` says which stages each variant's calls take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .._arrays import ArrayOps
from .._contexts import Context
from .._derive import LaplacianReport
from .._optable import OPERATORS, Operator
from .._problem import Problem
from .complex import complex_rows
from .general import check_call, general_call
from .plan import Route, build_plans
from .prepared import Prepared
from .settings import Settings

__all__ = [
    "PREP_CLASSES",
    "DerivativePrep",
    "GradientPrep",
    "HessianPrep",
    "HvpPrep",
    "InversePullbackPrep",
    "InversePushforwardPrep",
    "JacobianPrep",
    "LaplacianPrep",
    "Prep",
    "PullbackPrep",
    "PushforwardPrep",
    "SecondDerivativePrep",
    "TaylorPrep",
]


class Prep:
    """The result of a `prepare_*` call: reusable state for one operator and all its variants.

    Call the operator with `prep=prep`, or use the methods of the prep itself (`prep.gradient(x)`,
    `prep.value_and_gradient(x, out=g)`; `prep(x)` runs the plain operator). With `strict=True`
    every call checks its arguments against the preparation.

    Example:
        >>> import numpy as np, diface as di
        >>> prep = di.prepare_gradient(lambda x: np.sum(x**2), di.AutoFiniteDiff(), np.zeros(2))
        >>> prep.gradient(np.array([1.0, 2.0])).round(6)
        array([2., 4.])
        >>> print(prep.route["gradient"])
        accept x -> convert identity -> kernel.run -> deliver delivery
    """

    op: ClassVar[Operator]

    def __init__(self, prepared: Prepared) -> None:
        p = self._prepared = prepared
        problem, kernel, codec, settings = p.problem, p.kernel, p.codec, p.settings
        self.f, self.backend, self.kernel, self.guard, self.codec = p.f, p.backend, kernel, p.guard, codec
        self.strict, self.same_point, self.has_aux, self.output = (
            settings.strict,
            settings.same_point,
            settings.has_aux,
            settings.output,
        )
        self.batch, self.to_user, self.delivery = p.batch, p.to_user, p.delivery
        self.ops: ArrayOps = p.ops
        self.x_shape, self.x_dtype = problem.x_shape, problem.x_dtype
        self.y_shape, self.y_dtype = problem.y_spec
        self.dtype = p.delivery.dtype
        #: what one call costs in evaluations of f, where the backend counts them (`AutoFiniteDiff`: an
        #: `EvaluationCount` with `points` and `f_calls`), else None
        self.evaluations = kernel.evaluations
        if kernel.layout is not None:  # a sparse Jacobian or Hessian: the pattern and the coloring
            self.sparsity_pattern = kernel.layout.scipy_pattern()
            if codec is not None and codec.yi is not None and any(codec.yi.complex_leaves):
                # the pattern of the complex outputs (each row a pair of the flat problem's)
                pairs = complex_rows(
                    self.sparsity_pattern.astype(np.float64), codec.yi.complex_leaves, codec.yi.offsets
                )
                self.sparsity_pattern = pairs != 0
            self.coloring = kernel.layout.coloring
            self.ncolors = self.coloring.ncolors
            self.column_colors, self.row_colors = self.coloring.column_colors, self.coloring.row_colors
        plain, full = build_plans(p)
        self._plans = (plain.call, full.call)
        self._routes = (plain.route, full.route)

    @property
    def report(self) -> Any:
        """What the engine says about how this preparation computes, where it has something to say, else
        None: `AutoTape` its memory plan (a `MemoryReport`: segments, snapshots, recomputation, peak
        bytes), finite differences an error estimate (Taylor), Laplacians their method."""
        return self.kernel.report

    @property
    def route(self) -> dict[str, Route]:
        """Which stages a call of the prepared specs takes, per variant (`{"gradient": Route(...),
        "value_and_gradient": Route(...)}`): what the accept stage tests, how arguments are converted,
        which of the kernel's programs runs, how results are delivered, and whether that is one compiled
        program. Calls of other specs, and calls with `out=` or `y=`, take the general path."""
        plain, full = _variants(self.op)
        return {plain: self._routes[0], full: self._routes[1]}

    @property
    def problem(self) -> Problem:
        """The (flat) problem the kernel was prepared for: f as the engine evaluates it, the native x and
        contexts (for the authors of engines and wrappers: `diface.extend`)."""
        return self._prepared.problem

    @property
    def settings(self) -> Settings:
        """How the operator was asked for: `has_aux`, `output`, its options, strictness, same point."""
        return self._prepared.settings

    @property
    def user_numpy(self) -> bool:
        """Results are NumPy arrays (NumPy input, or a NumPy engine)."""
        return self.delivery.user_numpy

    @property
    def user_dtype(self) -> Any:
        """The dtype of the derivatives the user gets."""
        return self.delivery.user_dtype

    def __repr__(self) -> str:
        name = getattr(self.f, "__qualname__", None) or repr(self.f)
        codec = self.codec
        x = f"tree of {len(codec.xi.shapes)} leaves" if codec is not None and codec.xi is not None else self.x_shape
        y = f"tree of {len(codec.yi.shapes)} leaves" if codec is not None and codec.yi is not None else self.y_shape
        return (
            f"<{type(self).__name__} of {name} on {self.backend!r}: x {self.x_dtype} {x}, "
            f"y {self.y_dtype} {y}{', same point' if self.same_point else ''}>"
        )

    def copy(self) -> Prep:
        """An independent preparation for the same f, backend, point and settings, with buffers of its
        own: what `prepare_*` would return again (a kernel that can copy itself shares what is
        immutable, such as a recording or a compiled program, instead of redoing it).

        A preparation may already be shared by any number of threads (see docs/preparation.md,
        "Threads"); `copy()` is for users who prefer one per worker.

        Example:
            >>> import numpy as np, diface as di
            >>> prep = di.prepare_gradient(lambda x: np.sum(x**2), di.AutoFiniteDiff(), np.zeros(2))
            >>> twin = prep.copy()
            >>> twin is not prep, twin.gradient(np.array([1.0, 2.0])).round(6)
            (True, array([2., 4.]))
        """
        p, kernel = self._prepared, self.kernel
        new = kernel.copy() if kernel.copy is not None else p.remake() if p.remake is not None else kernel
        return type(self)(p.with_kernel(new))

    def check(self, x: Any, extra: Any, contexts: tuple, y: Any, f: Any = None, backend: Any = None) -> None:
        """Raise `PreparationMismatchError` unless the call matches this preparation."""
        check_call(self._prepared, x, extra, contexts, y, f, backend)

    def run(self, full: bool, x: Any, extra: Any, contexts: tuple, out: Any, y: Any, check: bool = True) -> Any:
        """One operator call: the plain operator (`full=False`) or its full variant."""
        if out is None and y is None:
            return self._plans[full](x, extra, contexts, check)
        return general_call(self._prepared, full, x, extra, contexts, out, y, check)


# -- the operators' classes ---------------------------------------------------------------------------
def _variant(full: bool, *, tangent: bool, inplace: bool) -> Callable[..., Any]:
    """A variant's method, with the signature its operator has (a tangent, `y=` for an in-place f)."""
    if tangent and inplace:

        def method(self: Prep, x: Any, t: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
            if out is None and y is None:
                return self._plans[full](x, t, contexts, True)
            return general_call(self._prepared, full, x, t, contexts, out, y, True)

        return method
    if tangent:

        def method_t(self: Prep, x: Any, t: Any, *contexts: Context, out: Any = None) -> Any:
            if out is None:
                return self._plans[full](x, t, contexts, True)
            return general_call(self._prepared, full, x, t, contexts, out, None, True)

        return method_t
    if inplace:

        def method_y(self: Prep, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
            if out is None and y is None:
                return self._plans[full](x, None, contexts, True)
            return general_call(self._prepared, full, x, None, contexts, out, y, True)

        return method_y

    def method_x(self: Prep, x: Any, *contexts: Context, out: Any = None) -> Any:
        if out is None:
            return self._plans[full](x, None, contexts, True)
        return general_call(self._prepared, full, x, None, contexts, out, None, True)

    return method_x


def _variants(op: Operator) -> tuple[str, str]:
    """The names of an operator's plain and full variants (Taylor's plain variant is
    `taylor_coefficients`, its full one `taylor`)."""
    return ("taylor_coefficients", "taylor") if op.series else (op.name, op.full_name)


class PushforwardPrep(Prep):
    """Preparation for `pushforward` and `value_and_pushforward`."""

    op = OPERATORS["pushforward"]
    pushforward = _variant(False, tangent=True, inplace=True)
    value_and_pushforward = _variant(True, tangent=True, inplace=True)
    __call__ = pushforward


class PullbackPrep(Prep):
    """Preparation for `pullback` and `value_and_pullback`."""

    op = OPERATORS["pullback"]
    pullback = _variant(False, tangent=True, inplace=True)
    value_and_pullback = _variant(True, tangent=True, inplace=True)
    __call__ = pullback


class DerivativePrep(Prep):
    """Preparation for `derivative` and `value_and_derivative`."""

    op = OPERATORS["derivative"]
    derivative = _variant(False, tangent=False, inplace=True)
    value_and_derivative = _variant(True, tangent=False, inplace=True)
    __call__ = derivative


class GradientPrep(Prep):
    """Preparation for `gradient` and `value_and_gradient`."""

    op = OPERATORS["gradient"]
    gradient = _variant(False, tangent=False, inplace=False)
    value_and_gradient = _variant(True, tangent=False, inplace=False)
    __call__ = gradient


class JacobianPrep(Prep):
    """Preparation for `jacobian` and `value_and_jacobian`."""

    op = OPERATORS["jacobian"]
    jacobian = _variant(False, tangent=False, inplace=True)
    value_and_jacobian = _variant(True, tangent=False, inplace=True)
    __call__ = jacobian


class SecondDerivativePrep(Prep):
    """Preparation for `second_derivative` and `value_derivative_and_second_derivative`."""

    op = OPERATORS["second_derivative"]
    second_derivative = _variant(False, tangent=False, inplace=False)
    value_derivative_and_second_derivative = _variant(True, tangent=False, inplace=False)
    __call__ = second_derivative


class HessianPrep(Prep):
    """Preparation for `hessian` and `value_gradient_and_hessian`."""

    op = OPERATORS["hessian"]
    hessian = _variant(False, tangent=False, inplace=False)
    value_gradient_and_hessian = _variant(True, tangent=False, inplace=False)
    __call__ = hessian


class HvpPrep(Prep):
    """Preparation for `hvp` and `gradient_and_hvp`."""

    op = OPERATORS["hvp"]
    hvp = _variant(False, tangent=True, inplace=False)
    gradient_and_hvp = _variant(True, tangent=True, inplace=False)
    __call__ = hvp

    def value_gradient_and_hvp(self, x: Any, tx: Any, *contexts: Context, out: Any = None) -> tuple[Any, Any, Any]:
        """`di.value_gradient_and_hvp` with this preparation: the same arguments, without f, the backend
        and prep=."""
        return general_call(self._prepared, True, x, tx, contexts, out, None, True, value=True)


class _InversePrep(Prep):
    """What the two preparations of Jacobian-inverse products share: the method they solve by."""

    @property
    def method(self) -> str | None:
        """The method the preparation solves by: "accumulate", "dense" or "krylov" (what "auto" chose)."""
        return self.kernel.method

    @property
    def solver(self) -> Any:
        """The settings asked for at preparation (`method`, `rtol`, `maxiter`; None: the defaults)."""
        return self._prepared.settings.options


class InversePushforwardPrep(_InversePrep):
    """Preparation for `inverse_pushforward` and `value_and_inverse_pushforward`; `prep.method` says how
    it solves."""

    op = OPERATORS["inverse_pushforward"]
    inverse_pushforward = _variant(False, tangent=True, inplace=True)
    value_and_inverse_pushforward = _variant(True, tangent=True, inplace=True)
    __call__ = inverse_pushforward


class InversePullbackPrep(_InversePrep):
    """Preparation for `inverse_pullback` and `value_and_inverse_pullback`; `prep.method` says how it
    solves."""

    op = OPERATORS["inverse_pullback"]
    inverse_pullback = _variant(False, tangent=True, inplace=True)
    value_and_inverse_pullback = _variant(True, tangent=True, inplace=True)
    __call__ = inverse_pullback


class TaylorPrep(Prep):
    """Preparation for `taylor` (`(y, (d1, ..., dk))`) and `taylor_coefficients` (`(d1, ..., dk)`), for the
    order it was prepared for (`prep.order`)."""

    op = OPERATORS["taylor"]
    taylor = _variant(True, tangent=True, inplace=False)
    taylor_coefficients = _variant(False, tangent=True, inplace=False)
    __call__ = taylor

    @property
    def order(self) -> int:
        """The highest coefficient computed."""
        return int(self._prepared.settings.options)

    @property
    def report(self) -> Any:
        """What the engine reports about its last call, where it has something to say (finite
        differences: an error estimate of each coefficient); None for exact engines."""
        return self.kernel.report


class LaplacianPrep(Prep):
    """Preparation for `laplacian` and `value_gradient_and_laplacian`; `prep.report` says how it computes
    (and, for Hutchinson's estimate, the standard error of the last call)."""

    op = OPERATORS["laplacian"]
    laplacian = _variant(False, tangent=False, inplace=False)
    value_gradient_and_laplacian = _variant(True, tangent=False, inplace=False)
    __call__ = laplacian

    @property
    def report(self) -> Any:
        """A `LaplacianReport`: the method, and Hutchinson's samples, seed and last standard error."""
        options = self._prepared.settings.options
        return self.kernel.report if self.kernel.report is not None else LaplacianReport(options.method)


PREP_CLASSES: dict[str, type[Prep]] = {
    cls.op.name: cls
    for cls in (
        PushforwardPrep,
        PullbackPrep,
        DerivativePrep,
        GradientPrep,
        JacobianPrep,
        SecondDerivativePrep,
        HessianPrep,
        HvpPrep,
        InversePushforwardPrep,
        InversePullbackPrep,
        TaylorPrep,
        LaplacianPrep,
    )
}
for _cls in PREP_CLASSES.values():
    for _name in _variants(_cls.op):
        _method = getattr(_cls, _name)
        _method.__name__, _method.__qualname__ = _name, f"{_cls.__name__}.{_name}"
        _method.__doc__ = f"`di.{_name}` with this preparation: the same arguments, without f, the backend and prep=."
TaylorPrep.taylor_coefficients.__doc__ = "`di.taylor_coefficients` with this preparation (see `taylor`)."
