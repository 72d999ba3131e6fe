"""Sparsity rules shared by many primitives: what a node does to the dependencies of its inputs on x
(`diface._sparsity.Deps`), as `Prim.sparsity` takes them: `rule(run, node, ins, shape) -> Deps`.

`run` is the pass over the tape (`analysis.sparsity`): `run.deps(v)` (a value's dependencies; a number
fixed at recording depends on nothing), `run.constant(shape)`, `run.stack(parts)` (a flat
concatenation), `run.anywhere(parts, shape, kind)` (every output element on every element of `parts`)
and `run.second` (pairs too). An input is a `Deps` where it depends on x, else a number fixed at recording
(its `.value`). A primitive with a rule of its own defines it in its module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._sparsity import Deps, Nonlinearity
from ..data.graph import Node

__all__ = [
    "TERMS_LIMIT",
    "cumulative",
    "dense",
    "elementwise",
    "groups",
    "linear",
    "move",
    "multilinear",
    "nonlinear",
    "per_matrix",
    "product",
    "reduction",
    "same",
]

L, N, B, Q = Nonlinearity.LINEAR, Nonlinearity.NONLINEAR, Nonlinearity.BILINEAR, Nonlinearity.QUOTIENT

#: the most elements the index space of one contraction may have before it is taken as dense
TERMS_LIMIT = 20_000_000


def elementwise(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    """A ufunc: its output elements on the matching input elements, combined as its `pattern` says (a
    quotient by a number is linear, a product is zero wherever a known factor is)."""
    prim = node.prim
    operands = [v for i, v in enumerate(ins) if i not in prim.nondiff]
    kind = prim.pattern
    if kind is B:
        return product(run, operands, shape)
    if kind is Q and not isinstance(operands[1], Deps):
        kind = L  # divided by a number
    return Deps.elementwise(shape, [run.deps(v) for v in operands], kind)


def product(run: Any, operands: list, shape: tuple) -> Deps:
    """A product: bilinear among its traced factors, and zero wherever a known factor is."""
    traced = [v for v in operands if isinstance(v, Deps)]
    result = Deps.elementwise(shape, traced, B if len(traced) > 1 else L)
    mask = np.ones(shape, dtype=bool)
    for v in operands:
        if not isinstance(v, Deps):
            mask &= np.broadcast_to(np.asarray(v.value) != 0, shape)
    if mask.all():
        return result
    return result.gather(np.where(mask, np.arange(mask.size).reshape(shape), -1))


def linear(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    """Linear and elementwise in every operand (clip)."""
    return Deps.elementwise(shape, [run.deps(v) for v in ins], L)


def same(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    """The input's dependencies as they are (a promotion, conj, real, imag, astype)."""
    return run.deps(ins[0])


