"""Coloring at a million unknowns (issue 21): per pattern and kind, the colors, the time to color (first call
in the process, which loads numba's kernels where numba is installed, then a second call), to build the
decompression plan, to decompress once, the memory a `decompress` call allocates (tracemalloc), the
process's peak memory, and asdex's coloring of the same pattern (where asdex can be imported).

Each case runs in its own subprocess (so peak memory is the case's own). `--pure` switches the compiled
kernels off (`diface._sparse._compiled.ENABLED = False`): the pure Python path, what runs without numba.

    python benchmarks/bench_coloring_scale.py [--scale 1.0] [--pure] [--no-asdex] [--cases tridiagonal,tv-star]

Patterns at `--scale 1` (n about 10^6): tridiagonal (1-D stencil), 2-D 5-point Laplacian 1000 x 1000,
2-D Brusselator 512 x 512 x 2, arrowhead (bicoloring), and the Hessian of a 2-D total variation on
1000 x 1000 (star and acyclic).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from diface._table import format_table

CASES = {
    "tridiagonal": ("tridiagonal", "column"),
    "laplacian": ("laplacian", "column"),
    "brusselator": ("brusselator", "column"),
    "arrowhead": ("arrowhead", "bicolor"),
    "tv-star": ("tv", "star"),
    "tv-acyclic": ("tv", "acyclic"),
}


def make(name: str, scale: float):
    from diface._sparse.examples import arrowhead, brusselator_2d, laplacian_2d, total_variation_2d, tridiagonal

    side = max(2, round(1000 * scale**0.5))
    return {
        "tridiagonal": lambda: tridiagonal(round(10**6 * scale)),
        "laplacian": lambda: laplacian_2d(side),
        "brusselator": lambda: brusselator_2d(max(2, round(512 * scale**0.5))),
        "arrowhead": lambda: arrowhead(round(10**6 * scale)),
        "tv": lambda: total_variation_2d(side),
    }[name]()


def asdex_coloring(pattern, kind: str) -> tuple[str, float | None]:
    if kind == "bicolor":  # asdex has no bicoloring; its one-sided colorings need n colors, in O(n^2)
        return "-", None
    try:
        import asdex
    except ImportError:
        return "-", None
    sparsity = asdex.SparsityPattern.from_coo(
        pattern.rows.astype(np.int32), pattern.cols.astype(np.int32), pattern.shape
    )
    start = time.perf_counter()
    if kind in ("star", "acyclic"):
        colored = asdex.hessian_coloring_from_sparsity(sparsity)
    else:
        colored = asdex.jacobian_coloring_from_sparsity(sparsity, mode="fwd")
    return str(colored.num_colors), time.perf_counter() - start


def run_case(case: str, scale: float, pure: bool, with_asdex: bool) -> dict:
    from diface._sparse import GreedyColoring, _compiled, decompress

    _compiled.ENABLED = not pure
    name, kind = CASES[case]
    start = time.perf_counter()
    pattern = make(name, scale)
    out: dict = {"case": case, "kind": kind, "n": pattern.shape[1], "nnz": pattern.nnz}
    out["build_s"] = time.perf_counter() - start
    start = time.perf_counter()
    coloring = GreedyColoring().color(pattern, kind)
    out["color_first_s"] = time.perf_counter() - start
    start = time.perf_counter()
    coloring = GreedyColoring().color(pattern, kind)
    out["color_s"] = time.perf_counter() - start
    out["colors"] = f"{coloring.forward}+{coloring.reverse}" if kind == "bicolor" else str(coloring.ncolors)
    start = time.perf_counter()
    plan = coloring.plan()
    out["plan_s"] = time.perf_counter() - start
    out["steps"] = len(plan.steps)
    rng = np.random.default_rng(0)
    m, n = pattern.shape
    B = rng.standard_normal((m, plan.forward)) if plan.forward else None
    C = rng.standard_normal((plan.reverse, n)) if plan.reverse else None
    decompress(plan, B, C)
    tracemalloc.start()
    start = time.perf_counter()
    data = decompress(plan, B, C)
    out["decompress_s"] = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # floats a call allocates (its result included), against nnz and the budget 3 (nnz + n colors)
    out["decompress_floats"] = peak / 8
    out["budget_floats"] = 3 * (pattern.nnz + max(m, n) * coloring.ncolors)
    assert data.shape == (pattern.nnz,)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before asdex imports JAX
    if with_asdex:
        out["asdex_colors"], out["asdex_s"] = asdex_coloring(pattern, kind)
    return out


def seconds(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="n relative to 10^6 (grids scale by its root)")
    parser.add_argument("--pure", action="store_true", help="the pure Python path (compiled kernels off)")
    parser.add_argument("--no-asdex", action="store_true")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # run one case here, print JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_case(args.one, args.scale, args.pure, not args.no_asdex)))
        return
    header = ["case", "kind", "n", "nnz", "colors", "color 1st (s)", "color (s)", "plan (s)", "steps"]
    header += ["decompress (ms)", "decompress / nnz", "budget / nnz", "peak (MB)", "asdex colors", "asdex (s)"]
    rows = []
    for case in args.cases.split(","):
        command = [sys.executable, __file__, "--one", case, "--scale", str(args.scale)]
        command += ["--pure"] * args.pure + ["--no-asdex"] * args.no_asdex
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            print(f"{case} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(
            [
                r["case"],
                r["kind"],
                str(r["n"]),
                str(r["nnz"]),
                r["colors"],
                seconds(r["color_first_s"]),
                seconds(r["color_s"]),
                seconds(r["plan_s"]),
                str(r["steps"]),
                f"{r['decompress_s'] * 1e3:.1f}",
                f"{r['decompress_floats'] / r['nnz']:.2f}",
                f"{r['budget_floats'] / r['nnz']:.1f}",
                f"{r['peak_mb']:.0f}",
                r.get("asdex_colors", "-"),
                seconds(r.get("asdex_s")),
            ]
        )
        print(f"{case}: colored in {r['color_s']:.2f} s", file=sys.stderr, flush=True)
    print(format_table(header, rows))


if __name__ == "__main__":
    main()
