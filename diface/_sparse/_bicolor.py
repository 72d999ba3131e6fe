"""Bicoloring for mixed mode: forward products `J S_c` and reverse products `S_r^T J` together, each
nonzero read directly from one of them (Coleman & Verma 1998; Gebremedhin, Manne & Pothen 2005,
section 5).

A dense row costs one reverse product but forces every column apart in forward mode; a dense column
the other way round. The heuristic here splits the nonzeros by lines:

- *row split*: the rows with at least t nonzeros are read from reverse products (a row coloring of
  those rows alone), every other row from forward products (a column coloring of the other rows alone;
  columns with no nonzero there are left out of the forward seeds);
- *column split*: the same with columns and rows exchanged.

The two halves are independent: a seeded column never reaches a row that is read in reverse, and
conversely, so each half's coloring only has to separate its own nonzeros. Thresholds t are tried where
the lines they move are fewer than t (moving k lines costs at least k colors on the other side; a line
of t nonzeros costs at least t colors on its own), plus "no split" both ways (plain column or row
coloring), and the split with the fewest products in total is kept. An arrowhead (w dense rows, w dense
columns, a diagonal) then needs 2w + 1 products where either one-sided coloring needs n.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._pattern import INDEX, Pattern

__all__ = ["bicolor", "split_thresholds"]

#: most thresholds tried per side
MAX_THRESHOLDS = 3

#: `color(pattern, "column" | "row") -> ((n,) or (m,) colors, -1 for lines without nonzeros; order name)`
OneSided = Callable[[Pattern, str], tuple[np.ndarray, str]]


def split_thresholds(counts: np.ndarray) -> list[int]:
    """Thresholds t (largest first) for which fewer than t lines have at least t nonzeros."""
    values = np.unique(counts[counts > 0])[::-1]
    ordered = np.sort(counts)[::-1]
    out = []
    for t in values.tolist():
        moved = int(np.searchsorted(-ordered, -t, side="right"))
        if moved >= t:
            break
        out.append(t)
    if len(out) > MAX_THRESHOLDS:  # spread: the largest, the smallest, one between
        out = [out[0], out[len(out) // 2], out[-1]]
    return out


def _ncolors(colors: np.ndarray) -> int:
    return int(colors.max()) + 1 if colors.size and colors.max() >= 0 else 0


def _bound(pattern: Pattern, kind: str) -> int:
    """A lower bound on the colors of a one-sided coloring: the most nonzeros in a row (column
    coloring) or in a column (row coloring)."""
    counts = pattern.row_counts() if kind == "column" else pattern.col_counts()
    return int(counts.max()) if counts.size else 0


def bicolor(pattern: Pattern, color: OneSided) -> tuple[np.ndarray, np.ndarray, str]:
    """`(column_colors (n,), row_colors (m,), order)` of the cheapest split, -1 where not seeded.

    Candidates are colored in order of their lower bounds; one whose bound cannot beat the best found
    is skipped (an arrowhead's one-sided colorings, n colors each, are never computed)."""
    m, n = pattern.shape
    none_n, none_m = np.full(n, -1, dtype=INDEX), np.full(m, -1, dtype=INDEX)
    # (forward part or None, reverse part or None)
    splits: list[tuple[Pattern | None, Pattern | None]] = [(pattern, None), (None, pattern)]
    row_counts, col_counts = pattern.row_counts(), pattern.col_counts()
    for t in split_thresholds(row_counts):
        dense = row_counts >= t
        splits.append((pattern.select_rows(~dense)[0], pattern.select_rows(dense)[0]))
    for t in split_thresholds(col_counts):
        dense = col_counts >= t
        splits.append((pattern.select_cols(dense)[0], pattern.select_cols(~dense)[0]))
    bounds = [(0 if f is None else _bound(f, "column")) + (0 if r is None else _bound(r, "row")) for f, r in splits]
    best: tuple | None = None
    for i in np.argsort(bounds, kind="stable").tolist():
        if best is not None and bounds[i] >= best[0][0]:
            break
        forward_part, reverse_part = splits[i]
        labels = []
        if forward_part is None:
            cc = none_n
        else:
            cc, label = color(forward_part, "column")
            labels.append(label)
        if reverse_part is None:
            rc = none_m
        elif forward_part is None and pattern.is_symmetric():  # the row coloring is the column coloring
            rc, label = color(pattern, "column")
            labels.append(label)
        else:
            rc, label = color(reverse_part, "row")
            labels.append(label)
        # fewest products; then fewest reverse products (a pullback costs more than a pushforward)
        score = (_ncolors(cc) + _ncolors(rc), _ncolors(rc))
        if best is None or score < best[0]:
            best = (score, cc, rc, "/".join(dict.fromkeys(labels)))
    assert best is not None
    return best[1], best[2], best[3]