def nonlinear(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    """Elementwise and nonlinear in its one input (abs and angle of complex values)."""
    return Deps.elementwise(shape, [run.deps(ins[0])], N)


def move(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    """Run the primitive on element ids (float64 id + 1, 0 for a number) instead of values: each output
    id says which input element the output element is. Index arrays computed from inputs: anywhere."""
    prim = node.prim
    data = [i for i in range(len(ins)) if i not in prim.nondiff]
    if any(isinstance(v, Deps) for i, v in enumerate(ins) if i not in data):
        return run.anywhere([v for i, v in enumerate(ins) if i in data and isinstance(v, Deps)], shape, L)
    args, parts, offset = [], [], 0
    for i, v in enumerate(ins):
        if i not in data:
            args.append(v.value)
        elif isinstance(v, Deps):
            args.append(np.arange(offset + 1, offset + 1 + v.size, dtype=np.float64).reshape(v.shape))
            parts.append(v)
            offset += v.size
        else:
            args.append(np.zeros(v.shape))
    ids = np.asarray(prim.forward(*args, **node.params))
    return run.stack(parts).gather(ids.astype(np.int64).reshape(shape) - 1)


def reduction(kind: Nonlinearity) -> Callable:
    """A reduction over `params["axis"]`: each output element on its group, combined as `kind`."""

    def rule(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
        d = run.deps(ins[0])
        return d.reduce(groups(d.shape, tuple(node.params["axis"])), shape, kind)

    return rule


def cumulative(kind: Nonlinearity) -> Callable:
    """A cumulative sum (`kind` linear) or product (bilinear) along `params["axis"]`: each output element
    on the elements before it on its line."""

    def rule(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
        import scipy.sparse as sp

        d = run.deps(ins[0])
        axis = node.params["axis"]
        lines = np.moveaxis(np.arange(d.size).reshape(d.shape), axis, -1).reshape(-1, d.shape[axis])
        length = d.shape[axis]
        rows: np.ndarray | list[int] = (
            np.concatenate([np.repeat(lines[:, k], k + 1) for k in range(length)]) if length else []
        )
        cols: np.ndarray | list[int] = (
            np.concatenate([lines[:, : k + 1].ravel() for k in range(length)]) if length else []
        )
        members = sp.csr_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(d.size, d.size))
        return d.combine(members, shape, kind)

    return rule


def multilinear(run: Any, ins: list, shape: tuple, terms: tuple | None) -> Deps:
    """A sum of products of one element of each operand: `terms` = (output index, (index into operand
    k, ...)) of every product whose known factors are nonzero (None: too many, taken as dense). Linear
    in each operand; pairs between the factors of a product."""
    import scipy.sparse as sp

    parts = [(k, v) for k, v in enumerate(ins) if isinstance(v, Deps)]
    if terms is None:
        return run.anywhere([v for _, v in parts], shape, N)
    out, index = terms
    q = int(np.prod(shape, dtype=np.int64))
    results = []
    for k, d in parts:
        members = sp.csr_array((np.ones(out.size, dtype=bool), (out, index[k])), shape=(q, d.size))
        results.append(d.combine(members, shape))
    if run.second:
        for i, (k, a) in enumerate(parts):
            for m, b in parts[i + 1 :]:
                both = Deps.elementwise((out.size,), [a.gather(index[k]), b.gather(index[m])], B)
                results.append(both.reduce(out, shape))
    return Deps.elementwise(shape, results, L) if results else run.constant(shape)


def per_matrix(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    """Every output element of a matrix on every element of that matrix (and of the other operands'
    matching entries), nonlinearly; a stack of matrices kept apart where the batch axes line up."""
    parts = [v for v in ins if isinstance(v, Deps)]
    kind = N if isinstance(ins[0], Deps) else L  # solve with a known matrix: linear in the right-hand side
    rank = max(len(ins[0].shape) - 2, 0)
    batch = ins[0].shape[:rank]
    if not rank or tuple(shape[:rank]) != batch or any(p.shape[:rank] != batch for p in parts):
        return run.anywhere(parts, shape, kind)
    pooled = [p.reduce(groups(p.shape, tuple(range(rank, len(p.shape)))), batch, kind) for p in parts]
    merged = Deps.elementwise(batch, pooled, kind)
    lead = np.arange(merged.size).reshape(batch + (1,) * (len(shape) - rank))
    return merged.gather(np.broadcast_to(lead, shape))


def dense(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    """Every output element on every element of the differentiated inputs (`Prim.dense_pattern`)."""
    nondiff = node.prim.nondiff
    parts = [v for i, v in enumerate(ins) if isinstance(v, Deps) and i not in nondiff]
    return run.anywhere(parts, shape, N)


def groups(shape: tuple, axes: tuple) -> np.ndarray:
    """For each element of an array of `shape`, the flat index of its group when `axes` are reduced."""
    outer = tuple(1 if i in axes else s for i, s in enumerate(shape))
    return np.broadcast_to(np.arange(int(np.prod(outer, dtype=np.int64))).reshape(outer), shape)
