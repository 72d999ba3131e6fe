"""Sparse Jacobians at a million unknowns: diface beside asdex and SciPy, phase by phase, with peak memory.

Cases (all f written once, for NumPy and `jax.numpy`):

- `stencil`: a 1-D three-point stencil with a quadratic term, n = 10⁶ (tridiagonal Jacobian, 3 colors);
- `laplace`: the 2-D 5-point Laplacian with a cubic term on 1000 x 1000 (n = 10⁶, 5 colors);
- `brusselator`: the 2-D Brusselator on a periodic 512 x 512 grid, two species (n = 524,288);
- `arrowhead`: y₀ = Σ x, yᵢ = x₀ + xᵢ², n = 10⁶: one dense row and one dense column, which only a
  bicoloring of `MixedMode(forward, reverse)` compresses (3 products).

Tools, each run in a fresh process so that its peak resident memory (`ru_maxrss`, the memory the
operating system saw: XLA's buffers included, which tracemalloc misses) is its own:

- `tape`, `jax`, `torch`: `AutoSparse` of `AutoTape()`, `AutoJAX()` or `AutoTorch()` (`MixedMode` of
  the same engine for the arrowhead): the whole `prepare_jacobian`, of which detection
  (`TracerSparsityDetector`) and coloring (`GreedyColoring`, every coloring it tries) are timed apart,
  and one prepared call (best of 5 after a first);
- `asdex`: `jacobian_coloring` (its detection and coloring), `jax.jit(jacobian_from_coloring(...))`
  compiled by its first call, then the best of 5 calls (the `bench` extra; skipped without it);
- `scipy`: `approx_derivative(f, x, sparsity=pattern)` (finite differences: its own column grouping,
  timed apart, then one call; NumPy f).

Ratios (diface / reference; below 1 is better for diface) are printed under the table: preparation
against asdex's detection + coloring + compilation, evaluation against asdex's jitted call, peak
memory against asdex's.

    python benchmarks/bench_sparse_scale.py [--cases stencil laplace ...] [--tools tape jax ...] [--scale 1.0]

`--scale 0.01` runs the same cases at a hundredth of the size (a smoke test in a few seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from typing import Any

CASES = ("stencil", "laplace", "brusselator", "arrowhead")
TOOLS = ("tape", "jax", "torch", "asdex", "scipy")


def problem(case: str, xp: Any, scale: float) -> tuple[Any, int]:
    """(f, n) for `case`, written with the array namespace `xp` (`diface._sparse.example_functions`)."""
    from diface._sparse import example_functions as ef

    if case == "stencil":
        return ef.stencil_1d(xp, max(8, int(1_000_000 * scale)))
    if case == "laplace":
        return ef.laplacian_2d(xp, max(4, round(1000 * math.sqrt(scale))))
    if case == "brusselator":
        return ef.brusselator_2d(xp, max(4, round(512 * math.sqrt(scale))))
    return ef.arrowhead(xp, max(8, int(1_000_000 * scale)))


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def _best(call: Any, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def run_diface(case: str, engine: str, scale: float) -> dict:
    import numpy as np

    import diface as di
    from diface._sparse import GreedyColoring

    if engine == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        xp, dense, asarray = jnp, di.AutoJAX(), jnp.asarray
        block = lambda J: J.data.block_until_ready()
    elif engine == "torch":
        import torch

        xp, dense, asarray, block = torch, di.AutoTorch(), torch.as_tensor, lambda J: None
    else:
        xp, dense, asarray, block = np, di.AutoTape(), np.asarray, lambda J: None
    f, n = problem(case, xp, scale)
    phases: dict[str, float] = {"detect": 0.0, "color": 0.0}

    class TimedDetector(di.TracerSparsityDetector):
        def detect(self, *args: Any) -> Any:
            start = time.perf_counter()
            found = super().detect(*args)
            phases["detect"] += time.perf_counter() - start
            return found

    class TimedColoring(GreedyColoring):
        def color(self, *args: Any) -> Any:
            start = time.perf_counter()
            found = super().color(*args)
            phases["color"] += time.perf_counter() - start
            return found

    inner = di.MixedMode(dense, dense) if case == "arrowhead" else dense
    backend = di.AutoSparse(inner, sparsity_detector=TimedDetector(), coloring=TimedColoring())
    x0 = asarray(np.linspace(0.1, 1.0, n))
    start = time.perf_counter()
    prep = di.prepare_jacobian(f, backend, x0)
    prepare = time.perf_counter() - start
    x1 = asarray(np.linspace(0.2, 1.1, n))
    start = time.perf_counter()
    block(prep.jacobian(x1))
    first = time.perf_counter() - start
    call = _best(lambda: block(prep.jacobian(x1)))
    return {
        "n": n,
        "nnz": prep.sparsity_pattern.nnz,
        "colors": prep.ncolors,
        "detect": phases["detect"],
        "color": phases["color"],
        "prepare": prepare,
        "first": first,
        "call": call,
        "peak_mb": _peak_mb(),
    }


def run_asdex(case: str, scale: float) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import asdex

    f, n = problem(case, jnp, scale)
    x0 = jnp.asarray(np.linspace(0.1, 1.0, n))
    start = time.perf_counter()
    colored = asdex.jacobian_coloring(f, x0)
    prepare = time.perf_counter() - start
    jac = jax.jit(asdex.jacobian_from_coloring(f, colored))
    x1 = jnp.asarray(np.linspace(0.2, 1.1, n))
    start = time.perf_counter()
    jac(x1).data.block_until_ready()
    first = time.perf_counter() - start
    call = _best(lambda: jac(x1).data.block_until_ready())
    colors = int(colored.num_colors)
    return {"n": n, "colors": colors, "prepare": prepare, "first": first, "call": call, "peak_mb": _peak_mb()}


def run_scipy(case: str, scale: float) -> dict:
    import numpy as np
    from scipy.optimize._numdiff import approx_derivative, group_columns

    import diface as di

    f, n = problem(case, np, scale)
    x0 = np.linspace(0.1, 1.0, n)
    pattern = di.prepare_jacobian(f, di.AutoSparse(di.AutoTape()), x0).sparsity_pattern
    start = time.perf_counter()
    groups = group_columns(pattern)
    color = time.perf_counter() - start
    x1 = np.linspace(0.2, 1.1, n)
    call = _best(lambda: approx_derivative(f, x1, sparsity=(pattern, groups)), repeats=2)
    return {"n": n, "colors": int(groups.max()) + 1, "color": color, "call": call, "peak_mb": _peak_mb()}


def child(case: str, tool: str, scale: float) -> dict:
    if tool in ("tape", "jax", "torch"):
        return run_diface(case, tool, scale)
    if tool == "asdex":
        return run_asdex(case, scale)
    return run_scipy(case, scale)


def available(tool: str) -> bool:
    import importlib.util

    need = {"tape": "scipy", "jax": "jax", "torch": "torch", "asdex": "asdex", "scipy": "scipy"}[tool]
    return importlib.util.find_spec(need) is not None


def measure(case: str, tool: str, scale: float) -> dict | None:
    """`child` in a fresh interpreter (its own peak memory); None if it failed."""
    command = [sys.executable, __file__, "--child", case, tool, "--scale", str(scale)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"  {case}/{tool} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=TOOLS)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--child", nargs=2, metavar=("CASE", "TOOL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.scale)))
        return
    from diface._table import format_table

    ms = lambda t: "-" if t is None else f"{t * 1e3:.1f}"
    s = lambda t: "-" if t is None else f"{t:.2f}"
    rows, ratios = [], []
    for case in args.cases:
        results = {}
        for tool in args.tools:
            if not available(tool) or (case == "arrowhead" and tool == "scipy"):
                continue  # SciPy's column grouping cannot compress a dense row's Jacobian: n evaluations
            if case == "arrowhead" and tool == "asdex" and args.scale > 0.01:
                continue  # no bicoloring: n colors (at n = 10⁴: 22 s to compile, 1.3 s a call, 7.3 GB)
            r = measure(case, tool, args.scale)
            if r is None:
                continue
            results[tool] = r
            rows.append(
                [
                    case,
                    tool,
                    str(r["n"]),
                    str(r["colors"]),
                    s(r.get("detect")),
                    s(r.get("color")),
                    s(r.get("prepare")),
                    s(r.get("first")),
                    ms(r["call"]),
                    f"{r['peak_mb']:.0f}",
                ]
            )
        ref = results.get("asdex")
        if ref and "jax" in results:
            mine = results["jax"]
            ratios.append(
                f"{case}: JAX / asdex: preparation {mine['prepare'] / (ref['prepare'] + ref['first']):.2f} "
                f"(asdex's detection, coloring and compilation), call {mine['call'] / ref['call']:.2f}, "
                f"peak memory {mine['peak_mb'] / ref['peak_mb']:.2f}"
            )
        if "scipy" in results and "tape" in results:
            ratio = results["tape"]["call"] / results["scipy"]["call"]
            ratios.append(f"{case}: tape / SciPy approx_derivative call {ratio:.2f}")
    header = ["case", "tool", "n", "colors", "detect s", "color s", "prepare s", "1st call s", "call ms", "peak MB"]
    print(format_table(header, rows))
    print("\n".join(ratios))


if __name__ == "__main__":
    main()
