"""MLX's side of `di.checkpoint`: the function runs as it is, its intermediates kept.

MLX's recomputation (`mx.checkpoint`, or an `mx.custom_function` whose VJP runs the function again) has
derivatives for the function's arguments only, and MLX cannot tell an array computed from x from a
constant: a checkpointed function reading such an array without being given it (through a closure, a
module global or an object's attribute) would lose its derivative, silently. Since no check can see
every such read, diface does not recompute on MLX: `di.checkpoint` there gives the right derivatives,
in every order, and the memory of the unchecked function (docs/memory.md). `di.scan` runs the plain
loop on MLX for the same reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mlx.core as mx

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for MLX arrays."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, mx.array)

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        return fn(*args, **kwargs)  # see the module docstring: a recomputation could drop a derivative
