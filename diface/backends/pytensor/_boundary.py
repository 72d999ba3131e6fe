"""Outer engine PyTensor (`DifferentiateWith`): f becomes a `pytensor.graph.Op` whose `perform` calls the
inner backend through host NumPy arrays. Its `L_op` is another Op, the inner pullback, and its `R_op` the
inner pushforward; the pullback's own `L_op` gives the inner Hessian-vector product (with respect to x)
and the pushforward (with respect to the cotangent), so second order crosses the boundary (reverse over
reverse, as `pytensor.hessian` takes it). Array constants that are symbolic are inputs of the Op, not
differentiated; the others are held by it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply, Variable
from pytensor.graph.op import Op

__all__ = ["PyTensorBoundary"]


class _Boundary(Op):
    """One of the inner backend's maps at the boundary: `kind` in value, pull, push, hvp."""

    def __init__(self, dw: Any, kind: str, constants: tuple, symbolic: tuple, out_spec: tuple) -> None:
        self.dw, self.kind, self.constants, self.symbolic = dw, kind, constants, symbolic
        self.out_spec = out_spec  # (shape, dtype) of the output

    def make_node(self, *args: Any) -> Apply:
        inputs = [pt.as_tensor_variable(v) for v in args]
        shape, dtype = self.out_spec
        return Apply(self, inputs, [pt.tensor(dtype=dtype, shape=shape)])

    def _constants(self, arrays: list) -> tuple:
        it = iter(arrays)
        return tuple(np.asarray(next(it)) if s else c for c, s in zip(self.constants, self.symbolic))

    def perform(self, node: Any, inputs: Any, outputs: Any) -> None:
        inner, n = self.dw.inner, {"value": 1, "pull": 2, "push": 2, "hvp": 3}[self.kind]
        args = [np.asarray(a) for a in inputs[:n]]
        cs = self._constants(list(inputs[n:]))
        if self.kind == "value":
            r = inner.value(args[0], cs)
        elif self.kind == "pull":
            r = inner.pullback(args[0], args[1], cs)
        elif self.kind == "push":
            r = inner.pushforward(args[0], args[1], cs)
        else:
            r = inner.hvp(args[0], args[1], args[2], cs)
        outputs[0][0] = np.asarray(r, dtype=self.out_spec[1])

    def _op(self, kind: str, spec: tuple) -> _Boundary:
        return _Boundary(self.dw, kind, self.constants, self.symbolic, spec)

    def L_op(self, inputs: Any, outputs: Any, output_grads: Any) -> Any:
        gz = output_grads[0]
        x, consts = inputs[0], inputs[{"value": 1, "pull": 2, "push": 2, "hvp": 3}[self.kind] :]
        x_spec = (x.type.shape, x.type.dtype)
        none = [disconnected_type() for _ in consts]
        if self.kind == "value":
            return [self._op("pull", x_spec)(x, gz, *consts), *none]
        if self.kind == "pull":  # pull(x, g): d/dx <pull(x, g), w> = hvp(x, g, w); d/dg = push(x, w)
            g = inputs[1]
            y_spec = (g.type.shape, g.type.dtype)
            return [self._op("hvp", x_spec)(x, g, gz, *consts), self._op("push", y_spec)(x, gz, *consts), *none]
        if self.kind == "push":  # push(x, t): d/dx <w, J(x) t> = hvp(x, w, t); d/dt = pull(x, w)
            t = inputs[1]
            return [self._op("hvp", x_spec)(x, gz, t, *consts), self._op("pull", x_spec)(x, gz, *consts), *none]
        raise self.dw.inner.third_order()

    def R_op(self, inputs: Any, eval_points: Any) -> Any:
        if self.kind != "value":
            raise self.dw.inner.third_order()
        x, consts = inputs[0], inputs[1:]
        return [self._op("push", self.out_spec)(x, eval_points[0], *consts)]


def call(dw: Any, x: Any, constants: tuple) -> Any:
    x = pt.as_tensor_variable(x)
    if any(s is None for s in x.type.shape):
        raise TypeError("DifferentiateWith inside PyTensor needs x of a static shape")
    symbolic = tuple(isinstance(c, Variable) for c in constants)
    ones = np.ones(x.type.shape, x.type.dtype)
    probe = tuple(np.ones(c.type.shape, c.type.dtype) if s else c for c, s in zip(constants, symbolic))
    key = ("pytensor-out", x.type.shape, x.type.dtype, tuple((np.shape(c), str(np.result_type(c))) for c in probe))
    y_spec = dw._outer.get(key)
    if y_spec is None:
        y = dw.inner.value(ones, probe)
        y_spec = dw._outer[key] = (tuple(y.shape), y.dtype.name)
    op = _Boundary(dw, "value", tuple(constants), symbolic, y_spec)
    return op(x, *(c for c, s in zip(constants, symbolic) if s))


class PyTensorBoundary:
    """PyTensor outside `DifferentiateWith` (a `diface._boundary.Boundary`)."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, Variable)

    def call(self, dw: Any, x: Any, constants: tuple) -> Any:
        return call(dw, x, constants)

    def inner_pushforward(self, f: Any, x: np.ndarray, t: np.ndarray, constants: tuple) -> None:
        return None
