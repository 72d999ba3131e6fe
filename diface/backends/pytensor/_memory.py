"""PyTensor's side of `di.checkpoint` (and of `di.scan`, whose levels, `diface._memory.nested`, are such
calls): the function as one `OpFromGraph`, a node of the symbolic graph whose gradient (and R-operator) is a
graph of its own built from the node's inputs, so the reverse pass recomputes the function's intermediates
inside it rather than reading values the forward graph kept. The gradient graph is itself differentiable, so
second order nests through it. Variables the function reads without being given them (closures over values
computed from x) become inputs of the node too. What memory the compiled function finally uses is the
compiler's to decide (its rewrites may inline or share work)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import graph_inputs

from ..._call.trees.registry import _own_flatten, _own_unflatten
from ..._memory.checkpoint import split_arrays
from ..._memory.nested import nested_scan

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for PyTensor's symbolic variables."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, Variable)

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        arrays, call = split_arrays(fn, args, kwargs, self.owns)
        inner = [a.type() for a in arrays]
        leaves, structure = _own_flatten(call(*inner))
        # variables the function reads without being given them (a closure over a value computed from x) are
        # inputs of the node too, so that their derivatives flow through it
        given = set(inner)
        free = [v for v in graph_inputs(leaves) if v not in given and not isinstance(v, (Constant, SharedVariable))]
        op = OpFromGraph([*inner, *free], leaves)
        outputs = op(*arrays, *free)
        return _own_unflatten(structure, list(outputs) if len(leaves) > 1 else [outputs])

    def scan(self, step: Callable, carry: Any, n: int, schedule: Any, outputs: bool) -> Any:
        return nested_scan(self.checkpoint, step, carry, n, schedule, outputs, pt.stack)
