"""The pieces of `di.scan` every engine shares: the carry's flattening and signature (tree structure,
shapes and dtypes, checked after each step), and the plain loop (the unbounded reference: whatever the
engine records, it keeps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from diface._arrays import ops_for
from diface._call.trees.registry import flattener_for, tree_paths
from diface._errors import ArgumentError, ShapeError

__all__ = ["Carry", "plain_loop", "run", "split_output", "stack_outputs"]


def _shape(a: Any) -> tuple:
    shape = getattr(a, "shape", ())
    try:
        return tuple(int(d) for d in shape)
    except TypeError:  # a symbolic shape (PyTensor): its static part
        static = getattr(getattr(a, "type", None), "shape", None)
        return tuple(static) if static is not None else ("?",) * int(getattr(a, "ndim", 0))


def _dtype(a: Any) -> str:
    if isinstance(a, (bool, int, float, complex)):
        return str(np.asarray(a).dtype)
    return str(getattr(a, "dtype", type(a).__name__)).replace("torch.", "").replace("mlx.core.", "")


class Carry:
    """The carry's structure: its flattener, tree structure, leaf paths, shapes and dtypes."""

    def __init__(self, carry: Any, label: str = "carry") -> None:
        self.flattener = flattener_for(carry)
        leaves, self.structure = self.flattener.flatten(carry)
        self.paths = [p for p, _ in tree_paths(carry, label)]
        if len(self.paths) != len(leaves):  # pragma: no cover - a registry whose paths skip leaves
            self.paths = [f"{label} leaf {i}" for i in range(len(leaves))]
        self.specs = [(_shape(a), _dtype(a)) for a in leaves]

    def flatten(self, carry: Any) -> list:
        return list(self.flattener.flatten(carry)[0])

    def unflatten(self, leaves: list) -> Any:
        return self.flattener.unflatten(self.structure, list(leaves))

    def check(self, new: Any, i: int | None) -> list:
        """`new`'s leaves, after checking it has the carry's tree structure, shapes and dtypes (`i`: the
        step, None where it is traced)."""
        where = "a step" if i is None else f"step {i}"
        try:
            leaves, structure = self.flattener.flatten(new)
        except Exception as e:
            raise ShapeError(f"di.scan: {where} returned a carry that cannot be flattened as a tree ({e})") from e
        if structure != self.structure or len(leaves) != len(self.specs):
            raise ShapeError(
                f"di.scan: {where} returned a carry of another tree structure than the carry it was given "
                f"(leaves {self.paths}); the carry must keep its structure across steps"
            )
        for path, (shape, dtype), leaf in zip(self.paths, self.specs, leaves, strict=True):
            got = (_shape(leaf), _dtype(leaf))
            if got != (shape, dtype):
                raise ShapeError(
                    f"di.scan: {where} changed {path} from shape {shape} and dtype {dtype} to shape {got[0]} "
                    f"and dtype {got[1]}; the carry must keep its shapes and dtypes across steps"
                )
        return list(leaves)


def split_output(result: Any, outputs: bool, i: int | None) -> tuple[Any, Any]:
    """(carry, output) of what `step` returned."""
    if not outputs:
        return result, None
    if not isinstance(result, tuple) or len(result) != 2:
        raise ArgumentError(
            f"di.scan with outputs=True: step must return a pair (carry, output), "
            f"{'a step' if i is None else f'step {i}'} returned "
            f"{type(result).__name__}"
        )
    return result


def stack_outputs(outs: list, stack: Callable[[list], Any] | None = None) -> Any:
    """The per-step output trees stacked leafwise along a new leading axis."""
    first = outs[0]
    flattener = flattener_for(first)
    _, structure = flattener.flatten(first)
    columns: list[list] = []
    for i, out in enumerate(outs):
        leaves, s = flattener.flatten(out)
        if s != structure:
            raise ShapeError(f"di.scan: step {i}'s output has another tree structure than step 0's")
        if not columns:
            columns = [[] for _ in leaves]
        for column, leaf in zip(columns, leaves, strict=True):
            column.append(leaf)
    stacked = [(stack or _stack)(column) for column in columns]
    return flattener.unflatten(structure, stacked)


def _stack(column: list) -> Any:
    ops = ops_for(column[0])
    if ops is None:
        return np.stack([np.asarray(a) for a in column])
    return ops.stack(column)


def plain_loop(
    step: Callable, carry: Any, n: int, outputs: bool, spec: Carry, stack: Callable[[list], Any] | None = None
) -> Any:
    """`carry = step(carry, i)` for i in range(n), checked at every step; with `outputs`, the stacked
    outputs too."""
    outs = []
    for i in range(n):
        carry, out = split_output(step(carry, i), outputs, i)
        spec.check(carry, i)
        if outputs:
            outs.append(out)
    if outputs:
        return carry, stack_outputs(outs, stack)
    return carry


def run(step: Callable, carry: Any, n: int, outputs: bool, start: int = 0, stack: Callable | None = None) -> Any:
    """Steps start..start+n-1 of an already checked `step`, as a plain loop: the final carry, or (carry,
    list of outputs) with `outputs` (stacked when `stack` is given)."""
    outs = []
    for i in range(start, start + n):
        r = step(carry, i)
        if outputs:
            carry, out = r
            outs.append(out)
        else:
            carry = r
    if not outputs:
        return carry
    return carry, (stack_outputs(outs, stack) if stack is not None else outs)
