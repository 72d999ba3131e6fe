"""Second order in JAX: two modes nested in one computation (a plan whose kernels are whole programs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._derive import SecondOrderPlan
from ..._kernel import Kernel, Result
from ..._problem import Problem
from ._kernels import linear_kernel, make_kernel
from ._transforms import Seeds, bind, pull, pull_with, push, push_with, sweep, without_aux

__all__ = ["JaxNest"]


class JaxNest(SecondOrderPlan):
    """`outer` over `inner`, both JAX: each second-order operator is one JAX computation nesting the two
    modes (compiled whole when both jit), rather than a linearization swept from Python."""

    def __init__(self, outer: Any, inner: Any, problem: Problem) -> None:
        super().__init__(problem)
        self.jit = outer.jit and inner.jit
        self.seeds = Seeds(traced=self.jit and not problem.single_use)
        y_scalar = problem.y_spec[0] == ()
        # "auto": forward over reverse for a gradient (like jax.hessian), forward over forward for the
        # derivative of a scalar input
        self.outer_mode = "forward" if outer.mode == "auto" else outer.mode
        self.inner_mode = ("reverse" if y_scalar else "forward") if inner.mode == "auto" else inner.mode

    def inner_derivative(self, cv: tuple) -> Callable:
        """x -> (inner Jacobian of f at x, f(x)): the gradient, or the derivative for a scalar x."""
        f, seeds, mode = self.problem.f, self.seeds, self.inner_mode

        def d(x: Any) -> tuple:
            y, jac, _ = sweep(mode, bind(f, cv), x, seeds)
            return jac, y

        return d

    def hvp(self, tangents: tuple) -> Kernel:
        outer_mode = self.outer_mode

        def hvp(full: bool) -> Callable:
            def run(x: Any, tangents: tuple, cv: tuple) -> Result:
                gradient = without_aux(self.inner_derivative(cv))
                # H is symmetric: a pullback of the gradient is a Hessian-vector product too
                g, hvps, _ = (push if outer_mode == "forward" else pull)(gradient, x, tangents)
                return Result(lower=g if full else None, result=hvps)

            return run

        return make_kernel(self.problem, hvp, tangents, self.jit, per_tangent=True)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        """Hessian-vector products at one point: the gradient linearized (forward outside) or its `vjp`
        taken (reverse outside, H being symmetric) once, here."""
        import jax

        problem = self.problem
        gradient = without_aux(self.inner_derivative(problem.context_values))
        apply: Callable[[Callable, tuple], tuple]
        if self.outer_mode == "forward":
            g, linear = jax.linearize(gradient, problem.x)
            apply = push_with
        else:
            g, linear = jax.vjp(gradient, problem.x)
            apply = pull_with
        return linear_kernel(problem, Result(lower=g), linear, apply, tangents, self.jit and not problem.single_use)

    def _nested(self) -> Kernel:
        """The outer Jacobian of the inner derivative: the Hessian, or the second derivative."""
        outer_mode, seeds = self.outer_mode, self.seeds

        def nested(full: bool) -> Callable:
            def run(x: Any, extra: Any, cv: tuple) -> Result:
                d, d2, y = sweep(outer_mode, self.inner_derivative(cv), x, seeds, has_aux=True)
                return Result(y, d, d2) if full else Result(result=d2)

            return run

        return make_kernel(self.problem, nested, None, self.jit)

    def hessian(self) -> Kernel:
        return self._nested()

    def second_derivative(self) -> Kernel:
        return self._nested()
