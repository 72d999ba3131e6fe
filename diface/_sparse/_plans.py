"""Decompression plans: how to read the nonzeros of J (or H) out of the compressed products, as NumPy
index arrays that any array library applies on its own device.

The compressed products, for seeds built from a coloring:

- forward: `B = J @ S_c`, shape `(m, c_f)`, `S_c` the `(n, c_f)` 0/1 column seed (column `k` of B is
  one pushforward, the JVP with tangent `S_c[:, k]`);
- reverse: `C = S_r.T @ J`, shape `(c_r, n)`, `S_r` the `(m, c_r)` 0/1 row seed (row `k` of C is one
  pullback, the VJP with cotangent `S_r[:, k]`). An engine that stacks pushforwards along the first
  axis has `B.T`, shape `(c_f, m)`: use `plan.batch_first()`, which reads that layout directly.

Both are flattened row-major and concatenated, `source = concat([B.reshape(-1), C.reshape(-1)])` (a part
with no colors is left out). A plan returns `data`, the `(nnz,)` values in the pattern's CSR order:

- direct plans (column, row, star, bicoloring): `data = source[index]`, one gather;
- substitution plans (acyclic): `direct = source[index]` (the diagonal), then for each step in turn
  `y = source[step.source] - concat([y_prev, 0])[step.children].sum(1)` (the first step has no
  children), and `data = concat([direct, y_1, ..., y_T])[final]`.

`decompress(plan, B, C, concat=...)` does this with only: `a.reshape(-1)`, integer-array indexing
`a[idx]` (1-D and 2-D `idx`), `a - b`, `a.sum(1)`, `a[:0].sum().reshape(1)` (a zero of `a`'s dtype and
device) and `concat(list_of_1d_arrays)`; NumPy, JAX (`concat=jnp.concatenate`) and torch
(`concat=torch.cat`) arrays all have them. Convert the index arrays once with `plan.map(fn)` (e.g.
`fn = lambda a: torch.as_tensor(a, device=device)`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ._forest import Forest, peel
from ._pattern import INDEX, Pattern
from ._validate import bicoloring_sides, direct_sides

__all__ = [
    "DecompressionPlan",
    "SubstitutionStep",
    "acyclic_plan",
    "bicoloring_plan",
    "column_plan",
    "decompress",
    "row_plan",
    "star_plan",
]


@dataclass(frozen=True, eq=False)
class SubstitutionStep:
    """One vectorized substitution step: `y = source[self.source] - concat([y_prev, 0])[self.children].sum(1)`.

    `source`: `(k,)` positions in the flat compressed products; `children`: `(k, w)` positions in the
    previous step's output, `len(y_prev)` standing for zero (w may be 0: nothing to subtract)."""

    source: np.ndarray
    children: np.ndarray


@dataclass(frozen=True, eq=False)
class DecompressionPlan:
    """How to read the `(nnz,)` nonzeros of a `shape` matrix out of `B` `(shape[0], forward)` and `C`
    `(reverse, shape[1])` (see the module docstring). Index arrays are NumPy `intp` unless mapped."""

    shape: tuple[int, int]
    nnz: int
    forward: int
    reverse: int
    index: Any
    steps: tuple[SubstitutionStep, ...] = ()
    final: Any = None
    #: how the nonzeros are read, for messages and tests: "direct" or "substitution"
    kind: str = field(default="direct")
    #: whether B is laid out `(forward, m)` (pushforwards stacked along the first axis) instead of `(m, forward)`
    forward_batch_first: bool = False

    @property
    def is_direct(self) -> bool:
        return not self.steps and self.final is None

    def batch_first(self) -> DecompressionPlan:
        """The same plan reading `B` laid out `(forward, m)` (`B.T` of the default layout): one JVP per
        row, as a batched (vmapped) pushforward returns them. Takes NumPy index arrays (before `map`)."""
        if self.forward_batch_first or not self.forward:
            return replace(self, forward_batch_first=True)
        m, c = self.shape[0], self.forward

        def remap(flat: np.ndarray) -> np.ndarray:
            flat = np.asarray(flat)
            in_b = flat < m * c
            i, k = np.divmod(flat, c)
            return np.where(in_b, k * m + i, flat).astype(INDEX)

        steps = tuple(SubstitutionStep(remap(s.source), s.children) for s in self.steps)
        return replace(self, index=remap(self.index), steps=steps, forward_batch_first=True)

    def map(self, fn: Callable[[np.ndarray], Any]) -> DecompressionPlan:
        """The same plan with every index array replaced by `fn(array)` (e.g. moved to a device)."""
        steps = tuple(SubstitutionStep(fn(s.source), fn(s.children)) for s in self.steps)
        final = None if self.final is None else fn(self.final)
        return replace(self, index=fn(self.index), steps=steps, final=final)


