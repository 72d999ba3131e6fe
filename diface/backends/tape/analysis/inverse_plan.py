"""Inverse accumulation, the plan: a tape cut into steps of constant width (see `analysis.inverse`).

The tape is in SSA form, so "which slot a step overwrites" is not written anywhere: it is read off
the liveness of the active values. Walking the active nodes in order (`Tape.forward_nodes`), a value
is live from the node that makes it to the last node that reads it as a differentiable input (the
output stays live to the end). The width after a node is the number of live elements (an array slot
counts each of its elements). A *cut* is a point where the width equals n = x.size; between two
consecutive cuts lies a *lump* (a single node where the program has constant width, the paper's
step), whose state before and after split into

- D: slots live before and dead after (the overwritten ones, k elements),
- R: slots live on both sides (passed through: the identity rows of the step's block),
- N: slots made in the lump and live after (k elements again, as both widths are n).

The lump's nodes are *main* when they read (transitively, inside the lump) a value of D, else
*side* (functions of R only: an MLP computing a coupling layer's scale from the untouched half).
The block is [[A, B], [0, I]] with A = dN/dD (k x k) and B = dN/dR. A width below n somewhere, or a
value of N made by a side node, makes J singular at every x: `Singular` names the node.

A lump's A is applied in one of three ways (`Lump.kind`):

- "diag": one slot in, one slot out of the same shape, all main nodes elementwise with their main
  inputs in the output's shape: A is diagonal (RealNVP/RevNet updates, tanh/softplus/exp, leapfrog
  kicks and drifts);
- "perm": the main nodes only move elements (reshape, transpose, indexing, setitem, concatenate)
  with fixed indices, and B = 0: A is a permutation, found at planning by moving element ids through
  them, and applied as a gather;
- "dense": anything else with k <= `MAX_DENSE`: A formed by k basis JVPs of the main nodes and
  LU-factored, once per linearization. Larger lumps have no plan (the core solves another way).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.graph import Tape

__all__ = ["MAX_DENSE", "Lump", "Plan", "Singular", "plan_inverse"]

#: the largest lump (elements overwritten) whose block is formed densely
MAX_DENSE = 2048
#: primitives that only move elements of their differentiable inputs (coefficient 1)
_MOVES = frozenset({"reshape", "transpose", "getitem", "setitem", "concatenate"})


class Singular(Exception):
    """J is singular at every x: `node` (a tape node index, or None) is where the width drops."""

    def __init__(self, node: int | None, why: str) -> None:
        super().__init__(why)
        self.node = node
        self.why = why


@dataclass
class Lump:
    """One step of the inverse sweeps (see the module docstring)."""

    nodes: list[int]
    dead: tuple[int, ...]
    kept: tuple[int, ...]
    new: tuple[int, ...]
    kind: str
    size: int
    #: the node named in messages (the last main node)
    anchor: int
    #: the nodes whose JVP carries dR to N (and whose VJP carries N's cotangent back to R), in order
    coupled: list[int] = field(default_factory=list)
    #: the slots those sweeps carry values for (R, side values, main values downstream of them)
    reach: frozenset = frozenset()
    #: "perm": for each slot of N, the flat positions (into the concatenated D) of its elements
    gather: tuple = ()
    #: the main nodes in order (the JVPs that form A)
    main: list[int] = field(default_factory=list)


@dataclass
class Plan:
    """The lumps of a tape in order; an empty list is the identity."""

    lumps: list[Lump]
    x: int
    output: int


def _size(shape: tuple) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _diff_inputs(node: Any, slots: list) -> list[int]:
    nondiff = node.prim.nondiff
    return [s for i, s in enumerate(node.inputs) if i not in nondiff and slots[s].active]


def plan_inverse(tape: Tape) -> Plan | None:
    """The lumps of `tape` (x and output of one size n), or None where a lump is larger than
    `MAX_DENSE` without structure; raises `Singular` where J is singular at every x."""
    slots, nodes = tape.slots, tape.nodes
    n = _size(slots[tape.x].shape)
    if tape.output == tape.x:
        return Plan([], tape.x, tape.output)
    if any(slots[nd.output].dtype.kind == "c" for nd in nodes):
        # complex values inside f (complex x and y held as real pairs): a step's width counts complex
        # numbers, not the real ones they hold, so the plan cannot tell narrowing; dense or Krylov instead
        return None
    if not slots[tape.output].active:
        raise Singular(None, "f's output does not depend on x")
    order = tape.forward_nodes()
    end = len(order)
    last: dict[int, int] = {}
    for j, k in enumerate(order):
        for s in _diff_inputs(nodes[k], slots):
            last[s] = j
    last[tape.output] = end
    if tape.x not in last:
        raise Singular(None, "f's output does not depend on x")
    _narrowing(tape, order)
    dying: dict[int, list[int]] = {}
    for s, j in last.items():
        dying.setdefault(j, []).append(s)
    cuts = [-1]
    width = n
    for j, k in enumerate(order):
        width += _size(slots[nodes[k].output].shape)
        width -= sum(_size(slots[s].shape) for s in dying.get(j, ()))
        if width == n:
            cuts.append(j)
    live = {tape.x}
    lumps = []
    for c0, c1 in itertools.pairwise(cuts):
        block = [order[j] for j in range(c0 + 1, c1 + 1)]
        after = set(live)
        for j in range(c0 + 1, c1 + 1):
            after.add(nodes[order[j]].output)
            after.difference_update(dying.get(j, ()))
        lump = _lump(tape, block, live, after)
        if lump is None:
            return None
        lumps.append(lump)
        live = after
    return Plan(_merged(lumps), tape.x, tape.output)


def _merged(lumps: list[Lump]) -> list[Lump]:
    """Consecutive permutations where the second moves exactly what the first made: one gather."""
    out: list[Lump] = []
    for lump in lumps:
        prev = out[-1] if out else None
        if prev is not None and prev.kind == lump.kind == "perm" and prev.new == lump.dead and prev.kept == lump.kept:
            first = np.concatenate(prev.gather) if prev.gather else np.zeros(0, np.intp)
            gather = tuple(first[g] for g in lump.gather)
            nodes = prev.nodes + lump.nodes
            out[-1] = Lump(
                nodes, prev.dead, prev.kept, lump.new, "perm", prev.size, lump.anchor, gather=gather, main=nodes
            )
        else:
            out.append(lump)
    return out


def _narrowing(tape: Tape, order: list[int]) -> None:
    """Raise `Singular` where fewer than n numbers are live, counting elements: a value's element is
    live until the last node that reads it (an indexing with fixed indices reads only its elements)."""
    slots, nodes = tape.slots, tape.nodes
    n = _size(slots[tape.x].shape)
    last: dict[int, np.ndarray] = {}
    for j, k in enumerate(order):
        node = nodes[k]
        for i, s in enumerate(node.inputs):
            if i in node.prim.nondiff or not slots[s].active:
                continue
            marks = last.get(s)
            if marks is None:
                marks = last[s] = np.full(_size(slots[s].shape), -1, np.intp)
            read = _elements_read(tape, node, i)
            if read is None:
                marks[:] = j
            else:
                marks[read] = j
    deaths = np.zeros(len(order) + 1, np.intp)
    born = np.zeros(len(order), np.intp)
    for s, marks in last.items():
        if s == tape.output:
            continue
        deaths += np.bincount(marks + 1, minlength=len(order) + 1)
    unused = int(np.count_nonzero(last[tape.x] < 0)) if tape.x in last else n
    if unused:
        raise Singular(None, f"{unused} of the {n} elements of x are never used")
    for j, k in enumerate(order):
        out = nodes[k].output
        marks = last.get(out)
        born[j] = _size(slots[out].shape) if out == tape.output or marks is None else np.count_nonzero(marks >= 0)
    width = n + np.cumsum(born) - np.cumsum(deaths[1:])
    low = np.flatnonzero(width < n)
    if low.size:
        j = int(low[0])
        raise Singular(order[j], f"the values live after it hold {int(width[j])} numbers, fewer than x's {n}")


def _elements_read(tape: Tape, node: Any, i: int) -> np.ndarray | None:
    """The flat positions of input i that `node` reads, where it is an indexing with fixed indices;
    None: all of them."""
    prim = node.prim
    if prim.name != "getitem" or i != 0:
        return None
    slots = tape.slots
    if any(slots[s].variable for s in node.inputs[1:]):
        return None
    shape = slots[node.inputs[0]].shape
    ids = np.arange(_size(shape)).reshape(shape)
    extra = [tape.values[s] for s in node.inputs[1:]]
    return np.ravel(prim.forward(ids, *extra, **node.params))


def _lump(tape: Tape, block: list[int], before: set, after: set) -> Lump | None:
    slots, nodes = tape.slots, tape.nodes
    dead = tuple(sorted(before - after))
    kept = tuple(sorted(before & after))
    new = tuple(sorted(after - before))
    size = sum(_size(slots[s].shape) for s in dead)
    main_values = set(dead)
    main: list[int] = []
    made_by: dict[int, int] = {}
    for k in block:
        node = nodes[k]
        made_by[node.output] = k
        if any(s in main_values for s in _diff_inputs(node, slots)):
            main.append(k)
            main_values.add(node.output)
    for s in new:
        if s not in main_values:
            raise Singular(made_by[s], "its value does not depend on the values overwritten at this step")
    anchor = main[-1]
    reach = set(kept)
    coupled = []
    for k in block:
        node = nodes[k]
        if any(s in reach for s in _diff_inputs(node, slots)):
            coupled.append(k)
            reach.add(node.output)
    lump = Lump(block, dead, kept, new, "dense", size, anchor, coupled, frozenset(reach), main=main)
    if _diagonal(tape, lump):
        lump.kind = "diag"
    elif not coupled and len(main) == len(block):
        gather = _permutation(tape, lump)
        if gather is not None:
            lump.kind, lump.gather = "perm", gather
    if lump.kind == "dense" and size > MAX_DENSE:
        return None
    return lump


def _diagonal(tape: Tape, lump: Lump) -> bool:
    slots, nodes = tape.slots, tape.nodes
    if len(lump.dead) != 1 or len(lump.new) != 1:
        return False
    if slots[lump.dead[0]].shape != slots[lump.new[0]].shape:
        return False
    mains = set(lump.dead) | {nodes[k].output for k in lump.main}
    for k in lump.main:
        node = nodes[k]
        if not node.prim.elementwise:
            return False
        shape = slots[node.output].shape
        if any(s in mains and slots[s].shape != shape for s in _diff_inputs(node, slots)):
            return False
    return True


def _permutation(tape: Tape, lump: Lump) -> tuple | None:
    """For a lump that only moves elements: each N slot's element ids (flat positions in the
    concatenated D), if together they are a permutation; else None."""
    slots, nodes, values = tape.slots, tape.nodes, tape.values
    env: dict[int, Any] = {}
    offset = 0
    for s in lump.dead:
        m = _size(slots[s].shape)
        env[s] = np.arange(offset + 1, offset + m + 1, dtype=np.float64).reshape(slots[s].shape)
        offset += m
    for k in lump.main:
        node = nodes[k]
        if node.prim.name not in _MOVES:
            return None
        ins = []
        for i, s in enumerate(node.inputs):
            if s in env:
                ins.append(env[s])
            elif i in node.prim.nondiff and not slots[s].variable:
                ins.append(values[s])
            else:  # an active value from outside, or indices that change with x
                return None
        env[node.output] = np.asarray(node.prim.forward(*ins, **node.params))
    ids = [np.ravel(env[s]) for s in lump.new]
    flat = np.concatenate(ids) if ids else np.zeros(0)
    if flat.size != offset or not np.array_equal(np.sort(flat), np.arange(1, offset + 1, dtype=np.float64)):
        return None
    return tuple(i.astype(np.intp) - 1 for i in ids)
