"""torch's side of `di.checkpoint` (and `di.scan`): `torch.utils.checkpoint.checkpoint` without reentry
(`use_reentrant=False`): the forward pass keeps only the function's inputs (its saved tensors are dropped
through saved-tensor hooks), and the backward pass runs the function again to rebuild them. Backward
passes with `create_graph=True` (reverse over reverse) recompute with the graph built, so the second order
diface runs on torch nests through it; forward-mode dual tensors pass through the recomputation, which
gives forward over reverse.

Under `torch.func.vmap` and `torch.func.jvp` the checkpoint runs as it is. Inside `torch.func.grad`, `vjp`,
`jacrev` or `hessian` it cannot: those transforms turn saved-tensor hooks off, so the call raises
`NotSupportedError` saying to differentiate with `torch.autograd` (which `AutoTorch` does; where it would
batch products with `torch.func`, it catches the refusal and loops over `torch.autograd` passes).

torch's side of `di.scan` (`Memory.scan`): a `torch.autograd.Function` driven by the schedule
(`diface._memory.schedule`). Its forward runs the loop under `no_grad`, keeping the snapshots the
schedule saves before its first reverse; its backward runs the rest of the schedule: `advance` under
`no_grad`, `reverse` as a recording of those steps from a snapshot and `torch.autograd.grad` through it.
Step evaluations: n (forward) + the schedule's advances after its first reverse + n (the reverses).

A backward with grad mode on (`create_graph=True`: second order, reverse over reverse) recomputes the
loop from the Function's saved inputs with the graph kept, so the derivative of the backward is right
(its memory is then not bounded). Where the Function cannot be used the loop runs plain (right, and
unbounded): under `torch.func` transforms or forward-mode AD (wrapped or dual tensors), with grad mode
off, when no carry tensor requires grad, or when a carry leaf is not a tensor. A step that reads a
tensor requiring grad from outside its carry (a closure) is refused at the first step
(`NotSupportedError`): the Function could not give that tensor its gradient; pass it in the carry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._call.trees.registry import flattener_for
from ..._errors import NotSupportedError
from ..._memory.loop import run
from ..._memory.schedule import Action, actions

__all__ = ["Memory"]


def _torch() -> Any:
    import torch

    return torch


class Memory:
    """torch's `MemoryHooks`."""

    def owns(self, a: Any) -> bool:
        return isinstance(a, _torch().Tensor)

    def checkpoint(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        import torch.utils.checkpoint

        if not torch.is_grad_enabled():
            return fn(*args, **kwargs)  # no graph is recorded: nothing to keep
        if not torch._C._autograd._saved_tensors_hooks_is_enabled():  # type: ignore[attr-defined]
            raise NotSupportedError(
                f"di.checkpoint({getattr(fn, '__name__', 'fn')}): torch.func.grad, vjp, jacrev and hessian turn off "
                "the saved-tensor hooks torch.utils.checkpoint needs; differentiate with torch.autograd "
                "(diface's AutoTorch does), or call the function without di.checkpoint inside torch.func"
            )
        return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False, **kwargs)

    def scan(self, step: Callable, carry: Any, n: int, schedule: Any, outputs: bool) -> Any:
        return _scan(step, carry, n, schedule, outputs)


def _stack(column: list) -> Any:
    return _torch().stack(column)


def _plain_only(leaves: list) -> bool:
    torch = _torch()
    if not torch.is_grad_enabled() or not leaves:
        return True
    if not all(isinstance(a, torch.Tensor) for a in leaves):
        return True
    if not any(a.requires_grad for a in leaves):
        return True
    from torch._C._functorch import is_functorch_wrapped_tensor

    if any(is_functorch_wrapped_tensor(a) for a in leaves):
        return True
    fwd = torch.autograd.forward_ad
    if fwd._current_level >= 0 and any(fwd.unpack_dual(a).tangent is not None for a in leaves):
        return True
    return False


class _Runner:
    """The loop's description, shared by the Function's forward and backward."""

    def __init__(self, step: Callable, carry: Any, n: int, schedule: list[Action], outputs: bool) -> None:
        self.step, self.n, self.outputs = step, n, outputs
        self.flattener = flattener_for(carry)
        leaves, self.structure = self.flattener.flatten(carry)
        self.count = len(leaves)
        self.actions = schedule
        first = next(k for k, a in enumerate(schedule) if a.kind == "reverse")
        self.first = first
        self.start = schedule[first].step
        self.prefix_saves = {a.step for a in schedule[:first] if a.kind == "save"}
        self.out_structure: Any = None
        self.out_flattener: Any = None
        self.out_count = 0
        self.evaluations = 0  # step evaluations (tests count them)

    def carry(self, leaves: list) -> Any:
        return self.flattener.unflatten(self.structure, list(leaves))

    def call(self, leaves: list, i: int) -> tuple[list, list]:
        """One step: (carry leaves, output leaves)."""
        self.evaluations += 1
        r = self.step(self.carry(leaves), i)
        if self.outputs:
            c, y = r
            flattener = flattener_for(y)
            ys, structure = flattener.flatten(y)
            if self.out_structure is None:
                self.out_flattener, self.out_structure, self.out_count = flattener, structure, len(ys)
            return list(self.flattener.flatten(c)[0]), list(ys)
        return list(self.flattener.flatten(r)[0]), []


def _differentiable(a: Any) -> bool:
    return bool(a.is_floating_point() or a.is_complex())


def _fresh(leaves: list) -> list:
    return [a.detach().requires_grad_() if _differentiable(a) else a.detach() for a in leaves]


