"""AutoJAX's linearization: `jax.linearize` compiled once, its linear map handed to compiled products."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._linearization import Linearization, Linearizer
from ..._problem import Problem
from ._transforms import bind

__all__ = ["JaxLinearization", "linearizer"]


class JaxLinearization(Linearization):
    """f linearized at a point by `jax.linearize`: its value and linear map (a pytree of residuals, so
    the compiled products take it as an argument without compiling again)."""

    shareable = True  # JAX arrays are immutable

    def __init__(self, value: Any, linear: Callable, push: Callable, pull: Callable) -> None:
        self.value = value
        self.linear = linear
        self._push, self._pull = push, pull

    def push(self, tangents: Any) -> Any:
        return self._push(self.linear, tangents)

    def pull(self, cotangents: Any) -> Any:
        return self._pull(self.linear, cotangents)

    def product_parts(self, forward: bool) -> tuple[Callable, tuple]:
        return (self._push if forward else self._pull), (self.linear,)


def linearizer(problem: Problem, jit: bool) -> Linearizer:
    """`jax.linearize` of f at each point (compiled, when `jit`, once for the problem's shapes); the
    linear map, a pytree of residuals, goes to compiled batched products: `vmap` of it (push) or of its
    transpose (pull)."""
    import jax

    f = problem.f
    x_spec = jax.ShapeDtypeStruct(np.shape(problem.x), problem.x_dtype)

    def linearize(x: Any, cv: tuple) -> tuple[Any, Callable]:
        return jax.linearize(bind(f, cv), x)

    def push(linear: Callable, tangents: Any) -> Any:
        return jax.vmap(linear)(tangents)

    def pull(linear: Callable, cotangents: Any) -> Any:
        return jax.vmap(lambda c: jax.linear_transpose(linear, x_spec)(c)[0])(cotangents)

    if jit:
        linearize, push, pull = (jax.jit(fn, keep_unused=True) for fn in (linearize, push, pull))

    def linearize_at(x: Any, cv: tuple, y: Any) -> Linearization:
        return JaxLinearization(*linearize(x, cv), push, pull)

    return linearize_at
