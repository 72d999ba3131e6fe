"""The user's `f` at one problem, called as torch needs it: on a leaf whose graph is recorded, on dual
tensors, or as a pure function of x for `torch.func` transforms.

Contexts and shadows (after DifferentiationInterface.jl's model): `f` receives each tensor context as a
fresh `detach()`ed alias of the user's tensor, so a Cache that `f` writes into starts every call with no
autograd history (its adjoint is zero in reverse mode, its tangent zero in forward mode) and the user's
tensors never keep a graph. Transforms of `torch.func` forbid writing into captured tensors, so there `f`
gets fresh scratch tensors in place of its Caches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._arrays import framework_ops
from ..._contexts import Cache
from ..._errors import NotSupportedError
from ..._problem import Problem
from ._inputs import context_tensor
from ._modes import DUAL_LEVEL, forward_ad, torch

__all__ = ["NESTED_DUAL", "NOT_TORCH", "Function", "vjp", "zeros_if_none"]

NOT_TORCH = (
    "AutoTorch: f turned a tensor being differentiated into a NumPy array (a NumPy function such as np.exp "
    "called on a torch tensor, .numpy(), ...): torch cannot differentiate through NumPy, and forward mode "
    "would silently give zeros; write f with torch operations (torch.exp, ...)"
)

NESTED_DUAL = (
    "AutoTorch: a forward-mode kernel was called inside f on one of its dual tensors (a pushforward nested in "
    "a pushforward, as the core's default derivations of higher orders do). torch has one forward-AD level "
    "per process, so the inner pushforward would drop the outer tangent and every higher derivative would "
    "come out zero: differentiate f in one call (di.taylor, di.hvp, ...) or nest torch.func.jvp yourself"
)


class Function:
    """The user's `f` at one problem: called on a tape or on dual tensors, or as a pure function of x."""

    def __init__(self, problem: Problem) -> None:
        t = torch()
        self.f = problem.f
        self.inplace = problem.inplace
        self.caches = tuple(isinstance(c, Cache) for c in problem.contexts)
        self.y_dtype = framework_ops("torch").result_type(problem.y_spec[1])
        self.tensor = t.Tensor
        self.grad_enabled = t.is_grad_enabled
        # what torch.no_grad() calls, for a tenth of its cost (1.5 us of a 30 us pushforward)
        self.set_grad_enabled = getattr(t._C, "_set_grad_enabled", t.set_grad_enabled)
        self.fwad = forward_ad()  # loaded before any forward-mode work (torch.func's included)

    def __call__(self, x: Any, cv: tuple, y: Any) -> Any:
        """f at x (a leaf, a dual tensor, ...), returning its output (the alias of y it wrote into).

        Tensor contexts and y are passed as fresh `detach()`ed aliases: what f writes lands in the user's
        memory, but the autograd history (and any dual tangent) stays on the alias, so a Cache starts each
        call with zero adjoint and tangent, and the user's tensors keep no graph."""
        if cv:
            cv = self.context_values(cv, self.caches)
        if y is None:
            out = self.f(x, *cv)
            return out if isinstance(out, self.tensor) else torch().as_tensor(out, dtype=self.y_dtype, device=x.device)
        y = y.detach()
        self.f(y, x, *cv)
        return y

    @staticmethod
    def context_values(cv: tuple, caches: tuple) -> tuple:
        """The context values as f receives them: tensors as fresh `detach()`ed aliases, or copies where
        f could not use the user's tensor (`context_tensor`)."""
        tensor = torch().Tensor
        return tuple(
            context_tensor(v, is_cache).detach() if isinstance(v, tensor) else v for v, is_cache in zip(cv, caches)
        )

    def pure(self, cv: tuple) -> Callable[[Any], Any] | None:
        """x -> f(x) for torch.func transforms, which forbid writing into captured tensors: Caches become
        fresh scratch tensors made inside. None for in-place functions (y must receive f(x))."""
        if self.inplace:
            return None
        t = torch()
        caches = self.caches
        cv = self.context_values(cv, caches) if cv else cv
        f, y_dtype = self.f, self.y_dtype

        def fn(x: Any) -> Any:
            args = tuple(
                t.empty_like(v) if is_cache and isinstance(v, t.Tensor) else v for v, is_cache in zip(cv, caches)
            )
            out = f(x, *args)
            return out if isinstance(out, t.Tensor) else t.as_tensor(out, dtype=y_dtype, device=x.device)

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
            with DUAL_LEVEL:
                if DUAL_LEVEL.inside and fwad.unpack_dual(x).tangent is not None:
                    raise NotSupportedError(NESTED_DUAL)
                DUAL_LEVEL.inside += 1
                try:
                    out = self(fwad.make_dual(x.detach(), t), cv, y)
                finally:
                    DUAL_LEVEL.inside -= 1
                value, tangent = fwad.unpack_dual(out)
        finally:
            self.set_grad_enabled(grad_enabled)
        if tangent is None and not self.checked:
            self.check_torch(x, cv, y)
        return value, zeros_if_none(tangent, value)

    #: f gave a dual pass no tangent once and was found not to go through NumPy (`check_torch`)
    checked = False

    def check_torch(self, x: Any, cv: tuple, y: Any) -> None:
        """After a dual pass whose output has no tangent: f does not depend on x, or it went through NumPy
        (`np.exp(x)` converts a dual tensor to NumPy without a word, dropping its tangent: every
        derivative would be zero). A recorded pass tells them apart, once per preparation: torch refuses
        to convert a tensor that requires grad."""
        t = torch()
        try:
            with t.enable_grad():
                self(x.detach().requires_grad_(), cv, None if y is None else y.detach().clone())
        except Exception as e:  # anything else f raises here is not this check's business
            if isinstance(e, RuntimeError) and "numpy()" in str(e):
                raise NotSupportedError(NOT_TORCH) from e
        self.checked = True

    def evaluate(self, x: Any, cv: tuple, y: Any) -> Any:
        """f(x) without a graph (its output, or y written)."""
        grad_enabled = self.grad_enabled()
        self.set_grad_enabled(False)
        try:
            return self(x, cv, y)
        finally:
            self.set_grad_enabled(grad_enabled)


def zeros_if_none(tangent: Any, like: Any) -> Any:
    return torch().zeros_like(like) if tangent is None else tangent


def vjp(out: Any, leaf: Any, cotangent: Any, create: bool = False) -> Any:
    """cotangent^T d out / d leaf (zero when out does not depend on leaf); the graph is kept."""
    t = torch()
    g = (
        t.autograd.grad(out, leaf, cotangent, retain_graph=True, create_graph=create, allow_unused=True)[0]
        if out.requires_grad
        else None
    )
    return t.zeros_like(leaf) if g is None else g
