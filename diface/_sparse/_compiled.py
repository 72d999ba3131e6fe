"""Compiled kernels for the sequential parts of coloring (the dynamic orders and the greedy passes), used
when numba can be imported and a graph is large enough for them to pay; the pure Python functions in
`_orders`, `_distance1`, `_star` and `_acyclic` stay the reference and the fallback.

Each kernel here is plain Python over NumPy arrays (no dicts, sets or lists), written to give exactly
the result of its pure counterpart: the bucket queues of the orders become linked stacks in flat arrays
(the same last-in, first-out order, the same stale entries), sets of colors become arrays stamped with
the current vertex, and the per-vertex dicts and sets of star coloring become slots in the CSR layout
of the graph (vertex w has `deg(w)` slots: it never holds more distinct colors than neighbours). They
run, slowly, without numba too, which is how CI checks them; `kernel(name, n)` returns the
`numba.njit(cache=True)` version, compiled on first use (cached on disk afterwards), or None where
numba is missing, `ENABLED` is False, or the graph is smaller than `MIN_SIZE` (vertices plus adjacency
entries).

    >>> import numpy as np
    >>> ptr, idx = np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1])  # the path 0 - 1 - 2
    >>> smallest_last(ptr, idx)
    array([0, 1, 2])
    >>> greedy_distance1(ptr, idx, np.arange(3))
    array([0, 1, 0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "ENABLED",
    "MIN_SIZE",
    "dynamic_largest_first",
    "greedy_acyclic",
    "greedy_distance1",
    "greedy_star",
    "incidence_degree",
    "kernel",
    "smallest_last",
]

#: set to False to always run the pure Python functions (tests of the fallback do)
ENABLED = True
#: smaller graphs (vertices + adjacency entries, `n + len(idx)`) run the pure Python functions: importing
#: numba and loading the kernels from its disk cache takes about 0.6 s once per process, what Python takes
#: to color a graph of about this size (compiling them, once per machine and numba version, takes about
#: 6 s for a column coloring's kernels, 2 s more for star and 1.5 s for acyclic coloring)
MIN_SIZE = 200_000

_jitted: dict[str, Any] = {}
_numba: list[Any] = []  # [module or None], once looked for


def _load_numba() -> Any:
    if not _numba:
        try:
            import numba
        except ImportError:  # optional: the pure Python path is used
            _numba.append(None)
        else:
            _numba.append(numba)
    return _numba[0]


def kernel(name: str, size: int) -> Callable | None:
    """The compiled kernel `name` (a function of this module) for a graph of `size` vertices plus
    adjacency entries, or None: numba missing, `ENABLED` False, or `size < MIN_SIZE`."""
    if not ENABLED or size < MIN_SIZE:
        return None
    if name not in _jitted:
        numba = _load_numba()
        if numba is None:
            _jitted[name] = None
        else:
            try:
                _jitted[name] = numba.njit(cache=True, nogil=True)(globals()[name])
            except RuntimeError:  # no writable cache directory: compile in each process
                _jitted[name] = numba.njit(nogil=True)(globals()[name])
    return _jitted[name]


# orders -------------------------------------------------------------------------------------------
# A bucket is a stack of nodes: head[level] is its top node, below[node] the node under it, vertex[node]
# its vertex. Every push takes a new node (at most n + len(idx): one per vertex and one per key change).


def smallest_last(ptr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """`_orders.smallest_last`."""
    n = ptr.size - 1
    key = ptr[1:] - ptr[:-1]
    head = np.full(key.max() + 1, -1, dtype=np.intp)
    vertex = np.empty(n + idx.size, dtype=np.intp)
    below = np.empty(n + idx.size, dtype=np.intp)
    top = 0
    for v in range(n):
        vertex[top], below[top], head[key[v]] = v, head[key[v]], top
        top += 1
    order = np.empty(n, dtype=np.intp)
    level = 0
    for k in range(n - 1, -1, -1):
        v = -1
        while v < 0:
            while head[level] >= 0:
                node = head[level]
                head[level] = below[node]
                if key[vertex[node]] == level:
                    v = vertex[node]
                    break
            if v < 0:
                level += 1
        key[v] = -1
        order[k] = v
        for p in range(ptr[v], ptr[v + 1]):
            u = idx[p]
            d = key[u]
            if d > 0:
                key[u] = d - 1
                vertex[top], below[top], head[d - 1] = u, head[d - 1], top
                top += 1
        if level:
            level -= 1
    return order


def dynamic_largest_first(ptr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """`_orders.dynamic_largest_first`."""
    n = ptr.size - 1
    key = ptr[1:] - ptr[:-1]
    head = np.full(key.max() + 1, -1, dtype=np.intp)
    vertex = np.empty(n + idx.size, dtype=np.intp)
    below = np.empty(n + idx.size, dtype=np.intp)
    top = 0
    for v in range(n - 1, -1, -1):
        vertex[top], below[top], head[key[v]] = v, head[key[v]], top
        top += 1
    order = np.empty(n, dtype=np.intp)
    level = head.size - 1
    for k in range(n):
        v = -1
        while v < 0:
            while head[level] >= 0:
                node = head[level]
                head[level] = below[node]
                if key[vertex[node]] == level:
                    v = vertex[node]
                    break
            if v < 0:
                level -= 1
        key[v] = -1
        order[k] = v
        for p in range(ptr[v], ptr[v + 1]):
            u = idx[p]
            d = key[u]
            if d > 0:
                key[u] = d - 1
                vertex[top], below[top], head[d - 1] = u, head[d - 1], top
                top += 1
    return order


def incidence_degree(ptr: np.ndarray, idx: np.ndarray, first: np.ndarray) -> np.ndarray:
    """`_orders.incidence_degree`; `first` is the initial content of bucket 0, bottom to top."""
    n = ptr.size - 1
    key = np.zeros(n, dtype=np.intp)
    head = np.full((ptr[1:] - ptr[:-1]).max() + 1, -1, dtype=np.intp)
    vertex = np.empty(n + idx.size, dtype=np.intp)
    below = np.empty(n + idx.size, dtype=np.intp)
    top = 0
    for v in first:
        vertex[top], below[top], head[0] = v, head[0], top
        top += 1
    order = np.empty(n, dtype=np.intp)
    level = 0
    for k in range(n):
        v = -1
        while v < 0:
            while head[level] >= 0:
                node = head[level]
                head[level] = below[node]
                if key[vertex[node]] == level:
                    v = vertex[node]
                    break
            if v < 0:
                level -= 1
        key[v] = -1
        order[k] = v
        for p in range(ptr[v], ptr[v + 1]):
            u = idx[p]
            d = key[u]
            if d >= 0:
                key[u] = d + 1
                vertex[top], below[top], head[d + 1] = u, head[d + 1], top
                top += 1
                if d + 1 > level:
                    level = d + 1
    return order


# greedy colorings ---------------------------------------------------------------------------------


def greedy_distance1(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`_distance1.greedy_distance1`."""
    n = ptr.size - 1
    color = np.full(n, -1, dtype=np.intp)
    mark = np.full((ptr[1:] - ptr[:-1]).max() + 2, -1, dtype=np.intp)  # mark[c] == v: c taken around v
    for v in order:
        for p in range(ptr[v], ptr[v + 1]):
            c = color[idx[p]]
            if c >= 0:
                mark[c] = v
        c = 0
        while mark[c] == v:
            c += 1
        color[v] = c
    return color


