"""How torch linearizes f at a point (`AutoTorch.prepare_linearize`), and the products afterwards.

- reverse (`GraphLinearization`): one forward pass on a fresh leaf (`x.detach().requires_grad_()`) with
  the graph recorded; each pullback is a backward pass through it (`torch.autograd.grad`, the graph
  retained for the next), a batch one vmapped backward pass where that pays (`_batching`). Torch runs
  backward passes of several threads through one retained graph side by side (its engine locks each
  node's state), so threads share a linearization.
- forward (`DualLinearization`): torch has no forward pass to keep for forward mode, so each pushforward
  evaluates f on dual tensors (`torch.autograd.forward_ad`), a batch one `torch.func.vmap` over
  `torch.func.jvp`; f's value comes with the first. Under `forward_ad_lock`, threads take turns.
- forward at one point (`TracedLinearization`, same-point preparations): the linear map is traced once
  (`torch.func.linearize`'s construction on a functionalized trace: `trace_linear_map`) and a
  pushforward evaluates it alone, about half a dual-tensor pushforward.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..._arrays import framework_ops
from ..._errors import NotSupportedError
from ..._kernel import Kernel, Result
from ..._linearization import Linearization, Linearizer
from ..._problem import Problem, size_of
from ._batching import SAMPLE, Batching
from ._modes import FORWARD_AD, grad_mode, quiet, torch
from ._trace import Function

__all__ = [
    "DualLinearization",
    "GraphLinearization",
    "TracedLinearization",
    "agrees_with_jvp",
    "basis_sample",
    "gradient_kernel",
    "forward_linearizer",
    "reverse_linearizer",
    "trace_linear_map",
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
    def value(self) -> Any:
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
    def value(self) -> Any:
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
    """f's linear map at a point, traced once (`trace_linear_map`): a pushforward evaluates the trace."""

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


def _copy(self: Any, src: Any, non_blocking: bool = False) -> Any:
    """`aten.copy` (what functionalization makes of forward AD's `copy_` into a tangent) as operations
    vmap has batching rules for: torch has none for `aten.copy`, and falls back to a loop."""
    return src.to(dtype=self.dtype, device=self.device).expand(self.shape).clone()


def _depends_on_input(graph: Any) -> bool:
    """Whether the graph's output is computed from its input (else it is one of its folded constants)."""
    live: set = set()
    for node in graph.nodes:
        if node.op == "placeholder" or any(arg in live for arg in node.all_input_nodes):
            if node.op == "output":
                return True
            live.add(node)
    return False


def trace_linear_map(pure: Any, x: Any) -> tuple[Any, Any]:
    """(f(x), v -> J(x) v): `torch.func.linearize`'s construction on a functionalized trace.

    Like torch's, the JVP of f at x is traced by `make_fx` and the part that depends on x alone is
    folded into constants of the graph, computed once. torch's own (`torch.func.linearize`) traces
    f's in-place operations as they are, and folding turns the tensors they write into kept constants:
    where f updates a clone or a buffer of its own in place (`v = x.clone(); v[idx] += x`, `index_add_`,
    `masked_fill_`, into a `torch.zeros`), every replay writes into those constants again, and the
    pushforwards drift from one call to the next. Traced through `torch.func.functionalize`, the graph
    has no in-place operation, so its constants stay as folding made them. Call under `FORWARD_AD` and
    `no_grad`; the caller checks the map (`agrees_with_jvp`)."""
    t = torch()
    from torch.fx.experimental import const_fold
    from torch.fx.experimental.proxy_tensor import make_fx

    value = pure(x)
    # x goes through functionalize as an argument: a tensor it does not wrap cannot take in-place
    # writes of tensors it does; make_fx sees x as a constant, which is what lets folding fold it
    tangent = t.func.functionalize(lambda p, v: t.func.jvp(pure, (p,), (v,))[1], remove="mutations")
    # a contiguous example tangent, as the products get them (rows of a stack): forward AD uses it as
    # it is, where an expanded one (torch's) is copied into a fresh tensor at every call
    graph = make_fx(lambda v: tangent(x, v), decomposition_table={t.ops.aten.copy.default: _copy})(t.zeros_like(x))
    folded = const_fold.split_const_subgraphs(graph, device_for_folded_attrs=str(x.device))
    folded.run_folding()  # here, once, rather than at the first call (which threads could race to)
    linear = folded.forward  # not the module itself: vmap over a Module costs more than the products
    if not _depends_on_input(folded.graph):  # a zero map, returning a constant: a fresh copy per call
        return value, lambda v: linear(v).clone()
    return value, linear


def agrees_with_jvp(pure: Any, x: Any, linear: Any) -> bool:
    """The traced map, applied twice along one pseudo-random tangent (from a seeded generator: the
    user's random state is left alone), agrees with `torch.func.jvp` of f there: a trace that replays
    wrongly (by a mechanism of torch's that `trace_linear_map` does not know of) is not kept.
    Agreement is to eps ** 0.75 of the largest entry: rounding differs by a few ulps at most, and a
    false alarm only costs speed (dual tensors are used instead)."""
    t = torch()
    gen = t.Generator(device=x.device).manual_seed(0)
    v = t.randn(x.shape, generator=gen, dtype=x.dtype, device=x.device)
    want = t.func.jvp(pure, (x,), (v,))[1]
    scale = float(want.abs().max()) if want.numel() else 0.0
    tol = t.finfo(want.dtype).eps ** 0.75 * scale
    for _ in range(2):
        got = linear(v)
        if got.shape != want.shape or got.dtype != want.dtype or not t.allclose(got, want, rtol=0.0, atol=tol):
            return False
    return True


def traced_linearizer(problem: Problem) -> Linearizer:
    """Linearizations traced once (`trace_linear_map`) where f allows it and the trace agrees with a
    direct JVP; an in-place f, one the trace refuses or one whose trace disagrees gets dual tensors."""
    t = torch()
    fn = Function(problem)
    batching = Batching()
    dual = forward_linearizer(problem, 1)
    #: (x, contexts, linearization) traced below to time vmap, handed to the first call at that very
    #: point (the same-point preparation's own) rather than traced again: a trace costs tens of ms
    made: list[tuple[Any, tuple, TracedLinearization]] = []

    def linearizer(x: Any, cv: tuple, y: Any) -> Linearization:
        if made and made[-1][0] is x and made[-1][1] is cv:
            with contextlib.suppress(IndexError):  # another thread took it first
                return made.pop()[2]
        pure = fn.pure(cv)
        if pure is not None:
            try:
                with quiet(), t.no_grad(), FORWARD_AD:
                    value, linear = trace_linear_map(pure, x)
                    if agrees_with_jvp(pure, x, linear):
                        return TracedLinearization(value, linear, batching)
            except NotSupportedError:  # forward AD in use elsewhere: the dual tensors would meet it too
                raise
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
            made.append((problem.x, problem.context_values, lin))
    return linearizer
