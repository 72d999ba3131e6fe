"""`AutoTorch`: PyTorch autograd (reverse), forward-mode dual tensors (forward), `torch.func.vmap` batching.

What runs natively, in each mode (`mode` only picks what `jacobian`, `gradient` and `derivative` sweep in;
pushforwards are always forward mode and pullbacks always reverse mode):

| operator | reverse | forward |
| --- | --- | --- |
| pullback | one forward pass on a fresh leaf, `torch.autograd.grad` per cotangent | same |
| pushforward | dual tensors (`torch.autograd.forward_ad`) per tangent | same |
| gradient | `torch.autograd.grad` of the scalar output | pushforwards of the input basis |
| jacobian | one forward pass, pullbacks of the output basis | pushforwards of the input basis |
| derivative | pullbacks of the output basis | one pushforward with seed 1 |
| hvp, hessian, second_derivative | double backward (reverse over reverse) | same |

Same-point preparations keep what they can: a pushforward's linear map traced by `torch.func.linearize`,
a pullback's forward pass, an hvp's gradient graph.

A batch of products (several tangents, or the rows of a basis) runs either one product at a time or all
together through `torch.func.vmap` (over `torch.autograd.grad` for pullbacks, over `torch.func.jvp` for
pushforwards). Preparation decides, once, at the preparation point: it tries vmap (which some functions
refuse: an in-place `f(y, x)`, `.item()` and a branch on it, ...) and keeps it where it beats the batch
size times one product. Unprepared calls loop, except over 16 or more products, where they try vmap first.

Contexts and shadows (after DifferentiationInterface.jl's model): `f` receives each tensor context as a
fresh `detach()`ed alias of the user's tensor, so a Cache that `f` writes into starts every call with no
autograd history (its adjoint is zero in reverse mode, its tangent zero in forward mode) and the user's
tensors never keep a graph. Transforms of `torch.func` (used by vmap batching and by forward-over-forward)
forbid writing into captured tensors, so there `f` gets fresh scratch tensors in place of its Caches.

Second order: a plain `AutoTorch(...)` computes `hvp`, `hessian` and `second_derivative` reverse over
reverse (`create_graph=True`, then pullbacks of the gradient), which measured fastest (hvp of Rosenbrock
with n = 100: 0.26 ms, against 0.94 ms forward over reverse with dual tensors and 1.4 ms with
`torch.func.jvp(torch.func.grad(f))`). `SecondOrder(AutoTorch(outer), AutoTorch(inner))` runs the
composition it names: forward over reverse (dual tensors through `torch.autograd.grad`), reverse over
forward (`torch.autograd.grad` of a dual tensor's tangent), reverse over reverse, and forward over forward
(nested `torch.func.jvp`: dual tensors cannot nest).

Threads: a preparation may be shared by any number of threads. Torch keeps autograd, grad mode and
vmap per thread, but forward-mode AD has one level per process (`dual_level()` fails while another is
open, in any thread, and `torch.func.jvp` counts its nesting in a Python global), so every forward-mode
computation (a pushforward, a forward sweep, the forward half of a second-order composition, the
`linearize` trace) runs under one lock, `forward_ad_lock`: forward-mode calls from several threads take
turns, reverse-mode calls run side by side. A user's own forward AD in another thread (a `dual_level()`
block, `torch.func.jvp`, `jacfwd`) is unaffected by diface's reverse mode; beside diface's forward mode
it must take the lock too (`with diface.backends.torch.forward_ad_lock: ...`), else one of the two meets
the other's level: diface raises `NotSupportedError`, the user's code torch's RuntimeError. Calling
diface's forward mode inside a `dual_level()` block raises `NotSupportedError` and leaves the block's
level intact.

Tensors: any tensor a user holds can come in (as x, a tangent, a context, y or an out= buffer):
transposed, sliced, expanded, requiring grad, a view of one that does, made under `torch.no_grad()` or
`torch.inference_mode()`; and calls may be made under either mode. Inference tensors and expanded views
that diface reads (x, tangents, Constants) are copied, and a Cache that is either gets a scratch copy; y
and out= buffers are written as they are, and an expanded one (whose elements share memory) is an
`ArgumentError`, as is a tensor on the meta device. Nothing the user passes is written but y, out= and
the Caches f writes, and no result requires grad.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._arrays import ArrayOps, framework_ops, register_array_ops
from .._backend import Backend
from .._contexts import Cache
from .._derive import SecondOrderPlan
from .._errors import ArgumentError, NotSupportedError, PreparationMismatchError
from .._problem import Kernel, Problem, check_output, dtype_of, shape_of, size_of

__all__ = ["AutoTorch", "TorchOps", "forward_ad_lock"]

_MODES = ("forward", "reverse")
#: batches of at least this many products try vmap in unprepared (single-use) calls
_SINGLE_USE_VMAP_FROM = 16
#: basis vectors per batched call in jacobian and hessian sweeps
_BASIS_CHUNK = 1024
#: bases up to this size keep their seeds (an identity) from preparation on
_CACHED_SEEDS_UP_TO = 2048
#: tests set this to "loop" or "vmap" to force a batching strategy where both work
_FORCE_BATCHING: str | None = None


# -- arrays --------------------------------------------------------------------------------------


class TorchOps(ArrayOps):
    """`torch.Tensor` arrays, on any device. Instantiated only once torch is imported."""

    name = "torch"
    mutable = True

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.array_types = (torch.Tensor,)

    def _dtype(self, dtype: Any) -> Any:
        return dtype if isinstance(dtype, self.torch.dtype) else _torch_dtype(np.dtype(dtype))

    def asarray(self, a: Any, like: Any = None) -> Any:
        torch = self.torch
        if isinstance(a, torch.Tensor):
            t = a
        else:
            t = _from_numpy(torch, np.asarray(a))
        device = like.device if isinstance(like, torch.Tensor) else None
        return t if device is None or t.device == device else t.to(device)

    def to_numpy(self, a: Any) -> np.ndarray:
        return a.numpy(force=True) if isinstance(a, self.torch.Tensor) else np.asarray(a)

    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.torch.zeros(shape, dtype=self._dtype(dtype), device=_device_of(like))

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.torch.eye(n, dtype=self._dtype(dtype), device=_device_of(like))

    def copy(self, a: Any) -> Any:
        return a.clone(memory_format=self.torch.contiguous_format)

    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.torch.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.torch.stack(list(arrays), dim=axis)

    def concat(self, arrays: list) -> Any:
        return self.torch.cat(list(arrays))

    def unstack(self, a: Any) -> list:
        return list(a.unbind(0))

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return self.torch.movedim(a, source, destination)

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        torch = self.torch
        device = _device_of(like)
        rows = torch.zeros((hi - lo, n), dtype=self._dtype(dtype), device=device)
        index = torch.arange(hi - lo, device=device)
        rows[index, index + lo] = 1
        return rows.reshape((hi - lo, *shape))

    def vdot(self, a: Any, b: Any) -> Any:
        return self.torch.sum(a * b)

    def max(self, a: Any) -> Any:
        return self.torch.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        torch = self.torch
        if not isinstance(b, torch.Tensor):
            return torch.clamp(a, min=b)
        if not isinstance(a, torch.Tensor):
            return torch.clamp(b, min=a)
        return torch.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.torch.imag(a)

    def check_writable(self, a: Any, label: str = "an out= buffer") -> None:
        """Raise `ArgumentError` unless results can be written into the tensor `a` (for the core to call
        on every out= buffer before writing any; `copyto` checks again)."""
        _check_writable(a, label)

    def copyto(self, dst: Any, src: Any) -> None:
        _check_writable(dst, "an out= buffer")
        dst.detach().copy_(src.detach() if isinstance(src, self.torch.Tensor) else self.asarray(src, like=dst))

    def flat_view(self, a: Any) -> Any:
        return a.view(-1)

    def shares_memory(self, a: Any, b: Any) -> bool:
        try:
            return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):  # tensors without storage (functorch wrappers)
            return True

    def equal(self, a: Any, b: Any) -> bool:
        return a.shape == b.shape and a.dtype == b.dtype and bool(self.torch.equal(a, b.to(a.device)))

    def astype(self, a: Any, dtype: Any) -> Any:
        return a.to(self._dtype(dtype))

    def result_type(self, *dtypes: Any) -> Any:
        return functools.reduce(self.torch.promote_types, (self._dtype(d) for d in dtypes))

    def is_floating(self, dtype: Any) -> bool:
        return self._dtype(dtype).is_floating_point

    def is_complex(self, dtype: Any) -> bool:
        return self._dtype(dtype).is_complex

    def eps(self, dtype: Any) -> float:
        return float(self.torch.finfo(self._dtype(dtype)).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return self.torch.promote_types(self._dtype(dtype), self.torch.complex64)


def _from_numpy(torch: Any, a: np.ndarray) -> Any:
    """`a` as a tensor sharing its memory; copied only where torch cannot share it (read-only memory,
    negative strides, non-native byte order)."""
    try:
        return torch.from_numpy(a if a.flags.writeable else a.copy())
    except ValueError:  # negative strides, non-native byte order
        return torch.from_numpy(np.array(a, dtype=a.dtype.newbyteorder("="), order="C"))
    except TypeError as e:
        raise ArgumentError(f"AutoTorch: a NumPy array of dtype {a.dtype} has no torch equivalent ({e})") from e


@functools.cache
def _torch_dtype(dtype: np.dtype) -> Any:
    import torch

    return torch.from_numpy(np.zeros(0, dtype)).dtype


def _device_of(like: Any) -> Any:
    return getattr(like, "device", None) if like is not None and not isinstance(like, np.ndarray) else None


register_array_ops("torch", TorchOps)


# -- the backend ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AutoTorch(Backend):
    """PyTorch: reverse mode through `torch.autograd.grad` on a fresh leaf, forward mode through dual
    tensors, batches of products through `torch.func.vmap` where the function allows it.

    Args:
        mode: "reverse" (default) or "forward": the mode `jacobian`, `gradient` and `derivative` sweep
            in. Pushforwards always run forward and pullbacks reverse; second-order operators run reverse
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

    mode: str = "reverse"

    native_modes: ClassVar[frozenset[str]] = frozenset(_MODES)
    supports_inplace: ClassVar[bool] = True
    package: ClassVar[str] = "torch"
    extra: ClassVar[str] = "torch"
    cli_name: ClassVar[str] = "torch"

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ArgumentError(f"AutoTorch: mode must be 'reverse' or 'forward', got {self.mode!r}")

    def array_ops(self, x: Any) -> ArrayOps:
        import torch

        if not isinstance(x, (torch.Tensor, np.ndarray, np.generic, float, int, list)):
            raise ArgumentError(f"AutoTorch takes torch tensors, NumPy arrays and numbers as x, got {type(x).__name__}")
        if isinstance(x, torch.Tensor) and x.is_meta:
            raise ArgumentError(_META.format("x"))
        return framework_ops("torch")

    def array_namespace(self) -> Any:
        import torch

        return torch

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        """f evaluated once without autograd, on x and contexts as the kernels give them to f (so that an
        inference tensor or a closure over weights that require grad records nothing)."""
        caches = tuple(isinstance(c, Cache) for c in problem.contexts)
        with _outside_inference_mode(), _torch().no_grad():
            x = _usable(problem.x, problem.x.device, "x")
            out = check_output(problem.f(x, *_Function.context_values(problem.context_values, caches)))
        return shape_of(out), dtype_of(out)

    # -- first order -----------------------------------------------------------------------------
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        return _kernel(_pushforward_kernel, problem, tangents)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        return _kernel(_pullback_kernel, problem, cotangents, "a cotangent")

    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        return _kernel(_pushforward_same_point_kernel, problem, tangents)

    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        return _kernel(_pullback_same_point_kernel, problem, cotangents, "a cotangent")

    def prepare_gradient(self, problem: Problem) -> Kernel:
        return _kernel(_gradient_kernel if self.mode == "reverse" else _forward_jacobian_kernel, problem)

    def prepare_derivative(self, problem: Problem) -> Kernel:
        return _kernel(_derivative_kernel if self.mode == "forward" else _reverse_jacobian_kernel, problem)

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        return _kernel(_forward_jacobian_kernel if self.mode == "forward" else _reverse_jacobian_kernel, problem)

    # -- second order ----------------------------------------------------------------------------
    def second_order_backends(self) -> tuple[Backend, Backend]:
        reverse = AutoTorch("reverse")
        return reverse, reverse

    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoTorch):
            return None  # another engine inside: the core composes the two
        return _TorchNest(_PLANS[self.mode, inner.mode], inner, problem)


