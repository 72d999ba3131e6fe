"""Prepared gradients on a parameter dict (a 10-leaf MLP) against the engines' own tree gradients.

| engine | direct | target |
| --- | --- | --- |
| AutoTorch | `torch.func.grad(loss)(params)` | <= 1.15 |
| AutoJAX | `jax.jit(jax.grad(loss))(params)` | <= 1.15 |

Each engine is measured twice: the data as a closure, and the data as a `di.Constant` context (the
engine called directly takes it as an argument). Also reported: the tree layer's own cost per call
(flatten + check + ravel of x, cutting the flat gradient back into a dict; with JAX, where ravel and
cutting are compiled into one program with the gradient, flatten + check), in microseconds. The two
sides are timed in alternation.

    python benchmarks/bench_trees.py [--repeat 200] [--width 64]
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np

import diface as di


def _best(fn, repeat: int) -> float:
    fn()
    return min(timeit.repeat(fn, number=20, repeat=max(repeat // 20, 3))) / 20


def _pair(a, b, repeat: int) -> tuple[float, float]:
    """Best seconds per call of `a` and of `b`, timed in alternation (a busy machine slows both alike)."""
    a(), b()
    ta, tb = [], []
    for _ in range(max(repeat // 20, 3)):
        ta.append(timeit.timeit(a, number=20) / 20)
        tb.append(timeit.timeit(b, number=20) / 20)
    return min(ta), min(tb)


def mlp_params(width: int, rng: np.random.Generator) -> dict:
    sizes = [8, width, width, width, width, 1]
    return {
        **{f"layer{i}.w": rng.normal(size=(sizes[i + 1], sizes[i])) / np.sqrt(sizes[i]) for i in range(5)},
        **{f"layer{i}.b": np.zeros(sizes[i + 1]) for i in range(5)},
    }


def _mlp_loss(xp, tanh):
    def loss(p: dict, data) -> object:
        h = data
        for i in range(5):
            h = h @ p[f"layer{i}.w"].T + p[f"layer{i}.b"]
            if i < 4:
                h = tanh(h)
        return xp.mean(h**2)

    return loss


def bench_torch(params: dict, repeat: int, constant: bool) -> tuple[float, float, float]:
    import torch

    p = {k: torch.as_tensor(v) for k, v in params.items()}
    data = torch.randn(32, 8, dtype=torch.float64)
    loss = _mlp_loss(torch, torch.tanh)
    if constant:
        prep = di.prepare_gradient(loss, di.AutoTorch(), p, di.Constant(data))
        direct = torch.func.grad(loss)
        t_di, t_direct = _pair(lambda: prep.gradient(p, di.Constant(data)), lambda: direct(p, data), repeat)
    else:
        closed = lambda p: loss(p, data)
        prep = di.prepare_gradient(closed, di.AutoTorch(), p)
        direct = torch.func.grad(closed)
        t_di, t_direct = _pair(lambda: prep.gradient(p), lambda: direct(p), repeat)
    return t_di, t_direct, _layer_overhead(prep, p, repeat)


def bench_jax(params: dict, repeat: int, constant: bool) -> tuple[float, float, float]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    p = {k: jnp.asarray(v) for k, v in params.items()}
    data = jnp.asarray(np.random.default_rng(1).normal(size=(32, 8)))
    loss = _mlp_loss(jnp, jnp.tanh)
    ready = jax.block_until_ready
    if constant:
        prep = di.prepare_gradient(loss, di.AutoJAX(), p, di.Constant(data))
        direct = jax.jit(jax.grad(loss))
        t_di, t_direct = _pair(
            lambda: ready(prep.gradient(p, di.Constant(data))), lambda: ready(direct(p, data)), repeat
        )
    else:
        closed = lambda p: loss(p, data)
        prep = di.prepare_gradient(closed, di.AutoJAX(), p)
        direct = jax.jit(jax.grad(closed))
        t_di, t_direct = _pair(lambda: ready(prep.gradient(p)), lambda: ready(direct(p)), repeat)
    return t_di, t_direct, _layer_overhead(prep, p, repeat)


def _layer_overhead(prep, p: dict, repeat: int) -> float:
    """Seconds per call of what the tree layer adds: flatten, check and ravel x, cut the result back (with
    JAX's fused program, where ravel and the cutting are compiled into the one program: flatten and check)."""
    xi = prep.codec.xi
    if prep.route["gradient"].compiled:  # one compiled program
        return _best(lambda: xi.matches(*xi.flattener.flatten(p)), repeat)
    flat_grad = xi.ravel_leaves(xi.flattener.flatten(p)[0])

    def layer() -> None:
        leaves, spec = xi.flattener.flatten(p)
        xi.matches(leaves, spec)
        xi.ravel_leaves(leaves)
        xi.unravel(flat_grad)

    return _best(layer, repeat)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--width", type=int, default=64)
    args = ap.parse_args()
    params = mlp_params(args.width, np.random.default_rng(0))
    print(f"10-leaf MLP parameter dict, {sum(v.size for v in params.values())} parameters")
    print(f"{'engine':<22} {'diface (us)':>12} {'direct (us)':>12} {'ratio':>7} {'tree layer (us)':>16}")
    for name, bench in (("torch", bench_torch), ("jax", bench_jax)):
        for constant in (False, True):
            t_di, t_direct, layer = bench(params, args.repeat, constant)
            label = f"{name}{', Constant data' if constant else ''}"
            print(f"{label:<22} {t_di * 1e6:12.1f} {t_direct * 1e6:12.1f} {t_di / t_direct:7.2f} {layer * 1e6:16.1f}")


if __name__ == "__main__":
    main()
