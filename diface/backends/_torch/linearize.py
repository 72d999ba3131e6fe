"""How torch linearizes f at a point (`AutoTorch.prepare_linearize`), and the products afterwards.

- reverse (`GraphLinearization`): one forward pass on a fresh leaf (`x.detach().requires_grad_()`) with
  the graph recorded; each pullback is a backward pass through it (`torch.autograd.grad`, the graph
  retained for the next), a batch one vmapped backward pass where that pays (`batching`). Torch runs
  backward passes of several threads through one retained graph side by side (its engine locks each
  node's state), so threads share a linearization.
- forward (`DualLinearization`): torch has no forward pass to keep for forward mode, so each pushforward
  evaluates f on dual tensors (`torch.autograd.forward_ad`), a batch one `torch.func.vmap` over
  `torch.func.jvp`; f's value comes with the first. Under `forward_ad_lock`, threads take turns.
- forward at one point (`TracedLinearization`, same-point preparations): `torch.func.linearize` traces
  the linear map once and a pushforward evaluates it alone, about half a dual-tensor pushforward.
"""

from __future__ import annotations

from typing import Any

from ..._arrays import framework_ops
from ..._kernel import Kernel, Result
from ..._linearization import Linearization, Linearizer
from ..._problem import Problem, size_of
from .batching import SAMPLE, Batching
from .function import Function
from .modes import FORWARD_AD, grad_mode, quiet, torch

__all__ = [
    "DualLinearization",
    "GraphLinearization",
    "TracedLinearization",
    "basis_sample",
    "gradient_kernel",
    "forward_linearizer",
    "reverse_linearizer",
    "traced_linearizer",
]


def basis_sample(size: int, shape: tuple, dtype: Any, like: Any) -> Any:
    """The first basis vectors of a space (at most `SAMPLE`), stacked: what preparation times vmap on."""
    return framework_ops("torch").basis_rows(size, 0, min(size, SAMPLE), dtype, like, shape)


def vmapped_pulls(create: bool = False) -> Any:
    """`(out, leaf, V) -> rows v^T d out / d leaf` for a stack V: one vmapped backward pass."""
    t = torch()

    def single(out: Any, leaf: Any, v: Any) -> Any:
        g = t.autograd.grad(out, leaf, v, retain_graph=True, create_graph=create, allow_unused=True)[0]
        return t.zeros_like(leaf) if g is None else g

    return t.func.vmap(single, in_dims=(None, None, 0))


def _grad(*args: Any, **kwargs: Any) -> Any:
    return torch().autograd.grad(*args, **kwargs)


class GraphLinearization(Linearization):
    """`out`'s graph, recorded from `leaf`: pullbacks are backward passes through it (`create`: each
    recording a graph of its own, for a second derivative)."""

    shareable = True

    def __init__(self, out: Any, leaf: Any, batching: Batching, pulls: Any, value: Any = None, create: bool = False):
        self.out, self.leaf, self.batching, self.pulls, self.create = out, leaf, batching, pulls, create
        self._value = value

    @property
    def value(self) -> Any:  # type: ignore[override]
        return self.out.detach() if self._value is None else self._value

    def pull(self, cotangents: Any) -> Any:
        out, leaf = self.out, self.leaf
        if not out.requires_grad:  # f does not depend on x
            return torch().zeros((len(cotangents), *leaf.shape), dtype=leaf.dtype, device=leaf.device)
        if cotangents.dtype != out.dtype:  # a basis in the result's dtype, wider than a derivative's
            cotangents = cotangents.to(out.dtype)
        if len(cotangents) == 1:
            return self.one(cotangents[0]).unsqueeze(0)
        return self.batching.run(self.one, self.many, cotangents)

    def one(self, v: Any, retain: bool = True) -> Any:
        out, leaf = self.out, self.leaf
        if not out.requires_grad:
            return torch().zeros_like(leaf)
        g = _grad(out, leaf, v, retain_graph=retain or self.create, create_graph=self.create, allow_unused=True)[0]
        return torch().zeros_like(leaf) if g is None else g

    def final(self, v: Any) -> Any:
        """The one product a caller asks of this linearization: the backward pass frees the graph's
        buffers as it goes (keeping them costs 10-15 % of a Hessian-vector product at n = 1e4)."""
        return self.one(v, retain=False)

    def many(self, vs: Any) -> Any:
        return self.pulls(self.out, self.leaf, vs)


