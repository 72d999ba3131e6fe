"""Traceable building blocks of every AutoJAX computation: each works eagerly and under jit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._ops import device_of

__all__ = ["Seeds", "bind", "pull", "pull_with", "push", "push_with", "sweep", "unstack", "without_aux"]


def bind(f: Callable, cv: tuple) -> Callable:
    """`f` as a function of `x` alone, with the context values `cv`."""
    return lambda x: f(x, *cv)


def without_aux(fn: Callable) -> Callable:
    return lambda x: fn(x)[0]


def unstack(a: Any, n: int) -> tuple:
    return tuple(a[i] for i in range(n))


def push(fn: Callable, x: Any, tangents: tuple) -> tuple:
    """`(fn(x), (J t for each tangent), None)`: one `jvp`, or a `vmap` of them over the tangents."""
    import jax
    import jax.numpy as jnp

    if len(tangents) == 1:
        y, t = jax.jvp(fn, (x,), tangents)
        return y, (t,), None
    y, ts = jax.vmap(lambda t: jax.jvp(fn, (x,), (t,)), out_axes=(None, 0))(jnp.stack(tangents))
    return y, unstack(ts, len(tangents)), None


def pull(fn: Callable, x: Any, cotangents: tuple) -> tuple:
    """`(fn(x), (t J for each cotangent), None)`: one forward pass, its `vjp` mapped over the cotangents."""
    import jax

    y, transposed = jax.vjp(fn, x)
    return y, pull_with(transposed, cotangents), None


def push_with(linear: Callable, tangents: tuple) -> tuple:
    """A linearization (from `jax.linearize`) applied to each tangent."""
    import jax
    import jax.numpy as jnp

    if len(tangents) == 1:
        return (linear(tangents[0]),)
    return unstack(jax.vmap(linear)(jnp.stack(tangents)), len(tangents))


def pull_with(transposed: Callable, cotangents: tuple) -> tuple:
    """A `vjp` function applied to each cotangent."""
    import jax
    import jax.numpy as jnp

    if len(cotangents) == 1:
        return (transposed(cotangents[0])[0],)
    return unstack(jax.vmap(transposed)(jnp.stack(cotangents))[0], len(cotangents))


class Seeds:
    """Basis vectors of a space, stacked: `seeds(shape, dtype)` has shape `(size,) + shape`, or is
    the scalar 1 for shape `()`. Inside `jit` they are built in the traced program (XLA folds them);
    eagerly they are made once per space, on the device of the point, and kept."""

    def __init__(self, traced: bool) -> None:
        self.traced = traced
        self._made: dict[tuple, Any] = {}

    def __call__(self, shape: tuple, dtype: Any, like: Any) -> Any:
        if self.traced:
            return self._make(shape, dtype, None)
        import jax

        device = device_of(like)
        key = (shape, np.dtype(dtype), device)
        seeds = self._made.get(key)
        if seeds is None:
            seeds = self._make(shape, dtype, device)
            if not isinstance(seeds, jax.core.Tracer):  # made inside someone else's trace: not kept
                self._made[key] = seeds
        return seeds

    @staticmethod
    def _make(shape: tuple, dtype: Any, device: Any) -> Any:
        import jax.numpy as jnp

        if shape == ():
            return jnp.ones((), dtype, device=device)
        n = int(np.prod(shape))
        return jnp.eye(n, dtype=dtype, device=device).reshape((n, *shape))


def sweep(mode: str, fn: Callable, x: Any, seeds: Seeds, has_aux: bool = False) -> tuple:
    """`(fn(x), J, aux)` with `J` of shape `y.shape + x.shape`: `jvp`s of the input basis (forward,
    like `jax.jacfwd`) or `vjp`s of the output basis (reverse, like `jax.jacrev`; one `vjp` for a
    scalar output, like `jax.grad`). With `has_aux`, `fn` returns `(y, aux)`."""
    import jax
    import jax.numpy as jnp

    if mode == "forward":
        basis = seeds(x.shape, x.dtype, x)
        jvp = lambda t: jax.jvp(fn, (x,), (t,), has_aux=has_aux)
        if x.shape == ():
            r = jvp(basis)
            return r[0], r[1], (r[2] if has_aux else None)
        r = jax.vmap(jvp, out_axes=(None, 0, None) if has_aux else (None, 0))(basis)
        y, columns = r[0], r[1]
        jac = jnp.moveaxis(columns, 0, -1).reshape(y.shape + x.shape)
        return y, jac, (r[2] if has_aux else None)
    # (y, vjp) or (y, vjp, aux): JAX's signatures tell them apart by a literal has_aux
    pulled: tuple = jax.vjp(fn, x, has_aux=True) if has_aux else jax.vjp(fn, x)
    y, transposed = pulled[0], pulled[1]
    basis = seeds(y.shape, y.dtype, x)
    if y.shape == ():
        jac = transposed(basis)[0]
    else:
        jac = jax.vmap(transposed)(basis)[0].reshape(y.shape + x.shape)
    return y, jac, (pulled[2] if has_aux else None)
