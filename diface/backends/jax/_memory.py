"""JAX's side of `di.scan` (`Memory.scan`): one program of nested `lax.scan`s. `checkpoints=None` is
`lax.scan` of the step (every step's residuals kept); `"sqrt"` a `lax.scan` over segments of
`ceil(sqrt(n))` steps, each a `jax.checkpoint`ed inner `lax.scan` (one carry kept per segment; a
segment's steps re-linearized when the reverse sweep reaches it).

An int `s`: `d` nested `lax.scan`s of `b_1, ..., b_d` iterations (b_1 * ... * b_d >= n, the steps past n
skipped by `lax.cond`), each level's body `jax.checkpoint`ed, with b_1 + ... + b_d <= s: a level keeps
the carries entering its b_k bodies, so at most s carries are kept at any time (besides one step's
residuals), and the reverse sweep evaluates each step about d + 1 times. `d` is the smallest depth whose
branchings fit in s. This is not the binomial (Revolve) schedule, which no composition of `lax.scan`
and `jax.checkpoint` expresses with a program whose size does not grow with n (the binomial schedule
as nested `jax.checkpoint`s of an unrolled loop compiled for minutes at n = 30); it needs more
evaluations than `revolve_bound(n, s) + n`, and some (n, s) fit no such nesting (n > 3^(s/3) about:
`NotSupportedError`, naming the smallest s that fits, or `"sqrt"`). Everything JAX transforms (jvp,
vmap, second order) goes through, as it does through `jax.checkpoint` and `lax.scan`.

On JAX `step` receives `i` as an int32 array (traced inside `lax.scan`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ..._errors import NotSupportedError

__all__ = ["Memory"]


class Memory:
    """JAX's `MemoryHooks`."""

    #: `checkpoints=None` compiles to one `lax.scan` too (rather than the plain Python loop)
    loop_program = True

    def owns(self, a: Any) -> bool:
        return isinstance(a, (jax.Array, jax.core.Tracer))

    def scan(self, step: Callable, carry: Any, n: int, schedule: Any, outputs: bool) -> Any:
        return _scan(step, carry, n, schedule, outputs)


def _body(step: Callable, outputs: bool) -> Callable:
    def body(c: Any, i: Any) -> tuple[Any, Any]:
        r = step(c, i)
        return r if outputs else (r, None)

    return body


def _indices(start: int, count: int) -> Any:
    return jnp.arange(start, start + count, dtype=jnp.int32)


def _scan(step: Callable, carry: Any, n: int, schedule: Any, outputs: bool) -> Any:
    if n == 0:
        return carry
    body = _body(step, outputs)
    if schedule is None:
        carry, ys = jax.lax.scan(body, carry, _indices(0, n))
    elif schedule == "sqrt":
        carry, ys = _sqrt(body, carry, n)
    else:
        carry, ys = _nested(step, body, carry, n, int(schedule), outputs)
    return (carry, ys) if outputs else carry


def _segment(body: Callable) -> Callable:
    @jax.checkpoint
    def segment(c: Any, idx: Any) -> tuple[Any, Any]:
        return jax.lax.scan(body, c, idx)

    return segment


def _sqrt(body: Callable, carry: Any, n: int) -> tuple[Any, Any]:
    length = next(k for k in range(1, n + 1) if k * k >= n)
    full, rest = divmod(n, length)
    segment = _segment(body)
    carry, ys = jax.lax.scan(segment, carry, _indices(0, full * length).reshape(full, length))
    ys = jax.tree_util.tree_map(lambda y: y.reshape((full * length, *y.shape[2:])), ys)
    if rest:
        carry, tail = segment(carry, _indices(full * length, rest))
        ys = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), ys, tail)
    return carry, ys


def levels(n: int, s: int) -> list[int] | None:
    """The branchings b_1..b_d (product >= n, sum <= s) of the smallest depth d, or None if none fits."""
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


def _smallest_fitting(n: int) -> int:
    s = 1
    while levels(n, s) is None:
        s += 1
    return s


def _nested(step: Callable, body: Callable, carry: Any, n: int, s: int, outputs: bool) -> tuple[Any, Any]:
    bs = levels(n, s)
    if bs is None:
        raise NotSupportedError(
            f"di.scan on JAX: checkpoints={s} cannot hold {n} steps as nested checkpointed lax.scans (a "
            f"level of b steps keeps b carries, and the levels' b multiply to n at least): pass "
            f'checkpoints={_smallest_fitting(n)} or more, or checkpoints="sqrt"'
        )
    total = math.prod(bs)
    if total > n:  # the steps past n are skipped
        out_shape = jax.eval_shape(body, carry, jnp.asarray(0, dtype=jnp.int32))[1]

        def guarded(c: Any, i: Any) -> tuple[Any, Any]:
            def skip(c: Any) -> tuple[Any, Any]:
                return c, jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), out_shape)

            return jax.lax.cond(i < n, lambda c: body(c, i), skip, c)

        inner = guarded
    else:
        inner = body

    def level(k: int, c: Any, base: Any) -> tuple[Any, Any]:
        stride = math.prod(bs[k + 1 :])
        if k == len(bs) - 1:
            fn = jax.checkpoint(lambda c, j: inner(c, base + j))
        else:
            fn = jax.checkpoint(lambda c, j: level(k + 1, c, base + j * stride))
        return jax.lax.scan(fn, c, jnp.arange(bs[k], dtype=jnp.int32))

    carry, ys = level(0, carry, jnp.asarray(0, dtype=jnp.int32))
    if outputs:
        ys = jax.tree_util.tree_map(lambda y: y.reshape((total, *y.shape[len(bs) :]))[:n], ys)
    return carry, ys
