"""One preparation class per operator, with a method per variant (`GradientPrep.gradient`,
`GradientPrep.value_and_gradient`, ...): the names users call, each a call of `Prep.run`."""

from __future__ import annotations

from typing import Any

from ._contexts import Context
from ._optable import OPERATORS
from ._prep import Prep

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
    "PullbackPrep",
    "PushforwardPrep",
    "SecondDerivativePrep",
    "TaylorPrep",
]


class PushforwardPrep(Prep):
    """Preparation for `pushforward` and `value_and_pushforward`."""

    op = OPERATORS["pushforward"]

    def pushforward(self, x: Any, tx: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        if not contexts and out is None and y is None:
            return self._quick[False](x, tx, True)
        return self.run(False, x, tx, contexts, out, y)

    def value_and_pushforward(self, x: Any, tx: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, tx, contexts, out, y)

    __call__ = pushforward


class PullbackPrep(Prep):
    """Preparation for `pullback` and `value_and_pullback`."""

    op = OPERATORS["pullback"]

    def pullback(self, x: Any, ty: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        if not contexts and out is None and y is None:
            return self._quick[False](x, ty, True)
        return self.run(False, x, ty, contexts, out, y)

    def value_and_pullback(self, x: Any, ty: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, ty, contexts, out, y)

    __call__ = pullback


class DerivativePrep(Prep):
    """Preparation for `derivative` and `value_and_derivative`."""

    op = OPERATORS["derivative"]

    def derivative(self, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        if not contexts and out is None and y is None:
            return self._quick[False](x, None, True)
        return self.run(False, x, None, contexts, out, y)

    def value_and_derivative(self, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, y)

    __call__ = derivative


class GradientPrep(Prep):
    """Preparation for `gradient` and `value_and_gradient`."""

    op = OPERATORS["gradient"]

    def gradient(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        if not contexts and out is None:
            return self._quick[False](x, None, True)
        return self.run(False, x, None, contexts, out, None)

    def value_and_gradient(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, None)

    __call__ = gradient


class JacobianPrep(Prep):
    """Preparation for `jacobian` and `value_and_jacobian`."""

    op = OPERATORS["jacobian"]

    def jacobian(self, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        if not contexts and out is None and y is None:
            return self._quick[False](x, None, True)
        return self.run(False, x, None, contexts, out, y)

    def value_and_jacobian(self, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, y)

    __call__ = jacobian


class SecondDerivativePrep(Prep):
    """Preparation for `second_derivative` and `value_derivative_and_second_derivative`."""

    op = OPERATORS["second_derivative"]

    def second_derivative(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        if not contexts and out is None:
            return self._quick[False](x, None, True)
        return self.run(False, x, None, contexts, out, None)

    def value_derivative_and_second_derivative(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, None)

    __call__ = second_derivative


class HessianPrep(Prep):
    """Preparation for `hessian` and `value_gradient_and_hessian`."""

    op = OPERATORS["hessian"]

    def hessian(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        if not contexts and out is None:
            return self._quick[False](x, None, True)
        return self.run(False, x, None, contexts, out, None)

    def value_gradient_and_hessian(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, None)

    __call__ = hessian


class HvpPrep(Prep):
    """Preparation for `hvp` and `gradient_and_hvp`."""

    op = OPERATORS["hvp"]

    def hvp(self, x: Any, tx: Any, *contexts: Context, out: Any = None) -> Any:
        if not contexts and out is None:
            return self._quick[False](x, tx, True)
        return self.run(False, x, tx, contexts, out, None)

    def gradient_and_hvp(self, x: Any, tx: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, tx, contexts, out, None)

    __call__ = hvp


class _InversePrep(Prep):
    """What the two preparations of Jacobian-inverse products share: the method they solve by."""

    @property
    def method(self) -> str | None:
        """The method the preparation solves by: "accumulate", "dense" or "krylov" (what "auto" chose)."""
        return self.kernel.method

    @property
    def solver(self) -> Any:
        """The settings asked for at preparation (`method`, `rtol`, `maxiter`; None: the defaults)."""
        return self._options


class InversePushforwardPrep(_InversePrep):
    """Preparation for `inverse_pushforward` and `value_and_inverse_pushforward`; `prep.method` says how
    it solves."""

    op = OPERATORS["inverse_pushforward"]

    def inverse_pushforward(self, x: Any, ty: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        if not contexts and out is None and y is None:
            return self._quick[False](x, ty, True)
        return self.run(False, x, ty, contexts, out, y)

    def value_and_inverse_pushforward(self, x: Any, ty: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, ty, contexts, out, y)

    __call__ = inverse_pushforward


class InversePullbackPrep(_InversePrep):
    """Preparation for `inverse_pullback` and `value_and_inverse_pullback`; `prep.method` says how it
    solves."""

    op = OPERATORS["inverse_pullback"]

    def inverse_pullback(self, x: Any, tx: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        if not contexts and out is None and y is None:
            return self._quick[False](x, tx, True)
        return self.run(False, x, tx, contexts, out, y)

    def value_and_inverse_pullback(self, x: Any, tx: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, tx, contexts, out, y)

    __call__ = inverse_pullback


class TaylorPrep(Prep):
    """Preparation for `taylor` (`(y, (d1, ..., dk))`) and `taylor_coefficients` (`(d1, ..., dk)`), for the
    order it was prepared for (`prep.order`)."""

    op = OPERATORS["taylor"]

    @property
    def order(self) -> int:
        """The highest coefficient computed."""
        return int(self._options)

    @property
    def report(self) -> Any:
        """What the engine reports about its last call, where it has something to say (finite
        differences: an error estimate of each coefficient); None for exact engines."""
        return self.kernel.report

    def taylor(self, x: Any, tx: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, tx, contexts, out, None)

    def taylor_coefficients(self, x: Any, tx: Any, *contexts: Context, out: Any = None) -> Any:
        if not contexts and out is None:
            return self._quick[False](x, tx, True)
        return self.run(False, x, tx, contexts, out, None)

    __call__ = taylor


class LaplacianPrep(Prep):
    """Preparation for `laplacian` and `value_gradient_and_laplacian`; `prep.report` says how it computes
    (and, for Hutchinson's estimate, the standard error of the last call)."""

    op = OPERATORS["laplacian"]

    @property
    def report(self) -> Any:
        """A `LaplacianReport`: the method, and Hutchinson's samples, seed and last standard error."""
        from ._derive import LaplacianReport

        return self.kernel.report if self.kernel.report is not None else LaplacianReport(self._options.method)

    def laplacian(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        if not contexts and out is None:
            return self._quick[False](x, None, True)
        return self.run(False, x, None, contexts, out, None)

    def value_gradient_and_laplacian(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, None)

    __call__ = laplacian


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
TaylorPrep.taylor_coefficients.__doc__ = "`di.taylor_coefficients` with this preparation (see `taylor`)."
for _cls in PREP_CLASSES.values():
    for _name in (_cls.op.name, _cls.op.full_name):
        getattr(
            _cls, _name
        ).__doc__ = f"`di.{_name}` with this preparation: the same arguments, without f, the backend and prep=."
