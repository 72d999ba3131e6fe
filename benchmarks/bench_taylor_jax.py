"""AutoJAX's Taylor mode and forward Laplacian against JAX by hand, interleaved in one process.

(a) The Laplacian of an MLP (tanh, three hidden layers of width 256, scalar output) at n = 100 and
    n = 1000: the prepared `di.laplacian` (the collapsed forward Laplacian) against the prepared
    `di.hessian` and its trace, and against a hand-written forward Laplacian (`jax.jit` of nested
    `jvp`s under `vmap` over the basis of x, summed). The plain swept variant diface keeps as its
    fallback (`swept_laplacian`, compiled alone) is timed too: which of the two diface prefers.
(b) Taylor coefficients of order 4 through a 20-step explicit RK4 integration of a small nonlinear
    system (a Python loop, unrolled into the trace): the prepared `di.taylor_coefficients` against
    `jax.experimental.jet.jet` called directly (jitted).

Targets (issue 20): (a) at n = 1000 at least 3x faster than Hessian + trace, and within 1.2x of the
hand-written forward Laplacian; (b) within 1.2x of jet.

Inputs are JAX float64 arrays; every call waits for its result. Ratios are diface / other, medians of
interleaved rounds (`_timing.interleaved`); the run is repeated `--repeats` times and each ratio is
shown as median [min-max] over the repeats. Asynchronous CPU dispatch is off for both sides (see
benchmarks/bench_jax.py for why).

    python benchmarks/bench_taylor_jax.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import itertools
import statistics

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import jet

import diface as di
from diface._tour import format_table
from diface.backends.jax._taylor import swept_laplacian
from diface.testing._timing import interleaved

jax.config.update("jax_enable_x64", True)

WIDTH = 256


def make_mlp(n: int):
    rng = np.random.default_rng(n)
    sizes = [n, WIDTH, WIDTH, WIDTH]
    weights = [jnp.asarray(rng.standard_normal((a, b)) / np.sqrt(a)) for a, b in itertools.pairwise(sizes)]
    biases = [jnp.asarray(rng.standard_normal(WIDTH) / 10) for _ in weights]
    last = jnp.asarray(rng.standard_normal(WIDTH) / np.sqrt(WIDTH))

    def mlp(x):
        h = x
        for w, b in zip(weights, biases):
            h = jnp.tanh(h @ w + b)
        return h @ last

    return mlp


def hand_laplacian(f):
    """The forward Laplacian by hand: second derivatives along each basis vector, summed."""

    def laplacian(x):
        basis = jnp.eye(x.size, dtype=x.dtype)
        second = lambda e: jax.jvp(lambda x: jax.jvp(f, (x,), (e,))[1], (x,), (e,))[1]
        return jnp.sum(jax.vmap(second)(basis))

    return jax.jit(laplacian)


def laplacian_candidates(n: int) -> dict:
    f = make_mlp(n)
    x = jnp.asarray(np.random.default_rng(1).standard_normal(n))
    backend = di.AutoJAX()
    prep = di.prepare_laplacian(f, backend, x)
    hessian = di.prepare_hessian(f, backend, x)
    hand = hand_laplacian(f)
    swept = jax.jit(lambda x: swept_laplacian(f, x)[2])
    expected = hand(x)
    for other in (prep.laplacian(x), jnp.trace(hessian.hessian(x)), swept(x)):
        np.testing.assert_allclose(np.asarray(other), np.asarray(expected), rtol=1e-9)
    return {
        "diface": lambda: prep.laplacian(x).block_until_ready(),
        "hessian + trace": lambda: jnp.trace(hessian.hessian(x)).block_until_ready(),
        "hand": lambda: hand(x).block_until_ready(),
        "swept": lambda: swept(x).block_until_ready(),
    }


A = np.array([[0.0, 1.0, 0.0, 0.0], [-0.2, -0.1, 0.05, 0.0], [0.0, 0.0, 1.0, 0.0], [0.1, 0.0, 0.0, -1.0]])
S = np.array([[0.0, 0.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
P = np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]])
Q = np.diag([0.0, 0.0, -1.0, 1.0])


def rk4(x):
    """20 RK4 steps of a pendulum (sin) coupled to a Lotka-Volterra pair (products), in matrix form."""

    def rhs(y):
        return y @ A.T + jnp.sin(y) @ S.T + (y * (y @ P.T)) @ Q.T

    h = 0.05
    for _ in range(20):
        k1 = rhs(x)
        k2 = rhs(x + h / 2 * k1)
        k3 = rhs(x + h / 2 * k2)
        k4 = rhs(x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


def taylor_candidates() -> dict:
    order = 4
    x = jnp.asarray([0.5, -0.3, 1.2, 0.8])
    v = jnp.asarray([1.0, 0.5, -0.2, 0.3])
    prep = di.prepare_taylor(rk4, di.AutoJAX(), x, v, order=order)
    zero = jnp.zeros_like(v)
    direct = jax.jit(lambda x, v: jet.jet(rk4, (x,), ((v,) + (zero,) * (order - 1),))[1])
    for a, b in zip(prep.taylor_coefficients(x, v), direct(x, v)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10)
    return {
        "diface": lambda: jax.block_until_ready(prep.taylor_coefficients(x, v)),
        "jet": lambda: jax.block_until_ready(direct(x, v)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    jax.config.update("jax_cpu_enable_async_dispatch", False)  # before the first array
    print(f"JAX {jax.__version__}, CPU dispatch synchronous")

    def ratio(runs: list, a: str, b: str) -> str:
        r = [t[a] / t[b] for t in runs]
        return f"{statistics.median(r):.3f} [{min(r):.2f}-{max(r):.2f}]"

    def ms(runs: list, name: str) -> str:
        return f"{statistics.median(t[name] for t in runs) * 1e3:.3f}"

    rows = []
    for n in (100, 1000):
        candidates = laplacian_candidates(n)  # prepared and compiled once
        runs = [interleaved(candidates, rounds=9) for _ in range(args.repeats)]
        rows.append(
            [
                str(n),
                ms(runs, "diface"),
                ms(runs, "hessian + trace"),
                ms(runs, "hand"),
                ms(runs, "swept"),
                ratio(runs, "hessian + trace", "diface"),
                ratio(runs, "diface", "hand"),
                ratio(runs, "diface", "swept"),
            ]
        )
    print("(a) Laplacian of a tanh MLP (3 x 256), scalar output; times in ms")
    header = ["n", "diface", "hessian+trace", "hand", "swept", "speed-up vs hessian", "diface/hand", "diface/swept"]
    print(format_table(header, rows), flush=True)

    candidates = taylor_candidates()  # jet compiles slowly here (tens of seconds): its graph is large
    runs = [interleaved(candidates) for _ in range(args.repeats)]
    print("\n(b) Taylor order 4 through 20 RK4 steps; times in us")
    rows = [
        [
            f"{statistics.median(t['diface'] for t in runs) * 1e6:.1f}",
            f"{statistics.median(t['jet'] for t in runs) * 1e6:.1f}",
            ratio(runs, "diface", "jet"),
        ]
    ]
    print(format_table(["diface", "jet (jitted)", "diface/jet"], rows))


if __name__ == "__main__":
    main()
