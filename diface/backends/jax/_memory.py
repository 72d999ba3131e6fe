"""JAX's side of `di.checkpoint` (and `di.scan`): `jax.checkpoint`, which JAX's own transformations (`jit`,
`grad`, `jvp`, `vmap`, nested to any order) know: reverse mode saves only the function's inputs and
recomputes the rest when the pullback reaches it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from ..._memory.checkpoint import split_arrays

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for JAX arrays and tracers."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, (jax.Array, jax.core.Tracer))

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        arrays, call = split_arrays(fn, args, kwargs, self.owns)
        return jax.checkpoint(call)(*arrays)
