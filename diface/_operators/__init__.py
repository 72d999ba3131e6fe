"""The public operators, their value variants and their preparations.

Every function here is a thin entry into the shared call path (`diface._call.prepare`), one module per
family: `products` (pushforward, pullback), `derivatives` (derivative, gradient, jacobian),
`second_order` (second_derivative, hessian, hvp), `inverse` (the Jacobian-inverse products) and
`taylor` (taylor, taylor_coefficients, laplacian). Shapes:
`x` has shape `xs`, `f(x)` has shape `ys`; a tangent `tx` is shaped like `x` and a cotangent `ty` like
`y`.

Trees: `x`, `f(x)`, tangents and `y` may be dicts, lists, tuples, namedtuples or JAX pytrees of arrays
(docs/trees.md); results are laid out as JAX and `torch.func` lay them out (a gradient is a tree like
`x`, a Jacobian a tree like `y` of trees like `x`), or as one matrix over the raveled leaves with
`output="matrix"`. `has_aux=True`: `f` returns `(output, aux)` and the operator `(result, aux)`.
"""

from __future__ import annotations

from .derivatives import (
    derivative,
    gradient,
    jacobian,
    prepare_derivative,
    prepare_gradient,
    prepare_jacobian,
    value_and_derivative,
    value_and_gradient,
    value_and_jacobian,
)
from .inverse import (
    inverse_pullback,
    inverse_pushforward,
    prepare_inverse_pullback,
    prepare_inverse_pullback_same_point,
    prepare_inverse_pushforward,
    prepare_inverse_pushforward_same_point,
    value_and_inverse_pullback,
    value_and_inverse_pushforward,
)
from .products import (
    prepare_pullback,
    prepare_pullback_same_point,
    prepare_pushforward,
    prepare_pushforward_same_point,
    pullback,
    pushforward,
    value_and_pullback,
    value_and_pushforward,
)
from .second_order import (
    gradient_and_hvp,
    hessian,
    hvp,
    prepare_hessian,
    prepare_hvp,
    prepare_hvp_same_point,
    prepare_second_derivative,
    second_derivative,
    value_derivative_and_second_derivative,
    value_gradient_and_hessian,
    value_gradient_and_hvp,
)
from .taylor import (
    laplacian,
    prepare_laplacian,
    prepare_taylor,
    taylor,
    taylor_coefficients,
    value_gradient_and_laplacian,
)

__all__ = [
    "value_gradient_and_laplacian",
    "taylor_coefficients",
    "taylor",
    "prepare_taylor",
    "prepare_laplacian",
    "laplacian",
    "derivative",
    "gradient",
    "gradient_and_hvp",
    "hessian",
    "hvp",
    "inverse_pullback",
    "inverse_pushforward",
    "jacobian",
    "prepare_derivative",
    "prepare_gradient",
    "prepare_hessian",
    "prepare_hvp",
    "prepare_hvp_same_point",
    "prepare_inverse_pullback",
    "prepare_inverse_pullback_same_point",
    "prepare_inverse_pushforward",
    "prepare_inverse_pushforward_same_point",
    "prepare_jacobian",
    "prepare_pullback",
    "prepare_pullback_same_point",
    "prepare_pushforward",
    "prepare_pushforward_same_point",
    "prepare_second_derivative",
    "pullback",
    "pushforward",
    "second_derivative",
    "value_and_derivative",
    "value_and_gradient",
    "value_and_inverse_pullback",
    "value_and_inverse_pushforward",
    "value_and_jacobian",
    "value_and_pullback",
    "value_and_pushforward",
    "value_derivative_and_second_derivative",
    "value_gradient_and_hessian",
    "value_gradient_and_hvp",
]
