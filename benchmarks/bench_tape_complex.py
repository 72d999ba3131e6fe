"""A prepared AutoTape gradient through complex intermediates against HIPS autograd's `grad` (issue 18).

f(x) = sum(|fft(z)|^2 w) + sum(Re(exp(i z) conj(z)) + |z|) with z = x[:n] + i x[n:] (real x of 2n
entries, complex values in between), the same function written with autograd.numpy for autograd. The
ratio is autograd.grad / the prepared tape gradient (target: >= 5), medians of interleaved rounds
(`diface.testing._timing.interleaved`); both gradients are checked to agree first.

    python benchmarks/bench_tape_complex.py            # n = 100, 1000, 10000
    python benchmarks/bench_tape_complex.py --quick    # n = 1000, fewer rounds
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import autograd
import autograd.numpy as anp
import numpy as np

import diface as di
from diface.testing._timing import interleaved

TARGET = 5.0


def make(xp, n: int, w: np.ndarray):
    def f(x):
        z = x[:n] + 1j * x[n:]
        power = xp.sum(xp.abs(xp.fft.fft(z)) ** 2 * w)
        return power + xp.sum(xp.real(xp.exp(1j * z) * xp.conj(z)) + xp.abs(z))

    return f


def row(n: int, rounds: int) -> tuple[int, float, float, float]:
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 1.5, n)
    x = rng.standard_normal(2 * n)
    f, fa = make(np, n, w), make(anp, n, w)
    backend = di.AutoTape()
    prep = di.prepare_gradient(f, backend, x + 0.1)
    grad_a = autograd.grad(fa)
    np.testing.assert_allclose(di.gradient(f, backend, x, prep=prep), grad_a(x), rtol=1e-9, atol=1e-9)
    times = interleaved(
        {"tape": lambda: di.gradient(f, backend, x, prep=prep), "autograd": lambda: grad_a(x)}, rounds=rounds
    )
    return n, times["tape"], times["autograd"], times["autograd"] / times["tape"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes, rounds = ((1000,), 7) if args.quick else ((100, 1000, 10_000), 15)
    print(f"{'n':>7} {'tape (us)':>11} {'autograd (us)':>14} {'ratio':>7}  target >= {TARGET}")
    for n, tape, ag, ratio in (row(n, rounds) for n in sizes):
        print(f"{n:>7} {tape * 1e6:>11.1f} {ag * 1e6:>14.1f} {ratio:>7.1f}  {'ok' if ratio >= TARGET else 'MISSED'}")


if __name__ == "__main__":
    main()
