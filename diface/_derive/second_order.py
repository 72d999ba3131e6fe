"""Second-order operators from a typed plan: how an outer engine differentiates an inner one's first
derivative.

A `SecondOrderPlan` is made for one problem. Its one required part is `linearize(x, cv)`: the
first-derivative map of f (the gradient `x -> grad f(x)` for a scalar output, the derivative
`x -> f'(x)` for a scalar input) linearized at x, whose products in the plan's `mode` are Hessian-vector
products (`push`, forward over anything) or, H being symmetric, their transposes (`pull`). Every
kernel derives from it here: `hvp` (one batch of products), `hessian` (the basis of x in chunks),
`second_derivative` (the product with 1, or the output basis in reverse mode) and `hvp_same_point`
(one linearization kept per thread). An engine with a faster whole program (JAX compiles the nest)
overrides a kernel method instead.

`compose(outer, inner, problem)` is the plan where the engines have none of their own: the outer
engine linearizes the inner engine's derivative kernel where it can trace through it
(`prepare_linearize`), else `DerivedComposition` combines their first-order kernels as
`diface._derive.hvp` and friends do.
"""

from __future__ import annotations

from typing import Any

from .._kernel import Kernel, Result
from .._linearization import Linearization, Linearizer
from .._problem import Problem, size_of
from ._per_thread import PerThread
from ._sweep import Basis, chunk_size, sweep_linearization
from .hessian import derive_hessian
from .hvp import derive_hvp
from .second_derivative import derive_second_derivative

__all__ = ["DerivedComposition", "LinearizedComposition", "SecondOrderPlan", "compose"]


