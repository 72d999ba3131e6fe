"""Inverse accumulation, the compiled sweeps (see `analysis.inverse`): each sweep is a list of zero-argument
steps over buffers allocated once, like the tape's own prepared sweeps (`sweeps.compile`, `sweeps.tangent`).

For one thread's replay and one plan, `Factors` computes the diagonal of every "diag" lump's A (the JVP
of its main nodes of a ones seed, which for a diagonal map is its diagonal) into one buffer, checked
in one pass; `PushSweep` (J⁻¹, the steps from last to first) and `PullSweep` (J⁻ᵀ, first to last) are
compiled per batch size: the right-hand sides (the JVP of a lump's coupled nodes, subtracted), the
divisions, the gathers of permutations, the LU solves of dense blocks and the VJP of the coupled nodes
(onto the passed-through slots) all write into fixed buffers with `out=`; the state of a slot is one
buffer, and a lump's flat solution is one buffer whose parts are the slots' (views).

The buffers are read by the sweeps of the thread that compiled them only (`Replay.sweeps` is
per-thread), and what a sweep returns is its own buffer: the caller copies it.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

import numpy as np

from ..data.graph import Tape
from ..prims.prim import reduce_axes
from ..sweeps.tangent import aligned
from .inverse_plan import Lump, Plan

__all__ = ["Factors", "PullSweep", "PushSweep", "bound", "jvp_steps", "solve"]

#: a node bound to a replay's buffers: (prim, input buffers, output buffer, params, input slots,
#: differentiable input flags, output slot, output shape, input shapes)
Bound = tuple

try:  # LU solves of dense blocks
    from scipy.linalg import lu_solve
except ImportError:  # pragma: no cover - SciPy is optional
    lu_solve = None


def bound(tape: Tape, bufs: list, order: list[int]) -> list[Bound]:
    slots, nodes = tape.slots, tape.nodes
    out = []
    for k in order:
        node = nodes[k]
        prim = node.prim
        diff = tuple(i not in prim.nondiff and slots[s].active for i, s in enumerate(node.inputs))
        ins = tuple(bufs[s] for s in node.inputs)
        shapes = tuple(slots[s].shape for s in node.inputs)
        out.append(
            (
                prim,
                ins,
                bufs[node.output],
                node.params,
                node.inputs,
                diff,
                node.output,
                slots[node.output].shape,
                shapes,
            )
        )
    return out


def _size(shape: tuple) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


# -- local sweeps over a lump's nodes ------------------------------------------------------------------------
def jvp_steps(order: list[Bound], tan: dict, lead: tuple, targets: dict | None = None, views: bool = True) -> list:
    """Steps computing the tangents of `order`'s outputs from the buffers in `tan` (batched along
    `lead`), each into a buffer of its own (`targets`: given ones, by slot), or a view of its input's
    tangent (`views`); `tan` gets them. The seeds are never written."""
    b = len(lead)
    steps: list = []
    for prim, ins, y, params, inputs, diff, output, shape, _shapes in order:
        ts = tuple(tan.get(s) if d else None for s, d in zip(inputs, diff))
        if all(t is None for t in ts):
            continue
        if b and prim.elementwise:
            ts = tuple(None if t is None else aligned(t, lead, len(shape)) for t in ts)
        target = None if targets is None else targets.get(output)
        if views and target is None and prim.viewable:
            v = prim.tangent_view(ins, ts, b, params)
            if v is not None and v.shape == lead + shape:
                tan[output] = v
                continue
        if target is None:
            dtype = np.result_type(*(t.dtype for t in ts if t is not None), y.dtype)
            target = np.empty(lead + shape, dtype)
        tan[output] = target
        steps.append(prim.jvp_step(ins, y, ts, b, target, params))
    return steps


def vjp_steps(order: list[Bound], adj: dict, lead: tuple, reach: frozenset) -> list:
    """Steps computing the cotangents of the `reach` inputs of `order`'s nodes from the buffers in
    `adj` (batched along `lead`); `adj` gets them. The seeds are never written: a slot seeded and
    reached gets a buffer of its own."""
    b = len(lead)
    owned: set[int] = set()  # slots whose buffer the steps may accumulate into
    count = Counter(s for _p, _i, _y, _q, inputs, diff, _o, _s, _h in order for s, d in zip(inputs, diff) if d)
    steps: list = []

    def accumulate(s: int, c: Any, dtype: Any) -> None:
        have = adj[s]
        if s in owned:
            steps.append(partial(np.add, have, c, have))
        else:
            target = adj[s] = np.empty(have.shape, np.result_type(have.dtype, dtype))
            owned.add(s)
            steps.append(partial(np.add, have, c, target))

    for prim, ins, y, params, inputs, diff, output, shape, shapes in reversed(order):
        g = adj.get(output)
        if g is None:
            continue
        for i, s in enumerate(inputs):
            if not diff[i] or s not in reach:
                continue
            full = lead + shapes[i]
            dtype = np.result_type(g.dtype, getattr(ins[i], "dtype", g.dtype))
            have = adj.get(s)
            if prim.scatter:  # adds into part of a zeroed target
                if have is None:
                    target = np.empty(full, dtype)
                    whole = prim.vjp_first_steps(i, ins, g, b, target, params)
                    adj[s] = target
                    owned.add(s)
                    if whole is not None:
                        steps += whole
                        continue
                    steps.append(partial(np.copyto, target, 0))
                elif s not in owned:
                    target = adj[s] = np.empty(full, np.result_type(have.dtype, dtype))
                    owned.add(s)
                    steps.append(partial(np.copyto, target, have))
                steps.append(prim.vjp_step(i, ins, y, g, b, adj[s], params))
                continue
            linear = prim.vjp_linear(i, ins, g, b, params)
            if (
                linear is not None
                and linear[0] == 1
                and have is None
                and count[s] == 1
                and linear[1].shape == full
                and linear[1].dtype == dtype
                and np.may_share_memory(linear[1], g)
            ):
                adj[s] = linear[1]  # the cotangent itself (a view of g): nothing to compute
                continue
            if prim.elementwise and shapes[i] != shape:  # computed in the output's shape, then summed
                big = np.empty(lead + shape, dtype)
                steps.append(prim.vjp_step(i, ins, y, g, b, big, params))
                small = np.empty(full, dtype)
                axes, kept = reduce_axes(big.shape, shapes[i], b)
                steps.append(partial(np.add.reduce, big, axes, None, small.reshape(kept), True))
                c = small
            else:
                c = np.empty(full, dtype)
                steps.append(prim.vjp_step(i, ins, y, g, b, c, params))
            if have is None:
                adj[s] = c
                owned.add(s)
            else:
                accumulate(s, c, dtype)
    return steps


# -- flat views ------------------------------------------------------------------------------------------------
def _parts(flat: np.ndarray, which: tuple, slots: list, lead: tuple) -> dict:
    """{slot: its part of `flat` (*lead, total), in its shape}: views."""
    out = {}
    offset = 0
    for s in which:
        shape = slots[s].shape
        m = _size(shape)
        part = flat[..., offset : offset + m].reshape(lead + shape)
        if not np.may_share_memory(part, flat):  # pragma: no cover - splitting the last axis is a view
            raise AssertionError("a part of a flat buffer is not a view")
        out[s] = part
        offset += m
    return out


def _flat_of(bufs: list, which: tuple, slots: list, lead: tuple, size: int, dtype: Any, steps: list) -> np.ndarray:
    """The slots' buffers as one (*lead, size) array: a view of the only one where it can be, else a
    buffer the steps (added now) copy them into."""
    if len(bufs) == 1:
        v = bufs[0].reshape((*lead, size))
        if np.may_share_memory(v, bufs[0]):
            return v
    cat = np.empty((*lead, size), dtype)
    for part, buf in zip(_parts(cat, which, slots, lead).values(), bufs):
        steps.append(partial(np.copyto, part, buf))
    return cat


def solve(factor: Any, flat: np.ndarray, transposed: bool) -> np.ndarray:
    """Rows r of `flat` solved against A (or Aᵀ): A x = r for each row."""
    kind, f = factor
    if kind == "lu":
        return lu_solve(f, flat.T, trans=1 if transposed else 0, check_finite=False).T
    a = f.T if transposed else f
    return np.linalg.solve(a, flat.T).T


def _solve_step(held: list, j: int, src: np.ndarray, dst: np.ndarray, transposed: bool) -> None:
    dst[...] = solve(held[0][j], src, transposed)


# -- the factors of "diag" lumps -----------------------------------------------------------------------------
class Factors:
    """The diagonals of the plan's "diag" lumps (`diag[j]`, None for the others), computed by `run`
    into one buffer; `run` returns None, or (lump index, flat element, value) of the first entry that
    is zero or not finite."""

    def __init__(self, tape: Tape, bufs: list, plan: Plan, mains: list, dtype: Any) -> None:
        slots = tape.slots
        diags = [j for j, lump in enumerate(plan.lumps) if lump.kind == "diag"]
        sizes = [_size(slots[plan.lumps[j].new[0]].shape) for j in diags]
        self.all = np.empty(sum(sizes), dtype)
        self.diag: list[Any] = [None] * len(plan.lumps)
        self.spans: list[tuple[int, int, int]] = []
        self.steps: list = []
        offset = 0
        for j, m in zip(diags, sizes):
            lump = plan.lumps[j]
            d, new = lump.dead[0], lump.new[0]
            view = self.all[offset : offset + m].reshape(slots[new].shape)
            tan = {d: np.ones(slots[d].shape, slots[d].dtype)}
            self.steps += jvp_steps(mains[j], tan, (), {new: view}, views=False)
            made = tan.get(new)
            if made is None:  # pragma: no cover - planning makes every new value depend on D
                self.steps.append(partial(np.copyto, view, 0))
            elif made is not view:
                self.steps.append(partial(np.copyto, view, made))
            self.diag[j] = view
            self.spans.append((j, offset, m))
            offset += m

    def run(self) -> tuple[int, int, Any] | None:
        for step in self.steps:
            step()
        a = self.all
        if a.all() and np.isfinite(a).all():
            return None
        for j, offset, m in self.spans:
            part = a[offset : offset + m]
            bad = (part == 0) | ~np.isfinite(part)
            if np.any(bad):
                where = int(np.flatnonzero(bad)[0])
                return j, where, part[where]
        return None  # pragma: no cover


# -- the sweeps ------------------------------------------------------------------------------------------------
class PushSweep:
    """J⁻¹ over a batch `lead` ((): one vector): `seed` is the output's tangent (written by the
    caller), `run(dense)` returns x's tangent (a buffer of this sweep); `dense[j]`: lump j's LU factors."""

    def __init__(self, tape: Tape, plan: Plan, coupled: list, lead: tuple, dtype: Any, factors: Factors) -> None:
        slots = tape.slots
        self.seed = np.empty(lead + slots[plan.output].shape, dtype)
        self.held: list = [None]
        state: dict[int, Any] = {plan.output: self.seed}
        steps: list = []
        for j in range(len(plan.lumps) - 1, -1, -1):
            lump: Lump = plan.lumps[j]
            rhs = [state.pop(s) for s in lump.new]
            if lump.coupled:  # dN - B dR: the JVP of the coupled nodes from the passed-through tangents
                tan = {s: state[s] for s in lump.kept}
                steps += jvp_steps(coupled[j], tan, lead)
                for i, s in enumerate(lump.new):
                    moved = tan.get(s)
                    if moved is not None:
                        r = np.empty(lead + slots[s].shape, np.result_type(rhs[i].dtype, moved.dtype))
                        steps.append(partial(np.subtract, rhs[i], moved, r))
                        rhs[i] = r
            if lump.kind == "diag":
                d = lump.dead[0]
                out = state[d] = np.empty(lead + slots[d].shape, dtype)
                steps.append(partial(np.divide, rhs[0], factors.diag[j], out))
                continue
            src = _flat_of(rhs, lump.new, slots, lead, lump.size, dtype, steps)
            dead = np.empty((*lead, lump.size), dtype)
            if lump.kind == "perm":
                order = np.concatenate(lump.gather) if lump.gather else np.zeros(0, np.intp)
                inverse = np.argsort(order).astype(np.intp)
                steps.append(partial(np.take, src, inverse, -1, dead, "clip"))
            else:
                two = (lambda a: a) if lead else (lambda a: a.reshape(1, -1))
                steps.append(partial(_solve_step, self.held, j, two(src), two(dead), False))
            state.update(_parts(dead, lump.dead, slots, lead))
        self.steps = steps
        self.result = state[plan.x]

    def run(self, dense: list) -> np.ndarray:
        self.held[0] = dense
        for step in self.steps:
            step()
        return self.result


class PullSweep:
    """J⁻ᵀ over a batch `lead` ((): one vector): `seed` is x's cotangent (written by the caller),
    `run(dense)` returns the output's cotangent (a buffer of this sweep)."""

    def __init__(self, tape: Tape, plan: Plan, coupled: list, lead: tuple, dtype: Any, factors: Factors) -> None:
        slots = tape.slots
        self.seed = np.empty(lead + slots[plan.x].shape, dtype)
        self.held: list = [None]
        state: dict[int, Any] = {plan.x: self.seed}
        steps: list = []
        for j, lump in enumerate(plan.lumps):
            given = [state.pop(s) for s in lump.dead]
            if lump.kind == "diag":
                s = lump.new[0]
                out = np.empty(lead + slots[s].shape, dtype)
                steps.append(partial(np.divide, given[0], factors.diag[j], out))
                made = {s: out}
            else:
                src = _flat_of(given, lump.dead, slots, lead, lump.size, dtype, steps)
                parts = np.empty((*lead, lump.size), dtype)
                if lump.kind == "perm":
                    order = np.concatenate(lump.gather) if lump.gather else np.zeros(0, np.intp)
                    steps.append(partial(np.take, src, order.astype(np.intp), -1, parts, "clip"))
                else:
                    two = (lambda a: a) if lead else (lambda a: a.reshape(1, -1))
                    steps.append(partial(_solve_step, self.held, j, two(src), two(parts), True))
                made = _parts(parts, lump.new, slots, lead)
            if lump.coupled:  # R̄ -= Bᵀ N̄: the VJP of the coupled nodes onto the passed-through slots
                adj = dict(made)
                steps += vjp_steps(coupled[j], adj, lead, lump.reach)
                for s in lump.kept:
                    back = adj.get(s)
                    if back is not None:
                        steps.append(partial(np.subtract, state[s], back, state[s]))
            state.update(made)
        self.steps = steps
        self.result = state[plan.output]

    def run(self, dense: list) -> np.ndarray:
        self.held[0] = dense
        for step in self.steps:
            step()
        return self.result
