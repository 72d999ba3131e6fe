"""Outer engine JAX: `jax.custom_jvp` over `jax.pure_callback`; the tangent map is a `linear_call` whose
transpose is the pullback, so that jax.grad, jacfwd, jacrev, vmap and jit all work. The pullback is itself
a custom_jvp (its derivative is the inner hvp), for second order by forward over reverse. With complex
values the transpose conjugates around the inner (adjoint) pullback, JAX's VJPs being plain transposes."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import linear_call

from ..._boundary import split_constants
from ..._errors import NotSupportedError

__all__ = ["JaxBoundary"]

VMAP_METHOD = "sequential"


def _linear_call_batching() -> None:
    """JAX has no batching rule for `linear_call` (jacfwd and jacrev vmap the tangent map): one call per
    batch entry, stacked, each still a linear_call (so still transposable). Added only where JAX has none."""
    from jax._src.custom_derivatives import linear_call_p
    from jax._src.interpreters import batching

    if linear_call_p in batching.fancy_primitive_batchers:
        return

    def rule(args: tuple, dims: tuple, **params: Any) -> tuple:
        mapped = [d is not None and not isinstance(d, batching.NotMapped) for d in dims]
        size = next(a.shape[d] for a, d, m in zip(args, dims, mapped, strict=True) if m)
        moved = [jnp.moveaxis(a, d, 0) if m else a for a, d, m in zip(args, dims, mapped, strict=True)]
        rows = [
            linear_call_p.bind(*(a[k] if m else a for a, m in zip(moved, mapped, strict=True)), **params)
            for k in range(size)
        ]
        outs = [jnp.stack(column) for column in zip(*rows, strict=True)]
        return outs, [0] * len(outs)

    batching.primitive_batchers[linear_call_p] = rule


_linear_call_batching()


def _differentiated(a: Any) -> bool:
    """Whether `a` is itself being differentiated by an outer JAX transformation (a JVP or linearize tracer,
    possibly under vmap): second order through the boundary."""
    from jax._src.interpreters import ad, batching

    kinds = tuple(k for k in (getattr(ad, "JVPTracer", None), getattr(ad, "LinearizeTracer", None)) if k)
    for _ in range(32):
        if isinstance(a, kinds):
            return True
        if not isinstance(a, batching.BatchTracer):
            return False
        a = a.val
    return False


def _y_spec(dw: Any, x: Any, arrays: list, rebuild: Any) -> jax.ShapeDtypeStruct:
    """f's output shape and dtype: from f at x where x is concrete, else at ones (kept per spec)."""
    key = ("jax-out", x.shape, str(x.dtype), tuple((np.shape(a), str(a.dtype)) for a in arrays))
    spec = dw._outer.get(key)
    if spec is None:
        concrete = not any(isinstance(a, jax.core.Tracer) for a in (x, *arrays))
        xv = np.asarray(x) if concrete else np.ones(x.shape, x.dtype)
        cs = rebuild([np.asarray(a) if concrete else np.ones(np.shape(a), a.dtype) for a in arrays])
        y = dw.inner.value(xv, cs)
        spec = jax.ShapeDtypeStruct(y.shape, y.dtype)
        dw._outer[key] = spec
    return spec


