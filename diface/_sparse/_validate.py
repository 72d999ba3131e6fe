"""Checks that a coloring lets every nonzero be recovered, vectorized; each raises `ColoringError` (a
`ValueError`) naming the nonzeros in conflict.

- column coloring `(n,)`: the columns of each row have different colors (then `B = J S` holds each
  nonzero alone in its entry);
- row coloring `(m,)`: the same for the columns' rows (`C = S^T J`);
- star coloring `(n,)` of a symmetric pattern: adjacent vertices differ, and each off-diagonal nonzero
  (i, j) is alone in `(H S)[i, color[j]]` or in `(H S)[j, color[i]]` (equivalently: no path on four
  vertices has two colors);
- acyclic coloring `(n,)`: adjacent vertices differ and any two colors span a forest;
- color -1 marks a column, row or vertex left out of the seeds: allowed where it has no nonzero (and,
  in a bicoloring, where its nonzeros are read from the other side);
- bicoloring, column colors `(n,)` and row colors `(m,)`, -1 for a column or row left out of the seeds:
  each nonzero (i, j) is alone among the seeded columns of row i with color `column_colors[j]`, or
  among the seeded rows of column j with color `row_colors[i]`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import DifaceError
from ._forest import Forest, peel
from ._pattern import INDEX, Pattern

__all__ = [
    "ColoringError",
    "check_acyclic_coloring",
    "check_bicoloring",
    "check_column_coloring",
    "check_row_coloring",
    "check_star_coloring",
    "multiplicity",
]


class ColoringError(DifaceError, ValueError):
    """A coloring does not fit its sparsity pattern: some nonzero could not be recovered from the
    compressed products."""


def _colors(colors: Any, size: int, what: str, allow_unseeded: bool = False) -> np.ndarray:
    colors = np.asarray(colors)
    if colors.shape != (size,):
        raise ColoringError(f"{what} colors must have shape ({size},), got {colors.shape}")
    if colors.size and not np.issubdtype(colors.dtype, np.integer):
        raise ColoringError(f"{what} colors must be integers, got dtype {colors.dtype}")
    colors = colors.astype(INDEX, copy=False)
    lowest = -1 if allow_unseeded else 0
    if colors.size and colors.min() < lowest:
        allowed = "-1 (left out) or more" if allow_unseeded else "non-negative"
        raise ColoringError(f"{what} colors must be {allowed}, got {colors.min()}")
    return colors


def multiplicity(groups: np.ndarray, colors: np.ndarray) -> np.ndarray:
    """For each k, how many j have `(groups[j], colors[j]) == (groups[k], colors[k])`."""
    if groups.size == 0:
        return np.zeros(0, dtype=INDEX)
    keys = groups * (int(colors.max()) + 1) + colors
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
    lengths = np.diff(np.append(starts, keys.size))
    out = np.empty(keys.size, dtype=INDEX)
    out[order] = np.repeat(lengths, lengths)
    return out


def _unseeded(colors: np.ndarray, rows: np.ndarray, cols: np.ndarray, what: str, product: str) -> None:
    """Raise where a nonzero's (column, row, vertex) color is -1: it would be missing from the product."""
    if colors.size and colors.min() < 0:
        k = int(np.argmin(colors))
        line = cols[k] if what != "row" else rows[k]
        raise ColoringError(
            f"invalid {what} coloring: {what} {line} has color -1 (not seeded) but J[{rows[k]}, {cols[k]}] is a "
            f"nonzero, so {product} misses it"
        )


def _clash(groups: np.ndarray, members: np.ndarray, colors: np.ndarray, bad: int) -> tuple[int, int]:
    """Two members of the group of entry `bad` that share its color."""
    same = np.flatnonzero((groups == groups[bad]) & (colors == colors[bad]))
    return int(members[same[0]]), int(members[same[1]])


def check_column_coloring(pattern: Pattern, colors: Any) -> np.ndarray:
    """Raise `ColoringError` unless the columns of each row of `pattern` have different `colors` `(n,)`.
    Returns the colors as an index array."""
    colors = _colors(colors, pattern.shape[1], "column", allow_unseeded=True)
    col_colors = colors[pattern.cols]
    _unseeded(col_colors, pattern.rows, pattern.cols, "column", "J S")
    counts = multiplicity(pattern.rows, col_colors)
    if np.any(counts > 1):
        bad = int(np.argmax(counts > 1))
        j, k = _clash(pattern.rows, pattern.cols, col_colors, bad)
        raise ColoringError(
            f"invalid column coloring: columns {j} and {k} both have color {col_colors[bad]} and both have "
            f"a nonzero in row {pattern.rows[bad]}, so J S mixes them"
        )
    return colors


def check_row_coloring(pattern: Pattern, colors: Any) -> np.ndarray:
    """Raise `ColoringError` unless the rows of each column of `pattern` have different `colors` `(m,)`."""
    colors = _colors(colors, pattern.shape[0], "row", allow_unseeded=True)
    t = pattern.T
    row_colors = colors[t.cols]
    _unseeded(row_colors, t.cols, t.rows, "row", "S^T J")
    counts = multiplicity(t.rows, row_colors)
    if np.any(counts > 1):
        bad = int(np.argmax(counts > 1))
        i, k = _clash(t.rows, t.cols, row_colors, bad)
        raise ColoringError(
            f"invalid row coloring: rows {i} and {k} both have color {row_colors[bad]} and both have a "
            f"nonzero in column {t.rows[bad]}, so S^T J mixes them"
        )
    return colors


