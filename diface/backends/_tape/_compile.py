"""Prepared replays: a tape compiled once into a list of zero-argument steps over fixed buffers.

Every slot gets one buffer, allocated at preparation: inputs are copied into theirs at each call, a
view primitive (reshape, transpose, basic indexing, broadcast_to) makes its output a view of its input's
buffer and costs nothing at replay, every other step writes into its own buffer with `out=`. Constants
(slots that depend on no input) are not recomputed. The sweeps do the same for tangents and
cotangents; a batch of B tangents is one sweep over buffers with a leading axis of length B.

In the reverse sweep a slot's cotangent is written by its first contribution and accumulated by the
others (summation over the DAG), through a scratch buffer; slots that receive partial contributions
(indexing) are zeroed first. Nodes that do not depend on x, or that the output does not depend on, are
pruned from the sweeps.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ._graph import GUARD_OUTPUT, Tape
from ._prim import reduce_axes

__all__ = ["Forward", "Reverse", "Tangent"]


class Forward:
    """The value replay of a tape."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        slots = tape.slots
        live = tape.live_nodes()
        read = {s for k in live for s in tape.nodes[k].inputs} | {tape.output}
        bufs: list[Any] = [None] * len(slots)
        for s, slot in enumerate(slots):
            if slot.kind == "literal":
                bufs[s] = tape.values[s]
        bufs[tape.x] = np.empty(slots[tape.x].shape, slots[tape.x].dtype)
        self.loads = []  # (buffer, context index, path) copied in at each call
        for s, _kind, ci, path in tape.inputs:
            if s in read:
                bufs[s] = np.empty(slots[s].shape, slots[s].dtype)
                self.loads.append((bufs[s], ci, path))
        self.y_load = None
        if tape.y >= 0 and tape.y in read:
            bufs[tape.y] = np.empty(slots[tape.y].shape, slots[tape.y].dtype)
            self.y_load = bufs[tape.y]
        steps = []
        for k in live:
            node = tape.nodes[k]
            prim = node.prim
            ins = tuple(bufs[s] for s in node.inputs)
            if node.output == GUARD_OUTPUT:
                steps.append(prim.check_step(ins[0], node.params))
                continue
            slot = slots[node.output]
            if prim.viewable:
                v = prim.view(ins, **node.params)
                if v is not None and v.shape == slot.shape and v.dtype == slot.dtype:
                    bufs[node.output] = v
                    continue
            out = np.empty(slot.shape, slot.dtype)
            bufs[node.output] = out
            steps.append(prim.forward_step(ins, out, node.params))
        self.bufs = bufs
        self.steps = steps
        self.x_buf = bufs[tape.x]
        self.output = bufs[tape.output]

    def run(self, x: Any, cv: tuple, y: Any) -> None:
        """Load x, the context leaves and y into their buffers and replay."""
        np.copyto(self.x_buf, x)
        for buf, ci, path in self.loads:
            v = cv[ci]
            for key in path:
                v = v[key]
            np.copyto(buf, v)
        if self.y_load is not None:
            np.copyto(self.y_load, y)
        for step in self.steps:
            step()


def _aligned(buf: Any, lead: tuple, ndim: int) -> Any:
    """A batched buffer (leading axis) viewed with size-1 axes up to `ndim` trailing axes."""
    shape = buf.shape[len(lead) :]
    missing = ndim - len(shape)
    return buf if missing <= 0 else buf.reshape(lead + (1,) * missing + shape)


