"""Taylor mode in JAX: directional derivatives of any order and forward Laplacians, as traceable programs.

- `series`: the derivatives `(f(x), (d₁, ..., d_k))` along one direction, dⱼ = dʲ/dtʲ f(x + t·v) at 0,
  by `jax.experimental.jet` (truncated Taylor polynomials: about k² work) where jet has a rule for every
  primitive that depends on x (`jet_covers`, checked on f's jaxpr at preparation), else by `jvp` nested k
  levels deep (each level's primal kept as the `aux` of the next: 2ᵏ-fold work, but any f JAX can
  differentiate). Batches of directions go through `vmap`.
- `collapsed_laplacian`: the forward Laplacian as one propagation through f's jaxpr carrying, for each
  variable, its value, its n first-order coefficients (one per basis vector of x: the Jacobian) and ONE
  second-order coefficient, the sum over the basis (Li et al., "Forward Laplacian", 2023). A linear
  operation maps the three; any other one adds Σᵢ D²p[Jᵢ, Jᵢ] (a nested `jvp` of that operation alone,
  mapped over i and summed). The n second-order coefficients a basis sweep would carry through every
  matrix product collapse into one.
- `swept_laplacian`: the plain forward Laplacian (the second derivative along each basis vector, nested
  `jvp`s under `vmap`, summed), for what the interpreter cannot walk.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["collapsed_laplacian", "jet_covers", "series", "swept_laplacian"]

# call-like primitives jet traces through (their jaxpr), rather than applying a rule of their own
_TRACED_THROUGH = ("custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr")


# -- Taylor series along directions ---------------------------------------------------------------
def jet_covers(fn: Callable, x: Any) -> bool | None:
    """Whether `jet` has a rule for every primitive of `fn`'s jaxpr at x that depends on x (those that
    depend on the contexts alone are evaluated as they are); None where fn cannot be traced."""
    import jax

    try:
        closed = jax.make_jaxpr(fn)(x)
    except Exception:  # f cannot be traced abstractly (a Python branch on x): the caller decides
        return None
    return _jet_walk(closed.jaxpr, [True]) is not None


def _jet_walk(jaxpr: Any, dependent: list) -> list | None:
    """The outputs of `jaxpr` that depend on its `dependent` inputs, or None where jet lacks a rule."""
    from jax.experimental.jet import jet_rules
    from jax.extend.core import Var

    dep = {v for v, d in zip(jaxpr.invars, dependent) if d}
    for eqn in jaxpr.eqns:
        ins = [isinstance(v, Var) and v in dep for v in eqn.invars]
        if not any(ins):
            continue  # jet evaluates it as it is
        name = eqn.primitive.name
        if name in _TRACED_THROUGH:
            sub = eqn.params.get("call_jaxpr") or eqn.params.get("fun_jaxpr")
            if sub is None:
                return None
            outs = _jet_walk(getattr(sub, "jaxpr", sub), ins)
            if outs is None:
                return None
        elif eqn.primitive in jet_rules:
            sub = eqn.params.get("jaxpr")
            # jet's rule for a nested jit gives every input a series (zeros where none)
            if sub is not None and _jet_walk(getattr(sub, "jaxpr", sub), [True] * len(eqn.invars)) is None:
                return None
            outs = [True] * len(eqn.outvars)
        else:
            return None
        dep.update(v for v, d in zip(eqn.outvars, outs) if d)
    return [isinstance(v, Var) and v in dep for v in jaxpr.outvars]


def _jet_scaled() -> bool:
    """Whether this JAX's `jet` takes `factorial_scaled=` (then called unscaled here: normalized Taylor
    coefficients in and out, multiplied by j! exactly); older ones take and give derivatives."""
    from jax.experimental import jet

    return "factorial_scaled" in inspect.signature(jet.jet).parameters


def series(fn: Callable, order: int, use_jet: bool) -> Callable:
    """`(x, v) -> (f(x), (d₁, ..., d_order))` along `v` for `fn` of x alone (see the module docstring);
    the value comes with the series at no cost."""
    import jax
    import jax.numpy as jnp

    if use_jet:
        from jax.experimental import jet

        if _jet_scaled():

            def by_jet(x: Any, v: Any) -> tuple:
                zero = jnp.zeros_like(v)
                # x(t) = x + t·v: normalized coefficients (v, 0, ..., 0); out: cⱼ = dⱼ / j!
                y, terms = jet.jet(fn, (x,), ((v,) + (zero,) * (order - 1),), factorial_scaled=False)
                return y, tuple(t * math.factorial(j + 1) if j else t for j, t in enumerate(terms))

        else:  # pragma: no cover - JAX before factorial_scaled: derivatives in and out

            def by_jet(x: Any, v: Any) -> tuple:
                zero = jnp.zeros_like(v)
                y, terms = jet.jet(fn, (x,), ((v,) + (zero,) * (order - 1),))
                return y, tuple(terms)

        return by_jet

    def by_jvp(x: Any, v: Any) -> tuple:
        # level j: x -> (gⱼ(x), (g₀(x), ..., gⱼ₋₁(x))); its jvp along v gives gⱼ₊₁ and, as the primal,
        # gⱼ to keep: one nest of `order` jvps
        def level(j: int) -> Callable:
            if j == 0:
                return lambda x: (fn(x), ())
            inner = level(j - 1)

            def g(x: Any) -> tuple:
                y, t, kept = jax.jvp(inner, (x,), (v,), has_aux=True)
                return t, (*kept, y)

            return g

        top, kept = level(order)(x)
        return kept[0], (*kept[1:], top)

    return by_jvp


def batched_series(fn: Callable, x: Any, tangents: tuple, order: int, use_jet: bool) -> tuple:
    """`(f(x), series)`: a tuple per tangent of its `order` derivatives; several tangents propagate
    together (`vmap`)."""
    import jax
    import jax.numpy as jnp

    along = series(fn, order, use_jet)
    if len(tangents) == 1:
        y, ds = along(x, tangents[0])
        return y, (ds,)
    ys, stacked = jax.vmap(lambda v: along(x, v))(jnp.stack(tangents))
    # the value does not depend on v: one row (mapped, it costs nothing more)
    return ys[0], tuple(tuple(d[i] for d in stacked) for i in range(len(tangents)))


# -- Laplacians -------------------------------------------------------------------------------------
def _basis(x: Any) -> Any:
    import jax.numpy as jnp

    n = int(np.prod(x.shape))
    return jnp.eye(n, dtype=x.dtype).reshape((n, *x.shape))


def _jacobian(columns: Any, y_shape: tuple, x_shape: tuple) -> Any:
    """`(n, *y_shape)` stacked columns as the Jacobian, `y_shape + x_shape`."""
    import jax.numpy as jnp

    return jnp.moveaxis(columns, 0, -1).reshape(y_shape + x_shape) if x_shape else columns.reshape(y_shape)


def swept_laplacian(fn: Callable, x: Any) -> tuple:
    """`(f(x), J, Δf)`: second derivatives along each basis vector (nested `jvp`s under `vmap`), summed."""
    import jax

    def along(e: Any) -> tuple:
        return jax.jvp(lambda x: jax.jvp(fn, (x,), (e,))[1], (x,), (e,))

    firsts, seconds = jax.vmap(along)(_basis(x))
    y = fn(x)
    return y, _jacobian(firsts, y.shape, x.shape), seconds.sum(0)


def collapsed_laplacian(fn: Callable, x: Any) -> tuple:
    """`(f(x), J, Δf)` by one collapsed propagation through fn's jaxpr (see the module docstring)."""
    import jax
    import jax.numpy as jnp

    closed = jax.make_jaxpr(fn)(x)  # the contexts (traced or not) are its constants
    n = int(np.prod(x.shape))
    ((y, first, second),) = _propagate(closed.jaxpr, closed.consts, [(x, Identity(x), None)])
    y, first = jnp.asarray(y), _materialize(first)
    if first is None:
        first = jnp.zeros((n, *y.shape), y.dtype)
    if second is None:
        second = jnp.zeros(y.shape, y.dtype)
    return y, _jacobian(first, y.shape, x.shape), second


