"""Sparse Jacobians and Hessians (`AutoSparse`) against the dense preparations and the strongest tools.

Rows (ratios of best-of-rounds times measured side by side in this process, the rounds of the two
calls a row compares interleaved; below 1 means diface is faster where the reference is another
library, above 1 means the sparse call is that many times faster where the reference is diface's own
dense call):

- JAX, tridiagonal residual, n = 10³, 10⁴, 10⁵: the prepared `AutoSparse(AutoJAX())` Jacobian against
  asdex's jitted `jacobian_from_coloring` (skipped without the `bench` extra), and preparation times;
- torch, autograd, tape: dense prepared Jacobian time / sparse prepared Jacobian time at n = 1000;
- the tape's exact sparse Jacobian against SciPy's `approx_derivative(sparsity=...)` at n = 5000;
- `AutoSparse(AutoFiniteDiff())` against `approx_derivative` with the same pattern (and colors of each);
- Hessian of a sum of neighbour couplings at n = 1000: dense prepared / sparse prepared, per engine.

    python benchmarks/bench_sparse.py [--rounds 7] [--quick] [--rows jax,jacobian,scipy,hessian] [--clock cpu]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import diface as di
from diface._table import format_table


def best(fn: Callable[[], Any], rounds: int, budget: float = 0.2) -> float:
    """Best time per call over `rounds` rounds of about `budget` seconds each."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    reps = max(1, int(budget / once))
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - start) / reps)
    return min(times)


#: the clock of `side_by_side`: wall time, or the process's CPU time (`--clock cpu`: steadier where
#: other work shares the cores, and fair where both calls are single programs of one library)
CLOCK = time.perf_counter


def side_by_side(fns: dict[str, Callable[[], Any]], rounds: int, budget: float = 0.02) -> dict[str, float]:
    """Best time per call of each of `fns`, their rounds interleaved (one round of each in turn), so that
    a load that comes and goes on a shared machine weighs on all of them alike."""
    clock = CLOCK
    reps = {}
    for name, fn in fns.items():
        fn()
        start = time.perf_counter()
        fn()
        reps[name] = max(1, int(budget / max(time.perf_counter() - start, 1e-7)))
    times = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            start = clock()
            for _ in range(reps[name]):
                fn()
            times[name] = min(times[name], (clock() - start) / reps[name])
    return times


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}"


