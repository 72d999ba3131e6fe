"""AutoTorch from many threads: every operator of every mode and composition, on one preparation shared
by several threads, on preparations of their own and unprepared, gives what it gives one thread, with no
error (torch's forward-mode level is process-global: diface takes turns on it); a user's own forward AD
in another thread is not disturbed; preparations made in threads leave Python's warning filters alone."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import diface as di
from diface.testing import Scenario, check_operator, check_threads, default_scenarios, edge_scenarios
from diface.testing._check import SECOND_ORDER

torch = pytest.importorskip("torch")

import torch.autograd.forward_ad as fwad  # noqa: E402

import diface.backends.torch as torch_backend  # noqa: E402
from diface.backends.torch import _batching as batching  # noqa: E402

REVERSE, FORWARD = di.AutoTorch("reverse"), di.AutoTorch("forward")
FOR, ROF, ROR, FOF = (
    di.SecondOrder(a, b) for a, b in ((FORWARD, REVERSE), (REVERSE, FORWARD), (REVERSE, REVERSE), (FORWARD, FORWARD))
)
BACKENDS = [di.AutoTorch(), REVERSE, FORWARD, FOR, ROF, ROR, FOF]
D = torch.float64
THREADS = 8


def run_threads(work: Callable[[int], list[str]], threads: int = THREADS) -> list[str]:
    """`work(k)` in `threads` threads started together, calls interleaved at fine grain; the problems
    they report (wrong results, exceptions), all threads together."""
    start = threading.Barrier(threads)

    def run(k: int) -> list[str]:
        start.wait()
        return work(k)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        with ThreadPoolExecutor(threads) as pool:
            return [p for problems in pool.map(run, range(threads)) for p in problems]
    finally:
        sys.setswitchinterval(old)


def calls(n: int, call: Callable[[int], object], want: Callable[[int], object]) -> list[str]:
    """`call(i)` for i < n against `want(i)`: what was wrong or raised."""
    problems = []
    for i in range(n):
        try:
            got = call(i)
        except Exception as e:
            problems.append(f"call {i} raised {type(e).__name__}: {e}")
            continue
        got, expected = (got, want(i)) if isinstance(got, tuple) else ((got,), (want(i),))
        if len(got) != len(expected) or not all(
            torch.allclose(g, w, rtol=1e-12, atol=1e-12) for g, w in zip(got, expected)
        ):
            problems.append(f"call {i}: wrong result")
    return problems


def sines(x):
    return torch.sin(x) * x


def sines_jacobian(x):
    return torch.diag(torch.cos(x) * x + torch.sin(x))


def sum_sines(x):
    return torch.sum(torch.sin(x) * x)


def sum_sines_hessian(x):
    return torch.diag(2 * torch.cos(x) - x * torch.sin(x))


def points(k: int, n: int = 4) -> torch.Tensor:
    """Thread k's points, one row each."""
    g = torch.Generator().manual_seed(k)
    return torch.randn(16, n, generator=g, dtype=D)


# -- the test kit's thread check: every scenario, operator, mode and composition ---------------------
@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.label())
def test_every_scenario_and_operator_from_threads(backend):
    """One preparation shared by 3 threads, each at a point of its own, through the plain operator, its
    full variant and out= (the kit's thread check), on every default and edge scenario."""
    failures = []
    for scenario in default_scenarios() + edge_scenarios():
        for op in scenario.operators():
            if isinstance(backend, di.SecondOrder) and op not in SECOND_ORDER:
                continue
            failures += check_threads(backend, scenario, op, threads=3, calls=3)
    assert not failures, "\n".join(map(str, failures))


PRODUCTS = Scenario(
    "products",
    lambda xp, x: x * (x[::-1] if xp is np else xp.flip(x, (0,))),
    np.array([0.5, -1.0, 2.0]),
    np.array([1.0, 0.3, -0.7]),
    jacobian=lambda x: np.diag(x[::-1]) + np.diag(x)[:, ::-1],
)
EXPONENTIALS = Scenario(
    "exponentials",
    lambda xp, x: xp.sum(xp.exp(x)),
    np.array([0.5, -1.0, 2.0]),
    np.array([1.0, 0.3, -0.7]),
    jacobian=lambda x: np.exp(x),
    hessian=lambda x: np.diag(np.exp(x)),
)


