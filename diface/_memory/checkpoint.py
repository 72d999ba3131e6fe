"""`di.checkpoint(fn)`: `fn` whose intermediates reverse mode recomputes from its inputs instead of keeping.

The wrapper finds the engine whose arrays or traced values `fn` is called with (`engines.hooks_for`) and
lets that engine call `fn` with its own recomputation (`jax.checkpoint`, `torch.utils.checkpoint`, a
TensorFlow custom gradient and an autograd primitive whose rules trace `fn` again, PyTensor's
`OpFromGraph`, the tape's marks; MLX runs `fn` as it is: see `diface.backends.mlx._memory`). Called
with values no engine owns (NumPy arrays, numbers: finite differences, or outside any derivative)
nothing is stored, so `fn` is simply called.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._call.trees.registry import _own_flatten, _own_unflatten
from .._errors import ArgumentError
from .engines import hooks_for

__all__ = ["checkpoint", "split_arrays"]


def checkpoint(fn: Callable) -> Callable:
    """`fn` as it is, except that, called inside a function an engine differentiates in reverse mode, its
    intermediates are not kept: they are recomputed from its inputs when the reverse pass reaches it, by
    the engine's own mechanism. Arguments and results may be trees (dict, list, tuple). Forward mode and
    finite differences store nothing, and there it is `fn` itself (on MLX too, which cannot recompute
    without risking a derivative). Where the engine's rule has derivatives for its arguments only
    (TensorFlow, autograd), a function reading a traced value it is not given
    (a closure over a value computed from x) raises `NotSupportedError`: pass that value as an argument
    (docs/memory.md).

    Example:
        >>> import numpy as np, jax.numpy as jnp, diface as di
        >>> g = di.checkpoint(lambda u: jnp.tanh(u) * u)  # jax.checkpoint under AutoJAX
        >>> f = lambda x: jnp.sum(g(g(x)))
        >>> x = np.array([0.5, -1.0], np.float32)
        >>> di.gradient(f, di.AutoJAX(), x).round(4)
        array([ 0.3816, -1.2875], dtype=float32)
    """
    if not callable(fn):
        raise ArgumentError(f"di.checkpoint: fn must be a function, got {type(fn).__name__} {fn!r:.60}")

    @functools.wraps(fn)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        leaves, _ = _own_flatten((args, kwargs))
        hooks = hooks_for(leaves)
        if hooks is None:
            return fn(*args, **kwargs)
        return hooks.checkpoint(fn, args, kwargs)

    return checkpointed


def split_arrays(
    fn: Callable, args: tuple, kwargs: dict, is_array: Callable[[Any], bool]
) -> tuple[list, Callable[..., Any]]:
    """The array leaves of `(args, kwargs)` (those `is_array` takes), and `fn` as a function of them alone
    (the other leaves, flags and objects, held as they are): what an engine's recomputation primitive takes,
    positional arrays."""
    leaves, spec = _own_flatten((args, kwargs))
    where = [i for i, leaf in enumerate(leaves) if is_array(leaf)]
    arrays = [leaves[i] for i in where]

    def call(*values: Any) -> Any:
        full = list(leaves)
        for i, v in zip(where, values):
            full[i] = v
        a, k = _own_unflatten(spec, full)
        return fn(*a, **k)

    return arrays, call
