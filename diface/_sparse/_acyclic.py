"""Greedy acyclic coloring of a graph `(ptr, idx)` (the off-diagonal pattern of a symmetric matrix).

An acyclic coloring is a distance-1 coloring in which every cycle uses at least three colors: the
vertices of any two colors span a forest. It needs fewer colors than a star coloring; a symmetric H is
then recovered from H S by substitution along the trees of those forests (Coleman & Cai 1986;
Gebremedhin, Tarafdar, Manne & Pothen 2007).

Each vertex v, in the given order, takes the smallest color such that: no neighbour has it, and v does
not join one two-colored tree through two different neighbours (that would close a cycle). The trees
are kept as a disjoint-set forest over the edges whose ends are both colored: coloring v merges each new
edge (v, w) with the edges (w, x) where x has v's color, and with the other edges (v, w') where w' has
w's color.
"""

from __future__ import annotations

import numpy as np

from . import _compiled
from ._graph import reverse_positions
from ._pattern import INDEX

__all__ = ["greedy_acyclic"]


def greedy_acyclic(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`(n,)` colors 0, 1, ... forming an acyclic coloring of the graph `(ptr, idx)`, visiting vertices
    in `order`."""
    n = ptr.size - 1
    edges = np.minimum(np.arange(idx.size, dtype=INDEX), reverse_positions(ptr, idx))
    fast = _compiled.kernel("greedy_acyclic", n + idx.size)
    if fast is not None:
        return fast(ptr, idx, order, edges)
    P, A = ptr.tolist(), idx.tolist()
    edge = edges.tolist()
    parent = list(range(idx.size))  # disjoint sets of edges (by the position of one direction)

    def find(e: int) -> int:
        while parent[e] != e:
            parent[e] = parent[parent[e]]
            e = parent[e]
        return e

    def union(e: int, f: int) -> None:
        e, f = find(e), find(f)
        if e != f:
            parent[e] = f

    color = [-1] * n
    for v in order.tolist():
        lo, hi = P[v], P[v + 1]
        forbidden = {color[w] for w in A[lo:hi]}
        forbidden.discard(-1)
        entered: dict[int, int] = {}  # tree -> the neighbour of v through which it is reached
        for w in A[lo:hi]:
            if color[w] < 0:
                continue
            for q in range(P[w], P[w + 1]):
                x = A[q]
                cx = color[x]
                if cx < 0 or x == v or cx in forbidden:
                    continue
                tree = find(edge[q])
                through = entered.setdefault(tree, w)
                if through != w:
                    forbidden.add(cx)
        c = 0
        while c in forbidden:
            c += 1
        color[v] = c
        by_color: dict[int, int] = {}
        for p in range(lo, hi):
            w = A[p]
            a = color[w]
            if a < 0:
                continue
            e = edge[p]
            if a in by_color:
                union(e, by_color[a])
            else:
                by_color[a] = e
            for q in range(P[w], P[w + 1]):
                if color[A[q]] == c and A[q] != v:
                    union(e, edge[q])
    return np.array(color, dtype=INDEX)