@pytest.mark.parametrize(
    ("backend", "scenario", "op"),
    [(FORWARD, PRODUCTS, "pushforward"), (FORWARD, PRODUCTS, "jacobian"), (FOR, EXPONENTIALS, "hvp")],
    ids=["forward pushforward", "forward jacobian", "forward-over-reverse hvp"],
)
def test_8_threads_2000_calls_on_one_preparation(backend, scenario, op):
    """The acceptance test: 8 threads, 2,000 calls each, on one preparation: none wrong, none raises.
    (Forward mode was the broken case: torch's forward-AD level is one per process.)"""
    assert not check_operator(backend, scenario, op)  # the single-threaded answers are right
    failures = check_threads(backend, scenario, op, threads=8, calls=2000)
    assert not failures, "\n".join(map(str, failures))


# -- batches of products, both strategies --------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["loop", "vmap"])
def test_batched_tangents_from_threads(monkeypatch, strategy):
    """Tuples of tangents, run one product at a time (one forward-AD level for the loop) or through
    vmap over torch.func.jvp / autograd.grad, from threads sharing the preparations."""
    # forced as tests/test_torch.py does: monkeypatching the decision function
    threshold = batching.INF if strategy == "loop" else 2
    monkeypatch.setattr(batching, "vmap_threshold", lambda trial: threshold)
    x0, seeds = torch.ones(4, dtype=D), tuple(torch.eye(4, dtype=D)[:3])
    cases = []
    for backend in (REVERSE, FORWARD):
        push = di.prepare_pushforward(sines, backend, x0, seeds)
        pull = di.prepare_pullback(sines, backend, x0, seeds)
        cases.append((lambda x, ts, p=push: p(x, ts), lambda x, ts: tuple(sines_jacobian(x) @ t for t in ts)))
        cases.append((lambda x, ts, p=pull: p(x, ts), lambda x, ts: tuple(t @ sines_jacobian(x) for t in ts)))
    for backend in (FOR, ROF, FOF):
        hvp = di.prepare_hvp(sum_sines, backend, x0, seeds)
        cases.append((lambda x, ts, p=hvp: p(x, ts), lambda x, ts: tuple(sum_sines_hessian(x) @ t for t in ts)))

    def work(k: int) -> list[str]:
        xs, ts = points(k), points(100 + k)
        call, want = cases[k % len(cases)]
        tangents = lambda i: (ts[i], ts[(i + 1) % 16], xs[i])
        return calls(20, lambda i: call(xs[i % 16], tangents(i % 16)), lambda i: want(xs[i % 16], tangents(i % 16)))

    assert run_threads(work, threads=2 * len(cases)) == []


# -- same-point preparations, separate preparations, unprepared calls ----------------------------------
def test_same_point_preparations_from_threads():
    """A traced linearization (pushforward), a kept forward pass (pullback) and a kept gradient graph
    (hvp, reverse over reverse), each shared by threads with tangents of their own."""
    x = torch.tensor([0.3, -0.8, 1.4, 0.5], dtype=D)
    jac, hess = sines_jacobian(x), sum_sines_hessian(x)
    push = di.prepare_pushforward_same_point(sines, FORWARD, x, x)
    pull = di.prepare_pullback_same_point(sines, REVERSE, x, x)
    hvps = [di.prepare_hvp_same_point(sum_sines, b, x, x) for b in (ROR, FOR)]
    cases = [
        (lambda t: push.value_and_pushforward(x, t), lambda t: (sines(x), jac @ t)),
        (lambda t: pull.value_and_pullback(x, t), lambda t: (sines(x), t @ jac)),
        *(
            (lambda t, p=p: p.gradient_and_hvp(x, t), lambda t: (torch.cos(x) * x + torch.sin(x), hess @ t))
            for p in hvps
        ),
    ]

    def work(k: int) -> list[str]:
        ts = points(k)
        call, want = cases[k % len(cases)]
        return calls(100, lambda i: call(ts[i % 16]), lambda i: want(ts[i % 16]))

    assert run_threads(work) == []


