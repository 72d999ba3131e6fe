"""Plain-text tables (the tour and the test kit's reports need no third-party library)."""

from __future__ import annotations

__all__ = ["format_table"]


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """Left-aligned columns, a rule under the header."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])