class _Scratch:
    """Reusable temporary buffers, one per shape and dtype (steps run one at a time)."""

    def __init__(self) -> None:
        self.bufs: dict[tuple, np.ndarray] = {}

    def __call__(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        key = (shape, dtype)
        buf = self.bufs.get(key)
        if buf is None:
            buf = self.bufs[key] = np.empty(shape, dtype)
        return buf


class Reverse:
    """The reverse sweep: cotangents of the output (a batch of `batch`, or one) to cotangents of x."""

    def __init__(self, tape: Tape, fwd: Forward, batch: int | None) -> None:
        slots, nodes = tape.slots, tape.nodes
        lead = () if batch is None else (batch,)
        b = len(lead)
        out_slot = slots[tape.output]
        self.seed = np.zeros(lead + out_slot.shape, out_slot.dtype)
        adj: dict[int, np.ndarray] = {tape.output: self.seed}
        contributions = []
        for k in tape.reverse_nodes():
            node = nodes[k]
            for i, s in enumerate(node.inputs):
                if i not in node.prim.nondiff and slots[s].active:
                    contributions.append((node, i, s))
        first: dict[int, int] = {}
        zeroed = []
        for n, (node, _i, s) in enumerate(contributions):
            if s not in adj:
                adj[s] = np.empty(lead + slots[s].shape, slots[s].dtype)
            if s not in first:
                first[s] = n
                if node.prim.scatter:
                    zeroed.append(adj[s])
        scratch = _Scratch()
        steps: list[Any] = [partial(np.copyto, buf, 0) for buf in zeroed]
        for n, (node, i, s) in enumerate(contributions):
            prim = node.prim
            ins = tuple(fwd.bufs[q] for q in node.inputs)
            y = fwd.bufs[node.output]
            g = adj[node.output]
            target = adj[s]
            assign = first[s] == n
            if prim.scatter:
                steps.append(prim.vjp_step(i, ins, y, g, b, target, node.params))
                continue
            linear = prim.vjp_linear(i, ins, g, b, node.params)
            if linear is not None:
                steps += _add_view(target, linear, assign, b, scratch)
                continue
            in_shape = slots[s].shape
            out_shape = slots[node.output].shape
            if prim.elementwise and in_shape != out_shape:
                big = scratch(lead + out_shape, target.dtype)
                steps.append(prim.vjp_step(i, ins, y, g, b, big, node.params))
                steps += _add_view(target, (1, big), assign, b, scratch)
            elif assign:
                steps.append(prim.vjp_step(i, ins, y, g, b, target, node.params))
            else:
                tmp = scratch(target.shape, target.dtype)
                steps.append(prim.vjp_step(i, ins, y, g, b, tmp, node.params))
                steps.append(partial(np.add, target, tmp, target))
        self.steps = steps
        x_adj = adj.get(tape.x)
        if x_adj is None:
            x_adj = np.zeros(lead + slots[tape.x].shape, slots[tape.x].dtype)
        self.result = x_adj

    def run(self) -> np.ndarray:
        for step in self.steps:
            step()
        return self.result


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    return len(shape) <= len(target) and all(n in (1, t) for n, t in zip(shape[::-1], target[::-1]))


def _add_view(target: np.ndarray, linear: tuple[int, Any], assign: bool, b: int, scratch: _Scratch) -> list:
    """Steps writing (assign) or adding `sign * view` into `target`, broadcasting a smaller view and
    summing a larger one (broadcast axes) down to the target's shape."""
    sign, view = linear
    if _broadcasts_to(view.shape, target.shape):
        if assign:
            return [partial(np.copyto, target, view) if sign == 1 else partial(np.negative, view, target)]
        return [partial(np.add if sign == 1 else np.subtract, target, view, target)]
    axes, kept = reduce_axes(view.shape, target.shape[b:], b)
    if assign:
        steps = [partial(np.add.reduce, view, axes, None, target.reshape(kept), True)]
        return steps if sign == 1 else [*steps, partial(np.negative, target, target)]
    small = scratch(target.shape, target.dtype)
    return [
        partial(np.add.reduce, view, axes, None, small.reshape(kept), True),
        partial(np.add if sign == 1 else np.subtract, target, small, target),
    ]


class Tangent:
    """The forward-mode sweep: tangents of x (a batch of `batch`, or one) to tangents of the output."""

    def __init__(self, tape: Tape, fwd: Forward, batch: int | None) -> None:
        slots, nodes = tape.slots, tape.nodes
        lead = () if batch is None else (batch,)
        b = len(lead)
        x_slot = slots[tape.x]
        self.seed = np.zeros(lead + x_slot.shape, x_slot.dtype)
        tan: dict[int, np.ndarray] = {tape.x: self.seed}
        steps = []
        for k in tape.forward_nodes():
            node = nodes[k]
            prim = node.prim
            slot = slots[node.output]
            ts = tuple(None if i in prim.nondiff else tan.get(s) for i, s in enumerate(node.inputs))
            if all(t is None for t in ts):
                continue
            if b and prim.elementwise:
                ts = tuple(None if t is None else _aligned(t, lead, len(slot.shape)) for t in ts)
            ins = tuple(fwd.bufs[q] for q in node.inputs)
            y = fwd.bufs[node.output]
            if prim.viewable:
                v = prim.tangent_view(ins, ts, b, node.params)
                if v is not None and v.shape == lead + slot.shape:
                    tan[node.output] = v
                    continue
            out = np.empty(lead + slot.shape, slot.dtype)
            tan[node.output] = out
            steps.append(prim.jvp_step(ins, y, ts, b, out, node.params))
        self.steps = steps
        result = tan.get(tape.output)
        if result is None:
            out_slot = slots[tape.output]
            result = np.zeros(lead + out_slot.shape, out_slot.dtype)
        self.result = result

    def run(self) -> np.ndarray:
        for step in self.steps:
            step()
        return self.result
