"""The graphs that colorings color, as CSR adjacency arrays `(ptr, idx)`: `idx[ptr[v]:ptr[v + 1]]` are the
neighbours of vertex v, sorted, without v itself.

- `column_graph(pattern)`: the column intersection graph of an (m, n) pattern (n vertices; columns j and k
  are adjacent when some row has nonzeros in both). A distance-1 coloring of it is a distance-2 coloring
  of the bipartite row/column graph: structurally orthogonal column groups.
- `adjacency_graph(pattern)`: the graph of a symmetric (n, n) pattern (n vertices; i and j adjacent when
  (i, j) is an off-diagonal nonzero), which star and acyclic colorings color.

Both are built with vectorized NumPy, in blocks of vertices so that the temporary pair lists stay small
(the column intersection graph by a compiled kernel instead where `_compiled` has one: the same graph).
"""

from __future__ import annotations

import itertools

import numpy as np

from . import _compiled
from ._pattern import INDEX, Pattern

__all__ = ["adjacency_graph", "column_graph", "expand_ranges", "reverse_positions", "sorted_unique"]

#: most (vertex, neighbour) pairs generated at once while building a column intersection graph
BLOCK_PAIRS = 1 << 22


def expand_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of `arange(s, s + l)` over `zip(starts, lengths)`, vectorized."""
    lengths = np.asarray(lengths, dtype=INDEX)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=INDEX)
    offsets = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=INDEX) - np.repeat(offsets - np.asarray(starts, dtype=INDEX), lengths)


def sorted_unique(keys: np.ndarray) -> np.ndarray:
    """`np.unique(keys)` by sorting (NumPy 2's `unique` hashes, several times slower on integer keys)."""
    keys = np.sort(keys)
    if keys.size > 1:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return keys


def _csr_from_sorted_keys(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    src, dst = np.divmod(keys, max(n, 1))
    ptr = np.zeros(n + 1, dtype=INDEX)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return ptr, dst.astype(INDEX, copy=False)


def column_graph(pattern: Pattern) -> tuple[np.ndarray, np.ndarray]:
    """The column intersection graph of `pattern` (n vertices), as `(ptr, idx)`."""
    n = pattern.shape[1]
    if n == 0 or pattern.nnz == 0:
        return np.zeros(n + 1, dtype=INDEX), np.zeros(0, dtype=INDEX)
    t = pattern.T  # CSR of the transpose: the rows of each column
    fast = _compiled.kernel("column_graph", n + pattern.nnz)
    if fast is not None:
        ptr, idx = fast(n, t.indptr, t.indices, pattern.indptr, pattern.indices)
        return ptr, idx
    row_len = pattern.row_counts()
    # pairs contributed by each column: the lengths of its rows, summed
    per_col = np.bincount(t.rows, weights=row_len[t.indices], minlength=n).astype(INDEX)
    bounds = [0]
    total = np.cumsum(per_col)
    while bounds[-1] < n:
        start = bounds[-1]
        base = total[start - 1] if start else 0
        stop = int(np.searchsorted(total, base + BLOCK_PAIRS, side="right"))
        bounds.append(max(stop, start + 1))
    keys = []
    for start, stop in itertools.pairwise(bounds):
        lo, hi = t.indptr[start], t.indptr[stop]
        rows = t.indices[lo:hi]
        a = np.repeat(t.rows[lo:hi], row_len[rows])
        b = pattern.indices[expand_ranges(pattern.indptr[rows], row_len[rows])]
        keep = a != b
        keys.append(sorted_unique(a[keep] * n + b[keep]))
    return _csr_from_sorted_keys(np.concatenate(keys), n)


def adjacency_graph(pattern: Pattern) -> tuple[np.ndarray, np.ndarray]:
    """The graph of a symmetric square `pattern` (its off-diagonal nonzeros), as `(ptr, idx)`."""
    m, n = pattern.shape
    if m != n:
        raise ValueError(f"a symmetric coloring needs a square pattern, got shape {pattern.shape}")
    off = pattern.rows != pattern.cols
    ptr = np.zeros(n + 1, dtype=INDEX)
    np.cumsum(np.bincount(pattern.rows[off], minlength=n), out=ptr[1:])
    return ptr, pattern.cols[off].astype(INDEX)


def reverse_positions(ptr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """For each position p of the symmetric graph `(ptr, idx)` (the edge u→v), the position of v→u.

    Sorting the edges by their end v (stably: by (v, u), each list being sorted) lists them as v→u in the
    graph's own order, so the position of v→u is the rank of u→v in that sort."""
    order = np.argsort(idx, kind="stable")
    reverse = np.empty(idx.size, dtype=INDEX)
    reverse[order] = np.arange(idx.size, dtype=INDEX)
    return reverse
