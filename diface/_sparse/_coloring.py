"""`GreedyColoring` (the algorithm's settings) and `Coloring` (its validated result, with seeds and plan).

>>> from diface._sparse import GreedyColoring
>>> from diface._sparse.examples import tridiagonal, arrowhead
>>> c = GreedyColoring().color(tridiagonal(6), "column")
>>> c
Coloring(kind='column', shape=(6, 6), forward=3, reverse=0, order='smallest_last')
>>> c.column_colors
array([0, 1, 2, 0, 1, 2])
>>> c.forward_seed().astype(int)
array([[1, 0, 0],
       [0, 1, 0],
       [0, 0, 1],
       [1, 0, 0],
       [0, 1, 0],
       [0, 0, 1]])
>>> GreedyColoring().color(arrowhead(100), "bicolor").ncolors
3
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import ArgumentError
from ._acyclic import greedy_acyclic
from ._bicolor import bicolor
from ._distance1 import greedy_distance1
from ._graph import adjacency_graph, column_graph
from ._orders import ORDERS, compute_order
from ._pattern import INDEX, Pattern, as_pattern
from ._plans import DecompressionPlan, acyclic_plan, bicoloring_plan, column_plan, row_plan, star_plan
from ._star import greedy_star
from ._validate import (
    ColoringError,
    acyclic_forest,
    check_bicoloring,
    check_column_coloring,
    check_row_coloring,
    check_star_coloring,
)

__all__ = ["KINDS", "Coloring", "GreedyColoring"]

#: what a coloring is for: column (forward: J S), row (reverse: S^T J), star and acyclic (symmetric H:
#: H S, read directly or by substitution), bicolor (mixed: J S_c and S_r^T J)
KINDS = ("column", "row", "star", "acyclic", "bicolor")

#: the default order: try these, keep the fewest colors
DEFAULT_ORDER = ("smallest_last", "dynamic_largest_first", "natural")
#: iterated greedy stops after this many passes in a row without fewer colors
PATIENCE = 3


def _normalize_order(order: Any, seed: int) -> tuple[tuple[str, int], ...]:
    """`order` as a tuple of (name, seed) pairs."""

    def one(item: Any) -> tuple[str, int]:
        if isinstance(item, str):
            if item not in ORDERS:
                raise ArgumentError(f"unknown coloring order {item!r}: use one of {', '.join(ORDERS)}")
            return item, seed
        if (
            isinstance(item, tuple)
            and len(item) == 2
            and item[0] == "random"
            and isinstance(item[1], (int, np.integer))
        ):
            return "random", int(item[1])
        raise ArgumentError(f"a coloring order is a name or ('random', seed), got {item!r}")

    if isinstance(order, str) or (isinstance(order, tuple) and len(order) == 2 and order[0] == "random"):
        return (one(order),)
    if isinstance(order, (tuple, list)) and order:
        return tuple(one(item) for item in order)
    raise ArgumentError(f"order must be a name, ('random', seed), or a non-empty tuple of those, got {order!r}")


def _compact(colors: np.ndarray) -> np.ndarray:
    """Colors renumbered 0, 1, ... without gaps, in the same order (-1 kept)."""
    used = colors >= 0
    if not used.any():
        return colors
    present = np.zeros(int(colors.max()) + 1, dtype=bool)
    present[colors[used]] = True
    if present.all():
        return colors
    new = np.cumsum(present) - 1
    out = colors.copy()
    out[used] = new[colors[used]]
    return out


def _count(colors: np.ndarray | None) -> int:
    return 0 if colors is None or not colors.size or colors.max() < 0 else int(colors.max()) + 1


def _class_order(colors: np.ndarray, mode: int, rng: np.random.Generator) -> np.ndarray:
    """The vertices grouped by color class: classes in reverse, by decreasing size, or shuffled."""
    k = int(colors.max()) + 1
    if mode == 0:
        rank = np.arange(k)[::-1]
    elif mode == 1:
        rank = np.empty(k, dtype=INDEX)
        rank[np.argsort(-np.bincount(colors, minlength=k), kind="stable")] = np.arange(k)
    else:
        rank = rng.permutation(k)
    return np.argsort(rank[colors], kind="stable").astype(INDEX)


@dataclass(frozen=True, repr=False)
class GreedyColoring:
    """Greedy graph coloring for sparse Jacobians and Hessians.

    - `order`: the order vertices are colored in: `"natural"`, `"largest_first"`, `"smallest_last"`,
      `"incidence_degree"`, `"dynamic_largest_first"`, `"random"` (with `seed`) or `("random", seed)`;
      or a tuple of those: each is tried and the fewest colors kept (the first on a tie; the search
      stops at the lower bound). By default smallest last, dynamic largest first, natural.
    - `seed`: for `"random"` orders and the shuffled passes of `iterations`.
    - `iterations`: at most this many passes of iterated greedy (Culberson 1992) after each order of
      a column or row coloring (bicolorings included): color again visiting the vertices class by
      class (classes reversed, by size, shuffled, in turn); a pass never uses more colors. Passes stop
      after 3 in a row without improvement, or at the lower bound (for a column coloring, the most
      nonzeros in a row). 0 turns them off. Star and acyclic colorings make no passes (measured, they
      gained nothing that trying several orders did not).

    `color(pattern, kind)` returns a validated `Coloring`; `kind` is one of `KINDS`.
    """

    order: Any = DEFAULT_ORDER
    seed: int = 0
    iterations: int = 10
    _orders: tuple[tuple[str, int], ...] = field(init=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        order = tuple(self.order) if isinstance(self.order, list) else self.order
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "_orders", _normalize_order(order, int(self.seed)))
        if not isinstance(self.iterations, (int, np.integer)) or self.iterations < 0:
            raise ArgumentError(f"iterations must be a non-negative integer, got {self.iterations!r}")

    def __repr__(self) -> str:
        parts = [f"order={self.order!r}"] if self.order != DEFAULT_ORDER else []
        if self.seed != 0:
            parts.append(f"seed={self.seed!r}")
        if self.iterations != 10:
            parts.append(f"iterations={self.iterations!r}")
        return f"GreedyColoring({', '.join(parts)})"

    # ----------------------------------------------------------------------------------------------
    def color(self, pattern: Any, kind: str = "column") -> Coloring:
        """Color `pattern` (anything `as_pattern` takes) for `kind` (one of `KINDS`)."""
        pattern = as_pattern(pattern)
        if kind == "column":
            colors, order = self._distance1(pattern, "column")
            return Coloring(pattern, "column", column_colors=colors, order=order)
        if kind == "row":
            colors, order = self._distance1(pattern, "row")
            return Coloring(pattern, "row", row_colors=colors, order=order)
        if kind in ("star", "acyclic"):
            if not pattern.is_symmetric():
                raise ColoringError(f"a {kind} coloring needs a symmetric pattern; {pattern!r} is not symmetric")
            colors, order = self._symmetric(pattern, kind)
            return Coloring(pattern, kind, column_colors=colors, order=order)
        if kind == "bicolor":
            columns, rows, order = bicolor(pattern, self._distance1)
            return Coloring(pattern, "bicolor", column_colors=columns, row_colors=rows, order=order)
        raise ArgumentError(f"unknown coloring kind {kind!r}: use one of {', '.join(KINDS)}")

    # ----------------------------------------------------------------------------------------------
    def _best(self, ptr: np.ndarray, idx: np.ndarray, greedy: Any, bound: int, iterate: bool) -> tuple:
        """The fewest colors over the orders, each followed by its iterated passes (if `iterate`)."""
        best: tuple[int, np.ndarray, str] | None = None
        for name, seed in self._orders:
            colors = greedy(ptr, idx, compute_order(name, ptr, idx, seed))
            k = _count(colors)
            if iterate:
                colors, k = self._iterate(ptr, idx, greedy, colors, bound, seed)
            label = name if name != "random" or len(self._orders) == 1 else f"random({seed})"
            if best is None or k < best[0]:
                best = (k, colors, label)
            if k <= bound:
                break
        assert best is not None
        return best[1], best[2]

    def _iterate(
        self, ptr: np.ndarray, idx: np.ndarray, greedy: Any, colors: np.ndarray, bound: int, seed: int
    ) -> tuple:
        """Iterated greedy from `colors`: at most `iterations` passes, fewer once `PATIENCE` passes in a
        row bring no improvement or the lower `bound` is reached."""
        k = _count(colors)
        rng = np.random.default_rng(seed)
        current, stale = colors, 0
        for i in range(self.iterations):
            if k <= bound or stale >= PATIENCE:
                break
            current = greedy(ptr, idx, _class_order(current, i % 3, rng))
            if _count(current) < k:
                colors, k, stale = current, _count(current), 0
            else:
                stale += 1
        return colors, k

    def _distance1(self, pattern: Pattern, kind: str) -> tuple[np.ndarray, str]:
        target = pattern if kind == "column" else pattern.T
        used = target.col_counts() > 0
        if not used.any():
            return np.full(target.shape[1], -1, dtype=INDEX), self._label()
        ptr, idx = column_graph(target)
        bound = int(target.row_counts().max())
        colors, order = self._best(ptr, idx, greedy_distance1, bound, iterate=True)
        colors = colors.copy()
        colors[~used] = -1
        return _compact(colors), order

    def _symmetric(self, pattern: Pattern, kind: str) -> tuple[np.ndarray, str]:
        used = pattern.row_counts() > 0
        if not used.any():
            return np.full(pattern.shape[0], -1, dtype=INDEX), self._label()
        ptr, idx = adjacency_graph(pattern)
        greedy = greedy_star if kind == "star" else greedy_acyclic
        bound = 2 if idx.size else 1
        colors, order = self._best(ptr, idx, greedy, bound, iterate=False)
        colors = colors.copy()
        colors[~used] = -1
        return _compact(colors), order

    def _label(self) -> str:
        return self._orders[0][0]


def _frozen(a: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return None
    a = np.array(a, dtype=INDEX)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False, repr=False)
class Coloring:
    """A coloring of `pattern` for `kind`, validated when made (`ColoringError` if it cannot recover
    every nonzero).

    - `column_colors` `(n,)`: the color of each column (kinds column and bicolor) or vertex (star,
      acyclic); `row_colors` `(m,)`: of each row (kinds row and bicolor); -1 where a line is in no seed;
      None for the side a kind does not use;
    - `forward`: the forward products (`J S_c` or `H S`, one per column color), `reverse`: the reverse
      products (`S_r^T J`, one per row color), `ncolors`: both together;
    - `forward_seed()` `(n, forward)` and `reverse_seed()` `(m, reverse)`: the 0/1 seed matrices;
    - `plan()`: the `DecompressionPlan` (built once).
    """

    pattern: Pattern
    kind: str
    column_colors: np.ndarray | None = None
    row_colors: np.ndarray | None = None
    order: str = ""
    _cache: dict = field(default_factory=dict, init=False, compare=False)

    def __post_init__(self) -> None:
        pattern = as_pattern(self.pattern)
        object.__setattr__(self, "pattern", pattern)
        cc, rc = self.column_colors, self.row_colors
        if self.kind not in KINDS:
            raise ArgumentError(f"unknown coloring kind {self.kind!r}: use one of {', '.join(KINDS)}")
        needs = {
            "column": (True, False),
            "row": (False, True),
            "star": (True, False),
            "acyclic": (True, False),
            "bicolor": (True, True),
        }[self.kind]
        for given, needed, side in ((cc, needs[0], "column_colors"), (rc, needs[1], "row_colors")):
            if needed and given is None:
                raise ArgumentError(f"a {self.kind} coloring needs {side}")
            if not needed and given is not None:
                raise ArgumentError(f"a {self.kind} coloring has no {side}")
        if self.kind == "column":
            cc = check_column_coloring(pattern, cc)
        elif self.kind == "row":
            rc = check_row_coloring(pattern, rc)
        elif self.kind == "star":
            cc = check_star_coloring(pattern, cc)
        elif self.kind == "acyclic":
            cc, forest = acyclic_forest(pattern, cc)
            self._cache["forest"] = forest  # for the plan (peeling costs as much as the rest of it)
        else:
            cc, rc = check_bicoloring(pattern, cc, rc)
        object.__setattr__(self, "column_colors", _frozen(cc))
        object.__setattr__(self, "row_colors", _frozen(rc))

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape

    @property
    def forward(self) -> int:
        return _count(self.column_colors)

    @property
    def reverse(self) -> int:
        return _count(self.row_colors)

    @property
    def ncolors(self) -> int:
        return self.forward + self.reverse

    @property
    def colors(self) -> np.ndarray:
        """The colors of a one-sided coloring: `row_colors` for kind row, else `column_colors`."""
        if self.kind == "bicolor":
            raise AttributeError("a bicoloring has column_colors and row_colors")
        return _given(self.row_colors if self.kind == "row" else self.column_colors)

    def forward_seed(self, dtype: Any = np.float64) -> np.ndarray:
        """`(n, forward)` 0/1: column k seeds the columns of color k."""
        return _seed(self.column_colors, self.shape[1], self.forward, dtype)

    def reverse_seed(self, dtype: Any = np.float64) -> np.ndarray:
        """`(m, reverse)` 0/1: column k seeds the rows of color k."""
        return _seed(self.row_colors, self.shape[0], self.reverse, dtype)

    def plan(self) -> DecompressionPlan:
        """How to read the nonzeros out of the compressed products (built once)."""
        if "plan" not in self._cache:
            p, cc, rc = self.pattern, self.column_colors, self.row_colors
            if self.kind == "column":
                plan = column_plan(p, _given(cc), self.forward)
            elif self.kind == "row":
                plan = row_plan(p, _given(rc), self.reverse)
            elif self.kind == "star":
                plan = star_plan(p, _given(cc), self.forward)
            elif self.kind == "acyclic":
                plan = acyclic_plan(p, _given(cc), self.forward, self._cache.pop("forest", None))
            else:
                plan = bicoloring_plan(p, _given(cc), _given(rc), self.forward, self.reverse)
            self._cache["plan"] = plan
        return self._cache["plan"]

    def __repr__(self) -> str:
        return (
            f"Coloring(kind={self.kind!r}, shape={self.shape}, forward={self.forward}, reverse={self.reverse}, "
            f"order={self.order!r})"
        )


def _given(colors: np.ndarray | None) -> np.ndarray:
    """Colors the coloring's kind has (`Coloring.__post_init__` checked that they were given)."""
    assert colors is not None
    return colors


def _seed(colors: np.ndarray | None, size: int, ncolors: int, dtype: Any) -> np.ndarray:
    seed = np.zeros((size, ncolors), dtype=dtype)
    if colors is not None:
        used = np.flatnonzero(colors >= 0)
        seed[used, colors[used]] = 1
    return seed
