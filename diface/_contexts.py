"""Context arguments: extra positional arguments of `f` that are not differentiated.

The model (after DifferentiationInterface.jl): `f(x, c, s)` with `c` a `Constant` (read, never written)
and `s` a `Cache` (scratch storage whose initial contents must not matter).
"""

from __future__ import annotations

from typing import Any

from ._errors import ArgumentError

__all__ = ["Cache", "Constant", "Context", "check_contexts"]


class Context:
    """Base class of context wrappers; holds one `value` passed to `f` as it is (arrays converted)."""

    __slots__ = ("value",)
    kind = "context"

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"

    def with_value(self, value: Any) -> Context:
        """A context of the same kind holding `value`."""
        return type(self)(value)


class Constant(Context):
    """A context that is read by `f` but never differentiated nor mutated.

    A preparation made with one `Constant` value may be used with another of the same type and shape.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x, a: a * np.sum(x**2)
        >>> di.gradient(f, di.AutoFiniteDiff(), np.array([1.0, 2.0]), di.Constant(3.0)).round(6)
        array([ 6., 12.])
    """

    __slots__ = ()
    kind = "Constant"


class Cache(Context):
    """Scratch storage that `f` may overwrite; results never depend on what it held before the call.

    Example:
        >>> import numpy as np, diface as di
        >>> def f(x, buf):
        ...     buf[:] = x**2          # f writes into its scratch buffer
        ...     return np.sum(buf)
        >>> di.gradient(f, di.AutoFiniteDiff(), np.array([1.0, 2.0]), di.Cache(np.empty(2))).round(6)
        array([2., 4.])
    """

    __slots__ = ()
    kind = "Cache"


def check_contexts(contexts: tuple, where: str) -> tuple[Context, ...]:
    """Return `contexts` if every element is a `Constant` or `Cache`, else raise `ArgumentError`."""
    for i, c in enumerate(contexts):
        if not isinstance(c, Context):
            raise ArgumentError(
                f"{where}: extra positional argument {i + 1} is a bare {type(c).__name__}; wrap it as "
                "di.Constant(value) (read-only) or di.Cache(value) (scratch that f may overwrite)"
            )
    return contexts
