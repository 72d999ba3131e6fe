"""JAX's side of `di.checkpoint` (and `di.scan`): `jax.checkpoint`, which JAX's own transformations (`jit`,
`grad`, `jvp`, `vmap`, nested to any order) know: reverse mode saves only the function's inputs and
recomputes the rest when the pullback reaches it.

JAX's side of `di.scan` (`Memory.scan`): one program. `checkpoints=None` is `lax.scan` of the step
(every step's residuals kept); `"sqrt"` a `lax.scan` over segments of `ceil(sqrt(n))` steps, each a
`jax.checkpoint`ed inner `lax.scan` (one carry kept per segment; a segment's steps re-linearized when the
reverse sweep reaches it); an int `s` the binomial (Revolve) schedule as nested `jax.checkpoint`s: the
steps [a, b) with s snapshots are `rest ∘ checkpoint(first)`, `first` the steps [a, m) with s
snapshots and `rest` the steps [m, b) with s - 1, m the schedule's split
(`diface._memory.schedule.binomial`). Linearizing that composition runs `first`'s primal (the
schedule's advance), keeps its input (a snapshot) and linearizes `rest`; the reverse sweep re-linearizes
`first` from its input: exactly the schedule's step evaluations (`revolve_bound(n, s) + n`) and at most
`s` carries alive, and everything JAX transforms (jvp, vmap, second order) goes through, as
`jax.checkpoint` does. The binomial structure is unrolled: its program has `n` step calls (trace and
compile time grow with n; `"sqrt"` stays two nested loops).

On JAX `step` receives `i` as an int32 array (traced inside `lax.scan`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ..._memory.checkpoint import split_arrays
from ..._memory.schedule import _split

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
        carry, ys = _binomial(body, carry, 0, n, int(schedule), outputs)
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


def _binomial(body: Callable, carry: Any, a: int, b: int, s: int, outputs: bool) -> tuple[Any, Any]:
    """Steps [a, b) with `s` snapshots: `rest ∘ checkpoint(first)` (see the module docstring); the rest
    is a loop, the first parts recursions (their depth is about the repetition number)."""
    parts: list[Any] = []
    while b - a > 1:
        if s == 1:
            m = b - 1  # one snapshot: each step reached from a again
        else:
            m = a + _split(b - a, s)
        first = jax.checkpoint(lambda c, a=a, m=m, s=s: _binomial(body, c, a, m, s, outputs))
        carry, ys = first(carry)
        parts.append(ys)
        a, s = m, (s if s == 1 else s - 1)
    carry, y = body(carry, jnp.asarray(a, dtype=jnp.int32))
    if not outputs:
        return carry, None
    parts.append(jax.tree_util.tree_map(lambda v: v[None], y))
    return carry, jax.tree_util.tree_map(lambda *vs: jnp.concatenate(vs), *parts)