class SecondOrderPlan:
    """The second-order kernels of one problem, derived from `linearize` (see the module docstring)."""

    #: the product `linearize`'s linearizations apply natively: "forward" (push) or "reverse" (pull)
    mode: str = "forward"

    def __init__(self, problem: Problem) -> None:
        self.problem = problem

    def linearize(self, x: Any, cv: tuple) -> Linearization:
        """The first-derivative map of f linearized at x: `value` the derivative, `primal` f(x) or None."""
        raise NotImplementedError(f"{type(self).__name__} derives no kernels from a linearization")

    # -- helpers -------------------------------------------------------------------------------------
    def _apply(self, lin: Linearization, stacked: Any) -> Any:
        return lin.push(stacked) if self.mode == "forward" else lin.pull(stacked)

    def _value(self, lin: Linearization, x: Any, cv: tuple) -> Any:
        return lin.primal if lin.primal is not None else self.problem.evaluate(x, cv)

    def _products(self, lin: Linearization, tangents: tuple) -> tuple:
        ops = self.problem.ops
        return tuple(ops.unstack(self._apply(lin, ops.stack(list(tangents)))))

    # -- kernels -------------------------------------------------------------------------------------
    def hvp(self, tangents: tuple) -> Kernel:
        """`H v` for each tangent: one batch of products on one linearization per call."""

        def hvp(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            lin = self.linearize(x, cv)
            return Result(lower=lin.value if full else None, result=self._products(lin, tangents))

        return Kernel(hvp)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        """Products on the linearization at the preparation's point, made once (per thread where the
        engine's linearizations cannot be shared between threads)."""
        problem = self.problem
        kept = PerThread(lambda: self.linearize(problem.x, problem.context_values))
        kept.get()  # made now: the preparation does the work

        def hvp_same_point(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            lin = kept.get()
            return Result(lower=problem.ops.copy(lin.value) if full else None, result=self._products(lin, tangents))

        return Kernel(hvp_same_point)

    def hessian(self) -> Kernel:
        """H (shape `x.shape + x.shape`): the products with the basis of x, in chunks that stay within
        the Hessian's size, on one linearization per call."""
        problem = self.problem
        ops, x_shape = problem.ops, problem.x_shape
        n = size_of(x_shape)
        dtype = ops.result_type(problem.x_dtype, problem.y_spec[1])
        basis = Basis(ops, x_shape, problem.x_dtype, problem.x, chunk_size(n, n, n * n), n * n)
        forward = self.mode == "forward"

        def hessian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            lin = self.linearize(x, cv)
            hess = sweep_linearization(lin, forward, basis, x_shape + x_shape, dtype, ops)
            if not full:
                return Result(result=hess)
            return Result(self._value(lin, x, cv), lin.value, hess)

        return Kernel(hessian)

    def second_derivative(self) -> Kernel:
        """d2y/dx2 (shaped like y) for a scalar x: the linearized derivative map applied to 1 (forward),
        or pulled back along the basis of y (reverse)."""
        problem = self.problem
        ops = problem.ops
        y_shape = problem.y_spec[0]
        m = size_of(y_shape)
        dtype = ops.result_type(problem.x_dtype, problem.y_spec[1])
        one = ops.reshape(ops.astype(ops.asarray(1.0, like=problem.x), problem.x_dtype), (1,))
        basis = Basis(ops, y_shape, dtype, problem.x, chunk_size(m, 1, m), m)

        def second_derivative(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            lin = self.linearize(x, cv)
            if self.mode == "forward":
                d2 = ops.reshape(lin.push(one), y_shape)
            else:
                d2 = sweep_linearization(lin, False, basis, y_shape, dtype, ops)
            return Result(self._value(lin, x, cv) if full else None, lin.value, d2)

        return Kernel(second_derivative)


def first_derivative(inner: Any, problem: Problem) -> tuple[Kernel, tuple[tuple, Any]]:
    """The inner engine's kernel of f's first derivative (the gradient for a scalar output, else the
    derivative, for a scalar input) and the derivative's (shape, dtype)."""
    ops = problem.ops
    y_shape, y_dtype = problem.y_spec
    dtype = ops.result_type(problem.x_dtype, y_dtype)
    if y_shape == ():
        return inner.prepare_gradient(problem), (problem.x_shape, dtype)
    return inner.prepare_derivative(problem), (y_shape, dtype)


class LinearizedComposition(SecondOrderPlan):
    """The outer engine linearizes the function `x -> inner derivative of f at x` (the inner engine's
    kernel, run on whatever the outer engine traces it with)."""

    def __init__(self, problem: Problem, linearizer: Linearizer, mode: str) -> None:
        super().__init__(problem)
        self.linearizer = linearizer
        self.mode = mode

    @classmethod
    def make(cls, outer: Any, inner: Any, problem: Problem) -> LinearizedComposition | None:
        kernel, spec = first_derivative(inner, problem)

        def derivative(x: Any, *cv: Any) -> Any:
            return kernel.result_of(x, None, cv)

        derived = problem.derived(derivative, spec)
        for mode in ("forward", "reverse"):
            if mode in outer.native_modes:
                linearizer = outer.prepare_linearize(derived, mode)
                if linearizer is not None:
                    return cls(problem, linearizer, mode)
        return None

    def linearize(self, x: Any, cv: tuple) -> Linearization:
        return self.linearizer(x, cv, None)


class DerivedComposition(SecondOrderPlan):
    """Outer and inner first-order kernels combined without a linearization: the outer pushforward of
    the inner gradient (forward over anything), or the outer gradient of an inner directional
    derivative (reverse over forward or reverse); see `diface._derive.hvp`."""

    def __init__(self, outer: Any, inner: Any, problem: Problem) -> None:
        super().__init__(problem)
        self.outer, self.inner = outer, inner

    def hvp(self, tangents: tuple) -> Kernel:
        return derive_hvp(self.outer, self.inner, self.problem, tangents)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self.hvp(tangents)

    def hessian(self) -> Kernel:
        return derive_hessian(self.outer.max_batch_size, self.problem, self.hvp)

    def second_derivative(self) -> Kernel:
        return derive_second_derivative(self.outer, self.inner, self.problem)


def compose(outer: Any, inner: Any, problem: Problem) -> SecondOrderPlan:
    """The plan for `outer` over `inner` where neither engine has one of its own."""
    outer = outer.as_outer_of(inner)
    plan = LinearizedComposition.make(outer, inner, problem)
    return plan if plan is not None else DerivedComposition(outer, inner, problem)
