"""Complex gradients: prepared diface calls against each engine's own idiom, in one process (issue 18).

A real loss of complex z (a phase-retrieval-like Σ |z|⁴ - Re Σ conj(c) z²), its gradient 2∂̄f:

| engine | direct idiom (with its conjugation) | target |
|---|---|---|
| torch | `torch.autograd.grad` on a fresh complex leaf (torch's gradient is diface's) | <= 1.15 |
| JAX | `jax.jit(lambda z: jnp.conj(jax.grad(f)(z)))` (JAX's gradient is the conjugate) | <= 1.15 |

Each ratio is diface / direct, from interleaved medians (`diface.testing._timing.interleaved`), native
arrays in (torch tensors, JAX arrays) and NumPy arrays in. The last table compares the tape with HIPS
autograd on the same complex NumPy code (prepared tape gradient / `autograd.grad`).

    python benchmarks/bench_complex.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import diface as di
from diface._table import format_table
from diface.testing._timing import interleaved

SIZES = (10, 1000)
C = 0.3 - 0.4j


def point(n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    return rng.standard_normal(n) + 1j * rng.standard_normal(n)


def engine_rows(name: str, backend, f, direct, native, direct_numpy, ready) -> list:
    """(engine, n, direct seconds, diface/direct with native arrays, diface/direct with NumPy input) for each
    size: `direct` is the engine's idiom on its arrays (`native(z)`), `direct_numpy` the same from NumPy
    input to NumPy output, `ready` waits for an asynchronous result."""
    rows = []
    for n in SIZES:
        z = point(n)
        zn = native(z)
        prep_native = di.prepare_gradient(f, backend, zn)
        prep_numpy = di.prepare_gradient(f, backend, z)
        assert np.allclose(np.asarray(prep_native.gradient(zn)), np.asarray(direct(zn)))
        times = interleaved(
            {
                "direct": lambda zn=zn: ready(direct(zn)),
                "native": lambda p=prep_native, zn=zn: ready(p.gradient(zn)),
                "direct numpy": lambda z=z: direct_numpy(z),
                "numpy": lambda p=prep_numpy, z=z: p.gradient(z),
            }
        )
        rows.append(
            (name, n, times["direct"], times["native"] / times["direct"], times["numpy"] / times["direct numpy"])
        )
    return rows


def torch_rows() -> list:
    import torch

    def f(z):
        a = z.real**2 + z.imag**2
        return torch.sum(a * a) - torch.real(torch.sum(C.conjugate() * z**2))

    def direct(z):
        leaf = z.detach().requires_grad_(True)
        return torch.autograd.grad(f(leaf), leaf)[0]

    return engine_rows(
        "torch", di.AutoTorch(), f, direct, torch.from_numpy, lambda z: direct(torch.from_numpy(z)).numpy(), lambda a: a
    )


def jax_rows() -> list:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def f(z):
        a = jnp.real(z) ** 2 + jnp.imag(z) ** 2
        return jnp.sum(a * a) - jnp.real(jnp.sum(C.conjugate() * z**2))

    direct = jax.jit(lambda z: jnp.conj(jax.grad(f)(z)))
    return engine_rows(
        "jax", di.AutoJAX(), f, direct, jnp.asarray, lambda z: np.asarray(direct(z)), lambda a: a.block_until_ready()
    )


def tape_rows() -> list:
    import autograd
    import autograd.numpy as anp

    def f(z):
        w = anp.fft.fft(z) * anp.exp(1j * anp.real(z))
        return anp.sum(anp.abs(w) ** 2) + anp.real(anp.sum(anp.conj(z) * z * C))

    def g(z):  # the same code for the tape, on NumPy
        w = np.fft.fft(z) * np.exp(1j * np.real(z))
        return np.sum(np.abs(w) ** 2) + np.real(np.sum(np.conj(z) * z * C))

    rows = []
    grad = autograd.grad(f)
    for n in SIZES:
        z = point(n)
        prep = di.prepare_gradient(g, di.AutoTape(), z)
        assert np.allclose(prep.gradient(z), np.conj(grad(z)))
        times = interleaved({"autograd.grad": lambda z=z: grad(z), "tape": lambda p=prep, z=z: p.gradient(z)})
        rows.append(("tape vs autograd", n, times["autograd.grad"], times["autograd.grad"] / times["tape"], None))
    return rows


def main() -> None:
    rows = []
    for make in (torch_rows, jax_rows):
        rows += make()
    table = [(engine, str(n), f"{t * 1e6:.1f}", f"{r1:.2f}", f"{r2:.2f}") for engine, n, t, r1, r2 in rows]
    print(format_table(("engine", "n", "direct µs", "diface/direct (native)", "diface/direct (NumPy)"), table))
    try:
        tape = tape_rows()
    except di.NotSupportedError as e:
        print(f"\nthe tape: {e}")
        return
    print()
    print(
        format_table(
            ("code", "n", "autograd µs", "speedup of the tape"),
            [(name, str(n), f"{t * 1e6:.1f}", f"{s:.1f}x") for name, n, t, s, _ in tape],
        )
    )


if __name__ == "__main__":
    main()
