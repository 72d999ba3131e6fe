"""Sparse Hessians at scale: detection, star coloring, preparation and one call, time and peak memory.

Cases (each in its own subprocess, so that peak memory is the case's own):

- `chain`: a 1-D energy `sum((x[1:] - x[:-1]) ** 4) + sum(x ** 2)` (tridiagonal Hessian) at n = 10⁵, 10⁶;
- `padded`: the same with zero ends (x concatenated with constants: a gather with constants, which
  went through a SciPy product with a workspace as wide as the n² pair columns before);
- `tv`: a 2-D total-variation energy on an m x m grid, u = x.reshape(m, m),
  `sum(sqrt((u[1:, :-1] - u[:-1, :-1]) ** 2 + (u[:-1, 1:] - u[:-1, :-1]) ** 2 + eps))`, at m = 100, 316,
  1000 (n = 10⁴, 10⁵, 10⁶);

through `di.prepare_hessian(f, di.AutoSparse(engine), x)` for the tape, JAX and torch. Columns:
detection time and its peak (tracemalloc: the Python and NumPy allocations the detection made), star
coloring time and colors, the whole preparation, one prepared call, and the process's peak resident
memory (`ru_maxrss`, imports included). With `--baseline PATH` each case also runs on the diface
checkout at PATH (say, main before this change, in a worktree) and the table adds its detection
figures beside these; the baseline's processes run under an address-space limit (`--limit-gb`, 8) so
that its n²-wide workspaces fail with MemoryError instead of taking the machine's memory.

    python benchmarks/bench_sparse_hessian_scale.py [--quick] [--engines tape,jax,torch]
        [--baseline /work/wt-hessbase] [--timeout 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "quick": [("chain", 10**5), ("padded", 10**5), ("tv", 100), ("tv", 316)],
    "full": [
        ("chain", 10**5),
        ("chain", 10**6),
        ("padded", 10**5),
        ("padded", 10**6),
        ("tv", 100),
        ("tv", 316),
        ("tv", 1000),
    ],
}

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
import diface as di
from diface._sparse._detectors import TracerSparsityDetector
from diface._sparse._coloring import GreedyColoring

kind, size, engine = sys.argv[1], int(sys.argv[2]), sys.argv[3]
figures = {}

class TimedDetector(TracerSparsityDetector):
    def detect(self, backend, problem, order):
        tracemalloc.start()
        start = time.perf_counter()
        pattern = super().detect(backend, problem, order)
        figures["detect_s"] = time.perf_counter() - start
        figures["detect_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        figures["nnz"] = int(pattern.nnz) if hasattr(pattern, "nnz") else None
        return pattern

class TimedColoring(GreedyColoring):
    def color(self, pattern, kind="column"):
        start = time.perf_counter()
        coloring = super().color(pattern, kind)
        figures["color_s"] = time.perf_counter() - start
        figures["colors"] = int(coloring.ncolors)
        return coloring

if engine == "jax":
    import jax, jax.numpy as xp
    jax.config.update("jax_enable_x64", True)
    dense = di.AutoJAX()
    asarray = xp.asarray
elif engine == "torch":
    import torch as xp
    dense = di.AutoTorch()
    asarray = lambda a: xp.asarray(a)
else:
    xp = np
    dense = di.AutoTape()
    asarray = np.asarray

eps = 1e-3
if kind == "chain":
    n = size
    def f(x):
        return xp.sum((x[1:] - x[:-1]) ** 4) + xp.sum(x**2)
elif kind == "padded":  # the chain with zero ends: a gather with constants
    n = size
    def f(x):
        z = xp.zeros(1, dtype=x.dtype)
        u = xp.concatenate([z, x, z])
        return xp.sum((u[1:] - u[:-1]) ** 4) + xp.sum(x**2)
else:
    m = size
    n = m * m
    def f(x):
        u = x.reshape(m, m)
        return xp.sum(xp.sqrt((u[1:, :-1] - u[:-1, :-1]) ** 2 + (u[:-1, 1:] - u[:-1, :-1]) ** 2 + eps))

x = asarray(np.random.default_rng(0).standard_normal(n))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
backend = di.AutoSparse(dense, sparsity_detector=TimedDetector(), coloring=TimedColoring())
start = time.perf_counter()
prep = di.prepare_hessian(f, backend, x)
figures["prepare_s"] = time.perf_counter() - start
if "--call" in sys.argv:
    block = (lambda h: jax.block_until_ready(h)) if engine == "jax" else (lambda h: h)
    block(prep.hessian(x))
    start = time.perf_counter()
    H = block(prep.hessian(x))
    figures["call_s"] = time.perf_counter() - start
    figures["call_nnz"] = int(getattr(H, "nnz", getattr(H, "nse", 0)) or 0)
figures["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
figures["rss_base_mb"] = base
print("FIGURES " + json.dumps(figures))
"""


def run_case(
    root: Path, kind: str, size: int, engine: str, call: bool, timeout: float, limit_gb: float | None = None
) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), JAX_PLATFORMS="cpu")
    cmd = [sys.executable, "-c", CHILD, kind, str(size), engine] + (["--call"] if call else [])

    def limit() -> None:
        if limit_gb is not None:
            import resource

            cap = int(limit_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    try:  # cwd=root: `python -c` imports from the working directory first
        done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, timeout=timeout, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:.0f}s"}
    for line in done.stdout.splitlines():
        if line.startswith("FIGURES "):
            return json.loads(line[len("FIGURES ") :])
    tail = (done.stderr or done.stdout).strip().splitlines()
    return {"error": (tail[-1] if tail else f"exit {done.returncode}")[:60]}


def fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="n up to 10^5 only")
    parser.add_argument("--engines", default="tape,jax,torch")
    parser.add_argument("--baseline", default=None, help="another diface checkout to compare detection with")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case and checkout")
    parser.add_argument("--no-call", action="store_true", help="prepare only, no prepared call")
    parser.add_argument("--limit-gb", type=float, default=8.0, help="address-space limit of baseline runs")
    args = parser.parse_args()

    rows = []
    header = ["case", "n", "engine", "detect s", "detect MB", "colors", "color s", "prepare s", "call s", "RSS MB"]
    if args.baseline:
        header += ["base detect s", "base detect MB"]
    print(" | ".join(header), flush=True)
    for kind, size in CASES["quick" if args.quick else "full"]:
        n = size * size if kind == "tv" else size
        for engine in args.engines.split(","):
            new = run_case(ROOT, kind, size, engine, not args.no_call, args.timeout)
            row = [kind, str(n), engine]
            if "error" in new:
                row += [new["error"]] + ["-"] * 6
            else:
                row += [
                    fmt(new.get("detect_s")),
                    fmt(new.get("detect_peak_mb"), 1),
                    fmt(new.get("colors")),
                    fmt(new.get("color_s")),
                    fmt(new.get("prepare_s")),
                    fmt(new.get("call_s"), 3),
                    fmt(new.get("rss_mb"), 0),
                ]
            if args.baseline:
                old = run_case(Path(args.baseline), kind, size, engine, False, args.timeout, args.limit_gb)
                if "error" in old:
                    row += [old["error"], "-"]
                else:
                    row += [fmt(old.get("detect_s")), fmt(old.get("detect_peak_mb"), 1)]
            rows.append(row)
            print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
