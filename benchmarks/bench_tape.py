"""Prepared AutoTape calls against HIPS autograd, compiled JAX and plain NumPy f, in one process.

Operators and problems (x of n elements, float64):

- gradient and hvp (one tangent): Rosenbrock, n = 10 .. 1e5; JAX: `jax.jit(jax.grad(f))` and
  `jax.jit` of forward over reverse (`jax.jvp` of `jax.grad`); autograd: `grad`, `hessian_vector_product`;
- jacobian: `tanh(x) * x[::-1] + cumsum(x)`, n = 10 .. 1000; JAX: the faster of `jax.jit(jax.jacfwd)`
  and `jax.jit(jax.jacrev)`; autograd: `jacobian` (reverse);
- hessian: Rosenbrock and `sum(softplus(A x)) + |x|^2 / 2` (A n x n), n = 10 .. 300; JAX:
  `jax.jit(jax.hessian)`; autograd: `hessian`.

Times are medians of interleaved rounds (`diface.testing._timing.interleaved`), the whole measurement
repeated `--repeats` times; a ratio shows its median over the repeats. JAX gets native arrays and is
waited for (`block_until_ready`, asynchronous CPU dispatch off); the tape and autograd get NumPy arrays.
"mem" is what the preparation keeps (tracemalloc: NumPy's allocations, after the first call) and the
peak of one prepared call beyond it, in KiB; "result" is the size of one result. BLAS and XLA run on
one thread each (set before they load) unless `--threads` says otherwise, so that ratios measure the
engines and not the machine's other work.

The second table runs `scipy.optimize.minimize(method="trust-ncg")` on Rosenbrock (n = 100) with
`jac=prep.gradient, hessp=prep.hvp` against the same loop with autograd's `grad` and
`hessian_vector_product` and with jitted JAX functions (NumPy in and out, as SciPy calls them).

    python benchmarks/bench_tape.py [--repeats 3] [--rounds 7] [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any


def rosen(x: Any, xp: Any) -> Any:
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def square_map(x: Any, xp: Any) -> Any:
    return xp.tanh(x) * x[::-1] + xp.cumsum(x)


def softplus(x: Any, a: Any, xp: Any) -> Any:
    return xp.sum(xp.logaddexp(0.0, a @ x)) + 0.5 * xp.dot(x, x)


def cases(quick: bool) -> list[tuple[str, str, int]]:
    """(operator, problem, n)."""
    big = [10, 100, 1000] if quick else [10, 100, 1000, 10_000, 100_000]
    out = [("gradient", "Rosenbrock", n) for n in big] + [("hvp", "Rosenbrock", n) for n in big]
    out += [("jacobian", "tanh(x) x[::-1] + cumsum(x)", n) for n in (10, 100, 1000)]
    for problem in ("Rosenbrock", "softplus(A x)"):
        out += [("hessian", problem, n) for n in (10, 100, 300)]
    return out


def setup(op: str, problem: str, n: int) -> dict[str, Any]:
    """Thunks for one case (checked to agree), and the tape's memory figures."""
    import autograd
    import autograd.numpy as anp
    import jax
    import jax.numpy as jnp
    import numpy as np

    import diface as di

    rng = np.random.default_rng(0)
    tape = di.AutoTape()
    x = np.linspace(-1.0, 1.0, n) * 0.9
    args: tuple = ()
    if problem == "Rosenbrock":
        f = rosen
    elif problem.startswith("tanh"):
        f = square_map
    else:
        f, args = softplus, (rng.standard_normal((n, n)) / np.sqrt(n),)
        x = rng.standard_normal(n) * 0.5
    v = rng.standard_normal(n)
    ctx = tuple(di.Constant(a) for a in args)
    fn = lambda x, *a: f(x, *a, xp=np)
    fa = lambda x, *a: f(x, *a, xp=anp)
    fj = lambda x, *a: f(x, *a, xp=jnp)
    xj, vj, aj = jnp.asarray(x), jnp.asarray(v), tuple(jnp.asarray(a) for a in args)

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    extra = (v,) if op == "hvp" else ()
    prep = getattr(di, f"prepare_{op}")(fn, tape, x, *extra, *ctx)
    call = getattr(prep, op)
    result = call(x, *extra, *ctx)
    kept = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    call(x, *extra, *ctx)
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()

    if op == "gradient":
        direct = {"jax": jax.jit(jax.grad(fj)), "autograd": autograd.grad(fa)}
    elif op == "hvp":
        grad = jax.grad(fj)
        direct = {
            "jax": jax.jit(lambda x, v, *a: jax.jvp(lambda y: grad(y, *a), (x,), (v,))[1]),
            "autograd": autograd.hessian_vector_product(fa),
        }
    elif op == "jacobian":
        direct = {
            "jacfwd": jax.jit(jax.jacfwd(fj)),
            "jacrev": jax.jit(jax.jacrev(fj)),
            "autograd": autograd.jacobian(fa),
        }
    else:
        direct = {"jax": jax.jit(jax.hessian(fj)), "autograd": autograd.hessian(fa)}
    thunks: dict[str, Callable[[], Any]] = {
        "tape": lambda: call(x, *extra, *ctx),
        "f": lambda: fn(x, *args),
    }
    for name, d in direct.items():
        if name == "autograd":
            thunks[name] = (lambda d=d: d(x, v, *args)) if op == "hvp" else (lambda d=d: d(x, *args))
        else:
            jx = (xj, vj, *aj) if op == "hvp" else (xj, *aj)
            thunks[name] = lambda d=d, jx=jx: d(*jx).block_until_ready()
    for name, thunk in thunks.items():
        if name != "f":
            np.testing.assert_allclose(np.asarray(thunk()), result, rtol=1e-8, atol=1e-8, err_msg=name)
    size = np.asarray(result).nbytes
    return {"thunks": thunks, "kept": kept, "peak": peak, "size": size}


