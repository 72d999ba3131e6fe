"""Jacobian-inverse products by GMRES over the backend's products (`method="krylov"`).

`J dx = ty` is solved with pushforwards (`v -> J v`) and `Jᵀ dy = tx` with pullbacks (`w -> Jᵀ w`), on
f linearized at x once per call (`Backend.prepare_linearize`), or, for an engine without a
linearization in that mode, with its prepared pushforward or pullback kernel (one pass over f per
product; a reverse product of a forward-only engine goes through its Jacobian). J is never formed.

GMRES is the array library's: `scipy.sparse.linalg.gmres` for NumPy, `jax.scipy.sparse.linalg.gmres`
for JAX, diface's own restarted loop (`diface._gmres`) for torch, on the tensors' device. Each right-hand
side is one solve, restarted every `min(n, RESTART)` iterations, at most `maxiter` iterations (products)
in all; the library is asked for `rtol / 10` and the answer is accepted when its true relative residual
`|J dx - ty| / |ty|`, computed with one more product, is at most `rtol`. Else `ConvergenceError`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from .._errors import ConvergenceError
from .._linearization import Linearization
from .._problem import Problem, size_of

__all__ = ["RESTART", "KrylovSolve", "default_maxiter", "default_rtol", "krylov_inverse"]

#: GMRES restarts after this many iterations (its basis holds as many vectors of size n)
RESTART = 100


def default_rtol(eps: float, accuracy: float = 1.0) -> float:
    """Relative tolerance by default: 1e-10 in float64, about 1e-5 in float32 (100 eps), for exact
    products; for products accurate to `eps ** accuracy` only (finite differences), `eps ** (0.75 accuracy)`,
    a little above their noise (1.5e-8 for central differences in float64)."""
    if accuracy < 1.0:
        return eps ** (0.75 * accuracy)
    return max(1e-10, 100.0 * eps)


def default_maxiter(n: int) -> int:
    """Iterations (products) by default: twice the unknowns, at least 200. Without restarts GMRES is
    exact after n iterations in exact arithmetic; the rest is for rounding and restarts."""
    return max(2 * n, 200)


class KrylovSolve(Linearization):
    """f's products at one point, solved against: `push` solves `J X = T` (forward), `pull` solves
    `Jᵀ X = T` (reverse), one GMRES run per row of T."""

    shareable = False  # the products may keep buffers (an engine's linearization)

    def __init__(
        self,
        product: Callable[[Any], Any],
        value: Callable[[], Any],
        problem: Problem,
        settings: tuple,
        parts: tuple[Callable, tuple] | None = None,
    ) -> None:
        self._product, self._value, self._parts = product, value, parts
        self.ops = problem.ops
        self.x_shape, self.y_shape = problem.x_shape, problem.y_spec[0]
        self.n = size_of(self.x_shape)
        self.rtol, self.maxiter, self.where, self.forward = settings

    @property
    def value(self) -> Any:
        return self._value()

    def push(self, tangents: Any) -> Any:
        return self._solve_all(tangents, self.y_shape, self.x_shape)

    def pull(self, cotangents: Any) -> Any:
        return self._solve_all(cotangents, self.x_shape, self.y_shape)

    def _solve_all(self, stacked: Any, in_shape: tuple, out_shape: tuple) -> Any:
        """Unknowns shaped `out_shape` (the product's input) for right-hand sides shaped `in_shape`."""
        ops, n = self.ops, self.n

        def matvec(v: Any) -> Any:
            return ops.reshape(self._product(ops.reshape(v, (1, *out_shape))), (n,))

        parts = None
        if self._parts is not None:
            fn, args = self._parts
            parts = (_flat_product(fn, out_shape, n), args)
        rows = [self._solve(matvec, ops.reshape(t, (n,)), parts) for t in ops.unstack(stacked)]
        return ops.reshape(ops.stack(rows), (len(rows), *out_shape))

    def _solve(self, matvec: Callable[[Any], Any], b: Any, parts: Any) -> Any:
        ops, n = self.ops, self.n
        bnorm = ops.norm(b)
        if bnorm == 0.0 or n == 0:
            return ops.zeros((n,), b.dtype, b)
        restart = max(1, min(n, RESTART, self.maxiter))
        x = ops.gmres(matvec, b, None, self.rtol / 10.0, restart, math.ceil(self.maxiter / restart), parts)
        residual = ops.norm(b - matvec(x)) / bnorm
        if not residual <= self.rtol:
            system, rhs = ("J dx = ty", "ty") if self.forward else ("Jᵀ dy = tx", "tx")
            raise ConvergenceError(
                f"{self.where} (method='krylov'): GMRES did not solve {system}: the relative residual "
                f"|{system.split(' =')[0]} - {rhs}| / |{rhs}| reached {residual:.3g}, above rtol={self.rtol:g}, "
                f"within maxiter={self.maxiter} iterations (restarted every {restart}). Try a larger maxiter=, "
                "a looser rtol=, or method='dense' (exact, for up to a few thousand unknowns); J may also be "
                "singular or badly conditioned at this x"
            )
        return x


def krylov_inverse(
    backend: Any, problem: Problem, forward: bool, rtol: float | None, maxiter: int | None, where: str
) -> Callable[[Any, tuple, Any], KrylovSolve]:
    """The inverse linearizer of `method="krylov"`: `make(x, cv, y)` linearizes f at x (where the engine
    can) and returns the solver over its products."""
    ops = problem.ops
    n = size_of(problem.x_shape)
    eps = ops.eps(ops.result_type(problem.x_dtype, problem.y_spec[1]))
    settings = (
        default_rtol(eps, backend.accuracy_exponent) if rtol is None else rtol,
        default_maxiter(n) if maxiter is None else maxiter,
        where,
        forward,
    )
    mode = "forward" if forward else "reverse"
    linearizer = backend.prepare_linearize(problem, mode) if mode in backend.native_modes else None
    if linearizer is not None:

        def make_linearized(x: Any, cv: tuple, y: Any) -> KrylovSolve:
            lin = linearizer(x, cv, y)
            product = lin.push if forward else lin.pull
            return KrylovSolve(product, lambda: lin.value, problem, settings, lin.product_parts(forward))

        return make_linearized

    # no linearization in this mode: the backend's product kernel, one tangent at a time
    space_shape, space_dtype = (problem.x_shape, problem.x_dtype) if forward else problem.y_spec
    seed = (ops.zeros(space_shape, space_dtype, problem.x),)
    kernel = (backend.prepare_pushforward if forward else backend.prepare_pullback)(problem, seed)

    def make_with_kernel(x: Any, cv: tuple, y: Any) -> KrylovSolve:
        def product(stacked: Any) -> Any:
            return ops.stack(list(kernel.result_of(x, tuple(ops.unstack(stacked)), cv, y)))

        def value() -> Any:
            return problem.evaluate(x, cv, y)

        return KrylovSolve(product, value, problem, settings)

    return make_with_kernel


@functools.lru_cache(maxsize=64)
def _flat_product(fn: Callable, shape: tuple, n: int) -> Callable:
    """`fn(*args, T)` on one flat vector: `(n,)` -> `(n,)`, the same object for the same `fn` and shapes
    (what lets a compiled GMRES be reused)."""

    def flat(*args: Any) -> Any:
        *parts, v = args
        return fn(*parts, v.reshape((1, *shape))).reshape((n,))

    return flat