def _symmetric_distance1(pattern: Pattern, colors: Any, what: str) -> np.ndarray:
    if not pattern.is_symmetric():
        raise ColoringError(f"a {what} coloring needs a symmetric pattern; {pattern!r} is not symmetric")
    colors = _colors(colors, pattern.shape[0], what, allow_unseeded=True)
    rows, cols = pattern.rows, pattern.cols
    _unseeded(colors[cols], rows, cols, "vertex", "H S")
    clash = (rows != cols) & (colors[rows] == colors[cols])
    if clash.any():
        k = int(np.argmax(clash))
        raise ColoringError(
            f"invalid {what} coloring: adjacent vertices {rows[k]} and {cols[k]} (a nonzero of the pattern) "
            f"both have color {colors[rows[k]]}"
        )
    return colors


def direct_sides(pattern: Pattern, colors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each nonzero (i, j) of a symmetric pattern with a distance-1 coloring: whether it is alone in
    `(H S)[i, colors[j]]` (`(nnz,)` booleans), and the position of (j, i)."""
    alone = multiplicity(pattern.rows, colors[pattern.cols]) == 1
    return alone, pattern.mirror_positions()


def check_star_coloring(pattern: Pattern, colors: Any) -> np.ndarray:
    """Raise `ColoringError` unless `colors` `(n,)` is a star coloring of the symmetric `pattern`."""
    colors = _symmetric_distance1(pattern, colors, "star")
    alone, reverse = direct_sides(pattern, colors)
    lost = ~(alone | alone[reverse])
    if lost.any():
        k = int(np.argmax(lost))
        i, j = int(pattern.rows[k]), int(pattern.cols[k])
        rows, cols = pattern.rows, pattern.cols
        w = int(cols[np.flatnonzero((rows == i) & (cols != j) & (colors[cols] == colors[j]))[0]])
        x = int(cols[np.flatnonzero((rows == j) & (cols != i) & (colors[cols] == colors[i]))[0]])
        raise ColoringError(
            f"invalid star coloring: the path {w} - {i} - {j} - {x} has only colors {colors[i]} and "
            f"{colors[j]}, so H[{i}, {j}] cannot be read directly from H S"
        )
    return colors


def check_acyclic_coloring(pattern: Pattern, colors: Any) -> np.ndarray:
    """Raise `ColoringError` unless `colors` `(n,)` is an acyclic coloring of the symmetric `pattern`."""
    return acyclic_forest(pattern, colors)[0]


def acyclic_forest(pattern: Pattern, colors: Any) -> tuple[np.ndarray, Forest]:
    """`check_acyclic_coloring`, also returning the peeled forests (what a substitution plan is built on)."""
    colors = _symmetric_distance1(pattern, colors, "acyclic")
    forest = peel(pattern, colors)
    cycle = forest.cycle
    if cycle is not None:
        a, b, vertices = cycle
        shown = ", ".join(map(str, vertices[:12].tolist())) + (", ..." if vertices.size > 12 else "")
        raise ColoringError(
            f"invalid acyclic coloring: colors {a} and {b} form a cycle among vertices {shown}, so "
            f"substitution cannot recover those entries"
        )
    return colors, forest


def bicoloring_sides(pattern: Pattern, column_colors: np.ndarray, row_colors: np.ndarray) -> tuple:
    """Per nonzero `(nnz,)` booleans: recoverable from `J S_c` (forward), from `S_r^T J` (reverse)."""
    rows, cols = pattern.rows, pattern.cols
    cc, rc = column_colors[cols], row_colors[rows]
    forward = cc >= 0
    seeded = np.flatnonzero(forward)
    forward[seeded] = multiplicity(rows[seeded], cc[seeded]) == 1
    reverse = rc >= 0
    seeded = np.flatnonzero(reverse)
    reverse[seeded] = multiplicity(cols[seeded], rc[seeded]) == 1
    return forward, reverse


def check_bicoloring(pattern: Pattern, column_colors: Any, row_colors: Any) -> tuple[np.ndarray, np.ndarray]:
    """Raise `ColoringError` unless every nonzero of `pattern` can be read from `J S_c` or `S_r^T J`, with
    seeds from `column_colors` `(n,)` and `row_colors` `(m,)` (-1: not seeded)."""
    m, n = pattern.shape
    column_colors = _colors(column_colors, n, "bicoloring column", allow_unseeded=True)
    row_colors = _colors(row_colors, m, "bicoloring row", allow_unseeded=True)
    forward, reverse = bicoloring_sides(pattern, column_colors, row_colors)
    lost = ~(forward | reverse)
    if lost.any():
        k = int(np.argmax(lost))
        i, j = int(pattern.rows[k]), int(pattern.cols[k])
        why = []
        why.append(
            f"column {j} is not seeded"
            if column_colors[j] < 0
            else f"row {i} has another seeded column of color {column_colors[j]}"
        )
        why.append(
            f"row {i} is not seeded"
            if row_colors[i] < 0
            else f"column {j} has another seeded row of color {row_colors[i]}"
        )
        raise ColoringError(f"invalid bicoloring: J[{i}, {j}] cannot be read: {why[0]}, and {why[1]}")
    return column_colors, row_colors
