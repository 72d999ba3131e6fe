"""MLX's side of `di.checkpoint` (and `di.scan`): an `mx.custom_function` whose VJP runs the function again
from its inputs (`mx.vjp` of it: `mx.checkpoint`'s mechanism) and whose JVP is the function's own (`mx.jvp`):
reverse mode keeps only the inputs. Not `mx.checkpoint` itself, whose pullback has no JVP (forward over
reverse, the Hessians diface computes by default, raises "Not implemented for Depends"); these rules are
ordinary MLX functions, so every nesting of `grad`, `vjp`, `jvp` and `vmap` differentiates through them.

A custom function (as `mx.checkpoint`) has derivatives for its arguments only: an array the function reads
without being given it would lose its derivative if it is computed from x, and MLX cannot tell. Arrays in
the function's closure and defaults (and those of functions it closes over) are refused with
`NotSupportedError`; arrays reached otherwise (module globals, attributes of objects) are not seen, and
must be passed as arguments too (docs/memory.md)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import mlx.core as mx

from ..._call.trees.registry import _own_flatten, _own_unflatten
from ..._errors import NotSupportedError
from ..._memory.checkpoint import split_arrays

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for MLX arrays."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, mx.array)

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        _refuse_closures(fn)
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


def _refuse_closures(fn: Callable) -> None:
    """A custom function has derivatives for its arguments only, and MLX cannot tell a traced array from
    another: arrays in the function's closure, its defaults, or those of the functions it closes over
    (a closure over a value computed from x) are refused, to be passed as arguments."""
    seen: set[int] = set()

    def holds_array(value: Any, depth: int) -> bool:
        if id(value) in seen or depth > 4:
            return False
        seen.add(id(value))
        if isinstance(value, mx.array):
            return True
        if isinstance(value, (list, tuple)):
            return any(holds_array(v, depth + 1) for v in value)
        if isinstance(value, dict):
            return any(holds_array(v, depth + 1) for v in value.values())
        if isinstance(value, functools.partial):
            return holds_array((value.func, value.args, value.keywords), depth + 1)
        if inspect.isfunction(value):
            cells = [c.cell_contents for c in value.__closure__ or () if _filled(c)]
            return holds_array((cells, value.__defaults__ or (), value.__kwdefaults__ or {}), depth + 1)
        return False

    if holds_array(fn, 0):
        raise NotSupportedError(
            f"di.checkpoint({getattr(fn, '__name__', 'fn')}): on MLX the function must be given every array it "
            "reads as an argument (a custom function has derivatives for its arguments only, and MLX cannot tell "
            "a closure over a value computed from x from a constant); pass the arrays it closes over as arguments"
        )


def _filled(cell: Any) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:  # a cell not yet assigned
        return False
    return True


def _listed(values: Any) -> list:
    """MLX gives one array where a list of one is expected."""
    return list(values) if isinstance(values, (list, tuple)) else [values]
