"""`di.spy`: a picture of a sparsity pattern and its coloring (needs matplotlib: `pip install 'diface[plot]'`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import ArgumentError, BackendUnavailableError
from ._pattern import Pattern, as_pattern

__all__ = ["spy"]


def spy(source: Any, *, colors: bool = True, ax: Any = None, markersize: float | None = None) -> Any:
    """Plot where a Jacobian or Hessian may be nonzero, each nonzero in the color of the product that
    computes it.

    Args:
        source: a sparse preparation (`di.prepare_jacobian(f, di.AutoSparse(...), x)`), a scipy.sparse
            matrix, a boolean array or a `Pattern`.
        colors: color the nonzeros by the preparation's coloring (columns for forward products, rows
            for reverse ones, both for a bicoloring); only for a preparation.
        ax: the matplotlib `Axes` to draw on (default: a new figure).
        markersize: dot size (default: smaller for larger matrices).

    Returns:
        The `Axes`, titled with the shape, the nonzeros and the number of colors.

    Example:
        >>> import numpy as np, diface as di
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> prep = di.prepare_jacobian(lambda x: x[1:] - x[:-1] ** 2, di.AutoSparse(di.AutoTape()), np.zeros(30))
        >>> di.spy(prep).get_title()
        '29 x 30, 58 nonzeros, 2 colors'
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise BackendUnavailableError("di.spy needs matplotlib: pip install 'diface[plot]'") from None
    pattern, coloring = _pattern_and_coloring(source)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5 * pattern.shape[0] / max(pattern.shape[1], 1) if pattern.shape[1] else 5))
    m, n = pattern.shape
    size = markersize if markersize is not None else max(0.5, min(6.0, 600.0 / max(m, n, 1)))
    rows, cols = pattern.rows, pattern.cols
    title = f"{m} x {n}, {pattern.nnz} nonzeros"
    if coloring is not None and colors:
        which = _color_of_each_nonzero(coloring, rows, cols)
        palette = plt.get_cmap("tab10" if coloring.ncolors <= 10 else "tab20")
        ax.scatter(cols, rows, c=[palette(c % palette.N) for c in which], s=size**2, marker="s", linewidths=0)
        title += f", {coloring.ncolors} colors"
    else:
        ax.scatter(cols, rows, c="k", s=size**2, marker="s", linewidths=0)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(m - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.set_xlabel("column (input element)")
    ax.set_ylabel("row (output element)")
    ax.set_title(title)
    return ax


def _pattern_and_coloring(source: Any) -> tuple[Pattern, Any]:
    kernel = getattr(source, "kernel", None)
    layout = getattr(kernel, "layout", None)
    if layout is not None:
        return layout.pattern, layout.coloring
    if kernel is not None and hasattr(source, "op"):
        raise ArgumentError("di.spy: this preparation is not sparse; prepare with di.AutoSparse(backend)")
    try:
        return as_pattern(source), None
    except (TypeError, ValueError) as e:
        raise ArgumentError(
            f"di.spy: give a sparse preparation, a scipy.sparse matrix or a boolean array ({e})"
        ) from None


def _color_of_each_nonzero(coloring: Any, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Forward colors (by column) first, then reverse colors (by row) after them, for each nonzero;
    in a bicoloring a nonzero takes the forward color of its column where that column has one."""
    column_colors = getattr(coloring, "column_colors", None)
    row_colors = getattr(coloring, "row_colors", None)
    which = np.full(rows.shape, -1, dtype=np.intp)
    if column_colors is not None:
        which = np.asarray(column_colors)[cols].astype(np.intp)
    if row_colors is not None:
        by_row = np.asarray(row_colors)[rows].astype(np.intp)
        offset = int(coloring.forward)
        use = which < 0
        which[use] = by_row[use] + offset
    return np.maximum(which, 0)
