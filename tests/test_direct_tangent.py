"""The one-tangent programs (`Kernel.direct_tangent`) of JAX, torch, TensorFlow and PyTensor: a prepared
hvp, pushforward or pullback with one tangent runs the engine's program alone (no `Delivery`), and gives
the analytic values, prepared at one point and used at another, with NumPy and native input."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diface as di


def _namespace(engine: str) -> Any:
    return importlib.import_module(
        {"jax": "jax.numpy", "tensorflow": "tensorflow", "pytensor": "pytensor.tensor"}.get(engine, engine)
    )


ENGINES = [e for e in ("jax", "torch", "tensorflow", "pytensor") if importlib.util.find_spec(e) is not None]
BACKENDS = {"jax": "AutoJAX", "torch": "AutoTorch", "tensorflow": "AutoTensorFlow", "pytensor": "AutoPyTensor"}

X0, X1 = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
V = np.array([1.0, 0.5, -2.0])


def scalar_f(xp: Any) -> Callable:
    """sum(x³) + x₀x₁: H = diag(6x) + the x₀x₁ coupling."""
    total = getattr(xp, "reduce_sum", None) or xp.sum
    return lambda x: total(x**3) + x[0] * x[1]


def hessian(x: np.ndarray) -> np.ndarray:
    h = np.diag(6.0 * x)
    h[0, 1] += 1.0
    h[1, 0] += 1.0
    return h


def gradient(x: np.ndarray) -> np.ndarray:
    return 3.0 * x**2 + np.array([x[1], x[0], 0.0])


def vector_f(xp: Any) -> Callable:
    """(x₀²x₁, sin x₂, x₀)."""
    return lambda x: xp.stack([x[0] ** 2 * x[1], xp.sin(x[2]), x[0]])


def jacobian(x: np.ndarray) -> np.ndarray:
    return np.array([[2 * x[0] * x[1], x[0] ** 2, 0.0], [0.0, 0.0, np.cos(x[2])], [1.0, 0.0, 0.0]])


def native(engine: str) -> Callable[[np.ndarray], Any]:
    if engine == "jax":
        import jax.numpy as jnp

        return jnp.asarray
    if engine == "torch":
        import torch

        return torch.tensor
    if engine == "tensorflow":
        import tensorflow as tf

        return tf.constant
    return np.copy  # PyTensor's arrays are NumPy's


def delivered(call: Callable[[], Any]) -> bool:
    """Whether `call()` passes through the general delivery of kernel results (`Delivery.deliver`)."""
    seen = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "deliver" and frame.f_code.co_filename.endswith("deliver.py"):
            seen.append(frame)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return bool(seen)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("numpy_in", [True, False], ids=["numpy", "native"])
def test_one_tangent_programs(engine: str, numpy_in: bool) -> None:
    if engine == "pytensor" and not numpy_in:
        pytest.skip("PyTensor's native arrays are NumPy arrays")
    xp = _namespace(engine)
    backend = getattr(di, BACKENDS[engine])()
    wrap = (lambda a: a.copy()) if numpy_in else native(engine)
    x0, x1, v = wrap(X0), wrap(X1), wrap(V)
    cases = [
        (di.prepare_hvp(scalar_f(xp), backend, x0, v), "hvp", hessian(X1) @ V),
        (di.prepare_pushforward(vector_f(xp), backend, x0, v), "pushforward", jacobian(X1) @ V),
        (di.prepare_pullback(vector_f(xp), backend, x0, v), "pullback", V @ jacobian(X1)),
    ]
    if numpy_in:  # a scalar output: a NumPy scalar, as on the general path
        cases.append((di.prepare_pushforward(scalar_f(xp), backend, x0, v), "pushforward", gradient(X1) @ V))
    for prep, name, expected in cases:
        assert prep.kernel.direct_tangent is not None
        method = getattr(prep, name)
        for _ in range(2):
            r = method(x1, v)
            assert isinstance(r, (np.ndarray, np.generic)) == numpy_in or engine == "pytensor"
            np.testing.assert_allclose(np.asarray(r), expected, rtol=1e-13, atol=1e-13)
        assert np.ndim(expected) > 0 or isinstance(r, np.generic)
        assert not delivered(lambda: method(x1, v))  # noqa: B023 - called at once
    hvp = cases[0][0]
    # the plain variant runs the program; the full variant takes the kernel's run
    assert hvp.route["hvp"].run == "kernel.direct_tangent"
    assert hvp.route["gradient_and_hvp"].run == "kernel.run"


@pytest.mark.parametrize("engine", ENGINES)
def test_tuples_and_series_keep_the_kernels_run(engine: str) -> None:
    """A tuple of tangents (even of one) takes the kernel's run, and so do Taylor coefficients (a tuple
    per tangent: no one-tangent program)."""
    xp = _namespace(engine)
    backend = getattr(di, BACKENDS[engine])()
    one = di.prepare_hvp(scalar_f(xp), backend, X0, (V,))
    for _ in range(2):
        (r,) = one.hvp(X1, (V,))
        np.testing.assert_allclose(r, hessian(X1) @ V, rtol=1e-13)
    taylor = di.prepare_taylor(scalar_f(xp), backend, X0, V, order=2)
    assert taylor.kernel.direct_tangent is None
    for _ in range(2):
        _, (d1, d2) = taylor.taylor(X1, V)
        np.testing.assert_allclose([d1, d2], [gradient(X1) @ V, V @ hessian(X1) @ V], rtol=1e-13)
