"""Second order: autograd differentiating its own first derivative, as `SecondOrderPlan`s.

The inner first derivative of f (the gradient for a scalar output, the derivative for a scalar input)
is a function of x written with autograd operations (`AutogradPlan.derivative`), which the outer mode
linearizes: forward records it once and pushes all tangents through it together (`ForwardOver`:
forward over reverse is how a plain backend computes Hessians, one trace plus one batched push, where
`autograd.hessian` runs a Python backward pass per row), reverse traces it once and pulls cotangents
back (`ReverseOver`; H being symmetric, `v @ H = H @ v`). The core derives hvp, hessian,
second_derivative and same-point hvp from `linearize`; a plan overrides only what autograd does faster:
one tangent pushed eagerly in a single trace (`ForwardOver.hvp`), and reverse over forward's
Hessian-vector products as gradients of directional derivatives (`ReverseOverForward.hvp`).

`DefaultPlan` is a plain backend's: forward over reverse (forward over forward for the derivative of a
scalar input), falling back for good to reverse over reverse where autograd lacks a JVP rule (probed
at preparation, and at any call that meets one).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._arrays import NUMPY
from ..._derive import SecondOrderPlan
from ..._derive._sweep import Basis, sweep_linearization
from ..._kernel import Kernel, Result
from ..._linearization import Linearization
from ..._problem import Problem, size_of
from ._forward import Recording, jvp
from ._internals import AG
from ._linearize import ForwardLinearization, ReverseLinearization
from ._lock import locked, serialized
from ._messages import NoJVPRule
from ._ops import box_ops
from ._reverse import Tape
from ._shapes import fresh
from ._trace import bound, private_caches

__all__ = ["DefaultPlan", "ForwardOver", "ReverseOver", "ReverseOverForward", "plan_for"]


def _hint(outer: str, inner: str) -> str:
    return (
        f"{outer} over {inner} needs them: use reverse over reverse, di.SecondOrder(di.AutoAutograd('reverse'), "
        "di.AutoAutograd('reverse')), or a plain di.AutoAutograd(), which falls back to it"
    )


class AutogradPlan(SecondOrderPlan):
    """autograd over autograd on one problem; `inner` ("forward" or "reverse") computes the first
    derivative that the subclass's outer mode (`mode`) linearizes."""

    def __init__(self, problem: Problem, inner: str) -> None:
        super().__init__(problem)
        self.inner = inner
        self.hint = _hint(self.mode, inner)
        y_shape, y_dtype = problem.y_spec
        self.gradient = y_shape == ()  # else the derivative, for a scalar x
        self.seed = np.ones((), y_dtype if self.gradient else problem.x_dtype)

    def derivative(self, cv: tuple, stash: list) -> Callable:
        """`x -> inner first derivative of f at x`, leaving f(x) in `stash[0]`."""
        fun, seed, hint, problem = bound(self.problem.f, cv), self.seed, self.hint, self.problem
        if self.gradient and self.inner == "reverse":

            def reverse_gradient(x: Any) -> Any:
                tape = Tape(fun, x)
                stash[0] = tape.value
                return tape.pull(seed)

            return reverse_gradient
        if not self.gradient and self.inner == "forward":

            def forward_derivative(x: Any) -> Any:
                stash[0], d = jvp(fun, x, seed, hint)
                return d

            return forward_derivative
        # a basis sweep: the gradient in forward mode (pushforwards of the basis of x), the derivative
        # in reverse mode (pullbacks of the basis of y)
        forward = self.inner == "forward"
        space_shape, dtype = (problem.x_shape, problem.x_dtype) if forward else problem.y_spec
        n = size_of(space_shape)
        basis = Basis(NUMPY, space_shape, dtype, None, max(1, n), n)
        out_shape = problem.x_shape if forward else problem.y_spec[0]

        def swept_derivative(x: Any) -> Any:
            if forward:
                lin: Linearization = ForwardLinearization(Recording(fun, x, hint))
            else:
                lin = ReverseLinearization(Tape(fun, x))
            stash[0] = lin.value
            ops = box_ops() if AG.isbox(x) else NUMPY
            return sweep_linearization(lin, forward, basis, out_shape, self.seed.dtype, ops)

        return swept_derivative

    def _made(self, lin_value: Any, stash: list) -> tuple[Any, Any]:
        """(the derivative as the caller's array, f(x))."""
        return fresh(lin_value, self.seed), AG.getval(stash[0])

    def probe(self) -> AutogradPlan:
        """Linearize once at the preparation point: a missing JVP rule raises now, not at the first call."""
        if not self.problem.single_use:
            self.linearize(self.problem.x, self.problem.context_values)
        return self

    @serialized
    def hvp_same_point(self, tangents: tuple) -> Kernel:
        """The core's, on a twin of this plan whose recording never reads the caller's Cache buffers."""
        twin = copy.copy(self)
        twin.problem = private_caches(self.problem)
        return SecondOrderPlan.hvp_same_point(twin, tangents)

    hvp = serialized(SecondOrderPlan.hvp)
    hessian = serialized(SecondOrderPlan.hessian)
    second_derivative = serialized(SecondOrderPlan.second_derivative)


