"""Hessian-vector products from an outer backend differentiating an inner one's gradient."""

from __future__ import annotations

from typing import Any

from .._contexts import Constant
from .._problem import Kernel, Problem

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
        return gradient(x, None, cv, None, False)[1]

    if "forward" in outer.native_modes:
        pushforward = outer.prepare_pushforward(problem.derived(inner_gradient, (x_shape, g_dtype)), tangents)

        def forward_over_gradient(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            g, hvps = pushforward(x, tangents, cv, None, full)
            return None, g, hvps

        return forward_over_gradient

    if "forward" in inner.native_modes:
        directional = inner.prepare_pushforward(problem, tangents[:1])

        def scalar(x: Any, v: Any, *cv: Any) -> Any:  # <grad f(x), v> by one inner pushforward
            return directional(x, (v,), cv, None, False)[1][0]
    else:

        def scalar(x: Any, v: Any, *cv: Any) -> Any:  # <grad f(x), v> by one inner gradient
            return ops.vdot(inner_gradient(x, *cv), v)

    contexts = (Constant(tangents[0]), *problem.contexts)
    outer_gradient = outer.prepare_gradient(problem.derived(scalar, ((), g_dtype), contexts))

    def reverse_over_inner(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
        hvps = tuple(outer_gradient(x, None, (v, *cv), None, False)[1] for v in tangents)
        return None, (inner_gradient(x, *cv) if full else None), hvps

    return reverse_over_inner
