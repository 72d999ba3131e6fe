"""Outer engine autograd: primitives for f, its pushforward, pullback and hvp, each with VJP and JVP rules
(the pullback's derivatives are the inner hvp and pushforward, for second order)."""

from __future__ import annotations

from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defjvp, defvjp, primitive
from autograd.tracer import Box, getval

from ..._boundary import to_host
from ..._errors import NotSupportedError

__all__ = ["AutogradBoundary"]


def _primitives(dw: Any) -> tuple:
    """The four primitives of one DifferentiateWith, made on its first autograd call."""
    prims = dw._outer.get("autograd")
    if prims is not None:
        return prims
    inner = dw.inner

    @primitive
    def value(x: Any, cs: tuple) -> Any:
        return inner.value(np.asarray(x), cs)

    @primitive
    def push(x: Any, t: Any, cs: tuple) -> Any:
        return inner.pushforward(np.asarray(x), np.asarray(t), cs)

    @primitive
    def pull(x: Any, g: Any, cs: tuple) -> Any:
        return inner.pullback(np.asarray(x), np.asarray(g), cs)

    @primitive
    def hvp(x: Any, g: Any, v: Any, cs: tuple) -> Any:
        return inner.hvp(np.asarray(x), np.asarray(g), np.asarray(v), cs)

    def refuse(*_: Any) -> Any:
        raise dw.inner.third_order()

    def forward_over_forward(*_: Any) -> Any:
        raise NotSupportedError(
            f"DifferentiateWith({getattr(dw.f, '__name__', 'f')}, ...): forward mode over a forward-mode product "
            "does not cross the boundary; take second order in reverse mode (autograd.hessian)"
        )

    def value_vjp(ans: Any, x: Any, cs: tuple) -> Any:
        # autograd's VJPs transpose without conjugating, as JAX's: vjp(g) = conj(pullback(conj(g))) for
        # diface's adjoint pullback (differentiable: anp.conj is autograd's, for second order)
        if np.iscomplexobj(getval(x)) or np.iscomplexobj(getval(ans)):
            return lambda g: anp.conj(pull(x, anp.conj(g), cs))
        return lambda g: pull(x, g, cs)

    defvjp(value, value_vjp)
    defjvp(value, lambda t, ans, x, cs: push(x, t, cs))
    defvjp(
        pull,
        lambda ans, x, g, cs: lambda w: hvp(x, g, w, cs),
        lambda ans, x, g, cs: lambda w: push(x, w, cs),
    )
    defjvp(pull, lambda tx, ans, x, g, cs: hvp(x, g, tx, cs), lambda tg, ans, x, g, cs: pull(x, tg, cs))
    defvjp(
        push,
        lambda ans, x, t, cs: lambda w: hvp(x, w, t, cs),
        lambda ans, x, t, cs: lambda w: pull(x, w, cs),
    )
    defjvp(push, forward_over_forward, lambda tt, ans, x, t, cs: push(x, tt, cs))
    defvjp(hvp, refuse, refuse, refuse)
    defjvp(hvp, refuse, refuse, refuse)
    prims = (value, push, pull, hvp)
    dw._outer["autograd"] = prims
    return prims


def call(dw: Any, x: Any, constants: tuple) -> Any:
    value = _primitives(dw)[0]
    cs = tuple(to_host(getval(c), "a constant") if hasattr(c, "shape") else getval(c) for c in constants)
    return value(x, cs)


class AutogradBoundary:
    """autograd outside `DifferentiateWith` (a `diface._boundary.Boundary`)."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, Box)

    def call(self, dw: Any, x: Any, constants: tuple) -> Any:
        return call(dw, x, constants)

    def inner_pushforward(self, f: Any, x: np.ndarray, t: np.ndarray, constants: tuple) -> None:
        return None
