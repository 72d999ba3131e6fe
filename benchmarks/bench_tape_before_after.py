"""AutoTape before and after a change, in one process: prepared gradients against f, and recording.

The checkout's `diface` is measured beside another revision's (`--before`, a git revision of this
repository; default: the last commit before issue 30), extracted with `git archive` into a temporary
directory and imported as `diface_before` (diface's own imports are relative). Every figure is a
median of interleaved rounds (`diface.testing._timing.interleaved`): within a round, before and after
run one after the other, so a busy machine slows both alike.

- "gradient / f": a prepared `gradient` over one call of f, for Rosenbrock and a one-hidden-layer MLP
  (weights differentiated, the data a `Constant`), n = 10^3 .. 10^5;
- "recording": `prepare_gradient` (recording f and compiling its replay), before over after;
- the in-place trajectory (an Euler loop filling `np.zeros((n + 1, 2))` row by row), after only (the
  tape refused it before), beside the same loop written with `np.stack` on both.

    python benchmarks/bench_tape_before_after.py [--before REV] [--rounds 9]
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import diface as after  # noqa: E402
from diface.testing._timing import interleaved  # noqa: E402

#: the last commit of main before issue 30's changes
BEFORE = "5516063"


def load_before(rev: str, into: str) -> Any:
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "diface"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    os.rename(os.path.join(into, "diface"), os.path.join(into, "diface_before"))
    sys.path.insert(0, into)
    return importlib.import_module("diface_before")


def rosenbrock(x: np.ndarray) -> Any:
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def mlp(w: np.ndarray, data: np.ndarray) -> Any:
    hidden = data.shape[1]
    a = np.tanh(data @ w[: hidden * 8].reshape(hidden, 8))
    return np.mean((a @ w[hidden * 8 : hidden * 8 + 8]) ** 2)


def trajectory(p: np.ndarray, n: int = 200) -> Any:
    h = 1.0 / n
    y = np.zeros((n + 1, 2))
    y[0] = [1.0, 0.0]
    for i in range(n):
        y[i + 1] = y[i] + h * np.array([y[i, 1], -p[0] * y[i, 0] - p[1] * y[i, 1]])
    return np.sum(y[:, 0] ** 2)


def trajectory_stacked(p: np.ndarray, n: int = 200) -> Any:
    h = 1.0 / n
    y = np.array([1.0, 0.0])
    rows = [y]
    for _ in range(n):
        y = y + h * np.stack([y[1], -p[0] * y[0] - p[1] * y[1]])
        rows.append(y)
    return np.sum(np.stack(rows)[:, 0] ** 2)


def problems() -> list[tuple[str, Callable, np.ndarray, tuple]]:
    rng = np.random.default_rng(0)
    out = []
    for n in (1_000, 10_000, 100_000):
        out.append((f"Rosenbrock n={n}", rosenbrock, rng.uniform(-1, 1, n), ()))
    for batch in (100, 1_000, 10_000):
        data = rng.standard_normal((batch, 16))
        out.append((f"MLP 16-8-1 batch={batch}", mlp, 0.3 * rng.standard_normal(16 * 8 + 8), (data,)))
    return out


def row(name: str, f: Callable, x: np.ndarray, data: tuple, before: Any, rounds: int) -> str:
    """One problem's line: gradient / f before and after, and recording before over after."""
    fn = (lambda v: f(v, *data)) if data else f
    ctx_a = tuple(after.Constant(d) for d in data)
    ctx_b = tuple(before.Constant(d) for d in data)
    pa = after.prepare_gradient(f, after.AutoTape(), x, *ctx_a)
    pb = before.prepare_gradient(f, before.AutoTape(), x, *ctx_b)
    np.testing.assert_allclose(pa.gradient(x, *ctx_a), pb.gradient(x, *ctx_b), rtol=1e-12)
    t = interleaved(
        {"f": lambda: fn(x), "after": lambda: pa.gradient(x, *ctx_a), "before": lambda: pb.gradient(x, *ctx_b)},
        rounds=rounds,
    )
    rec = interleaved(
        {
            "after": lambda: after.prepare_gradient(f, after.AutoTape(), x, *ctx_a),
            "before": lambda: before.prepare_gradient(f, before.AutoTape(), x, *ctx_b),
        },
        rounds=rounds,
        min_time=0.05,
    )
    return f"{name:28} {t['before'] / t['f']:>14.2f} {t['after'] / t['f']:>13.2f} {rec['before'] / rec['after']:>20.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = load_before(args.before, tmp)
        print(f"before: {args.before}, after: this checkout; medians of {args.rounds} interleaved rounds\n")
        print(f"{'problem':28} {'grad/f before':>14} {'grad/f after':>13} {'record before/after':>20}")
        for name, f, x, data in problems():
            print(row(name, f, x, data, before, args.rounds))
        p = np.array([4.0, 0.3])
        pa = after.prepare_gradient(trajectory, after.AutoTape(), p)
        sa = after.prepare_gradient(trajectory_stacked, after.AutoTape(), p)
        sb = before.prepare_gradient(trajectory_stacked, before.AutoTape(), p)
        np.testing.assert_allclose(pa.gradient(p), sa.gradient(p), rtol=1e-12)
        t = interleaved(
            {
                "f": lambda: trajectory(p),
                "in place, after": lambda: pa.gradient(p),
                "stacked, after": lambda: sa.gradient(p),
                "stacked, before": lambda: sb.gradient(p),
            },
            rounds=args.rounds,
        )
        rec = interleaved(
            {
                "in place, after": lambda: after.prepare_gradient(trajectory, after.AutoTape(), p),
                "stacked, after": lambda: after.prepare_gradient(trajectory_stacked, after.AutoTape(), p),
                "stacked, before": lambda: before.prepare_gradient(trajectory_stacked, before.AutoTape(), p),
            },
            rounds=max(3, args.rounds // 2),
            min_time=0.0,
        )
        print("\nEuler trajectory, 200 steps (gradient / f of the in-place f; recording in ms)")
        for k in ("in place, after", "stacked, after", "stacked, before"):
            print(f"  {k:18} gradient/f {t[k] / t['f']:6.2f}   recording {1e3 * rec[k]:7.1f} ms")


if __name__ == "__main__":
    main()
