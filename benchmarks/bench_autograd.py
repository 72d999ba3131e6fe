"""Prepared diface calls on AutoAutograd against autograd called directly, in one process.

Each row times a prepared diface call (`prep.gradient(x)`, ...) and the direct autograd idioms that
compute the same thing, interleaved, medians of repeated rounds (`diface.testing._timing.interleaved`).
The ratio is diface / the fastest direct idiom; each row is measured `--repeat` times (3), and the
median ratio is reported with its range. Targets (issue 9): gradient <= 1.15 (`autograd.grad`),
hvp <= 1.2 (the fastest of `hessian_vector_product`, `make_hvp`, `make_jvp(grad(f))`), jacobian <= 1.1
(`autograd.jacobian`), hessian <= 1.1 (`autograd.hessian`), and `scipy.optimize.minimize(method=
"trust-ncg")` on Rosenbrock (n = 100) with `jac`/`hessp` from diface preparations <= 1.2 times the same
loop on autograd directly.

The memory columns (measured apart from the timings, with tracemalloc, which sees NumPy's buffers):
what a preparation keeps after `prepare_*` returns, and the peak a call allocates beyond what was
allocated before it, both as multiples of the result's size (and in bytes).

Timings are CPU time of the calling thread (`time.thread_time`; `--wall` for wall-clock time), with
BLAS single-threaded (`OPENBLAS_NUM_THREADS=1` unless set): on a small machine shared with other work,
wall-clock times and multi-threaded BLAS measure the neighbours as much as the code.

    python benchmarks/bench_autograd.py                # the table, every size
    python benchmarks/bench_autograd.py --quick        # n <= 1000, fewer rounds
    python benchmarks/bench_autograd.py --only hvp     # one operator (gradient, hvp, jacobian, hessian, trust-ncg)
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

import autograd
import autograd.numpy as anp
import numpy as np
from autograd import make_hvp, make_jvp

import diface as di
from diface._table import format_table
from diface.testing import _timing
from diface.testing._timing import interleaved

SIZES = (10, 100, 1000, 10_000, 100_000)
HESSIAN_SIZES = (10, 100, 300)
# a dense n x n Jacobian from autograd.jacobian costs n backward passes through an n x n matmul:
# minutes per call at n = 1e4 (and 0.8 GB for A, as much again for J), 1e4 times that at 1e5
JACOBIAN_SIZES = (10, 100, 1000)
TARGETS = {"gradient": 1.15, "hvp": 1.2, "jacobian": 1.1, "hessian": 1.1, "trust-ncg": 1.2}


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def dense_map(x, a):
    return anp.tanh(a @ x) + x


def softplus_sum(x, a):
    return anp.sum(anp.log(1.0 + anp.exp(a @ x))) + 0.5 * anp.sum(x * x)


def point(n: int) -> np.ndarray:
    return np.linspace(-1.2, 1.1, n)


def matrix(n: int) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((n, n)) / np.sqrt(n)


@dataclass
class Case:
    operator: str
    n: int
    label: str
    direct: dict[str, Callable]
    ours: Callable
    prepare: Callable  # () -> the preparation (for the memory columns)
    result_bytes: int


def gradient_cases(sizes: tuple) -> list[Case]:
    rows = []
    for n in sizes:
        x = point(n)
        prep = di.prepare_gradient(rosenbrock, di.AutoAutograd(), x)
        grad = autograd.grad(rosenbrock)
        np.testing.assert_allclose(prep.gradient(x), grad(x), rtol=1e-12)
        rows.append(
            Case(
                "gradient",
                n,
                "Rosenbrock",
                {"autograd.grad": lambda g=grad, x=x: g(x)},
                lambda p=prep, x=x: p.gradient(x),
                lambda x=x: di.prepare_gradient(rosenbrock, di.AutoAutograd(), x),
                x.nbytes,
            )
        )
    return rows


def hvp_direct(x: np.ndarray, v: np.ndarray) -> dict[str, Callable]:
    htp, grad = autograd.hessian_vector_product(rosenbrock), autograd.grad(rosenbrock)
    return {
        "hessian_vector_product": lambda: htp(x, v),
        "make_hvp": lambda: make_hvp(rosenbrock)(x)[0](v),
        "make_jvp(grad)": lambda: make_jvp(grad)(x)(v)[1],
    }


def hvp_cases(sizes: tuple) -> list[Case]:
    rows = []
    for n in sizes:
        x, v = point(n), np.cos(np.arange(n, dtype=float))
        prep = di.prepare_hvp(rosenbrock, di.AutoAutograd(), x, v)
        direct = hvp_direct(x, v)
        np.testing.assert_allclose(prep.hvp(x, v), direct["make_hvp"](), rtol=1e-11, atol=1e-11)
        rows.append(
            Case(
                "hvp",
                n,
                "Rosenbrock",
                direct,
                lambda p=prep, x=x, v=v: p.hvp(x, v),
                lambda x=x, v=v: di.prepare_hvp(rosenbrock, di.AutoAutograd(), x, v),
                x.nbytes,
            )
        )
    return rows


def jacobian_cases(sizes: tuple) -> list[Case]:
    rows = []
    for n in sizes:
        x, a = point(n), matrix(n)
        jac = autograd.jacobian(dense_map)
        want = jac(x, a)
        for mode in ("reverse", "auto"):
            b = di.AutoAutograd(mode)
            prep = di.prepare_jacobian(dense_map, b, x, di.Constant(a))
            np.testing.assert_allclose(prep.jacobian(x, di.Constant(a)), want, rtol=1e-11, atol=1e-12)
            rows.append(
                Case(
                    "jacobian",
                    n,
                    f"tanh(A x) + x, mode={mode}",
                    {"autograd.jacobian": lambda j=jac, x=x, a=a: j(x, a)},
                    lambda p=prep, x=x, a=a: p.jacobian(x, di.Constant(a)),
                    lambda b=b, x=x, a=a: di.prepare_jacobian(dense_map, b, x, di.Constant(a)),
                    want.nbytes,
                )
            )
    return rows


def hessian_cases(sizes: tuple) -> list[Case]:
    rows = []
    for n in sizes:
        x, a = point(n), matrix(n)
        hess = autograd.hessian(softplus_sum)
        want = hess(x, a)
        prep = di.prepare_hessian(softplus_sum, di.AutoAutograd(), x, di.Constant(a))
        np.testing.assert_allclose(prep.hessian(x, di.Constant(a)), want, rtol=1e-11, atol=1e-12)
        rows.append(
            Case(
                "hessian",
                n,
                "softplus(A x) sum",
                {"autograd.hessian": lambda h=hess, x=x, a=a: h(x, a)},
                lambda p=prep, x=x, a=a: p.hessian(x, di.Constant(a)),
                lambda x=x, a=a: di.prepare_hessian(softplus_sum, di.AutoAutograd(), x, di.Constant(a)),
                want.nbytes,
            )
        )
    return rows


def trust_ncg_case() -> Case:
    from scipy.optimize import minimize

    n = 100
    x0 = point(n)
    grad_prep = di.prepare_gradient(rosenbrock, di.AutoAutograd(), x0)
    hvp_prep = di.prepare_hvp(rosenbrock, di.AutoAutograd(), x0, x0)
    grad = autograd.grad(rosenbrock)
    # the fastest direct Hessian-vector product at this size (timed below, before the loop is)
    idioms = {
        "hessian_vector_product": autograd.hessian_vector_product(rosenbrock),
        "make_hvp": lambda x, v: make_hvp(rosenbrock)(x)[0](v),
        "make_jvp(grad)": lambda x, v: make_jvp(grad)(x)(v)[1],
    }
    v = np.cos(np.arange(n, dtype=float))
    t = interleaved({k: (lambda h=h: h(x0, v)) for k, h in idioms.items()}, rounds=7, min_time=0.01)
    fastest = min(t, key=t.get)
    hessp = idioms[fastest]

    def run(jac: Callable, hessp: Callable) -> np.ndarray:
        r = minimize(rosenbrock, x0, method="trust-ncg", jac=jac, hessp=hessp, options={"gtol": 1e-8})
        assert r.success, r.message
        return r.x

    np.testing.assert_allclose(run(grad_prep.gradient, hvp_prep.hvp), run(grad, hessp), rtol=1e-6, atol=1e-8)
    return Case(
        "trust-ncg",
        n,
        "Rosenbrock, jac + hessp",
        {f"autograd.grad + {fastest}": lambda: run(grad, hessp)},
        lambda: run(grad_prep.gradient, hvp_prep.hvp),
        lambda: (
            di.prepare_gradient(rosenbrock, di.AutoAutograd(), x0),
            di.prepare_hvp(rosenbrock, di.AutoAutograd(), x0, x0),
        ),
        x0.nbytes,
    )


def memory(case: Case) -> tuple[float, float]:
    """(kept by the preparation, peak of one call), as multiples of the result's size."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        prep = case.prepare()
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
        del prep
        gc.collect()
        case.ours()  # once unmeasured: first-call caches
        gc.collect()
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        case.ours()
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return kept / case.result_bytes, peak / case.result_bytes