def test_one_recorded_graph_serves_concurrent_backward_passes():
    """A reverse-mode linearization is `shareable`: a same-point pullback records f's graph once, and
    every thread's backward passes (single and vmapped, through a graph large enough for them to overlap)
    run through that one graph at once, as torch's autograd allows with `retain_graph` (its engine locks
    each node's state; `torch.autograd.grad` accumulates into no `.grad`)."""
    a = torch.randn(200, 200, generator=torch.Generator().manual_seed(0), dtype=D) / 15
    f = lambda x: torch.tanh(a @ torch.tanh(a @ x)) * x
    x = torch.linspace(-1.0, 1.0, 200, dtype=D)
    jac = torch.func.jacrev(f)(x)
    made = []
    real = torch_backend.reverse_linearizer

    def counting(problem, batch=None):
        linearizer = real(problem, batch)
        return lambda *args: made.append(None) or linearizer(*args)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(torch_backend, "reverse_linearizer", counting)
        one, eight = (di.prepare_pullback_same_point(f, REVERSE, x, tuple(jac[:k])) for k in (1, 8))
    assert len(made) == 2  # each recorded at preparation, once for all threads

    def work(k: int) -> list[str]:
        ts = points(k, 200)
        if k % 2:
            return calls(200, lambda i: one(x, (ts[i % 16],)), lambda i: (ts[i % 16] @ jac,))
        return calls(50, lambda i: eight(x, tuple(ts[:8])), lambda i: tuple(t @ jac for t in ts[:8]))

    assert run_threads(work) == []
    assert len(made) == 2


def test_separate_preparations_and_unprepared_calls_in_every_mode_at_once():
    """Threads each preparing their own (or not preparing at all), forward, reverse and second-order
    calls side by side: the reproducer of separate preparations raising in forward mode."""

    def work(k: int) -> list[str]:
        xs, ts = points(k), points(50 + k)
        x, t, s = (lambda i: xs[i % 16]), (lambda i: ts[i % 16]), (lambda i: xs[i % 16, 0])
        curve = lambda s: torch.stack([torch.sin(s), s**3])
        kind = k % 8
        if kind == 0:
            return calls(
                30, lambda i: di.pushforward(sines, FORWARD, x(i), t(i)), lambda i: sines_jacobian(x(i)) @ t(i)
            )
        if kind == 1:
            return calls(30, lambda i: di.gradient(sum_sines, REVERSE, x(i)), lambda i: sines_jacobian(x(i)).diagonal())
        if kind == 2:
            prep = di.prepare_jacobian(sines, FORWARD, xs[0])
            return calls(30, lambda i: prep(x(i)), lambda i: sines_jacobian(x(i)))
        if kind == 3:
            return calls(20, lambda i: di.hessian(sum_sines, FOR, x(i)), lambda i: sum_sines_hessian(x(i)))
        if kind == 4:
            prep = di.prepare_hvp(sum_sines, ROF, xs[0], ts[0])
            return calls(30, lambda i: prep(x(i), t(i)), lambda i: sum_sines_hessian(x(i)) @ t(i))
        if kind == 5:
            want = lambda i: torch.stack([-torch.sin(s(i)), 6 * s(i)])
            return calls(20, lambda i: di.second_derivative(curve, FOF, s(i)), want)
        if kind == 6:
            prep = di.prepare_derivative(curve, FORWARD, xs[0, 0])
            return calls(30, lambda i: prep(s(i)), lambda i: torch.stack([torch.cos(s(i)), 3 * s(i) ** 2]))
        return calls(30, lambda i: di.pullback(sines, REVERSE, x(i), t(i)), lambda i: t(i) @ sines_jacobian(x(i)))

    assert run_threads(work) == []


