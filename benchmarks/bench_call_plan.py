"""Prepared calls against the engine called directly, for the call shapes the call plans serve
(`diface._call.plan`): ratios in one process, interleaved, best of several rounds.

- the tape's gradient with a `Constant` against the same prepared gradient of a closure over the data;
- JAX: `value_and_gradient` with `has_aux` and an array x against
  `jax.jit(jax.value_and_grad(f, has_aux=True))`; the plain gradient at n = 10 against `jax.jit(jax.grad(f))`;
  `gradient_and_hvp` against a jitted (gradient, jvp of the gradient);
- torch: the plain gradient with a `Constant` against a closure.

    python benchmarks/bench_call_plan.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

import diface as di


def best_pair(
    a: Callable[[], object], b: Callable[[], object], number: int = 200, rounds: int = 15
) -> tuple[float, float]:
    """Best seconds per call of `a` and `b`, measured in alternating rounds."""
    ta, tb = [], []
    for _ in range(rounds):
        for fn, out in ((a, ta), (b, tb)):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - start) / number)
    return min(ta), min(tb)


def report(name: str, pair: tuple[float, float]) -> None:
    ours, theirs = pair
    print(f"{name:<58} {ours * 1e6:9.2f} us {theirs * 1e6:9.2f} us  ratio {ours / theirs:5.2f}")


def tape() -> None:
    x, data = np.linspace(0.1, 1.0, 50), np.linspace(1.0, 2.0, 50)
    with_constant = di.prepare_gradient(lambda x, c: np.sum(c * x**2), di.AutoTape(), x, di.Constant(data))
    closure = di.prepare_gradient(lambda x: np.sum(data * x**2), di.AutoTape(), x)
    c = di.Constant(data)
    report(
        "tape gradient + Constant / closure",
        best_pair(lambda: with_constant.gradient(x, c), lambda: closure.gradient(x)),
    )


def jax_engine() -> None:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    f = lambda x: (jnp.sum(jnp.sin(x) ** 2), x[0] * 2.0)
    x = jnp.linspace(0.1, 1.0, 10)
    prep = di.prepare_gradient(f, di.AutoJAX(), x, has_aux=True)
    direct = jax.jit(jax.value_and_grad(f, has_aux=True))
    ready = jax.block_until_ready
    report(
        "jax value_and_gradient, has_aux, array x / jit(value_and_grad)",
        best_pair(lambda: ready(prep.value_and_gradient(x)), lambda: ready(direct(x))),
    )
    g = lambda x: jnp.sum(jnp.sin(x) ** 2)
    plain = di.prepare_gradient(g, di.AutoJAX(), x)
    grad = jax.jit(jax.grad(g))
    report("jax gradient, n = 10 / jit(grad)", best_pair(lambda: ready(plain.gradient(x)), lambda: ready(grad(x))))
    t = jnp.ones(10)
    hvp = di.prepare_hvp(g, di.AutoJAX(), x, t)
    both = jax.jit(lambda x, t: jax.jvp(jax.grad(g), (x,), (t,)))
    report(
        "jax gradient_and_hvp / jit(jvp(grad))",
        best_pair(lambda: ready(hvp.gradient_and_hvp(x, t)), lambda: ready(both(x, t))),
    )
    report("jax hvp / jit(jvp(grad))", best_pair(lambda: ready(hvp.hvp(x, t)), lambda: ready(both(x, t)[1])))


def torch_engine() -> None:
    import torch

    x, data = torch.linspace(0.1, 1.0, 50, dtype=torch.float64), torch.linspace(1.0, 2.0, 50, dtype=torch.float64)
    with_constant = di.prepare_gradient(lambda x, c: torch.sum(c * x**2), di.AutoTorch(), x, di.Constant(data))
    closure = di.prepare_gradient(lambda x: torch.sum(data * x**2), di.AutoTorch(), x)
    c = di.Constant(data)
    report(
        "torch gradient + Constant / closure",
        best_pair(lambda: with_constant.gradient(x, c), lambda: closure.gradient(x)),
    )


if __name__ == "__main__":
    tape()
    for engine in (jax_engine, torch_engine):
        try:
            engine()
        except ImportError as e:  # pragma: no cover - an engine not installed
            print(f"{engine.__name__}: skipped ({e})")
