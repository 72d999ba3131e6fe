"""`di.scan` from nothing but an engine's `checkpoint`: nested checkpointed segments of the loop, run as
Python loops, for the engines whose own means are a recomputation primitive and no loop program
(autograd, TensorFlow, PyTensor).

A *plan* is `d` levels of `b_1, ..., b_d` iterations over a leaf of `L` steps (`b_1 * ... * b_d * L >= n`):
level 0 calls `b_1` children, each a checkpointed call of level 1, ..., level `d - 1` calls `b_d`
checkpointed leaves, each a plain loop of `L` steps. Children or steps past `n` are not called (the loop
is Python's, so no condition is traced). Reverse mode keeps, at any time, the inputs of each active
level's children, at most `b_1 + ... + b_d` carries, besides one leaf's intermediates (`L` steps'), and a
gradient evaluates each step `d + 1` times (once forward, once more per checkpointed level on the way
back: the engine's checkpoint hook is assumed to run its function once forward and once in reverse; see
docs/memory.md for what each engine's hook adds).

- `"sqrt"`: one level of `ceil(n / L)` segments of `L = ceil(sqrt(n))` steps.
- an int `s`: JAX's nesting (`diface.backends.jax._memory`): the smallest `d` whose balanced branchings
  `b_k` (product >= n) sum to at most `s`, over leaves of one step (`L = 1`: every step its own
  checkpointed call, so only one step's intermediates are alive). Where no nesting fits (n above about
  `3^(s/3)`), the branchings of largest product with sum <= s (parts of 3, and 2 or 4; the fewest levels
  among equals; `[1]` for s = 1) over leaves of `L = ceil(n / (b_1 * ... * b_d))` steps: still at most
  `s` carries, but then `L` steps' intermediates too.

>>> plan(100, "sqrt"), plan(7, 6), plan(7, 3), plan(1000, 10), plan(5, 1)
(([10], 10), ([3, 3], 1), ([3], 3), ([4, 3, 3], 28), ([1], 5))
>>> import numpy as np
>>> nested_scan(lambda fn, args, kwargs: fn(*args, **kwargs), lambda c, i: c + i, np.zeros(2), 5, 3, False)
array([10., 10.])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from diface._errors import NotSupportedError

from .loop import run, stack_outputs

__all__ = ["levels", "nested_scan", "plan"]


def levels(n: int, s: int) -> list[int] | None:
    """The branchings b_1..b_d (product >= n, sum <= s) of the smallest depth d, or None if none fits
    (JAX's nesting: for each d the balanced branchings of least sum).

    >>> levels(7, 6), levels(7, 3), levels(1000, 30)
    ([3, 3], None, [10, 10, 10])
    """
    d = 1
    while True:
        b = 1
        while b**d < n:
            b += 1
        bs = [b] * d
        for k in range(d):
            while bs[k] > 1 and math.prod(bs) // bs[k] * (bs[k] - 1) >= n:
                bs[k] -= 1
        if sum(bs) <= s:
            return bs
        if b <= 2:
            return None
        d += 1


def _largest_product(s: int) -> list[int]:
    """Parts >= 2 summing to at most s of the largest product, the fewest parts among equals ([1] for s = 1)."""
    if s < 2:
        return [1]
    best: list[tuple[int, int, list[int]]] = [(1, 0, [])] * (s + 1)  # (product, -parts, parts) per sum
    for total in range(2, s + 1):
        options = [best[total - 1]]
        for part in range(2, total + 1):
            p, neg, parts = best[total - part]
            options.append((p * part, neg - 1, [*parts, part]))
        best[total] = max(options, key=lambda o: (o[0], o[1]))
    return sorted(best[s][2], reverse=True)


def plan(n: int, checkpoints: int | str) -> tuple[list[int], int]:
    """(branchings b_1..b_d, leaf length L) for `n >= 1` steps (see the module's docstring)."""
    if checkpoints == "sqrt":
        length = math.isqrt(n - 1) + 1 if n > 1 else 1  # ceil(sqrt(n))
        return [-(-n // length)], length
    assert isinstance(checkpoints, int)
    bs = levels(n, checkpoints)
    if bs is not None:
        return bs, 1
    bs = _largest_product(checkpoints)
    return bs, -(-n // math.prod(bs))


def nested_scan(
    checkpoint: Callable[[Callable, tuple, dict], Any],
    step: Callable[[Any, int], Any],
    carry: Any,
    n: int,
    checkpoints: int | str,
    outputs: bool,
    stack: Callable[[list], Any] | None = None,
) -> Any:
    """`carry = step(carry, i)` for i in range(n) as nested checkpointed segments (`plan(n, checkpoints)`):
    the final carry, or with `outputs` (`step` returning `(carry, output)`) `(carry, outputs)`, stacked
    leafwise by `stack` (default: the outputs' own namespace). `checkpoint(fn, args, kwargs)` is the
    engine's hook (`MemoryHooks.checkpoint`); it is given functions of the carry alone (closing over `step`
    and Python ints), so a step reading traced values outside its carry meets the hook's own rule (on
    TensorFlow and autograd, `NotSupportedError`: pass them in the carry)."""
    if n == 0:
        return carry
    bs, length = plan(n, checkpoints)
    strides = [math.prod(bs[k + 1 :]) * length for k in range(len(bs))]

    def leaf(start: int) -> Callable:
        def steps(c: Any) -> Any:
            r = run(step, c, min(length, n - start), outputs, start)
            return (r[0], list(r[1])) if outputs else r

        return steps

    def level(k: int, start: int) -> Callable:
        if k == len(bs):
            return leaf(start)

        def calls(c: Any) -> Any:
            outs: list = []
            for j in range(bs[k]):
                child = start + j * strides[k]
                if child >= n:
                    break
                r = checkpoint(level(k + 1, child), (c,), {})
                if outputs:
                    c, more = r
                    outs.extend(more)
                else:
                    c = r
            return (c, outs) if outputs else c

        return calls

    try:
        result = level(0, 0)(carry)
    except NotSupportedError as e:
        raise NotSupportedError(
            f"di.scan: {e}. In di.scan, pass such a value in the carry (the step returning it unchanged)"
        ) from e
    if not outputs:
        return result
    carry, outs = result
    return carry, stack_outputs(outs, stack)