def measure(repeats: int, rounds: int, quick: bool) -> list[list[str]]:
    from diface.testing._timing import interleaved

    setup("gradient", "Rosenbrock", 10)  # imports and first-use allocations, out of the first row's memory
    rows = []
    for op, problem, n in cases(quick):
        case = setup(op, problem, n)
        runs = [interleaved(case["thunks"], rounds=rounds, min_time=0.01) for _ in range(repeats)]
        rows.append(row(op, problem, n, case, runs))
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def row(op: str, problem: str, n: int, case: dict, runs: list[dict]) -> list[str]:
    """One line of the table: median times (us), median ratios over the repeats, memory (KiB)."""
    jax_names = [k for k in case["thunks"] if k in ("jax", "jacfwd", "jacrev")]
    med = {k: statistics.median(t[k] for t in runs) * 1e6 for k in case["thunks"]}

    def ratio(num: Callable[[dict], float], den: Callable[[dict], float]) -> str:
        return f"{statistics.median(num(t) / den(t) for t in runs):.2f}"

    best = min(jax_names, key=med.get)
    return [
        op,
        problem,
        f"{n:g}",
        f"{med['tape']:.1f}",
        f"{med['autograd']:.1f}",
        f"{med[best]:.1f}" + (f" ({best})" if op == "jacobian" else ""),
        f"{med['f']:.1f}",
        ratio(lambda t: t["tape"], lambda t: t["f"]),
        ratio(lambda t: t["tape"], lambda t: min(t[k] for k in jax_names)),
        ratio(lambda t: t["tape"], lambda t: t["autograd"]),
        f"{case['kept'] / 1024:.0f} / {case['peak'] / 1024:.0f}",
        f"{case['size'] / 1024:.1f}",
    ]


def trust_ncg(repeats: int) -> list[list[str]]:
    """scipy.optimize.minimize(method="trust-ncg") on Rosenbrock, n = 100, three ways."""
    import autograd
    import autograd.numpy as anp
    import jax
    import jax.numpy as jnp
    import numpy as np
    from scipy.optimize import minimize

    import diface as di
    from diface.testing._timing import interleaved

    n = 100
    x0 = np.linspace(-1.2, 1.0, n)
    fn = lambda x: rosen(x, np)
    tape = di.AutoTape()
    grad_prep = di.prepare_gradient(fn, tape, x0)
    hvp_prep = di.prepare_hvp(fn, tape, x0, np.ones(n))
    ag_grad = autograd.grad(lambda x: rosen(x, anp))
    ag_hvp = autograd.hessian_vector_product(lambda x: rosen(x, anp))
    jg = jax.jit(jax.grad(lambda x: rosen(x, jnp)))
    jgrad = jax.grad(lambda x: rosen(x, jnp))
    jh = jax.jit(lambda x, p: jax.jvp(jgrad, (x,), (p,))[1])
    loops = {
        "tape": dict(jac=grad_prep.gradient, hessp=hvp_prep.hvp),
        "autograd": dict(jac=ag_grad, hessp=ag_hvp),
        "jax": dict(jac=lambda x: np.asarray(jg(x)), hessp=lambda x, p: np.asarray(jh(x, p))),
    }
    results = {k: minimize(fn, x0, method="trust-ncg", **kw) for k, kw in loops.items()}
    for k, r in results.items():  # all converge (rounding may change an iteration or two)
        assert r.success and r.fun < 1e-8, (k, r.message)
    thunks = {k: (lambda kw=kw: minimize(fn, x0, method="trust-ncg", **kw)) for k, kw in loops.items()}
    runs = [interleaved(thunks, rounds=5, min_time=0.05) for _ in range(repeats)]
    med = {k: statistics.median(t[k] for t in runs) * 1e3 for k in thunks}
    evals = {k: f"{r.nit} / {r.njev} / {r.nhev}" for k, r in results.items()}
    return [
        [k, f"{med[k]:.2f}", evals[k], f"{statistics.median(t[k] / t['tape'] for t in runs):.2f}"]
        for k in ("tape", "autograd", "jax")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="independent measurements per case")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per measurement")
    parser.add_argument("--quick", action="store_true", help="n up to 1000 only")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and XLA threads (0: their defaults)")
    args = parser.parse_args()
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, str(args.threads))
        if args.threads == 1:
            os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    from diface._table import format_table

    rows = measure(args.repeats, args.rounds, args.quick)
    header = ["operator", "problem", "n", "tape us", "autograd us", "JAX us", "f us"]
    header += ["tape / f", "tape / JAX", "tape / autograd", "mem KiB kept / peak", "result KiB"]
    print(format_table(header, rows))
    print()
    print(
        format_table(
            ["trust-ncg, Rosenbrock n = 100", "ms", "iterations / jac / hessp calls", "time / tape"],
            trust_ncg(args.repeats),
        )
    )
    threads = args.threads or "default"
    print(f"\nmedians of {args.repeats} measurements, {args.rounds} interleaved rounds each; threads: {threads}")


if __name__ == "__main__":
    main()
