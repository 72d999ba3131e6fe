"""AutoAutograd on the core's linearize-once contract: mode="auto", batched forward rules, the choice
between forward over reverse and reverse over reverse for Hessian-vector products, and the memory a
Jacobian or Hessian preparation keeps."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from conftest import assert_operator, operator_cases

pytest.importorskip("autograd")

import autograd
import autograd.numpy as anp

import diface as di
from diface.backends.autograd import _second_order

A = di.AutoAutograd
SO = di.SecondOrder


# -- mode="auto" ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases([A("auto")], False))
def test_auto_mode_scenarios(backend, scenario, op):
    assert_operator(backend, scenario, op)


def test_auto_mode_is_validated_and_named():
    assert repr(A("auto")) == "AutoAutograd(mode='auto')" and A("auto") != A()
    with pytest.raises(di.ArgumentError, match="'auto', 'forward' or 'reverse'"):
        A("fastest")


@pytest.mark.parametrize(
    ("n", "m", "linearized"),
    [(2, 20, ["forward"]), (20, 2, ["reverse"]), (6, 6, ["forward", "reverse"])],
    ids=["tall: forward", "wide: reverse", "square: both, timed"],
)
def test_auto_mode_sweeps_in_the_mode_with_fewer_products(monkeypatch, n, m, linearized):
    asked = []
    prepare_linearize = A.prepare_linearize

    def spy(self, problem, mode):
        asked.append(mode)
        return prepare_linearize(self, problem, mode)

    monkeypatch.setattr(A, "prepare_linearize", spy)
    w = np.random.default_rng(0).standard_normal((m, n))
    f = lambda x: anp.tanh(w @ x) * 2.0
    x = np.linspace(-1.0, 1.0, n)
    prep = di.prepare_jacobian(f, A("auto"), x)
    assert sorted(asked) == sorted(linearized)
    jac = (1 - np.tanh(w @ x) ** 2)[:, None] * w * 2.0
    np.testing.assert_allclose(prep.jacobian(x), jac, rtol=1e-13)


def test_auto_mode_pushforward_without_a_jvp_rule_uses_the_vjp_rule():
    from autograd.scipy.special import erf

    f = lambda x: erf(x) * x[::-1]
    x, t = np.array([0.3, -0.8, 1.1]), np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(di.pushforward(f, A("auto"), x, t), di.jacobian(f, A(), x) @ t, rtol=1e-14)
    np.testing.assert_allclose(di.jacobian(f, A("auto"), x), di.jacobian(f, A(), x), rtol=1e-14)


# -- batched forward rules ---------------------------------------------------------------------------------
M23 = np.arange(6.0).reshape(2, 3) / 5
M34 = np.arange(12.0).reshape(3, 4) / 7
BATCHED = {
    "matmul, matrix @ x": (lambda x: anp.sin(M34.T @ x), (3,)),
    "matmul, x @ matrix": (lambda x: anp.sin(x @ M34), (3,)),
    "matmul, x (matrix) @ vector": (lambda x: anp.reshape(x, (4, 3)) @ np.arange(3.0), (12,)),
    "matmul, matrix @ x (matrix)": (lambda x: M23 @ anp.reshape(x, (3, 4)), (12,)),
    "matmul, both sides traced": (lambda x: anp.reshape(x, (2, 2)) @ anp.reshape(anp.cos(x), (2, 2)), (4,)),
    "matmul, stacks of matrices": (lambda x: anp.matmul(anp.reshape(x, (2, 2, 3)), M34), (12,)),
    "dot, vector . vector": (lambda x: anp.dot(x, anp.sin(x)) * x, (4,)),
    "expand_dims, squeeze": (lambda x: anp.squeeze(anp.expand_dims(x, 1) * x[None, :], axis=None)[0], (3,)),
    "squeeze an axis": (lambda x: anp.squeeze(anp.reshape(x, (1, 3, 1)), axis=-1) ** 2, (3,)),
    "transpose, swapaxes, moveaxis": (
        lambda x: anp.moveaxis(anp.swapaxes(anp.transpose(anp.reshape(x, (2, 3, 1))), 0, 2), 0, -1) ** 3,
        (6,),
    ),
    "transpose with axes": (lambda x: anp.transpose(anp.reshape(x, (2, 3)), (1, 0)) * x[:3, None], (6,)),
    "broadcast_to": (lambda x: anp.broadcast_to(x[:, None], (3, 4)) * M34, (3,)),
    "where, both branches traced": (lambda x: anp.where(x > 0, x**2, anp.sin(x))[None, :] * M23[:, :1], (3,)),
}


@pytest.mark.parametrize("name", list(BATCHED))
def test_batched_rules_match_reverse_mode(name):
    fn, shape = BATCHED[name]
    rng = np.random.default_rng(len(name))
    x = rng.uniform(-1.0, 1.0, shape)
    jac = di.jacobian(fn, A("reverse"), x)  # rows by pullbacks: VJP rules only
    np.testing.assert_allclose(di.jacobian(fn, A("forward"), x), jac, rtol=1e-13, atol=1e-14)
    tangents = tuple(rng.standard_normal(shape) for _ in range(3))
    expected = [np.tensordot(jac, t, axes=len(shape)) for t in tangents]
    np.testing.assert_allclose(di.pushforward(fn, A(), x, tangents), expected, rtol=1e-13, atol=1e-14)
    loss = lambda x: anp.sum(fn(x) ** 2)
    np.testing.assert_allclose(di.hessian(loss, A(), x), di.hessian(loss, SO(A(), A()), x), rtol=1e-12, atol=1e-13)


# -- Hessian-vector products: whichever composition ran faster at preparation ----------------------------
def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.parametrize("pick", [0, 1], ids=["forward over reverse", "reverse over reverse"])
@pytest.mark.parametrize("count", [1, 3])
def test_hvp_either_composition(monkeypatch, pick, count):
    monkeypatch.setattr(_second_order, "_faster", lambda problem, tangents, *kernels: kernels[pick])
    x = np.linspace(-1.2, 1.1, 7)
    rng = np.random.default_rng(count)
    tangents = tuple(rng.standard_normal(7) for _ in range(count))
    hess = autograd.hessian(rosenbrock)
    prep = di.prepare_hvp(rosenbrock, A(), x, tangents if count > 1 else tangents[0])
    for point in (x, x[::-1].copy()):
        got = prep.hvp(point, tangents if count > 1 else tangents[0])
        want = [hess(point) @ t for t in tangents]
        np.testing.assert_allclose(got if count > 1 else [got], want, rtol=1e-12, atol=1e-12)
        g, _ = prep.gradient_and_hvp(point, tangents if count > 1 else tangents[0])
        np.testing.assert_allclose(g, autograd.grad(rosenbrock)(point), rtol=1e-13)


# -- memory ------------------------------------------------------------------------------------------------
def _kept_by(prepare) -> tuple:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        prep = prepare()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before, prep
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("mode", ["reverse", "forward", "auto"])
def test_jacobian_and_hessian_preparations_keep_at_most_twice_the_result(mode):
    n = 300
    a = np.random.default_rng(1).standard_normal((n, n)) / np.sqrt(n)
    x = np.linspace(-1.0, 1.0, n)
    result = 8 * n * n
    kept, prep = _kept_by(lambda: di.prepare_jacobian(lambda x, a: anp.tanh(a @ x) + x, A(mode), x, di.Constant(a)))
    assert kept <= 2 * result, kept / result
    np.testing.assert_allclose(prep.jacobian(x, di.Constant(a)), (1 - np.tanh(a @ x) ** 2)[:, None] * a + np.eye(n))
    wide = lambda x: anp.tanh(x[:5] * x[-5:])  # 5 x n: a small result, a large input
    kept, _ = _kept_by(lambda: di.prepare_jacobian(wide, A(mode), x))
    assert kept <= max(2 * 8 * 5 * n, 2**20), kept
    softplus = lambda x, a: anp.sum(anp.logaddexp(0.0, a @ x))
    kept, prep = _kept_by(lambda: di.prepare_hessian(softplus, A(mode), x, di.Constant(a)))
    assert kept <= 2 * result, kept / result
    s = 1 / (1 + np.exp(-(a @ x)))
    hessian = a.T @ ((s * (1 - s))[:, None] * a)
    np.testing.assert_allclose(prep.hessian(x, di.Constant(a)), hessian, rtol=1e-10, atol=1e-13)


# -- same-point preparations -----------------------------------------------------------------------------------
def test_same_point_preparations_never_read_the_callers_cache():
    """The kept recording reads buffers of its own: the caller's Cache may be overwritten in between."""

    def f(x, buf):
        buf[...] = 3.0  # a value that does not depend on x: autograd traces it as a constant
        return anp.sin(x) * buf

    loss = lambda x, buf: anp.sum(f(x, buf) * x)
    x, t = np.array([0.3, -1.2, 0.7]), np.array([1.0, 2.0, -1.0])
    buf = di.Cache(np.zeros(3))
    preps = [
        (di.prepare_pushforward_same_point(f, A(), x, t, buf), "pushforward", 3 * np.cos(x) * t),
        (di.prepare_pullback_same_point(f, A(), x, t, buf), "pullback", 3 * np.cos(x) * t),
        (di.prepare_hvp_same_point(loss, A(), x, t, buf), "hvp", 3 * (2 * np.cos(x) - x * np.sin(x)) * t),
        (di.prepare_hvp_same_point(loss, SO(A(), A()), x, t, buf), "hvp", 3 * (2 * np.cos(x) - x * np.sin(x)) * t),
    ]
    for prep, op, want in preps:
        buf.value[...] = np.nan
        np.testing.assert_allclose(getattr(prep, op)(x, t, buf), want, rtol=1e-14, err_msg=op)


