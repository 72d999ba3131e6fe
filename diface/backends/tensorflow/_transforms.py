"""Traceable building blocks of every AutoTensorFlow computation (eager and inside `tf.function`):
`ForwardAccumulator` for products with J, `GradientTape` for products with Jᵀ, batched over a leading
axis by `tf.vectorized_map` (forward) or one `tape.jacobian` of the cotangents' inner products (reverse)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._env import tf

__all__ = ["basis", "bind", "jvp", "pull", "push", "push_batch", "sweep"]


def bind(f: Callable, cv: tuple) -> Callable:
    """`f` as a function of `x` alone, with the context values `cv`."""
    return lambda x: f(x, *cv)


def _zero() -> Any:
    return tf().UnconnectedGradients.ZERO


def _size(shape: Any) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def jvp(fn: Callable, x: Any, t: Any) -> tuple:
    """`(fn(x), J t)`: one forward pass under a `ForwardAccumulator` in a traced graph; eagerly, the
    transpose of a pullback (`eager_push`)."""
    if tf().executing_eagerly():
        y, products = eager_push(fn, x, (t,))
        return y, products[0]
    with tf().autodiff.ForwardAccumulator(x, t) as acc:
        y = fn(x)
    return y, acc.jvp(y, unconnected_gradients=_zero())


def eager_push(fn: Callable, x: Any, tangents: tuple) -> tuple:
    """`(fn(x), (J t for each tangent))` outside a graph: f recorded once on a tape, its pullback
    `u -> uᵀJ` recorded on a second one (at u = 1, not a special value rules may shortcut), and each
    product the second tape's gradient along t. Eagerly, `ForwardAccumulator` runs a traced JVP function
    per operation (about 2 ms each, measured); this runs two cheap backward passes."""
    tf_ = tf()
    with tf_.GradientTape(persistent=len(tangents) > 1) as outer:
        with tf_.GradientTape() as inner:
            inner.watch(x)
            y = fn(x)
        u = tf_.ones_like(y)
        outer.watch(u)
        pulled = inner.gradient(y, x, output_gradients=u, unconnected_gradients=_zero())
    products = tuple(
        outer.gradient(pulled, u, output_gradients=tf_.cast(t, pulled.dtype), unconnected_gradients=_zero())
        for t in tangents
    )
    return y, products


def push(fn: Callable, x: Any, tangents: tuple) -> tuple:
    """`(fn(x), (J t for each tangent))`: one `jvp`, or `tf.vectorized_map` of them over the stacked tangents."""
    if len(tangents) == 1:
        y, t = jvp(fn, x, tangents[0])
        return y, (t,)
    tf_ = tf()
    if tangents and tf_.executing_eagerly() and _size(x.shape) > 0:
        return eager_push(fn, x, tangents)  # f runs once, not once more for the products
    y = fn(x)
    if not tangents:
        return y, ()
    products = push_batch(fn, x, tf_.stack(tangents))
    return y, tuple(tf_.unstack(products, num=len(tangents)))


def push_batch(fn: Callable, x: Any, tangents: Any) -> Any:
    """`J t` for each row of `tangents` (`(B, *x.shape)` -> `(B, *y.shape)`)."""
    tf_ = tf()
    if tf_.executing_eagerly() and _size(x.shape) > 0:
        return tf_.stack(eager_push(fn, x, tuple(tf_.unstack(tangents, num=tangents.shape[0])))[1])
    if _size(x.shape) == 0 or tangents.shape[0] == 1 or _loops(tangents.shape[0]):
        return tf_.stack([jvp(fn, x, tangents[i])[1] for i in range(tangents.shape[0])])
    return tf_.vectorized_map(lambda t: jvp(fn, x, t)[1], tangents)


#: batches up to this size loop over their products (unrolled in a traced graph): `tf.vectorized_map`
#: and `tape.jacobian` convert their loop body with `pfor`, which costs about 0.1 s per conversion (a
#: second nested in a second-order graph), and eagerly they do it again at every call
LOOP_UP_TO = 16


def _loops(batch: int) -> bool:
    return batch <= LOOP_UP_TO


def pull(fn: Callable, x: Any, cotangents: tuple) -> tuple:
    """`(fn(x), (c J for each cotangent))`: one forward pass on a tape; one gradient for one cotangent,
    else `tape.jacobian` of the inner products `<c_b, fn(x)>` (recorded on the tape)."""
    tf_ = tf()
    b = len(cotangents)
    if b > 1 and _loops(b):
        with tf_.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = fn(x)
        return y, tuple(
            tape.gradient(y, x, output_gradients=tf_.cast(c, y.dtype), unconnected_gradients=_zero())
            for c in cotangents
        )
    with tf_.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
        if b > 1:
            stacked = tf_.reshape(tf_.cast(tf_.stack(cotangents), y.dtype), (b, -1))
            inner = tf_.reshape(stacked @ tf_.reshape(y, (-1, 1)), (b,))
    if b == 0:
        return y, ()
    if b == 1:
        c = tf_.cast(cotangents[0], y.dtype)
        return y, (tape.gradient(y, x, output_gradients=c, unconnected_gradients=_zero()),)
    if _size(y.shape) == 0 or _size(x.shape) == 0:
        return y, tuple(tf_.zeros(x.shape, x.dtype) for _ in cotangents)
    products = tape.jacobian(inner, x, unconnected_gradients=_zero())
    return y, tuple(tf_.unstack(products, num=b))


def basis(shape: tuple, dtype: Any) -> Any:
    """The basis of a space of `shape`, stacked: `(size, *shape)`."""
    tf_ = tf()
    n = _size(shape)
    return tf_.reshape(tf_.eye(n, dtype=dtype), (n, *shape))


def sweep(mode: str, fn: Callable, x: Any) -> tuple:
    """`(fn(x), J)` with `J` of shape `y.shape + x.shape`: `jvp`s of the input basis (forward) or the
    tape's Jacobian (reverse: one gradient for a scalar output)."""
    tf_ = tf()
    x_shape = tuple(x.shape)
    if mode == "forward":
        if x_shape == ():
            return jvp(fn, x, tf_.ones((), x.dtype))
        n = _size(x_shape)
        if tf_.executing_eagerly() and n > 0:  # f runs once, not once more for the products
            y, products = eager_push(fn, x, tuple(tf_.unstack(basis(x_shape, x.dtype), num=n)))
        else:
            y, products = fn(x), None
        y_shape = tuple(y.shape)
        if n == 0 or _size(y_shape) == 0:
            return y, tf_.zeros(y_shape + x_shape, _derivative_dtype(x, y))
        columns = tf_.stack(products) if products is not None else push_batch(fn, x, basis(x_shape, x.dtype))
        jac = tf_.transpose(tf_.reshape(columns, (_size(x_shape), -1)))
        return y, tf_.reshape(jac, y_shape + x_shape)
    with tf_.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    y_shape = tuple(y.shape)
    m = _size(y_shape)
    if _size(x_shape) == 0 or m == 0:
        return y, tf_.zeros(y_shape + x_shape, _derivative_dtype(x, y))
    if y_shape == ():
        return y, tape.gradient(y, x, unconnected_gradients=_zero())
    if _loops(m):
        rows = tf_.reshape(tf_.eye(m, dtype=y.dtype), (m, *y_shape))
        grads = [tape.gradient(y, x, output_gradients=rows[i], unconnected_gradients=_zero()) for i in range(m)]
        return y, tf_.reshape(tf_.stack(grads), y_shape + x_shape)
    return y, tape.jacobian(y, x, unconnected_gradients=_zero())


def _derivative_dtype(x: Any, y: Any) -> Any:
    return x.dtype if x.dtype.is_floating and not y.dtype.is_floating else y.dtype
