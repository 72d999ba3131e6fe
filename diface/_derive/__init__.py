"""Derivations: every operator built once, from a backend's linearization or its pushforward and/or
pullback.

One derivation per module. Each takes a backend and a `Problem` and returns a kernel (see
`diface._kernel.Kernel`); the `Backend` base class calls them from its `prepare_*` methods, which
a backend overrides only where it has something faster. Second-order operators come from a
`SecondOrderPlan` (`second_order`).

Modules: `jacobian` (Jacobians, gradients and derivatives by basis sweeps, in the mode `mode`
chooses), `linearized` (batched products on a linearization), `wrong_mode` (a pushforward for a
backend with pullbacks only, and the reverse), `hvp`, `hessian` and `second_derivative` (second order
from an outer backend over an inner one's derivative), `second_order` (`SecondOrderPlan` and
`compose`), `taylor` and `laplacian` (higher order by nested pushforwards), `inverse` with
`inverse_dense` and `inverse_krylov` (Jacobian-inverse products); helpers: `_sweep` (the standard
basis in chunks), `_per_thread` (values made once per thread).
"""

from .inverse import InverseSolver, derive_inverse
from .jacobian import derive_jacobian
from .laplacian import LaplacianMethod, LaplacianReport, derive_laplacian
from .linearized import linearized_products, same_point_products
from .mode import choose_kernel, sweep_mode
from .second_order import SecondOrderPlan, compose
from .taylor import derive_taylor
from .wrong_mode import derive_pullback, derive_pushforward

__all__ = [
    "InverseSolver",
    "LaplacianMethod",
    "LaplacianReport",
    "SecondOrderPlan",
    "choose_kernel",
    "compose",
    "derive_inverse",
    "derive_jacobian",
    "derive_laplacian",
    "derive_pullback",
    "derive_pushforward",
    "derive_taylor",
    "linearized_products",
    "same_point_products",
    "sweep_mode",
]
