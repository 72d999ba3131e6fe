"""autograd's side of `di.checkpoint` (and of `di.scan`, whose levels, `diface._memory.nested`, are such
calls): the function as one autograd primitive (so the trace keeps only its inputs and output), whose VJP
traces it again from its inputs once the cotangent arrives (`make_vjp`, over all its differentiated
arguments at once; `autograd.checkpoint` makes it while recording, so keeps the trace) and whose JVP is its
own (`make_jvp`). The rules trace with autograd's boxes, at a new level above whatever boxes the inputs are,
so they nest: reverse over reverse and forward over reverse (diface's autograd Hessians) differentiate
through the recomputation. A primitive has derivatives for its arguments only: a function reading a traced
value it is not given (a closure over a value computed from x) returns a traced value from the primitive's
own run, which raises `NotSupportedError`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd import make_jvp, make_vjp
from autograd.extend import Box, defjvp_argnums, defvjp_argnums, primitive

from ..._call.trees.registry import _own_flatten, _own_unflatten
from ..._errors import NotSupportedError
from ..._memory.checkpoint import split_arrays
from ..._memory.nested import nested_scan

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for autograd's boxes (its traced values)."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, Box)

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        arrays, call = split_arrays(fn, args, kwargs, self.owns)
        out: list = []  # the output's structure, from the first run of the function

        def flat(*values: Any) -> Any:
            leaves, structure = _own_flatten(call(*values))
            if not any(isinstance(v, Box) for v in values) and any(isinstance(leaf, Box) for leaf in leaves):
                # the primitive's own run (on its arguments' values) gave a traced value: fn read one it was
                # not given, whose derivative the primitive's rules would drop
                raise NotSupportedError(
                    f"di.checkpoint({getattr(fn, '__name__', 'fn')}): on autograd the function reads a traced "
                    "value it is not given as an argument (a closure over a value computed from x); pass that "
                    "value to it as an argument"
                )
            if not out:
                out.append((structure, [anp.shape(leaf) for leaf in leaves]))
            if len(leaves) == 1:
                return leaves[0]
            # one array: a primitive's tuple output does not carry cotangents through diface's sweeps
            return anp.concatenate([anp.ravel(leaf) for leaf in leaves])

        run = primitive(flat)

        def vjp(argnums: tuple, ans: Any, args: tuple, kwargs: dict) -> Callable:
            # autograd makes a node's VJP while recording the forward pass: the recomputation waits for the
            # cotangent (else the node would hold fn's whole trace), and serves every argument at once
            def pull(g: Any) -> Any:
                return make_vjp(_at(flat, args, argnums))(tuple(args[a] for a in argnums))[0](g)

            return pull

        def jvp(argnums: tuple, gs: list, ans: Any, args: tuple, kwargs: dict) -> Any:
            return make_jvp(_at(flat, args, argnums))(tuple(args[a] for a in argnums))(tuple(gs))[1]

        defvjp_argnums(run, vjp)
        defjvp_argnums(run, jvp)
        leaves = run(*arrays)  # runs flat first, which records the structure
        structure, shapes = out[0]
        if len(shapes) == 1:
            return _own_unflatten(structure, [leaves])
        parts, start = [], 0
        for shape in shapes:
            size = int(np.prod(shape))
            parts.append(anp.reshape(leaves[start : start + size], shape))
            start += size
        return _own_unflatten(structure, parts)

    def scan(self, step: Callable, carry: Any, n: int, schedule: Any, outputs: bool) -> Any:
        return nested_scan(self.checkpoint, step, carry, n, schedule, outputs, anp.stack)


def _at(flat: Callable, args: tuple, argnums: tuple) -> Callable:
    """`flat` as a function of the tuple of its arguments `argnums` alone."""

    def some(values: tuple) -> Any:
        full = list(args)
        for a, v in zip(argnums, values, strict=True):
            full[a] = v
        return flat(*full)

    return some
