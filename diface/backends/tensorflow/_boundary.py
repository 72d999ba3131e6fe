"""`DifferentiateWith` with TensorFlow outside: `tf.custom_gradient` ops for f, its pullback, pushforward
and hvp, each asking the inner backend (`dw.inner`) on host NumPy arrays (eagerly directly, inside a
`tf.function` through `tf.numpy_function`).

Each op's gradient is the next op: f's is the pullback; the pullback's (in x and in the cotangent) are
the hvp and the pushforward; the pushforward's are the hvp and the pullback. So a tape over a tape
(reverse over reverse) and a `ForwardAccumulator` (whose products TensorFlow derives from the gradient
functions by the double-backward trick, forward over reverse included) cross the boundary. The hvp's
gradient in its direction is an hvp again (the Hessian is symmetric); in x and the cotangent it is a
third derivative, which raises when it is computed in a graph and is NaN eagerly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._boundary import split_constants
from ..._engines import engine_of
from ..._errors import NotSupportedError
from ._env import tf

__all__ = ["TensorFlowBoundary"]


class TensorFlowBoundary:
    """TensorFlow outside `DifferentiateWith` (a `diface._boundary.Boundary`)."""

    def __init__(self) -> None:
        self.tf = tf()

    def owns(self, a: Any) -> bool:
        return isinstance(a, (self.tf.Tensor, self.tf.Variable))

    def call(self, dw: Any, x: Any, constants: tuple) -> Any:
        tf_ = self.tf
        engine = engine_of(dw.inner.backend)
        if engine is not None and engine.name == "tensorflow":
            # TensorFlow inside too: f is TensorFlow code, which the outer computation differentiates as it is
            # (the same derivatives, in every mode and inside tf.function, without crossing through the host)
            return dw.inner.f(x, *constants)
        if not isinstance(x, (tf_.Tensor, tf_.Variable)):
            x = tf_.convert_to_tensor(np.asarray(x))
        arrays, rebuild = split_constants(constants)
        return _Crossing(dw, x, [tf_.convert_to_tensor(a) for a in arrays], rebuild).value(x)

    def inner_pushforward(self, f: Any, x: np.ndarray, t: np.ndarray, constants: tuple) -> np.ndarray | None:
        return None  # TensorFlow inside: its prepared pushforward


def _refuse_forward_in_graph(f: Any, *tensors: Any) -> None:
    """A `ForwardAccumulator` inside a traced `tf.function` gives no tangent through `tf.custom_gradient`
    (it would silently be zero): `NotSupportedError` saying what works instead."""
    from tensorflow.python.eager import forwardprop_util

    if forwardprop_util.pack_tangents(list(tensors)).tangents:
        raise NotSupportedError(
            f"DifferentiateWith({getattr(f, '__name__', 'f')}, ...): TensorFlow's forward mode (ForwardAccumulator) "
            "does not cross the boundary inside a traced tf.function; use AutoTensorFlow(mode='reverse') (and "
            "di.SecondOrder(di.AutoTensorFlow('reverse'), di.AutoTensorFlow('reverse')) for second order), or "
            "AutoTensorFlow(jit=False), which crosses in both modes"
        )


def _host(fn: Callable, like: Any, *tensors: Any, shape: Any = None) -> Any:
    """`fn` of the tensors' NumPy values as a tensor of `like`'s dtype (and `shape`, else `like`'s):
    directly when eager, through `tf.numpy_function` in a graph."""
    tf_ = tf()
    dtype = like.dtype
    if tf_.executing_eagerly():
        return tf_.convert_to_tensor(np.asarray(fn(*(np.asarray(t) for t in tensors)), dtype=dtype.as_numpy_dtype))
    _refuse_forward_in_graph(fn, *tensors)
    out = tf_.numpy_function(
        lambda *a: np.asarray(fn(*a), dtype=dtype.as_numpy_dtype), list(tensors), dtype, stateful=False
    )
    out.set_shape(like.shape if shape is None else shape)
    return out


class _Crossing:
    """f of one `DifferentiateWith` call, its products as `tf.custom_gradient` ops (see the module docstring)."""

    def __init__(self, dw: Any, x: Any, arrays: list, rebuild: Callable) -> None:
        self.inner, self.arrays, self.rebuild = dw.inner, arrays, rebuild
        self.f = dw.inner.f
        self.n = len(arrays)
        self.y_shape, self.y_dtype = self._y_spec(x)

    @staticmethod
    def call(op: Callable, *args: Any) -> Any:
        return op(*args)

    def _constants(self, values: tuple) -> tuple:
        return self.rebuild([np.asarray(v) for v in values])

    def _y_spec(self, x: Any) -> tuple:
        """f's output shape and dtype: from x's value when eager, else from f at ones of x's spec."""
        tf_ = tf()
        if tf_.executing_eagerly():
            return None, None
        point = np.ones(x.shape, x.dtype.as_numpy_dtype)
        constants = self.rebuild(
            [np.asarray(a) if hasattr(a, "numpy") else np.ones(a.shape, a.dtype.as_numpy_dtype) for a in self.arrays]
        )
        y = self.call(self.inner.value, point, constants)
        return y.shape, tf_.as_dtype(y.dtype)

    def value(self, x: Any) -> Any:
        tf_ = tf()
        crossing = self

        @tf_.custom_gradient
        def value(x: Any) -> Any:
            fn = lambda x, *cs: crossing.call(crossing.inner.value, x, crossing._constants(cs))
            if tf_.executing_eagerly():
                y = tf_.convert_to_tensor(fn(np.asarray(x), *(np.asarray(a) for a in crossing.arrays)))
            else:
                _refuse_forward_in_graph(crossing.f, x)
                y = tf_.numpy_function(fn, [x, *crossing.arrays], crossing.y_dtype, stateful=False)
                y.set_shape(crossing.y_shape)

            def grad(gy: Any) -> Any:
                return crossing.pullback(x, gy)

            return y, grad

        return value(x)

    def pullback(self, x: Any, g: Any) -> Any:
        tf_ = tf()
        crossing = self

        @tf_.custom_gradient
        def pullback(x: Any, g: Any) -> Any:
            fn = lambda x, g, *cs: crossing.call(crossing.inner.pullback, x, g, crossing._constants(cs))
            r = _host(fn, x, x, g, *crossing.arrays)

            def grad(w: Any) -> Any:
                return crossing.hvp(x, g, w), crossing.pushforward(x, w)

            return r, grad

        return pullback(x, g)

    def pushforward(self, x: Any, t: Any) -> Any:
        tf_ = tf()
        crossing = self

        @tf_.custom_gradient
        def pushforward(x: Any, t: Any) -> Any:
            fn = lambda x, t, *cs: crossing.call(crossing.inner.pushforward, x, t, crossing._constants(cs))
            if tf_.executing_eagerly():
                r = tf_.convert_to_tensor(fn(np.asarray(x), np.asarray(t), *(np.asarray(a) for a in crossing.arrays)))
            else:
                _refuse_forward_in_graph(crossing.f, x, t)
                r = tf_.numpy_function(fn, [x, t, *crossing.arrays], crossing.y_dtype, stateful=False)
                r.set_shape(crossing.y_shape)

            def grad(w: Any) -> Any:
                return crossing.hvp(x, w, t), crossing.pullback(x, w)

            return r, grad

        return pushforward(x, t)

    def hvp(self, x: Any, g: Any, v: Any) -> Any:
        tf_ = tf()
        crossing = self

        @tf_.custom_gradient
        def hvp(x: Any, g: Any, v: Any) -> Any:
            fn = lambda x, g, v, *cs: crossing.call(crossing.inner.hvp, x, g, v, crossing._constants(cs))
            r = _host(fn, x, x, g, v, *crossing.arrays)

            def grad(w: Any) -> Any:
                # in v: H_g w (H_g symmetric); in x and g: third derivatives, which raise when computed
                return crossing.third(x), crossing.third(g), crossing.hvp(x, g, w)

            return r, grad

        return hvp(x, g, v)

    def third(self, like: Any) -> Any:
        inner = self.inner

        def refuse(a: Any) -> Any:
            raise inner.third_order()

        tf_ = tf()
        if tf_.executing_eagerly():
            # eagerly a ForwardAccumulator runs every gradient function of its double-backward trick (this one
            # included, for second order), so nothing can raise here: a third derivative comes out NaN, never
            # a plausible number (in a graph, the op below raises if a third derivative is computed)
            return tf_.fill(like.shape, tf_.constant(np.nan, like.dtype))
        out = tf_.numpy_function(refuse, [like], like.dtype, stateful=False)
        out.set_shape(like.shape)
        return out
