"""AutoTape's compiled replays against its interpreted ones (an unprepared call differentiates the
recorded values without compiling): buffers shared by lifetime, cotangents shared with the node's
output, constant cotangents, symbolic tangents in batched sweeps, identity seeds in basis sweeps,
context arrays read in place; linearizations and the second-order plan."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di
from diface.backends.tape.kernels import second_order as _second_order
from diface.backends.tape.kernels.linearize import ReplayLinearization

TAPE = di.AutoTape()
RNG = np.random.default_rng(3)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def softplus(x, a):
    return np.sum(np.logaddexp(0.0, a @ x)) + 0.5 * np.dot(x, x)


def mixed(x):  # slices, broadcasting, a scalar from x, where, in-place updates, reductions over axes
    m = np.reshape(x, (3, 4))
    s = np.sin(m) * m[:, ::-1] + np.exp(-m[0]) / (1.0 + m[1:2] ** 2)
    s = np.where(m > 0.1, s, 2.0 * s) - np.mean(s, axis=0) * x[3]
    out = np.concatenate([np.sum(s, axis=1), s[1:, 2] * s[0, :2], np.cumsum(m[2])])
    out[1] += out[0] * m[0, 0]
    return np.tanh(out) * np.sum(x**2)


def scalar_of(f):
    return lambda x, *c: np.sum(f(x, *c) ** 2) if np.ndim(f(x, *c)) else f(x, *c)


CASES = {
    "rosen": (rosen, lambda: np.linspace(-1.0, 1.2, 12), ()),
    "softplus": (softplus, lambda: RNG.standard_normal(12), (RNG.standard_normal((7, 12)),)),
    "mixed": (mixed, lambda: RNG.standard_normal(12), ()),
}


@pytest.mark.parametrize("name", CASES)
def test_prepared_operators_agree_with_interpreted_ones(name):
    f, point, data = CASES[name]
    x0, x1 = point(), point() * 0.9 + 0.05
    ctx = tuple(di.Constant(d) for d in data)
    g = scalar_of(f)
    ts = tuple(RNG.standard_normal(12) for _ in range(6))
    y = f(x0, *data)
    cs = tuple(RNG.standard_normal(np.shape(y)) for _ in range(5))
    for mode in ("forward", "reverse"):
        jac = di.prepare_jacobian(f, di.AutoTape(mode=mode), x0, *ctx)
        np.testing.assert_allclose(jac.jacobian(x1, *ctx), di.jacobian(f, TAPE, x1, *ctx), rtol=1e-12, atol=1e-12)
    push = di.prepare_pushforward(f, TAPE, x0, ts, *ctx)  # six tangents: a symbolic batched sweep
    for got, t in zip(push.pushforward(x1, ts, *ctx), ts, strict=True):
        np.testing.assert_allclose(got, di.pushforward(f, TAPE, x1, t, *ctx), rtol=1e-12, atol=1e-12)
    pull = di.prepare_pullback(f, TAPE, x0, cs, *ctx)
    for got, c in zip(pull.pullback(x1, cs, *ctx), cs, strict=True):
        np.testing.assert_allclose(got, di.pullback(f, TAPE, x1, c, *ctx), rtol=1e-12, atol=1e-12)
    grad = di.prepare_gradient(g, TAPE, x0, *ctx)
    np.testing.assert_allclose(grad.gradient(x1, *ctx), di.gradient(g, TAPE, x1, *ctx), rtol=1e-12, atol=1e-12)
    hess = di.prepare_hessian(g, TAPE, x0, *ctx)
    want = di.hessian(g, di.SecondOrder(di.AutoFiniteDiff(), TAPE), x1, *ctx)
    value, gradient, h = hess.value_gradient_and_hessian(x1, *ctx)
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h, di.hessian(g, TAPE, x1, *ctx), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(value, g(x1, *data), rtol=1e-14)
    np.testing.assert_allclose(gradient, di.gradient(g, TAPE, x1, *ctx), rtol=1e-12, atol=1e-12)
    hvp = di.prepare_hvp(g, TAPE, x0, ts, *ctx)
    for got, t in zip(hvp.hvp(x1, ts, *ctx), ts, strict=True):
        np.testing.assert_allclose(got, h @ t, rtol=1e-10, atol=1e-10)


def test_hessians_in_chunks_with_and_without_fixed_seeds(monkeypatch):
    x = np.linspace(-1.0, 1.0, 300)  # two chunks of columns
    want = di.hessian(rosen, TAPE, x)
    band = np.abs(np.subtract.outer(np.arange(300), np.arange(300))) > 1
    assert np.all(want[band] == 0) and np.all(np.diag(want) != 0)
    for fixed in (2**22, 0):
        monkeypatch.setattr(_second_order, "FIXED_SEEDS", fixed)
        prep = di.prepare_hessian(rosen, TAPE, x * 0.5)
        np.testing.assert_allclose(prep.hessian(x), want, rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(prep.hessian(x), want, rtol=1e-13, atol=1e-12)


def test_a_long_chain_shares_a_few_buffers():
    def chain(x):
        for k in range(40):
            x = np.sin(x) * (1.0 + 0.01 * k)
        return np.sum(x)

    x = np.linspace(0.0, 1.0, 1000)
    prep = di.prepare_gradient(chain, TAPE, x)
    np.testing.assert_allclose(prep.gradient(x), di.gradient(chain, TAPE, x), rtol=1e-13)
    replay = prep.kernel.run.__self__.replays._local.replay
    held = sum(raw.nbytes for raw in replay.arena.raws)
    assert held <= 60 * x.nbytes  # the 40 values the sweep reads, and a few buffers for the rest (not 80)


def test_context_arrays_are_read_in_place_while_they_are_the_same_objects():
    a = RNG.standard_normal((5, 4))
    x = RNG.standard_normal(4)
    prep = di.prepare_gradient(softplus, TAPE, x, di.Constant(a))
    replay = prep.kernel.run.__self__.replays._local.replay
    assert [bound for bound, _ci, _path in replay.fwd.binds] == [a] and not replay.fwd.loads
    np.testing.assert_allclose(prep.gradient(x, di.Constant(a)), di.gradient(softplus, TAPE, x, di.Constant(a)))
    a *= 2.0  # the same array, changed in place: read as it is now
    np.testing.assert_allclose(prep.gradient(x, di.Constant(a)), di.gradient(softplus, TAPE, x, di.Constant(a)))
    b = a + 1.0  # another array: the thread's replay is compiled again, copying from then on
    for _ in range(2):
        np.testing.assert_allclose(prep.gradient(x, di.Constant(b)), di.gradient(softplus, TAPE, x, di.Constant(b)))
        np.testing.assert_allclose(prep.gradient(x, di.Constant(a)), di.gradient(softplus, TAPE, x, di.Constant(a)))
    replay = prep.kernel.run.__self__.replays._local.replay
    assert not replay.fwd.binds and len(replay.fwd.loads) == 1


def test_a_linearization_applies_any_number_of_batches():
    a = RNG.standard_normal((5, 4))
    f = lambda x, a: np.tanh(a @ x) * x[0]
    x = RNG.standard_normal(4)
    problem_prep = di.prepare_jacobian(f, TAPE, x, di.Constant(a))
    jac = problem_prep.jacobian(x, di.Constant(a))
    linearizer = TAPE.prepare_linearize(problem_prep.problem, "forward")
    lin = linearizer(x, (a,), None)
    assert isinstance(lin, ReplayLinearization) and not lin.shareable
    np.testing.assert_allclose(lin.value, f(x, a))
    for b in (1, 3, 4, 4, 7):
        t = RNG.standard_normal((b, 4))
        np.testing.assert_allclose(lin.push(t), t @ jac.T, rtol=1e-12, atol=1e-12)
        c = RNG.standard_normal((b, 5))
        np.testing.assert_allclose(lin.pull(c), c @ jac, rtol=1e-12, atol=1e-12)
    assert len(lin.replay.sweeps) == 8  # one sweep per kind and batch size, made once


def test_the_second_order_plan_is_the_tapes_own():
    plan = TAPE.second_order_plan(di.prepare_hessian(rosen, TAPE, np.ones(4)).problem)
    assert isinstance(plan, _second_order.TapeSecondOrder)
    f = lambda t: np.array([np.sin(t), t**3])
    prep = di.prepare_second_derivative(f, TAPE, 0.3)
    value, d, d2 = prep.value_derivative_and_second_derivative(0.7)
    np.testing.assert_allclose(value, f(0.7))
    np.testing.assert_allclose(d, [np.cos(0.7), 3 * 0.49])
    np.testing.assert_allclose(d2, [-np.sin(0.7), 6 * 0.7])
    x = np.array([0.3, -0.2, 0.9, 1.4])
    v = np.array([1.0, 2.0, -1.0, 0.5])
    same = di.prepare_hvp_same_point(rosen, TAPE, x, v)
    for _ in range(2):
        np.testing.assert_allclose(same.hvp(x, v), di.hessian(rosen, TAPE, x) @ v, rtol=1e-12)


def test_mode_is_checked_and_forced_modes_are_honoured():
    with pytest.raises(di.ArgumentError, match="mode"):
        di.AutoTape(mode="sideways")
    x = np.array([0.3, -0.2, 0.9])
    for mode in ("forward", "reverse"):
        tape = di.AutoTape(mode=mode)
        np.testing.assert_allclose(di.prepare_gradient(rosen, tape, x).gradient(x), di.gradient(rosen, TAPE, x))
        f = lambda t: np.array([np.sin(t), t**2])
        np.testing.assert_allclose(di.prepare_derivative(f, tape, 0.5).derivative(0.5), [np.cos(0.5), 1.0])
