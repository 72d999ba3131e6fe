"""Prepared diface calls on AutoAutograd against autograd called directly, in one process.

Each row times the prepared diface call (`prep.gradient(x)`, ...) and the direct autograd calls that
compute the same thing, interleaved, medians of repeated rounds (`_timing.interleaved`). The ratio is
diface / the fastest direct call; targets (from the project's issue): gradient of Rosenbrock
(n = 10, 1000) <= 1.10 against `autograd.grad`, Hessian (n = 30) <= 0.5 against `autograd.hessian`.

    python benchmarks/bench_autograd.py            # the table
    python benchmarks/bench_autograd.py --repeat 3 # three measurements of every row, to see the noise
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import autograd
import autograd.numpy as anp
import numpy as np
from autograd import make_jvp, make_vjp

import diface as di
from diface._table import format_table
from diface.testing._timing import interleaved


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def tanh_layer(x):
    """(n,) -> (n,): a dense layer, for Jacobians."""
    return anp.tanh(MATRIX[: x.size, : x.size] @ x) + x**3


MATRIX = np.random.default_rng(0).standard_normal((100, 100)) / 10


def point(n: int) -> np.ndarray:
    return np.linspace(-1.2, 1.1, n)


def cases() -> list[tuple[str, int, float | None, dict[str, Callable], Callable, Callable]]:
    """(operator, n, target, direct calls by name, diface call, reference check)."""
    rows = []
    for n in (10, 1000):
        x = point(n)
        prep = di.prepare_gradient(rosenbrock, di.AutoAutograd(), x)
        grad = autograd.grad(rosenbrock)
        vjp_grad = lambda x=x: make_vjp(rosenbrock)(x)[0](1.0)
        direct = {"autograd.grad": lambda x=x, g=grad: g(x), "make_vjp": vjp_grad}
        rows.append(("gradient", n, 1.10, direct, lambda x=x, p=prep: p.gradient(x), grad))
    x = point(30)
    hess = autograd.hessian(rosenbrock)
    prep = di.prepare_hessian(rosenbrock, di.AutoAutograd(), x)
    prep_rr = di.prepare_hessian(rosenbrock, di.SecondOrder(di.AutoAutograd(), di.AutoAutograd()), x)
    grad30, eye = autograd.grad(rosenbrock), np.eye(30)
    per_column = lambda: np.stack([make_jvp(grad30)(x)(e)[1] for e in eye], axis=-1)  # forward over reverse
    direct = {"autograd.hessian": lambda: hess(x), "make_jvp(grad) per column": per_column}
    rows.append(("hessian", 30, 0.5, direct, lambda: prep.hessian(x), hess))
    rows.append(
        (
            "hessian, reverse over reverse",
            30,
            None,
            {"autograd.hessian": lambda: hess(x)},
            lambda: prep_rr.hessian(x),
            hess,
        )
    )
    v = np.cos(np.arange(30.0))
    hvp = autograd.hessian_tensor_product(rosenbrock)
    prep_hvp = di.prepare_hvp(rosenbrock, di.AutoAutograd(), x, v)
    fwd_over_rev = lambda: make_jvp(autograd.grad(rosenbrock))(x)(v)[1]
    rows.append(
        (
            "hvp",
            30,
            None,
            {"hessian_tensor_product": lambda: hvp(x, v), "make_jvp(grad)": fwd_over_rev},
            lambda: prep_hvp.hvp(x, v),
            lambda x: hvp(x, v),
        )
    )
    x = point(30)
    jac = autograd.jacobian(tanh_layer)
    for mode in ("reverse", "forward"):
        prep_j = di.prepare_jacobian(tanh_layer, di.AutoAutograd(mode), x)
        rows.append(
            (
                f"jacobian, mode={mode}",
                30,
                None,
                {"autograd.jacobian": lambda: jac(x)},
                lambda p=prep_j: p.jacobian(x),
                jac,
            )
        )
    t = np.sin(np.arange(30.0))
    prep_push = di.prepare_pushforward(tanh_layer, di.AutoAutograd(), x, t)
    rows.append(
        (
            "pushforward",
            30,
            None,
            {"make_jvp": lambda: make_jvp(tanh_layer)(x)(t)[1]},
            lambda: prep_push.pushforward(x, t),
            lambda x: make_jvp(tanh_layer)(x)(t)[1],
        )
    )
    prep_pull = di.prepare_pullback(tanh_layer, di.AutoAutograd(), x, t)
    rows.append(
        (
            "pullback",
            30,
            None,
            {"make_vjp": lambda: make_vjp(tanh_layer)(x)[0](t)},
            lambda: prep_pull.pullback(x, t),
            lambda x: make_vjp(tanh_layer)(x)[0](t),
        )
    )
    return rows


def measure(rounds: int, min_time: float) -> list[list[str]]:
    table = []
    for name, n, target, direct, ours, reference in cases():
        x = point(n)
        np.testing.assert_allclose(ours(), reference(x), rtol=1e-10, atol=1e-10)
        t = interleaved({**direct, "diface": ours}, rounds=rounds, min_time=min_time)
        fastest = min(direct, key=t.get)
        ratio = t["diface"] / t[fastest]
        ratio_first = t["diface"] / t[next(iter(direct))]
        table.append(
            [
                name,
                str(n),
                ", ".join(f"{k} {t[k] * 1e6:.0f}" for k in direct),
                f"{t['diface'] * 1e6:.0f}",
                f"{ratio_first:.2f}",
                f"{ratio:.2f}",
                "" if target is None else f"<= {target:.2f}: {'met' if ratio_first <= target else 'MISSED'}",
            ]
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41, help="interleaved rounds (medians are reported)")
    parser.add_argument("--min-time", type=float, default=0.005, help="seconds per candidate per round")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    header = ["operator", "n", "direct (us)", "diface (us)", "ratio vs first", "ratio vs fastest", "target"]
    for _ in range(args.repeat):
        print(format_table(header, measure(args.rounds, args.min_time)))
        print()


if __name__ == "__main__":
    main()