def _check(name: str, a: Any, shape: tuple[int, int]) -> None:
    if tuple(a.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(a.shape)}")


def decompress(plan: DecompressionPlan, B: Any = None, C: Any = None, *, concat: Callable | None = None) -> Any:
    """`(nnz,)` values of the matrix, in CSR order, from the compressed products `B` `(m, plan.forward)`
    (`(plan.forward, m)` for a `batch_first()` plan) and/or `C` `(plan.reverse, n)`. `concat` joins 1-D
    arrays (default `numpy.concatenate`); every other operation is an array method or operator (see the
    module docstring)."""
    m, n = plan.shape
    concat = np.concatenate if concat is None else concat
    parts = []
    if plan.forward:
        if B is None:
            raise ValueError(f"this plan reads {plan.forward} forward products: pass B")
        _check("B", B, (plan.forward, m) if plan.forward_batch_first else (m, plan.forward))
        parts.append(B.reshape(-1))
    if plan.reverse:
        if C is None:
            raise ValueError(f"this plan reads {plan.reverse} reverse products: pass C")
        _check("C", C, (plan.reverse, n))
        parts.append(C.reshape(-1))
    if not parts:  # no nonzeros
        empty = next((a for a in (B, C) if a is not None), None)
        return np.zeros(0) if empty is None else empty.reshape(-1)[:0]
    source = parts[0] if len(parts) == 1 else concat(parts)
    direct = source[plan.index]
    if plan.final is None:
        return direct
    outputs = [direct]
    previous = None
    for step in plan.steps:
        y = source[step.source]
        if step.children.shape[1]:
            padded = concat([previous, source[:0].sum().reshape(1)])
            y = y - padded[step.children].sum(1)
        outputs.append(y)
        previous = y
    return concat(outputs)[plan.final]


def _as_index(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=INDEX)


def column_plan(pattern: Pattern, colors: np.ndarray, ncolors: int) -> DecompressionPlan:
    """Read each J[i, j] from `B[i, colors[j]]` (`colors` a valid column coloring)."""
    index = pattern.rows * ncolors + colors[pattern.cols]
    return DecompressionPlan(pattern.shape, pattern.nnz, ncolors, 0, _as_index(index))


def row_plan(pattern: Pattern, colors: np.ndarray, ncolors: int) -> DecompressionPlan:
    """Read each J[i, j] from `C[colors[i], j]` (`colors` a valid row coloring)."""
    index = colors[pattern.rows] * pattern.shape[1] + pattern.cols
    return DecompressionPlan(pattern.shape, pattern.nnz, 0, ncolors, _as_index(index))


def bicoloring_plan(
    pattern: Pattern, column_colors: np.ndarray, row_colors: np.ndarray, forward: int, reverse: int
) -> DecompressionPlan:
    """Read each J[i, j] from `B[i, column_colors[j]]` where it is alone there, else from
    `C[row_colors[i], j]` (a valid bicoloring)."""
    m, n = pattern.shape
    from_b, _ = bicoloring_sides(pattern, column_colors, row_colors)
    rows, cols = pattern.rows, pattern.cols
    index = np.where(
        from_b,
        rows * forward + column_colors[cols],
        m * forward + row_colors[rows] * n + cols,
    )
    return DecompressionPlan(pattern.shape, pattern.nnz, forward, reverse, _as_index(index))


def star_plan(pattern: Pattern, colors: np.ndarray, ncolors: int) -> DecompressionPlan:
    """Read each H[i, j] of a symmetric pattern from one entry of `B = H S`: `B[i, colors[j]]` where
    H[i, j] is alone there, else `B[j, colors[i]]`; H[i, j] and H[j, i] read the same entry, so the
    result is exactly symmetric (`colors` a valid star coloring)."""
    rows, cols = pattern.rows, pattern.cols
    alone, reverse = direct_sides(pattern, colors)
    lo = rows <= cols  # decide on the upper triangle, then mirror
    upper_alone = np.where(lo, alone, alone[reverse])
    first, second = np.where(lo, rows, cols), np.where(lo, cols, rows)
    index = np.where(upper_alone, first * ncolors + colors[second], second * ncolors + colors[first])
    return DecompressionPlan(pattern.shape, pattern.nnz, ncolors, 0, _as_index(index))


