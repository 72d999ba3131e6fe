"""`DifferentiateWith(f, backend)`: f differentiated by `backend` inside code another engine differentiates.

The outer engine's side lives in that engine's package, registered as a `diface._boundary.Boundary`
(torch: a `torch.autograd.Function`; JAX: `jax.custom_jvp` over `jax.pure_callback`; autograd:
primitives; AutoTape: tape primitives); `_inner` runs the inner backend on host NumPy arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._backend import Backend
from .._boundary import boundary_for, to_host
from .._errors import ArgumentError
from ._inner import Inner

__all__ = ["DifferentiateWith"]


class DifferentiateWith:
    """`f` (written for `backend`'s arrays) made callable inside code any other engine differentiates.

    Whichever engine differentiates the caller — a diface backend, or torch, JAX or autograd called
    directly — asks `backend` for f's pushforwards and pullbacks at the boundary, each prepared once per
    input spec (shape, dtype, array type) and reused:

    - torch tensors: a `torch.autograd.Function` (backward, forward-mode `jvp`, `torch.func.vmap`);
    - JAX arrays and tracers: `jax.custom_jvp` over `jax.pure_callback` (`vmap_method="sequential"`),
      the tangent map a `linear_call` whose transpose is the pullback (grad, jacfwd, jacrev, jit);
    - autograd boxes: autograd primitives with VJP and JVP rules;
    - AutoTape's traced arrays: tape primitives whose rules call `backend`;
    - NumPy arrays and numbers: f evaluated.

    The call is `DifferentiateWith(f, backend)(x, *constants)`: only `x` (one floating-point or complex
    array) is differentiated; `constants` reach f as given (arrays converted to `backend`'s type) and carry
    no derivative. f returns one floating-point or complex array. With complex values, each outer engine
    gets the products in its own convention (JAX's and autograd's VJPs conjugated around diface's adjoint
    pullback, in their boundary modules), so wrapping changes no result. Arrays cross the boundary through host memory,
    zero-copy by DLPack where the layout allows (non-contiguous tensors and read-only arrays are copied).
    Second order crosses (an hvp through the boundary) where the outer engine allows and `backend` has
    second derivatives; third order raises `di.NotSupportedError`.

    Example:
        >>> import numpy as np, diface as di
        >>> import autograd.numpy as anp
        >>> g = di.DifferentiateWith(lambda x: anp.sin(x) * 2.0, di.AutoAutograd())
        >>> outer = lambda x: np.sum(g(x) ** 2)   # plain NumPy code around an autograd-only function
        >>> x = np.array([0.1, 0.2])
        >>> np.allclose(di.gradient(outer, di.AutoTape(), x), 8 * np.sin(x) * np.cos(x))
        True
    """

    def __init__(self, f: Callable, backend: Backend) -> None:
        if not isinstance(backend, Backend):
            raise ArgumentError(f"DifferentiateWith: backend must be a diface backend, got {backend!r}")
        if not callable(f):
            raise ArgumentError(f"DifferentiateWith: f must be callable, got {f!r}")
        self.f = f
        self.backend = backend
        self.inner = Inner(f, backend)
        self._outer: dict[str, Any] = {}
        functools.update_wrapper(self, f, updated=())

    def __repr__(self) -> str:
        return f"DifferentiateWith({getattr(self.f, '__name__', self.f)!r}, {self.backend!r})"

    def __call__(self, x: Any, *constants: Any) -> Any:
        # the engine of x, else of the first constant that belongs to one
        for value in (x, *constants):
            boundary = boundary_for(value)
            if boundary is not None:
                return boundary.call(self, x, constants)
        return self.inner.value(to_host(x), tuple(to_host(c, "a constant") for c in constants))
