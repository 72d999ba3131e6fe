"""MLX's side of `di.checkpoint` (and `di.scan`): an `mx.custom_function` whose VJP runs the function again
from its inputs (`mx.vjp` of it: `mx.checkpoint`'s mechanism) and whose JVP is the function's own (`mx.jvp`):
reverse mode keeps only the inputs. Not `mx.checkpoint` itself, whose pullback has no JVP (forward over
reverse, the Hessians diface computes by default, raises "Not implemented for Depends"); these rules are
ordinary MLX functions, so every nesting of `grad`, `vjp`, `jvp` and `vmap` differentiates through them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mlx.core as mx

from ..._call.trees.registry import _own_flatten, _own_unflatten
from ..._memory.checkpoint import split_arrays

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for MLX arrays."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, mx.array)

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        arrays, call = split_arrays(fn, args, kwargs, self.owns)
        out: list = []  # the output's structure, from the first run of the function

        def flat(*values: Any) -> list:
            leaves, structure = _own_flatten(call(*values))
            if not out:
                out.append(structure)
            return leaves

        @mx.custom_function
        def run(*values: Any) -> list:
            return flat(*values)

        @run.vjp
        def run_vjp(primals: Any, cotangents: Any, outputs: Any) -> list:
            return mx.vjp(flat, _listed(primals), _listed(cotangents))[1]

        @run.jvp
        def run_jvp(primals: Any, tangents: Any) -> list:
            primals = _listed(primals)  # an input without a tangent (a constant) comes with None
            tangents = [mx.zeros_like(p) if t is None else t for p, t in zip(primals, _listed(tangents))]
            return mx.jvp(flat, primals, tangents)[1]

        leaves = _listed(run(*arrays))  # runs flat first, which records the structure
        return _own_unflatten(out[0], leaves)


def _listed(values: Any) -> list:
    """MLX gives one array where a list of one is expected."""
    return list(values) if isinstance(values, (list, tuple)) else [values]
