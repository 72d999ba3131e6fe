"""Pushforward for a backend without a native one, and pullback likewise: from a linearization where
the backend has one in the mode asked for, else through the Jacobian.

Through the Jacobian, which comes from the backend's own `prepare_jacobian` (a basis sweep in its
native mode), a wrong-mode product costs `y.size` pullbacks or `x.size` pushforwards per call, however
many tangents are asked for at once.
"""

from __future__ import annotations

from typing import Any

from .._kernel import Kernel, Result
from .._problem import Problem, size_of
from .linearized import linearized_products

__all__ = ["derive_pullback", "derive_pushforward"]


def derive_pushforward(backend: Any, problem: Problem, tangents: tuple) -> Kernel:
    """`J @ t` for each tangent `t` (shaped like `x`)."""
    linearizer = backend.prepare_linearize(problem, "forward")
    if linearizer is not None:
        return linearized_products(linearizer, problem, True)
    return _through_jacobian(backend, problem, "reverse", transpose=False)


def derive_pullback(backend: Any, problem: Problem, cotangents: tuple) -> Kernel:
    """`t @ J` for each cotangent `t` (shaped like `y`)."""
    linearizer = backend.prepare_linearize(problem, "reverse")
    if linearizer is not None:
        return linearized_products(linearizer, problem, False)
    return _through_jacobian(backend, problem, "forward", transpose=True)


def _through_jacobian(backend: Any, problem: Problem, needs: str, transpose: bool) -> Kernel:
    if needs not in backend.native_modes:
        raise TypeError(f"{backend!r} has neither a native pushforward nor a native pullback")
    ops = problem.ops
    x_shape, (y_shape, _) = problem.x_shape, problem.y_spec
    m, n = size_of(y_shape), size_of(x_shape)
    jacobian = backend.prepare_jacobian(problem)
    # J has shape (m, n): J @ t maps x-space to y-space, t @ J maps y-space to x-space
    t_size, out_shape = (m, x_shape) if transpose else (n, y_shape)

    def products(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        value, _, jac = jacobian.run(x, None, cv, y, full)
        jac = ops.reshape(jac, (m, n))
        results = []
        for t in tangents:
            t = ops.reshape(t, (t_size,))
            results.append(ops.reshape(ops.matmul(t, jac) if transpose else ops.matmul(jac, t), out_shape))
        return Result(value, result=tuple(results))

    return Kernel(products)
