"""Prepared AutoJAX calls against the fastest direct JAX call, interleaved in one process.

For each case: the direct call (`jax.jit` of `jax.grad`, `jax.jacrev` or `jax.hessian`), the prepared
diface call through the prep's method (`prep.gradient(x)`, strict checks on), the same with
`strict=False`, and through the operator (`di.gradient(f, b, x, prep=prep)`). Inputs are JAX float64
arrays, so nothing is converted; every call waits for its result (`block_until_ready`). Ratios are
diface / direct, medians of interleaved rounds (`_timing.interleaved`); the run is repeated
`--repeats` times and each ratio is shown as median [min-max] over the repeats.

Targets (issue 3): gradient (Rosenbrock, n = 10 and 1000), jacobian (dense 100 -> 100 map) and
hessian (n = 100) within 1.15 of the direct call.

    python benchmarks/bench_jax.py [--repeats 3] [--breakdown] [--async-dispatch]

JAX runs CPU computations asynchronously by default: the call returns at once and the work runs on
another thread, so waiting for a result includes a thread hand-off whose latency, on this shared
2-core machine, ranges from ~1 to ~30 us and swamps the differences being measured (a Rosenbrock
gradient at n = 1000 took 33 us asynchronously and 6 us synchronously in the same session). The
benchmark therefore turns asynchronous CPU dispatch off (`jax_cpu_enable_async_dispatch`) for both
sides, which makes the figures repeatable to ~0.05 us; `--async-dispatch` keeps JAX's default.

`--breakdown` times the layers of one prepared gradient call (Rosenbrock, n = 10) against the
direct call: the AutoJAX kernel alone, the core's call path without and with the strict check, and
the prep method a user calls.
"""

from __future__ import annotations

import argparse
import statistics

import jax
import jax.numpy as jnp
import numpy as np

import diface as di
from diface._tour import format_table
from diface.testing._timing import interleaved

jax.config.update("jax_enable_x64", True)

A = np.random.default_rng(0).standard_normal((100, 100)) / 10  # a JAX array once main() has configured JAX


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def dense_map(x):
    return jnp.tanh(A @ x) + x**2


CASES = [
    # (label, operator, function, n, direct JAX transform)
    ("gradient, Rosenbrock", "gradient", rosenbrock, 10, jax.grad),
    ("gradient, Rosenbrock", "gradient", rosenbrock, 1000, jax.grad),
    ("jacobian, dense map", "jacobian", dense_map, 100, jax.jacrev),
    ("hessian, Rosenbrock", "hessian", rosenbrock, 100, jax.hessian),
]


def measure(operator: str, f, n: int, transform) -> dict[str, float]:
    x = jnp.linspace(-1.0, 1.0, n)
    backend = di.AutoJAX()
    prepare = getattr(di, f"prepare_{operator}")
    prep = prepare(f, backend, x)
    unchecked = prepare(f, backend, x, strict=False)
    method, unchecked_method = getattr(prep, operator), getattr(unchecked, operator)
    op = getattr(di, operator)
    direct = jax.jit(transform(f))
    np.testing.assert_allclose(np.asarray(method(x)), np.asarray(direct(x)), rtol=1e-12, atol=1e-12)
    return interleaved(
        {
            "direct": lambda: direct(x).block_until_ready(),
            "prep": lambda: method(x).block_until_ready(),
            "unchecked": lambda: unchecked_method(x).block_until_ready(),
            "operator": lambda: op(f, backend, x, prep=prep).block_until_ready(),
        }
    )


def breakdown(repeats: int) -> None:
    x = jnp.linspace(-1.0, 1.0, 10)
    prep = di.prepare_gradient(rosenbrock, di.AutoJAX(), x)
    kernel = prep.kernel
    direct = jax.jit(jax.grad(rosenbrock))
    layers = {
        "direct: jax.jit(jax.grad(f))(x)": lambda: direct(x),
        "AutoJAX kernel(x, None, (), None, False)": lambda: kernel(x, None, (), None, False),
        "core call path, no check: prep.run(..., check=False)": lambda: prep.run(False, x, None, (), None, None, False),
        "core call path, strict check: prep.run(..., check=True)": lambda: prep.run(
            False, x, None, (), None, None, True
        ),
        "prep.gradient(x)": lambda: prep.gradient(x),
    }
    runs = [interleaved(layers, rounds=25) for _ in range(repeats)]
    rows = []
    for name in layers:
        us = [t[name] * 1e6 for t in runs]
        extra = [(t[name] - t["direct: jax.jit(jax.grad(f))(x)"]) * 1e6 for t in runs]
        rows.append(
            [
                name,
                f"{statistics.median(us):.2f}",
                f"{statistics.median(extra):+.2f} [{min(extra):+.2f}..{max(extra):+.2f}]",
            ]
        )
    print("Layers of a prepared gradient call (Rosenbrock, n = 10; dispatch only, no blocking):")
    print(format_table(["layer", "us", "over direct (us)"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--breakdown", action="store_true", help="time the layers of one prepared call")
    parser.add_argument("--async-dispatch", action="store_true", help="keep JAX's asynchronous CPU dispatch")
    args = parser.parse_args()
    # before JAX makes its CPU client (the first array), which reads the setting
    jax.config.update("jax_cpu_enable_async_dispatch", args.async_dispatch)
    global A
    A = jnp.asarray(A)
    print(f"JAX {jax.__version__}, CPU dispatch {'asynchronous' if args.async_dispatch else 'synchronous'}")
    if args.breakdown:
        breakdown(args.repeats)
        return
    rows = []
    for label, operator, f, n, transform in CASES:
        runs = [measure(operator, f, n, transform) for _ in range(args.repeats)]

        def ratio(name: str, runs: list = runs) -> str:
            r = [t[name] / t["direct"] for t in runs]
            return f"{statistics.median(r):.3f} [{min(r):.2f}-{max(r):.2f}]"

        direct_us = statistics.median(t["direct"] for t in runs) * 1e6
        prep_us = statistics.median(t["prep"] for t in runs) * 1e6
        rows.append(
            [
                label,
                str(n),
                f"{direct_us:.1f}",
                f"{prep_us:.1f}",
                ratio("prep"),
                ratio("unchecked"),
                ratio("operator"),
            ]
        )
    header = ["case", "n", "direct (us)", "prep (us)", "ratio prep", "ratio strict=False", "ratio di.op(prep=)"]
    print(format_table(header, rows))


if __name__ == "__main__":
    main()
