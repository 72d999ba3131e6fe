"""`MixedMode(forward, reverse)`: one backend doing forward products with one engine and reverse
products with another (or the same), for sparse Jacobians that neither direction colors well."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ._arrays import ArrayOps
from ._backend import Backend
from ._errors import ArgumentError, NotSupportedError
from ._linearization import Linearizer
from ._problem import Kernel, Problem

__all__ = ["MixedMode"]


@dataclass(frozen=True)
class MixedMode(Backend):
    """Pushforwards from `forward`, pullbacks from `reverse`: as the dense backend of `di.AutoSparse`,
    a bicoloring of the Jacobian's pattern takes some nonzeros from forward products and the others
    from reverse products. An arrowhead Jacobian (a dense row, a dense column and a diagonal) needs n
    products in either direction alone, and 3 this way.

    Example:
        >>> import numpy as np, diface as di
        >>> def arrow(x):  # y0 = sum(x), y_i = x_0 + x_i^2
        ...     return np.concatenate([np.sum(x, keepdims=True), x[0] + x[1:] ** 2])
        >>> b = di.AutoSparse(di.MixedMode(di.AutoTape(), di.AutoTape()))
        >>> prep = di.prepare_jacobian(arrow, b, np.zeros(200))
        >>> prep.ncolors
        3
    """

    forward: Backend
    reverse: Backend

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward", "reverse"})
    mode: ClassVar[str] = "auto"

    def __post_init__(self) -> None:
        for role in ("forward", "reverse"):
            b = getattr(self, role)
            if not isinstance(b, Backend):
                raise ArgumentError(f"MixedMode: {role} must be a diface backend, got {b!r}")
            if role not in b.native_modes:
                raise ArgumentError(f"MixedMode: {b!r} has no native {role} mode")

    @property
    def supports_inplace(self) -> bool:  # type: ignore[override]
        return self.forward.supports_inplace and self.reverse.supports_inplace

    @property
    def accuracy_exponent(self) -> float:  # type: ignore[override]
        return min(self.forward.accuracy_exponent, self.reverse.accuracy_exponent)

    def is_available(self) -> bool:
        return self.forward.is_available() and self.reverse.is_available()

    def require(self) -> None:
        self.forward.require()
        self.reverse.require()

    def array_ops(self, x: Any) -> ArrayOps:
        ops = self.forward.array_ops(x)
        if self.reverse.array_ops(x) is not ops:
            raise NotSupportedError(f"{self!r}: the two backends work on different array types")
        return ops

    def array_namespace(self) -> Any:
        return self.forward.array_namespace()

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        return self.forward.output_spec(problem)

    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        return self.forward.detect_sparsity(problem, order)

    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer | None:
        return (self.forward if mode == "forward" else self.reverse).prepare_linearize(problem, mode)

    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        return self.forward.prepare_pushforward(problem, tangents)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self.reverse.prepare_pullback(problem, cotangents)

    def second_order_backends(self) -> tuple[Backend, Backend]:
        return self.forward, self.reverse
