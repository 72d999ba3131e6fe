"""JAX's side of `di.checkpoint`: `jax.checkpoint`, which JAX's own transformations (`jit`, `grad`,
`jvp`, `vmap`, nested to any order) know: reverse mode saves only the function's inputs and recomputes
the rest when the pullback reaches it.

JAX's side of `di.scan` (`Memory.scan`): one program of nested `lax.scan`s. `checkpoints=None` is
`lax.scan` of the step (every step's residuals kept); `"sqrt"` a `lax.scan` over segments of
`ceil(sqrt(n))` steps, each a `jax.checkpoint`ed inner `lax.scan` (one carry kept per segment; a
segment's steps re-linearized when the reverse sweep reaches it).

An int `s`: where they fit, `d` nested `lax.scan`s of `b_1, ..., b_d` iterations (b_1 * ... * b_d >= n,
the steps past n skipped by `lax.cond`), each level's body `jax.checkpoint`ed, with b_1 + ... + b_d <= s:
a level keeps the carries entering its b_k bodies, so at most s carries are kept at any time (besides
one step's residuals), the reverse sweep evaluates each step about d + 1 times, and everything JAX
transforms (jvp, vmap, every order) goes through. `d` is the smallest depth whose branchings fit in s.
Where none fits (n above about 3^(s/3): 36 steps for s = 10), the binomial (Revolve) schedule itself
(`_revolve`): a `jax.custom_vjp` whose forward is a `lax.scan` writing the schedule's first snapshots
into a buffer of s + 1 carries and whose backward is a `lax.while_loop` over the schedule's remaining
actions, `revolve_bound(n, s) + n + 1` step evaluations; it gives reverse mode and forward over reverse
(hvp, `jax.hessian`), and JAX refuses forward mode through it (`TypeError`: a `custom_vjp`) and reverse
over reverse (`ValueError`: the backward's `while_loop`). Its carry and outputs must be floating
(else `NotSupportedError`, naming the `s` the nesting needs). The binomial schedule written as nested
`jax.checkpoint`s of the unrolled loop, tried first, compiled for 20 seconds at n = 30 and kept no less
memory.

On JAX `step` receives `i` as an int32 array (traced inside `lax.scan`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..._errors import NotSupportedError
from ..._memory.checkpoint import split_arrays
from ..._memory.nested import levels

__all__ = ["Memory"]


class Memory:
    """JAX's `MemoryHooks`."""

    #: `checkpoints=None` compiles to one `lax.scan` too (rather than the plain Python loop)
    loop_program = True

    def owns(self, a: Any) -> bool:
        return isinstance(a, (jax.Array, jax.core.Tracer))

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        arrays, call = split_arrays(fn, args, kwargs, self.owns)
        return jax.checkpoint(call)(*arrays)

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


def _floating(tree: Any) -> bool:
    return all(jnp.issubdtype(jnp.result_type(a), jnp.inexact) for a in jax.tree_util.tree_leaves(tree))


def _smallest_fitting(n: int) -> int:
    s = 1
    while levels(n, s) is None:
        s += 1
    return s


def _nested(step: Callable, body: Callable, carry: Any, n: int, s: int, outputs: bool) -> tuple[Any, Any]:
    bs = levels(n, s)
    if bs is None and _floating(carry) and (not outputs or _floating(jax.eval_shape(body, carry, jnp.int32(0))[1])):
        return _revolve(body, carry, n, s, outputs)
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


