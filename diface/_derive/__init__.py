"""Derivations: every operator built once, from a backend's linearization or its pushforward and/or
pullback.

One derivation per module. Each takes a backend and a `Problem` and returns a kernel (see
`diface._problem.Kernel`); the `Backend` base class calls them from its `prepare_*` methods, which
a backend overrides only where it has something faster. Second-order operators come from a
`SecondOrderPlan` (`second_order`).
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
