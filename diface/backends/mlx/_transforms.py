"""The building blocks of every AutoMLX computation: `mx.jvp` and `mx.vjp`, batched with `mx.vmap`.

Each works eagerly and inside `mx.compile`. Shapes come from the preparation (MLX traces per shape), so
the basis of a sweep is made once, at preparation, and closed over.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Basis", "bind", "looping", "pull", "push", "sweep", "unstack"]

#: products one by one instead of `mx.vmap` (for f that evaluates arrays: `vmap` traces with placeholders)
_LOOP = contextvars.ContextVar("diface_mlx_loop", default=False)


@contextlib.contextmanager
def looping() -> Iterator[None]:
    """Within: batches of products are Python loops of single `jvp`s and `vjp`s, not `vmap`s."""
    token = _LOOP.set(True)
    try:
        yield
    finally:
        _LOOP.reset(token)


def _map(fn: Callable, batch: Any) -> Any:
    """`fn` over the leading axis of `batch`: `mx.vmap`, or a loop where f cannot be vmapped."""
    import mlx.core as mx

    if _LOOP.get():
        return mx.stack([fn(batch[i]) for i in range(batch.shape[0])])
    return mx.vmap(fn)(batch)


def bind(f: Callable, cv: tuple) -> Callable:
    """`f` as a function of `x` alone, with the context values `cv`."""
    return lambda x: f(x, *cv)


def unstack(a: Any, n: int) -> tuple:
    return tuple(a[i] for i in range(n))


def _jvp(fn: Callable, x: Any, t: Any) -> Any:
    import mlx.core as mx

    return mx.jvp(fn, [x], [t])[1][0]


def _vjp(fn: Callable, x: Any, c: Any) -> Any:
    import mlx.core as mx

    return mx.vjp(fn, [x], [c])[1][0]


def push(fn: Callable, x: Any, tangents: tuple) -> tuple:
    """`J t` for each tangent: one `jvp`, or a `vmap` of them over the stacked tangents."""
    import mlx.core as mx

    if len(tangents) == 1:
        return (_jvp(fn, x, tangents[0]),)
    return unstack(_map(lambda t: _jvp(fn, x, t), mx.stack(list(tangents))), len(tangents))


def pull(fn: Callable, x: Any, cotangents: tuple) -> tuple:
    """`c J` for each cotangent: one `vjp`, or a `vmap` of them (x unmapped: one forward pass)."""
    import mlx.core as mx

    if len(cotangents) == 1:
        return (_vjp(fn, x, cotangents[0]),)
    return unstack(_map(lambda c: _vjp(fn, x, c), mx.stack(list(cotangents))), len(cotangents))


class Basis:
    """The basis vectors of a space of `shape`, stacked (`(size, *shape)`; the scalar 1 for `()`), made
    once in `dtype` and closed over by the programs that sweep it."""

    def __init__(self, shape: tuple, dtype: Any) -> None:
        import mlx.core as mx

        self.shape = shape
        n = 1
        for s in shape:
            n *= s
        self.size = n
        self.vectors = mx.ones((), dtype=dtype) if shape == () else mx.eye(n, dtype=dtype).reshape((n, *shape))
        mx.eval(self.vectors)


def sweep(mode: str, fn: Callable, x: Any, x_basis: Basis, y_basis: Basis) -> Any:
    """The Jacobian `y.shape + x.shape`: `jvp`s of the input basis (forward, like `jacfwd`) or `vjp`s of
    the output basis (reverse, like `jacrev`; one `vjp` for a scalar output, like `grad`)."""
    import mlx.core as mx

    y_shape, x_shape = y_basis.shape, x_basis.shape
    if mode == "forward":
        if x_shape == ():
            return _jvp(fn, x, x_basis.vectors)
        if x_basis.size == 0 or y_basis.size == 0:
            return mx.zeros(y_shape + x_shape, dtype=x.dtype)
        columns = _map(lambda t: _jvp(fn, x, t), x_basis.vectors)  # (n, *y_shape)
        return mx.moveaxis(columns.reshape((x_basis.size, y_basis.size)), 0, -1).reshape(y_shape + x_shape)
    if y_shape == ():
        return _vjp(fn, x, y_basis.vectors)
    if x_basis.size == 0 or y_basis.size == 0:
        return mx.zeros(y_shape + x_shape, dtype=x.dtype)
    rows = _map(lambda c: _vjp(fn, x, c), y_basis.vectors)  # (m, *x_shape)
    return rows.reshape(y_shape + x_shape)
