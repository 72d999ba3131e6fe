"""Greedy star coloring of a graph `(ptr, idx)` (the off-diagonal pattern of a symmetric matrix).

A star coloring is a distance-1 coloring in which every path on four vertices uses at least three
colors; then every nonzero H[i, j] of a symmetric H can be read directly from one entry of H S
(Coleman & Moré 1984; Gebremedhin, Manne & Pothen 2005, section 4).

Each vertex v, in the given order, takes the smallest color that creates no two-colored path on four
vertices among the vertices colored so far. Such a path ending at v (v - w - x - y, colors c a c a)
exists when x is a *hub* for w: x has at least two neighbours of w's color. A path through v
(u - v - w - x, colors a c a c) exists when two neighbours u, w of v share a color. So v must avoid:
its neighbours' colors; the colors of the hubs next to each neighbour (`hubs[w]`, kept up to date as
vertices are colored); and, for neighbours whose color repeats around v, the colors around them. The
counts of colors around each vertex make every step proportional to the colors seen, not to the
vertices at distance two (the idea of the star structures of Gebremedhin, Tarafdar, Manne & Pothen
2007, kept here as per-vertex color counts).
"""

from __future__ import annotations

import numpy as np

from . import _compiled
from ._pattern import INDEX

__all__ = ["greedy_star"]


def greedy_star(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`(n,)` colors 0, 1, ... forming a star coloring of the graph `(ptr, idx)`, visiting vertices in
    `order`."""
    n = ptr.size - 1
    fast = _compiled.kernel("greedy_star", n + idx.size)
    if fast is not None:
        return fast(ptr, idx, order)
    P, A = ptr.tolist(), idx.tolist()
    color = [-1] * n
    # around[w][c]: the one colored neighbour of w with color c, or -1 where there are several
    around: list[dict[int, int]] = [{} for _ in range(n)]
    hubs: list[set[int]] = [set() for _ in range(n)]  # colors of the hubs adjacent to w
    for v in order.tolist():
        neighbours = A[P[v] : P[v + 1]]
        forbidden: set[int] = set()
        for w in neighbours:
            a = color[w]
            if a >= 0:
                forbidden.add(a)
                if hubs[w]:
                    forbidden |= hubs[w]
        mine = around[v]
        repeated = [w for w in neighbours if color[w] >= 0 and mine[color[w]] < 0] if -1 in mine.values() else ()
        for w in repeated:
            forbidden.update(around[w])
        c = 0
        while c in forbidden:
            c += 1
        color[v] = c
        # v's color around its neighbours; a colored neighbour w with two of color c is a hub for them
        for w in neighbours:
            counts = around[w]
            other = counts.get(c)
            if other is None:
                counts[c] = v
            elif color[w] >= 0:
                hubs[v].add(color[w])
                if other >= 0:
                    hubs[other].add(color[w])
                    counts[c] = -1
            else:
                counts[c] = -1
        # v is the hub of the colors that repeat around it
        for w in repeated:
            hubs[w].add(c)
    return np.array(color, dtype=INDEX)
