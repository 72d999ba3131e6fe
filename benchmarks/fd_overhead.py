"""Prepared finite-difference gradient against scipy.optimize.approx_fprime, in one process.

Both use forward differences (n + 1 evaluations of f); the central column (2n evaluations) is for
reference. Ratios are diface / scipy, medians of interleaved rounds.

    python benchmarks/fd_overhead.py
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import approx_fprime

import diface as di
from diface._table import format_table
from diface.testing._timing import interleaved


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def measure(n: int) -> list[str]:
    x = np.linspace(-1.0, 1.0, n)
    forward = di.prepare_gradient(rosenbrock, di.AutoFiniteDiff("forward"), x)
    central = di.prepare_gradient(rosenbrock, di.AutoFiniteDiff("central"), x)
    unchecked = di.prepare_gradient(rosenbrock, di.AutoFiniteDiff("forward"), x, strict=False)
    eps = np.sqrt(np.finfo(float).eps)
    t = interleaved(
        {
            "f": lambda: rosenbrock(x),
            "scipy": lambda: approx_fprime(x, rosenbrock, eps),
            "forward": lambda: forward.gradient(x),
            "forward_unchecked": lambda: unchecked.gradient(x),
            "central": lambda: central.gradient(x),
        }
    )
    return [
        str(n),
        f"{t['f'] * 1e6:.1f}",
        f"{t['scipy'] * 1e6:.0f}",
        f"{t['forward'] * 1e6:.0f}",
        f"{t['forward'] / t['scipy']:.2f}",
        f"{t['forward_unchecked'] / t['scipy']:.2f}",
        f"{t['central'] * 1e6:.0f}",
    ]


def main() -> None:
    header = ["n", "f (us)", "approx_fprime (us)", "diface forward (us)", "ratio", "ratio, strict=False"]
    print(format_table([*header, "diface central (us)"], [measure(n) for n in (10, 100)]))


if __name__ == "__main__":
    main()