def have(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


# -- functions, one per array library -----------------------------------------------------------------
def residual(xp: Any) -> Callable:
    """A tridiagonal residual: r_i = x_i**2 - x_{i-1} + sin(x_{i+1}) inside, x at the ends."""
    cat = xp.concatenate if hasattr(xp, "concatenate") else xp.cat

    def f(x: Any) -> Any:
        return cat([x[:1], x[1:-1] ** 2 - x[:-2] + xp.sin(x[2:]), x[-1:]])

    return f


def couplings(xp: Any) -> Callable:
    """A scalar with a tridiagonal Hessian: sum of neighbour couplings and a quartic term."""

    def f(x: Any) -> Any:
        return xp.sum(x[:-1] * x[1:]) + xp.sum(x**4) / 4

    return f


# -- rows ------------------------------------------------------------------------------------------------
def jax_rows(rounds: int, sizes: tuple) -> list[list[str]]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    rows = []
    f = residual(jnp)
    for n in sizes:
        x = jnp.linspace(0.1, 1.0, n)
        t_prep, prep = timed(lambda x=x: di.prepare_jacobian(f, di.AutoSparse(di.AutoJAX()), x))
        calls = {"diface": lambda prep=prep, x=x: prep.jacobian(x).data.block_until_ready()}
        if have("asdex"):
            import asdex

            t_color, coloring = timed(lambda x=x: asdex.jacobian_coloring(f, x))
            program = jax.jit(asdex.jacobian_from_coloring(f, coloring))
            calls["asdex"] = lambda program=program, x=x: program(x).data.block_until_ready()
        times = side_by_side(calls, 5 * rounds)
        mine = times["diface"]
        if "asdex" in times:
            theirs = times["asdex"]
            reference, ratio, prep_text = us(theirs), f"{mine / theirs:.2f}", f"{t_prep:.2f} / {t_color:.2f}"
        else:
            reference, ratio, prep_text = "asdex absent", "-", f"{t_prep:.2f} / -"
        rows.append([f"jax tridiagonal n={n}", "asdex jacobian_from_coloring", us(mine), reference, ratio, prep_text])
    return rows


def engine(name: str) -> tuple[Any, Any, Callable]:
    """(backend, array namespace, x maker) of an engine."""
    if name == "torch":
        import torch

        return di.AutoTorch(), torch, lambda n: torch.linspace(0.1, 1.0, n, dtype=torch.float64)
    if name == "autograd":
        import autograd.numpy as anp

        return di.AutoAutograd(), anp, lambda n: np.linspace(0.1, 1.0, n)
    if name == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        return di.AutoJAX(), jnp, lambda n: jnp.linspace(0.1, 1.0, n)
    return di.AutoTape(), np, lambda n: np.linspace(0.1, 1.0, n)


def sparse_vs_dense_rows(rounds: int, operator: str, n: int, engines: tuple) -> list[list[str]]:
    rows = []
    for name in engines:
        if name != "tape" and not have(name):
            continue
        backend, xp, make = engine(name)
        x = make(n)
        f = residual(xp) if operator == "jacobian" else couplings(xp)
        prepare = getattr(di, f"prepare_{operator}")
        dense, sparse = prepare(f, backend, x), prepare(f, di.AutoSparse(backend), x)
        call = lambda prep, x=x: lambda: getattr(prep, operator)(x)
        times = side_by_side({"dense": call(dense), "sparse": call(sparse)}, rounds)
        t_dense, t_sparse = times["dense"], times["sparse"]
        label = f"{name} {operator} n={n} ({sparse.ncolors} colors)"
        rows.append(
            [label, "the dense prepared call", us(t_sparse), us(t_dense), f"{t_dense / t_sparse:.1f}x faster", ""]
        )
    return rows


def scipy_rows(rounds: int, n: int) -> list[list[str]]:
    from scipy.optimize._numdiff import approx_derivative

    f = residual(np)
    x = np.linspace(0.1, 1.0, n)
    rows = []
    for label, backend in (("tape (exact)", di.AutoTape()), ("finite differences", di.AutoFiniteDiff("forward"))):
        prep = di.prepare_jacobian(f, di.AutoSparse(backend), x)
        pattern = prep.sparsity_pattern
        method = "2-point" if label == "finite differences" else "3-point"
        mine = best(lambda prep=prep: prep.jacobian(x), rounds)
        theirs = best(lambda pattern=pattern, method=method: approx_derivative(f, x, method, sparsity=pattern), rounds)
        reference = f"approx_derivative {method} (sparsity=pattern)"
        rows.append(
            [f"{label} n={n} ({prep.ncolors} colors)", reference, us(mine), us(theirs), f"{mine / theirs:.2f}", ""]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer sizes and rounds")
    parser.add_argument("--rows", default="jax,jacobian,scipy,hessian", help="which groups of rows to run")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="the clock of compared calls")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    rounds = 3 if args.quick else args.rounds
    groups = set(args.rows.split(","))
    rows = []
    if have("jax") and "jax" in groups:
        rows += jax_rows(rounds, (1000,) if args.quick else (1000, 10_000, 100_000))
    if "jacobian" in groups:
        rows += sparse_vs_dense_rows(rounds, "jacobian", 1000, ("torch", "autograd", "tape"))
    if "scipy" in groups:
        rows += scipy_rows(rounds, 5000)
    if "hessian" in groups:
        rows += sparse_vs_dense_rows(rounds, "hessian", 1000, ("torch", "autograd", "tape", "jax"))
    headers = ["case", "reference", "diface µs", "reference µs", "ratio", "prep s (diface / asdex)"]
    print(format_table(headers, rows))


if __name__ == "__main__":
    main()
