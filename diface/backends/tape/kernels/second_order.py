"""AutoTape's second-order plan: f's derivative map recorded once as a tape, then linearized.

Preparation records f (the inner tape) and then the derivative map `x -> grad f(x)` (scalar output:
the inner reverse sweep) or `x -> f'(x)` (scalar input: the inner forward sweep) run on traced arrays,
which records the inner sweep's rules as the nodes of an outer tape, with f's own nodes in front.
`linearize(x, cv)` replays that outer tape once (f's forward pass and its sweep: the derivative, and
f(x) on the way) and its `push` runs the forward-mode sweep of the outer tape over a whole batch of
tangents: forward over reverse, Hessian-vector products for every tangent in one sweep. The core
derives hvp, hessian (the basis in chunks), second_derivative and same-point hvp from it
(`diface._derive.SecondOrderPlan`); the Hessian is swept here, writing each chunk's products straight
into the seed and the result (no basis arrays, no stacking).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._derive import SecondOrderPlan
from ...._derive._sweep import chunk_size
from ...._kernel import Kernel, Result
from ...._linearization import Linearization
from ...._problem import Problem, size_of
from ..recording.record import Recording, record
from ..sweeps.seeds import FIXED_SEEDS, identity_seed
from ..tracing.tracer import operand, slot_of
from .first_order import DerivativeKernel, GradientKernel
from .linearize import ReplayLinearization, TapeLinearizer

__all__ = ["TapeSecondOrder"]


class TapeSecondOrder(SecondOrderPlan):
    """Forward mode over AutoTape's own derivative of f (see the module docstring)."""

    mode = "forward"

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem)
        scalar_output = problem.y_spec[0] == ()
        # the inner kernel only ever runs on traced arrays: it compiles nothing
        self.inner = (GradientKernel if scalar_output else DerivativeKernel)(problem, replayed=False)
        self.linearizer = TapeLinearizer(problem, self.record(problem.x, problem.context_values, None), self.record)

    def record(self, x: Any, cv: tuple, y: Any) -> Recording:
        """The derivative map's tape at x; `keep` holds the slot of f(x)."""
        inner = self.inner
        primal: list = []

        def derivative(x: Any, *cv: Any) -> Any:
            value, _, d = inner.run(x, None, cv, None, True)
            primal.append(slot_of(x._tape, operand(value)))
            return d

        rec = record(derivative, x, self.problem.contexts, cv, None)
        rec.keep = (primal[-1],)
        return rec

    def linearize(self, x: Any, cv: tuple) -> Linearization:
        return self.linearizer(x, cv, None)  # its `primal`: the slot `record` keeps

    def hvp(self, tangents: tuple) -> Kernel:
        """One tangent at a time needs no stacking: its sweep has no batch axis."""

        def hvp(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            lin = self.linearize(x, cv)
            if len(tangents) == 1 and isinstance(lin, ReplayLinearization):
                products = (lin.product(tangents[0]),)
            else:
                products = self._products(lin, tangents)
            return Result(lower=lin.value if full else None, result=products)

        return Kernel(hvp)

    def hessian(self) -> Kernel:
        problem = self.problem
        x_shape = problem.x_shape
        n = size_of(x_shape)
        dtype = np.result_type(problem.x_dtype, problem.y_spec[1])
        step = chunk_size(n, n, n * n)
        bounds = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
        # one sweep per chunk, each keeping its identity seed, up to a size; then one sweep per chunk size
        fixed = len(bounds) == 1 or n * n <= FIXED_SEEDS
        traced: list = []  # the core's kernel, for calls on traced arrays (third order), made if needed

        def hessian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            lin = self.linearize(x, cv)
            if not isinstance(lin, ReplayLinearization):
                if not traced:
                    traced.append(SecondOrderPlan.hessian(self))
                return traced[0].run(x, extra, cv, y, full)
            hess = np.empty((n, n), dtype)
            for lo, hi in bounds:
                k = hi - lo
                if fixed:  # a sweep whose seed is the identity rows lo .. hi - 1 (see `sweeps.seeds`)
                    sweep = lin.replay.sweep("forward", k, identity=lo)
                else:
                    sweep = lin.replay.sweep("forward", k)
                    identity_seed(sweep.seed, lo)
                # product k is column lo + k: H[i, j] = d grad_i / d x_j
                hess[:, lo:hi] = np.reshape(sweep.run(), (k, n)).T
            hess = hess.reshape(x_shape + x_shape)
            if not full:
                return Result(result=hess)
            return Result(lin.primal, lin.value, hess)

        return Kernel(hessian)