# -- a user's own forward AD beside diface's -------------------------------------------------------------
def _users_forward_ad(n: int, lock: bool) -> list[str]:
    """A user's dual-tensor computation, `n` times (inside diface's lock or not)."""
    x, t = torch.linspace(-1, 1, 5, dtype=D), torch.ones(5, dtype=D)
    problems = []
    for i in range(n):
        try:
            with torch_backend.forward_ad_lock if lock else torch.no_grad():
                with fwad.dual_level():
                    tangent = fwad.unpack_dual(torch.sin(fwad.make_dual(x, t))).tangent
            if not torch.allclose(tangent, torch.cos(x)):
                problems.append(f"user call {i}: wrong tangent")
        except Exception as e:
            problems.append(f"user call {i} raised {type(e).__name__}: {e}")
    return problems


@pytest.mark.parametrize("users_lock", [True, False], ids=["user takes the lock", "user without the lock"])
def test_a_users_forward_ad_in_another_thread(users_lock):
    """Guaranteed: diface's forward mode beside a user's forward AD that holds `forward_ad_lock`, and
    diface's reverse mode beside any forward AD of the user's; both stay right and raise nothing."""
    x0, t0 = torch.ones(4, dtype=D), torch.ones(4, dtype=D)
    push, grad = di.prepare_pushforward(sines, FORWARD, x0, t0), di.prepare_gradient(sum_sines, REVERSE, x0)

    def work(k: int) -> list[str]:
        if k == 0:
            return _users_forward_ad(300, users_lock)
        xs, ts = points(k), points(20 + k)
        if users_lock:  # diface's forward mode too
            return calls(100, lambda i: push(xs[i % 16], ts[i % 16]), lambda i: sines_jacobian(xs[i % 16]) @ ts[i % 16])
        return calls(
            100, lambda i: grad(xs[i % 16]), lambda i: torch.cos(xs[i % 16]) * xs[i % 16] + torch.sin(xs[i % 16])
        )

    assert run_threads(work, threads=4) == []


def test_forward_mode_inside_a_users_dual_level_is_a_clear_error():
    x, t = torch.tensor([0.3, -0.8], dtype=D), torch.ones(2, dtype=D)
    prep = di.prepare_pushforward(sines, FORWARD, x, t)
    with fwad.dual_level():
        dual = fwad.make_dual(x, t)
        for call in (lambda: prep(x, t), lambda: di.jacobian(sines, FORWARD, x), lambda: di.hvp(sum_sines, FOR, x, t)):
            with pytest.raises(di.NotSupportedError, match="forward_ad_lock"):
                call()
        assert torch.allclose(fwad.unpack_dual(torch.sin(dual)).tangent, torch.cos(x))  # the user's level is intact
    assert torch.allclose(prep(x, t), sines_jacobian(x) @ t)  # and diface works after it


def test_forward_ad_lock_is_reentrant_around_diface_calls():
    x, t = torch.tensor([0.3, -0.8], dtype=D), torch.ones(2, dtype=D)
    with torch_backend.forward_ad_lock:
        assert torch.allclose(di.pushforward(sines, FORWARD, x, t), sines_jacobian(x) @ t)


def test_preparations_in_threads_leave_the_warning_filters_alone():
    """Preparations silence vmap's warnings while they try it (Python's filters are process-global)."""
    before = list(warnings.filters)

    def work(k: int) -> list[str]:
        xs = points(k)
        problems = []
        for i in range(4):
            prep = di.prepare_pushforward(sines, FORWARD, xs[i], (xs[i], xs[i + 1]))
            if not torch.allclose(prep(xs[i], (xs[i], xs[i]))[0], sines_jacobian(xs[i]) @ xs[i]):
                problems.append("wrong")
        return problems

    assert run_threads(work, threads=4) == []
    assert warnings.filters == before
