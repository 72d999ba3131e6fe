"""Prepared `di.AutoTorch` calls against the fastest direct PyTorch calls, interleaved in one process.

Each row times a call and the direct engine call it is measured against, interleaved in rounds
(`diface.testing._timing.interleaved`); the ratio is the median over the rounds of each round's
call / direct. The rows with a target time the prepared diface call (tensor in, tensor out, strict
checks on):

- gradient (Rosenbrock, n = 10 and 1000) <= 1.10 x `torch.autograd.grad` on a fresh leaf;
- jacobian (a dense 100 -> 100 map) <= 1.0 x `torch.func.jacrev`;
- hessian (Rosenbrock, n = 100) <= 1.0 x `torch.func.hessian`.

The other rows are for information: diface with strict=False or NumPy input and output, forward mode,
the vectorized `torch.autograd.functional` calls (for the Hessian, the same double backward as diface's),
forward over reverse (what a plain AutoTorch does not use, measured slower), and `torch.func.grad`
against `torch.autograd.grad`. Torch runs on one thread (the machine is shared).

    python benchmarks/bench_torch.py [--repeat 3] [--rounds 51] [--round-time 0.005]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's diface, not an installed one
import diface as di
from diface._table import format_table
from diface.testing._timing import interleaved

torch.set_num_threads(1)

A = torch.randn(100, 100, generator=torch.Generator().manual_seed(0), dtype=torch.float64) / 10


def rosenbrock(x):
    return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def dense_map(x):
    """A dense 100 -> 100 map."""
    return torch.tanh(A @ x) + x**3


def autograd_gradient(f: Callable, x: torch.Tensor) -> Callable[[], Any]:
    def call():
        leaf = x.detach().requires_grad_()
        return torch.autograd.grad(f(leaf), leaf)[0]

    return call


def double_backward_hvp(x: torch.Tensor, v: torch.Tensor) -> Callable[[], Any]:
    def call():
        leaf = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(rosenbrock(leaf), leaf, create_graph=True)
        return torch.autograd.grad(g, leaf, v)[0]

    return call


@dataclass
class Row:
    label: str
    call: Callable[[], Any]
    direct_name: str
    direct: Callable[[], Any]
    target: float | None = None


def rows() -> list[Row]:
    out = []
    for n in (10, 1000):
        x = torch.linspace(-1.0, 1.0, n, dtype=torch.float64)
        direct = autograd_gradient(rosenbrock, x)
        strict = di.prepare_gradient(rosenbrock, di.AutoTorch(), x)
        loose = di.prepare_gradient(rosenbrock, di.AutoTorch(), x, strict=False)
        xn = x.numpy()
        numpy_in = di.prepare_gradient(rosenbrock, di.AutoTorch(), xn)
        func_grad = torch.func.grad(rosenbrock)
        out += [
            Row(f"gradient, Rosenbrock n={n}", lambda p=strict, x=x: p.gradient(x), "autograd.grad", direct, 1.10),
            Row(f"  strict=False, n={n}", lambda p=loose, x=x: p.gradient(x), "autograd.grad", direct),
            Row(f"  NumPy in and out, n={n}", lambda p=numpy_in, x=xn: p.gradient(x), "autograd.grad", direct),
            Row(f"  torch.func.grad (no diface), n={n}", lambda g=func_grad, x=x: g(x), "autograd.grad", direct),
        ]
    x = torch.linspace(-1.0, 1.0, 100, dtype=torch.float64)
    reverse = di.prepare_jacobian(dense_map, di.AutoTorch(), x)
    forward = di.prepare_jacobian(dense_map, di.AutoTorch("forward"), x)
    hessian = di.prepare_hessian(rosenbrock, di.AutoTorch(), x)
    forward_over_reverse = di.prepare_hessian(rosenbrock, di.SecondOrder(di.AutoTorch("forward"), di.AutoTorch()), x)
    jacrev, jacfwd, func_hessian = (
        torch.func.jacrev(dense_map),
        torch.func.jacfwd(dense_map),
        torch.func.hessian(rosenbrock),
    )
    functional = torch.autograd.functional
    out += [
        Row("jacobian, dense 100->100", lambda: reverse.jacobian(x), "jacrev", lambda: jacrev(x), 1.0),
        Row(
            "  same, against torch.autograd.functional",
            lambda: reverse.jacobian(x),
            "functional.jacobian",
            lambda: functional.jacobian(dense_map, x, vectorize=True),
        ),
        Row("  AutoTorch('forward')", lambda: forward.jacobian(x), "jacfwd", lambda: jacfwd(x)),
        Row("hessian, Rosenbrock n=100", lambda: hessian.hessian(x), "hessian", lambda: func_hessian(x), 1.0),
        Row(
            "  same, against torch.autograd.functional",
            lambda: hessian.hessian(x),
            "functional.hessian",
            lambda: functional.hessian(rosenbrock, x, vectorize=True),
        ),
        Row(
            "  SecondOrder(AutoTorch('forward'), AutoTorch())",
            lambda: forward_over_reverse.hessian(x),
            "hessian",
            lambda: func_hessian(x),
        ),
    ]
    v = torch.cos(x)
    hvp = di.prepare_hvp(rosenbrock, di.AutoTorch(), x, v)
    hvp_forward_over_reverse = di.prepare_hvp(rosenbrock, di.SecondOrder(di.AutoTorch("forward"), di.AutoTorch()), x, v)
    out += [
        Row("hvp, Rosenbrock n=100", lambda: hvp.hvp(x, v), "double backward", double_backward_hvp(x, v)),
        Row(
            "  SecondOrder(AutoTorch('forward'), AutoTorch())",
            lambda: hvp_forward_over_reverse.hvp(x, v),
            "double backward",
            double_backward_hvp(x, v),
        ),
    ]
    return out


def check_agreement(table: list[Row]) -> None:
    """Every timed call computes what its direct call computes."""
    for row in table:
        mine, theirs = torch.as_tensor(row.call()), row.direct()
        assert torch.allclose(mine, theirs, rtol=1e-10, atol=1e-12), row.label


def paired(row: Row, rounds: int, min_time: float) -> tuple[float, float, float]:
    """(call seconds, direct seconds, ratio): medians over interleaved rounds, the ratio being the median
    of each round's call / direct. A round times both calls back to back for `min_time` each, so a burst
    of load from elsewhere on the machine hits both alike or spoils one round, not the verdict."""
    calls, directs, ratios = [], [], []
    for _ in range(rounds):
        t = interleaved({"call": row.call, "direct": row.direct}, rounds=1, min_time=min_time)
        calls.append(t["call"])
        directs.append(t["direct"])
        ratios.append(t["call"] / t["direct"])
    return statistics.median(calls), statistics.median(directs), statistics.median(ratios)


def measure(table: list[Row], rounds: int, min_time: float) -> list[list[str]]:
    lines = []
    for row in table:
        call, direct, ratio = paired(row, rounds, min_time)
        verdict = "" if row.target is None else ("ok" if ratio <= row.target else "MISSED")
        target = "" if row.target is None else f"<= {row.target:.2f}"
        lines.append(
            [row.label, f"{call * 1e6:.1f}", row.direct_name, f"{direct * 1e6:.1f}", f"{ratio:.3f}", target, verdict]
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="independent measurements of every row")
    parser.add_argument("--rounds", type=int, default=51, help="interleaved rounds per measurement")
    parser.add_argument("--round-time", type=float, default=0.005, help="seconds each call runs per round")
    args = parser.parse_args()
    table = rows()
    check_agreement(table)
    header = ["case (a prepared diface call unless named)", "call (us)", "direct", "direct (us)", "ratio", "target", ""]
    for run in range(args.repeat):
        if args.repeat > 1:
            print(f"run {run + 1} of {args.repeat}")
        print(format_table(header, measure(table, args.rounds, args.round_time)))


if __name__ == "__main__":
    main()
