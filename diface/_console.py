"""Output of the command line: `rich` where it is installed (colours, tables, a progress bar), plain
text where it is not. `rich` is optional: every command works without it, in plain text."""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from ._table import format_table

__all__ = ["Console", "escape", "make_console", "make_table", "progress"]

_MARKUP = re.compile(r"\[(?:/|/?(?:red|green|yellow|cyan|dim|bold)[a-z ]*)\]")


def _has_rich() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def escape(text: str) -> str:
    """`text` with rich's markup characters escaped (as it is in plain text)."""
    if not _has_rich():
        return text
    from rich.markup import escape as rich_escape

    return rich_escape(text)


class PlainTable:
    """A table printed as aligned plain text (what `rich.table.Table` shows, without `rich`)."""

    def __init__(self, title: str = "") -> None:
        self.title = title
        self.columns: list[str] = []
        self.rows: list[list[str]] = []

    def add_column(self, name: str, **options: Any) -> None:
        self.columns.append(name)

    def add_row(self, *cells: str) -> None:
        self.rows.append([_MARKUP.sub("", c) for c in cells])

    def __str__(self) -> str:
        body = format_table(self.columns, self.rows)
        return f"{self.title}\n{body}" if self.title else body


class Console:
    """`print(text or table)`: rich's console where `rich` is installed, else plain text (markup
    removed)."""

    def __init__(self) -> None:
        self.rich = None
        if _has_rich():
            from rich.console import Console as RichConsole

            self.rich = RichConsole() if sys.stdout.isatty() else RichConsole(width=200)  # wide tables in logs

    def print(self, what: Any = "", **options: Any) -> None:
        if self.rich is not None:
            self.rich.print(what, **options)
        else:
            print(_MARKUP.sub("", what) if isinstance(what, str) else what)


def make_console() -> Console:
    return Console()


def make_table(console: Console, title: str = "") -> Any:
    """A table for `console`: rich's where it has rich, else a `PlainTable`."""
    if console.rich is not None:
        from rich.table import Table

        return Table(title=title)
    return PlainTable(title)


@contextlib.contextmanager
def progress(console: Console, total: int | None, label: str) -> Iterator[Callable[[str], None]]:
    """A progress bar while the block runs (rich's, on a terminal where rich is installed; else a line on
    standard error every few seconds, so that a log shows it too); yields `step(description)`."""
    if console.rich is None or not sys.stdout.isatty():
        yield _plain_progress(total, label)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console.rich, transient=True) as bar:
        task = bar.add_task(label, total=total)

        def step(what: str) -> None:
            bar.update(task, advance=1, description=escape(what[:70]))

        yield step


def _plain_progress(total: int | None, label: str, every: float = 5.0) -> Callable[[str], None]:
    """`step(description)` printing `label: done/total, elapsed: description` to standard error at most
    every `every` seconds (the first step at once)."""
    start = time.monotonic()
    state = {"done": 0, "shown": -every}

    def step(what: str) -> None:
        state["done"] += 1
        now = time.monotonic() - start
        if now - state["shown"] >= every or state["done"] == total:
            state["shown"] = now
            of = f"/{total}" if total else ""
            print(f"{label}: {state['done']}{of}, {now:.0f} s: {what[:70]}", file=sys.stderr, flush=True)

    return step