def _revolve(body: Callable, carry: Any, n: int, s: int, outputs: bool) -> tuple[Any, Any]:
    """The binomial schedule itself, as a `jax.custom_vjp`: the forward a `lax.scan` writing the
    schedule's first snapshots into a buffer of s + 1 carries, the backward a `lax.while_loop` over the
    rest of the schedule's actions (`lax.switch` on each: advance, save, restore, free, reverse by
    `jax.vjp` of one step). Closed-over traced values are hoisted into arguments (`jax.closure_convert`),
    so their cotangents are returned too. First order only: JAX refuses forward mode through a
    `custom_vjp` (and reverse mode through its backward's `while_loop`)."""
    from ..._memory.schedule import binomial

    i0 = jnp.asarray(0, dtype=jnp.int32)
    conv, consts = jax.closure_convert(body, carry, i0)
    consts = list(consts)
    schedule = binomial(n, s)
    first = next(k for k, a in enumerate(schedule) if a.kind == "reverse")
    start = schedule[first].step
    free_slots = list(range(s - 1, -1, -1))
    slot_of: dict[int, int] = {}
    fwd_slot = np.full(n, -1, dtype=np.int32)
    codes = {"advance": 0, "save": 1, "restore": 2, "free": 3, "reverse": 4}
    kinds, steps, slots = [], [], []
    for k, a in enumerate(schedule):
        slot = -1
        if a.kind == "save":
            slot = slot_of[a.step] = free_slots.pop()
            if k < first:
                fwd_slot[a.step] = slot
        elif a.kind == "restore":
            slot = slot_of[a.step]
        elif a.kind == "free":
            free_slots.append(slot_of.pop(a.step))
        if k >= first:
            kinds.append(codes[a.kind])
            steps.append(a.step)
            slots.append(slot)
    kinds_a, steps_a, slots_a = (jnp.asarray(np.asarray(v, dtype=np.int32)) for v in (kinds, steps, slots))
    fwd_slot_a = jnp.asarray(fwd_slot)

    def write(buf: Any, slot: Any, c: Any) -> Any:
        return jax.tree_util.tree_map(lambda b, v: jax.lax.dynamic_update_index_in_dim(b, v, slot, 0), buf, c)

    def read(buf: Any, slot: Any) -> Any:
        return jax.tree_util.tree_map(lambda b: jax.lax.dynamic_index_in_dim(b, slot, 0, keepdims=False), buf)

    def run_forward(c: Any, cs: list, keep: bool) -> tuple[Any, Any, Any]:
        buf = jax.tree_util.tree_map(lambda a: jnp.zeros((s + 1, *jnp.shape(a)), jnp.result_type(a)), c)

        def fbody(state: Any, i: Any) -> Any:
            c, buf = state
            if keep:
                slot = fwd_slot_a[i]
                buf = jax.lax.cond(slot >= 0, lambda b: write(b, slot, c), lambda b: b, buf)
                buf = jax.lax.cond(i == start, lambda b: write(b, s, c), lambda b: b, buf)
            c, y = conv(c, i, *cs)
            return (c, buf), y

        (c, buf), ys = jax.lax.scan(fbody, (c, buf), jnp.arange(n, dtype=jnp.int32))
        return c, ys, buf

    @jax.custom_vjp
    def loop(c: Any, cs: list) -> Any:
        c, ys, _ = run_forward(c, cs, False)
        return (c, ys) if outputs else c

    def fwd(c: Any, cs: list) -> Any:
        c, ys, buf = run_forward(c, cs, True)
        return ((c, ys) if outputs else c), (buf, cs)

    def bwd(res: Any, ct: Any) -> Any:
        buf, cs = res
        ct_c, ct_ys = ct if outputs else (ct, None)
        ct_cs = jax.tree_util.tree_map(jnp.zeros_like, cs)

        def advance(state: Any) -> Any:
            k, cur, at, buf, ct_c, ct_cs = state
            cur = jax.lax.fori_loop(at, steps_a[k], lambda j, c: conv(c, j, *cs)[0], cur)
            return k, cur, steps_a[k], buf, ct_c, ct_cs

        def save(state: Any) -> Any:
            k, cur, at, buf, ct_c, ct_cs = state
            return k, cur, at, write(buf, slots_a[k], cur), ct_c, ct_cs

        def restore(state: Any) -> Any:
            k, _cur, _at, buf, ct_c, ct_cs = state
            return k, read(buf, slots_a[k]), steps_a[k], buf, ct_c, ct_cs

        def free(state: Any) -> Any:
            return state

        def reverse(state: Any) -> Any:
            k, cur, at, buf, ct_c, ct_cs = state
            i = steps_a[k]
            _, pull = jax.vjp(lambda c, cs: conv(c, i, *cs), cur, cs)
            ct_y = jax.tree_util.tree_map(lambda y: y[i], ct_ys) if outputs else None
            d_c, d_cs = pull((ct_c, ct_y))
            return k, cur, at, buf, d_c, jax.tree_util.tree_map(jnp.add, ct_cs, d_cs)

        def step_action(state: Any) -> Any:
            k = state[0]
            state = jax.lax.switch(kinds_a[k], [advance, save, restore, free, reverse], state)
            return (k + 1, *state[1:])

        state = (jnp.asarray(0, jnp.int32), read(buf, s), jnp.asarray(start, jnp.int32), buf, ct_c, ct_cs)
        state = jax.lax.while_loop(lambda st: st[0] < len(kinds), step_action, state)
        return state[4], state[5]

    loop.defvjp(fwd, bwd)
    result = loop(carry, consts)
    return result if outputs else (result, None)
