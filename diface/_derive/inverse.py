"""Jacobian-inverse products: `inverse_pushforward` solves `J dx = ty`, `inverse_pullback` solves
`Jᵀ dy = tx`, by one of three methods, each an *inverse linearizer* (see `diface._linearization`):
`make(x, cv, y)` does the work at x once and returns a `Linearization` whose `push` solves
`J dx = t` and whose `pull` solves `Jᵀ dy = t` for a batch of right-hand sides stacked along a leading
axis (`(B, *y_shape)` -> `(B, *x_shape)` and back).

- `"accumulate"`: the engine's own plan (`Backend.prepare_inverse_linearize`), inverse accumulation
  over a recorded program, without forming J.
- `"dense"`: the backend's Jacobian and an LU factorization (`diface._derive.inverse_dense`); a SciPy
  sparse Jacobian (`AutoSparse` on NumPy) is factored by a sparse LU, and the kernel's method says
  `"sparse-lu"`.
- `"krylov"`: GMRES over the backend's products (`diface._derive.inverse_krylov`).
- `"auto"`: `"accumulate"` where the engine has a plan, else `"dense"` up to `DENSE_MAX` unknowns (and
  for any size where the Jacobian is a SciPy sparse matrix, which `splu` factors), else `"krylov"`.

Kernels: those of any linearizer (`diface._derive.linearized`): at any point, each call makes the inverse
linearization at its x; at one point (same-point preparations), it is made once at preparation (once per
thread where it cannot be shared).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._arrays import NUMPY
from .._errors import ArgumentError, NotSupportedError
from .._kernel import Kernel
from .._problem import Problem, size_of
from .inverse_dense import dense_inverse
from .inverse_krylov import krylov_inverse
from .linearized import linearized_products, same_point_products

__all__ = ["DENSE_MAX", "METHODS", "InverseSolver", "derive_inverse"]

METHODS = ("auto", "accumulate", "dense", "krylov")
#: "auto" factors J densely up to this many unknowns. At n = 1000 the Jacobian is 1000 products
#: (batched, on one linearization) and 8 MB, and LU costs n³/3 ≈ 3e8 flops, a few milliseconds, after
#: which every solve is exact and costs n² flops. GMRES needs up to n sequential products per right-hand
#: side (each one a pass over f), with no batching across its iterations, and an answer only to rtol:
#: below this size the dense route is faster for all but the best-conditioned J, above it memory (n²)
#: and the cubic factorization start to dominate.
DENSE_MAX = 1000
#: engines that know inverse accumulation, for the message when a backend has no plan
ACCUMULATING = "AutoTape() (and AutoSparse(AutoTape()))"


@dataclass(frozen=True)
class InverseSolver:
    """The settings of a Jacobian-inverse product: `method`, and GMRES's `rtol` and `maxiter` (None:
    the defaults of `diface._derive.inverse_krylov`)."""

    method: str = "auto"
    rtol: float | None = None
    maxiter: int | None = None

    @classmethod
    def checked(cls, method: Any, rtol: Any, maxiter: Any, where: str) -> InverseSolver:
        """The settings, or `ArgumentError` naming what is wrong (before anything runs)."""
        if not isinstance(method, str) or method not in METHODS:
            raise ArgumentError(
                f"{where}: unknown method {method!r}; choose one of {', '.join(repr(m) for m in METHODS)}"
            )
        if rtol is not None and (
            isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not 0.0 < float(rtol) < 1.0
        ):
            raise ArgumentError(f"{where}: rtol must be a number between 0 and 1 (exclusive), got {rtol!r}")
        if maxiter is not None and (isinstance(maxiter, bool) or not isinstance(maxiter, int) or maxiter < 1):
            raise ArgumentError(f"{where}: maxiter must be a positive integer, got {maxiter!r}")
        return cls(method, None if rtol is None else float(rtol), maxiter)


def derive_inverse(backend: Any, problem: Problem, forward: bool, same_point: bool, solver: InverseSolver) -> Kernel:
    """The kernel of `inverse_pushforward` (`forward`) or `inverse_pullback` on `problem`, by
    `solver.method`; the kernel's `method` names the method it uses."""
    where = "inverse_pushforward" if forward else "inverse_pullback"
    method, make = _inverse_linearizer(backend, problem, forward, solver, where)
    # an inverse linearizer is a linearizer of J⁻¹: the products of one, at any point or at one point
    kernel = same_point_products(make, problem, forward) if same_point else linearized_products(make, problem, forward)
    return kernel.replace(method=method)


def _inverse_linearizer(
    backend: Any, problem: Problem, forward: bool, solver: InverseSolver, where: str
) -> tuple[str, Callable]:
    method = solver.method
    if method in ("auto", "accumulate"):
        plan = backend.prepare_inverse_linearize(problem)
        if plan is not None:
            return "accumulate", plan
        if method == "accumulate":
            raise NotSupportedError(
                f"{where}: {backend!r} has no inverse-accumulation plan for this f (method='accumulate' is "
                f"offered by {ACCUMULATING}, for computations that keep a constant width); use "
                "method='dense' or method='krylov', or 'auto' to choose"
            )
        method = "dense" if _dense_pays(backend, problem) else "krylov"
    if method == "dense":
        return dense_inverse(backend, problem, where)
    return "krylov", krylov_inverse(backend, problem, forward, solver.rtol, solver.maxiter, where)


def _dense_pays(backend: Any, problem: Problem) -> bool:
    if size_of(problem.x_shape) <= DENSE_MAX:
        return True
    # a SciPy sparse Jacobian: splu's cost follows the fill-in, not n³ (torch and JAX densify theirs)
    return backend.sparse_results and problem.ops is NUMPY
