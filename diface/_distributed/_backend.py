"""`AutoDistributed(dense, executor, chunk)`: Jacobians, Hessians and batched products spread over workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._backend import Backend
from .._derive import SecondOrderPlan, sweep_mode
from .._derive._sweep import chunk_size
from .._errors import ArgumentError
from .._executors import check_executor
from .._kernel import Kernel, Result
from .._linearization import Linearizer
from .._problem import Problem, size_of
from .._wrapper import Wrapper
from ._driver import Spread, numpy_dtype

__all__ = ["AutoDistributed"]

_SPREAD = "split into chunks of tangents, one task per chunk on the executor"
_WORKERS = "the workers prepare their own kernels: one kept on the driver would not reach them"


@dataclass(frozen=True)
class AutoDistributed(Wrapper):
    """`jacobian`, `hessian` and batched `pushforward`, `pullback` and `hvp` spread over the workers of
    `executor`, each chunk of the basis (or of the tangents) one task; every other operator as `dense`.

    Args:
        dense: the backend that computes, on the workers (any diface backend but `AutoSparse`: for sparse
            Jacobians, `di.AutoSparse(di.AutoDistributed(...))` sends one chunk of colors per task).
        executor: a `concurrent.futures` thread or process pool, or a Dask `distributed.Client`.
        chunk: tangents (basis vectors, colors) per task; None (default): as even as the executor's
            workers allow, one task per worker.

    Each worker prepares `dense`'s batched kernel once per preparation and chunk size and keeps it (a
    compiled JAX or torch program is built on the worker, never pickled); a task ships f, the backend,
    the point and its chunk as NumPy arrays, and the driver writes the blocks into one result. The
    results are those of the serial batched kernels, bit for bit. f must pickle for a process pool (a
    module-level function) and for Dask (cloudpickle: closures too); a task that fails raises
    `di.EvaluationError` naming its chunk, with the worker's traceback. Worth it where one product costs
    much more than shipping the point and the block back (an expensive simulation differentiated by AD).

    Example:
        >>> import numpy as np, diface as di
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> f = lambda x: np.sin(x) * x[::-1]
        >>> x = np.linspace(0.0, 1.0, 8)
        >>> with ThreadPoolExecutor(4) as pool:
        ...     backend = di.AutoDistributed(di.AutoTape(mode="forward"), pool)   # 2 columns per task
        ...     J = di.jacobian(f, backend, x)
        >>> bool(np.array_equal(J, di.jacobian(f, di.AutoTape(mode="forward"), x)))
        True
    """

    dense: Backend
    executor: Any
    chunk: int | None = None

    supports_inplace: ClassVar[bool] = False

    own_hooks: ClassVar[dict[str, str]] = {
        "prepare_jacobian": _SPREAD + " (the basis of x or of y, built on the workers)",
        "prepare_hessian": _SPREAD + " (the basis of x, built on the workers)",
        "prepare_pushforward": _SPREAD,
        "prepare_pullback": _SPREAD,
        "prepare_hvp": _SPREAD,
        "prepare_pushforward_same_point": _WORKERS,
        "prepare_pullback_same_point": _WORKERS,
        "prepare_hvp_same_point": _WORKERS,
        "prepare_linearize": "a linearization lives in one process: sweeps (AutoSparse's products too) go "
        "through the batched kernels, which are spread",
        "prepare_sparse_jacobian": "AutoSparse's compressed products through the spread pushforward or pullback",
        "prepare_sparse_hessian": "AutoSparse's compressed products through the spread hvp",
        "second_order_plan": "a plan whose hvp and hessian are spread (AutoSparse's Hessians use it)",
        "supports_inplace": "an in-place f would need its output buffer on every worker",
    }

    def __post_init__(self) -> None:
        from .._sparse._autosparse import AutoSparse

        if not isinstance(self.dense, Backend):
            raise ArgumentError(f"AutoDistributed: dense must be a diface backend, got {self.dense!r}")
        if isinstance(self.dense, AutoSparse):
            raise ArgumentError(
                "AutoDistributed: dense cannot be an AutoSparse; put AutoDistributed inside it, "
                "di.AutoSparse(di.AutoDistributed(dense, executor)), to spread the colors over the workers"
            )
        if isinstance(self.dense, AutoDistributed):
            raise ArgumentError("AutoDistributed: dense cannot itself be an AutoDistributed")
        check_executor(self.executor, "AutoDistributed", map_like=False)
        if self.chunk is not None and (
            isinstance(self.chunk, bool) or not isinstance(self.chunk, (int, np.integer)) or self.chunk < 1
        ):
            raise ArgumentError(
                f"AutoDistributed: chunk must be a positive integer (tangents per task) or None, got {self.chunk!r}"
            )

    @property
    def wrapped(self) -> Backend:
        return self.dense

    # -- sweeps of a basis ----------------------------------------------------------------------------
    def prepare_jacobian(self, problem: Problem) -> Kernel:
        ops, x = problem.ops, problem.x
        x_shape = problem.x_shape
        y_shape, y_dtype = problem.y_spec
        n, m = size_of(x_shape), size_of(y_shape)
        forward = sweep_mode(self.dense, problem) == "forward"
        shape, dtype, count, product = (x_shape, problem.x_dtype, n, m) if forward else (y_shape, y_dtype, m, n)
        step = chunk_size(count, product, n * m, self.dense.max_batch_size)
        spread = Spread(
            self, problem, "pushforward" if forward else "pullback", (shape, numpy_dtype(ops, dtype, x)), step
        )
        zero_dtype = ops.result_type(problem.x_dtype, y_dtype)

        def jacobian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            if count == 0:
                value = problem.evaluate(x, cv) if full else None
                return Result(value, result=ops.zeros(y_shape + x_shape, zero_dtype, x))
            jac, value = None, None
            for lo, hi, block in spread.run(x, cv, count, None, full):
                if jac is None:
                    jac = np.empty((m, n), block.products.dtype)
                    value = block.value
                products = block.products.reshape(hi - lo, -1)
                if forward:
                    jac[:, lo:hi] = products.T
                else:
                    jac[lo:hi] = products
            assert jac is not None
            native = ops.asarray(jac.reshape(y_shape + x_shape), like=x)
            return Result(None if value is None else ops.asarray(value, like=x), result=native)

        return Kernel(jacobian)

    def prepare_hessian(self, problem: Problem) -> Kernel:
        ops, x = problem.ops, problem.x
        x_shape = problem.x_shape
        n = size_of(x_shape)
        outer = self.dense.second_order_backends()[0]
        step = chunk_size(n, n, n * n, outer.max_batch_size)
        # H is symmetric, but not bit for bit: products of a reverse-mode plan are its rows
        columns = n == 0 or self.dense.second_order_plan(problem).mode == "forward"
        spread = Spread(self, problem, "hvp", (x_shape, numpy_dtype(ops, problem.x_dtype, x)), step)
        zero_dtype = ops.result_type(problem.x_dtype, problem.y_spec[1])

        def hessian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            hess, gradient = None, None
            for lo, hi, block in spread.run(x, cv, n, None, full):
                if hess is None:
                    hess = np.empty((n, n), block.products.dtype)
                    gradient = block.lower
                products = block.products.reshape(hi - lo, n)
                if columns:
                    hess[:, lo:hi] = products.T
                else:
                    hess[lo:hi] = products
            if hess is None:  # empty x
                result = ops.zeros(x_shape + x_shape, zero_dtype, x)
                lower = ops.zeros(x_shape, zero_dtype, x)
            else:
                result = ops.asarray(hess.reshape(x_shape + x_shape), like=x)
                lower = None if gradient is None else ops.asarray(gradient, like=x)
            if not full:
                return Result(result=result)
            return Result(problem.evaluate(x, cv), lower, result)

        return Kernel(hessian)

    # -- batches of tangents ------------------------------------------------------------------------------
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        return self._batched(problem, tangents, "pushforward")

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self._batched(problem, cotangents, "pullback")

    def prepare_hvp(self, problem: Problem, tangents: tuple) -> Kernel:
        return self._batched(problem, tangents, "hvp")

    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        return self.prepare_pushforward(problem, tangents)

    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self.prepare_pullback(problem, cotangents)

    def prepare_hvp_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        return self.prepare_hvp(problem, tangents)

    def _batched(self, problem: Problem, tangents: tuple, operator: str) -> Kernel:
        """One batched call's tangents in chunks; a single tangent is the dense backend's own call."""
        if len(tangents) < 2:
            return getattr(self.dense, f"prepare_{operator}")(problem, tangents)
        ops = problem.ops
        spread = Spread(self, problem, operator)

        def batched(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            stacked = ops.to_numpy(ops.stack(list(tangents)))
            count = len(tangents)
            out, value, lower = None, None, None
            for lo, hi, block in spread.run(x, cv, count, stacked, full):
                if out is None:
                    out = np.empty((count, *block.products.shape[1:]), block.products.dtype)
                    value, lower = block.value, block.lower
                out[lo:hi] = block.products
            assert out is not None
            results = tuple(ops.unstack(ops.asarray(out, like=x)))
            native = [None if a is None else ops.asarray(a, like=x) for a in (value, lower)]
            return Result(native[0], native[1], results)

        return Kernel(batched)

    # -- what AutoSparse and the core derive from -----------------------------------------------------------
    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer | None:
        return None

    def prepare_sparse_jacobian(self, problem: Problem, coloring: Any) -> Kernel | None:
        return None

    def prepare_sparse_hessian(self, problem: Problem, coloring: Any) -> Kernel | None:
        return None

    def second_order_plan(self, problem: Problem) -> SecondOrderPlan:
        return _SpreadPlan(self, problem)


class _SpreadPlan(SecondOrderPlan):
    """Second-order kernels of `AutoDistributed`: hvp and hessian spread; the second derivative (one
    product) the dense backend's. No linearization (see `SecondOrderPlan`): consumers use `hvp`."""

    def __init__(self, backend: AutoDistributed, problem: Problem) -> None:
        super().__init__(problem)
        self.backend = backend

    def hvp(self, tangents: tuple) -> Kernel:
        return self.backend.prepare_hvp(self.problem, tangents)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self.backend.prepare_hvp(self.problem, tangents)

    def hessian(self) -> Kernel:
        return self.backend.prepare_hessian(self.problem)

    def second_derivative(self) -> Kernel:
        return self.backend.dense.prepare_second_derivative(self.problem)
