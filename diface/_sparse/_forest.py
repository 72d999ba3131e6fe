"""The two-colored forests of an acyclic coloring, peeled leaf by leaf (vectorized, one NumPy pass per
round over that round's leaves only: O(edges) in all, plus a few NumPy calls per round), for checking
acyclicity and for planning substitution.

For a symmetric pattern with colors `(n,)`, each off-diagonal nonzero {u, v} (u < v) lies in the
subgraph spanned by the colors of u and v. The vertices of that subgraph are the *nodes* (vertex, color
pair). Peeling removes, in rounds, every edge that has an end of degree one (a leaf); the leaf becomes
the edge's *child*, the other end its *parent*. The coloring is acyclic exactly when peeling removes
every edge; the node left last in each tree (a center) is its root, so depths are at most the radius.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._graph import expand_ranges, sorted_unique
from ._pattern import INDEX, Pattern

__all__ = ["Forest", "peel"]


@dataclass(frozen=True, eq=False)
class Forest:
    """The rooted two-colored trees. Per edge `e` (the upper-triangle nonzeros, `(E,)` arrays):
    `upper[e]` its position in the pattern; `child_vertex[e]`, `parent_vertex[e]`; `child[e]`,
    `parent[e]` the nodes; `depth[e]` the depth of the child (1 for edges at a root). `cycle` is None, or
    `(a, b, vertices)`: colors a and b span a cycle through these vertices (the coloring is not
    acyclic)."""

    upper: np.ndarray
    child_vertex: np.ndarray
    parent_vertex: np.ndarray
    child: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    cycle: tuple[int, int, np.ndarray] | None = None


def peel(pattern: Pattern, colors: np.ndarray) -> Forest:
    """Root the two-colored forests of `colors` on the symmetric `pattern` (adjacent vertices must have
    different colors: check that first)."""
    rows, cols = pattern.rows, pattern.cols
    upper = np.flatnonzero(rows < cols)
    u, v = rows[upper], cols[upper]
    ncolors = int(colors.max()) + 1 if colors.size else 1
    cu, cv = colors[u], colors[v]
    pair = np.minimum(cu, cv) * ncolors + np.maximum(cu, cv)
    width = ncolors * ncolors
    node_keys = sorted_unique(np.concatenate([u * width + pair, v * width + pair]))
    a = np.searchsorted(node_keys, u * width + pair).astype(INDEX)
    b = np.searchsorted(node_keys, v * width + pair).astype(INDEX)
    nodes = node_keys.size
    degree = np.bincount(a, minlength=nodes) + np.bincount(b, minlength=nodes)
    edges = upper.size
    # the edges at each node (CSR), to find a leaf's one remaining edge
    at_node = np.argsort(np.concatenate([a, b]), kind="stable") % max(edges, 1)
    node_ptr = np.zeros(nodes + 1, dtype=INDEX)
    np.cumsum(degree, out=node_ptr[1:])
    child = np.empty(edges, dtype=INDEX)
    parent = np.empty(edges, dtype=INDEX)
    rounds: list[np.ndarray] = []
    active = np.ones(edges, dtype=bool)
    remaining = edges
    leaves = np.flatnonzero(degree == 1)
    while remaining:
        if not leaves.size:
            left = np.flatnonzero(active)
            first_pair = pair[left[0]]
            core = left[pair[left] == first_pair]  # what peeling leaves holds a cycle
            cycle = (
                int(first_pair // ncolors),
                int(first_pair % ncolors),
                sorted_unique(np.concatenate([u[core], v[core]])),
            )
            empty = np.zeros(0, dtype=INDEX)
            return Forest(upper, empty, empty, empty, empty, empty, cycle)
        # the edges with a leaf end (a node is a leaf once: its edge goes in that round)
        near = at_node[expand_ranges(node_ptr[leaves], node_ptr[leaves + 1] - node_ptr[leaves])]
        done = sorted_unique(near[active[near]])
        leaf_a = degree[a[done]] == 1
        child[done] = np.where(leaf_a, a[done], b[done])
        parent[done] = np.where(leaf_a, b[done], a[done])
        touched = np.concatenate([a[done], b[done]])
        np.subtract.at(degree, touched, 1)
        active[done] = False
        remaining -= done.size
        rounds.append(done)
        leaves = sorted_unique(touched[degree[touched] == 1])  # only a touched node can become a leaf
    node_depth = np.zeros(nodes, dtype=INDEX)
    for done in reversed(rounds):
        node_depth[child[done]] = node_depth[parent[done]] + 1
    side_a = child == a
    child_vertex = np.where(side_a, u, v).astype(INDEX)
    parent_vertex = np.where(side_a, v, u).astype(INDEX)
    return Forest(upper, child_vertex, parent_vertex, child, parent, node_depth[child])
