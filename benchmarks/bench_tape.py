"""Prepared AutoTape gradients against autograd.grad and torch.autograd.grad, in one process.

Two problems: Rosenbrock (n = 100) and the mean squared error of a small MLP (8 inputs, 32 tanh hidden
units, 1 output, a batch of 64; its 321 parameters are x, the data are Constants). Each row is the
median over interleaved rounds (every candidate timed in every round); the whole measurement is
repeated `--repeats` times and each ratio is reported as the median with its spread (min-max), which
is the noise of the machine. Ratios above 1 mean AutoTape is faster; "vs f" is the prepared gradient's
time over one plain NumPy evaluation of f (the cheap-gradient bound says a small constant).

    python benchmarks/bench_tape.py [--repeats 5] [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import diface as di
from diface._table import format_table
from diface.testing._timing import interleaved

D_IN, HIDDEN, D_OUT, BATCH = 8, 32, 1, 64
SHAPES = [(D_IN, HIDDEN), (HIDDEN,), (HIDDEN, D_OUT), (D_OUT,)]


def rosenbrock(x: Any, xp: Any = np) -> Any:
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def mlp_loss(p: Any, inputs: Any, targets: Any, xp: Any = np) -> Any:
    layers, start = [], 0
    for shape in SHAPES:
        size = int(np.prod(shape))
        layers.append(xp.reshape(p[start : start + size], shape))
        start += size
    w1, b1, w2, b2 = layers
    hidden = xp.tanh(inputs @ w1 + b1)
    return xp.mean((hidden @ w2 + b2 - targets) ** 2)


def problems() -> dict[str, tuple[Callable, np.ndarray, tuple]]:
    rng = np.random.default_rng(0)
    size = sum(int(np.prod(s)) for s in SHAPES)
    data = (rng.standard_normal((BATCH, D_IN)), rng.standard_normal((BATCH, D_OUT)))
    mlp = f"MLP {D_IN}-{HIDDEN}-{D_OUT}, batch {BATCH} ({size} parameters)"
    return {
        "Rosenbrock, n = 100": (rosenbrock, np.linspace(-1.0, 1.0, 100) * 0.9, ()),
        mlp: (mlp_loss, 0.3 * rng.standard_normal(size), data),
    }


def candidates(f: Callable, x: np.ndarray, data: tuple) -> dict[str, Callable[[], Any]]:
    """Thunks computing the same gradient (and f itself), after checking that they agree."""
    import autograd
    import autograd.numpy as anp
    import torch

    contexts = tuple(di.Constant(d) for d in data)
    prep = di.prepare_gradient(f, di.AutoTape(), x, *contexts)
    ag = autograd.grad(lambda x: f(x, *data, xp=anp))
    tx = torch.from_numpy(x)
    tdata = tuple(torch.from_numpy(d) for d in data)

    def torch_grad() -> Any:
        leaf = tx.detach().requires_grad_(True)
        return torch.autograd.grad(f(leaf, *tdata, xp=torch), leaf)[0]

    reference = prep.gradient(x, *contexts)
    for other in (ag(x), torch_grad().numpy()):
        np.testing.assert_allclose(other, reference, rtol=1e-10, atol=1e-12)
    return {
        "tape": lambda: prep.gradient(x, *contexts),
        "autograd": lambda: ag(x),
        "torch": torch_grad,
        "f": lambda: f(x, *data),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="independent measurements per problem")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds per measurement")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    rows = []
    for name, (f, x, data) in problems().items():
        thunks = candidates(f, x, data)
        runs = [interleaved(thunks, rounds=args.rounds) for _ in range(args.repeats)]

        def cell(ratio: Callable[[dict], float], runs: list = runs) -> str:
            values = [ratio(t) for t in runs]
            return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

        median = {k: statistics.median(t[k] for t in runs) * 1e6 for k in thunks}
        rows.append(
            [
                name,
                f"{median['tape']:.1f}",
                f"{median['autograd']:.0f}",
                f"{median['torch']:.0f}",
                f"{median['f']:.1f}",
                cell(lambda t: t["autograd"] / t["tape"]),
                cell(lambda t: t["torch"] / t["tape"]),
                cell(lambda t: t["tape"] / t["f"]),
            ]
        )
    header = ["problem", "tape (us)", "autograd (us)", "torch (us)", "f (us)"]
    header += ["autograd / tape", "torch / tape", "tape / f"]
    print(format_table(header, rows))
    print(f"medians of {args.repeats} measurements (min-max in parentheses), {args.rounds} interleaved rounds each")


if __name__ == "__main__":
    main()
