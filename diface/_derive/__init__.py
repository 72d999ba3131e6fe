"""Derivations: every operator built once, from a backend's pushforward and/or pullback.

One derivation per module. Each takes a backend and a `Problem` and returns a kernel (see
`diface._problem.Kernel`); the `Backend` base class calls them from its `prepare_*` methods, which
a backend overrides only where it has something faster.
"""

from .hessian import derive_hessian
from .hvp import derive_hvp
from .jacobian import derive_jacobian, sweep_mode
from .second_derivative import derive_second_derivative
from .wrong_mode import derive_pullback, derive_pushforward

__all__ = [
    "derive_hessian",
    "derive_hvp",
    "derive_jacobian",
    "derive_pullback",
    "derive_pushforward",
    "derive_second_derivative",
    "sweep_mode",
]