def greedy_star(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`_star.greedy_star`. `around[w]` (color -> the one neighbour of w with it, or -1) is the slots
    `ptr[w] : ptr[w] + around_size[w]` of `around_color`, `around_vertex`; `hubs[w]` the slots
    `ptr[w] : ptr[w] + hub_size[w]` of `hub_color`."""
    n = ptr.size - 1
    color = np.full(n, -1, dtype=np.intp)
    around_color = np.empty(idx.size, dtype=np.intp)
    around_vertex = np.empty(idx.size, dtype=np.intp)
    around_size = np.zeros(n, dtype=np.intp)
    repeats = np.zeros(n, dtype=np.bool_)  # some value of around[w] is -1 (it stays so)
    hub_color = np.empty(idx.size, dtype=np.intp)
    hub_size = np.zeros(n, dtype=np.intp)
    forbidden = np.full(n + 1, -1, dtype=np.intp)  # forbidden[c] == v: v may not take c
    value = np.empty(n + 1, dtype=np.intp)  # around[v] by color, while coloring v
    repeated = np.empty(n, dtype=np.intp)
    for v in order:
        lo, hi = ptr[v], ptr[v + 1]
        for p in range(lo, hi):
            w = idx[p]
            if color[w] >= 0:
                forbidden[color[w]] = v
                for s in range(ptr[w], ptr[w] + hub_size[w]):
                    forbidden[hub_color[s]] = v
        nrepeated = 0
        if repeats[v]:
            for s in range(ptr[v], ptr[v] + around_size[v]):
                value[around_color[s]] = around_vertex[s]
            for p in range(lo, hi):
                w = idx[p]
                if color[w] >= 0 and value[color[w]] < 0:
                    repeated[nrepeated] = w
                    nrepeated += 1
            for r in range(nrepeated):
                w = repeated[r]
                for s in range(ptr[w], ptr[w] + around_size[w]):
                    forbidden[around_color[s]] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
        for p in range(lo, hi):
            w = idx[p]
            slot = -1
            for s in range(ptr[w], ptr[w] + around_size[w]):
                if around_color[s] == c:
                    slot = s
                    break
            if slot < 0:
                s = ptr[w] + around_size[w]
                around_color[s], around_vertex[s] = c, v
                around_size[w] += 1
                continue
            other = around_vertex[slot]
            around_vertex[slot] = -1
            repeats[w] = True
            a = color[w]
            if a >= 0:
                for x in (v, other):
                    if x < 0:
                        continue
                    known = False
                    for s in range(ptr[x], ptr[x] + hub_size[x]):
                        if hub_color[s] == a:
                            known = True
                            break
                    if not known:
                        hub_color[ptr[x] + hub_size[x]] = a
                        hub_size[x] += 1
        for r in range(nrepeated):
            w = repeated[r]
            known = False
            for s in range(ptr[w], ptr[w] + hub_size[w]):
                if hub_color[s] == c:
                    known = True
                    break
            if not known:
                hub_color[ptr[w] + hub_size[w]] = c
                hub_size[w] += 1
    return color


def greedy_acyclic(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray, edge: np.ndarray) -> np.ndarray:
    """`_acyclic.greedy_acyclic`; `edge[p]` is the position of one direction of the edge at position p
    (the same for both), the disjoint sets are over those."""
    n = ptr.size - 1
    parent = np.arange(idx.size, dtype=np.intp)
    color = np.full(n, -1, dtype=np.intp)
    forbidden = np.full(n + 1, -1, dtype=np.intp)  # forbidden[c] == v: v may not take c
    entered_at = np.full(idx.size, -1, dtype=np.intp)  # entered_at[tree] == v: v reached it ...
    through = np.empty(idx.size, dtype=np.intp)  # ... through this neighbour
    seen_at = np.full(n + 1, -1, dtype=np.intp)  # seen_at[a] == v: an edge to color a is `first[a]`
    first = np.empty(n + 1, dtype=np.intp)
    for v in order:
        lo, hi = ptr[v], ptr[v + 1]
        for p in range(lo, hi):
            if color[idx[p]] >= 0:
                forbidden[color[idx[p]]] = v
        for p in range(lo, hi):
            w = idx[p]
            if color[w] < 0:
                continue
            for q in range(ptr[w], ptr[w + 1]):
                x = idx[q]
                cx = color[x]
                if cx < 0 or x == v or forbidden[cx] == v:
                    continue
                tree = edge[q]
                while parent[tree] != tree:
                    parent[tree] = parent[parent[tree]]
                    tree = parent[tree]
                if entered_at[tree] != v:
                    entered_at[tree], through[tree] = v, w
                elif through[tree] != w:
                    forbidden[cx] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
        for p in range(lo, hi):
            w = idx[p]
            a = color[w]
            if a < 0:
                continue
            e = edge[p]
            partners = 0  # union e with first[a] (if seen) and with the edges (w, x), x of color c
            if seen_at[a] == v:
                partners = 1
            else:
                seen_at[a], first[a] = v, e
            for q in range(ptr[w], ptr[w + 1] + partners):
                if q < ptr[w + 1]:
                    if color[idx[q]] != c or idx[q] == v:
                        continue
                    f = edge[q]
                else:
                    f = first[a]
                root_e, root_f = e, f
                while parent[root_e] != root_e:
                    parent[root_e] = parent[parent[root_e]]
                    root_e = parent[root_e]
                while parent[root_f] != root_f:
                    parent[root_f] = parent[parent[root_f]]
                    root_f = parent[root_f]
                if root_e != root_f:
                    parent[root_e] = root_f
    return color


# graphs -------------------------------------------------------------------------------------------


def column_graph(
    n: int, col_ptr: np.ndarray, col_rows: np.ndarray, row_ptr: np.ndarray, row_cols: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`_graph.column_graph` of the (m, n) pattern with CSR `(row_ptr, row_cols)` and CSC `(col_ptr,
    col_rows)`: two passes over each column's rows' columns (count, then fill), each list then sorted."""
    seen = np.full(n, -1, dtype=np.intp)  # seen[k] == j: k is already a neighbour of j
    ptr = np.zeros(n + 1, dtype=np.intp)
    for j in range(n):
        count = 0
        for p in range(col_ptr[j], col_ptr[j + 1]):
            r = col_rows[p]
            for q in range(row_ptr[r], row_ptr[r + 1]):
                k = row_cols[q]
                if k != j and seen[k] != j:
                    seen[k] = j
                    count += 1
        ptr[j + 1] = ptr[j] + count
    idx = np.empty(ptr[n], dtype=np.intp)
    seen[:] = -1
    for j in range(n):
        top = ptr[j]
        for p in range(col_ptr[j], col_ptr[j + 1]):
            r = col_rows[p]
            for q in range(row_ptr[r], row_ptr[r + 1]):
                k = row_cols[q]
                if k != j and seen[k] != j:
                    seen[k] = j
                    idx[top] = k
                    top += 1
        if top - ptr[j] > 32:
            idx[ptr[j] : top] = np.sort(idx[ptr[j] : top])
        else:  # insertion sort, in place: no allocation for the short lists of a stencil
            for p in range(ptr[j] + 1, top):
                k = idx[p]
                q = p - 1
                while q >= ptr[j] and idx[q] > k:
                    idx[q + 1] = idx[q]
                    q -= 1
                idx[q + 1] = k
    return ptr, idx
