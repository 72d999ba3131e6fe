"""AutoTorch's Taylor mode (nested `torch.func.jvp`, vmapped over the directions) and exact Laplacian:
coefficients of orders 1..6 against references in 40-digit arithmetic (mpmath), prepared at one point and
called at another, twice; the links to pushforward, hvp and hessian; loop and vmap batching alike; contexts,
NumPy and float32; and the core's nested-pushforward derivation, which torch's dual tensors cannot run,
refused loudly instead of answered with zeros."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di

torch = pytest.importorskip("torch")
mp = pytest.importorskip("mpmath")

from diface._derive.taylor import derive_taylor  # noqa: E402
from diface.backends.torch import _batching as batching  # noqa: E402
from diface.backends.torch import _taylor as torch_taylor  # noqa: E402

AUTO = di.AutoTorch()
F64 = torch.float64
RNG = np.random.default_rng(0)
W1, W2, W3 = RNG.normal(size=(5, 3)) / 2, RNG.normal(size=(4, 5)) / 2, RNG.normal(size=(1, 4))
B1, B2 = RNG.normal(size=5) / 4, RNG.normal(size=4) / 4
WEIGHTS = {"layers": [(W1, B1), (W2, B2)], "out": W3}


def mlp(x, w=None):
    w = WEIGHTS_T if w is None else w
    a = x
    for W, b in w["layers"]:
        a = torch.tanh(W @ a + b)
    return (w["out"] @ a)[0]


WEIGHTS_T = {"layers": [(torch.tensor(W), torch.tensor(b)) for W, b in WEIGHTS["layers"]], "out": torch.tensor(W3)}


def mp_mlp(x):
    a = x
    for W, b in WEIGHTS["layers"]:
        a = [
            mp.tanh(mp.fsum(mp.mpf(float(W[i, k])) * a[k] for k in range(len(a))) + float(b[i])) for i in range(len(W))
        ]
    return [mp.fsum(mp.mpf(float(W3[0, k])) * a[k] for k in range(len(a)))]


#: name: (torch f, the same f on lists of mpmath numbers, returning a list)
FUNCTIONS = {
    "exp": (torch.exp, lambda x: [mp.exp(a) for a in x]),
    "sin": (torch.sin, lambda x: [mp.sin(a) for a in x]),
    "polynomial": (lambda x: x**3 - 2 * x * x[1] + x[0], lambda x: [a**3 - 2 * a * x[1] + x[0] for a in x]),
    "rational": (
        lambda x: (1 + x**2) / (3 + x + x[0] * x[1]),
        lambda x: [(1 + a**2) / (3 + a + x[0] * x[1]) for a in x],
    ),
    "composition": (
        lambda x: torch.exp(torch.sin(x) * torch.sum(x)),
        lambda x: [mp.exp(mp.sin(a) * mp.fsum(x)) for a in x],
    ),
    "tanh_mlp": (mlp, mp_mlp),
}


def reference(mp_f, x, v, order):
    """d_j = d^j/dt^j f(x + t v) at 0, j = 1..order, by mpmath's Taylor coefficients in 40 digits."""
    x, v = [mp.mpf(float(a)) for a in x], [mp.mpf(float(a)) for a in v]
    with mp.workdps(40):
        m = len(mp_f(x))
        rows = [mp.taylor(lambda t, k=k: mp_f([a + t * b for a, b in zip(x, v)])[k], 0, order) for k in range(m)]
    return [np.array([float(r[j] * mp.factorial(j)) for r in rows]) for j in range(1, order + 1)]


def close(got, want, rtol=1e-10):
    got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got.reshape(-1), np.asarray(want).reshape(-1), rtol=rtol, atol=rtol * 1e-2)


X0, X1 = np.array([0.3, -0.2, 0.5]), np.array([-0.4, 0.25, 0.1])
V0, V1 = np.array([1.0, -0.5, 0.25]), np.array([-0.3, 0.8, 0.6])


