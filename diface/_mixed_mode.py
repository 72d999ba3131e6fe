"""`MixedMode(forward, reverse)`: one backend doing forward products with one engine and reverse
products with another (or the same), for sparse Jacobians that neither direction colors well."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ._arrays import ArrayOps
from ._backend import Backend
from ._errors import ArgumentError, NotSupportedError
from ._kernel import Kernel
from ._linearization import Linearizer
from ._problem import Problem
from ._wrapper import Wrapper

__all__ = ["MixedMode"]

_DERIVED = "the base class's derivation over both engines (the mode chosen per problem)"


@dataclass(frozen=True)
class MixedMode(Wrapper):
    """Pushforwards from `forward`, pullbacks from `reverse`: as the dense backend of `di.AutoSparse`,
    a bicoloring of the Jacobian's pattern takes some nonzeros from forward products and the others
    from reverse products. An arrowhead Jacobian (a dense row, a dense column and a diagonal) needs n
    products in either direction alone, and 3 this way. Everything else is `forward`'s.

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
    mode = "auto"  # fixed: a class attribute, not a dataclass field
    colors_both_ways: ClassVar[bool] = True

    own_hooks: ClassVar[dict[str, str]] = {
        "native_modes": "both: forward products from one engine, reverse products from the other",
        "mode": "'auto': each derived operator picks the cheaper direction",
        "colors_both_ways": "AutoSparse bicolors its Jacobians",
        "supports_inplace": "both engines must support in-place functions",
        "accuracy_exponent": "the less accurate of the two engines",
        "is_available": "both engines must be installed",
        "require": "both engines must be installed",
        "array_ops": "both engines must work on the same arrays",
        "prepare_linearize": "by mode: forward's or reverse's",
        "prepare_pullback": "reverse's",
        "prepare_pullback_same_point": "reverse's",
        "prepare_derivative": _DERIVED,
        "prepare_gradient": _DERIVED,
        "prepare_jacobian": _DERIVED,
        "prepare_sparse_jacobian": "an engine's own program only where forward and reverse are one engine",
        "second_order_backends": "(forward, reverse): forward over reverse",
        "second_order_plan": _DERIVED,
        "prepare_hvp": _DERIVED,
        "prepare_hvp_same_point": _DERIVED,
        "prepare_hessian": _DERIVED,
        "prepare_second_derivative": _DERIVED,
    }

    def __post_init__(self) -> None:
        for role in ("forward", "reverse"):
            b = getattr(self, role)
            if not isinstance(b, Backend):
                raise ArgumentError(f"MixedMode: {role} must be a diface backend, got {b!r}")
            if role not in b.native_modes:
                raise ArgumentError(f"MixedMode: {b!r} has no native {role} mode")

    @property
    def wrapped(self) -> Backend:
        return self.forward

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

    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer | None:
        return (self.forward if mode == "forward" else self.reverse).prepare_linearize(problem, mode)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self.reverse.prepare_pullback(problem, cotangents)

    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self.reverse.prepare_pullback_same_point(problem, cotangents)

    prepare_derivative = Backend.prepare_derivative
    prepare_gradient = Backend.prepare_gradient
    prepare_jacobian = Backend.prepare_jacobian

    def prepare_sparse_jacobian(self, problem: Problem, coloring: Any) -> Kernel | None:
        if self.forward != self.reverse:
            return None  # the core's products: forward's pushforwards and reverse's pullbacks
        return self.forward.prepare_sparse_jacobian(problem, coloring)

    def second_order_backends(self) -> tuple[Backend, Backend]:
        return self.forward, self.reverse

    second_order_plan = Backend.second_order_plan
    prepare_hvp = Backend.prepare_hvp
    prepare_hvp_same_point = Backend.prepare_hvp_same_point
    prepare_hessian = Backend.prepare_hessian
    prepare_second_derivative = Backend.prepare_second_derivative
