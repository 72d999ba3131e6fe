"""TensorFlow's own fastest calls of the benchmarked operators (`python -m diface bench`): each a
`tf.function` with a fixed input signature around `GradientTape` / `ForwardAccumulator`, as a TensorFlow
user writes them; `direct(operator, f, x, v, numpy_in)` returns `(description, thunk)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._env import tf

__all__ = ["direct"]


def direct(operator: str, f: Callable, x: np.ndarray, v: np.ndarray, numpy_in: bool) -> Any:
    tf_ = tf()
    from . import _namespace as tnp

    g = lambda x: f(tnp, x)
    spec = tf_.TensorSpec(x.shape, tf_.as_dtype(x.dtype))
    tv = tf_.constant(v)

    def gradient(x: Any) -> Any:
        with tf_.GradientTape() as tape:
            tape.watch(x)
            y = g(x)
        return tape.gradient(y, x)

    def hvp(x: Any) -> Any:
        with tf_.autodiff.ForwardAccumulator(x, tv) as acc:
            grad = gradient(x)
        return acc.jvp(grad)

    def jacrev(x: Any) -> Any:
        with tf_.GradientTape() as tape:
            tape.watch(x)
            y = g(x)
        return tape.jacobian(y, x)

    def hessian(x: Any) -> Any:
        with tf_.GradientTape() as tape:
            tape.watch(x)
            grad = gradient(x)
        return tape.jacobian(grad, x)

    table: dict[str, dict[str, Callable[[Any], Any]]] = {
        "gradient": {"tf.function(GradientTape.gradient)": gradient},
        "hvp": {"tf.function(ForwardAccumulator around GradientTape)": hvp},
        "jacobian": {"tf.function(GradientTape.jacobian)": jacrev},
        "hessian": {"tf.function(GradientTape.jacobian of the gradient)": hessian},
    }
    compiled = {name: tf_.function(fn, input_signature=[spec], autograph=False) for name, fn in table[operator].items()}
    tx = tf_.constant(x)

    def thunk(fn: Any) -> Callable[[], Any]:
        fn.get_concrete_function()
        if numpy_in:
            return lambda: fn(x).numpy()
        return lambda: fn(tx)

    ((name, fn),) = compiled.items()
    return name, thunk(fn)
