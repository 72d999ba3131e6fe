"""AutoTape within a memory budget, and `di.checkpoint` / `di.scan` on the tape: the same derivatives as
the tape keeping every value (the exact reference, bit for bit where the arithmetic is the same),
prepared at one point and called at another, twice; what `prep.report` says; bad budgets."""

from __future__ import annotations

import threading
import tracemalloc

import numpy as np
import pytest

import diface as di
from diface._memory.schedule import advanced_steps, binomial

N, STEPS = 2000, 40
RNG = np.random.default_rng(7)
U0 = 0.1 * RNG.standard_normal(N)
X0 = np.zeros(N)
X = 0.3 + 0.1 * RNG.standard_normal(N)
V = RNG.standard_normal(N)
FULL = di.AutoTape()
#: about two thirds of what keeping every value of `loss` needs (its recording included): a segment per
#: step, fewer snapshots than segments
SMALL = di.AutoTape(memory="900kB")


def step(u, p, i=0):
    return u + 0.05 * (np.tanh(u) * p - 0.5 * u + 0.1 * np.roll(u, 1))


def trajectory(p):
    u = U0
    for i in range(STEPS):
        u = step(u, p, i)
    return u


def loss(p):
    return np.sum(trajectory(p) ** 2)


def twice(method, *args):
    a, b = method(*args), method(*args)
    return a, b


def test_gradient_within_a_budget_is_the_gradient_keeping_everything():
    reference = di.gradient(loss, FULL, X)
    prep = di.prepare_gradient(loss, SMALL, X0)
    for g in twice(prep.gradient, X):
        np.testing.assert_array_equal(g, reference)  # the same operations in the same order
    value, g = prep.value_and_gradient(X)
    assert value == loss(X)
    np.testing.assert_array_equal(g, reference)
    report = prep.report
    assert report.strategy == "binomial" and report.budget == 900_000
    assert report.segments > report.snapshots > 1 and 2 < report.recomputation <= 3 and report.peak_bytes <= 900_000
    assert report.unbounded_bytes > report.budget
    assert "binomial" in str(report)


def test_a_budget_that_holds_everything_compiles_as_usual():
    prep = di.prepare_gradient(loss, di.AutoTape(memory="1GB"), X0)
    assert prep.report.strategy == "all values kept" and prep.report.segments == 1
    np.testing.assert_allclose(prep.gradient(X), di.gradient(loss, FULL, X), rtol=1e-13, atol=1e-15)
    assert di.prepare_gradient(loss, FULL, X0).report.strategy == "all values kept"


def test_a_smaller_budget_recomputes_more_and_stays_right():
    reference = di.gradient(loss, FULL, X)
    prep = di.prepare_gradient(loss, di.AutoTape(memory="700kB"), X0)
    assert prep.report.segments > STEPS and prep.report.recomputation > 3
    np.testing.assert_array_equal(prep.gradient(X), reference)


def test_unprepared_calls_within_a_budget():
    np.testing.assert_array_equal(di.gradient(loss, SMALL, X), di.gradient(loss, FULL, X))


def test_other_operators_within_a_budget():
    pull = di.prepare_pullback(trajectory, SMALL, X0, (V,))
    (reference,) = di.pullback(trajectory, FULL, X, (V,))
    for (r,) in twice(pull.pullback, X, (V,)):
        np.testing.assert_array_equal(r, reference)
    push = di.prepare_pushforward(trajectory, SMALL, X0, (V,))
    assert push.report.strategy == "streamed"
    (reference,) = di.pushforward(trajectory, FULL, X, (V,))
    for (r,) in twice(push.pushforward, X, (V,)):
        np.testing.assert_allclose(r, reference, rtol=1e-13, atol=1e-15)
    small_x = X[:6]

    def few(p):  # a Jacobian small enough to build both ways, of values large enough to need a budget
        u = np.tile(p, 300)
        for _ in range(STEPS):
            u = u + 0.05 * np.tanh(u) * u[::-1]
        return u[:5]

    J6 = di.jacobian(few, FULL, small_x)
    for mode in ("reverse", "forward"):
        prep = di.prepare_jacobian(few, di.AutoTape(mode=mode, memory="1MB"), np.zeros(6))
        assert prep.report.strategy == ("binomial" if mode == "reverse" else "streamed")
        for j in twice(prep.jacobian, small_x):
            np.testing.assert_allclose(j, J6, rtol=1e-12, atol=1e-14)

    def scalar_in(t):
        u = U0 * t
        for _ in range(STEPS):
            u = u + 0.05 * np.tanh(u) * t
        return u

    d = di.prepare_derivative(scalar_in, SMALL, 0.1)
    np.testing.assert_allclose(d.derivative(0.7), di.derivative(scalar_in, FULL, 0.7), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        di.second_derivative(scalar_in, SMALL, 0.7), di.second_derivative(scalar_in, FULL, 0.7), rtol=1e-10
    )


