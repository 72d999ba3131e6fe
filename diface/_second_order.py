"""`SecondOrder(outer, inner)`: one backend differentiating what another computes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ._backend import Backend
from ._errors import ArgumentError
from ._kernel import Kernel
from ._problem import Problem
from ._wrapper import Wrapper

__all__ = ["SecondOrder"]


@dataclass(frozen=True)
class SecondOrder(Wrapper):
    """A backend for second-order operators: `outer` differentiates what `inner` computes.

    `hvp` is forward-over-reverse when `outer` has a forward mode (the outer pushforward of the
    inner gradient), else reverse-over-forward or reverse-over-reverse; `hessian` is `hvp` over the
    basis; `second_derivative` is the outer derivative of the inner derivative. Everything else
    (first-order operators, inverse products, sparsity detection, linearizations) is `inner`'s: the
    engine that runs f. A plain backend `b` used for a second-order operator acts as
    `SecondOrder(b, b)`.

    Example:
        >>> import numpy as np, diface as di
        >>> b = di.SecondOrder(di.AutoFiniteDiff(), di.AutoFiniteDiff())
        >>> di.hessian(lambda x: x[0] ** 2 * x[1], b, np.array([1.0, 2.0])).round(5)
        array([[4., 2.],
               [2., 0.]])
    """

    outer: Backend
    inner: Backend

    own_hooks: ClassVar[dict[str, str]] = {
        "second_order_backends": "(outer, inner): what this wrapper is for",
        "second_order_plan": "the base class's plan over (outer, inner), not the inner engine's own",
        "prepare_hvp": "derived from this wrapper's plan (outer over inner)",
        "prepare_hvp_same_point": "derived from this wrapper's plan (outer over inner)",
        "prepare_hessian": "derived from this wrapper's plan (outer over inner)",
        "prepare_second_derivative": "derived from this wrapper's plan (outer over inner)",
        "prepare_sparse_hessian": "the engine's own program only where outer and inner are one engine",
        "max_batch_size": "the outer engine sweeps the Hessian's basis",
        "is_available": "both engines must be installed",
        "require": "both engines must be installed",
    }

    def __post_init__(self) -> None:
        for role in ("outer", "inner"):
            b = getattr(self, role)
            if not isinstance(b, Backend):
                raise ArgumentError(f"SecondOrder: {role} must be a diface backend, got {b!r}")
            if isinstance(b, SecondOrder):
                raise ArgumentError(f"SecondOrder: {role} cannot itself be a SecondOrder; pass first-order backends")

    @property
    def wrapped(self) -> Backend:
        return self.inner

    @property
    def max_batch_size(self) -> int:  # type: ignore[override]
        return self.outer.max_batch_size

    def is_available(self) -> bool:
        return self.outer.is_available() and self.inner.is_available()

    def require(self) -> None:
        self.outer.require()
        self.inner.require()

    def second_order_backends(self) -> tuple[Backend, Backend]:
        return self.outer, self.inner

    second_order_plan = Backend.second_order_plan
    prepare_hvp = Backend.prepare_hvp
    prepare_hvp_same_point = Backend.prepare_hvp_same_point
    prepare_hessian = Backend.prepare_hessian
    prepare_second_derivative = Backend.prepare_second_derivative

    def prepare_sparse_hessian(self, problem: Problem, coloring: Any) -> Kernel | None:
        if self.outer != self.inner:
            return None  # the core's products of this wrapper's plan: outer over inner
        return self.inner.prepare_sparse_hessian(problem, coloring)
