"""Prepared replays: a tape compiled once into a list of zero-argument steps over planned buffers (the
forward replay and the reverse sweep; the forward-mode sweep is `sweeps.tangent`).

The forward replay copies the inputs into buffers of their own at each call; a view primitive (reshape,
transpose, basic indexing, broadcast_to) makes its output a view of its input's buffer and costs nothing
at replay; every other step writes into a buffer with `out=`. Constants (slots that depend on no input)
are not recomputed. Buffers are planned by lifetime (`data.buffers`): a value that no sweep reads gives its
buffer back after its last reader, and an elementwise step may write over an input that dies there; the
values the sweeps read (`Tape.saved_slots`) are kept.

The sweeps do the same for tangents and cotangents; a batch of B vectors is one sweep over buffers with
a leading axis of length B. In the reverse sweep a slot's cotangent is written by its first contribution
and accumulated by the others; a slot with one contribution that is the cotangent of the node's output
itself (addition, reshape, transpose, a sum's broadcast) shares that buffer instead of copying it, and
slots that receive partial contributions (indexing) are zeroed just before. Nodes that do not depend on
x, or that the output does not depend on, are pruned from the sweeps.

A sweep whose result holds a NaN runs again as its strong twin (compiled then, once), whose ufunc
products are strong (0 * inf := 0, see `prims.elementwise.strong_multiply`): a zero cotangent routed into
a branch of `where` that was not taken, times a partial that is infinite there, gives 0.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

import numpy as np

from ..data.buffers import Arena, Storage
from ..data.graph import GUARD_OUTPUT, Tape
from ..prims.elementwise import guarded_vjp_step, nan_probe, run_steps, strong_multiply
from ..prims.partials import Arg
from ..prims.prim import HOLOMORPHIC, reduce_axes

__all__ = ["Forward", "Reverse"]


class Forward:
    """The value replay of a tape; `keep`: slots whose values must outlive the replay besides those the
    sweeps read and the output.

    Context leaves are read where they are: given the context values `cv` it will be called with, the
    replay reads those arrays themselves (no copy per call, which for a large data matrix costs as much
    as f), as long as each call passes the same array objects (`run` returns False when one differs:
    compile again without `cv`, which copies every leaf into a buffer of its own).
    """

    def __init__(self, tape: Tape, arena: Arena, keep: tuple = (), cv: tuple | None = None) -> None:
        self.tape = tape
        slots, nodes = tape.slots, tape.nodes
        live = tape.live_nodes(keep)
        kept = tape.saved_slots() | {tape.output, *keep}
        last: dict[int, int] = {}
        for j, k in enumerate(live):
            for s in nodes[k].inputs:
                last[s] = j
        store = Storage(arena.forward_pool())
        bufs: list[Any] = [None] * len(slots)
        for s, slot in enumerate(slots):
            if slot.kind == "literal":
                bufs[s] = tape.values[s]
        bufs[tape.x] = np.empty(slots[tape.x].shape, slots[tape.x].dtype)
        self.loads = []  # (buffer, context index, path) copied in at each call
        self.binds = []  # (array, context index, path): the call's array is the buffer
        for s, _kind, ci, path in tape.inputs:
            if s in last or s in kept:
                v = _bindable(cv, ci, path, slots[s])
                if v is not None:
                    bufs[s] = v
                    self.binds.append((v, ci, path))
                else:
                    bufs[s] = np.empty(slots[s].shape, slots[s].dtype)
                    self.loads.append((bufs[s], ci, path))
        self.y_load = None
        if tape.y >= 0 and (tape.y in last or tape.y in kept):
            bufs[tape.y] = np.empty(slots[tape.y].shape, slots[tape.y].dtype)
            self.y_load = bufs[tape.y]
        steps = []
        for j, k in enumerate(live):
            node = nodes[k]
            prim = node.prim
            ins = tuple(bufs[s] for s in node.inputs)
            if node.output == GUARD_OUTPUT:
                steps.append(prim.check_step(ins[0], node.params))
            else:
                slot = slots[node.output]
                out = None
                if prim.viewable:
                    v = prim.view(ins, **node.params)
                    if v is not None and v.shape == slot.shape and v.dtype == slot.dtype:
                        bufs[node.output] = v
                        store.view(node.output, node.inputs[0])
                        out = v
                if out is None:
                    if prim.inplace:
                        out = _over_dying_input(store, node, ins, slot, last, j)
                    if out is None:
                        out = store.new(node.output, slot.shape, slot.dtype)
                    bufs[node.output] = out
                    steps.append(prim.forward_step(ins, out, node.params))
                if node.output in kept:
                    store.keep(node.output)
            for s in set(node.inputs):
                if last[s] == j and s not in kept:
                    store.release(s)
        arena.kept = store.kept_raws()
        self.bufs = bufs
        self.steps = steps
        self.x_buf = bufs[tape.x]
        self.output = bufs[tape.output]
        #: a second-order tape computes its rules' partials here, at poles too (then multiplied by 0)
        self.quiet = tape.rules and tape.singular()

    def run(self, x: Any, cv: tuple, y: Any) -> bool:
        """Load x, the context leaves and y into their buffers and replay; False (nothing run) if a
        context leaf read in place is another array than at compilation."""
        for a, ci, path in self.binds:
            v = cv[ci]
            for key in path:
                v = v[key]
            if v is not a:
                return False
        np.copyto(self.x_buf, x)
        for buf, ci, path in self.loads:
            v = cv[ci]
            for key in path:
                v = v[key]
            np.copyto(buf, v)
        if self.y_load is not None:
            np.copyto(self.y_load, y)
        run_steps(self.steps, self.quiet)
        return True


def _bindable(cv: tuple | None, ci: int, path: tuple, slot: Any) -> Any:
    """The context leaf itself, where a replay may read it in place (an array of the recorded shape and
    dtype), else None."""
    if cv is None:
        return None
    v = cv[ci]
    try:
        for key in path:
            v = v[key]
    except (KeyError, IndexError, TypeError):
        return None
    if type(v) is np.ndarray and v.shape == slot.shape and v.dtype == slot.dtype:
        return v
    return None


def _over_dying_input(store: Storage, node: Any, ins: tuple, slot: Any, last: dict, j: int) -> Any:
    """The buffer of an input that dies at this elementwise step and fits its output exactly (the step
    then writes over it), or None."""
    allowed = node.prim.inplace
    for i, (s, buf) in enumerate(zip(node.inputs, ins)):
        if (
            (allowed is True or i in allowed)
            and last.get(s) == j
            and isinstance(buf, np.ndarray)
            and buf.shape == slot.shape
            and buf.dtype == slot.dtype
            and store.reusable(s, buf)
        ):
            store.take_over(s, node.output)
            return buf
    return None


class Reverse:
    """The reverse sweep: cotangents of the output (a batch of `batch`, or one) to cotangents of x;
    `strong`: the twin taking strong products (see the module docstring)."""

    def __init__(self, tape: Tape, fwd: Forward, batch: int | None, arena: Arena, strong: bool = False) -> None:
        slots, nodes = tape.slots, tape.nodes
        lead = () if batch is None else (batch,)
        b = len(lead)
        out_slot = slots[tape.output]
        self.seed = np.zeros(lead + out_slot.shape, out_slot.dtype)
        store = Storage(arena.sweep_pool())
        store.external(tape.output)
        adj: dict[int, Any] = {tape.output: self.seed}
        order = tape.reverse_nodes()
        wanted = {k: _contributions(nodes[k], slots) for k in order}
        count = Counter(s for k in order for _i, s in wanted[k])
        steps: list[Any] = []
        conj = _Conjugates(tape, fwd)
        for k in order:
            node = nodes[k]
            prim = node.prim
            ins = tuple(fwd.bufs[q] for q in node.inputs)
            y = fwd.bufs[node.output]
            if prim.complex == HOLOMORPHIC and slots[node.output].dtype.kind == "c":
                ins, y = conj.of(node, wanted[k])
            g = adj[node.output]
            for i, s in wanted[k]:
                shape, dtype = lead + slots[s].shape, slots[s].dtype
                first = s not in adj
                vjp_step = partial(guarded_vjp_step, prim) if strong else prim.vjp_step
                if prim.scatter:
                    if first:
                        target = adj[s] = store.new(s, shape, dtype)
                        whole = prim.vjp_first_steps(i, ins, g, b, target, node.params)
                        if whole is not None:
                            steps += whole
                            continue
                        steps.append(partial(np.copyto, target, 0))
                    steps.append(prim.vjp_step(i, ins, y, g, b, adj[s], node.params))
                    continue
                linear = prim.vjp_linear(i, ins, g, b, node.params)
                if linear is not None and not np.may_share_memory(linear[1], g):
                    linear = None  # a copy made now would not follow g: not a view after all
                if linear is not None and first and count[s] == 1 and linear[0] == 1:
                    shared = _shared(linear[1], shape, dtype)
                    if shared is not None:
                        adj[s] = shared
                        store.view(s, node.output)
                        continue
                if first and count[s] == 1 and linear is None:
                    small = _scaled_broadcast(prim, i, ins, g, b, shape, dtype, store, s, strong)
                    if small is not None:  # a constant cotangent times a number: computed on one element
                        adj[s], step = small
                        steps.append(step)
                        continue
                if first:
                    adj[s] = store.new(s, shape, dtype)
                target = adj[s]
                if linear is not None:
                    steps += _add_view(target, linear, first, b, store)
                elif prim.elementwise and slots[s].shape != slots[node.output].shape:
                    big, raw = store.temp(lead + slots[node.output].shape, dtype)
                    steps.append(vjp_step(i, ins, y, g, b, big, node.params))
                    steps += _add_view(target, (1, big), first, b, store)
                    store.done(raw)
                elif first:
                    steps.append(vjp_step(i, ins, y, g, b, target, node.params))
                else:
                    tmp, raw = store.temp(target.shape, dtype)
                    steps.append(vjp_step(i, ins, y, g, b, tmp, node.params))
                    steps.append(partial(np.add, target, tmp, target))
                    store.done(raw)
            store.release(node.output)
        self.steps = conj.steps + steps  # the conjugated values first, from this call's forward replay
        x_adj = adj.get(tape.x)
        if x_adj is None:
            x_adj = np.zeros(lead + slots[tape.x].shape, slots[tape.x].dtype)
        self.result = x_adj
        self.quiet = strong or tape.singular()
        #: what the strong twin is compiled from (None: this is one), and the twin once compiled
        self._again: tuple | None = None if strong or not tape.unbounded() else (tape, fwd, batch, arena)
        self._nan = None if self._again is None else nan_probe(self.result)
        self._twin: Reverse | None = None

    def run(self) -> np.ndarray:
        run_steps(self.steps, self.quiet)
        if self._nan is not None and self._nan():
            return self._strong()
        return self.result

    def _strong(self) -> np.ndarray:
        """The result of the strong twin (compiled on first use) for the same seed."""
        if self._twin is None:
            assert self._again is not None
            tape, fwd, batch, arena = self._again
            self._twin = Reverse(tape, fwd, batch, arena, strong=True)
        np.copyto(self._twin.seed, self.seed)
        return self._twin.run()


class _Conjugates:
    """The conjugated saved values a HOLOMORPHIC rule reads in the reverse sweep (see `Prim.complex`):
    one buffer per complex slot, written from the forward replay's at the start of the sweep (literals:
    once, now)."""

    def __init__(self, tape: Tape, fwd: Forward) -> None:
        self.tape, self.fwd = tape, fwd
        self.bufs: dict[int, Any] = {}
        self.steps: list[Any] = []

    def of(self, node: Any, wanted: list) -> tuple[tuple, Any]:
        """The node's inputs and output as its VJP rules read them: the complex ones it saves
        conjugated (the others as they are: a rule that does not read them gets them unchanged)."""
        bufs = self.fwd.bufs
        active = tuple(i for i, _s in wanted)
        inputs, output = node.prim.saves(active, node.params)
        ins = tuple(self._conj(s) if i in inputs else bufs[s] for i, s in enumerate(node.inputs))
        y = self._conj(node.output) if output else bufs[node.output]
        return ins, y

    def _conj(self, s: int) -> Any:
        v = self.fwd.bufs[s]
        slot = self.tape.slots[s]
        if slot.dtype.kind != "c" or v is None:
            return v
        c = self.bufs.get(s)
        if c is None:
            if slot.kind == "literal":
                c = v.conjugate() if isinstance(v, complex) else np.conjugate(v)
            else:
                c = np.empty(slot.shape, slot.dtype)
                self.steps.append(partial(np.conjugate, v, c))
            self.bufs[s] = c
        return c


def _scaled_broadcast(
    prim: Any, i: int, ins: tuple, g: Any, b: int, shape: tuple, dtype: Any, store: Storage, s: int, strong: bool
) -> tuple[Any, Any] | None:
    """For a cotangent `g` that is one value broadcast (a sum's cotangent, say) and an elementwise
    partial that is a number: the contribution as that value times the number, broadcast, and the step
    computing it (a strong product in a strong sweep); else None."""
    partials = getattr(prim, "partials", None)
    if partials is None:
        return None
    p = partials[i]
    if isinstance(p, Arg):
        p = ins[p]
    if (
        not isinstance(p, (int, float))
        or isinstance(p, bool)
        or g.size == 0
        or any(g.strides[b:])
        or not _broadcasts_to(g.shape, shape)
    ):
        return None
    one = g[(*(slice(None),) * b, *(slice(0, 1),) * (g.ndim - b), Ellipsis)]  # a view: the value per batch row
    small = store.new(s, one.shape, dtype)
    view = np.broadcast_to(small.reshape(one.shape[:b] + (1,) * (len(shape) - b)), shape)
    return view, partial(strong_multiply if strong else np.multiply, one, p, small)


def _contributions(node: Any, slots: list) -> list[tuple[int, int]]:
    nondiff = node.prim.nondiff
    return [(i, s) for i, s in enumerate(node.inputs) if i not in nondiff and slots[s].active]


def _shared(view: Any, shape: tuple, dtype: Any) -> Any:
    """The cotangent view as the whole cotangent of a slot (broadcast where smaller), or None."""
    if view.dtype != dtype or not _broadcasts_to(view.shape, shape):
        return None
    return view if view.shape == shape else np.broadcast_to(view, shape)


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    return len(shape) <= len(target) and all(n in (1, t) for n, t in zip(shape[::-1], target[::-1]))


def _add_view(target: np.ndarray, linear: tuple[int, Any], assign: bool, b: int, store: Storage) -> list:
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
    small, raw = store.temp(target.shape, target.dtype)
    store.done(raw)  # free again after these two steps
    return [
        partial(np.add.reduce, view, axes, None, small.reshape(kept), True),
        partial(np.add if sign == 1 else np.subtract, target, small, target),
    ]
