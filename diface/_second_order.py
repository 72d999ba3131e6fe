"""`SecondOrder(outer, inner)`: one backend differentiating what another computes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._arrays import ArrayOps
from ._backend import Backend
from ._errors import ArgumentError
from ._problem import Kernel, Problem

__all__ = ["SecondOrder"]


@dataclass(frozen=True)
class SecondOrder(Backend):
    """A backend for second-order operators: `outer` differentiates what `inner` computes.

    `hvp` is forward-over-reverse when `outer` has a forward mode (the outer pushforward of the
    inner gradient), else reverse-over-forward or reverse-over-reverse; `hessian` is `hvp` over the
    basis; `second_derivative` is the outer derivative of the inner derivative. First-order
    operators run on `inner`. A plain backend `b` used for a second-order operator acts as
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

    def __post_init__(self) -> None:
        for role in ("outer", "inner"):
            b = getattr(self, role)
            if not isinstance(b, Backend):
                raise ArgumentError(f"SecondOrder: {role} must be a diface backend, got {b!r}")
            if isinstance(b, SecondOrder):
                raise ArgumentError(f"SecondOrder: {role} cannot itself be a SecondOrder; pass first-order backends")

    # first-order facts and operators are the inner backend's
    @property
    def native_modes(self) -> frozenset[str]:  # type: ignore[override]
        return self.inner.native_modes

    @property
    def mode(self) -> str:  # type: ignore[override]
        return self.inner.mode

    @property
    def supports_inplace(self) -> bool:  # type: ignore[override]
        return self.inner.supports_inplace

    @property
    def max_batch_size(self) -> int:  # type: ignore[override]
        return self.outer.max_batch_size

    @property
    def accuracy_exponent(self) -> float:  # type: ignore[override]
        return self.inner.accuracy_exponent

    def is_available(self) -> bool:
        return self.outer.is_available() and self.inner.is_available()

    def require(self) -> None:
        self.outer.require()
        self.inner.require()

    def array_ops(self, x: Any) -> ArrayOps:
        return self.inner.array_ops(x)

    def array_namespace(self) -> Any:
        return self.inner.array_namespace()

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        return self.inner.output_spec(problem)

    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        return self.inner.prepare_pushforward(problem, tangents)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self.inner.prepare_pullback(problem, cotangents)

    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        return self.inner.prepare_pushforward_same_point(problem, tangents)

    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self.inner.prepare_pullback_same_point(problem, cotangents)

    def prepare_derivative(self, problem: Problem) -> Kernel:
        return self.inner.prepare_derivative(problem)

    def prepare_gradient(self, problem: Problem) -> Kernel:
        return self.inner.prepare_gradient(problem)

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        return self.inner.prepare_jacobian(problem)

    def second_order_backends(self) -> tuple[Backend, Backend]:
        return self.outer, self.inner
