"""`AutoTorch`: PyTorch autograd (reverse), forward-mode dual tensors (forward), `torch.func.vmap` batching.

Torch's part is how it linearizes f at a point (`diface/backends/torch/_linearize.py`): reverse mode
records f's graph on a fresh leaf once and pulls back through it (`torch.autograd.grad`, the graph
retained), forward mode pushes dual tensors through f (`torch.autograd.forward_ad`), batches of
products go through `torch.func.vmap` where that pays (decided once per preparation), and same-point
pushforwards evaluate a linear map traced once (`torch.func.linearize`'s construction, functionalized:
`trace_linear_map`). Jacobians, gradients, derivatives, pushforwards, pullbacks and same-point
preparations are the core's derivations on those linearizations (`diface/_derive`): a Jacobian call runs
f once and sweeps the basis in chunks within the memory of its result. `mode="auto"` (the default)
sweeps in the mode with fewer products, timing both at preparation where the counts are close.

Second order (`torch/_second_order.py`): a plain `AutoTorch()` runs reverse over reverse for Hessians
and Hessian-vector products (the gradient with `create_graph=True`, then backward passes through it),
which measured fastest, and reverse over forward for the second derivative of a scalar input;
`SecondOrder(AutoTorch(outer), AutoTorch(inner))` runs the composition it names (forward over reverse:
dual tensors through `torch.autograd.grad`; reverse over forward: `torch.autograd.grad` of a dual
tensor's tangent; forward over forward: nested `torch.func.jvp`).

Taylor mode (`torch/_taylor.py`): `taylor` nests `torch.func.jvp` `order` levels deep, vmapped over the
directions where f allows (the core's default, nested pushforward kernels, cannot run on torch: dual
tensors have one level per process). The exact Laplacian of a scalar f is the faster, timed at
preparation, of the sum of second coefficients over the basis of x and the Hessian's diagonal by reverse
over reverse (on a CPU the latter, by 2-5x); of a vector f, the Taylor sum.

Threads: a preparation may be shared by any number of threads. Torch keeps autograd, grad mode and vmap
per thread, and runs backward passes of several threads through one retained graph; forward-mode AD has
one level per process, so every forward-mode computation runs under one lock, `forward_ad_lock` (see
`torch/_modes.py`): forward-mode calls from several threads take turns, reverse-mode calls run side by
side. A user's own forward AD in another thread beside diface's forward mode takes the lock too
(`with diface.backends.torch.forward_ad_lock: ...`); calling diface's forward mode inside a
`dual_level()` block raises `NotSupportedError` and leaves the block's level intact.

Tensors: any tensor a user holds can come in (as x, a tangent, a context, y or an out= buffer):
transposed, sliced, expanded, requiring grad, a view of one that does, made under `torch.no_grad()` or
`torch.inference_mode()`; and calls may be made under either mode (`torch/_inputs.py`). NumPy arrays are
shared with torch (`torch.from_numpy`) and results come back as NumPy only for NumPy input; tensors
stay on their device. Nothing the user passes is written but y, out= and the Caches f writes, and no
result requires grad.

Modules, one job each (the names every engine uses, docs/add-a-backend.md), each importing only the ones
before it, none importing torch at module level: `_modes` (grad and inference mode, the forward-AD
level and `forward_ad_lock`, warning filters), `_inputs` (what users pass in, the guard around every
kernel), `_ops` (`TorchOps`), `_trace` (f on a recorded leaf, on dual tensors, or as a pure function),
`_batching` (a batch of products as a loop or through vmap), `_linearize`, `_second_order` (the four
compositions as `SecondOrderPlan`s), `_taylor`, `_sparsity_rules` and `_sparsity` (the ATen graph
interpreted on index sets), `_boundary` (torch outside `DifferentiateWith`), `_memory`
(`torch.utils.checkpoint` for `di.checkpoint`; `di.scan` as a `torch.autograd.Function` driven by the
checkpointing schedule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from ..._arrays import ArrayOps, framework_ops
from ..._backend import Backend
from ..._boundary import register_boundary
from ..._contexts import Cache
from ..._derive import LaplacianMethod, SecondOrderPlan, choose_kernel, linearized_products, same_point_products
from ..._derive.jacobian import jacobian_in
from ..._engines import register_engine
from ..._errors import ArgumentError
from ..._kernel import Kernel
from ..._linearization import Linearizer
from ..._memory.engines import register_memory
from ..._problem import Problem, check_output, dtype_of, shape_of
from ._inputs import META, fitted, prepared, private, usable
from ._linearize import (
    DualLinearization,
    GraphLinearization,
    forward_linearizer,
    gradient_kernel,
    reverse_linearizer,
    traced_linearizer,
)
from ._modes import forward_ad_lock, outside_inference_mode, torch
from ._ops import TorchOps
from ._second_order import plan_for
from ._taylor import laplacian_kernel, taylor_kernel
from ._trace import Function

__all__ = ["AutoTorch", "TorchOps", "forward_ad_lock"]

_MODES = ("auto", "forward", "reverse")


@dataclass(frozen=True)
class AutoTorch(Backend):
    """PyTorch: reverse mode through `torch.autograd.grad` on a fresh leaf, forward mode through dual
    tensors, batches of products through `torch.func.vmap` where that pays.

    Args:
        mode: "auto" (default), "forward" or "reverse": the mode `jacobian`, `gradient` and `derivative`
            sweep in; "auto" takes the one with fewer products (`torch.func.jacrev`-like for a gradient,
            `jacfwd`-like for a derivative), timing both at preparation where the counts are close.
            Pushforwards always run forward and pullbacks reverse; second-order operators run reverse
            over reverse (use `di.SecondOrder` for another composition).

    `f` is written with torch operations and receives `torch.Tensor`s. A NumPy `x` is shared with torch
    (no copy) and the results come back as NumPy arrays; a tensor `x` gives tensors on its device, in its
    dtype. In-place functions `f(y, x)` write into a tensor. Preparations may be shared by threads:
    forward-mode work takes turns on torch's one forward-AD level (see `forward_ad_lock`).

    Example:
        >>> import numpy as np, diface as di
        >>> import torch
        >>> f = lambda x: torch.sum(x**3)
        >>> di.gradient(f, di.AutoTorch(), np.array([1.0, 2.0]))
        array([ 3., 12.])
        >>> di.hessian(f, di.AutoTorch(), torch.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """

    mode: str = "auto"

    native_modes: ClassVar[frozenset[str]] = frozenset(("forward", "reverse"))
    supports_inplace: ClassVar[bool] = True
    #: vmap keeps gaining up to large batches; the core's memory budget caps a chunk of a sweep too
    max_batch_size: ClassVar[int] = 1024
    package: ClassVar[str] = "torch"
    extra: ClassVar[str] = "torch"

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ArgumentError(f"AutoTorch: mode must be 'auto', 'forward' or 'reverse', got {self.mode!r}")

    def array_ops(self, x: Any) -> ArrayOps:
        import torch

        if not isinstance(x, (torch.Tensor, np.ndarray, np.generic, float, int, list)):
            raise ArgumentError(f"AutoTorch takes torch tensors, NumPy arrays and numbers as x, got {type(x).__name__}")
        if isinstance(x, torch.Tensor) and x.is_meta:
            raise ArgumentError(META.format("x"))
        return framework_ops("torch")

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        """f evaluated once without autograd, on x and contexts as the kernels give them to f (so that an
        inference tensor or a closure over weights that require grad records nothing)."""
        caches = tuple(isinstance(c, Cache) for c in problem.contexts)
        with outside_inference_mode(), torch().no_grad():
            x = usable(problem.x, problem.x.device, "x")
            out = check_output(problem.f(x, *Function.context_values(problem.context_values, caches)))
        return shape_of(out), dtype_of(out)

    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        """The global pattern from f's ATen graph (see `diface.backends.torch._sparsity`)."""
        from ._sparsity import graph_sparsity

        with outside_inference_mode(), torch().no_grad():
            return graph_sparsity(problem.f, problem.x, problem.context_values, problem.y, order == 2)

    # -- first order: how torch linearizes; the operators are the core's, guarded ------------------
    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer:
        return reverse_linearizer(problem) if mode == "reverse" else forward_linearizer(problem)

    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        def build(p: Problem, ts: tuple) -> Kernel:
            linearizer = cast(Callable[..., DualLinearization], forward_linearizer(p, len(ts)))
            kernel = linearized_products(linearizer, p, True)
            if len(ts) > 1:
                return kernel
            # one tangent: one dual pass, nothing around it
            return kernel.replace(direct_tangent=lambda x, v, cv: linearizer(x, cv, None).one(v))

        return prepared(build, problem, tangents)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        def build(p: Problem, us: tuple) -> Kernel:
            linearizer = cast(Callable[..., GraphLinearization], reverse_linearizer(p, len(us)))
            kernel = linearized_products(linearizer, p, False)
            if len(us) > 1:
                return kernel

            def one(x: Any, u: Any, cv: tuple) -> Any:  # one cotangent: one backward pass, nothing around it
                lin = linearizer(x, cv, None)
                return lin.final(u if u.dtype == lin.out.dtype else u.to(lin.out.dtype))

            return kernel.replace(direct_tangent=one)

        return prepared(build, problem, cotangents, "a cotangent")

    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        return prepared(lambda p, ts: _same_point(traced_linearizer, p, True), problem, tangents)

    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        return prepared(lambda p, ts: _same_point(reverse_linearizer, p, False), problem, cotangents, "a cotangent")

    def prepare_gradient(self, problem: Problem) -> Kernel:
        """Reverse mode: `gradient_kernel` (a linearization swept by the core costs measurably more on
        small problems); forward mode: the core's sweep."""
        build = lambda p, mode: gradient_kernel(p) if mode == "reverse" else jacobian_in(self, p, mode)
        return prepared(lambda p: choose_kernel(self, p, lambda mode: build(p, mode)), problem)

    def prepare_derivative(self, problem: Problem) -> Kernel:
        return prepared(lambda p: Backend.prepare_derivative(self, p), problem)

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        return prepared(lambda p: Backend.prepare_jacobian(self, p), problem)

    # -- Taylor mode: nested torch.func.jvp, vmapped over the directions ---------------------------
    def prepare_taylor(self, problem: Problem, tangents: tuple, order: int) -> Kernel:
        """`order` nested `torch.func.jvp`s, vmapped over the tangents where f allows and it pays
        (`torch/_taylor.py`)."""
        return prepared(lambda p, ts: taylor_kernel(p, ts, order), problem, tangents)

    def prepare_laplacian(self, problem: Problem, method: LaplacianMethod) -> Kernel:
        """Exact: the second coefficients along the basis of x, vmapped in chunks and summed; Hutchinson's
        estimate is the core's, on `prepare_taylor`."""
        if method.method != "exact":
            return super().prepare_laplacian(problem, method)
        return prepared(laplacian_kernel, problem)

    # -- second order ----------------------------------------------------------------------------
    def second_order_backends(self) -> tuple[Backend, Backend]:
        auto = AutoTorch("auto")
        return auto, auto

    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoTorch):
            return None  # another engine inside: the core composes the two
        with outside_inference_mode():
            return plan_for(self, inner, fitted(problem))


def _same_point(make: Any, problem: Problem, forward: bool) -> Kernel:
    """Products at the preparation point, on a linearization made there once, on copies of x, y and the
    contexts (nothing the user later does to theirs may reach a kept graph or trace)."""
    problem = private(problem)
    return same_point_products(make(problem), problem, forward)


register_engine(AutoTorch, name="torch", namespace="torch")


def _boundary() -> Any:
    from ._boundary import TorchBoundary

    return TorchBoundary()


register_boundary("torch", _boundary)


def _memory_hooks() -> Any:
    from ._memory import Memory

    return Memory()


register_memory("torch", _memory_hooks)
