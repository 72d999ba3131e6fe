"""Greedy distance-1 coloring of a graph `(ptr, idx)`: each vertex, in the given order, takes the smallest
color none of its neighbours has.

On a column intersection graph this is the column coloring of Curtis, Powell & Reid (the distance-2
coloring of the bipartite graph, Gebremedhin, Manne & Pothen 2005, section 3). Vertices of small degree
are handled with plain Python lists (fastest for a few neighbours); a vertex with many neighbours with
one NumPy gather.
"""

from __future__ import annotations

import numpy as np

from . import _compiled
from ._pattern import INDEX

__all__ = ["greedy_distance1"]

#: above this degree, a vertex's neighbours' colors are gathered with NumPy
NUMPY_DEGREE = 48


def greedy_distance1(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`(n,)` colors 0, 1, ... of the graph `(ptr, idx)`, visiting vertices in `order`."""
    n = ptr.size - 1
    if n == 0:
        return np.zeros(0, dtype=INDEX)
    fast = _compiled.kernel("greedy_distance1", n + idx.size)
    if fast is not None:
        return fast(ptr, idx, order)
    degree = np.diff(ptr)
    P, A = ptr.tolist(), idx.tolist()
    color = [-1] * n
    mark = [-1] * (int(degree.max()) + 2)  # mark[c] == v: color c is taken around v
    heavy = degree > NUMPY_DEGREE
    if not heavy.any():
        for v in order.tolist():
            for u in A[P[v] : P[v + 1]]:
                c = color[u]
                if c >= 0:
                    mark[c] = v
            c = 0
            while mark[c] == v:
                c += 1
            color[v] = c
        return np.array(color, dtype=INDEX)
    colors = np.full(n, -1, dtype=INDEX)  # kept equal to `color`, for the NumPy gathers
    heavy = heavy.tolist()
    for v in order.tolist():
        if heavy[v]:
            around = colors[idx[P[v] : P[v + 1]]]
            taken = np.zeros(P[v + 1] - P[v] + 1, dtype=bool)
            taken[around[(around >= 0) & (around < taken.size)]] = True
            c = int(np.argmin(taken))
        else:
            for u in A[P[v] : P[v + 1]]:
                c = color[u]
                if c >= 0:
                    mark[c] = v
            c = 0
            while mark[c] == v:
                c += 1
        color[v] = c
        colors[v] = c
    return colors