def test_second_order_within_a_budget():
    p6 = X[:8]

    def f(p):
        u = np.tile(p, 250)
        for _ in range(STEPS):
            u = u + 0.05 * (np.tanh(u) * u[::-1] - 0.5 * u)
        return np.sum(u**2)

    H = di.hessian(f, FULL, p6)
    v = V[:8]
    budget = di.AutoTape(memory="2MB")
    prep = di.prepare_hvp(f, budget, np.zeros(8), (v,))
    assert prep.report.strategy == "binomial" and prep.report.segments > 1
    for (r,) in twice(prep.hvp, p6, (v,)):
        np.testing.assert_allclose(r, H @ v, rtol=1e-10, atol=1e-12)
    g, (hv,) = di.gradient_and_hvp(f, budget, p6, (v,))
    np.testing.assert_allclose(g, di.gradient(f, FULL, p6), rtol=1e-12)
    np.testing.assert_allclose(hv, H @ v, rtol=1e-10, atol=1e-12)
    hp = di.prepare_hessian(f, budget, np.zeros(8))
    for h in twice(hp.hessian, p6):
        np.testing.assert_allclose(h, H, rtol=1e-10, atol=1e-12)


def test_contexts_aux_trees_and_guards_within_a_budget():
    def f(p, c):
        u = U0
        for _ in range(STEPS):
            u = u + 0.05 * (np.tanh(u) * p * c - 0.5 * u)
        return np.sum(u**2), u.mean()

    prep = di.prepare_gradient(f, SMALL, X0, di.Constant(1.5), has_aux=True)
    for g, aux in twice(prep.gradient, X, di.Constant(2.0)):
        g0, aux0 = di.gradient(f, FULL, X, di.Constant(2.0), has_aux=True)
        np.testing.assert_array_equal(g, g0)
        assert aux == aux0

    def scaled(p, k):  # an integer Constant is static: another value records f again
        return loss(p * k)

    prep = di.prepare_gradient(scaled, SMALL, X0, di.Constant(2))
    for g in twice(prep.gradient, X, di.Constant(3)):
        np.testing.assert_array_equal(g, di.gradient(scaled, FULL, X, di.Constant(3)))

    def tree(d):
        u = U0
        for _ in range(STEPS):
            u = u + 0.05 * (np.tanh(u) * d["p"] - d["a"] * u)
        return np.sum(u**2)

    point = {"p": X, "a": np.float64(0.4)}
    g = di.gradient(tree, SMALL, point)
    g0 = di.gradient(tree, FULL, point)
    np.testing.assert_array_equal(g["p"], g0["p"])
    assert g["a"] == g0["a"]

    def branch(p):
        u = U0 + p
        for _ in range(STEPS):
            u = u + 0.05 * np.tanh(u)
        return np.sum(u**2) if u[0] > 0 else np.sum(u**3)

    prep = di.prepare_gradient(branch, SMALL, X0 + 1)
    np.testing.assert_array_equal(prep.gradient(X0 + 2), di.gradient(branch, FULL, X0 + 2))
    with pytest.raises(di.TapeMismatchError):
        prep.gradient(X0 - 5)


