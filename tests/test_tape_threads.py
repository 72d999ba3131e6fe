"""AutoTape from many threads: one preparation shared by 8 threads, each calling it many times at points
of its own, gives what the same preparation gives one thread (every operator, second order, same-point
preparations, static contexts that make a thread record f again, unprepared calls), and `copy()`
gives a kernel with buffers of its own."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import diface as di

TAPE = di.AutoTape()
THREADS = 8
POINTS = 25  # distinct points per thread (its calls cycle through them)


def rosenbrock(x, xp=np):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def vector(x, xp=np):
    return xp.stack([xp.sin(x[0]) * x[1], x[2] ** 2 + x[3:] @ x[:1], xp.exp(x[0] - x[3]), xp.sum(x * x[::-1])])


def curve(t, xp=np):
    return xp.stack([xp.sin(t) * t, xp.exp(0.5 * t), t**3])


def run_threads(call: Callable[[int, int], Any], want: Callable[[int, int], Any], calls: int, switch: float | None):
    """`call(thread, i)` from THREADS threads, `calls` times each; (wrong, errors) against `want`."""

    def work(k: int) -> tuple[int, int]:
        wrong = errors = 0
        for i in range(calls):
            try:
                got = call(k, i % POINTS)
            except Exception:
                errors += 1
                continue
            expected = want(k, i % POINTS)
            got, expected = (got, expected) if isinstance(got, tuple) else ((got,), (expected,))
            wrong += not all(np.allclose(g, e, rtol=1e-12, atol=1e-12) for g, e in zip(got, expected))
        return wrong, errors

    old = sys.getswitchinterval()
    if switch is not None:
        sys.setswitchinterval(switch)
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(work, range(THREADS)))
    finally:
        sys.setswitchinterval(old)
    return sum(r[0] for r in results), sum(r[1] for r in results)


def points(shape: tuple, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((THREADS, POINTS, *shape))


def answers(call: Callable[[int, int], Any]) -> list:
    """Single-threaded answers, each computed twice (the second call must give the first's result)."""
    table = [[call(k, i) for i in range(POINTS)] for k in range(THREADS)]
    again = call(THREADS - 1, POINTS - 1)
    last = table[-1][-1]
    for a, b in zip(again if isinstance(again, tuple) else (again,), last if isinstance(last, tuple) else (last,)):
        np.testing.assert_array_equal(a, b)
    return table


@pytest.mark.parametrize("switch", [None, 1e-6], ids=["default switch", "switch every microsecond"])
def test_one_gradient_preparation_shared_by_8_threads(switch):
    xs = points((10,))
    prep = di.prepare_gradient(rosenbrock, TAPE, np.zeros(10))
    for k in range(THREADS):
        for i in range(POINTS):
            np.testing.assert_allclose(prep.gradient(xs[k, i]), rosenbrock_gradient(xs[k, i]), rtol=1e-12)
    table = answers(lambda k, i: prep.gradient(xs[k, i]))
    wrong, errors = run_threads(lambda k, i: prep.gradient(xs[k, i]), lambda k, i: table[k][i], 2000, switch)
    assert (wrong, errors) == (0, 0)


def _first_order_cases() -> dict:
    xs, ts, ts2 = points((4,)), points((4,), 1), points((4,), 2)
    ws = points((4,), 3)
    ss = points((), 4)
    x0 = np.full(4, 0.1)
    jac = di.prepare_jacobian(vector, TAPE, x0)
    push = di.prepare_pushforward(vector, TAPE, x0, np.ones(4))
    push2 = di.prepare_pushforward(vector, TAPE, x0, (np.ones(4), np.ones(4)))
    pull = di.prepare_pullback(vector, TAPE, x0, np.ones(4))
    pull2 = di.prepare_pullback(vector, TAPE, x0, (np.ones(4), np.ones(4)))
    der = di.prepare_derivative(curve, TAPE, 0.3)
    vj = di.prepare_jacobian(vector, TAPE, x0)
    return {
        "jacobian": lambda k, i: jac.jacobian(xs[k, i]),
        "value_and_jacobian": lambda k, i: vj.value_and_jacobian(xs[k, i]),
        "pushforward": lambda k, i: push.pushforward(xs[k, i], ts[k, i]),
        "pushforward batched": lambda k, i: push2.pushforward(xs[k, i], (ts[k, i], ts2[k, i])),
        "pullback": lambda k, i: pull.value_and_pullback(xs[k, i], ws[k, i]),
        "pullback batched": lambda k, i: pull2.pullback(xs[k, i], (ws[k, i], ts[k, i])),
        "derivative": lambda k, i: der.value_and_derivative(float(ss[k, i])),
    }


def _second_order_cases() -> dict:
    xs, ts = points((5,)), points((5,), 1)
    ss = points((), 4)
    x0 = np.full(5, 0.1)
    hvp = di.prepare_hvp(rosenbrock, TAPE, x0, np.ones(5))
    hvp2 = di.prepare_hvp(rosenbrock, TAPE, x0, (np.ones(5), np.ones(5)))
    hess = di.prepare_hessian(rosenbrock, TAPE, x0)
    sec = di.prepare_second_derivative(curve, TAPE, 0.3)
    return {
        "hvp": lambda k, i: hvp.gradient_and_hvp(xs[k, i], ts[k, i]),
        "hvp batched": lambda k, i: hvp2.hvp(xs[k, i], (ts[k, i], xs[k, i])),
        "hessian": lambda k, i: hess.value_gradient_and_hessian(xs[k, i]),
        "second_derivative": lambda k, i: sec.value_derivative_and_second_derivative(float(ss[k, i])),
    }


def _same_point_cases() -> dict:
    x = np.array([0.3, -0.2, 0.9, 1.4])
    ts, ws = points((4,), 1), points((4,), 3)
    push = di.prepare_pushforward_same_point(vector, TAPE, x, np.ones(4))
    pull = di.prepare_pullback_same_point(vector, TAPE, x, np.ones(4))
    hvp = di.prepare_hvp_same_point(rosenbrock, TAPE, x, np.ones(4))
    return {
        "pushforward same point": lambda k, i: push.value_and_pushforward(x, ts[k, i]),
        "pullback same point": lambda k, i: pull.pullback(x, ws[k, i]),
        "hvp same point": lambda k, i: hvp.hvp(x, ts[k, i]),
    }


def _static_cases() -> dict:
    """Each thread passes its own static Constant (an integer, a string): every thread whose values
    differ from the recording records f again, into its own replay."""

    def f(x, n, mode):
        head = x[:n]
        return np.sum(head**2) if mode == "square" else np.sum(np.sin(head))

    xs = points((6,))
    prep = di.prepare_gradient(f, TAPE, np.ones(6), di.Constant(3), di.Constant("square"))
    modes = ("square", "sine")
    return {
        "static contexts": lambda k, i: prep.gradient(xs[k, i], di.Constant(2 + k % 4), di.Constant(modes[k % 2])),
    }


@functools.cache
def cases() -> dict:
    return {**_first_order_cases(), **_second_order_cases(), **_same_point_cases(), **_static_cases()}


NAMES = [
    "jacobian", "value_and_jacobian", "pushforward", "pushforward batched", "pullback", "pullback batched",
    "derivative", "hvp", "hvp batched", "hessian", "second_derivative", "pushforward same point",
    "pullback same point", "hvp same point", "static contexts",
]  # fmt: skip


def test_the_cases_are_all_named():
    assert sorted(NAMES) == sorted(cases())


@pytest.mark.parametrize("name", NAMES)
def test_every_operator_shared_by_8_threads(name):
    call = cases()[name]
    table = answers(call)
    wrong, errors = run_threads(call, lambda k, i: table[k][i], 200, 1e-6)
    assert (wrong, errors) == (0, 0)


def test_answers_match_other_engines():
    """The single-threaded answers the thread tests compare with are right (analytic and autograd)."""
    anp = pytest.importorskip("autograd.numpy")
    ag = di.AutoAutograd()
    x = np.array([0.3, -0.2, 0.9, 1.4])
    t = np.array([1.0, -2.0, 0.5, 0.25])
    j = di.jacobian(lambda x: vector(x, anp), ag, x)
    np.testing.assert_allclose(di.prepare_jacobian(vector, TAPE, x + 1).jacobian(x), j, rtol=1e-12)
    np.testing.assert_allclose(di.prepare_pushforward(vector, TAPE, x + 1, t).pushforward(x, t), j @ t, rtol=1e-12)
    np.testing.assert_allclose(di.prepare_pullback(vector, TAPE, x + 1, t).pullback(x, t), t @ j, rtol=1e-12)
    h = di.hessian(lambda x: rosenbrock(x, anp), ag, x)
    np.testing.assert_allclose(di.prepare_hvp(rosenbrock, TAPE, x + 1, t).hvp(x, t), h @ t, rtol=1e-12)
    d2 = di.second_derivative(lambda t: curve(t, anp), ag, 0.7)
    np.testing.assert_allclose(di.prepare_second_derivative(curve, TAPE, 0.1).second_derivative(0.7), d2, rtol=1e-12)


def test_unprepared_calls_from_8_threads():
    xs, ts = points((4,)), points((4,), 1)

    def call(k, i):
        x = xs[k, i]
        return (
            di.gradient(rosenbrock, TAPE, x),
            di.jacobian(vector, TAPE, x),
            di.pushforward(vector, TAPE, x, ts[k, i]),
            di.hvp(rosenbrock, TAPE, x, ts[k, i]),
        )

    table = answers(call)
    wrong, errors = run_threads(call, lambda k, i: table[k][i], 15, 1e-6)
    assert (wrong, errors) == (0, 0)


def leaves(r: Any) -> list:
    return [leaf for e in r for leaf in leaves(e)] if isinstance(r, tuple) else [r]


def test_copy_shares_the_recording_not_the_buffers():
    x = np.array([0.3, -0.2, 0.9, 1.4])
    for prep in (di.prepare_gradient(rosenbrock, TAPE, x), di.prepare_pushforward(vector, TAPE, x, x)):
        kernel = prep.kernel
        twin = kernel.copy()
        recorded, recorded_twin = kernel.run.__self__, twin.run.__self__
        assert type(recorded_twin) is type(recorded) and recorded_twin.rec is recorded.rec
        mine, theirs = recorded.replays._local.replay, recorded_twin.replays._local.replay
        assert mine.fwd.x_buf is not theirs.fwd.x_buf and mine.main.seed is not theirs.main.seed
        extra = None if prep.op.tangent is None else (x,)
        for z in (x, 2 * x):
            a = kernel.run(z, extra, (), None, True)
            b = twin.run(z, extra, (), None, True)
            c = kernel.run(z, extra, (), None, True)
            for u, v, w in zip(leaves(a), leaves(b), leaves(c), strict=True):
                np.testing.assert_array_equal(u, v)
                np.testing.assert_array_equal(u, w)
    assert di.prepare_jacobian(vector, TAPE, x).kernel.copy is not None
    assert di.prepare_derivative(curve, TAPE, 0.3).kernel.copy is not None
    assert di.prepare_pullback(vector, TAPE, x, x).kernel.copy is not None
