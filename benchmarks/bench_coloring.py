"""Coloring for sparse Jacobians and Hessians: colors and time per pattern and order, against SciPy's
column grouping (`scipy.optimize._numdiff.group_columns`, what `approx_derivative(sparsity=...)` uses)
and, where the `asdex` package can be imported, asdex's coloring of the same pattern.

Times are the best of `--repeats` runs in one process (coloring includes building the graph, the order,
the iterated passes and the validation; `plan` is the decompression plan, built once afterwards).

    python benchmarks/bench_coloring.py [--repeats 5] [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from diface._sparse import Coloring, GreedyColoring, decompress
from diface._sparse.examples import arrowhead, brusselator_2d, laplacian_2d, random_pattern, tridiagonal
from diface._table import format_table

ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree", "dynamic_largest_first", "random")


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def scipy_grouping(pattern: Any, repeats: int) -> tuple[str, str]:
    try:
        from scipy.optimize._numdiff import group_columns
    except ImportError:
        return "-", "-"
    matrix = pattern.to_scipy()
    t, groups = best_time(lambda: group_columns(matrix), repeats)
    return str(int(groups.max()) + 1), ms(t)


def asdex_coloring(pattern: Any, kind: str, repeats: int) -> tuple[str, str]:
    try:
        import asdex
    except ImportError:
        return "-", "-"
    dense = pattern.to_dense()
    if kind == "star":
        run = lambda: asdex.hessian_coloring_from_sparsity(dense)
    else:
        mode = {"column": "fwd", "row": "rev"}[kind]
        run = lambda: asdex.jacobian_coloring_from_sparsity(dense, mode=mode)
    t, colored = best_time(run, repeats)
    return str(getattr(colored, "num_colors", "?")), ms(t)


def plan_time(coloring: Coloring, repeats: int) -> tuple[float, Any]:
    """Building the decompression plan of a (fresh) coloring."""
    best, plan = float("inf"), None
    for _ in range(repeats):
        fresh = Coloring(coloring.pattern, coloring.kind, coloring.column_colors, coloring.row_colors)
        start = time.perf_counter()
        plan = fresh.plan()
        best = min(best, time.perf_counter() - start)
    return best, plan


def check(coloring: Any) -> None:
    """The plan recovers a random matrix on the pattern (a sanity check, not timed)."""
    pattern = coloring.pattern
    rng = np.random.default_rng(0)
    J = np.zeros(pattern.shape)
    J[pattern.rows, pattern.cols] = rng.standard_normal(pattern.nnz)
    if coloring.kind in ("star", "acyclic"):
        J = np.triu(J) + np.triu(J, 1).T
    B = J @ coloring.forward_seed() if coloring.forward else None
    C = coloring.reverse_seed().T @ J if coloring.reverse else None
    data = decompress(coloring.plan(), B, C)
    assert np.allclose(data, J[pattern.rows, pattern.cols], rtol=0, atol=1e-12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="default and all-orders settings only")
    args = parser.parse_args()
    cases = [
        ("tridiagonal n=5000", tridiagonal(5000), "column"),
        ("laplacian 100x100 Dirichlet", laplacian_2d(100), "column"),
        ("brusselator 32x32x2", brusselator_2d(32), "column"),
        ("random 2000x1500 d=0.002", random_pattern(2000, 1500, 0.002, 1), "column"),
        ("random 2000x1500 d=0.002", random_pattern(2000, 1500, 0.002, 1), "row"),
        ("arrowhead n=1000", arrowhead(1000), "bicolor"),
        ("laplacian 32x32 periodic", laplacian_2d(32, periodic=True), "star"),
        ("laplacian 32x32 periodic", laplacian_2d(32, periodic=True), "acyclic"),
        ("laplacian 100x100 Dirichlet", laplacian_2d(100), "star"),
    ]
    settings = {"default": GreedyColoring(), "all orders": GreedyColoring(order=ORDERS)}
    if not args.quick:
        settings.update({o: GreedyColoring(order=o) for o in ORDERS})
        settings["natural, no passes"] = GreedyColoring(order="natural", iterations=0)
    header = ["pattern", "kind", "setting", "colors", "time (ms)", "plan (ms)", "steps", "scipy", "scipy (ms)"]
    header += ["asdex", "asdex (ms)"]  # "-": not comparable, or the package is not installed
    rows = []
    for label, pattern, kind in cases:
        scipy_colors, scipy_ms = scipy_grouping(pattern, args.repeats) if kind == "column" else ("-", "-")
        asdex_colors, asdex_ms = (
            asdex_coloring(pattern, kind, args.repeats) if kind in ("column", "row", "star") else ("-", "-")
        )
        for name, setting in settings.items():
            t, coloring = best_time(lambda s=setting, p=pattern, k=kind: s.color(p, k), args.repeats)
            t_plan, plan = plan_time(coloring, args.repeats)
            check(coloring)
            colors = str(coloring.ncolors) if kind != "bicolor" else f"{coloring.forward}+{coloring.reverse}"
            steps = str(len(plan.steps))
            rows.append(
                [label, kind, name, colors, ms(t), ms(t_plan), steps, scipy_colors, scipy_ms, asdex_colors, asdex_ms]
            )
            label = scipy_colors = scipy_ms = asdex_colors = asdex_ms = ""
    print(format_table(header, rows))


if __name__ == "__main__":
    main()