class _TorchNest(SecondOrderPlan):
    """Two torch modes nested: the kernels of the composition's `_Plan`."""

    def __init__(self, plan: type, inner: AutoTorch, problem: Problem) -> None:
        super().__init__(problem)
        self.plan, self.inner = plan, inner

    def _made(self, method: str, tangents: tuple | None = None) -> Kernel:
        if tangents is not None:
            build = lambda problem, tangents: getattr(self.plan(problem, self.inner), method)(tangents)
            return _kernel(build, self.problem, tangents)
        return _kernel(lambda problem: getattr(self.plan(problem, self.inner), method)(), self.problem)

    def hvp(self, tangents: tuple) -> Kernel:
        return self._made("hvp_kernel", tangents)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self._made("hvp_same_point_kernel", tangents)

    def hessian(self) -> Kernel:
        return self._made("hessian_kernel")

    def second_derivative(self) -> Kernel:
        return self._made("second_derivative_kernel")


# -- the user's function -------------------------------------------------------------------------


def _torch() -> Any:
    import torch

    return torch


def _grad_mode() -> Any:
    """Autograd on (a user may call us under `torch.no_grad()`); free when it already is."""
    torch = _torch()
    return contextlib.nullcontext() if torch.is_grad_enabled() else torch.enable_grad()


def _outside_inference_mode() -> Any:
    """Inference mode off (under `torch.inference_mode()` autograd records nothing: every derivative
    would come out zero); free when it is."""
    torch = _torch()
    return torch.inference_mode(False) if torch.is_inference_mode_enabled() else contextlib.nullcontext()


