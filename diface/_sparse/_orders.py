"""Vertex orders for greedy coloring, on a graph given as CSR adjacency `(ptr, idx)` (see `_graph`).

Each function returns an `(n,)` permutation: the order in which the greedy coloring visits the vertices.

- `natural`: 0, 1, ..., n - 1;
- `random`: a random permutation (`numpy.random.default_rng(seed)`);
- `largest_first`: by decreasing degree (Welsh & Powell), ties in natural order;
- `smallest_last`: repeatedly remove a vertex of smallest degree in what remains, color in the reverse
  order of removal (Matula & Beck); never more than degeneracy + 1 colors;
- `incidence_degree`: next, the vertex with the most neighbours already ordered (Coleman & Moré);
- `dynamic_largest_first`: next, the vertex with the most neighbours not yet ordered.

The dynamic orders use bucket queues with lazy deletion: O(n + |E|) steps, compiled where `_compiled` can
(the same order).
"""

from __future__ import annotations

import numpy as np

from . import _compiled
from ._pattern import INDEX

__all__ = ["ORDERS", "compute_order"]


def natural(ptr: np.ndarray, idx: np.ndarray, seed: int = 0) -> np.ndarray:
    return np.arange(ptr.size - 1, dtype=INDEX)


def random(ptr: np.ndarray, idx: np.ndarray, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).permutation(ptr.size - 1).astype(INDEX)


def largest_first(ptr: np.ndarray, idx: np.ndarray, seed: int = 0) -> np.ndarray:
    return np.argsort(-np.diff(ptr), kind="stable").astype(INDEX)


def smallest_last(ptr: np.ndarray, idx: np.ndarray, seed: int = 0) -> np.ndarray:
    n = ptr.size - 1
    if n == 0:
        return np.zeros(0, dtype=INDEX)
    fast = _compiled.kernel("smallest_last", n + idx.size)
    if fast is not None:
        return fast(ptr, idx)
    degree = np.diff(ptr)
    P, A, key = ptr.tolist(), idx.tolist(), degree.tolist()  # key: degree among the vertices left, -1 once removed
    buckets: list[list[int]] = [[] for _ in range(int(degree.max()) + 1)]
    for v in range(n):  # ties: the highest index is removed first, so colored last
        buckets[key[v]].append(v)
    order = [0] * n
    level = 0
    for k in range(n - 1, -1, -1):
        while True:  # pop a vertex whose key is `level`; stale entries (key changed since) are dropped
            bucket = buckets[level]
            while bucket:
                v = bucket.pop()
                if key[v] == level:
                    break
            else:
                level += 1
                continue
            break
        key[v] = -1
        order[k] = v
        for u in A[P[v] : P[v + 1]]:
            d = key[u]
            if d > 0:
                key[u] = d - 1
                buckets[d - 1].append(u)
        if level:
            level -= 1
    return np.array(order, dtype=INDEX)


def dynamic_largest_first(ptr: np.ndarray, idx: np.ndarray, seed: int = 0) -> np.ndarray:
    n = ptr.size - 1
    if n == 0:
        return np.zeros(0, dtype=INDEX)
    fast = _compiled.kernel("dynamic_largest_first", n + idx.size)
    if fast is not None:
        return fast(ptr, idx)
    degree = np.diff(ptr)
    P, A, key = ptr.tolist(), idx.tolist(), degree.tolist()  # key: degree among the vertices left, -1 once taken
    buckets: list[list[int]] = [[] for _ in range(int(degree.max()) + 1)]
    for v in range(n - 1, -1, -1):  # ties: the lowest index first
        buckets[key[v]].append(v)
    order = []
    level = len(buckets) - 1
    for _ in range(n):
        v, level = _pop_highest(buckets, key, level)
        key[v] = -1
        order.append(v)
        for u in A[P[v] : P[v + 1]]:
            d = key[u]
            if d > 0:
                key[u] = d - 1
                buckets[d - 1].append(u)
    return np.array(order, dtype=INDEX)


def _pop_highest(buckets: list[list[int]], key: list[int], level: int) -> tuple[int, int]:
    """The vertex on top of the highest non-empty bucket at or below `level` whose key is still that
    bucket's (entries are left behind when a key changes, and skipped here), and that bucket's level."""
    while True:
        bucket = buckets[level]
        while bucket:
            v = bucket.pop()
            if key[v] == level:
                return v, level
        level -= 1


def incidence_degree(ptr: np.ndarray, idx: np.ndarray, seed: int = 0) -> np.ndarray:
    n = ptr.size - 1
    if n == 0:
        return np.zeros(0, dtype=INDEX)
    degree = np.diff(ptr)
    P, A = ptr.tolist(), idx.tolist()
    key = [0] * n  # neighbours already ordered, -1 once ordered
    buckets: list[list[int]] = [[] for _ in range(int(degree.max()) + 1)]
    # ties (at first, all) go to the vertex of largest degree, then the lowest index
    first = np.lexsort((-np.arange(n), degree)).astype(INDEX)
    fast = _compiled.kernel("incidence_degree", n + idx.size)
    if fast is not None:
        return fast(ptr, idx, first)
    buckets[0] = first.tolist()
    order = []
    level = 0
    for _ in range(n):
        v, level = _pop_highest(buckets, key, level)
        key[v] = -1
        order.append(v)
        for u in A[P[v] : P[v + 1]]:
            d = key[u]
            if d >= 0:
                key[u] = d + 1
                buckets[d + 1].append(u)
                if d + 1 > level:
                    level = d + 1
    return np.array(order, dtype=INDEX)


ORDERS = {
    "natural": natural,
    "largest_first": largest_first,
    "smallest_last": smallest_last,
    "incidence_degree": incidence_degree,
    "dynamic_largest_first": dynamic_largest_first,
    "random": random,
}


def compute_order(name: str, ptr: np.ndarray, idx: np.ndarray, seed: int = 0) -> np.ndarray:
    """The order `name` (a key of `ORDERS`) of the graph `(ptr, idx)`."""
    return ORDERS[name](ptr, idx, seed)
