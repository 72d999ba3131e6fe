"""PyTensor's own fastest call of each benchmarked operator, for `python -m diface bench`: a compiled
`pytensor.function` of `pytensor.grad` (gradient), of `Lop` of the gradient along an input v (hvp), of
`pytensor.gradient.jacobian(vectorize=True)` and of the vectorized Jacobian of the gradient (hessian),
compiled once before timing. NumPy arrays are PyTensor's arrays: NumPy and native input are the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["direct"]


def direct(operator: str, f: Callable, x: np.ndarray, v: np.ndarray, numpy_in: bool) -> tuple[str, Callable[[], Any]]:
    import pytensor
    import pytensor.tensor as pt
    from pytensor.gradient import Lop, grad, jacobian

    from . import _namespace as xp

    xs = pt.tensor("x", dtype=x.dtype.name, shape=x.shape)
    y = f(xp, xs)
    out: Any
    if operator == "gradient":
        name, out = "pytensor.function(pytensor.grad)", grad(y, xs)
    elif operator == "hvp":
        # v is an input, as a Hessian-vector product is called (scipy's hessp(x, p)): a constant v would
        # be a product with one fixed vector
        vs = pt.tensor("v", dtype=v.dtype.name, shape=v.shape)
        gradient: Any = grad(y, xs)
        product: Any = Lop(gradient, xs, vs)
        hvp = pytensor.function([xs, vs], product)
        return "pytensor.function(Lop of pytensor.grad)", lambda: hvp(x, v)
    elif operator == "jacobian":
        name, out = "pytensor.function(jacobian(vectorize=True))", jacobian(y, xs, vectorize=True)
    else:
        name, out = "pytensor.function(jacobian of pytensor.grad)", jacobian(grad(y, xs), xs, vectorize=True)
    fn = pytensor.function([xs], out)
    return name, lambda: fn(x)
