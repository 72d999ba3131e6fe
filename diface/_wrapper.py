"""Wrapping backends: delegation by default.

`SecondOrder`, `AutoSparse`, `MixedMode` (and any later wrapper) change a few hooks of the backend
contract and keep every other one of the backend they wrap. `Wrapper` forwards every hook of `Backend`
(its methods and its facts: `native_modes`, `mode`, `supports_inplace`, ...) to `wrapped`, with the
forwarding methods generated from `Backend` itself: a hook added to the contract reaches every wrapper
without an edit. A wrapper overrides what it changes and says why in `own_hooks` (a test holds every
wrapper to it: each hook is forwarded, or named there with its reason).
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from ._backend import Backend

__all__ = ["Wrapper", "contract_hooks", "forwarded"]

#: attributes of `Backend` that are not hooks of the contract
_NOT_HOOKS = frozenset({"label"})


def contract_hooks() -> dict[str, str]:
    """Every hook of the backend contract, by name: "method" or "fact" (a class attribute or property)."""
    hooks = {}
    for name, value in vars(Backend).items():
        if name.startswith("_") or name in _NOT_HOOKS:
            continue
        if inspect.isfunction(value):
            hooks[name] = "method"
        elif isinstance(value, property) or not callable(value):
            hooks[name] = "fact"
    for name in Backend.__annotations__:  # the facts declared as ClassVar
        if not name.startswith("_") and name not in hooks:
            hooks[name] = "fact"
    return hooks


class Wrapper(Backend):
    """A backend that forwards every hook of the contract to `wrapped` unless it overrides it.

    Subclasses are frozen dataclasses holding the backend(s) they wrap; `wrapped` names the one the
    hooks go to, and `own_hooks` maps each hook the subclass overrides to the reason.
    """

    #: hook name -> why this wrapper does not forward it
    own_hooks: ClassVar[dict[str, str]] = {}

    @property
    @abc.abstractmethod
    def wrapped(self) -> Backend:
        """The backend every hook not overridden forwards to."""

    def array_ops(self, x: Any) -> Any:
        return self.wrapped.array_ops(x)


def _forward_method(name: str) -> Callable:
    def forward(self: Wrapper, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.wrapped, name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"`{name}` of the wrapped backend (see `Backend.{name}`)."
    return forward


def _forward_fact(name: str) -> property:
    def fact(self: Wrapper) -> Any:
        return getattr(self.wrapped, name)

    fact.__doc__ = f"`{name}` of the wrapped backend."
    return property(fact)


_FORWARDS: dict[str, Any] = {}
for _name, _kind in contract_hooks().items():
    if _name == "array_ops":  # abstract in Backend: defined above so that wrappers can be instantiated
        _FORWARDS[_name] = Wrapper.array_ops
        continue
    _FORWARDS[_name] = _forward_method(_name) if _kind == "method" else _forward_fact(_name)
    setattr(Wrapper, _name, _FORWARDS[_name])


def forwarded(wrapper: type[Wrapper], name: str) -> bool:
    """Whether `wrapper` forwards hook `name` to its wrapped backend (the generated forwarding is its own)."""
    return inspect.getattr_static(wrapper, name) is _FORWARDS[name]
