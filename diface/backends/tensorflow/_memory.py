"""TensorFlow's side of `di.checkpoint` (and `di.scan`): a `tf.custom_gradient` that keeps only the
function's inputs (the function runs with the tape paused, as a single op) and, when a tape's backward pass
reaches it, runs the function again under a tape of its own to rebuild what it needs: `tf.recompute_grad`'s
mechanism. Not `tf.recompute_grad` itself, which refuses every forward-mode accumulator (forward over
reverse, TensorFlow's JVP of a custom gradient, raises "tried to transpose grad"): this gradient is itself
recorded by outer tapes and accumulators, so Hessians and Hessian-vector products (reverse over reverse,
forward over reverse) nest through it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from ..._memory.checkpoint import split_arrays

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for TensorFlow tensors and variables."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, (tf.Tensor, tf.Variable))

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        arrays, call = split_arrays(fn, args, kwargs, self.owns)
        return _recomputed(call)(*arrays)


def _recomputed(call: Callable) -> Callable:
    @tf.custom_gradient
    def run(*arrays: Any) -> Any:
        out = call(*arrays)

        def grad(*cotangents: Any, variables: Any = None) -> Any:
            watched = list(variables or ())  # variables the function reads: their gradients too
            # fresh tensors: an array passed twice has a gradient per place it is passed at
            inputs = [tf.identity(a) for a in arrays]
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                again = call(*inputs)
            ct = cotangents[0] if len(cotangents) == 1 else list(cotangents)
            grads = tape.gradient(again, [*inputs, *watched], output_gradients=ct)
            grads = [tf.zeros_like(a) if g is None else g for a, g in zip([*arrays, *watched], grads)]
            if variables is None:
                return grads
            return grads[: len(arrays)], grads[len(arrays) :]

        return out, grad

    return run
