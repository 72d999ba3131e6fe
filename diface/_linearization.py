"""Linearizations: f's forward pass done once at a point, then J applied to any batch of vectors.

A backend that can split differentiation into a forward pass and products afterwards implements
`Backend.prepare_linearize(problem, mode)`, returning a `Linearizer`: `linearizer(x, cv, y)` runs f at
`x` once (recording what the products need: a graph, a tape, a trace) and returns a `Linearization`,
whose `push` (forward mode, `J @ t`) and `pull` (reverse mode, `t @ J`) apply J to a batch of vectors
stacked along a leading axis, as often as asked. The core builds on it everything made of repeated
products at one point: Jacobian basis sweeps (one forward pass per call, not one per chunk),
same-point preparations (one forward pass per preparation), and, through a `SecondOrderPlan`,
Hessians and Hessian-vector products.

A linearization belongs to the call that made it. Same-point preparations keep one for all their
calls: where its products may run from several threads at once (`Linearization.shareable`) they share
it, else each thread makes its own at the preparation's point on its first call.

Shapes: `x_shape`, `y_shape` of the linearized function; a batch of B tangents is one array of shape
`(B, *x_shape)` in the backend's arrays, its pushforward `(B, *y_shape)`; likewise pullbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Linearization", "Linearizer"]


class Linearization:
    """f linearized at one point.

    Attributes:
        value: f(x), in the backend's arrays (for an in-place f, the `y` it wrote into).
        primal: for the linearization of a derivative map (second order, see `SecondOrderPlan`): f(x)
            itself where computing the derivative gave it for free, else None.
        shareable: `push`/`pull` may run from several threads at once.
    """

    value: Any = None
    primal: Any = None
    shareable: bool = False

    def push(self, tangents: Any) -> Any:
        """`J @ t` for each row `t` of `tangents` (shape `(B, *x_shape)`), stacked: `(B, *y_shape)`."""
        raise NotImplementedError(f"{type(self).__name__} has no forward products")

    def pull(self, cotangents: Any) -> Any:
        """`t @ J` for each row `t` of `cotangents` (shape `(B, *y_shape)`), stacked: `(B, *x_shape)`."""
        raise NotImplementedError(f"{type(self).__name__} has no reverse products")

    def product_parts(self, forward: bool) -> tuple[Callable, tuple] | None:
        """`(fn, args)` with `push(t) == fn(*args, t)` (`forward`, else `pull`), where `fn` is one object
        for all the linearizations of a linearizer and `args` are arrays (or pytrees): a compiled solver
        (JAX's GMRES, `method="krylov"`) then takes the products as an argument and compiles once, not
        at every point. None (the default): not offered."""
        return None


#: `linearizer(x, context_values, y) -> Linearization` (y: the output buffer of an in-place f, or None)
Linearizer = Callable[[Any, tuple, Any], Linearization]
