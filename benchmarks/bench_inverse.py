"""Jacobian-inverse products on an affine coupling flow: the methods side by side, and JAX against lineax.

Rows: per engine and n (64 .. 1024), the prepared `inverse_pushforward` time (one right-hand side, at a
new point each call, so the factorization or linearization is part of the time) for `method="dense"`,
`"krylov"` and `"accumulate"` (where the engine has a plan; "-" otherwise). On JAX, the same solves by
`lineax.linear_solve(lineax.JacobianLinearOperator(...), v, solver=lineax.LU() / lineax.GMRES(...))`,
jitted (skipped without lineax).

    python benchmarks/bench_inverse.py [--sizes 64 256 1024] [--rounds 5]
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
from diface.testing import namespace_of


def best(fn: Callable[[], Any], rounds: int, budget: float = 0.1) -> float:
    """Best time per call over `rounds` rounds of about `budget` seconds each (after one warm-up)."""
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


def coupling(xp: Any, x: Any) -> Any:
    """Two RealNVP affine coupling layers (halves swapped between them), elementwise conditioners."""
    h = x.shape[0] // 2
    a, b = x[:h], x[h:]
    b = b * xp.exp(0.5 * xp.tanh(a)) + 0.3 * xp.sin(a)
    a = a * xp.exp(0.5 * xp.tanh(b)) + 0.3 * xp.sin(b)
    return xp.cat([a, b]) if hasattr(xp, "cat") else xp.concatenate([a, b])


def engines() -> list:
    found = [di.AutoTape()]
    found += [di.AutoTorch()] if importlib.util.find_spec("torch") else []
    found += [di.AutoJAX()] if importlib.util.find_spec("jax") else []
    return found


def run_block(fn: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        r = fn()
        ready = getattr(r, "block_until_ready", None)
        return ready() if ready is not None else r

    return call


def alternating(prep: Any, xs: list, v: Any) -> Callable[[], Any]:
    """`prep` called at the points `xs` in turn (a new point each call: no caching across calls)."""
    calls = iter(range(10**9))
    return lambda: prep(xs[next(calls) % len(xs)], v)


def diface_rows(sizes: list[int], rounds: int) -> list[list]:
    rows = []
    for backend in engines():
        xp = namespace_of(backend)
        f = lambda x, xp=xp: coupling(xp, x)
        for n in sizes:
            rng = np.random.default_rng(0)
            xs = [rng.normal(size=n) * 0.5 for _ in range(2)]
            v = rng.normal(size=n)
            row: list = [repr(backend), str(n)]
            for method in ("dense", "krylov", "accumulate"):
                try:
                    prep = di.prepare_inverse_pushforward(f, backend, xs[0], v, method=method)
                except di.NotSupportedError:
                    row.append("-")
                    continue
                row.append(f"{best(run_block(alternating(prep, xs, v)), rounds) * 1e3:.3f}")
            rows.append(row)
    return rows


def lineax_rows(sizes: list[int], rounds: int) -> list[list]:
    if not (importlib.util.find_spec("jax") and importlib.util.find_spec("lineax")):
        return []
    import jax
    import jax.numpy as jnp
    import lineax

    jax.config.update("jax_enable_x64", True)
    f = lambda x, args: coupling(jnp, x)
    rows = []
    for n in sizes:
        rng = np.random.default_rng(0)
        x, v = jnp.asarray(rng.normal(size=n) * 0.5), jnp.asarray(rng.normal(size=n))
        row: list = ["lineax (JAX, jit)", str(n)]
        for solver in (lineax.LU(), lineax.GMRES(rtol=1e-10, atol=0.0, restart=min(n, 100), max_steps=2 * n)):

            @jax.jit
            def solve(x: Any, v: Any, solver: Any = solver) -> Any:
                operator = lineax.JacobianLinearOperator(f, x)
                if isinstance(solver, lineax.LU):
                    operator = lineax.MatrixLinearOperator(operator.as_matrix())
                return lineax.linear_solve(operator, v, solver=solver).value

            row.append(f"{best(run_block(lambda solve=solve, x=x, v=v: solve(x, v)), rounds) * 1e3:.3f}")
        row.append("-")
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if importlib.util.find_spec("jax"):
        import jax

        jax.config.update("jax_enable_x64", True)
    rows = diface_rows(args.sizes, args.rounds) + lineax_rows(args.sizes, args.rounds)
    print(format_table(["engine", "n", "dense ms", "krylov ms", "accumulate ms"], rows))


if __name__ == "__main__":
    main()