def call(dw: Any, x: Any, constants: tuple) -> Any:
    inner = dw.inner
    arrays, rebuild = split_constants(constants)
    x = jnp.asarray(x)
    arrays = [a if isinstance(a, jax.Array) else jnp.asarray(a) for a in arrays]
    arrays = [jax.lax.stop_gradient(a) for a in arrays]
    y_spec = _y_spec(dw, x, arrays, rebuild)
    x_spec = jax.ShapeDtypeStruct(x.shape, x.dtype)

    def cs(arrs: tuple) -> tuple:
        return rebuild([np.asarray(a) for a in arrs])

    def callback(fn: Any, spec: Any) -> Any:
        def run(*args: Any) -> Any:
            return jax.pure_callback(
                lambda *a: np.asarray(fn(*a), dtype=spec.dtype), spec, *args, vmap_method=VMAP_METHOD
            )

        return run

    value_cb = callback(lambda x, *a: inner.value(np.asarray(x), cs(a)), y_spec)
    push_cb = callback(lambda x, t, *a: inner.pushforward(np.asarray(x), np.asarray(t), cs(a)), y_spec)
    pull_cb = callback(lambda x, g, *a: inner.pullback(np.asarray(x), np.asarray(g), cs(a)), x_spec)
    hvp_cb = callback(lambda x, g, v, *a: inner.hvp(np.asarray(x), np.asarray(g), np.asarray(v), cs(a)), x_spec)

    @jax.custom_jvp
    def hvp(x: Any, g: Any, v: Any, *arrs: Any) -> Any:
        return hvp_cb(x, g, v, *arrs)

    @hvp.defjvp
    def _hvp_jvp(primals: tuple, tangents: tuple) -> Any:
        raise dw.inner.third_order()

    @jax.custom_jvp
    def pull(x: Any, g: Any, *arrs: Any) -> Any:
        return pull_cb(x, g, *arrs)

    @pull.defjvp
    def _pull_jvp(primals: tuple, tangents: tuple) -> Any:
        x, g, *arrs = primals
        tx, tg = tangents[:2]
        # tangents of g enter linearly (a pullback), those of x through the inner hvp
        return pull(x, g, *arrs), hvp(x, g, tx, *arrs) + pull(x, tg, *arrs)

    @jax.custom_jvp
    def push(x: Any, t: Any, *arrs: Any) -> Any:
        return push_cb(x, t, *arrs)

    @push.defjvp
    def _push_jvp(primals: tuple, tangents: tuple) -> Any:
        raise NotSupportedError(
            f"DifferentiateWith({getattr(dw.f, '__name__', 'f')}, ...): forward mode over a forward-mode product "
            "does not cross the boundary; take second order as forward over reverse (jax.jacfwd(jax.grad(...)), "
            "jax.hessian)"
        )

    def tangent_map(residuals: tuple, t: Any) -> Any:
        return push(residuals[0], t, *residuals[1:])

    complex_values = jnp.iscomplexobj(x) or jnp.issubdtype(y_spec.dtype, jnp.complexfloating)

    def cotangent_map(residuals: tuple, ct: Any) -> Any:
        # JAX transposes without conjugating (its vjp(ct) = conj(pullback(conj(ct))) for diface's adjoint
        # pullback): conjugated around the inner pullback so that jax.grad sees the VJP it would itself take
        if complex_values:
            return jnp.conj(pull(residuals[0], jnp.conj(ct), *residuals[1:]))
        return pull(residuals[0], ct, *residuals[1:])

    @jax.custom_jvp
    def value(x: Any, *arrs: Any) -> Any:
        return value_cb(x, *arrs)

    @value.defjvp
    def _value_jvp(primals: tuple, tangents: tuple) -> Any:
        x, *arrs = primals
        if _differentiated(x):
            raise NotSupportedError(
                f"DifferentiateWith({getattr(dw.f, '__name__', 'f')}, ...): JAX cannot differentiate through the "
                "boundary twice (its linear_call, which carries the products, has no derivative with respect to "
                "the point): take second derivatives with the inner backend (di.hessian, di.hvp) or with torch, "
                "autograd or AutoTape outside"
            )
        ty = linear_call(tangent_map, cotangent_map, (x, *arrs), tangents[0])
        return value(x, *arrs), ty

    return value(x, *arrays)


class JaxBoundary:
    """JAX outside `DifferentiateWith` (a `diface._boundary.Boundary`)."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, (jax.Array, jax.core.Tracer))

    def call(self, dw: Any, x: Any, constants: tuple) -> Any:
        return call(dw, x, constants)

    def inner_pushforward(self, f: Any, x: np.ndarray, t: np.ndarray, constants: tuple) -> None:
        return None
