"""Outer engine AutoTape: tape primitives for f, its pushforward, pullback and hvp, whose rules call the
inner backend. Constants are inputs the tape never differentiates; the pullback's rules (the inner hvp and
pushforward) give second order. Complex cotangents pass as they are: the tape's convention is the adjoint
one (PyTorch's, diface's), where the tape takes complex values at all."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._boundary import split_constants
from ..data.graph import Traced
from ..prims.prim import OWN, InputsFrom, Prim, into

__all__ = ["TapeBoundary"]


class _Op(Prim):
    """One product of a DifferentiateWith: the first `arity` inputs are arrays, the rest its constants.
    Complex values pass as they are (`OWN`): the inner backend's products are diface's, whose pullback is
    the adjoint the tape's reverse sweep wants, and a real x gets a real cotangent from it (no promotion)."""

    complex = OWN
    promotes = False

    def __init__(self, dw: Any, name: str, arity: int) -> None:
        self.dw = dw
        self.name = f"DifferentiateWith({getattr(dw.f, '__name__', 'f')}).{name}"
        self.arity = arity
        self.nondiff = InputsFrom(arity)

    def constants(self, ins: tuple, rebuild: Any) -> tuple:
        return rebuild([np.asarray(c) for c in ins[self.arity :]])


class _Value(_Op):
    def forward(self, x: Any, *cs: Any, out: Any = None, rebuild: Any = None) -> Any:
        return into(out, self.dw.inner.value(np.asarray(x), rebuild(cs)))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, rebuild: Any = None) -> Any:
        x, cs = ins[0], ins[1:]
        ops = _ops(self.dw)
        return into(out, ops["push"](x, ts[0], *cs, batch=b, rebuild=rebuild))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, rebuild: Any = None) -> Any:
        x, cs = ins[0], ins[1:]
        return into(out, _ops(self.dw)["pull"](x, g, *cs, batch=b, rebuild=rebuild))


def _traced(*args: Any) -> bool:
    return any(isinstance(a, Traced) for a in args)


class _Push(_Op):
    """(x, t) -> J(x) t (t with a leading batch axis when b)."""

    def forward(self, x: Any, t: Any, *cs: Any, out: Any = None, batch: int = 0, rebuild: Any = None) -> Any:
        inner = self.dw.inner
        return into(out, inner.batched(inner.pushforward, np.asarray(x), np.asarray(t), rebuild(cs), batch))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **params: Any) -> Any:
        raise self.dw.inner.third_order()

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **params: Any) -> Any:
        raise self.dw.inner.third_order()


class _Pull(_Op):
    """(x, g) -> g J(x) (g with a leading batch axis when b)."""

    def forward(self, x: Any, g: Any, *cs: Any, out: Any = None, batch: int = 0, rebuild: Any = None) -> Any:
        inner = self.dw.inner
        return into(out, inner.batched(inner.pullback, np.asarray(x), np.asarray(g), rebuild(cs), batch))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **params: Any) -> Any:
        # recorded sweeps are unbatched (b of the recorded pullback is 0): the tangent of g J(x)
        x, g, cs = ins[0], ins[1], ins[2:]
        tx, tg = ts[0], ts[1]
        rebuild = params["rebuild"]
        if params.get("batch", 0):
            raise self.dw.inner.third_order()
        ops = _ops(self.dw)
        r = None
        if tx is not None:
            r = ops["hvp"](x, g, tx, *cs, batch=b, rebuild=rebuild)
        if tg is not None:
            more = ops["pull"](x, tg, *cs, batch=b, rebuild=rebuild)
            r = more if r is None else r + more
        return into(out, r)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, *_: Any, **params: Any) -> Any:
        raise self.dw.inner.third_order()


class _Hvp(_Op):
    """(x, g, v) -> the derivative of g J(x) along v (v batched when b)."""

    def forward(self, x: Any, g: Any, v: Any, *cs: Any, out: Any = None, batch: int = 0, rebuild: Any = None) -> Any:
        inner = self.dw.inner
        x, g, v = np.asarray(x), np.asarray(g), np.asarray(v)
        cs = rebuild(cs)
        return into(out, inner.batched(lambda x, v, cs: inner.hvp(x, g, v, cs), x, v, cs, batch))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **params: Any) -> Any:
        raise self.dw.inner.third_order()

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **params: Any) -> Any:
        raise self.dw.inner.third_order()


def _ops(dw: Any) -> dict:
    ops = dw._outer.get("tape")
    if ops is None:
        ops = {"value": _Value(dw, "value", 1), "push": _Push(dw, "pushforward", 2)}
        ops["pull"] = _Pull(dw, "pullback", 2)
        ops["hvp"] = _Hvp(dw, "hvp", 3)
        dw._outer["tape"] = ops
    return ops


def call(dw: Any, x: Any, constants: tuple) -> Any:
    arrays, rebuild = split_constants(constants)
    return _ops(dw)["value"](x, *arrays, rebuild=rebuild)


class TapeBoundary:
    """AutoTape outside `DifferentiateWith` (a `diface._boundary.Boundary`)."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, Traced)

    def call(self, dw: Any, x: Any, constants: tuple) -> Any:
        return call(dw, x, constants)

    def inner_pushforward(self, f: Any, x: np.ndarray, t: np.ndarray, constants: tuple) -> None:
        return None
