"""Batched finite differences: every point of one operator call evaluated together.

With `vectorized=True` the points (the base point where needed, then every perturbation) are stacked
along a new leading axis and f is called once on the stack; with `executor=` each point is one task,
all submitted together and gathered in order. The steps, the points and the quotients are those of
the serial kernels, so an executor gives results identical to the serial loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._contexts import Cache
from ..._errors import EvaluationError, NotSupportedError, ShapeError
from ..._kernel import Kernel, Result
from ..._problem import Problem, check_output, dtype_of, shape_of, size_of
from ._evaluator import Evaluator, check_analytic, perturbations
from ._mappers import Task, check_picklable, is_process_pool, mapper_for, run_tasks

__all__ = ["EvaluationCount", "prepare_batched_jacobian", "prepare_batched_pushforward"]

_TINY = 1e-30


@dataclass(frozen=True)
class EvaluationCount:
    """What one call of a finite-difference operator costs in evaluations of f.

    Attributes:
        points: points at which f is evaluated (perturbations, and the base point where the method
            needs f(x)); the `value_and_*` variants of central differences add the base point.
        f_calls: calls of f: `points` for the serial loop and for an executor (one task per point,
            all submitted together), 1 for a vectorized f (2 for complex steps that need f(x)).
    """

    points: int
    f_calls: int


class BatchRunner:
    """f at the base point (optionally) and a stack of points, in one batch."""

    def __init__(self, backend: Any, problem: Problem) -> None:
        self.problem, self.ops = problem, problem.ops
        self.vectorized = backend.vectorized
        if self.vectorized and problem.inplace:
            raise NotSupportedError(
                "AutoFiniteDiff(vectorized=True) needs an out-of-place f(X) returning the stacked outputs; "
                "an in-place f(y, x) works with executor= or the serial default"
            )
        self.caches = tuple(i for i, c in enumerate(problem.contexts) if isinstance(c, Cache))
        self.y_template = None if problem.y is None else problem.ops.copy(problem.y)
        self.complex_template = None  # complex steps write complex values: a real y would drop their imaginary part
        if self.y_template is not None and backend.method == "complex":
            ops = problem.ops
            self.complex_template = ops.astype(self.y_template, ops.complex_dtype(dtype_of(self.y_template)))
        if not self.vectorized:
            self.map = mapper_for(backend.executor)
            if is_process_pool(backend.executor):
                check_picklable(self._task(problem.context_values))

    def _task(self, cv: tuple) -> Task:
        return Task(self.problem.f, cv, self.caches, self.y_template, self.complex_template)

    def __call__(self, base: Any, points: Any, cv: tuple, label: Any) -> tuple[Any, Any]:
        """(f(base) or None, f at each point stacked along a leading axis); `label(i)` names point i
        (0 is the base point where there is one)."""
        ops = self.ops
        if not self.vectorized:
            items = ([base] if base is not None else []) + ops.unstack(points)
            values = run_tasks(self.map, self._task(cv), items, label)
            fx = values.pop(0) if base is not None else None
            stacked = ops.stack(values)
            if self.problem.y is None:
                check_analytic(ops, points, stacked)
            return fx, stacked
        if base is not None and base.dtype == points.dtype:
            stacked = self._call(ops.concat([ops.reshape(base, (1, *shape_of(base))), points]), cv, label)
            check_analytic(ops, points, stacked)
            return stacked[0], stacked[1:]
        fx = None
        if base is not None:  # a real base point beside complex steps: its own call
            fx = self._call(ops.reshape(base, (1, *shape_of(base))), cv, lambda i: "the base point x")[0]
        values = self._call(points, cv, lambda i: label(i + (base is not None)))
        check_analytic(ops, points, values)
        return fx, values

    def _call(self, batch: Any, cv: tuple, label: Any) -> Any:
        k = int(batch.shape[0])
        try:
            out = check_output(self.problem.f(batch, *cv))
        except Exception as e:
            raise EvaluationError(
                f"vectorized f raised {type(e).__name__} on a batch of {k} points ({label(0)}, ..., "
                f"{label(k - 1)}): {e}"
            ) from e
        if not shape_of(out) or shape_of(out)[0] != k:
            raise ShapeError(
                f"AutoFiniteDiff(vectorized=True): f must return one output per point along the leading "
                f"axis; a batch of {k} points gave an output of shape {shape_of(out)}"
            )
        return out


def _column(i: int, x_shape: tuple) -> str:
    return f"x[{', '.join(map(str, np.unravel_index(i, x_shape)))}]" if x_shape else "x"


def prepare_batched_jacobian(backend: Any, problem: Problem) -> Kernel:
    """J (columns along x's axes, last) from one batch of all perturbed points."""
    ops, method = problem.ops, backend.method
    run = BatchRunner(backend, problem)
    evaluate = Evaluator(backend, problem)
    factor = backend.step_factor(ops.eps(problem.x_dtype))
    x_shape, (y_shape, _) = problem.x_shape, problem.y_spec
    n = size_of(x_shape)
    out_shape = y_shape + x_shape
    work_dtype = ops.complex_dtype(problem.x_dtype) if method == "complex" else problem.x_dtype
    dtype = ops.result_type(problem.x_dtype, problem.y_spec[1])
    sides = {"central": (1, -1), "forward": (1,), "backward": (-1,), "complex": (1,)}[method]
    trailing = (1,) * len(y_shape)

    def label_for(base: bool) -> Any:
        def label(i: int) -> str:
            if base and i == 0:
                return "the base point x"
            side, col = divmod(i - base, n)
            return f"column {col} ({_column(col, x_shape)} {'+' if sides[side] > 0 else '-'} h)"

        return label

    def batched_jacobian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if n == 0:
            fx = problem.evaluate(x, cv, y) if (full or y is not None) else None
            return Result(fx, result=ops.zeros(out_shape, dtype, x))
        flat_x = ops.reshape(x, (n,))
        up, down, steps = perturbations(ops, flat_x, factor, method)
        # row i of each block: x with component i replaced (exactly: x * 1 + 0 and x * 0 + v)
        unit = ops.eye(n, work_dtype, x)
        keep = 1 - unit
        blocks = [flat_x * keep + (up if s > 0 else down) * unit for s in sides]
        points = ops.reshape(ops.concat(blocks) if len(blocks) > 1 else blocks[0], (len(blocks) * n, *x_shape))
        base = evaluate.needs_fx or full or y is not None
        fx, values = run(x if base else None, points, evaluate.scratch().contexts(cv), label_for(base))
        steps = ops.reshape(steps, (n, *trailing))
        if method == "central":
            q = (values[:n] - values[n:]) / steps
        elif method == "forward":
            q = (values - fx) / steps
        elif method == "backward":
            q = (fx - values) / steps
        else:
            q = ops.imag(values) / steps + 0 * fx
        if y is not None:
            ops.copyto(y, fx)
            fx = y
        return Result(fx if full else None, result=ops.reshape(ops.moveaxis(q, 0, -1), out_shape))

    base_points = int(evaluate.needs_fx)
    return Kernel(batched_jacobian, evaluations=_count(backend, len(sides) * n + base_points, base_points))


def prepare_batched_pushforward(backend: Any, problem: Problem, tangents: tuple, same_point: bool) -> Kernel:
    """J t for every tangent t from one batch of the points x +- h t."""
    ops, method = problem.ops, backend.method
    run = BatchRunner(backend, problem)
    evaluate = Evaluator(backend, problem, same_point)
    factor = backend.step_factor(ops.eps(problem.x_dtype))
    x_dtype = problem.x_dtype
    y_shape = problem.y_spec[0]
    dtype = ops.result_type(x_dtype, problem.y_spec[1])
    empty = size_of(problem.x_shape) == 0
    sides = {"central": (1, -1), "forward": (1,), "backward": (-1,), "complex": (1,)}[method]

    def label_for(base: bool) -> Any:
        def label(i: int) -> str:
            if base and i == 0:
                return "the base point x"
            j, side = divmod(i - base, len(sides))
            return f"tangent {j} (x {'+' if sides[side] > 0 else '-'} h t)"

        return label

    def batched_pushforward(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        if empty or not tangents:
            value = evaluate.problem.evaluate(x, cv, y) if (full or y is not None) else None
            return Result(value, result=tuple(ops.zeros(y_shape, dtype, x) for _ in tangents))
        points: list[Any] = []
        steps: list[Any] = []
        for t in tangents:
            size = ops.max(ops.abs(t))
            reach = ops.max(ops.abs(x) * ops.astype(t != 0, x_dtype))  # no bool arithmetic in the array API
            h = factor * ops.maximum(reach, 1.0) / ops.maximum(size, _TINY)
            h = ops.astype(h, x_dtype)
            d = 1j * h if method == "complex" else h
            points.extend(x + (s * d) * t for s in sides)
            steps.append(2 * h if method == "central" else h)
        # f(x), None only where no one needs it (central differences, no value asked for)
        fx: Any = evaluate.at_point(x, cv, y, False) if evaluate.fx is not None else None
        base = fx is None and (evaluate.needs_fx or full or y is not None)
        value, values = run(x if base else None, ops.stack(points), evaluate.scratch().contexts(cv), label_for(base))
        if base:
            fx = value
            if y is not None:
                ops.copyto(y, fx)
                fx = y
        results = []
        k = len(sides)
        for j, step in enumerate(steps):
            if method == "central":
                results.append((values[k * j] - values[k * j + 1]) / step)
            elif method == "forward":
                results.append((values[j] - fx) / step)
            elif method == "backward":
                results.append((fx - values[j]) / step)
            else:
                results.append(ops.imag(values[j]) / step + 0 * fx)
        return Result(fx if full else None, result=tuple(results))

    base_points = int(evaluate.needs_fx and not same_point)
    n_points = len(sides) * len(tangents) + base_points
    return Kernel(batched_pushforward, evaluations=_count(backend, n_points, base_points))


def _count(backend: Any, points: int, base: int) -> EvaluationCount:
    if not backend.vectorized:
        return EvaluationCount(points, points)
    return EvaluationCount(points, 1 + (backend.method == "complex" and base > 0))
