"""Cross-engine agreement: the same mathematical function, written once against each engine's array
namespace, gives the same results on every engine, for every operator.

Unlike the scenario tests these functions have no analytic reference: the engines check each other.
The reference is the most accurate engine available (exact ones before finite differences).
"""

from __future__ import annotations

import numpy as np
import pytest

import diface as di
from conftest import engine_backends
from diface.testing import namespace_of
from diface.testing._check import tolerances

W = np.random.default_rng(7).standard_normal((3, 5)) / 2


def logsumexp(xp, x):
    m = xp.max(x)
    return m + xp.log(xp.sum(xp.exp(x - m)))


def softmax(xp, x):
    e = xp.exp(x - xp.max(x))
    return e / xp.sum(e)


def layer(xp, x):
    return xp.tanh(xp.asarray(W, dtype=x.dtype) @ x) * x[:3]


def strided_products(xp, x):
    return x[::2] * x[1::2] + xp.sqrt(x[:3] ** 2 + 1.0)


def norm_of_outer(xp, x):
    return xp.sqrt(xp.sum((x[:, None] * x[None, :]) ** 2) + 1.0)


FUNCTIONS = {
    "logsumexp": (logsumexp, True),
    "softmax": (softmax, False),
    "tanh layer": (layer, False),
    "strided products": (strided_products, False),
    "norm of outer product": (norm_of_outer, True),
}
X = np.array([0.3, -1.2, 0.8, 0.05, -0.4, 1.1])[:5]
X6 = np.array([0.3, -1.2, 0.8, 0.05, -0.4, 1.1])


def _point(name: str) -> np.ndarray:
    return X6 if name == "strided products" else X


def _results(backend, name: str) -> dict[str, object]:
    fn, scalar = FUNCTIONS[name]
    xp = namespace_of(backend)
    f = lambda x: fn(xp, x)
    x = _point(name)
    t = np.linspace(-1.0, 1.0, x.size)
    out = {"jacobian": di.jacobian(f, backend, x), "pushforward": di.pushforward(f, backend, x, t)}
    y_shape = np.shape(out["jacobian"])[:-1]  # x is a vector
    out["pullback"] = di.pullback(f, backend, x, np.linspace(0.5, 1.5, int(np.prod(y_shape))).reshape(y_shape))
    if scalar:
        out["gradient"] = di.gradient(f, backend, x)
        out["hessian"] = di.hessian(f, backend, x)
        out["hvp"] = di.hvp(f, backend, x, t)
    return out


def _pairs() -> list:
    engines = engine_backends()
    reference = engines[0]
    return [
        pytest.param(reference, other, name, id=f"{other.label()} vs {reference.label()}: {name}")
        for other in engines[1:]
        for name in FUNCTIONS
    ]


@pytest.mark.parametrize(("reference", "other", "name"), _pairs())
def test_engines_agree(reference, other, name):
    want, got = _results(reference, name), _results(other, name)
    assert set(got) == set(want)
    for op in want:
        tol = max(tolerances(other, op)[0], tolerances(reference, op)[0])
        np.testing.assert_allclose(got[op], want[op], rtol=tol, atol=tol, err_msg=f"{op} of {name}")
