"""`python -m diface [info | compare | bench]`: the tour, the backends, cross-engine checks, speed."""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sys
from typing import Any

from ._backend import Backend
from ._engines import engine_of, engines
from ._errors import ArgumentError, DifaceError

__all__ = ["main", "parse_backend"]


def parse_backend(spec: str) -> Backend:
    """`NAME` or `NAME:ARG` (e.g. `jax`, `torch:forward`, `finitediff:complex`) as a backend."""
    name, _, arg = spec.partition(":")
    known = engines()
    if name not in known:
        raise ArgumentError(f"unknown backend {name!r}; known: {', '.join(sorted(known))}")
    cls = known[name].backend
    return cls(arg) if arg else cls()


def _default_backends() -> list[Backend]:
    return [e.backend() for e in engines().values() if e.backend().is_available()]


def _chosen(specs: list[str] | None) -> list[Backend]:
    backends = [parse_backend(s) for s in specs] if specs else _default_backends()
    for b in backends:
        b.require()
        engine = engine_of(b)
        if engine is not None:
            engine.configure_for_float64()
    return backends


def _version(package: str | None) -> str:
    if package is None:
        return "-"
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def info(console: Any) -> int:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="diface backends")
    for column in ("name", "backend", "package", "version", "available", "modes", "in-place"):
        table.add_column(column)
    for name, engine in sorted(engines().items()):
        cls = engine.backend
        backend = cls()
        available = backend.is_available()
        table.add_row(
            name,
            repr(backend),
            cls.package or "numpy",
            _version(cls.package or "numpy"),
            "[green]yes[/]" if available else "[red]no[/]: " + escape(f"pip install 'diface[{cls.extra}]'"),
            ", ".join(sorted(cls.native_modes)),
            "yes" if cls.supports_inplace else "no",
        )
    console.print(table)
    console.print(f"diface {_version('diface')}, Python {platform.python_version()}, numpy {_version('numpy')}")
    return 0


def compare(console: Any, specs: list[str] | None, which: str) -> int:
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from .testing import _kit
    from .testing._complex import complex_intermediate_scenarios
    from .testing._layouts import edge_scenarios, layout_scenarios
    from .testing._scenarios import default_scenarios
    from .testing._structural import structural_scenarios

    backends = _chosen(specs)
    scenarios = {
        "default": default_scenarios,
        "structural": structural_scenarios,
        "layouts": layout_scenarios,
        "edges": edge_scenarios,
        "complex": complex_intermediate_scenarios,
        "all": _kit.all_scenarios,
    }[which]()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("checking", total=len(backends) * len(scenarios))

        def step(what: str) -> None:
            progress.update(task, advance=1, description=escape(what[:70]))

        report = _kit.run_checks(backends, scenarios, progress=step)
    counts = report.counts()
    operators = list(dict.fromkeys(op for _, op in counts))
    table = Table(
        title=f"diface compare: {len(scenarios)} scenarios, every variant, each call twice, and from 8 threads"
    )
    table.add_column("backend", no_wrap=True)
    for op in operators:
        table.add_column(op.replace("_", " "), justify="center")
    for backend in dict.fromkeys(b for b, _ in counts):
        cells = []
        for op in operators:
            cell = counts.get((backend, op), {})
            cells.append(_cell(cell))
        table.add_row(backend, *cells)
    console.print(table)
    console.print(
        "cells: checks passed/run; [yellow]Nx[/]: expected failures (known engine limits); "
        "[cyan]Nr[/]: refused with NotSupportedError, as the engine is known to; "
        "[dim]N-[/]: not applicable (the engine cannot run the scenario)"
    )
    expected = [r for r in report.rows if r.status in ("xfail", "xpass")]
    for reason in dict.fromkeys(r.reason for r in expected):
        console.print(f"[yellow]expected failure[/]: {escape(reason)}")
    if report.ok:
        console.print(f"[green]all {len(report.rows)} checks agree[/]")
        return 0
    console.print(f"[red]{len(report.failed)} disagreements[/]:")
    console.print(report.failure_table(), markup=False, highlight=False)
    return 1


def _cell(cell: dict[str, int]) -> str:
    """`passed/run`, green or red, then the expected failures and the checks that do not apply."""
    if not cell:
        return ""
    passed = cell.get("pass", 0) + cell.get("xpass", 0)
    run = sum(cell.values()) - cell.get("n/a", 0) - cell.get("unsupported", 0)
    text = f"[red]{passed}/{run}[/]" if cell.get("fail") else f"[green]{passed}/{run}[/]"
    if cell.get("xfail"):
        text += f" [yellow]{cell['xfail']}x[/]"
    if cell.get("unsupported"):
        text += f" [cyan]{cell['unsupported']}r[/]"
    if cell.get("n/a"):
        text += f" [dim]{cell['n/a']}-[/]"
    return text


