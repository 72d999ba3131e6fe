"""`DifferentiateWith` with torch outside: `torch.autograd.Function`s for f, its pushforward, pullback and
hvp, each asking the inner backend (`dw.inner`) on host arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..._errors import NotSupportedError
from ._ops import TorchOps, exportable

__all__ = ["TorchBoundary"]

_OPS = TorchOps()


def _np(a: Any) -> np.ndarray:
    return _OPS.to_host(a)


def to_torch(a: np.ndarray, like: Any = None) -> Any:
    t = torch.from_dlpack(exportable(a))
    if like is not None and like.device != t.device:
        t = t.to(like.device)
    return t


def _constants(constants: tuple) -> tuple:
    return tuple(_OPS.to_host(c, "a constant") if isinstance(c, torch.Tensor) else c for c in constants)


def _in_backward() -> bool:
    """Whether torch's autograd engine is running a backward pass on this thread."""
    task_id = getattr(torch._C, "_current_graph_task_id", None)
    return task_id is not None and task_id() != -1


class TorchBoundary:
    """torch outside `DifferentiateWith` (a `diface._boundary.Boundary`)."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, torch.Tensor)

    def call(self, dw: Any, x: Any, constants: tuple) -> Any:
        return call(dw, x, constants)

    def inner_pushforward(self, f: Any, x: np.ndarray, t: np.ndarray, constants: tuple) -> np.ndarray | None:
        """With torch inside too, while torch's forward AD is taken by the outer engine (one level, and
        it is open), or inside torch's backward (reverse over reverse through the boundary), where dual
        tensors silently carry no tangent: J t by two reverse sweeps instead (for complex values too:
        the adjoint of torch's adjoint pullback is the pushforward)."""
        if torch.autograd.forward_ad._current_level < 0 and not _in_backward():
            return None
        cs = tuple(to_torch(c) if isinstance(c, np.ndarray) else c for c in constants)
        with torch.enable_grad():
            _, jt = torch.autograd.functional.jvp(lambda x: f(x, *cs), to_torch(x), to_torch(t))
        return _np(jt)


def call(dw: Any, x: Any, constants: tuple) -> Any:
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(np.asarray(x))
    return _Value.apply(x, dw, _constants(constants))


def _sequential(apply: Any, info: Any, in_dims: tuple, *args: Any) -> tuple[Any, int | None]:
    """A vmap rule: one call per batch entry (the inner engine sees one point at a time)."""
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    if all(in_dims[i] is None for i in tensors):
        return apply(*args), None
    moved = [a.movedim(in_dims[i], 0) if i in tensors and in_dims[i] is not None else a for i, a in enumerate(args)]
    rows = []
    for k in range(info.batch_size):
        row = [m[k] if i in tensors and in_dims[i] is not None else m for i, m in enumerate(moved)]
        rows.append(apply(*row))
    return torch.stack(rows), 0


class _Value(torch.autograd.Function):
    @staticmethod
    def forward(x: Any, dw: Any, constants: tuple) -> Any:
        return to_torch(dw.inner.value(_np(x), constants), x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        x, dw, constants = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.dw, ctx.constants = dw, constants

    @staticmethod
    def backward(ctx: Any, gy: Any) -> Any:
        (x,) = ctx.saved_tensors
        return _Pullback.apply(x, gy, ctx.dw, ctx.constants), None, None

    @staticmethod
    def jvp(ctx: Any, tx: Any, *_: Any) -> Any:
        (x,) = ctx.saved_tensors
        return _Pushforward.apply(x, tx, ctx.dw, ctx.constants)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, x: Any, dw: Any, constants: tuple) -> Any:
        return _sequential(_Value.apply, info, in_dims, x, dw, constants)


class _Pushforward(torch.autograd.Function):
    """(x, t) -> J(x) t."""

    @staticmethod
    def forward(x: Any, t: Any, dw: Any, constants: tuple) -> Any:
        return to_torch(dw.inner.pushforward(_np(x), _np(t), constants), x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        x, t, dw, constants = inputs
        ctx.save_for_backward(x, t)
        ctx.save_for_forward(x, t)
        ctx.dw, ctx.constants = dw, constants

    @staticmethod
    def backward(ctx: Any, w: Any) -> Any:
        x, t = ctx.saved_tensors
        # d/dx <w, J(x) t> = H_w t (the Hessian of <w, f>), d/dt = w J(x)
        gx = _Hvp.apply(x, w, t, ctx.dw, ctx.constants) if ctx.needs_input_grad[0] else None
        gt = _Pullback.apply(x, w, ctx.dw, ctx.constants) if ctx.needs_input_grad[1] else None
        return gx, gt, None, None

    @staticmethod
    def jvp(ctx: Any, tx: Any, tt: Any, *_: Any) -> Any:
        if tx is not None:  # forward over forward: f''(x)[t, tx], which no product of the inner backend gives
            raise NotSupportedError(
                f"DifferentiateWith({getattr(ctx.dw.f, '__name__', 'f')}, ...): forward mode over a forward-mode "
                "product does not cross the boundary; take second order as reverse over forward or forward "
                "over reverse (e.g. di.SecondOrder(di.AutoTorch(mode='forward'), di.AutoTorch(mode='reverse')))"
            )
        x, _ = ctx.saved_tensors
        return _Pushforward.apply(x, tt, ctx.dw, ctx.constants)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, x: Any, t: Any, dw: Any, constants: tuple) -> Any:
        return _sequential(_Pushforward.apply, info, in_dims, x, t, dw, constants)


class _Pullback(torch.autograd.Function):
    """(x, g) -> g J(x)."""

    @staticmethod
    def forward(x: Any, g: Any, dw: Any, constants: tuple) -> Any:
        return to_torch(dw.inner.pullback(_np(x), _np(g), constants), x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        x, g, dw, constants = inputs
        ctx.save_for_backward(x, g)
        ctx.save_for_forward(x, g)
        ctx.dw, ctx.constants = dw, constants

    @staticmethod
    def backward(ctx: Any, w: Any) -> Any:
        x, g = ctx.saved_tensors
        gx = _Hvp.apply(x, g, w, ctx.dw, ctx.constants) if ctx.needs_input_grad[0] else None
        gg = _Pushforward.apply(x, w, ctx.dw, ctx.constants) if ctx.needs_input_grad[1] else None
        return gx, gg, None, None

    @staticmethod
    def jvp(ctx: Any, tx: Any, tg: Any, *_: Any) -> Any:
        x, g = ctx.saved_tensors
        out = None
        if tx is not None:
            out = _Hvp.apply(x, g, tx, ctx.dw, ctx.constants)
        if tg is not None:
            more = _Pullback.apply(x, tg, ctx.dw, ctx.constants)
            out = more if out is None else out + more
        return out if out is not None else torch.zeros_like(x)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, x: Any, g: Any, dw: Any, constants: tuple) -> Any:
        return _sequential(_Pullback.apply, info, in_dims, x, g, dw, constants)


class _Hvp(torch.autograd.Function):
    """(x, g, v) -> the derivative of g J(x) along v; not differentiable again."""

    @staticmethod
    def forward(x: Any, g: Any, v: Any, dw: Any, constants: tuple) -> Any:
        return to_torch(dw.inner.hvp(_np(x), _np(g), _np(v), constants), x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.dw = inputs[3]

    @staticmethod
    def backward(ctx: Any, *_: Any) -> Any:
        raise ctx.dw.inner.third_order()

    @staticmethod
    def jvp(ctx: Any, *_: Any) -> Any:
        raise ctx.dw.inner.third_order()

    @staticmethod
    def vmap(info: Any, in_dims: tuple, x: Any, g: Any, v: Any, dw: Any, constants: tuple) -> Any:
        return _sequential(_Hvp.apply, info, in_dims, x, g, v, dw, constants)
