"""f evaluated on NumPy arrays: PyTensor has no eager arrays, so calling f on NumPy arrays builds a graph
of constants instead of computing. The core calls f itself in a few places (f's output spec where no
trace says it, the structure of a tree output, `has_aux`'s auxiliary output, values of derived
operators): `Eager(f)` traces f there on symbolic inputs shaped like the arrays it gets, compiles the
graph (cached) and returns NumPy arrays. Called on symbolic arguments (inside a trace), it is f itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ._compile import compile_cached
from ._trace import call_symbolic, is_symbolic, split_contexts, symbolic_contexts

__all__ = ["Eager"]


class Eager:
    """f, computing when called on NumPy arrays (see the module docstring)."""

    def __init__(self, f: Callable) -> None:
        self.__wrapped__ = f
        functools.update_wrapper(self, f, updated=())

    def __call__(self, *args: Any) -> Any:
        f = self.__wrapped__
        split = split_contexts(args)
        if _has_symbolic(args):
            return f(*args)
        values, inputs = symbolic_contexts(args)
        out = call_symbolic(f, values, "AutoPyTensor")
        symbolic = [v for v in _leaves(out) if is_symbolic(v)]
        if not symbolic:
            return out
        program = compile_cached(f, ("eager", split.key), True, lambda: (inputs, symbolic))
        return _rebuild(out, iter(program(*split.arrays)))


def _has_symbolic(args: Any) -> bool:
    return any(is_symbolic(v) for v in _leaves(args))


def _leaves(tree: Any) -> list:
    if isinstance(tree, dict):
        return [v for u in tree.values() for v in _leaves(u)]
    if isinstance(tree, (list, tuple)):
        return [v for u in tree for v in _leaves(u)]
    return [tree]


def _rebuild(tree: Any, results: Any) -> Any:
    """`tree` with its symbolic leaves replaced by their computed values, in order."""
    if isinstance(tree, dict):
        return {k: _rebuild(v, results) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        items = [_rebuild(v, results) for v in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    if is_symbolic(tree):
        return next(results)
    return tree