def bench(console: Any, specs: list[str] | None, plot: str | None, full: bool = False) -> int:
    from rich.markup import escape
    from rich.progress import Progress
    from rich.table import Table

    from .testing._bench import CASES, compare_minimize, compare_speed, full_cases

    backends = _chosen(specs)
    if plot:
        _require_matplotlib()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("timing", total=None)
        step = lambda what: progress.update(task, description=escape(what[:70]))
        rows = compare_speed(backends, full_cases() if full else CASES, progress=step)
        step("scipy.optimize.minimize(method='trust-ncg')")
        minimize_rows = compare_minimize(backends) if _has_scipy() else []
    table = Table(title="prepared diface call vs the engine called directly (medians of interleaved rounds)")
    columns = ("backend", "operator", "n", "input", "diface", "direct", "reference", "ratio", "memory")
    for column in columns:
        justify = "right" if column in ("n", "diface", "direct", "ratio") else "left"
        table.add_column(column, justify=justify, overflow="fold")
    for r in rows:
        table.add_row(
            r.backend,
            r.operator,
            str(r.n),
            r.input,
            _us(r.diface_seconds),
            _us(r.direct_seconds),
            r.reference,
            _ratio(r.ratio),
            _memory(r),
        )
    console.print(table)
    console.print(
        "problems: Rosenbrock (gradient, hvp), tanh(A x) + x (jacobian), sum(softplus(A x)) + |x|^2 / 2 (hessian). "
        "memory: the result's size; the preparation's resident memory; the peak of one call above what was "
        "resident before it"
    )
    if minimize_rows:
        table = Table(title="scipy.optimize.minimize(rosenbrock, method='trust-ncg', jac=, hessp=), n = 100")
        for column in ("backend", "iterations", "diface", "direct", "reference", "ratio"):
            table.add_column(column)
        for m in minimize_rows:
            table.add_row(
                m.backend, str(m.iterations), _us(m.diface_seconds), _us(m.direct_seconds), m.reference, _ratio(m.ratio)
            )
        console.print(table)
    if plot:
        _plot(rows, plot)
        console.print(f"plot written to {plot}")
    return 0


def _has_scipy() -> bool:
    import importlib.util

    return importlib.util.find_spec("scipy") is not None


def _ratio(ratio: float) -> str:
    colour = "green" if ratio <= 1.15 else "yellow" if ratio <= 1.5 else "red"
    return f"[{colour}]{ratio:.2f}[/]"


def _memory(row: Any) -> str:
    if row.operator not in ("jacobian", "hessian") or row.prep_mib is None:
        return ""
    peak = "?" if row.peak_mib is None else f"{row.peak_mib:.1f}"
    return f"{row.result_mib:.1f} / {row.prep_mib:.1f} / {peak} MiB"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us" if seconds < 1e-2 else f"{seconds * 1e3:,.1f} ms"


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise DifaceError("--plot needs matplotlib: pip install 'diface[plot]'") from e


def _plot(rows: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r.backend}\n{r.operator} n={r.n} {r.input}" for r in rows]
    ratios = [r.ratio for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(rows)), 4.0))
    ax.bar(range(len(rows)), ratios, color=["tab:green" if q <= 1.15 else "tab:orange" for q in ratios])
    ax.set_yscale("log")  # ratios span from a few percent (the tape against autograd) to above one
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("diface time / direct engine time")
    ax.set_title("Prepared diface calls against the engines called directly")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m diface",
        description="diface: one differentiation API over many AD engines. Without a command: a short tour.",
    )
    commands = parser.add_subparsers(dest="command", metavar="{info,compare,bench}")
    commands.add_parser("info", help="which backends are available, with versions")
    c = commands.add_parser("compare", help="run the test kit on every available backend")
    c.add_argument("--backends", nargs="+", metavar="NAME[:ARG]", help="e.g. jax torch:forward finitediff:complex")
    c.add_argument(
        "--scenarios", choices=("default", "structural", "layouts", "edges", "complex", "all"), default="all"
    )
    b = commands.add_parser("bench", help="prepared diface calls against the engines called directly")
    b.add_argument("--backends", nargs="+", metavar="NAME[:ARG]")
    b.add_argument("--plot", metavar="FILE.png", help="also draw the ratios (needs matplotlib)")
    b.add_argument(
        "--full", action="store_true", help="the whole grid: n to 1e5 (gradient, hvp), 1000 (jacobian), 300 (hessian)"
    )
    args = parser.parse_args(argv)

    from rich.console import Console

    console = Console() if sys.stdout.isatty() else Console(width=150)  # wide tables in logs and pipes
    try:
        if args.command is None:
            from ._tour import tour

            tour()
            return 0
        if args.command == "info":
            return info(console)
        if args.command == "compare":
            return compare(console, args.backends, args.scenarios)
        return bench(console, args.backends, args.plot, args.full)
    except DifaceError as e:
        from rich.markup import escape

        console.print(f"[red]error[/]: {escape(str(e))}", highlight=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
