"""Hessian-vector products from an outer backend differentiating an inner one's gradient."""

from __future__ import annotations

from typing import Any

from .._contexts import Constant
from .._kernel import Kernel, Result
from .._problem import Problem

__all__ = ["derive_hvp"]


def derive_hvp(outer: Any, inner: Any, problem: Problem, tangents: tuple) -> Kernel:
    """`H v` for each tangent `v`, choosing the cheapest composition the two backends allow:

    - forward over anything (forward-over-reverse when `inner` is reverse): the outer pushforward of
      `x -> inner gradient(x)` along `v`; one batched outer call for all tangents.
    - reverse over forward: the outer gradient of `x -> <inner pushforward(x, v)>`.
    - reverse over reverse: the outer gradient of `x -> <inner gradient(x), v>`.

    In the reverse-outer compositions `v` reaches the outer function as a `Constant` context, so one
    preparation serves every tangent.
    """
    outer = outer.as_outer_of(inner)
    ops = problem.ops
    x_shape = problem.x_shape
    g_dtype = ops.result_type(problem.x_dtype, problem.y_spec[1])
    gradient = inner.prepare_gradient(problem)

    def inner_gradient(x: Any, *cv: Any) -> Any:
        return gradient.result_of(x, None, cv)

    if "forward" in outer.native_modes:
        pushforward = outer.prepare_pushforward(problem.derived(inner_gradient, (x_shape, g_dtype)), tangents)

        def forward_over_gradient(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            g, _, hvps = pushforward.run(x, tangents, cv, None, full)
            return Result(lower=g, result=hvps)

        return Kernel(forward_over_gradient)

    if "forward" in inner.native_modes:
        directional = inner.prepare_pushforward(problem, tangents[:1])

        def scalar(x: Any, v: Any, *cv: Any) -> Any:  # <grad f(x), v> by one inner pushforward
            return directional.result_of(x, (v,), cv)[0]
    else:

        def scalar(x: Any, v: Any, *cv: Any) -> Any:  # <grad f(x), v> by one inner gradient
            return ops.vdot(inner_gradient(x, *cv), v)

    contexts = (Constant(tangents[0]), *problem.contexts)
    outer_gradient = outer.prepare_gradient(problem.derived(scalar, ((), g_dtype), contexts))

    def reverse_over_inner(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        hvps = tuple(outer_gradient.result_of(x, None, (v, *cv)) for v in tangents)
        return Result(lower=inner_gradient(x, *cv) if full else None, result=hvps)

    return Kernel(reverse_over_inner)
