"""Jacobian (and so gradient and derivative) by sweeping the input or output basis.

A gradient is the Jacobian of a scalar output (shape `() + x.shape`) and a derivative the Jacobian
with respect to a scalar input (shape `y.shape + ()`), so all three are this one derivation: a reverse
sweep of a scalar output is a single pullback with seed 1, a forward sweep of a scalar input a single
pushforward with seed 1.
"""

from __future__ import annotations

from typing import Any

from .._problem import Kernel, Problem
from ._basis import BasisSweep

__all__ = ["derive_jacobian", "sweep_mode"]


def sweep_mode(backend: Any) -> str:
    """The mode a backend's derived operators sweep in: its preferred `mode` when its engine has it
    natively, else the one native mode it has."""
    modes = backend.native_modes
    if backend.mode in modes:
        return backend.mode
    if not modes:
        raise TypeError(f"{backend!r} declares no native mode: implement prepare_pushforward or prepare_pullback")
    return next(iter(sorted(modes)))


def derive_jacobian(backend: Any, problem: Problem) -> Kernel:
    """`J` of shape `y.shape + x.shape`: pushforwards of the input basis (columns) in forward mode,
    pullbacks of the output basis (rows) in reverse mode, `backend.max_batch_size` at a time."""
    ops, x = problem.ops, problem.x
    x_shape, x_dtype = problem.x_shape, problem.x_dtype
    y_shape, y_dtype = problem.y_spec
    dtype = ops.result_type(x_dtype, y_dtype)
    out_shape = y_shape + x_shape
    if sweep_mode(backend) == "forward":
        axis = -1
        sweep = BasisSweep(
            ops,
            x_shape,
            x_dtype,
            x,
            backend.max_batch_size,
            lambda seeds: backend.prepare_pushforward(problem, seeds),
        )
    else:
        axis = 0
        sweep = BasisSweep(
            ops,
            y_shape,
            y_dtype,
            x,
            backend.max_batch_size,
            lambda seeds: backend.prepare_pullback(problem, seeds),
        )

    def jacobian_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        first, jac = sweep.run(x, cv, y, full, axis, out_shape, dtype)
        if first is not None:
            return first[0], jac
        # empty input or output space: nothing to sweep, but the value (and y) are still owed
        value = problem.evaluate(x, cv, y) if (full or y is not None) else None
        return value, jac

    return jacobian_kernel
