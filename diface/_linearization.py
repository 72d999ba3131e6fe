"""Linearizations: f's forward pass done once at a point, then J applied to any batch of vectors.

A backend that can split differentiation into a forward pass and products afterwards implements
`Backend.prepare_linearize(problem, mode)`, returning a `Linearizer`: `linearizer(x, cv, y)` runs f at
`x` once (recording what the products need: a graph, a tape, a trace) and returns a `Linearization`,
whose `push` (forward mode, `J @ t`) and `pull` (reverse mode, `t @ J`) apply J to a batch of vectors
stacked along a leading axis, as often as asked. The core builds on it everything made of repeated
products at one point: Jacobian basis sweeps (one forward pass per call, not one per chunk),
same-point preparations (one forward pass per preparation), and, through a `SecondOrderPlan`,
Hessians and Hessian-vector products.

A linearization belongs to the call that made it (or to a same-point preparation, which only reads
it): products may run concurrently from several threads only where the engine allows; the core
never shares one between calls of different threads except read-only, same-point ones, whose
engines say so (`Linearization.shareable`).

Shapes: `x_shape`, `y_shape` of the linearized function; a batch of B tangents is one array of shape
`(B, *x_shape)` in the backend's arrays, its pushforward `(B, *y_shape)`; likewise pullbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Linearization", "Linearizer", "SecondOrderPlan"]


class Linearization:
    """f linearized at one point.

    Attributes:
        value: f(x), in the backend's arrays (for an in-place f, the `y` it wrote into).
        primal: for the linearization of a derivative map (second order, see `SecondOrderPlan`): f(x)
            itself, where computing the derivative gave it for free; None otherwise.
        shareable: `push`/`pull` may run from several threads at once (same-point preparations keep
            one linearization for all their calls).
    """

    value: Any = None
    primal: Any = None
    shareable: bool = True

    def push(self, tangents: Any) -> Any:
        """`J @ t` for each row `t` of `tangents` (shape `(B, *x_shape)`), stacked: `(B, *y_shape)`."""
        raise NotImplementedError(f"{type(self).__name__} has no forward products")

    def pull(self, cotangents: Any) -> Any:
        """`t @ J` for each row `t` of `cotangents` (shape `(B, *y_shape)`), stacked: `(B, *x_shape)`."""
        raise NotImplementedError(f"{type(self).__name__} has no reverse products")


#: `linearizer(x, context_values, y) -> Linearization` (y: the output buffer of an in-place f, or None)
Linearizer = Callable[[Any, tuple, Any], Linearization]


@dataclass(frozen=True)
class SecondOrderPlan:
    """How an engine differentiates its own first derivative (second-order operators).

    `linearize(x, context_values)` returns the linearization, at x, of the first-derivative map: the
    gradient `x -> grad f(x)` for a scalar output (hvp, hessian), or the derivative `x -> f'(x)` for a
    scalar input (second_derivative). Its `value` is that derivative, its `primal` f(x) where it came
    for free. `mode` is the product it applies natively: "forward" (`push`) or "reverse" (`pull`; the
    Hessian being symmetric, a pullback of the gradient is a Hessian-vector product too).
    """

    linearize: Callable[[Any, tuple], Linearization]
    mode: str