def acyclic_plan(pattern: Pattern, colors: np.ndarray, ncolors: int, forest: Forest | None = None) -> DecompressionPlan:
    """Recover a symmetric H from `B = H S` by substitution (`colors` a valid acyclic coloring).

    In each two-colored tree, rooted at a center, the edge from a vertex u to its parent p satisfies
    `H[u, p] = B[u, colors[p]] - sum(H[u, c] for the children c of u)`; edges are computed deepest
    first, one vectorized step per depth (as many steps as the largest tree radius). Diagonal entries
    are read directly: `H[i, i] = B[i, colors[i]]`. `forest`: `peel(pattern, colors)` if already made."""
    rows, cols = pattern.rows, pattern.cols
    forest = peel(pattern, colors) if forest is None else forest
    diagonal = np.flatnonzero(rows == cols)
    direct = rows[diagonal] * ncolors + colors[rows[diagonal]]
    depth = forest.depth
    levels = int(depth.max()) if depth.size else 0
    if levels == 0:  # diagonal only
        return DecompressionPlan(pattern.shape, pattern.nnz, ncolors, 0, _as_index(direct))
    edges = depth.size
    # the edges of each depth, deepest first; where each sits in its step's output
    by_depth = np.argsort(-depth, kind="stable")
    slot = np.empty(edges, dtype=INDEX)
    step_of = np.empty(edges, dtype=INDEX)
    boundaries = np.searchsorted(-depth[by_depth], -np.arange(levels, 0, -1), side="left")
    boundaries = np.append(boundaries, edges)
    edge_of_child = np.full(int(max(forest.child.max(), forest.parent.max())) + 1, -1, dtype=INDEX)
    edge_of_child[forest.child] = np.arange(edges, dtype=INDEX)
    row = np.empty(edges, dtype=INDEX)  # an edge's row in its step
    steps = []
    for t in range(levels):
        members = by_depth[boundaries[t] : boundaries[t + 1]]
        slot[members] = np.arange(members.size, dtype=INDEX)
        step_of[members] = t
        source = forest.child_vertex[members] * ncolors + colors[forest.parent_vertex[members]]
        if t == 0:
            children = np.zeros((members.size, 0), dtype=INDEX)
        else:
            below = by_depth[boundaries[t - 1] : boundaries[t]]  # the previous step's edges
            owner = edge_of_child[forest.parent[below]]  # the edge whose child is their parent
            row[members] = np.arange(members.size, dtype=INDEX)
            row_of_below = row[owner]
            order = np.argsort(row_of_below, kind="stable")
            counts = np.bincount(row_of_below, minlength=members.size)
            width = int(counts.max()) if counts.size else 0
            rank = np.arange(below.size) - np.repeat(np.cumsum(counts) - counts, counts)
            children = np.full((members.size, width), below.size, dtype=INDEX)
            children[row_of_below[order], rank] = slot[below[order]]
        steps.append(SubstitutionStep(_as_index(source), _as_index(children)))
    # final: diagonal from `direct`, each off-diagonal nonzero from its edge's step output
    offsets = np.concatenate(([direct.size], direct.size + np.cumsum([s.source.size for s in steps])))
    edge_at = np.full(pattern.nnz, -1, dtype=INDEX)
    edge_at[forest.upper] = np.arange(edges, dtype=INDEX)
    reverse = pattern.mirror_positions()
    lower = rows > cols
    edge_at[lower] = edge_at[reverse[lower]]
    final = np.empty(pattern.nnz, dtype=INDEX)
    final[diagonal] = np.arange(diagonal.size, dtype=INDEX)
    off = np.flatnonzero(rows != cols)
    e = edge_at[off]
    final[off] = offsets[step_of[e]] + slot[e]
    return DecompressionPlan(
        pattern.shape, pattern.nnz, ncolors, 0, _as_index(direct), tuple(steps), _as_index(final), "substitution"
    )