class _Function:
    """The user's `f` at one problem: called on a tape or on dual tensors, or as a pure function of x."""

    def __init__(self, problem: Problem) -> None:
        torch = _torch()
        self.f = problem.f
        self.inplace = problem.inplace
        self.caches = tuple(isinstance(c, Cache) for c in problem.contexts)
        self.y_dtype = framework_ops("torch").result_type(problem.y_spec[1])
        self.tensor = torch.Tensor
        self.grad_enabled = torch.is_grad_enabled
        # what torch.no_grad() calls, for a tenth of its cost (1.5 us of a 30 us pushforward)
        self.set_grad_enabled = getattr(torch._C, "_set_grad_enabled", torch.set_grad_enabled)
        self.fwad = _forward_ad()  # loaded before any forward-mode work (torch.func's included)

    def __call__(self, x: Any, cv: tuple, y: Any) -> Any:
        """f at x (a leaf, a dual tensor, ...), returning its output (the alias of y it wrote into).

        Tensor contexts and y are passed as fresh `detach()`ed aliases: what f writes lands in the user's
        memory, but the autograd history (and any dual tangent) stays on the alias, so a Cache starts each
        call with zero adjoint and tangent, and the user's tensors keep no graph."""
        if cv:
            cv = self.context_values(cv, self.caches)
        if y is None:
            out = self.f(x, *cv)
            return out if isinstance(out, self.tensor) else _torch().as_tensor(out, dtype=self.y_dtype, device=x.device)
        y = y.detach()
        self.f(y, x, *cv)
        return y

    @staticmethod
    def context_values(cv: tuple, caches: tuple) -> tuple:
        """The context values as f receives them: tensors as fresh `detach()`ed aliases, or copies where
        f could not use the user's tensor (`_context_tensor`)."""
        tensor = _torch().Tensor
        return tuple(
            _context_tensor(v, is_cache).detach() if isinstance(v, tensor) else v for v, is_cache in zip(cv, caches)
        )

    def pure(self, cv: tuple) -> Callable[[Any], Any] | None:
        """x -> f(x) for torch.func transforms, which forbid writing into captured tensors: Caches become
        fresh scratch tensors made inside. None for in-place functions (y must receive f(x))."""
        if self.inplace:
            return None
        torch = _torch()
        caches = self.caches
        cv = self.context_values(cv, caches) if cv else cv
        f = self.f

        def fn(x: Any) -> Any:
            args = tuple(
                torch.empty_like(v) if is_cache and isinstance(v, torch.Tensor) else v
                for v, is_cache in zip(cv, caches)
            )
            out = f(x, *args)
            return out if isinstance(out, torch.Tensor) else torch.as_tensor(out, dtype=self.y_dtype, device=x.device)

        return fn

    def record(self, x: Any, cv: tuple, y: Any) -> tuple[Any, Any]:
        """(leaf, output): f evaluated on a fresh leaf of x, its graph recorded (call under grad mode)."""
        leaf = x.detach().requires_grad_()
        return leaf, self(leaf, cv, y)

    def dual(self, x: Any, t: Any, cv: tuple, y: Any) -> tuple[Any, Any]:
        """(value, tangent) of f at x along t, through dual tensors (with autograd off: no graph is
        recorded, not even through tensors f closes over that require grad)."""
        fwad, grad_enabled = self.fwad, self.grad_enabled()
        self.set_grad_enabled(False)
        try:
            with _DUAL_LEVEL:
                out = self(fwad.make_dual(x.detach(), t), cv, y)
                value, tangent = fwad.unpack_dual(out)
        finally:
            self.set_grad_enabled(grad_enabled)
        return value, _zeros_if_none(tangent, value)


# -- the tensors a user passes ---------------------------------------------------------------------
#
# Any tensor a user holds can come in: a transposed or sliced view, a view whose elements share memory
# (`expand()`), a tensor that requires grad (a leaf, or a view of one), an inference tensor (made under
# `torch.inference_mode()`), a tensor on the meta device. The kernels read x, the tangents and the
# contexts, make x a leaf or dual, and write into y and out= buffers: `_kernel` fits what it is given to
# that once, at preparation, and `_guarded` at every call, copying only what cannot be used as it is
# (and only what diface reads, never what it writes into) and raising `ArgumentError` for the rest.

_META = (
    "AutoTorch: {} is on the 'meta' device, which holds shapes but no values to differentiate: pass a "
    "tensor on a real device (e.g. .to('cpu'))"
)


def _overlapping(t: Any) -> bool:
    """Whether two elements of `t` may share memory: a view made by `expand()`, broadcasting or
    `as_strided` (conservative for exotic strides; a contiguous tensor never does)."""
    if t.is_contiguous() or t.numel() == 0:
        return False
    reach = 0  # the farthest offset the smaller strides reach
    for stride, size in sorted((st, n) for st, n in zip(t.stride(), t.shape) if n > 1):
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


def _usable(t: Any, device: Any, label: str) -> Any:
    """x or a tangent as the kernels read it, make it a leaf or dual: `t` itself, or a contiguous copy of
    an inference tensor (autograd refuses those outside inference mode, and a dual one drops its
    tangent) or of a view whose elements share memory (`make_dual` writes the tangent in x's layout).
    Nothing is written into it. Raises for a tensor on the meta device or on another device than x."""
    if t.is_meta:
        raise ArgumentError(_META.format(label))
    if t.device != device:
        if label == "x":
            raise PreparationMismatchError(
                f"AutoTorch: x is on {t.device}, the preparation was made on {device}: prepare again with x on "
                f"{t.device}, or move x with x.to({str(device)!r})"
            )
        raise ArgumentError(f"AutoTorch: {label} is on {t.device}, x on {device}: move it with .to(x.device)")
    if t.is_inference() or _overlapping(t):
        return t.clone(memory_format=_torch().contiguous_format)
    return t


def _usable_all(tangents: tuple, device: Any, label: str) -> tuple:
    """`_usable` of each tangent (the tuple itself where all are usable as they are)."""
    usable = tuple(_usable(t, device, label) for t in tangents)
    return tangents if all(u is t for u, t in zip(usable, tangents)) else usable


def _context_tensor(v: Any, is_cache: bool) -> Any:
    """A tensor context as f can use it: `v`, or a contiguous copy of an inference tensor (autograd
    refuses those) and of a Cache whose elements share memory (f could not write into it; what f writes
    into a Cache is scratch, which nobody reads after the call)."""
    if v.is_meta:
        raise ArgumentError(_META.format("a context value"))
    if v.is_inference() or (is_cache and _overlapping(v)):
        return v.clone(memory_format=_torch().contiguous_format)
    return v


def _check_writable(t: Any, label: str) -> None:
    """Raise `ArgumentError` unless results can be written into `t` (y, an out= buffer)."""
    if t.is_meta:
        raise ArgumentError(_META.format(label))
    if _overlapping(t):
        raise ArgumentError(
            f"AutoTorch: {label} is a view whose elements share memory (made by expand(), broadcasting or "
            "as_strided), so results cannot be written into it: pass a tensor with memory of its own (e.g. "
            "a .clone() of it)"
        )


