"""`python -m diface [info | compare | bench]`: the tour, the backends, cross-engine checks, speed."""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sys
from collections.abc import Callable
from typing import Any

from ._backend import Backend
from ._console import Console, escape, make_console, make_table, progress
from ._engines import engine_of, engines
from ._errors import ArgumentError, DifaceError

__all__ = ["main", "parse_backend"]


def parse_backend(spec: str) -> Backend:
    """`NAME` or `NAME:ARG` (e.g. `jax`, `torch:forward`, `finitediff:complex`) as a backend."""
    name, _, arg = spec.partition(":")
    known = engines()
    if name not in known:
        raise ArgumentError(f"unknown backend {name!r}; known: {', '.join(sorted(known))}")
    # an engine's backend: a dataclass whose first field (mode, method, ...) ARG sets
    cls: Callable[..., Backend] = known[name].backend
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


def info(console: Console) -> int:
    table = make_table(console, "diface backends")
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


def compare(console: Console, specs: list[str] | None, which: str) -> int:
    from .testing import _kit
    from .testing._complex import complex_intermediate_scenarios
    from .testing._complex_scenarios import complex_scenarios
    from .testing._layouts import edge_scenarios, layout_scenarios
    from .testing._scenarios import default_scenarios
    from .testing._structural import structural_scenarios

    backends = _chosen(specs)
    scenarios = {
        "default": default_scenarios,
        "structural": structural_scenarios,
        "layouts": layout_scenarios,
        "edges": edge_scenarios,
        "complex": lambda: complex_intermediate_scenarios() + complex_scenarios(),
        "all": lambda: _kit.all_scenarios() + complex_intermediate_scenarios() + complex_scenarios(),
    }[which]()
    with progress(console, len(backends) * len(scenarios), "checking") as step:
        report = _kit.run_checks(backends, scenarios, progress=step)
    counts = report.counts()
    operators = list(dict.fromkeys(op for _, op in counts))
    table = make_table(
        console, f"diface compare: {len(scenarios)} scenarios, every variant, each call twice, and from 8 threads"
    )
    table.add_column("backend", no_wrap=True)
    for op in operators:  # an operator's name is never cut (two words may wrap)
        name = op.replace("_", " ")
        table.add_column(name, justify="center", min_width=max(len(word) for word in name.split()))
    for backend in dict.fromkeys(b for b, _ in counts):
        cells = []
        for op in operators:
            cell = counts.get((backend, op), {})
            cells.append(_cell(cell))
        table.add_row(backend, *cells)
    console.print(table)
    console.print(
        "cells: checks passed/run; [yellow]Nx[/]: expected failures (known engine limits); "
        "[cyan]Nr[/]: refused as they must be (NotSupportedError where the engine or the mathematics has no "
        "answer, such as the Jacobian of a non-holomorphic f); "
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


def compositions(console: Console, specs: list[str] | None, sample: int) -> int:
    """The composition matrix: a table of engine x composition (cells passed / refused / wrong / crashed),
    then every refusal with its message and every defect."""
    from .testing._compositions import COMPOSITIONS, composition_cells, run_compositions

    names = [engine_of(b).name for b in _chosen(specs)]  # type: ignore[union-attr]
    cells = composition_cells(names, sample=max(1, sample))
    with progress(console, len(cells), "cells") as step:
        outcomes = run_compositions(cells, progress=step)
    table = make_table(console, f"diface compare --compositions: {len(outcomes)} cells")
    table.add_column("engine", no_wrap=True)
    for composition in COMPOSITIONS:
        table.add_column(composition, justify="center")
    by: dict[tuple[str, str], list] = {}
    for o in outcomes:
        by.setdefault((o.cell.engine, o.cell.composition), []).append(o.status)
    for name in dict.fromkeys(o.cell.engine for o in outcomes):
        row = []
        for composition in COMPOSITIONS:
            statuses = by.get((name, composition), [])
            row.append(_composition_cell(statuses) if statuses else "[dim]n/a[/]")
        table.add_row(name, *row)
    console.print(table)
    console.print("cells: passed/run; [cyan]Nr[/]: refused (NotSupportedError); [red]Nw[/]/[red]Nc[/]: wrong/crashed")
    for o in outcomes:
        if o.status != "pass":
            colour = "cyan" if o.status == "refused" else "red"
            console.print(f"[{colour}]{o.status}[/] {escape(o.cell.label())}: {escape(o.detail)}")
    defects = sum(o.status in ("wrong", "crash") for o in outcomes)
    if defects:
        console.print(f"[red]{defects} of {len(outcomes)} cells wrong or crashed[/]")
        return 1
    refused = sum(o.status == "refused" for o in outcomes)
    console.print(f"[green]{len(outcomes) - refused} cells right[/], {refused} refused, 0 wrong, 0 crashed")
    return 0


def _composition_cell(statuses: list[str]) -> str:
    passed, refused = statuses.count("pass"), statuses.count("refused")
    wrong, crashed = statuses.count("wrong"), statuses.count("crash")
    colour = "red" if wrong or crashed else "green"
    text = f"[{colour}]{passed}/{len(statuses) - refused}[/]"
    for n, mark, c in ((refused, "r", "cyan"), (wrong, "w", "red"), (crashed, "c", "red")):
        if n:
            text += f" [{c}]{n}{mark}[/]"
    return text


def _cell(cell: dict[str, int]) -> str:
    """`passed/run`, green or red, then the expected failures and the checks that do not apply."""
    if not cell:
        return ""
    passed = cell.get("pass", 0) + cell.get("xpass", 0)
    refused = cell.get("unsupported", 0) + cell.get("refused", 0)
    run = sum(cell.values()) - cell.get("n/a", 0) - refused
    text = f"[red]{passed}/{run}[/]" if cell.get("fail") else f"[green]{passed}/{run}[/]"
    if cell.get("xfail"):
        text += f" [yellow]{cell['xfail']}x[/]"
    if refused:
        text += f" [cyan]{refused}r[/]"
    if cell.get("n/a"):
        text += f" [dim]{cell['n/a']}-[/]"
    return text


def bench(console: Console, specs: list[str] | None, plot: str | None, full: bool = False) -> int:
    from .testing._bench import CASES, compare_minimize, compare_speed, full_cases

    backends = _chosen(specs)
    if plot:
        _require_matplotlib()
    with progress(console, None, "timing") as step:
        rows = compare_speed(backends, full_cases() if full else CASES, progress=step)
        step("scipy.optimize.minimize(method='trust-ncg')")
        minimize_rows = compare_minimize(backends) if _has_scipy() else []
    table = make_table(console, "prepared diface call vs the engine called directly (medians of interleaved rounds)")
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
        table = make_table(console, "scipy.optimize.minimize(rosenbrock, method='trust-ncg', jac=, hessp=), n = 100")
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


class _ShowDefaults(argparse.HelpFormatter):
    """Help that shows each option's default, where it has one worth showing (not None or a False flag)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def main(argv: list[str] | None = None) -> int:
    defaults = _ShowDefaults
    parser = argparse.ArgumentParser(
        prog="python -m diface",
        description="diface: one differentiation API over many AD engines. Without a command: a short tour.",
    )
    commands = parser.add_subparsers(dest="command", metavar="{info,compare,bench}")
    commands.add_parser("info", help="which backends are available, with versions")
    c = commands.add_parser(
        "compare",
        help="run the test kit on every available backend",
        description="The test kit on every available backend: every operator variant, prepared at one point and "
        "called at another, each call twice, and from 8 threads. The default scenarios take under a minute; "
        "--full runs every scenario (structural database, layouts, edge shapes, complex numbers).",
        formatter_class=defaults,
    )
    backends_help = "backends by name, e.g. jax torch:forward finitediff:complex (default: every installed engine)"
    c.add_argument("--backends", nargs="+", metavar="NAME[:ARG]", help=backends_help)
    c.add_argument(
        "--scenarios",
        choices=("default", "structural", "layouts", "edges", "complex", "all"),
        default="default",
        help="which scenarios to run",
    )
    c.add_argument("--full", action="store_true", help="every scenario (--scenarios all): about ten minutes")
    c.add_argument(
        "--compositions",
        action="store_true",
        help="the composition matrix instead: every wrapper over every engine, operator, input and data kind",
    )
    c.add_argument("--sample", type=int, default=1, metavar="K", help="with --compositions: a fixed 1-in-K subset")
    b = commands.add_parser(
        "bench", help="prepared diface calls against the engines called directly", formatter_class=defaults
    )
    b.add_argument("--backends", nargs="+", metavar="NAME[:ARG]", help=backends_help)
    b.add_argument("--plot", metavar="FILE.png", help="also draw the ratios (needs matplotlib)")
    b.add_argument(
        "--full", action="store_true", help="the whole grid: n to 1e5 (gradient, hvp), 1000 (jacobian), 300 (hessian)"
    )
    args = parser.parse_args(argv)
    console = make_console()
    try:
        if args.command is None:
            from ._tour import tour

            tour()
            return 0
        if args.command == "info":
            return info(console)
        if args.command == "compare":
            if args.compositions:
                return compositions(console, args.backends, args.sample)
            return compare(console, args.backends, "all" if args.full else args.scenarios)
        return bench(console, args.backends, args.plot, args.full)
    except DifaceError as e:
        console.print(f"[red]error[/]: {escape(str(e))}", highlight=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