def test_constants_traced_by_an_outer_autograd():
    """diface inside a function autograd differentiates with respect to a Constant: batches of tangents
    then meet the outer trace's boxes, and go through one at a time."""
    x, m = np.array([0.3, 0.5, 0.7]), np.arange(9.0).reshape(3, 3) / 9
    f = lambda x, w: anp.tanh(m @ (x * w))
    loss = lambda x, w: anp.sum(f(x, w) ** 2)
    outers = [
        lambda w, b: anp.sum(di.jacobian(f, b, x, di.Constant(w)) ** 2),
        lambda w, b: anp.sum(di.hessian(loss, b, x, di.Constant(w)) ** 2),
        lambda w, b: anp.sum(di.hvp(loss, b, x, (x, 2 * x), di.Constant(w))[1] ** 2),
        lambda w, b: anp.sum(di.pushforward(f, b, x, (x, 2 * x), di.Constant(w))[0] ** 2),
    ]
    solve = lambda x, w: anp.linalg.solve(np.eye(3) * 4 + m + anp.diag(w), x)  # no JVP rule: rows of J
    outers.append(lambda w, b: anp.sum(di.pushforward(solve, b, x, (x, 2 * x), di.Constant(w))[0] ** 2))
    w = np.array([1.0, 2.0, 3.0])
    for k, outer in enumerate(outers):
        for backend in (A(), A("forward"), A("auto")) if k < 4 else (A(), A("auto")):
            g = lambda w, outer=outer, backend=backend: outer(w, backend)
            want, got = di.gradient(g, di.AutoFiniteDiff(), w), autograd.grad(g)(w)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=f"{k} {backend!r}")
