"""AutoTape's second order within a memory budget: reverse over a streamed forward mode.

The compiled second-order plan (`kernels.second_order`) records f's reverse sweep as a tape and replays
it, which keeps every value the reverse sweep reads. Within `AutoTape(memory=...)`, the Hessian-vector
product is instead the gradient of the directional derivative `h(x, v) = f'(x) v`: preparation records
h, with v an input (a `Constant`), by running f's recording in forward mode on traced values, each value
let go after its last reader (`Segmented.push_traced`), on a lean tape; the gradient of that recording
with respect to x is then a reverse sweep within the budget (`sweeps.segments`), as first order is. The
second derivative of a scalar x is the streamed forward mode of the recorded derivative map. Hessians
are their products with the basis of x, one budgeted sweep per column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._contexts import Constant
from ...._derive import SecondOrderPlan
from ...._kernel import Kernel, Result
from ...._problem import Problem, size_of
from ..recording.record import Recording, record, take_recording
from ..sweeps.segments import Segmented, budget_plan
from .bounded import report_of

__all__ = ["BoundedSecondOrder"]


class BoundedSecondOrder(SecondOrderPlan):
    """hvp, Hessian and second derivative within a memory budget (see the module docstring)."""

    def __init__(self, problem: Problem, budget: int) -> None:
        super().__init__(problem)
        self.budget = budget
        rec = take_recording(problem, budget)
        self.f = Segmented(rec.tape, budget_plan(rec.tape, budget))
        rec.tape.release_values()
        v0 = np.zeros(problem.x_shape, problem.x_dtype)
        self.directional = self._derivative_map(rec, v0)
        plan = budget_plan(self.directional.tape, budget)
        self.report = report_of(plan, self.directional, budget, True)
        self.map = Segmented(self.directional.tape, plan)
        self.directional.tape.release_values()

    def _derivative_map(self, rec: Recording, v0: Any) -> Recording:
        """The recording of `(x, v, *contexts) -> f'(x) v`, on a lean tape."""
        problem, f = self.problem, self.f
        y_shape, y_dtype = problem.y_spec

        def directional(x: Any, v: Any, *cv: Any) -> Any:
            env = f.env(x, cv)
            t = f.push_traced(env, v)
            if t is None:  # f does not depend on x
                return np.zeros(y_shape, y_dtype) * np.sum(x)
            return t

        return record(
            directional,
            problem.x,
            (Constant(v0), *problem.contexts),
            (v0, *problem.context_values),
            None,
            self.budget,
        )

    def _hvp(self, x: Any, v: Any, cv: tuple) -> Any:
        xs = self.map.tape.slots[self.map.tape.x]
        _, (g,) = self.map.pull(np.asarray(x), (np.asarray(v, xs.dtype), *cv), [np.ones((), xs.dtype)])
        return np.zeros(xs.shape, xs.dtype) if g is None else np.array(g, copy=True)

    def _gradient(self, x: Any, cv: tuple) -> tuple[Any, Any]:
        tape = self.f.tape
        xs, out = tape.slots[tape.x], tape.slots[tape.output]
        value, (g,) = self.f.pull(np.asarray(x), cv, [np.ones(out.shape, out.dtype)])
        return value, np.zeros(xs.shape, xs.dtype) if g is None else np.array(g, copy=True)

    def hvp(self, tangents: tuple) -> Kernel:
        def hvp(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            products = tuple(self._hvp(x, v, cv) for v in tangents)
            return Result(lower=self._gradient(x, cv)[1] if full else None, result=products)

        return Kernel(hvp, report=self.report)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self.hvp(tangents)

    def hessian(self) -> Kernel:
        problem = self.problem
        x_shape = problem.x_shape
        n = size_of(x_shape)

        def hessian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            hess = np.zeros((n, n), np.result_type(problem.x_dtype, problem.y_spec[1]))
            for j in range(n):
                e = np.zeros(n, problem.x_dtype)
                e[j] = 1
                hess[:, j] = np.reshape(self._hvp(x, e.reshape(x_shape), cv), -1)
            hess = hess.reshape(x_shape + x_shape)
            if not full:
                return Result(result=hess)
            value, g = self._gradient(x, cv)
            return Result(value, g, hess)

        return Kernel(hessian, report=self.report)

    def second_derivative(self) -> Kernel:
        """d2y/dx2 of a scalar x: f'(x) 1 as recorded, pushed forward along 1 (streamed both times)."""
        problem = self.problem

        def second_derivative(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            one = np.ones(problem.x_shape, problem.x_dtype)
            d1, (d2,) = self.map.push(np.asarray(x), (one, *cv), [one])
            y_shape, y_dtype = problem.y_spec
            d2 = np.zeros(y_shape, y_dtype) if d2 is None else np.array(d2, copy=True)
            value = None
            if full:
                value, _ = self.f.push(np.asarray(x), cv, [])
            return Result(value, np.array(d1, copy=True), d2)

        return Kernel(second_derivative, report=self.report)