def measure(cases: list[Case], rounds: int, min_time: float, repeat: int) -> list[list[str]]:
    """One row per case: the medians of `repeat` interleaved measurements (each the medians of
    `rounds` rounds), and the median ratio with its range."""
    table = []
    for case in cases:
        runs = [
            interleaved({**case.direct, "diface": case.ours}, rounds=rounds, min_time=min_time) for _ in range(repeat)
        ]
        t = {name: statistics.median(r[name] for r in runs) for name in runs[0]}
        ratios = sorted(r["diface"] / min(r[k] for k in case.direct) for r in runs)
        ratio = statistics.median(ratios)
        spread = f" ({ratios[0]:.2f}-{ratios[-1]:.2f})" if repeat > 1 else ""
        kept, peak = memory(case)
        target = TARGETS[case.operator]
        table.append(
            [
                case.operator,
                str(case.n),
                case.label,
                ", ".join(f"{k} {_us(t[k])}" for k in case.direct),
                _us(t["diface"]),
                f"{ratio:.2f}{spread}",
                f"<= {target:.2f} {'met' if ratio <= target else 'MISSED'}",
                f"{kept:.2f} ({_size(kept * case.result_bytes)})",
                f"{peak:.1f} ({_size(peak * case.result_bytes)})",
            ]
        )
        print("  ".join(table[-1]), flush=True)
    return table