def _kernel(
    build: Callable[..., Kernel], problem: Problem, tangents: tuple | None = None, label: str = "a tangent"
) -> Kernel:
    """`build(problem[, tangents])`, made outside inference mode on the problem as the kernels can use it
    (x and the tangents `_usable`, contexts as f gets them, y writable), then `_guarded`."""
    device = problem.x.device
    with _outside_inference_mode():
        x = _usable(problem.x, device, "x")
        if problem.y is not None:
            _check_writable(problem.y, "y")
        contexts = tuple(
            c.with_value(_context_tensor(c.value, isinstance(c, Cache))) if isinstance(c.value, _torch().Tensor) else c
            for c in problem.contexts
        )
        problem = Problem(
            problem.f, x, contexts, problem.y, problem.ops, single_use=problem.single_use, y_spec=problem.y_spec
        )
        kernel = build(problem) if tangents is None else build(problem, _usable_all(tangents, device, label))
    return _guarded(kernel, device, label)


def _guarded(kernel: Kernel, device: Any, label: str) -> Kernel:
    """`kernel` called outside inference mode, on x and tangents made `_usable`, after checking y: every
    argument is checked before anything runs. The usual tensor (contiguous, on the kernel's device, not
    an inference tensor) is told apart by three attribute reads."""
    torch = _torch()
    inference_mode, no_inference_mode = torch.is_inference_mode_enabled, torch.inference_mode
    # on the CPU, `t.is_cpu` (False on the meta device too) costs a quarter of `t.device == device`
    cpu = device.type == "cpu"
    on_device = lambda t: t.device == device

    def guarded(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        if inference_mode():
            with no_inference_mode(False):
                return guarded(x, extra, cv, y, full)
        if not x.is_contiguous() or x.is_inference() or not (x.is_cpu if cpu else on_device(x)):
            x = _usable(x, device, "x")
        if extra is not None:
            for t in extra:
                if not t.is_contiguous() or t.is_inference() or not (t.is_cpu if cpu else on_device(t)):
                    extra = _usable_all(extra, device, label)
                    break
        if y is not None:
            _check_writable(y, "y")
        return kernel(x, extra, cv, y, full)

    return guarded


# -- torch's process-global state --------------------------------------------------------------------
#
# Forward-mode AD in torch has one level per process (`torch.autograd.forward_ad.dual_level` fails while
# another is open, in any thread) and `torch.func.jvp` counts its nesting in a Python global: two
# threads running forward mode at once get each other's dual tensors, wrong tangents and errors. So
# every forward-mode computation (dual tensors, `torch.func.jvp`, `linearize`'s trace) runs under one
# lock; reverse mode and vmap keep their state per thread in torch and take no lock. Python's warning
# filters are process-global too: the few places that silence vmap's warnings take the same lock.

#: held by diface around every use of torch's forward-mode AD and of Python's warning filters. A user who
#: runs forward AD of their own (`dual_level()`, `torch.func.jvp`, `jacfwd`, ...) in threads beside
#: diface's forward-mode calls takes it too, so that the two take turns: `with forward_ad_lock: ...`
forward_ad_lock = threading.RLock()

_NESTED = (
    "AutoTorch: forward mode needs torch's forward-AD level, and another one is open (torch allows one per "
    "process): a torch.autograd.forward_ad.dual_level() block or torch.func.jvp around this call, forward AD "
    "inside f, or forward AD in another thread. Call diface outside that block, and from other threads "
    "wrap your own forward-AD code in `with diface.backends.torch.forward_ad_lock:` so that they take turns"
)


def _nested(error: BaseException | None) -> bool:
    return isinstance(error, RuntimeError) and "Nested forward mode AD is not supported" in str(error)


class _ForwardAD:
    """`with _FORWARD_AD:` holds `forward_ad_lock` around `torch.func.jvp` (which opens the level itself),
    turning torch's error about a level already open into `NotSupportedError`."""

    def __enter__(self) -> None:
        forward_ad_lock.acquire()

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        forward_ad_lock.release()
        if _nested(error):
            raise NotSupportedError(_NESTED) from error


class _DualLevel(_ForwardAD):
    """`with _DUAL_LEVEL:` also opens torch's forward-AD level for dual tensors. Reentrant in the thread
    holding the lock (a loop of products opens one level for all of them); `depth` is only touched under
    the lock."""

    depth = 0

    def __enter__(self) -> None:
        forward_ad_lock.acquire()
        if self.depth == 0:
            try:
                _forward_ad().enter_dual_level()
            except BaseException as e:
                forward_ad_lock.release()
                if _nested(e):
                    raise NotSupportedError(_NESTED) from e
                raise
        self.depth += 1

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        self.depth -= 1
        if self.depth == 0:
            try:
                _forward_ad().exit_dual_level()
            finally:
                forward_ad_lock.release()
        else:
            forward_ad_lock.release()
        if _nested(error):
            raise NotSupportedError(_NESTED) from error


_FORWARD_AD = _ForwardAD()
_DUAL_LEVEL = _DualLevel()


@functools.cache
def _forward_ad() -> Any:
    """`torch.autograd.forward_ad`, ready: the first dual tensor of a process imports torch's jvp
    decompositions, which warn that `torch.jit.script` is deprecated (torch's concern, not the user's)."""
    import torch
    import torch.autograd.forward_ad as fwad

    with forward_ad_lock, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
        try:
            with fwad.dual_level():
                fwad.make_dual(torch.zeros(()), torch.zeros(()))
        except RuntimeError as e:
            if _nested(e):
                raise NotSupportedError(_NESTED) from e
            raise
    return fwad


def _zeros_if_none(tangent: Any, like: Any) -> Any:
    return _torch().zeros_like(like) if tangent is None else tangent


def _vjp(out: Any, leaf: Any, cotangent: Any, create: bool = False) -> Any:
    """cotangent^T d out / d leaf (zero when out does not depend on leaf); the graph is kept."""
    torch = _torch()
    g = (
        torch.autograd.grad(out, leaf, cotangent, retain_graph=True, create_graph=create, allow_unused=True)[0]
        if out.requires_grad
        else None
    )
    return torch.zeros_like(leaf) if g is None else g


# -- batches of products ---------------------------------------------------------------------------


class _Products(abc.ABC):
    """Products of one linear map with many vectors: `one(state, v) -> (aux, result)` for a vector and,
    where torch.func can batch them, `many(state, V) -> (aux, results)` for a stack `V`. `aux` is what
    comes for free on the way (the value, a gradient), or None."""

    #: whether `many` exists
    batchable: bool = True
    #: whether `one` computes with dual tensors (a loop of products then opens one level for all)
    dual: bool = False

    @abc.abstractmethod
    def one(self, state: Any, v: Any) -> tuple[Any, Any]: ...

    def many(self, state: Any, vs: Any) -> tuple[Any, Any]:
        raise TypeError(f"{type(self).__name__} cannot batch")  # never called when batchable is False


class _VjpProducts(_Products):
    """Pullbacks `v^T d out / d leaf` of a recorded graph; state `(out, leaf, ...)`; vmap over
    `torch.autograd.grad`."""

    def __init__(self, create: bool = False) -> None:
        torch = _torch()
        self.create = create

        def single(out: Any, leaf: Any, v: Any) -> Any:
            g = torch.autograd.grad(out, leaf, v, retain_graph=True, create_graph=create, allow_unused=True)[0]
            return torch.zeros_like(leaf) if g is None else g

        self._batched = torch.func.vmap(single, in_dims=(None, None, 0))

    def one(self, state: Any, v: Any) -> tuple[Any, Any]:
        return None, _vjp(state[0], state[1], v, self.create)

    def many(self, state: Any, vs: Any) -> tuple[Any, Any]:
        out, leaf = state[0], state[1]
        if not out.requires_grad:
            return None, _torch().zeros((vs.shape[0], *leaf.shape), dtype=leaf.dtype, device=leaf.device)
        return None, self._batched(out, leaf, vs)


class _JvpProducts(_Products):
    """Pushforwards of f at x; state `(x, cv, y)`; aux the value. One at a time through dual tensors,
    together through vmap over `torch.func.jvp` (not for in-place functions: y must receive f(x))."""

    dual = True

    def __init__(self, fn: _Function) -> None:
        self.fn = fn
        self.batchable = not fn.inplace

    def one(self, state: Any, v: Any) -> tuple[Any, Any]:
        x, cv, y = state
        return self.fn.dual(x, v, cv, y)

    def many(self, state: Any, vs: Any) -> tuple[Any, Any]:
        x, cv, _ = state
        func = _torch().func
        pure = self.fn.pure(cv)
        with _torch().no_grad(), _FORWARD_AD:
            values, tangents = func.vmap(lambda v: func.jvp(pure, (x,), (v,)))(vs)
        return values[0], tangents


class _Batching:
    """Runs a batch of products one at a time or all together; which, is decided once per kernel."""

    def __init__(self, products: _Products, single_use: bool) -> None:
        self.products = products
        self.single_use = single_use
        #: True: vmap, False: a loop, None: not decided yet (decided on the first large batch)
        self.together: bool | None = None if products.batchable else False

    def decide(self, state: Any, sample: Any, context: Callable[[], Any] = contextlib.nullcontext) -> None:
        """At preparation: try vmap on a sample batch, and keep it if it works and is faster."""
        if self.together is not None or self.single_use:
            return
        if len(sample) < 2 or _FORCE_BATCHING == "loop":
            self.together = False
            return
        stacked = _stack(sample)
        with _quiet(), context():
            try:
                self.products.many(state, stacked)
            except Exception:  # no batching rule, data-dependent control flow, writes into a Cache...
                self.together = False
                return
        if _FORCE_BATCHING == "vmap":
            self.together = True
            return
        # a loop costs about len(sample) single products: time one of them, not the whole loop (a
        # Jacobian's basis can be long and f expensive)
        single = lambda: self.products.one(state, sample[0])
        batched = lambda: self.products.many(state, stacked)
        timing = _best_times((batched, single), context, _device_of(stacked))
        self.together = timing[0] < len(sample) * timing[1]

    def run(self, state: Any, items: Any) -> tuple[Any, Any]:
        """(aux of the first product, results): a list of results, or a tensor stacking them.

        Undecided (single-use kernels, `_Pullbacks`), a large batch tries vmap and decides for good: vmap
        if it works, a loop if f refuses it. Threads sharing the kernel find the same, so which one
        writes the decision does not matter, and once written no call silences warnings again."""
        together = self.together
        if together is None:
            together = _FORCE_BATCHING != "loop" and (len(items) >= _SINGLE_USE_VMAP_FROM or _FORCE_BATCHING == "vmap")
            if together:
                try:
                    with _quiet():
                        results = self.products.many(state, _stack(items))
                except Exception:
                    self.together = together = False
                else:
                    self.together = True
                    return results
        if together:
            return self.products.many(state, _stack(items))
        one = self.products.one
        if len(items) == 1:
            aux, first = one(state, items[0])
            return aux, [first]
        with _DUAL_LEVEL if self.products.dual else contextlib.nullcontext():  # one level for the loop
            aux, first = one(state, items[0])
            return aux, [first, *(one(state, v)[1] for v in items[1:])]


def _stack(items: Any) -> Any:
    torch = _torch()
    return items if isinstance(items, torch.Tensor) else torch.stack(items)


def _as_tuple(results: Any) -> tuple:
    return tuple(results) if isinstance(results, list) else tuple(results.unbind(0))


def _as_stacked(results: Any) -> Any:
    return _torch().stack(results) if isinstance(results, list) else results


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence vmap's warnings about slow fallbacks while trying it (the timing decides). The warning
    filters are process-global: under `forward_ad_lock`, two threads' silences cannot interleave and
    leave them changed."""
    with forward_ad_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _best_times(calls: tuple, context: Callable[[], Any], device: Any) -> list[float]:
    """The best of three interleaved runs of each call, in seconds (synchronising an accelerator)."""
    torch = _torch()
    sync = torch.cuda.synchronize if device is not None and device.type == "cuda" else (lambda: None)
    best = [float("inf")] * len(calls)
    with _quiet():
        for _ in range(3):
            for k, call in enumerate(calls):
                with context():
                    sync()
                    start = time.perf_counter()
                    call()
                    sync()
                best[k] = min(best[k], time.perf_counter() - start)
    return best


class _Basis:
    """The standard basis of a space of `shape`, as stacked seed chunks `(k, *shape)` on a device."""

    def __init__(self, shape: tuple, dtype: Any, device: Any) -> None:
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.n = n = size_of(shape)
        self.bounds = [(lo, min(lo + _BASIS_CHUNK, n)) for lo in range(0, n, _BASIS_CHUNK)]
        self._cached = [self._make(lo, hi) for lo, hi in self.bounds] if n <= _CACHED_SEEDS_UP_TO else None

    def _make(self, lo: int, hi: int) -> Any:
        torch = _torch()
        seeds = torch.zeros((hi - lo, self.n), dtype=self.dtype, device=self.device)
        rows = torch.arange(hi - lo, device=self.device)
        seeds[rows, rows + lo] = 1
        return seeds.reshape((hi - lo, *self.shape))

    def chunks(self) -> Iterator[Any]:
        if self._cached is not None:
            yield from self._cached
        else:
            for lo, hi in self.bounds:
                yield self._make(lo, hi)

    def first(self) -> Any:
        return next(self.chunks())


def _sweep(batching: _Batching, state: Any, basis: _Basis) -> tuple[Any, Any]:
    """(aux of the first product, the results over the whole basis, stacked); basis.n must be > 0."""
    aux, parts = None, []
    for k, seeds in enumerate(basis.chunks()):
        a, results = batching.run(state, seeds)
        if k == 0:
            aux = a
        parts.append(_as_stacked(results))
    return aux, parts[0] if len(parts) == 1 else _torch().cat(parts)


def _trial_state(problem: Problem) -> tuple:
    """(x, context values, scratch y) at the preparation point, for trial runs that must not write into
    the user's y."""
    y = None if problem.y is None else problem.y.detach().clone()
    return problem.x, problem.context_values, y


def _private_copies(problem: Problem) -> tuple:
    """x, context values and y of the preparation, copied: a graph kept across calls holds these."""
    torch = _torch()
    copy = lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v
    return copy(problem.x), tuple(copy(v) for v in problem.context_values), copy(problem.y)


def _torch_y_dtype(problem: Problem) -> Any:
    return framework_ops("torch").result_type(problem.y_spec[1])


# -- first-order kernels -----------------------------------------------------------------------------


def _gradient_kernel(problem: Problem) -> Kernel:
    """Reverse-mode gradient: one forward pass on a fresh leaf, one `torch.autograd.grad` (the hot path:
    nothing else happens here)."""
    torch = _torch()
    fn = _Function(problem)
    grad, grad_enabled, enable_grad = torch.autograd.grad, torch.is_grad_enabled, torch.enable_grad

    def gradient_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        if not grad_enabled():
            with enable_grad():
                return gradient_kernel(x, extra, cv, y, full)
        leaf = x.detach().requires_grad_()
        out = fn(leaf, cv, None)
        g = grad(out, leaf, allow_unused=True)[0] if out.requires_grad else None
        return (out.detach() if full else None), (torch.zeros_like(x) if g is None else g)

    return gradient_kernel


def _pullback_kernel(problem: Problem, cotangents: tuple) -> Kernel:
    """One forward pass on a fresh leaf, then a pullback per cotangent (looped or vmapped)."""
    fn = _Function(problem)
    batching = _Batching(_VjpProducts(), problem.single_use)
    if len(cotangents) > 1 and not problem.single_use:
        x, cv, y = _trial_state(problem)
        with _grad_mode():
            batching.decide(fn.record(x, cv, y)[::-1], cotangents)

    torch = _torch()
    grad_enabled, enable_grad = torch.is_grad_enabled, torch.enable_grad

    def pullback_kernel(x: Any, cotangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
        if not grad_enabled():
            with enable_grad():
                return pullback_kernel(x, cotangents, cv, y, full)
        leaf, out = fn.record(x, cv, y)
        _, results = batching.run((out, leaf), cotangents)
        return (out.detach() if full else None), _as_tuple(results)

    return pullback_kernel


def _pullback_same_point_kernel(problem: Problem, cotangents: tuple) -> Kernel:
    """Pullbacks at the preparation point: the forward pass is recorded once, at preparation, on private
    copies of x, y and the contexts (nothing the user later does to theirs can reach the kept graph);
    a call runs only the backward passes."""
    fn = _Function(problem)
    x, cv, y = _private_copies(problem)
    with _grad_mode():
        leaf, out = fn.record(x, cv, y)
    value = out.detach()
    state = (out, leaf)
    batching = _Batching(_VjpProducts(), problem.single_use)
    with _grad_mode():
        batching.decide(state, cotangents)

    def pullback_same_point_kernel(x: Any, cotangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
        with _grad_mode():
            _, results = batching.run(state, cotangents)
        if y is not None:
            y.detach().copy_(value)  # an in-place f leaves f(x) in y after every call
            return y, _as_tuple(results)
        return (value.clone() if full else None), _as_tuple(results)

    return pullback_same_point_kernel


def _pushforward_kernel(problem: Problem, tangents: tuple) -> Kernel:
    """A pushforward per tangent: dual tensors, or vmap over `torch.func.jvp`."""
    batching = _Batching(_JvpProducts(_Function(problem)), problem.single_use)
    if len(tangents) > 1:
        batching.decide(_trial_state(problem), tangents)

    def pushforward_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
        value, results = batching.run((x, cv, y), tangents)
        return (value if y is None else y), _as_tuple(results)

    return pushforward_kernel


def _pushforward_same_point_kernel(problem: Problem, tangents: tuple) -> Kernel:
    """Pushforwards at the preparation point: `torch.func.linearize` traces the linear map once, at
    preparation (on private copies of x and the contexts), and a call evaluates it alone, about twice as
    fast as dual tensors. In-place functions, and functions the trace refuses, get `_pushforward_kernel`."""
    torch = _torch()
    x, cv, _ = _private_copies(problem)
    pure = _Function(problem).pure(cv)
    if pure is None:
        return _pushforward_kernel(problem, tangents)
    try:
        with _quiet(), torch.no_grad(), _FORWARD_AD:
            value, linear = torch.func.linearize(pure, x)
            linear(tangents[0])
    except Exception:  # not traceable (data-dependent shapes, non-torch code, ...)
        return _pushforward_kernel(problem, tangents)
    batching = _Batching(_LinearProducts(linear), problem.single_use)
    batching.decide(None, tangents)

    def pushforward_same_point_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
        _, results = batching.run(None, tangents)
        return (value.clone() if full else None), _as_tuple(results)

    return pushforward_same_point_kernel


class _LinearProducts(_Products):
    """A traced linear map (from `torch.func.linearize`) applied to vectors; vmapped for batches."""

    def __init__(self, linear: Callable[[Any], Any]) -> None:
        torch = _torch()
        self.linear = linear
        self._batched = torch.func.vmap(linear)
        self.no_grad = torch.no_grad

    def one(self, state: Any, v: Any) -> tuple[Any, Any]:
        with self.no_grad():
            return None, self.linear(v)

    def many(self, state: Any, vs: Any) -> tuple[Any, Any]:
        with self.no_grad():
            return None, self._batched(vs)


def _derivative_kernel(problem: Problem) -> Kernel:
    """Forward-mode derivative of a scalar x: one pushforward with seed 1."""
    fn = _Function(problem)
    seed = _torch().ones((), dtype=problem.x_dtype, device=problem.x.device)

    def derivative_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        value, d = fn.dual(x, seed, cv, y)
        return (value if y is None else y), d

    return derivative_kernel


def _reverse_jacobian_kernel(problem: Problem) -> Kernel:
    """One forward pass, then pullbacks of the output basis (the rows of J)."""
    torch = _torch()
    fn = _Function(problem)
    y_shape, x_shape = problem.y_spec[0], problem.x_shape
    basis = _Basis(y_shape, _torch_y_dtype(problem), problem.x.device)
    batching = _Batching(_VjpProducts(), problem.single_use)
    if basis.n and not problem.single_use:
        x, cv, y = _trial_state(problem)
        with _grad_mode():
            batching.decide(fn.record(x, cv, y)[::-1], basis.first())
    out_shape = y_shape + x_shape

    def reverse_jacobian_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        with _grad_mode():
            leaf, out = fn.record(x, cv, y)
            if basis.n == 0:
                return out.detach(), torch.zeros(out_shape, dtype=x.dtype, device=x.device)
            _, rows = _sweep(batching, (out, leaf), basis)
        return out.detach(), rows.reshape(out_shape)

    return reverse_jacobian_kernel


def _forward_jacobian_kernel(problem: Problem) -> Kernel:
    """Pushforwards of the input basis (the columns of J)."""
    torch = _torch()
    fn = _Function(problem)
    y_shape, x_shape = problem.y_spec[0], problem.x_shape
    basis = _Basis(x_shape, problem.x_dtype, problem.x.device)
    batching = _Batching(_JvpProducts(fn), problem.single_use)
    if basis.n:
        batching.decide(_trial_state(problem), basis.first())
    out_shape = y_shape + x_shape
    dtype = torch.promote_types(problem.x_dtype, _torch_y_dtype(problem))

    def forward_jacobian_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        if basis.n == 0:
            with torch.no_grad():
                value = fn(x, cv, y)
            return value, torch.zeros(out_shape, dtype=dtype, device=x.device)
        value, columns = _sweep(batching, (x, cv, y), basis)
        jac = torch.movedim(columns, 0, -1).reshape(out_shape)
        return (value if y is None else y), jac

    return forward_jacobian_kernel


# -- second order: one plan per (outer mode, inner mode) -----------------------------------------------


class _Plan(abc.ABC):
    """The second-order kernels of one composition. A subclass supplies the Hessian-vector products
    (`products()`, on the `setup(x, cv)` state of a call), the value and gradient of a call, whether
    the outer mode is reverse (products are Hessian rows) or forward (columns), and the second
    derivative of a scalar x."""

    outer_reverse: ClassVar[bool] = True

    def __init__(self, problem: Problem, inner: AutoTorch) -> None:
        self.problem = problem
        self.inner = inner
        self.fn = _Function(problem)
        self.single_use = problem.single_use

    @abc.abstractmethod
    def products(self) -> _Products: ...

    def setup(self, x: Any, cv: tuple) -> Any:
        return (x, cv)

    @abc.abstractmethod
    def value_and_gradient(self, state: Any, aux: Any, x: Any, cv: tuple) -> tuple[Any, Any]: ...

    @abc.abstractmethod
    def second_derivative(self, x: Any, cv: tuple) -> tuple[Any, Any, Any]:
        """(value, derivative, second derivative) at a scalar x."""

    # -- kernels -------------------------------------------------------------------------------------
    def _batching(self, sample: Any) -> _Batching:
        batching = _Batching(self.products(), self.single_use)
        if sample is not None and not self.single_use:
            with _grad_mode():
                state = self.setup(self.problem.x, self.problem.context_values)
                batching.decide(state, sample, _grad_mode)
        return batching

    def hvp_kernel(self, tangents: tuple) -> Kernel:
        batching = self._batching(tangents if len(tangents) > 1 else None)

        def hvp_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            with _grad_mode():
                state = self.setup(x, cv)
                aux, results = batching.run(state, tangents)
                gradient = self.value_and_gradient(state, aux, x, cv)[1] if full else None
            return None, gradient, _as_tuple(results)

        return hvp_kernel

    def hvp_same_point_kernel(self, tangents: tuple) -> Kernel:
        """At the preparation point: the plain hvp kernel, unless the composition keeps something."""
        return self.hvp_kernel(tangents)

    def hessian_kernel(self) -> Kernel:
        torch = _torch()
        x_shape = self.problem.x_shape
        basis = _Basis(x_shape, self.problem.x_dtype, self.problem.x.device)
        batching = self._batching(basis.first() if basis.n else None)
        out_shape = x_shape + x_shape
        outer_reverse = self.outer_reverse

        def hessian_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
            with _grad_mode():
                state = self.setup(x, cv)
                if basis.n == 0:
                    aux, hess = None, torch.zeros(out_shape, dtype=x.dtype, device=x.device)
                else:
                    aux, hess = _sweep(batching, state, basis)
                    hess = (hess if outer_reverse else torch.movedim(hess, 0, -1)).reshape(out_shape)
                if not full:
                    return None, None, hess
                value, gradient = self.value_and_gradient(state, aux, x, cv)
            return value, gradient, hess

        return hessian_kernel

    def second_derivative_kernel(self) -> Kernel:
        problem = self.problem
        y_shape, device = problem.y_spec[0], problem.x.device
        # pullbacks of the output basis: of y (in its dtype) and of dy/dx (in x's dtype)
        self.y_pullbacks = _Pullbacks(y_shape, _torch_y_dtype(problem), device, **self.y_pullback_options)
        self.d_pullbacks = _Pullbacks(y_shape, problem.x_dtype, device)

        def second_derivative_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
            with _grad_mode():
                return self.second_derivative(x, cv)

        return second_derivative_kernel

    #: how `second_derivative` pulls back y (`create`: keep a graph of the result; `loop`: no vmap)
    y_pullback_options: ClassVar[dict[str, bool]] = {}

    def _value_and_zero_gradient(self, x: Any, cv: tuple) -> tuple[Any, Any]:
        """For an empty x, where no product was computed."""
        torch = _torch()
        with torch.no_grad():
            return self.fn(x, cv, None), torch.zeros_like(x)


class _Pullbacks:
    """d out / d leaf for a scalar leaf, shaped like out (of a fixed shape): the pullbacks of the output
    basis, vmapped for 16 outputs or more unless `loop`."""

    def __init__(self, shape: tuple, dtype: Any, device: Any, create: bool = False, loop: bool = False) -> None:
        self.basis = _Basis(shape, dtype, device)
        self.batching = _Batching(_VjpProducts(create), single_use=True)
        if loop:
            self.batching.together = False

    def __call__(self, out: Any, leaf: Any) -> Any:
        basis = self.basis
        if basis.n == 0:
            return _torch().zeros(basis.shape, dtype=leaf.dtype, device=leaf.device)
        return _sweep(self.batching, (out, leaf), basis)[1].reshape(basis.shape)


class _ReverseOverReverse(_Plan):
    """Double backward: the gradient with `create_graph=True`, then its pullbacks."""

    y_pullback_options: ClassVar[dict[str, bool]] = {"create": True}

    def products(self) -> _Products:
        return _VjpProducts()

    def setup(self, x: Any, cv: tuple) -> Any:
        leaf, out = self.fn.record(x, cv, None)
        return _vjp(out, leaf, None, create=True), leaf, out

    def value_and_gradient(self, state: Any, aux: Any, x: Any, cv: tuple) -> tuple[Any, Any]:
        g, _, out = state
        return out.detach(), g.detach()

    def hvp_same_point_kernel(self, tangents: tuple) -> Kernel:
        """The gradient's graph is built once, at preparation, on private copies of x and the contexts;
        a call runs only the second backward passes."""
        x, cv, _ = _private_copies(self.problem)
        with _grad_mode():
            state = self.setup(x, cv)
        batching = _Batching(self.products(), self.single_use)
        with _grad_mode():
            batching.decide(state, tangents)
        gradient = state[0].detach()

        def hvp_same_point_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            with _grad_mode():
                _, results = batching.run(state, tangents)
            return None, (gradient.clone() if full else None), _as_tuple(results)

        return hvp_same_point_kernel

    def second_derivative(self, x: Any, cv: tuple) -> tuple[Any, Any, Any]:
        leaf, out = self.fn.record(x, cv, None)
        d = self.y_pullbacks(out, leaf)
        return out.detach(), d.detach(), self.d_pullbacks(d, leaf)


class _ForwardOverReverse(_Plan):
    """Dual tensors through `torch.autograd.grad` (the gradient's tangent along v is H v); batches
    through vmap over `torch.func.jvp(torch.func.grad_and_value(f))`."""

    outer_reverse = False
    y_pullback_options: ClassVar[dict[str, bool]] = {"loop": True}  # pullbacks of dual tensors: no vmap

    def products(self) -> _Products:
        return _ForwardOverReverseProducts(self.fn)

    def value_and_gradient(self, state: Any, aux: Any, x: Any, cv: tuple) -> tuple[Any, Any]:
        return aux if aux is not None else self._value_and_zero_gradient(x, cv)

    def second_derivative(self, x: Any, cv: tuple) -> tuple[Any, Any, Any]:
        fwad = self.fn.fwad
        with _DUAL_LEVEL:
            leaf = x.detach().requires_grad_()
            out = self.fn(fwad.make_dual(leaf, _torch().ones_like(x)), cv, None)
            d = self.y_pullbacks(out, leaf)
            value = fwad.unpack_dual(out).primal
            d, d2 = fwad.unpack_dual(d)
        return value.detach(), d.detach(), _zeros_if_none(d2, d).detach()


class _ForwardOverReverseProducts(_Products):
    dual = True

    def __init__(self, fn: _Function) -> None:
        self.fn = fn

    def one(self, state: Any, v: Any) -> tuple[Any, Any]:
        x, cv = state
        fwad = self.fn.fwad
        with _DUAL_LEVEL:
            leaf = x.detach().requires_grad_()
            out = self.fn(fwad.make_dual(leaf, v), cv, None)
            g = _vjp(out, leaf, None)
            value = fwad.unpack_dual(out).primal
            g, hv = fwad.unpack_dual(g)
        return (value.detach(), g.detach()), _zeros_if_none(hv, g).detach()

    def many(self, state: Any, vs: Any) -> tuple[Any, Any]:
        x, cv = state
        func = _torch().func
        gradient_and_value = func.grad_and_value(self.fn.pure(cv))
        with _torch().no_grad(), _FORWARD_AD:  # no_grad: keeps tensors f closes over out (torch.func ignores it)
            (g, value), (hv, _) = func.vmap(lambda v: func.jvp(gradient_and_value, (x,), (v,)))(vs)
        return (value[0], g[0]), hv


class _ReverseOverForward(_Plan):
    """`torch.autograd.grad` of a dual tensor's tangent (<grad f, v> for hvp); batches through vmap
    over `torch.func.grad` of `torch.func.jvp`. The gradient that `gradient_and_hvp` and
    `value_gradient_and_hessian` also return comes from the inner (forward-mode) backend."""

    def __init__(self, problem: Problem, inner: AutoTorch) -> None:
        super().__init__(problem, inner)
        self.gradient = inner.prepare_gradient(problem)

    def products(self) -> _Products:
        return _ReverseOverForwardProducts(self.fn)

    def value_and_gradient(self, state: Any, aux: Any, x: Any, cv: tuple) -> tuple[Any, Any]:
        return self.gradient(x, None, cv, None, True)

    def second_derivative(self, x: Any, cv: tuple) -> tuple[Any, Any, Any]:
        fwad = self.fn.fwad
        leaf = x.detach().requires_grad_()
        with _DUAL_LEVEL:
            out = self.fn(fwad.make_dual(leaf, _torch().ones_like(x)), cv, None)
            value, d = fwad.unpack_dual(out)
        d = _zeros_if_none(d, value)
        return value.detach(), d.detach(), self.d_pullbacks(d, leaf)


class _ReverseOverForwardProducts(_Products):
    def __init__(self, fn: _Function) -> None:
        self.fn = fn

    def one(self, state: Any, v: Any) -> tuple[Any, Any]:
        x, cv = state
        fwad = self.fn.fwad
        leaf = x.detach().requires_grad_()
        with _DUAL_LEVEL:
            out = self.fn(fwad.make_dual(leaf, v), cv, None)
            directional = fwad.unpack_dual(out).tangent
        if directional is None:
            return None, _torch().zeros_like(x)
        return None, _vjp(directional, leaf, None)

    def many(self, state: Any, vs: Any) -> tuple[Any, Any]:
        x, cv = state
        func = _torch().func
        pure = self.fn.pure(cv)
        hvp = lambda v: func.grad(lambda x: func.jvp(pure, (x,), (v,))[1])(x)
        with _torch().no_grad(), _FORWARD_AD:
            return None, func.vmap(hvp)(vs)


class _ForwardOverForward(_Plan):
    """Nested `torch.func.jvp` (dual tensors cannot nest): H v is the pushforward along v of the
    forward-mode gradient."""

    outer_reverse = False

    def products(self) -> _Products:
        return _ForwardOverForwardProducts(self.fn, self.problem)

    def value_and_gradient(self, state: Any, aux: Any, x: Any, cv: tuple) -> tuple[Any, Any]:
        return aux if aux is not None else self._value_and_zero_gradient(x, cv)

    def second_derivative(self, x: Any, cv: tuple) -> tuple[Any, Any, Any]:
        func = _torch().func
        pure = self.fn.pure(cv)
        one = _torch().ones_like(x)
        derivative = lambda x: func.jvp(pure, (x,), (one,))
        with _torch().no_grad(), _FORWARD_AD:
            (value, d), (_, d2) = func.jvp(derivative, (x,), (one,))
        return value, d, d2


class _ForwardOverForwardProducts(_Products):
    """H v as the pushforward along v of the gradient, itself the pushforwards of the input basis
    (vmapped where f allows, else looped; decided on the first call)."""

    def __init__(self, fn: _Function, problem: Problem) -> None:
        self.fn = fn
        self.basis = _Basis(problem.x_shape, problem.x_dtype, problem.x.device)
        self.vmap_basis: bool | None = None if _FORCE_BATCHING != "loop" else False

    def _value_and_gradient(self, pure: Callable, batched: bool) -> Callable:
        torch = _torch()
        func = torch.func
        x_shape = self.basis.shape

        def value_and_gradient(x: Any) -> tuple[Any, Any]:
            value, columns = None, []
            for seeds in self.basis.chunks():
                if batched:
                    values, part = func.vmap(lambda e: func.jvp(pure, (x,), (e,)))(seeds)
                    value = values[0]
                else:
                    pairs = [func.jvp(pure, (x,), (e,)) for e in seeds]
                    value, part = pairs[0][0], torch.stack([p[1] for p in pairs])
                columns.append(part)
            if not columns:  # an empty x
                return pure(x), torch.zeros_like(x)
            return value, torch.cat(columns).reshape(x_shape)

        return value_and_gradient

    def one(self, state: Any, v: Any) -> tuple[Any, Any]:
        with _torch().no_grad(), _FORWARD_AD:
            return self._one(state, v)

    def _one(self, state: Any, v: Any) -> tuple[Any, Any]:
        x, cv = state
        func = _torch().func
        pure = self.fn.pure(cv)
        if self.vmap_basis is None:
            try:
                with _quiet():
                    (value, g), (_, hv) = func.jvp(self._value_and_gradient(pure, True), (x,), (v,))
                self.vmap_basis = True
                return (value, g), hv
            except Exception:  # vmap refused f (a Cache written into, ...): loop over the basis
                self.vmap_basis = False
        (value, g), (_, hv) = func.jvp(self._value_and_gradient(pure, self.vmap_basis), (x,), (v,))
        return (value, g), hv

    def many(self, state: Any, vs: Any) -> tuple[Any, Any]:
        x, cv = state
        func = _torch().func
        value_and_gradient = self._value_and_gradient(self.fn.pure(cv), True)
        with _torch().no_grad(), _FORWARD_AD:
            (value, g), (_, hv) = func.vmap(lambda v: func.jvp(value_and_gradient, (x,), (v,)))(vs)
        return (value[0], g[0]), hv


_PLANS: dict[tuple[str, str], type[_Plan]] = {
    ("reverse", "reverse"): _ReverseOverReverse,
    ("forward", "reverse"): _ForwardOverReverse,
    ("reverse", "forward"): _ReverseOverForward,
    ("forward", "forward"): _ForwardOverForward,
}
#: the `_Plan` method building each second-order kernel
