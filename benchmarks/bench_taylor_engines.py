"""Prepared Taylor coefficients and exact Laplacians on a small tanh MLP: each engine's own kernels
(TensorFlow, MLX, PyTensor) against the core's default derivation (nested pushforward kernels, the
Laplacian from them over the basis), measured interleaved in one process (medians of repeats).

Usage: python benchmarks/bench_taylor_engines.py [tensorflow mlx pytensor autograd]

Order 4, except TensorFlow at order 3: from order 4 on it uses the core's derivation itself (see
`NATIVE_TAYLOR_ORDER` in diface/backends/tensorflow). The default derivation gives zeros past the first
coefficient on MLX (a kernel's evaluated results are constants to an enclosing `mx.jvp`) and cannot
trace on PyTensor; those rows say so instead of a ratio. autograd has no kernel of its own (a nesting of
its forward mode carrying all coefficients at once measured no faster): its row is the default alone.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import diface as di
from diface._backend import Backend

N_IN, N_HIDDEN, REPEATS, CALLS = 8, 16, 15, 20


def namespaces() -> dict[str, Callable[[], tuple[Any, Any, Any, Callable]]]:
    def tf() -> tuple:
        import tensorflow as tf_

        return di.AutoTensorFlow, tf_.tanh, tf_.reduce_sum, tf_.constant

    def mlx() -> tuple:
        import mlx.core as mx

        return di.AutoMLX, mx.tanh, mx.sum, lambda a: mx.array(a, dtype=mx.float64)

    def pytensor() -> tuple:
        import pytensor.tensor as pt

        return di.AutoPyTensor, pt.tanh, pt.sum, np.asarray

    def autograd() -> tuple:
        import autograd.numpy as anp

        return di.AutoAutograd, anp.tanh, anp.sum, np.asarray

    return {"tensorflow": tf, "mlx": mlx, "pytensor": pytensor, "autograd": autograd}


def derived(cls: type) -> Backend:
    """The engine with the core's default derivations of both hooks."""
    sub = type(
        f"Derived{cls.__name__}",
        (cls,),
        {"prepare_taylor": Backend.prepare_taylor, "prepare_laplacian": Backend.prepare_laplacian},
    )
    return sub()


def mlp(tanh: Any, total: Any, const: Any) -> Callable:
    rng = np.random.default_rng(0)
    w1, b1, w2 = rng.normal(size=(N_HIDDEN, N_IN)) / 2, rng.normal(size=N_HIDDEN), rng.normal(size=N_HIDDEN)
    W1, B1, W2 = const(w1), const(b1), const(w2)
    return lambda z: total(W2 * tanh(total(W1 * z[None, :], axis=1) + B1))


def timed(call: Callable) -> float:
    start = time.perf_counter()
    for _ in range(CALLS):
        call()
    return (time.perf_counter() - start) / CALLS


def compare(calls: dict[str, Callable]) -> dict[str, float]:
    """Median seconds per call of each, interleaved."""
    times: dict[str, list] = {k: [] for k in calls}
    for c in calls.values():
        c()
    for _ in range(REPEATS):
        for k, c in calls.items():
            times[k].append(timed(c))
    return {k: float(np.median(v)) for k, v in times.items()}


def prepared(what: str, f: Callable, backend: Backend, x: np.ndarray, order: int) -> tuple[Callable | None, str]:
    """A prepared call of `what` and what goes wrong, if anything (checked against the native value)."""
    try:
        start = time.perf_counter()
        if what == "taylor":
            prep = di.prepare_taylor(f, backend, x, order=order)
            v = x[::-1].copy()
            call = lambda: prep.taylor_coefficients(x, v)
        else:
            prep = di.prepare_laplacian(f, backend, x)
            call = lambda: prep.laplacian(x)
        call()
        return call, f"prep {time.perf_counter() - start:.2f} s"
    except Exception as e:
        return None, f"fails: {type(e).__name__}"


def main(names: list[str]) -> None:
    x = np.random.default_rng(1).normal(size=N_IN)
    for name in names:
        if importlib.util.find_spec(name) is None:
            print(f"{name}: not installed")
            continue
        cls, tanh, total, const = namespaces()[name]()
        f = mlp(tanh, total, const)
        order = 3 if name == "tensorflow" else 4
        for what in ("taylor", "laplacian"):
            label = f"{name:10s} {what} (order {order})" if what == "taylor" else f"{name:10s} exact laplacian"
            native, native_note = prepared(what, f, cls(), x, order)
            default, default_note = prepared(what, f, derived(cls), x, order)
            if native is None:
                print(f"{label}: native {native_note}")
                continue
            if name == "autograd":
                t = compare({"default": native})["default"]
                print(f"{label}: default derivation {t * 1e6:8.1f} us ({native_note})")
                continue
            if default is not None:
                a, b = (
                    np.asarray(native()[-1] if what == "taylor" else native()),
                    np.asarray(default()[-1] if what == "taylor" else default()),
                )
                if not np.allclose(a, b, rtol=1e-6, atol=1e-9):
                    default, default_note = None, f"wrong: {float(b):.4g} instead of {float(a):.4g}"
            if default is None:
                t = compare({"native": native})["native"]
                print(f"{label}: native {t * 1e6:8.1f} us ({native_note}); default derivation {default_note}")
                continue
            t = compare({"native": native, "default": default})
            print(
                f"{label}: native {t['native'] * 1e6:8.1f} us ({native_note}), default {t['default'] * 1e6:8.1f} us "
                f"({default_note}), default/native {t['default'] / t['native']:.2f}x"
            )


if __name__ == "__main__":
    main(sys.argv[1:] or ["tensorflow", "mlx", "pytensor", "autograd"])
