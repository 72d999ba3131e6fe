"""`di.AutoTorch()`'s Taylor mode and exact Laplacian against the alternatives, interleaved in one process.

- Laplacian of an MLP (tanh, 3 hidden layers of width 256, scalar output) at n = 100 and 1000: the
  prepared exact Laplacian (`di.prepare_laplacian`) against the prepared Hessian and its trace
  (`di.prepare_hessian`, then `torch.trace`: issue 20 wants the Laplacian 3x faster at n = 1000), and
  against the same computation written by hand in torch.func (vmap over the basis of x of the second
  directional derivative by nested `torch.func.jvp`, summed): the reference, target about 1.
- Taylor coefficients of order 4 of a 20-step explicit RK4 integrator (x the initial state, n = 16, a
  tanh vector field) along 1 and 4 directions: `di.prepare_taylor` against nested `torch.func.jvp`
  written directly (vmapped for 4 directions), target about 1.

Ratios are medians over rounds of each round's ratio (every candidate timed in every round). float64,
one torch thread.

    python benchmarks/bench_taylor_torch.py [--rounds 15] [--round-time 0.02] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's diface, not an installed one
import diface as di
from diface._table import format_table
from diface.backends.torch import _taylor as torch_taylor
from diface.testing._timing import interleaved

torch.set_num_threads(1)
D = torch.float64
AUTO = di.AutoTorch()
jvp, vmap = torch.func.jvp, torch.func.vmap


def rounds_of(candidates: dict, rounds: int, round_time: float) -> dict[str, list[float]]:
    """Seconds per call of every candidate in every round (interleaved); calls of seconds are timed
    one per round, after one call each to warm up."""
    times: dict[str, list[float]] = {k: [] for k in candidates}
    start = time.perf_counter()
    next(iter(candidates.values()))()
    if time.perf_counter() - start > 0.5:
        for fn in candidates.values():
            fn()
        for _ in range(rounds):
            for k, fn in candidates.items():
                start = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - start)
        return times
    for _ in range(rounds):
        t = interleaved(candidates, rounds=1, min_time=round_time)
        for k, v in t.items():
            times[k].append(v)
    return times


def ratio(times: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(times[a], times[b]))


# -- Laplacian of an MLP ---------------------------------------------------------------------------------
def mlp(n: int, width: int = 256, depth: int = 3):
    gen = torch.Generator().manual_seed(0)
    sizes = [n] + [width] * depth
    layers = [
        (torch.randn(o, i, generator=gen, dtype=D) / i**0.5, torch.randn(o, generator=gen, dtype=D) / 10)
        for i, o in itertools.pairwise(sizes)
    ]
    w_out = torch.randn(width, generator=gen, dtype=D) / width**0.5

    def f(x):
        a = x
        for W, b in layers:
            a = torch.tanh(W @ a + b)
        return w_out @ a

    return f


def laplacian_rows(sizes: tuple, rounds: int, round_time: float) -> list[list]:
    rows = []
    for n in sizes:
        f = mlp(n)
        x = torch.randn(n, dtype=D, generator=torch.Generator().manual_seed(1))
        lap = di.prepare_laplacian(f, AUTO, x)  # the faster of the two routes, timed
        chosen = _route(lap)
        sums = _prefer("taylor", lambda f=f, x=x: di.prepare_laplacian(f, AUTO, x))  # the Taylor sum, forced
        hess = di.prepare_hessian(f, AUTO, x)
        basis = torch.eye(n, dtype=D)

        def by_hand(x=x, f=f, basis=basis):
            second = lambda e: jvp(lambda p: jvp(f, (p,), (e,))[1], (x,), (e,))[1]
            with torch.no_grad():
                return vmap(second)(basis).sum(0)

        want = torch.trace(hess.hessian(x))
        assert torch.allclose(lap.laplacian(x), want, rtol=1e-9), (lap.laplacian(x), want)
        assert torch.allclose(by_hand(), want, rtol=1e-9)
        times = rounds_of(
            {
                "diface": lambda lap=lap, x=x: lap.laplacian(x),
                "taylor sum": lambda sums=sums, x=x: sums.laplacian(x),
                "hessian+trace": lambda hess=hess, x=x: torch.trace(hess.hessian(x)),
                "torch.func": by_hand,
            },
            rounds,
            round_time,
        )
        ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        rows.append(
            [
                f"laplacian, n = {n} (diface chose {chosen})",
                f"{ms['diface']:.2f}",
                f"{ms['hessian+trace']:.2f}",
                f"{ratio(times, 'hessian+trace', 'diface'):.2f}x",
                f"{ms['torch.func']:.2f}",
                f"{ratio(times, 'diface', 'torch.func'):.2f}",
            ]
        )
        rows.append(
            [
                f"laplacian, n = {n}, taylor sum forced",
                f"{ms['taylor sum']:.2f}",
                "",
                f"{ratio(times, 'hessian+trace', 'taylor sum'):.2f}x",
                "",
                f"{ratio(times, 'taylor sum', 'torch.func'):.2f}",
            ]
        )
    return rows


# -- Taylor coefficients through an RK4 integrator ---------------------------------------------------------
def rk4(n: int = 16, steps: int = 20, h: float = 0.05):
    gen = torch.Generator().manual_seed(2)
    A = torch.randn(n, n, generator=gen, dtype=D) / n**0.5
    field = lambda y: torch.tanh(A @ y) - 0.1 * y

    def f(x):
        y = x
        for _ in range(steps):
            k1 = field(y)
            k2 = field(y + h / 2 * k1)
            k3 = field(y + h / 2 * k2)
            k4 = field(y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    return f


def nested(f, x, order):
    """v -> (f(x), d1, ..., d_order): nested torch.func.jvp, as a user writes it."""

    def series(v):
        level = lambda p: (f(p),)
        for _ in range(order):
            level = (lambda inner: lambda p: (lambda r: (*r[0], r[1][-1]))(jvp(inner, (p,), (v,))))(level)
        return level(x)

    return series


def taylor_rows(directions: tuple, rounds: int, round_time: float, order: int = 4) -> list[list]:
    rows = []
    n = 16
    f = rk4(n)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(n, dtype=D, generator=gen)
    for k in directions:
        vs = torch.randn(k, n, dtype=D, generator=gen)
        tx = tuple(vs) if k > 1 else vs[0]
        prep = di.prepare_taylor(f, AUTO, x, tx, order=order)
        series = nested(f, x, order)

        if k == 1:

            def by_hand(v=vs[0], series=series):
                with torch.no_grad():
                    return series(v)[1:]
        else:

            def by_hand(vs=vs, series=series):
                with torch.no_grad():
                    return vmap(series, out_dims=(None,) + (0,) * order)(vs)[1:]

        got = prep.taylor_coefficients(x, tx)
        last = got[-1] if k == 1 else torch.stack([c[-1] for c in got])
        assert torch.allclose(last, by_hand()[-1], rtol=1e-10)
        mine = lambda prep=prep, tx=tx: prep.taylor_coefficients(x, tx)
        times = rounds_of({"diface": mine, "torch.func": by_hand}, rounds, round_time)
        ms = {key: 1e3 * statistics.median(v) for key, v in times.items()}
        rows.append(
            [
                f"taylor order {order}, RK4 20 steps, {k} direction{'s' * (k > 1)}",
                f"{ms['diface']:.2f}",
                "",
                "",
                f"{ms['torch.func']:.2f}",
                f"{ratio(times, 'diface', 'torch.func'):.2f}",
            ]
        )
    return rows


def _prefer(route: str, make):
    """`make()` with the exact Laplacian's timed choice forced to `route`."""
    saved = torch_taylor._best_time
    order = iter([0.0, 1.0] if route == "taylor" else [1.0, 0.0])
    torch_taylor._best_time = lambda kernel, problem: next(order)
    try:
        return make()
    finally:
        torch_taylor._best_time = saved


def _route(prep) -> str:
    """Which route a prepared exact Laplacian took (from its kernel's closures: a benchmark's peek)."""
    names, stack, seen = set(), [prep.kernel.run], set()
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        names.add(getattr(fn, "__qualname__", ""))
        for cell in getattr(fn, "__closure__", None) or ():
            v = cell.cell_contents
            v = getattr(v, "run", v)  # a Kernel: its run
            if callable(v) and hasattr(v, "__code__"):
                stack.append(v)
    return "hessian diagonal" if any(q.startswith("hessian_diagonal") for q in names) else "taylor sum"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--round-time", type=float, default=0.02)
    parser.add_argument("--quick", action="store_true", help="n = 100 only, 5 rounds")
    args = parser.parse_args()
    rounds = 5 if args.quick else args.rounds
    sizes = (100,) if args.quick else (100, 1000)
    rows = laplacian_rows(sizes, rounds, args.round_time) + taylor_rows((1, 4), rounds, args.round_time)
    header = ["case", "diface ms", "hessian+trace ms", "speedup", "torch.func ms", "diface / torch.func"]
    print(format_table(header, rows))
    print(f"\ntorch {torch.__version__}, numpy {np.__version__}, 1 thread, float64")


if __name__ == "__main__":
    main()
