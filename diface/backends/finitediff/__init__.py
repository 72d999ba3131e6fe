"""`AutoFiniteDiff`: derivatives from function values, for NumPy and any array library.

Forward mode only: a pushforward is a difference quotient along the tangent. Jacobians and gradients
of mutable arrays perturb one component of a work copy of x at a time (no seed arrays, one function
evaluation per component and side); immutable arrays (JAX) go through the core's basis sweep.

## Step sizes

For a component x_i the step is `h_i = c * max(1, |x_i|)`, with `c` chosen per method and dtype
(eps = machine epsilon of x's dtype) to balance truncation against rounding error:

| method | c | error (relative, smooth f) | float64 | float32 |
| --- | --- | --- | --- | --- |
| forward, backward | eps^(1/2) | ~ eps^(1/2) | 1.5e-8 | 3.5e-4 |
| central | eps^(1/3) | ~ eps^(2/3) | 3.7e-11 | 2.4e-5 |
| complex | eps | ~ eps | 2.2e-16 | 1.2e-7 |

The perturbed component is rounded to a float first and the quotient divides by the step actually
taken, which removes the representation error of `x_i + h_i`. Along a general tangent t the step is
`c * max(1, max |x_i| over t_i != 0) / max |t|`. `step=` replaces `c`.

When differentiating what another backend computes (the outer backend of `SecondOrder`), the values
themselves carry that backend's error eps^a instead of eps, and c becomes eps^(a/2) (forward,
backward) or eps^(a/3) (central): `SecondOrder(AutoFiniteDiff(), AutoFiniteDiff())` is accurate to
about eps^(4/9) ~ 1e-7 in float64.

Taylor coefficients (orders 1 to 4) and exact Laplacians use central differences with Richardson
extrapolation, whatever the method, with steps of their own (about eps^(1/8) to eps^(1/10) for Taylor
coefficients, eps^(1/6) for Laplacians): `finitediff/_taylor.py` documents the stencils, the steps, the
accuracy of each order and the error estimate of `prep.report`.

The complex-step method evaluates f at complex points: f must be complex-analytic in x (no `abs`,
`np.real`, comparisons on x). It is exact to rounding and cannot be nested inside itself. Where f returns
a real value at a complex point, it is not analytic and the complex step raises `NotSupportedError`
rather than return 0 (`finitediff/_evaluator.py: check_analytic`). The check sees the dtype only: an f
that makes its value complex again (a constant of x's dtype) or writes into y escapes it.

Modules, one job each (the names every engine uses, docs/add-a-backend.md): `_evaluator` (f at one
perturbed point at a time, with per-thread scratch), `_mappers` (executors: one task per point),
`_batching` (every point of one operator call evaluated together: `vectorized=True` or `executor=`),
`_taylor` (Taylor coefficients and Laplacians by Richardson-extrapolated central differences).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..._arrays import ArrayOps, ops_for
from ..._backend import Backend
from ..._derive import derive_jacobian
from ..._engines import register_engine
from ..._errors import ArgumentError, NotSupportedError, ShapeError
from ..._kernel import Kernel, Result
from ..._problem import Problem, check_output, dtype_of, shape_of, size_of
from ._batching import EvaluationCount, prepare_batched_jacobian, prepare_batched_pushforward
from ._evaluator import Evaluator, perturbations
from ._mappers import check_executor
from ._taylor import TaylorReport, prepare_fd_laplacian, prepare_fd_taylor, taylor_accuracy_exponent

__all__ = ["AutoFiniteDiff", "EvaluationCount", "TaylorReport"]

_METHODS = ("forward", "central", "backward", "complex")
# order of the truncation error of each method (the error is h ** order)
_ORDER = {"forward": 1, "backward": 1, "central": 2, "complex": 2}
# evaluations of f per direction
_SIDES = {"forward": 1, "backward": 1, "central": 2, "complex": 1}


@dataclass(frozen=True)
class AutoFiniteDiff(Backend):
    """Finite differences (forward mode), for NumPy arrays and any array library with arithmetic.

    Args:
        method: "central" (default, error ~ eps^(2/3)), "forward" or "backward" (one evaluation
            per direction instead of two, error ~ eps^(1/2)), or "complex" (complex step: exact to
            rounding, needs f analytic in x).
        step: relative step factor c; the step for component x_i is `c * max(1, |x_i|)`. Default:
            chosen per method and dtype (see the module documentation).
        vectorized: f takes a batch of points stacked along a new leading axis and returns their
            outputs stacked likewise; a Jacobian, gradient or batch of pushforwards is then one call
            of f on every perturbed point (and the base point where the method needs f(x)).
        executor: where to evaluate the points of one operator call in parallel: a
            `concurrent.futures.Executor` (thread or process pool), a Dask `distributed.Client`, any
            object with `map(fn, iterable)`, or a map-like callable (`pool.map`). All points of a
            call are submitted together and gathered in order; where f raises, an
            `EvaluationError` names the point (its `__cause__` is f's exception). A process pool
            pickles f and the contexts: define f at module level.

    A preparation reports what one call costs in `prep.evaluations` (an `EvaluationCount`: `points`
    and `f_calls`).

    Taylor coefficients (`di.taylor`, orders 1 to 4; higher orders raise `NotSupportedError` at
    preparation) come from central differences of g(t) = f(x + t v) at t = 0, ±h, ±2h, ±4h (±8h from
    order 3 on), extrapolated twice by Richardson: 6 or 14 points per direction and x once. Coefficient
    j is accurate to about eps ** a, a = 7/8, 3/4, 2/3, 1/2 (`taylor_accuracy_exponent`). The
    preparation's `report` (a `TaylorReport`) holds an error estimate of each coefficient: `prep.report.error`
    is, for the last call, a tuple per direction of a tuple of `order` NumPy arrays shaped like y (the
    difference of the last two Richardson levels plus a rounding bound: conservative, typically 10 to
    100 times the true error). The report belongs to the preparation: where threads share it, it holds
    the estimate of whichever call finished last. The exact Laplacian (`di.laplacian`) is the direct
    five-point stencil along each component of x (4n + 1 evaluations, error about eps^(2/3)), and
    `value_gradient_and_laplacian` takes the gradient from the same points. Both use central
    differences whatever `method` is. Details: `diface.backends.finitediff._taylor`.

    Example:
        >>> import numpy as np, diface as di
        >>> di.gradient(lambda x: np.sum(x**3), di.AutoFiniteDiff(), np.array([1.0, 2.0])).round(6)
        array([ 3., 12.])
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> with ThreadPoolExecutor(4) as pool:
        ...     prep = di.prepare_gradient(lambda x: np.sum(x**3), di.AutoFiniteDiff(executor=pool), np.ones(3))
        ...     prep.gradient(np.array([1.0, 2.0, 3.0])).round(6)
        array([ 3., 12., 27.])
        >>> prep.evaluations                            # 2 per component, submitted together
        EvaluationCount(points=6, f_calls=6)
        >>> vec = di.AutoFiniteDiff(vectorized=True)   # f(X) with X of shape (k, 3): one call
        >>> di.prepare_gradient(lambda X: np.sum(X**3, axis=-1), vec, np.ones(3)).evaluations
        EvaluationCount(points=6, f_calls=1)
        >>> prep = di.prepare_taylor(np.exp, di.AutoFiniteDiff(), np.zeros(2), order=3)
        >>> y, (d1, d2, d3) = prep.taylor(np.zeros(2), np.array([1.0, 2.0]))
        >>> d3.round(6)                                 # v³ exp(0)
        array([1., 8.])
        >>> error = prep.report.error                   # per direction, per order: shaped like y
        >>> len(error), len(error[0]), error[0][2].shape, bool(np.all(np.abs(d3 - [1, 8]) <= error[0][2]))
        (1, 3, (2,), True)
    """

    method: str = "central"
    step: float | None = None
    vectorized: bool = False
    executor: Any = None
    # accuracy exponent a of the values being differenced (eps ** a); < 1 when nested over
    # another finite-difference backend (see as_outer_of)
    input_accuracy: float = field(default=1.0, repr=False)

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward"})
    mode = "forward"  # fixed: a class attribute, not a dataclass field
    supports_inplace: ClassVar[bool] = True
    max_batch_size: ClassVar[int] = 16

    def __post_init__(self) -> None:
        if self.method not in _METHODS:
            raise ArgumentError(f"AutoFiniteDiff: method must be one of {', '.join(_METHODS)}; got {self.method!r}")
        if self.step is not None and not (isinstance(self.step, (int, float)) and 0 < self.step < float("inf")):
            raise ArgumentError(f"AutoFiniteDiff: step must be a positive number, got {self.step!r}")
        if not isinstance(self.vectorized, bool):
            raise ArgumentError(f"AutoFiniteDiff: vectorized must be True or False, got {self.vectorized!r}")
        check_executor(self.executor)
        if self.vectorized and self.executor is not None:
            raise ArgumentError(
                "AutoFiniteDiff: choose vectorized=True (one call of f on all points) or executor= (one task "
                "per point), not both; to spread a vectorized f over workers, map it over chunks inside f"
            )

    @property
    def batched(self) -> bool:
        """Whether the points of one call are evaluated together (`vectorized` or `executor`)."""
        return self.vectorized or self.executor is not None

    @property
    def accuracy_exponent(self) -> float:  # type: ignore[override]
        a = self.input_accuracy
        if self.method == "complex":
            return a
        p = _ORDER[self.method]
        return a * p / (p + 1)

    def step_factor(self, eps: float) -> float:
        """The relative step c for a dtype with machine epsilon `eps`."""
        if self.step is not None:
            return float(self.step)
        if self.method == "complex":
            return eps
        return eps ** (self.input_accuracy / (_ORDER[self.method] + 1))

    def second_order_backends(self) -> tuple[Backend, Backend]:
        # the complex step cannot be nested in itself: differentiate central differences instead
        if self.method == "complex":
            return self, AutoFiniteDiff("central")
        return self, self

    def as_outer_of(self, inner: Backend) -> Backend:
        if self.method == "complex" and not (isinstance(inner, AutoFiniteDiff) and inner.method != "complex"):
            raise NotSupportedError(
                f"a complex-step outer backend needs an inner backend that accepts complex x and stays "
                f"analytic, which {inner!r} is not; use SecondOrder(AutoFiniteDiff('complex'), "
                "AutoFiniteDiff('central')) or a real-step outer method"
            )
        # the outer function is the inner derivative at one point: evaluated serially, in this process
        return dataclasses.replace(self, input_accuracy=inner.accuracy_exponent, vectorized=False, executor=None)

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        if not self.vectorized or problem.inplace:
            return problem.y_spec
        ops = problem.ops
        out = check_output(problem.f(ops.reshape(problem.x, (1, *problem.x_shape)), *problem.context_values))
        if not shape_of(out) or shape_of(out)[0] != 1:
            raise ShapeError(
                f"AutoFiniteDiff(vectorized=True): f must return one output per point along the leading axis; "
                f"a batch of 1 point gave an output of shape {shape_of(out)}"
            )
        problem.set_y_spec(shape_of(out)[1:], dtype_of(out))
        return problem.y_spec

    def check_complex(self, where: str) -> None:
        if self.method == "complex":
            raise NotSupportedError(
                f"{where}: AutoFiniteDiff(method='complex') steps into the complex plane of a real f, so it "
                "cannot differentiate a function of complex inputs or outputs; use AutoFiniteDiff() (central "
                "differences along the real and imaginary directions) or an exact engine"
            )

    def array_ops(self, x: Any) -> ArrayOps:
        ops = ops_for(x)
        if ops is None:
            raise ArgumentError(
                f"AutoFiniteDiff needs x to be a NumPy array, a number, or an array with arithmetic and "
                f"indexing (a torch tensor, a jax array, ...); got {type(x).__name__}"
            )
        return ops

    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        """The global pattern of NumPy code from AutoTape's tracer (`TracerSparsityDetector`): f recorded
        once on a traced x and run on index sets (see `diface.backends.tape.analysis.sparsity`)."""
        from ..tape.analysis.sparsity import tape_sparsity

        return tape_sparsity(problem, order)

    # -- pushforward: difference quotients along each tangent ----------------------------------------
    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        # one-sided differences need f(x): at a fixed point it is computed once, here
        return self.prepare_pushforward(problem, tangents, same_point=True)

    def prepare_pushforward(self, problem: Problem, tangents: tuple, same_point: bool = False) -> Kernel:
        if self.batched:
            return prepare_batched_pushforward(self, problem, tangents, same_point)
        ops, method = problem.ops, self.method
        evaluate = Evaluator(self, problem, same_point)
        factor = self.step_factor(ops.eps(problem.x_dtype))
        x_dtype = problem.x_dtype

        y_shape = problem.y_spec[0]
        dtype = ops.result_type(x_dtype, problem.y_spec[1])
        empty = size_of(problem.x_shape) == 0

        def pushforward(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            if empty:  # no direction to step in: J is (m, 0) and every J t is zero
                fx = evaluate.problem.evaluate(x, cv, y) if (full or y is not None) else None
                return Result(fx, result=tuple(ops.zeros(y_shape, dtype, x) for _ in tangents))
            scratch = evaluate.scratch()
            fx = evaluate.at_point(x, cv, y, full)
            shifted_cv = scratch.contexts(cv)
            results = []
            for t in tangents:
                size = ops.max(ops.abs(t))
                reach = ops.max(ops.abs(x) * ops.astype(t != 0, x_dtype))  # no bool arithmetic in the array API
                h = factor * ops.maximum(reach, 1.0) / ops.maximum(size, _TINY)
                h = ops.astype(h, x_dtype)
                shift = 1j * h if method == "complex" else h
                quotient_step = 2 * h if method == "central" else h
                point = lambda s, t=t, d=shift: x + (s * d) * t
                results.append(evaluate.quotient(method, point, fx, quotient_step, shifted_cv, scratch))
            evaluate.finish(x, cv, y, fx)
            return Result(fx if full else None, result=tuple(results))

        points = _SIDES[method] * len(tangents) + (evaluate.needs_fx and not same_point)
        return Kernel(pushforward, evaluations=EvaluationCount(points, points))

    # -- jacobian (and gradient, derivative): one component at a time --------------------------------
    def prepare_jacobian(self, problem: Problem) -> Kernel:
        ops = problem.ops
        if self.batched:
            return prepare_batched_jacobian(self, problem)
        if not ops.mutable or not hasattr(problem.x, "shape") or problem.x_shape == ():
            return derive_jacobian(self, problem)  # basis sweep of pushforwards
        method = self.method
        evaluate = Evaluator(self, problem)
        factor = self.step_factor(ops.eps(problem.x_dtype))
        x_shape, (y_shape, _) = problem.x_shape, problem.y_spec
        n = size_of(x_shape)
        out_shape = y_shape + x_shape
        work_dtype = ops.complex_dtype(problem.x_dtype) if method == "complex" else problem.x_dtype
        dtype = ops.result_type(problem.x_dtype, problem.y_spec[1])

        def jacobian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            scratch = evaluate.scratch()
            fx = evaluate.at_point(x, cv, y, full)
            shifted_cv = scratch.contexts(cv)
            flat_x = ops.reshape(x, (n,))  # read only: may be a copy
            # the point perturbed one component at a time: a new contiguous array, written through a
            # flat view of it (never through a reshape of x, which may be a copy)
            work = ops.astype(ops.copy(x), work_dtype) if method == "complex" else ops.copy(x)
            flat = ops.flat_view(work)
            up, down, steps = perturbations(ops, flat_x, factor, method)
            columns = []
            for i in range(n):

                def at(side: int, i: int = i) -> Any:
                    flat[i] = up[i] if side > 0 else down[i]
                    return work

                columns.append(
                    evaluate.quotient(method, at, fx, steps[i], shifted_cv, scratch, restore=(flat, i, flat_x[i]))
                )
            evaluate.finish(x, cv, y, fx)
            jac = ops.reshape(ops.stack(columns, axis=-1), out_shape) if n else ops.zeros(out_shape, dtype, x)
            return Result(fx if full else None, result=jac)

        points = _SIDES[method] * n + evaluate.needs_fx
        return Kernel(jacobian, evaluations=EvaluationCount(points, points))

    def prepare_gradient(self, problem: Problem) -> Kernel:
        return self.prepare_jacobian(problem)

    def prepare_derivative(self, problem: Problem) -> Kernel:
        return self.prepare_jacobian(problem)

    # -- Taylor coefficients and Laplacians: central differences with Richardson extrapolation -------
    def taylor_accuracy_exponent(self, order: int) -> float:
        """a such that Taylor coefficients of `order` (1 to 4) are accurate to about eps ** a, relative:
        7/8, 3/4, 2/3, 1/2 (scaled by the accuracy of the values differenced, when nested); compare
        `accuracy_exponent`, which holds for first derivatives and the Laplacian."""
        return taylor_accuracy_exponent(order, self.input_accuracy)

    def prepare_taylor(self, problem: Problem, tangents: tuple, order: int) -> Kernel:
        # orders above 4 raise NotSupportedError here, before any evaluation
        return prepare_fd_taylor(self, problem, tangents, order)

    def prepare_laplacian(self, problem: Problem, method: Any) -> Kernel:
        if method.method != "exact":
            return super().prepare_laplacian(problem, method)
        return prepare_fd_laplacian(self, problem)


_TINY = 1e-30  # floor of |t| in the step along t (keeps h finite for a zero tangent)


register_engine(AutoFiniteDiff, name="finitediff", namespace="numpy")
