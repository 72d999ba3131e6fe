"""Second order in MLX: two modes nested in one computation (forward over reverse for a plain AutoMLX:
`hvp` a `jvp` of the gradient, `hessian` a `vmap` of them over the basis), compiled whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._derive import SecondOrderPlan
from ..._kernel import Kernel, Result
from ..._problem import Problem
from ._kernels import forward_or_reverse, make_kernel
from ._transforms import Basis, bind, pull, push, sweep

__all__ = ["MlxNest"]


class MlxNest(SecondOrderPlan):
    """`outer` over `inner`, both MLX: each second-order operator is one MLX computation nesting the two
    modes, compiled whole when both compile."""

    def __init__(self, outer: Any, inner: Any, problem: Problem) -> None:
        super().__init__(problem)
        self.compile = outer.compile and inner.compile
        y_shape, y_dtype = problem.y_spec
        x_shape = problem.x_shape
        # "auto": forward over reverse for a gradient (like jax.hessian), forward over forward for the
        # derivative of a scalar input
        self.outer_mode = "forward" if outer.mode == "auto" else outer.mode
        self.inner_mode = ("reverse" if y_shape == () else "forward") if inner.mode == "auto" else inner.mode
        self.x_basis = Basis(x_shape, _mx(problem.x_dtype))
        self.y_basis = Basis(y_shape, _mx(y_dtype))
        # the inner derivative: the gradient (scalar y) or the derivative (scalar x), shaped like x or y
        self.d_basis = self.x_basis if y_shape == () else self.y_basis

    def inner_derivative(self, cv: tuple) -> Callable:
        f, mode, xb, yb = self.problem.f, self.inner_mode, self.x_basis, self.y_basis
        return lambda x: sweep(mode, bind(f, cv), x, xb, yb)

    def hvp(self, tangents: tuple) -> Kernel:
        return forward_or_reverse(lambda mode: self._hvp(tangents, mode), self.outer_mode)

    def _hvp(self, tangents: tuple, outer_mode: str) -> Kernel:
        def hvp(full: bool) -> Callable:
            def run(x: Any, tangents: tuple, cv: tuple) -> Result:
                gradient = self.inner_derivative(cv)
                # H is symmetric: a pullback of the gradient is a Hessian-vector product too
                hvps = (push if outer_mode == "forward" else pull)(gradient, x, tangents)
                return Result(lower=gradient(x) if full else None, result=hvps)

            return run

        return make_kernel(self.problem, hvp, tangents, self.compile)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self.hvp(tangents)

    def _nested(self) -> Kernel:
        """The outer Jacobian of the inner derivative: the Hessian, or the second derivative."""
        return forward_or_reverse(self._nested_in, self.outer_mode)

    def _nested_in(self, outer_mode: str) -> Kernel:
        xb, db = self.x_basis, self.d_basis
        f = self.problem.f

        def nested(full: bool) -> Callable:
            def run(x: Any, extra: Any, cv: tuple) -> Result:
                d = self.inner_derivative(cv)
                d2 = sweep(outer_mode, d, x, xb, db)
                return Result(f(x, *cv), d(x), d2) if full else Result(result=d2)

            return run

        return make_kernel(self.problem, nested, None, self.compile)

    def hessian(self) -> Kernel:
        return self._nested()

    def second_derivative(self) -> Kernel:
        return self._nested()


def _mx(dtype: Any) -> Any:
    from ._ops import mx_dtype

    return mx_dtype(dtype)
