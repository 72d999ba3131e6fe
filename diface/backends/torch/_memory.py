"""torch's side of `di.checkpoint` (and `di.scan`): `torch.utils.checkpoint.checkpoint` without reentry
(`use_reentrant=False`): the forward pass keeps only the function's inputs (its saved tensors are dropped
through saved-tensor hooks), and the backward pass runs the function again to rebuild them. Backward
passes with `create_graph=True` (reverse over reverse) recompute with the graph built, so the second order
diface runs on torch nests through it; forward-mode dual tensors pass through the recomputation, which
gives forward over reverse.

Under `torch.func.vmap` and `torch.func.jvp` the checkpoint runs as it is. Inside `torch.func.grad`, `vjp`,
`jacrev` or `hessian` it cannot: those transforms turn saved-tensor hooks off, so the call raises
`NotSupportedError` saying to differentiate with `torch.autograd` (which `AutoTorch` does; where it would
batch products with `torch.func`, it catches the refusal and loops over `torch.autograd` passes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.utils.checkpoint

from ..._errors import NotSupportedError

__all__ = ["Memory"]


class Memory:
    """`MemoryHooks` for torch tensors."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, torch.Tensor)

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        if not torch.is_grad_enabled():
            return fn(*args, **kwargs)  # no graph is recorded: nothing to keep
        if not torch._C._autograd._saved_tensors_hooks_is_enabled():  # type: ignore[attr-defined]
            raise NotSupportedError(
                f"di.checkpoint({getattr(fn, '__name__', 'fn')}): torch.func.grad, vjp, jacrev and hessian turn off "
                "the saved-tensor hooks torch.utils.checkpoint needs; differentiate with torch.autograd "
                "(diface's AutoTorch does), or call the function without di.checkpoint inside torch.func"
            )
        return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False, **kwargs)