#: the order each function is tested to: nested jvps cost about 3x per order on the longer formulas
ORDERS = {"exp": 6, "sin": 6, "polynomial": 5, "rational": 4, "composition": 4, "tanh_mlp": 6}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_coefficients_of_orders_up_to_six_against_references(name):
    f, mp_f = FUNCTIONS[name]
    order = ORDERS[name]
    t = lambda a: torch.tensor(a, dtype=F64)
    prep = di.prepare_taylor(f, AUTO, t(X0), (t(V0), t(V1)), order=order)
    wants = [reference(mp_f, X1, v, order) for v in (V0, V1)]
    for _ in range(2):  # each call made twice: nothing carries over between calls
        y, series = prep.taylor(t(X1), (t(V0), t(V1)))
        close(y, np.array([float(a) for a in mp_f([mp.mpf(float(a)) for a in X1])]))
        assert len(series) == 2 and all(len(s) == order for s in series)
        for coefficients, want in zip(series, wants):
            for d, w in zip(coefficients, want):
                assert isinstance(d, torch.Tensor) and d.dtype == F64
                close(d, w)


def test_numpy_in_numpy_out_and_one_direction():
    f, mp_f = FUNCTIONS["composition"]
    y, coefficients = di.taylor(f, AUTO, X1, V1, order=3)
    assert isinstance(y, np.ndarray) and all(isinstance(d, np.ndarray) for d in coefficients)
    for d, w in zip(coefficients, reference(mp_f, X1, V1, 3)):
        close(d, w)
    assert [float(d) for d in di.taylor_coefficients(lambda x: x**4, AUTO, 1.0, 1.0, order=4)] == [4, 12, 24, 24]


def test_order_one_is_the_pushforward_and_order_two_along_v_is_v_hvp_v():
    x, v = torch.tensor(X1), torch.tensor(V1)
    (d1,) = di.taylor_coefficients(mlp, AUTO, x, v, order=1)
    close(d1, di.pushforward(mlp, AUTO, x, v))
    d1, d2 = di.taylor_coefficients(mlp, AUTO, x, v, order=2)
    close(d2, torch.dot(v, di.hvp(mlp, AUTO, x, v)))
    close(d1, torch.dot(di.gradient(mlp, AUTO, x), v))


@pytest.mark.parametrize("route", ["taylor", "hessian_diagonal"])
def test_laplacian_is_the_trace_of_the_hessian_and_elementwise_for_vector_outputs(monkeypatch, route):
    times = iter([0.0, 1.0] if route == "taylor" else [1.0, 0.0])  # the timed choice, forced
    monkeypatch.setattr(torch_taylor, "_best_time", lambda kernel, problem: next(times))
    x0, x1 = torch.tensor(X0), torch.tensor(X1)
    prep = di.prepare_laplacian(mlp, AUTO, x0)
    for _ in range(2):
        close(prep.laplacian(x1), torch.trace(di.hessian(mlp, AUTO, x1)))
    y, g, lap = di.value_gradient_and_laplacian(mlp, AUTO, x1, prep=prep)
    close(y, mlp(x1))
    close(g, di.gradient(mlp, AUTO, x1))
    close(lap, torch.trace(di.hessian(mlp, AUTO, x1)))

    f = FUNCTIONS["rational"][0]
    prep = di.prepare_laplacian(f, AUTO, x0)
    want = [torch.trace(di.hessian(lambda x, k=k: f(x)[k], AUTO, x1)) for k in range(3)]
    for _ in range(2):
        y, jac, lap = prep.value_gradient_and_laplacian(x1)
        close(lap, torch.stack(want))
        close(jac, di.jacobian(f, AUTO, x1))


@pytest.mark.parametrize("route", ["taylor", "hessian_diagonal"])
def test_laplacian_in_chunks_of_the_basis_and_of_a_matrix_input(monkeypatch, route):
    monkeypatch.setattr(torch_taylor, "BASIS_BUDGET", 8)  # several chunks of the basis of a 3x4 x
    times = iter([0.0, 1.0] if route == "taylor" else [1.0, 0.0])
    monkeypatch.setattr(torch_taylor, "_best_time", lambda kernel, problem: next(times))
    f = lambda x: torch.sum(torch.sin(x) * x.T.sum()) + torch.prod(x[0])
    x = torch.tensor(RNG.normal(size=(3, 4)))
    H = di.hessian(f, AUTO, x).reshape(12, 12)
    _, g, lap = di.value_gradient_and_laplacian(f, AUTO, x)
    close(lap, torch.trace(H))
    close(g, di.gradient(f, AUTO, x))
    assert g.shape == (3, 4)


