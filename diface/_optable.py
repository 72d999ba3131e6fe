"""The operator table: what distinguishes one operator from another in the one call path.

Each operator is one `Operator` description. Everything the call path needs to know about its results
derives from it: the shapes of the results of the plain operator and of its full variant (for `out=`
checks), which of a kernel's `Result` fields the full variant returns, and what each result is shaped
like on trees (like x, like y, a Jacobian or a Hessian).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["OPERATORS", "Kind", "Operator"]

#: what a result is shaped like: like x, like y, a Jacobian (y.shape + x.shape) or a Hessian
#: (x.shape + x.shape)
Kind = Literal["x", "y", "jac", "hess"]


@dataclass(frozen=True, kw_only=True)
class Operator:
    """One operator and its full variant.

    Attributes:
        name: the plain operator (`gradient`); `full_name`: its full variant (`value_and_gradient`).
        tangent: the tangent argument: "tx" (shaped like x), "ty" (shaped like y) or None.
        result: the kind of the plain operator's result; `lower`: the kind of the lower-order result the
            full variant returns before it (the gradient of a Hessian), or None.
        value_first: the full variant returns the primal value first (all but `hvp`).
        value_name: a third variant that returns the primal value before the full variant's results,
            where the full variant does not (`value_gradient_and_hvp`), or None.
        inplace: `y=` (in-place functions) allowed; `scalar_x` / `scalar_y`: x / f(x) must be scalars;
        square: J must be square (the Jacobian-inverse products); `aux`: `has_aux=True` allowed;
        `matrix`: `output="matrix"` allowed (Jacobians and Hessians of trees).
        series: each tangent's result is a tuple of `order` results of the kind `result` (Taylor
            coefficients), not one.
    """

    name: str
    full_name: str
    result: Kind
    tangent: Literal["tx", "ty"] | None = None
    lower: Kind | None = None
    value_first: bool = True
    value_name: str | None = None
    inplace: bool = False
    scalar_x: bool = False
    scalar_y: bool = False
    square: bool = False
    aux: bool = False
    matrix: bool = False
    series: bool = False

    @property
    def fields(self) -> tuple[str, ...]:
        """The `Result` fields the full variant returns, in order."""
        return (("value",) if self.value_first else ()) + (("lower",) if self.lower else ()) + ("result",)

    @property
    def kinds(self) -> tuple[Kind, ...]:
        """The kinds of the derivatives of the full variant (the plain operator returns the last)."""
        return ((self.lower,) if self.lower else ()) + (self.result,)

    def shapes(self, x_shape: tuple, y_shape: tuple) -> tuple[tuple, ...]:
        """The shapes of the derivatives of the full variant, from x's and y's shapes."""
        return tuple(shape_of_kind(kind, x_shape, y_shape) for kind in self.kinds)


def shape_of_kind(kind: Kind, x_shape: tuple, y_shape: tuple) -> tuple:
    return {"x": x_shape, "y": y_shape, "jac": y_shape + x_shape, "hess": x_shape + x_shape}[kind]


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator(
            name="pushforward", full_name="value_and_pushforward", tangent="tx", result="y", inplace=True, aux=True
        ),
        Operator(name="pullback", full_name="value_and_pullback", tangent="ty", result="x", inplace=True, aux=True),
        Operator(
            name="derivative", full_name="value_and_derivative", result="y", inplace=True, scalar_x=True, aux=True
        ),
        Operator(name="gradient", full_name="value_and_gradient", result="x", scalar_y=True, aux=True),
        Operator(name="jacobian", full_name="value_and_jacobian", result="jac", inplace=True, aux=True, matrix=True),
        Operator(
            name="second_derivative",
            full_name="value_derivative_and_second_derivative",
            result="y",
            lower="y",
            scalar_x=True,
        ),
        Operator(
            name="hessian", full_name="value_gradient_and_hessian", result="hess", lower="x", scalar_y=True, matrix=True
        ),
        Operator(
            name="hvp",
            full_name="gradient_and_hvp",
            value_name="value_gradient_and_hvp",
            tangent="tx",
            result="x",
            lower="x",
            value_first=False,
            scalar_y=True,
        ),
        Operator(
            name="inverse_pushforward",
            full_name="value_and_inverse_pushforward",
            tangent="ty",
            result="x",
            inplace=True,
            square=True,
        ),
        Operator(
            name="inverse_pullback",
            full_name="value_and_inverse_pullback",
            tangent="tx",
            result="y",
            inplace=True,
            square=True,
        ),
        # the full variant is the one docs/taylor.md names `taylor`; the value-free one is `taylor_coefficients`
        Operator(name="taylor", full_name="taylor", tangent="tx", result="y", aux=True, series=True),
        # `lower` is the Jacobian: the gradient for a scalar f, as `value_gradient_and_laplacian` returns it
        Operator(name="laplacian", full_name="value_gradient_and_laplacian", result="y", lower="jac"),
    )
}