def test_threads_share_a_budgeted_preparation():
    prep = di.prepare_gradient(loss, SMALL, X0)
    reference = di.gradient(loss, FULL, X)
    results: list = [None] * 8

    def work(i):
        results[i] = prep.gradient(X + 0.0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_array_equal(r, reference)


def test_sparse_and_distributed_within_a_budget():
    from concurrent.futures import ThreadPoolExecutor

    def local(p):  # each output depends on its own input: one color
        u = U0
        for _ in range(STEPS):
            u = u + 0.05 * (np.tanh(u) * p - 0.5 * u)
        return u

    diagonal = di.pushforward(local, FULL, X, (np.ones(N),))[0]
    sparse = di.prepare_jacobian(local, di.AutoSparse(di.AutoTape(mode="reverse", memory="900kB")), X0)
    assert sparse.ncolors == 1
    np.testing.assert_allclose(sparse.jacobian(X).toarray(), np.diag(diagonal), rtol=1e-13, atol=1e-15)

    def few(p):
        return trajectory(p)[:3]

    J = di.jacobian(few, FULL, X)
    with ThreadPoolExecutor(2) as pool:
        dist = di.prepare_jacobian(few, di.AutoDistributed(di.AutoTape(mode="reverse", memory="900kB"), pool), X0)
        np.testing.assert_allclose(dist.jacobian(X), J, rtol=1e-12, atol=1e-14)


def test_the_recording_lets_go_of_values_no_traced_array_holds():
    def big(p):
        u = np.ones(20_000)
        for _ in range(60):
            u = u + 0.01 * np.tanh(u) * p[0]
        return np.sum(u)

    peaks = []
    for backend in (FULL, di.AutoTape(memory="8MB")):
        tracemalloc.start()
        di.prepare_gradient(big, backend, np.zeros(1))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # keeping every value: about 60 steps x 4 arrays of 160 kB; lean: a few arrays at a time
    assert peaks[1] < peaks[0] / 3


@pytest.mark.parametrize(
    "memory",
    [0, -1, "lots", "1 parsec", True, [1], float("nan")],
)
def test_bad_budgets_say_what_is_accepted(memory):
    with pytest.raises(di.ArgumentError, match="memory must be"):
        di.AutoTape(memory=memory)


def test_budget_strings():
    assert di.AutoTape(memory="1GB").budget == 10**9
    assert di.AutoTape(memory="512 MB").budget == 512 * 10**6
    assert di.AutoTape(memory="2GiB").budget == 2 * 2**30
    assert di.AutoTape(memory=1e6).budget == 10**6
    assert repr(di.AutoTape(memory="1GB")) == "AutoTape(mode='auto', memory='1GB')"


def test_a_budget_below_one_step_says_how_much_is_needed():
    with pytest.raises(di.ArgumentError, match=r"the recording of f alone holds about .* raise memory= to at least"):
        di.prepare_gradient(loss, di.AutoTape(memory="100kB"), X0)
    with pytest.raises(di.ArgumentError, match=r"one step of f needs about .* raise memory= to at least"):
        di.prepare_gradient(lambda p: np.sum(np.sin(np.tile(p, 100)) ** 2), di.AutoTape(memory="1MB"), X0)


# -- di.checkpoint and di.scan on the tape -------------------------------------------------------------


def scanned(checkpoints):
    def f(p):
        u = di.scan(lambda u, i: step(u, p, i), U0 + 0 * p, STEPS, checkpoints=checkpoints)
        return np.sum(u**2)

    return f


@pytest.mark.parametrize("checkpoints", [None, 1, 4, "sqrt"])
def test_scan_on_the_tape(checkpoints):
    reference = di.gradient(loss, FULL, X)
    prep = di.prepare_gradient(scanned(checkpoints), FULL, X0)
    for g in twice(prep.gradient, X):
        np.testing.assert_array_equal(g, reference)
    report = prep.report
    if checkpoints is None:
        assert report.strategy == "all values kept"
        return
    assert report.strategy == "marked"
    if isinstance(checkpoints, int):
        assert report.snapshots <= checkpoints + 1  # the scan's own, and one for the steps after it
        # the loop's steps: the schedule's advances, the first pass's last step, each step reversed once
        loop = advanced_steps(binomial(STEPS, checkpoints)) + 1 + STEPS
        assert report.recomputation == pytest.approx((loop + 2) / (STEPS + 2), rel=0.1)
    np.testing.assert_array_equal(di.gradient(scanned(checkpoints), FULL, X), reference)


def test_scan_outputs_and_second_order_on_the_tape():
    def f(p):
        u, means = di.scan(lambda u, i: (step(u, p, i), u.mean()), U0 + 0 * p, STEPS, checkpoints=3, outputs=True)
        return np.sum(u**2) + np.sum(means**2)

    def plain(p):
        u, total = U0 + 0 * p, 0.0
        for i in range(STEPS):
            total = total + u.mean() ** 2
            u = step(u, p, i)
        return np.sum(u**2) + total

    np.testing.assert_allclose(di.gradient(f, FULL, X), di.gradient(plain, FULL, X), rtol=1e-13, atol=1e-15)
    hv = di.prepare_hvp(f, FULL, X0, (V,))
    for (r,) in twice(hv.hvp, X, (V,)):
        np.testing.assert_allclose(r, di.hvp(plain, FULL, X, (V,))[0], rtol=1e-10, atol=1e-12)


def test_checkpoint_on_the_tape():
    inner = di.checkpoint(lambda u, p: step(step(step(u, p), p), p))

    def f(p):
        u = U0
        for _ in range(STEPS // 4):
            u = inner(u, p) * 1.0
            u = step(u, p)
        return np.sum(u**2)

    reference = di.gradient(loss, FULL, X)
    prep = di.prepare_gradient(f, FULL, X0)
    assert prep.report.strategy == "marked" and prep.report.segments >= STEPS // 4
    for g in twice(prep.gradient, X):
        np.testing.assert_allclose(g, reference, rtol=1e-13, atol=1e-15)
    hv = di.prepare_hvp(f, FULL, X0, (V,))
    np.testing.assert_allclose(hv.hvp(X, (V,))[0], di.hvp(loss, FULL, X, (V,))[0], rtol=1e-10, atol=1e-12)