class ForwardOver(AutogradPlan):
    """Forward over `inner`: the derivative recorded once, all tangents pushed through it together."""

    mode = "forward"

    @locked
    def linearize(self, x: Any, cv: tuple) -> Linearization:
        stash: list = [None]
        recording = Recording(self.derivative(cv, stash), x, self.hint)
        return ForwardLinearization(recording, *self._made(recording.value, stash))

    @serialized
    def hvp(self, tangents: tuple) -> Kernel:
        if len(tangents) != 1:
            return SecondOrderPlan.hvp(self, tangents)
        return self._eager_hvp()

    def _eager_hvp(self) -> Kernel:
        """One tangent: pushed through the derivative as it is traced (one trace, as `make_jvp`)."""

        def eager_hvp(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            g, hv = jvp(self.derivative(cv, [None]), x, tangents[0], self.hint)
            return Result(lower=fresh(g, self.seed) if full else None, result=(fresh(hv, tangents[0]),))

        return Kernel(eager_hvp)


class ReverseOver(AutogradPlan):
    """Reverse over `inner`: the derivative traced once, cotangents pulled back through it."""

    mode = "reverse"

    @locked
    def linearize(self, x: Any, cv: tuple) -> Linearization:
        stash: list = [None]
        tape = Tape(self.derivative(cv, stash), x)
        return ReverseLinearization(tape, self.gradient, *self._made(tape.value, stash))


class ReverseOverForward(ReverseOver):
    """Reverse over forward: Hessian-vector products as reverse-mode gradients of the directional
    derivatives `x -> J(x) v` (one eager forward trace each), rather than of the whole forward-mode
    gradient."""

    @serialized
    def hvp(self, tangents: tuple) -> Kernel:
        f, hint, seed = self.problem.f, self.hint, self.seed

        def reverse_over_forward_hvp(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            fun = bound(f, cv)
            hvps = []
            for v in tangents:

                def directional(x: Any, v: Any = v) -> Any:
                    return jvp(fun, x, v, hint)[1]

                hvps.append(fresh(Tape(directional, x).pull(seed), v))
            gradient = fresh(self.derivative(cv, [None])(x), seed) if full else None
            return Result(lower=gradient, result=tuple(hvps))

        return Kernel(reverse_over_forward_hvp)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self.hvp(tangents)


class DefaultPlan(ForwardOver):
    """A plain backend's plan: forward over reverse (forward over forward for a scalar input), and
    reverse over reverse for good once a JVP rule turns out to be missing."""

    def __init__(self, problem: Problem, inner: str) -> None:
        super().__init__(problem, inner)
        self.fallback: ReverseOver | None = None

    def _fall_back(self) -> ReverseOver:
        if self.fallback is None:
            self.fallback = ReverseOver(self.problem, "reverse")
        return self.fallback

    @locked
    def linearize(self, x: Any, cv: tuple) -> Linearization:
        if self.fallback is None:
            try:
                return super().linearize(x, cv)
            except NoJVPRule:
                self._fall_back()
        # pushes go through pulls (a Hessian is symmetric) or the rows of the derivative's Jacobian
        return self._fall_back().linearize(x, cv)

    def probe(self) -> AutogradPlan:
        try:
            return super().probe()
        except NoJVPRule:
            self._fall_back()
            return self

    @serialized
    def hvp(self, tangents: tuple) -> Kernel:
        """Forward over reverse, or reverse over reverse where it ran faster at the preparation point
        (autograd's JVP rules for powers and its indexing transposes cost more than their VJPs: on
        Rosenbrock at n = 1e5 forward over reverse takes 1.4 times as long; on a small MLP loss, 0.85)."""
        forward = self._eager_hvp() if len(tangents) == 1 else SecondOrderPlan.hvp(self, tangents)
        if self.problem.single_use or self.fallback is not None or not self.gradient or self.inner != "reverse":
            return forward
        return _faster(
            self.problem, tangents, forward, SecondOrderPlan.hvp(ReverseOver(self.problem, "reverse"), tangents)
        )

    def _eager_hvp(self) -> Kernel:
        eager = super()._eager_hvp()

        def eager_hvp(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            if self.fallback is None:
                try:
                    return eager.run(x, tangents, cv, y, full)
                except NoJVPRule:
                    self._fall_back()
            lin = self.linearize(x, cv)
            return Result(lower=lin.value if full else None, result=self._products(lin, tangents))

        return Kernel(eager_hvp)


def _faster(problem: Problem, tangents: tuple, *kernels: Kernel, repeats: int = 5) -> Kernel:
    """The kernel that ran fastest at the preparation point: best of `repeats` calls each, interleaved,
    after one call each to warm up, in this thread's CPU time (which other processes do not inflate)."""
    x, cv = problem.x, problem.context_values
    best = [math.inf] * len(kernels)
    for round in range(repeats + 1):
        for i, kernel in enumerate(kernels):
            start = time.thread_time()
            kernel.run(x, tangents, cv, None, False)
            if round:
                best[i] = min(best[i], time.thread_time() - start)
    return kernels[best.index(min(best))]


def plan_for(problem: Problem, outer: str, inner: str) -> AutogradPlan:
    """The plan for AutoAutograd(outer) over AutoAutograd(inner), probed at the preparation point (a
    plain backend's is `plan_for(problem, "auto", "auto")`). "auto" outside is `DefaultPlan`; inside,
    reverse mode for a gradient and forward mode for the derivative of a scalar input."""
    if inner == "auto":
        inner = "reverse" if problem.y_spec[0] == () else "forward"
    if outer == "auto":
        return DefaultPlan(problem, inner).probe()
    if outer == "forward":
        return ForwardOver(problem, inner).probe()
    return (ReverseOverForward if inner == "forward" else ReverseOver)(problem, inner).probe()