#: primitives linear in all their inputs together (jet's list of them, and more)
_LINEAR = frozenset(
    {
        "add", "add_any", "sub", "neg", "broadcast_in_dim", "concatenate", "convert_element_type", "copy",
        "cumsum", "device_put", "pad", "real", "imag", "conj", "complex", "reduce_sum", "reduce_window_sum",
        "reshape", "rev", "slice", "split", "squeeze", "transpose", "dynamic_slice", "gather",
        "select_and_gather_add", "reshard", "copy_p", "expand_dims", "select_n", "dynamic_update_slice",
        "scatter-add",
    }
)  # fmt: skip
#: primitives linear in each input alone (so linear where one input depends on x)
_BILINEAR = frozenset({"mul", "dot_general", "conv_general_dilated"})
#: call-like primitives whose jaxpr the propagation walks into
_INLINED = frozenset({"jit", "pjit", "closed_call", "core_call"})


def _propagate(jaxpr: Any, consts: list, inputs: list) -> list:
    """Each output of `jaxpr` as `(value, first, second)`: the value, the n first-order coefficients
    stacked (None where it does not depend on x) and the summed second-order coefficient (None where 0)."""
    from jax.extend.core import Literal

    env: dict = {}

    def read(v: Any) -> tuple:
        return (v.val, None, None) if isinstance(v, Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = (c, None, None)
    for v, triple in zip(jaxpr.invars, inputs):
        env[v] = triple
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if all(t[1] is None for t in ins) or not any(_inexact(v) for v in eqn.outvars):
            outs = [(value, None, None) for value in _bind(eqn, [t[0] for t in ins])]
        elif name in _INLINED and "jaxpr" in eqn.params:
            sub = eqn.params["jaxpr"]
            outs = _propagate(getattr(sub, "jaxpr", sub), list(getattr(sub, "consts", ())), ins)
        else:
            outs = _rule(eqn, ins)
        for v, triple in zip(eqn.outvars, outs):
            env[v] = triple
    return [read(v) for v in jaxpr.outvars]


class Identity:
    """The first-order coefficients of x itself (the basis of x), not formed until an operation needs them:
    a contraction of all of x with a matrix W takes W's rows as they are instead of multiplying the
    identity by W (an (n, n) by (n, m) product, the largest one of an MLP's forward Laplacian)."""

    def __init__(self, x: Any) -> None:
        self.x = x

    def materialize(self) -> Any:
        return _basis(self.x)


def _materialize(first: Any) -> Any:
    return first.materialize() if isinstance(first, Identity) else first


def _contracted_rows(eqn: Any, values: list, where: list, first: Any) -> Any:
    """`dot_general(x, W)` (or `(W, x)`) contracting all of x, without batch dimensions: its first-order
    coefficients along the basis of x, W's slices in x's order (None where the operation is not one)."""
    import jax.numpy as jnp

    if eqn.primitive.name != "dot_general" or len(where) != 1 or not isinstance(first, Identity):
        return None
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    if lb or rb:
        return None
    k = where[0]
    a_dims, w_dims = (lc, rc) if k == 0 else (rc, lc)
    a, w = values[k], jnp.asarray(values[1 - k])
    if sorted(a_dims) != list(range(a.ndim)):
        return None
    contracted = [w_dims[list(a_dims).index(d)] for d in range(a.ndim)]
    free = [d for d in range(w.ndim) if d not in contracted]
    out = eqn.outvars[0].aval
    rows = jnp.transpose(w, contracted + free).reshape((int(np.prod(a.shape)), *out.shape))
    return rows.astype(out.dtype)


def _inexact(v: Any) -> bool:
    import jax.numpy as jnp

    return bool(jnp.issubdtype(v.aval.dtype, jnp.inexact))


def _bind(eqn: Any, values: list) -> list:
    params = eqn.primitive.get_bind_params(eqn.params)
    subfuns: Any = ()
    if isinstance(params, tuple):  # JAX before 0.7: (sub-functions, parameters)
        subfuns, params = params
    out = eqn.primitive.bind(*subfuns, *values, **params)
    return list(out) if eqn.primitive.multiple_results else [out]


def _rule(eqn: Any, ins: list) -> list:
    """One operation with inputs depending on x: first-order coefficients by `jvp` mapped over the basis;
    the summed second one by the `jvp` of the summed input ones plus (unless the operation is linear in
    its dependent inputs) Σᵢ D²p[Jᵢ, Jᵢ], nested `jvp`s mapped over i and summed."""
    import jax
    import jax.numpy as jnp

    values = [t[0] for t in ins]
    where = [i for i, t in enumerate(ins) if t[1] is not None]
    name = eqn.primitive.name

    def p(*dependent: Any) -> tuple:
        args = list(values)
        for i, d in zip(where, dependent):
            args[i] = d
        return tuple(_bind(eqn, args))

    primals = tuple(values[i] for i in where)
    linear = name in _LINEAR or (name in _BILINEAR and len(where) == 1)
    rows = _contracted_rows(eqn, values, where, ins[where[0]][1]) if linear else None
    firsts = () if rows is not None else tuple(_materialize(ins[i][1]) for i in where)
    if rows is not None:
        out, columns, curvature = p(*primals), (rows,), None
    elif linear:
        out = p(*primals)
        columns = jax.vmap(lambda *t: jax.jvp(p, primals, t)[1])(*firsts)
        curvature = None
    else:

        def along(*t: Any) -> tuple:
            return jax.jvp(lambda *u: jax.jvp(p, u, t)[1], primals, t)

        out = p(*primals)
        columns, seconds = jax.vmap(along)(*firsts)
        curvature = [s.sum(0) for s in seconds]
    if any(ins[i][2] is not None for i in where):
        sums = tuple(ins[i][2] if ins[i][2] is not None else jnp.zeros_like(values[i]) for i in where)
        pushed = jax.jvp(p, primals, sums)[1]
        curvature = list(pushed) if curvature is None else [a + b for a, b in zip(curvature, pushed)]
    result = []
    for k, value in enumerate(out):
        if not jnp.issubdtype(jnp.result_type(value), jnp.inexact):
            result.append((value, None, None))  # integers, booleans: constant along x
            continue
        result.append((value, columns[k], None if curvature is None else curvature[k]))
    return result