class _ThreadClock:
    perf_counter = staticmethod(time.thread_time)


def _size(nbytes: float) -> str:
    return f"{nbytes / 1024:.0f} kB" if nbytes < 2**20 else f"{nbytes / 2**20:.1f} MB"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"


def single_threaded_blas() -> None:
    """Run again with BLAS limited to one thread, unless the environment says how many (the limit must
    be set before NumPy is imported)."""
    blas = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    if not any(v in os.environ for v in blas):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **dict.fromkeys(blas, "1")})


def main() -> None:
    single_threaded_blas()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (medians are reported)")
    parser.add_argument("--min-time", type=float, default=0.02, help="seconds per candidate per round")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per row (the median ratio is reported)")
    parser.add_argument("--quick", action="store_true", help="n <= 1000, 7 rounds, one measurement per row")
    parser.add_argument("--only", choices=sorted(TARGETS), action="append")
    parser.add_argument("--wall", action="store_true", help="wall-clock time instead of the thread's CPU time")
    args = parser.parse_args()
    if not args.wall:
        _timing.time = _ThreadClock  # interleaved() reads time.perf_counter
    sizes = tuple(n for n in SIZES if n <= 1000) if args.quick else SIZES
    rounds, repeat = (7, 1) if args.quick else (args.rounds, args.repeat)
    builders = {
        "gradient": lambda: gradient_cases(sizes),
        "hvp": lambda: hvp_cases(sizes),
        "jacobian": lambda: jacobian_cases(JACOBIAN_SIZES),
        "hessian": lambda: hessian_cases(HESSIAN_SIZES),
        "trust-ncg": lambda: [trust_ncg_case()],
    }
    table = []
    for name in args.only or builders:
        table += measure(builders[name](), rounds, args.min_time, repeat)
    header = [
        "operator",
        "n",
        "problem",
        "direct",
        "diface",
        "ratio",
        "target",
        "prep memory / result",
        "call peak / result",
    ]
    print()
    print(format_table(header, table))


if __name__ == "__main__":
    main()
