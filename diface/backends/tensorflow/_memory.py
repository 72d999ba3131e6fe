"""TensorFlow's side of `di.checkpoint` (and `di.scan`): a `tf.custom_gradient` that keeps only the
function's inputs (the function runs with the tape paused, as a single op) and, when a tape's backward pass
reaches it, runs the function again under a tape of its own to rebuild what it needs: `tf.recompute_grad`'s
mechanism. Not `tf.recompute_grad` itself, which refuses every forward-mode accumulator (forward over
reverse, TensorFlow's JVP of a custom gradient, raises "tried to transpose grad"): this gradient is itself
recorded by outer tapes and accumulators, so Hessians and Hessian-vector products (reverse over reverse,
forward over reverse) nest through it.

A custom gradient has derivatives for its arguments only: a function reading a tensor under
differentiation that it is not given (a closure over a value computed from x) would lose that tensor's
derivative: a first run on copies of the arguments no tape or accumulator follows finds such a
tensor (its output is then still followed) and raises `NotSupportedError` (pass the tensor as an argument).
That run costs one more forward pass of the function, and keeps nothing.

`di.scan` (`Memory.scan`): `diface._memory.nested`'s checkpointed levels, each a custom gradient as above
but without its own check: the whole loop runs once first, plainly on untracked copies of the carry, as
the closure check (per call, the check would double the step evaluations at every level)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf
from tensorflow.python.eager import forwardprop_util, record

from ..._call.trees.registry import _own_flatten
from ..._errors import NotSupportedError
from ..._memory.checkpoint import split_arrays
from ..._memory.loop import run
from ..._memory.nested import nested_scan

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for TensorFlow tensors and variables."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, (tf.Tensor, tf.Variable))

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        arrays, call = split_arrays(fn, args, kwargs, self.owns)
        _refuse_closures(fn, call, arrays)
        return _recomputed(call)(*arrays)

    def scan(self, step: Callable, carry: Any, n: int, schedule: Any, outputs: bool) -> Any:
        # the closure check once, on the whole loop run plainly (n more step evaluations, nothing kept), rather
        # than at every checkpointed call of every level (which doubles the evaluations per level)
        arrays, call = split_arrays(lambda c: run(step, c, n, outputs), (carry,), {}, self.owns)
        try:
            _refuse_closures(step, call, arrays, "di.scan's step")
        except NotSupportedError as e:
            raise NotSupportedError(f"{e}: in di.scan, pass it in the carry (the step returning it unchanged)") from e
        return nested_scan(_unchecked, step, carry, n, schedule, outputs, tf.stack)


def _unchecked(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """`Memory.checkpoint` without the closure check (`Memory.scan` checks the whole loop once)."""
    arrays, call = split_arrays(fn, args, kwargs, lambda a: isinstance(a, (tf.Tensor, tf.Variable)))
    return _recomputed(call)(*arrays)


def _refuse_closures(fn: Callable, call: Callable, arrays: list, what: str | None = None) -> None:
    """A custom gradient has derivatives for its arguments (and the variables it reads) only: a function
    reading a tensor under differentiation that it is not given would lose that tensor's derivative. A run
    on copies of the arguments no tape or accumulator follows tells: its output is followed only through
    such a tensor (no tape records it otherwise, so it keeps nothing)."""
    with record.stop_recording():
        fresh = [tf.identity(a) for a in arrays]
    leaves, _ = _own_flatten(call(*fresh))
    tensors = [leaf for leaf in leaves if isinstance(leaf, (tf.Tensor, tf.Variable))]
    if record.should_record_backprop(tensors) or any(forwardprop_util.pack_tangents(tensors).indices):
        what = what or f"di.checkpoint({getattr(fn, '__name__', 'fn')})"
        raise NotSupportedError(
            f"{what}: on TensorFlow the function reads a tensor or variable "
            "being differentiated that it is not given as an argument (a closure over a value computed from x, "
            "or a variable a tape watches); pass it to the function as an argument"
        )


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
            grads = [tf.zeros_like(a) if g is None else g for a, g in zip([*inputs, *watched], grads)]
            if variables is None:
                return grads
            return grads[: len(inputs)], grads[len(inputs) :]

        return out, grad

    return run
