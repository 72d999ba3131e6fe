"""Tracing f into a PyTensor graph: symbolic inputs for x and the array contexts, f's symbolic output.

A *spec* is what a compiled function depends on: x's shape and dtype, and for each context value either
the shapes and dtypes of its arrays (they become inputs of the compiled function: a new value does not
recompile) or, for anything else (numbers, strings, objects), the value itself (closed over as a
constant: each distinct value is traced once; unhashable ones are keyed by identity).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..._errors import NotSupportedError
from ..._problem import check_output

__all__ = ["Split", "Trace", "is_symbolic", "split_contexts", "trace"]

_NUMBERS = (int, float, complex, np.number)


class Split(NamedTuple):
    """Context values split into the arrays the compiled function takes and the key of the rest."""

    arrays: list
    key: tuple


def _leaf_key(v: Any) -> Any:
    try:
        hash(v)
        return ("v", type(v), v)
    except TypeError:
        return ("id", id(v))


def split_contexts(cv: tuple) -> Split:
    """The NumPy arrays in the context values (leaves of dicts, lists and tuples too), in order, and a
    key describing their specs and every other value."""
    arrays: list = []

    def walk(v: Any) -> Any:
        if isinstance(v, np.ndarray) and v.dtype.kind in "biufc":
            arrays.append(v)
            return ("a", v.shape, v.dtype.str)
        if isinstance(v, np.generic) and v.dtype.kind in "fc":
            arrays.append(np.asarray(v))
            return ("a", (), v.dtype.str)
        if isinstance(v, dict):
            return ("d", tuple((k, walk(u)) for k, u in v.items()))
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return (type(v).__name__, tuple(walk(u) for u in v))
        if isinstance(v, tuple):  # a namedtuple
            return ("n", type(v), tuple(walk(u) for u in v))
        return _leaf_key(v)

    key = tuple(walk(v) for v in cv)
    return Split(arrays, key)


def symbolic_like(a: Any, name: str) -> Any:
    """A symbolic tensor with `a`'s static shape and dtype."""
    import pytensor.tensor as pt

    a = np.asarray(a)
    return pt.tensor(name=name, dtype=a.dtype.name, shape=a.shape)


def symbolic_contexts(cv: tuple) -> tuple[tuple, list]:
    """The context values with their arrays replaced by symbolic inputs, and those inputs in order."""
    inputs: list = []

    def walk(v: Any) -> Any:
        if (isinstance(v, np.ndarray) and v.dtype.kind in "biufc") or (
            isinstance(v, np.generic) and v.dtype.kind in "fc"
        ):
            s = symbolic_like(v, f"c{len(inputs)}")
            inputs.append(s)
            return s
        if isinstance(v, dict):
            return {k: walk(u) for k, u in v.items()}
        if isinstance(v, (list, tuple)):
            items = [walk(u) for u in v]
            return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)
        return v

    return tuple(walk(v) for v in cv), inputs


def is_symbolic(v: Any) -> bool:
    from pytensor.graph.basic import Variable

    return isinstance(v, Variable)


class Trace(NamedTuple):
    """f traced once: its symbolic x, the symbolic context arrays, and its symbolic output."""

    x: Any
    contexts: list
    y: Any


def trace(f: Callable, x: Any, cv: tuple, where: str = "AutoPyTensor") -> Trace:
    """f called on a symbolic x shaped like `x` and symbolic context arrays; its output as a tensor
    variable. f that branches on values cannot be traced: a `NotSupportedError` says so."""
    import pytensor.tensor as pt

    xs = symbolic_like(x, "x")
    values, inputs = symbolic_contexts(cv)
    y = call_symbolic(f, (xs, *values), where)
    y = check_output(y)
    if not is_symbolic(y):
        y = pt.as_tensor_variable(np.asarray(y))
    if not isinstance(y, pt.TensorVariable):
        raise NotSupportedError(f"{where}: f returned a {type(y).__name__}; it must return one tensor")
    if not str(y.dtype).startswith("complex"):
        from ._realify import has_complex, realify

        if has_complex([xs, *inputs], y):  # PyTensor's complex gradients are broken: real pairs instead
            y = realify([xs, *inputs], y)
    return Trace(xs, inputs, y)


def call_symbolic(f: Callable, args: tuple, where: str) -> Any:
    """f(*args) on symbolic arguments; a branch on a symbolic value becomes a clear error."""
    try:
        return f(*args)
    except Exception as e:
        if _is_value_branch(e):
            raise NotSupportedError(
                f"{where}: f cannot be traced symbolically: PyTensor calls f once on symbolic tensors (values "
                f"unknown), and f uses a value in Python control flow or a conversion ({type(e).__name__}: {e}). "
                "Write the branch with pytensor.tensor.where / pytensor.ifelse, or use another backend"
            ) from e
        raise


def _is_value_branch(e: Exception) -> bool:
    text = str(e)
    return isinstance(e, (TypeError, ValueError, NotImplementedError)) and any(
        s in text
        for s in (
            "boolean operations",
            "Variables do not support",
            "TensorVariable",
            "TensorConstant",
            "symbolic",
            "cannot be converted",
            "__len__",
            "len()",
            "not iterable",
        )
    )
