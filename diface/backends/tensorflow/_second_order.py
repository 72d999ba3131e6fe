"""Second order in TensorFlow: two modes nested in one traced computation (forward over reverse: a
`ForwardAccumulator` around a `GradientTape`, like TensorFlow's own Hessian-vector product recipe)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._derive import SecondOrderPlan
from ..._kernel import Kernel, Result
from ..._problem import Problem
from ._kernels import make_kernel
from ._transforms import bind, pull, push, sweep

__all__ = ["TensorFlowNest"]


class TensorFlowNest(SecondOrderPlan):
    """`outer` over `inner`, both AutoTensorFlow: each second-order operator is one computation nesting
    the two modes (one `tf.function` when both trace)."""

    def __init__(self, outer: Any, inner: Any, problem: Problem) -> None:
        super().__init__(problem)
        self.jit = outer.jit and inner.jit
        y_scalar = problem.y_spec[0] == ()
        # "auto": forward over reverse for Hessian-vector products (a ForwardAccumulator around a
        # GradientTape); for whole Hessians the tape's own vectorized jacobian of the gradient, measured
        # faster (the docs page); forward over forward for the derivative of a scalar x
        self.outer_mode = "forward" if outer.mode == "auto" else outer.mode
        self.sweep_mode = ("reverse" if y_scalar else "forward") if outer.mode == "auto" else outer.mode
        self.inner_mode = ("reverse" if y_scalar else "forward") if inner.mode == "auto" else inner.mode

    def inner_derivative(self, cv: tuple) -> Callable:
        """x -> (the inner derivative of f at x: the gradient, or the derivative for a scalar x; f(x))."""
        f, mode = self.problem.f, self.inner_mode
        return lambda x: sweep(mode, bind(f, cv), x)

    def hvp(self, tangents: tuple) -> Kernel:
        outer_mode = self.outer_mode

        def hvp(full: bool) -> Callable:
            def run(x: Any, tangents: tuple, cv: tuple) -> Result:
                derivative = self.inner_derivative(cv)
                gradient = lambda x: derivative(x)[1]
                # H is symmetric: a pullback of the gradient is a Hessian-vector product too
                g, hvps = (push if outer_mode == "forward" else pull)(gradient, x, tangents)
                return Result(lower=g if full else None, result=hvps)

            return run

        return make_kernel(self.problem, hvp, tangents, self.jit, per_tangent=True)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self.hvp(tangents)

    def _nested(self) -> Kernel:
        """The outer Jacobian of the inner derivative: the Hessian, or the second derivative."""
        outer_mode = self.sweep_mode

        def nested(full: bool) -> Callable:
            def run(x: Any, extra: Any, cv: tuple) -> Result:
                derivative = self.inner_derivative(cv)
                kept: list = []

                def d(x: Any) -> Any:
                    y, g = derivative(x)
                    kept.append(y)
                    return g

                g, h = sweep(outer_mode, d, x)
                return Result(kept[0], g, h) if full else Result(result=h)

            return run

        return make_kernel(self.problem, nested, None, self.jit)

    def hessian(self) -> Kernel:
        return self._nested()

    def second_derivative(self) -> Kernel:
        return self._nested()