@pytest.mark.parametrize("strategy", ["loop", "vmap"])
def test_directions_looped_or_vmapped_agree(monkeypatch, strategy):
    threshold = (lambda trial: batching.INF) if strategy == "loop" else (lambda trial: 2)
    monkeypatch.setattr(torch_taylor, "threshold", threshold)
    f, mp_f = FUNCTIONS["sin"]
    directions = tuple(torch.tensor(v) for v in (V0, V1, V0 + V1))
    prep = di.prepare_taylor(f, AUTO, torch.tensor(X0), directions, order=3)
    _, series = prep.taylor(torch.tensor(X1), directions)
    for v, coefficients in zip(directions, series):
        for d, w in zip(coefficients, reference(mp_f, X1, v.numpy(), 3)):
            close(d, w)
    close(di.laplacian(f, AUTO, torch.tensor(X1)), -np.sin(X1))


def test_a_function_vmap_refuses_loops():
    def f(x):  # a branch on a value: vmap cannot run it
        return torch.exp(x) if float(x.sum()) > -10 else x

    series = di.taylor_coefficients(f, AUTO, torch.tensor(X1), (torch.tensor(V0), torch.tensor(V1)), order=2)
    close(series[1][1], V1**2 * np.exp(X1))


def test_tree_in_a_constant_context():
    weights = di.Constant(WEIGHTS_T)
    f = lambda x, w: mlp(x, w)
    prep = di.prepare_taylor(f, AUTO, torch.tensor(X0), weights, order=4)
    _, coefficients = prep.taylor(torch.tensor(X1), torch.tensor(V1), weights)
    for d, w in zip(coefficients, reference(mp_mlp, X1, V1, 4)):
        close(d, w)
    close(di.laplacian(f, AUTO, torch.tensor(X1), weights), torch.trace(di.hessian(mlp, AUTO, torch.tensor(X1))))


def test_float32():
    x, v = torch.tensor(X1, dtype=torch.float32), torch.tensor(V1, dtype=torch.float32)
    y, (_, _, d3) = di.taylor(torch.exp, AUTO, x, v, order=3)
    assert y.dtype == d3.dtype == torch.float32
    close(d3, V1**3 * np.exp(X1), rtol=1e-5)
    lap = di.laplacian(lambda x: torch.sum(torch.exp(x)), AUTO, x)
    assert lap.dtype == torch.float32
    close(lap, np.exp(X1).sum(), rtol=1e-5)


def test_hutchinson_runs_on_the_taylor_mode():
    f = lambda x: torch.sum(torch.tensor([1.0, 2.0, 3.0], dtype=F64) * x**2)  # diagonal Hessian: exact
    close(di.laplacian(f, AUTO, torch.tensor(X1), method="hutchinson", samples=4, seed=0), 12.0)


def test_nested_pushforward_kernels_are_refused_not_zero():
    class Nested(di.AutoTorch):  # the core's default derivation, which nests dual-tensor kernels
        def prepare_taylor(self, problem, tangents, order):
            return derive_taylor(self, problem, tangents, order)

    with pytest.raises(di.NotSupportedError, match="forward-AD level"):
        di.taylor(torch.exp, Nested(), torch.tensor(X1), torch.tensor(V1), order=2)
    with pytest.raises(di.NotSupportedError, match="NumPy"):  # np.exp would drop the tangents
        di.taylor(np.exp, AUTO, X1, V1, order=2)
    with pytest.raises(di.NotSupportedError, match="NumPy"):  # so would a dual tensor, silently
        di.pushforward(np.exp, AUTO, X1, V1)
    ones = lambda x: torch.ones(3, dtype=F64)  # no tangent, and rightly so
    close(di.pushforward(ones, AUTO, torch.tensor(X1), torch.tensor(V1)), np.zeros(3))