def gradient_kernel(problem: Problem) -> Kernel:
    """The reverse-mode gradient as one kernel: a forward pass on a fresh leaf and one
    `torch.autograd.grad`, nothing else. The core's sweep of a `GraphLinearization` computes the same
    through a basis chunk, two views and a reshape, which measured 5-10 % of a small gradient."""
    t = torch()
    fn = Function(problem)
    grad, grad_enabled, enable_grad, zeros_like = t.autograd.grad, t.is_grad_enabled, t.enable_grad, t.zeros_like

    def gradient(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if not grad_enabled():
            with enable_grad():
                return gradient(x, extra, cv, y, full)
        leaf = x.detach().requires_grad_()
        out = fn(leaf, cv, y)
        g = grad(out, leaf, allow_unused=True)[0] if out.requires_grad else None
        return Result(out.detach() if full or y is not None else None, result=zeros_like(x) if g is None else g)

    return Kernel(gradient)


def reverse_linearizer(problem: Problem, batch: int | None = None) -> Linearizer:
    """Linearizations by a recorded forward pass. A reusable preparation decides how batches of
    pullbacks run (`Batching.decide`) at its point, unless it will only pull one at a time (`batch`)."""
    t = torch()
    fn = Function(problem)
    batching, pulls = Batching(), vmapped_pulls()
    grad_enabled, enable_grad = t.is_grad_enabled, t.enable_grad

    def linearizer(x: Any, cv: tuple, y: Any) -> GraphLinearization:
        if grad_enabled():
            leaf, out = fn.record(x, cv, y)
        else:
            with enable_grad():
                leaf, out = fn.record(x, cv, y)
        return GraphLinearization(out, leaf, batching, pulls, y)

    y_shape = problem.y_spec[0]
    m = size_of(y_shape)
    if not problem.single_use and m >= 2 and (batch is None or batch >= 2):
        y = None if problem.y is None else problem.y.detach().clone()
        lin = linearizer(problem.x, problem.context_values, y)
        sample = basis_sample(m, tuple(y_shape), fn.y_dtype, problem.x)
        batching.decide(lin.one, lin.many, sample, grad_mode)
    return linearizer


class DualLinearization(Linearization):
    """f at x, each pushforward on dual tensors (or a batch through vmap over `torch.func.jvp`); the value
    is the first pushforward's, or f evaluated when asked for before any."""

    def __init__(self, fn: Function, x: Any, cv: tuple, y: Any, batching: Batching) -> None:
        self.fn, self.x, self.cv, self.y, self.batching = fn, x, cv, y, batching
        self.shareable = y is None  # an in-place f writes y at every pushforward
        self._value = None

    @property
    def value(self) -> Any:  # type: ignore[override]
        if self._value is None:
            self._value = self.fn.evaluate(self.x, self.cv, self.y)
        return self._value

    def push(self, tangents: Any) -> Any:
        if len(tangents) == 1:
            return self.one(tangents[0]).unsqueeze(0)
        return self.batching.run(self.one, None if self.fn.inplace else self.many, tangents, dual=True)

    def one(self, v: Any) -> Any:
        value, tangent = self.fn.dual(self.x, v, self.cv, self.y)
        self._value = value
        return tangent

    def many(self, vs: Any) -> Any:
        t = torch()
        func, pure, x = t.func, self.fn.pure(self.cv), self.x
        with t.no_grad(), FORWARD_AD:  # no_grad: keeps tensors f closes over out (torch.func ignores it)
            value, tangents = func.vmap(lambda v: func.jvp(pure, (x,), (v,)), out_dims=(None, 0))(vs)
        self._value = value
        return tangents


def forward_linearizer(problem: Problem, batch: int | None = None) -> Linearizer:
    """Linearizations by dual tensors; a reusable preparation decides how batches of pushforwards run
    at its point, unless it will only push one at a time (`batch`)."""
    fn = Function(problem)
    batching = Batching()

    def linearizer(x: Any, cv: tuple, y: Any) -> DualLinearization:
        return DualLinearization(fn, x, cv, y, batching)

    n = size_of(problem.x_shape)
    if not problem.single_use and not fn.inplace and n >= 2 and (batch is None or batch >= 2):
        lin = linearizer(problem.x, problem.context_values, None)
        sample = basis_sample(n, problem.x_shape, problem.x_dtype, problem.x)
        batching.decide(lin.one, lin.many, sample)
    return linearizer


class TracedLinearization(Linearization):
    """f's linear map at a point, traced by `torch.func.linearize`: a pushforward evaluates the trace."""

    shareable = True

    def __init__(self, value: Any, linear: Any, batching: Batching) -> None:
        t = torch()
        self.value, self.linear, self.batching = value, linear, batching
        self.no_grad, self.vmap = t.no_grad, t.func.vmap

    def push(self, tangents: Any) -> Any:
        with self.no_grad():
            if len(tangents) == 1:
                return self.linear(tangents[0]).unsqueeze(0)
            return self.batching.run(self.linear, self.vmap(self.linear), tangents)


def traced_linearizer(problem: Problem) -> Linearizer:
    """Linearizations traced by `torch.func.linearize` where f allows it (an in-place f, or one the trace
    refuses, gets dual tensors)."""
    t = torch()
    fn = Function(problem)
    batching = Batching()
    dual = forward_linearizer(problem, 1)

    def linearizer(x: Any, cv: tuple, y: Any) -> Linearization:
        pure = fn.pure(cv)
        if pure is not None:
            try:
                with quiet(), t.no_grad(), FORWARD_AD:
                    value, linear = t.func.linearize(pure, x)
                    # the first call folds the trace's constants, unsafely for threads: made here
                    linear(t.zeros_like(x))
                return TracedLinearization(value, linear, batching)
            except Exception:  # not traceable (data-dependent shapes, non-torch code, ...)
                pass
        return dual(x, cv, y)

    n = size_of(problem.x_shape)
    if not problem.single_use and n >= 2:
        lin = linearizer(problem.x, problem.context_values, None if problem.y is None else problem.y.clone())
        if isinstance(lin, TracedLinearization):
            batching.decide(
                lin.linear,
                t.func.vmap(lin.linear),
                basis_sample(n, problem.x_shape, problem.x_dtype, problem.x),
                t.no_grad,
            )
    return linearizer
