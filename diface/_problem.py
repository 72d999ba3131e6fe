"""`Problem`: what one preparation is about, in the backend's native arrays.

The API layer builds a `Problem` from the user's arguments (after converting them to the backend's
array type) and hands it to a backend's `prepare_*` method, which returns a kernel. Derivations build
sub-problems from it (the inner gradient as the function an outer backend differentiates, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._arrays import ArrayOps
from ._contexts import Context
from ._errors import ArgumentError

__all__ = ["ComplexOutput", "Problem", "TreeOutput", "check_output", "describe_bad_output"]


class TreeOutput(ArgumentError):
    """f returned a container (dict, list, tuple): the call path prepares it as a tree instead."""


class ComplexOutput(TreeOutput):
    """f returned complex values where the backend expected a real output: the call path prepares the real
    problem of their (real, imaginary) pairs instead (`diface._complex`)."""


class Problem:
    """The function, the point and the contexts a preparation is made for.

    Attributes:
        f: the user's function, `f(x, *ctx)` or, in place, `f(y, x, *ctx)`.
        x: the point (native array or native scalar).
        contexts: `Constant`/`Cache` wrappers holding native values.
        y: native output buffer of an in-place `f`, else None.
        ops: the array namespace of `x`.
        single_use: the preparation serves one call only (unprepared operators): backends may skip
            work that only pays off over many calls, such as jit compilation.
        memo: a backend's scratch for this problem (see `Backend.output_spec`).
    """

    __slots__ = ("_y_spec", "contexts", "f", "memo", "ops", "single_use", "x", "y")

    def __init__(
        self,
        f: Callable,
        x: Any,
        contexts: tuple[Context, ...],
        y: Any,
        ops: ArrayOps,
        *,
        single_use: bool = False,
        y_spec: tuple[tuple, Any] | None = None,
    ) -> None:
        self.f = f
        self.x = x
        self.contexts = contexts
        self.y = y
        self.ops = ops
        self.single_use = single_use
        self._y_spec = y_spec
        #: what a backend computed while answering `output_spec` (a recording, say), for its kernels
        self.memo: dict = {}

    @property
    def inplace(self) -> bool:
        return self.y is not None

    @property
    def context_values(self) -> tuple:
        return tuple(c.value for c in self.contexts)

    @property
    def x_shape(self) -> tuple:
        return shape_of(self.x)

    @property
    def x_dtype(self) -> Any:
        return dtype_of(self.x)

    @property
    def y_spec(self) -> tuple[tuple, Any]:
        """(shape, dtype) of `f`'s output, from the buffer `y` or from one evaluation of `f`."""
        if self._y_spec is None:
            y = self.y if self.y is not None else check_output(self.f(self.x, *self.context_values))
            self._y_spec = (shape_of(y), dtype_of(y))
        return self._y_spec

    def set_y_spec(self, shape: tuple, dtype: Any) -> None:
        """Record f's output shape and dtype, found by a backend (so `y_spec` need not call f)."""
        self._y_spec = (tuple(shape), dtype)

    def evaluate(self, x: Any, context_values: tuple, y: Any = None) -> Any:
        """`f` at `x`: its return value, or the buffer `y` it wrote into."""
        if y is None:
            return check_output(self.f(x, *context_values))
        self.f(y, x, *context_values)
        return y

    def derived(
        self,
        f: Callable,
        y_spec: tuple[tuple, Any],
        contexts: tuple[Context, ...] | None = None,
    ) -> Problem:
        """A problem about another (out-of-place) function at the same point."""
        return Problem(
            f,
            self.x,
            self.contexts if contexts is None else contexts,
            None,
            self.ops,
            single_use=self.single_use,
            y_spec=y_spec,
        )


_NOT_ARRAYS = (list, tuple, dict, set, str, bytes)


def check_output(value: Any) -> Any:
    """`value` (what f returned) if it can be an array to differentiate, else `ArgumentError` saying
    what f returned and what it should return."""
    if isinstance(value, (list, tuple, dict)):
        raise TreeOutput(describe_bad_output(value))
    if value is None or isinstance(value, _NOT_ARRAYS):
        raise ArgumentError(describe_bad_output(value))
    return value


def describe_bad_output(value: Any) -> str:
    if value is None:
        return (
            "f returned None: it must return its output, an array or a number (a missing `return`? an in-place "
            "function f(y, x) that writes into y must be called with the y= keyword)"
        )
    kind = type(value).__name__
    hint = (
        "stack the parts into one array (e.g. np.stack or np.concatenate), or differentiate each part separately"
        if isinstance(value, (list, tuple, dict, set))
        else "return a floating-point array or number"
    )
    return f"f returned a {kind}; it must return one array or a number, the output to differentiate: {hint}"


def shape_of(a: Any) -> tuple:
    """Shape of an array, or () for a Python number."""
    s = getattr(a, "shape", None)
    return () if s is None else tuple(s)


def dtype_of(a: Any) -> Any:
    """dtype of an array, or NumPy's dtype for a Python number."""
    d = getattr(a, "dtype", None)
    return np.result_type(a) if d is None else d


def size_of(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
