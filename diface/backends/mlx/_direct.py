"""MLX's own fastest calls of each operator, what `python -m diface bench` measures AutoMLX against
(`register_engine(direct=...)`): `mx.compile` around `mx.grad`, `mx.jvp` of `mx.grad`, a `vmap` of `jvp`s or
`vjp`s over the basis (the faster of the two) and a `vmap` of `jvp`s of `mx.grad`, evaluated (MLX is lazy)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["direct"]


def _jacobians(g: Callable, n: int, m: int, dtype: Any) -> dict[str, Callable]:
    import mlx.core as mx

    def jacfwd(x: Any) -> Any:
        basis = mx.eye(n, dtype=dtype)
        return mx.vmap(lambda t: mx.jvp(g, [x], [t])[1][0], in_axes=0, out_axes=1)(basis)

    def jacrev(x: Any) -> Any:
        basis = mx.eye(m, dtype=dtype)
        return mx.vmap(lambda c: mx.vjp(g, [x], [c])[1][0])(basis)

    return {"mx.compile(vmap of mx.jvp)": jacfwd, "mx.compile(vmap of mx.vjp)": jacrev}


def _faster(candidates: dict[str, Callable[[], Any]]) -> tuple[str, Callable[[], Any]]:
    if len(candidates) == 1:
        return next(iter(candidates.items()))
    best: dict[str, float] = {}
    for _ in range(3):
        for name, thunk in candidates.items():
            start = time.perf_counter()
            for _ in range(5):
                thunk()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
    name = min(best, key=best.__getitem__)
    return name, candidates[name]


def direct(operator: str, f: Callable, x: np.ndarray, v: np.ndarray, numpy_in: bool) -> Any:
    """`(description, thunk)`: MLX called directly on `operator` of `f(xp, x)` (see
    `diface.testing._references.direct_call`)."""
    import mlx.core as mx

    from . import _namespace as xp

    dtype = getattr(mx, np.dtype(x.dtype).name)
    g = lambda x: f(xp, x)
    mv = mx.array(v, dtype=dtype)
    n = x.size
    if operator == "gradient":
        idioms = {"mx.compile(mx.grad)": mx.grad(g)}
    elif operator == "hvp":
        idioms = {"mx.compile(mx.jvp of mx.grad)": lambda x: mx.jvp(mx.grad(g), [x], [mv])[1][0]}
    elif operator == "jacobian":
        m = int(np.prod(np.shape(g(mx.array(x, dtype=dtype)))))
        idioms = _jacobians(g, n, m, dtype)
    else:

        def hessian(x: Any) -> Any:
            basis = mx.eye(n, dtype=dtype)
            return mx.vmap(lambda t: mx.jvp(mx.grad(g), [x], [t])[1][0])(basis)

        idioms = {"mx.compile(vmap of mx.jvp of mx.grad)": hessian}
    compiled = {name: mx.compile(fn) for name, fn in idioms.items()}
    mx_x = mx.array(x, dtype=dtype)

    def thunk(fn: Callable) -> Callable[[], Any]:
        if numpy_in:
            return lambda: np.array(fn(mx.array(x, dtype=dtype)))

        def native() -> Any:
            r = fn(mx_x)
            mx.eval(r)
            return r

        return native

    for fn in compiled.values():  # MLX traces a compiled function on its first two calls
        mx.eval(fn(mx_x))
        mx.eval(fn(mx_x))
    return _faster({name: thunk(fn) for name, fn in compiled.items()})