def _refuse_closures(outs: list, fresh: list) -> None:
    """Raise where the step's graph reaches a tensor requiring grad other than the carry's."""
    mine = {id(a) for a in fresh}
    seen: set[int] = set()
    stack = [o.grad_fn for o in outs if getattr(o, "grad_fn", None) is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None and id(variable) not in mine:
            raise NotSupportedError(
                "di.scan on torch: step uses a tensor that requires grad from outside its carry (shape "
                f"{tuple(variable.shape)}); its gradient cannot flow through the checkpointed loop: pass it "
                "in the carry (step returning it unchanged), or use checkpoints=None"
            )
        stack.extend(f for f, _ in node.next_functions)


def _grads(outs: list, cts: list, xs: list, create: bool = False) -> list:
    torch = _torch()
    pairs = [(o, c) for o, c in zip(outs, cts, strict=True) if c is not None and o.requires_grad]
    wrt = [x for x in xs if x.requires_grad]
    got: list = []
    asked = bool(pairs and wrt)
    if asked:
        got = list(
            torch.autograd.grad(
                [o for o, _ in pairs], wrt, [c for _, c in pairs], allow_unused=True, create_graph=create
            )
        )
    it = iter(got)
    out = []
    for x in xs:
        g = next(it) if x.requires_grad and asked else None
        out.append(torch.zeros_like(x) if g is None and _differentiable(x) else g)
    return out


def _function() -> Any:
    torch = _torch()

    class ScanFunction(torch.autograd.Function):  # type: ignore[name-defined]
        @staticmethod
        def forward(ctx: Any, runner: _Runner, *leaves: Any) -> Any:
            ctx.runner = runner
            current = [a.detach() for a in leaves]
            snaps: dict[int, list] = {}
            outs: list[list] = []
            start: list = []
            for i in range(runner.n):
                if i in runner.prefix_saves:
                    snaps[i] = current
                if i == runner.start:
                    start = current
                if i == 0:  # once with the graph, to refuse closures over tensors requiring grad
                    with torch.enable_grad():
                        fresh = _fresh(current)
                        c, ys = runner.call(fresh, i)
                        _refuse_closures([*c, *ys], fresh)
                    c, ys = [a.detach() for a in c], [a.detach() for a in ys]
                else:
                    c, ys = runner.call(current, i)
                current = c
                if runner.outputs:
                    outs.append(ys)
            ctx.snaps, ctx.start = snaps, start
            ctx.save_for_backward(*leaves)
            stacked = [torch.stack(column) for column in zip(*outs, strict=True)] if runner.outputs else []
            result = [a.clone() if any(a is b for b in leaves) else a for a in current] + stacked
            ctx.mark_non_differentiable(*[a for a in result if not _differentiable(a)])
            return tuple(result)

        @staticmethod
        def backward(ctx: Any, *cts: Any) -> Any:
            runner: _Runner = ctx.runner
            k = runner.count
            ct = list(cts[:k])
            ct_ys = list(cts[k:])
            if torch.is_grad_enabled():  # create_graph: the backward is differentiated too
                # aliases of the inputs: one input computed from another (x and 2 * x in the carry) must not
                # pass its gradient to the other twice; the aliases keep the graph to the inputs
                with torch.enable_grad():
                    inputs = [a.view_as(a) if a.requires_grad else a for a in ctx.saved_tensors]
                    c, ys = _record(runner, inputs, 0, runner.n)
                    return (None, *_grads(c + ys, ct + _split_ys(ct_ys, 0, runner.n), inputs, create=True))
            snaps = dict(ctx.snaps)
            current, at = ctx.start, runner.start
            for action in runner.actions[runner.first :]:
                if action.kind == "advance":
                    with torch.no_grad():
                        for j in range(at, action.step):
                            current = runner.call(current, j)[0]
                    at = action.step
                elif action.kind == "save":
                    snaps[action.step] = current
                elif action.kind == "restore":
                    current, at = snaps[action.step], action.step
                elif action.kind == "free":
                    snaps.pop(action.step, None)
                else:
                    with torch.enable_grad():
                        fresh = _fresh(current)
                        c, ys = _record(runner, fresh, action.step, action.count)
                        ct = _grads(c + ys, ct + _split_ys(ct_ys, action.step, action.count), fresh)
                    current = []
            return (None, *ct)

    return ScanFunction


def _record(runner: _Runner, leaves: list, start: int, count: int) -> tuple[list, list]:
    """Steps start..start+count-1 recorded: (final carry leaves, their outputs' leaves, step-major)."""
    current, ys = leaves, []
    for i in range(start, start + count):
        current, y = runner.call(current, i)
        ys.extend(y)
    return current, ys


def _split_ys(ct_ys: list, start: int, count: int) -> list:
    """The cotangents of steps start..start+count-1's outputs, step-major (as `_record` lists them)."""
    out: list = []
    for i in range(start, start + count):
        out.extend(c[i] if c is not None else None for c in ct_ys)
    return out


_FUNCTION: list = []


def _scan(step: Callable, carry: Any, n: int, schedule: Any, outputs: bool) -> Any:
    flattener = flattener_for(carry)
    leaves, structure = flattener.flatten(carry)
    if n == 0 or _plain_only(list(leaves)):
        return run(step, carry, n, outputs, stack=_stack)
    runner = _Runner(step, carry, n, actions(n, schedule), outputs)
    if not _FUNCTION:
        _FUNCTION.append(_function())
    result = _FUNCTION[0].apply(runner, *leaves)
    final = flattener.unflatten(structure, list(result[: runner.count]))
    if not outputs:
        return final
    ys = runner.out_flattener.unflatten(runner.out_structure, list(result[runner.count :]))
    return final, ys
