"""Laplacians from Taylor coefficients of order two: Σᵢ ∂²f/∂xᵢ² = Σᵢ d²/dt² f(x + t·eᵢ) at t = 0.

- `method="exact"`: the second coefficients along the basis of x, a chunk of directions per engine
  call, summed (the "forward Laplacian": no Hessian is formed); the first coefficients are the columns of
  the Jacobian that `value_gradient_and_laplacian` returns.
- `method="hutchinson"`: E[d²/dt² f(x + t·v)] over Rademacher v (entries ±1, E[v vᵀ] = I) is the
  Laplacian; `samples` directions give an unbiased estimate, and their spread its standard error, kept
  in the kernel's `report` after each call. Each call draws new directions from a generator seeded once
  with `seed`, so a sequence of calls is reproducible.

An engine with a collapsed Taylor mode (one propagation carrying the summed second coefficient)
overrides `Backend.prepare_laplacian`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._kernel import Kernel, Result
from .._problem import Problem, size_of
from ._sweep import Basis, _assemble, chunk_size, kernels_per_chunk

__all__ = ["LaplacianMethod", "LaplacianReport", "derive_laplacian"]

METHODS = ("exact", "hutchinson")


@dataclass(frozen=True)
class LaplacianMethod:
    """How `laplacian` computes: `method` "exact" or "hutchinson" (with `samples` directions and `seed`)."""

    method: str = "exact"
    samples: int = 32
    seed: int | None = None


@dataclass
class LaplacianReport:
    """What a Laplacian preparation computes by, and for Hutchinson's estimate what its last call
    measured: the standard error of the estimate (shaped like y, NumPy), from the spread of its samples.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.sum(x**2) + x[0] * np.sum(x**3)
        >>> prep = di.prepare_laplacian(f, di.AutoTape(), np.ones(3), method="hutchinson", samples=8, seed=0)
        >>> lap = prep.laplacian(np.ones(3))
        >>> prep.report.method, prep.report.samples, prep.report.standard_error.shape
        ('hutchinson', 8, ())
    """

    method: str
    samples: int | None = None
    seed: int | None = None
    _error: Any = field(default=None, repr=False)
    _ops: Any = field(default=None, repr=False)

    @property
    def standard_error(self) -> np.ndarray | None:
        """The last call's standard error (None before the first call, and for the exact method)."""
        if self._error is None:
            return None
        return np.asarray(self._ops.to_numpy(self._error))


def _sum_rows(ops: Any, stacked: Any, k: int, like: Any, shape: tuple, weight: float = 1.0) -> Any:
    """`weight` times the sum of `k` stacked arrays (shape `(k, *shape)`), by one matrix product."""
    ones = ops.asarray(np.full((1, k), weight), like=like)
    ones = ops.astype(ones, stacked.dtype)
    return ops.reshape(ops.matmul(ones, ops.reshape(stacked, (k, -1))), shape)


def derive_laplacian(backend: Any, problem: Problem, method: LaplacianMethod) -> Kernel:
    """The Laplacian kernel of `problem` by `method` (see the module docstring), from the engine's
    Taylor coefficients of order two (`Backend.prepare_taylor`)."""
    if method.method == "hutchinson":
        return _hutchinson(backend, problem, method)
    return _exact(backend, problem)


def _exact(backend: Any, problem: Problem) -> Kernel:
    ops, x_shape = problem.ops, problem.x_shape
    y_shape, y_dtype = problem.y_spec
    n, m = size_of(x_shape), size_of(y_shape)
    dtype = ops.result_type(problem.x_dtype, y_dtype)
    batch = chunk_size(n, 2 * m, n * m, backend.max_batch_size)
    basis = Basis(ops, x_shape, problem.x_dtype, problem.x, batch, n * m)
    kernels = kernels_per_chunk(basis, lambda t: backend.prepare_taylor(problem, t, 2))

    def laplacian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if n == 0:
            zero = ops.zeros(y_shape, dtype, x)
            return Result(problem.evaluate(x, cv) if full else None, ops.zeros(y_shape + x_shape, dtype, x), zero)
        value, total, firsts = None, None, []
        for k, kernel in enumerate(kernels):
            chunk = basis.chunk(k)
            r = kernel.run(x, ops.unstack(chunk), cv, None, full and k == 0)
            if k == 0:
                value = r.value
            size = len(r.result)
            part = _sum_rows(ops, ops.stack([c[1] for c in r.result]), size, x, y_shape)
            total = part if total is None else total + part
            if full:
                firsts.append(ops.stack([c[0] for c in r.result]))
        if not full:
            return Result(result=total)
        stacked = firsts[0] if len(firsts) == 1 else ops.concat(firsts)
        return Result(value, _assemble(ops, stacked, True, n, y_shape + x_shape, dtype), total)

    return Kernel(laplacian)


def _hutchinson(backend: Any, problem: Problem, method: LaplacianMethod) -> Kernel:
    ops, x_shape = problem.ops, problem.x_shape
    y_shape = problem.y_spec[0]
    s = method.samples
    x_dtype = np.dtype(ops.to_numpy(ops.zeros((), problem.x_dtype)).dtype)
    rng = np.random.default_rng(method.seed)
    lock = threading.Lock()
    report = LaplacianReport("hutchinson", s, method.seed, _ops=ops)
    batch = max(1, min(s, backend.max_batch_size))
    bounds = [(lo, min(lo + batch, s)) for lo in range(0, s, batch)]
    like = problem.x

    def directions(k: int) -> tuple:
        return tuple(ops.unstack(ops.asarray(np.ones((k, *x_shape), x_dtype), like=like)))

    kernels = {hi - lo: backend.prepare_taylor(problem, directions(hi - lo), 2) for lo, hi in bounds}
    jacobian = backend.prepare_jacobian(problem)

    def hutchinson(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        with lock:  # one generator, shared by the threads that share the preparation
            signs = rng.integers(0, 2, size=(s, *x_shape)).astype(x_dtype) * 2 - 1
        v_all = ops.asarray(signs, like=x)
        seconds: list = []
        for lo, hi in bounds:
            r = kernels[hi - lo].run(x, tuple(ops.unstack(v_all[lo:hi])), cv, None, False)
            seconds.extend(c[1] for c in r.result)
        d2 = ops.stack(seconds)
        mean = _sum_rows(ops, d2, s, x, y_shape, 1.0 / s)
        if s > 1:
            spread = d2 - ops.reshape(mean, (1, *y_shape))
            variance = _sum_rows(ops, spread * spread, s, x, y_shape, 1.0 / (s - 1))
            report._error = (variance / s) ** 0.5
        if not full:
            return Result(result=mean)
        value, _, jac = jacobian.run(x, None, cv, None, True)
        return Result(value, jac, mean)

    return Kernel(hutchinson, report=report)
