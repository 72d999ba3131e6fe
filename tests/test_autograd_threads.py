"""AutoAutograd from many threads: one preparation shared by 8 threads gives exactly what it gives one
thread, for every operator in both modes and every same-engine SecondOrder composition.

autograd numbers its traces with one process-wide counter; a trace nested in one thread could get a
level at or below its outer trace's while another thread's trace ended, and f's values were then
differentiated with respect to the wrong trace (see `TRACING` in diface/backends/autograd/_lock.py). Functions
that call autograd themselves, with boxes of two traces meeting in one primitive, showed it: wrong
results and errors from most calls. The fallback switches of a kernel (missing JVP rules) are shared
state too, set by whichever thread meets the missing rule first."""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

pytest.importorskip("autograd")

import autograd
import autograd.numpy as anp
import autograd.scipy.special as ag_special
from autograd.extend import defjvp, defvjp, primitive
from test_autograd_nested import NESTED, P, V

import diface as di
from diface.testing import Scenario, check_threads, default_scenarios
from diface.testing._check import SECOND_ORDER

A = di.AutoAutograd
SO = di.SecondOrder
THREADS = 8
FIRST_ORDER = [A("reverse"), A("forward"), A("auto")]
SECOND_ORDER_BACKENDS = [
    A("reverse"),
    A("forward"),
    SO(A("forward"), A("reverse")),
    SO(A("reverse"), A("forward")),
    SO(A("reverse"), A("reverse")),
    SO(A("forward"), A("forward")),
]
CLOSURE = next(s for s in NESTED if s.name == "grad of a tuple closing over x")
VECTOR = next(s for s in default_scenarios() if s.name == "vector to vector")
SCALAR = next(s for s in NESTED if s.name == "grad inside, scalar x")


def _cases() -> list:
    cases = []
    for scenario in (CLOSURE, VECTOR, SCALAR):
        for op in scenario.operators():
            for backend in SECOND_ORDER_BACKENDS if op in SECOND_ORDER else FIRST_ORDER:
                cases.append(pytest.param(backend, scenario, op, id=f"{backend.label()}-{scenario.name}-{op}"))
    return cases


@pytest.mark.parametrize(("backend", "scenario", "op"), _cases())
def test_every_operator_from_eight_threads(backend, scenario, op):
    failures = check_threads(backend, scenario, op, threads=THREADS, calls=9)
    assert not failures, "\n".join(map(str, failures))


def small_closure(xp, x):
    return anp.sum(autograd.grad(lambda w: anp.sum(w * x))(x) * x)  # sum(x^2), boxes of two traces in w * x


SMALL = Scenario(
    "grad closing over x, small", small_closure, V, P, jacobian=lambda x: 2 * x, hessian=lambda x: 2 * np.eye(3)
)


def test_eight_threads_two_thousand_calls():
    """The acceptance figure, on a cheap function of the kind that went wrong (a few bad calls in 1,600
    before): 8 x 2,000 calls on one preparation, 0 wrong, 0 errors."""
    failures = check_threads(A(), SMALL, "gradient", threads=THREADS, calls=2000, switch_interval=None)
    assert not failures, "\n".join(map(str, failures))


def _hammer(call: Callable[[int], Any], calls: int) -> list:
    """`call(k)` from 8 threads at once, `calls` times each, the first calls together; every result
    (or the exception raised)."""

    def work(k: int) -> list:
        out = []
        for _ in range(calls):
            try:
                out.append(call(k))
            except Exception as e:  # reported by the caller
                out.append(e)
        return out

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            return list(pool.map(work, range(THREADS)))
    finally:
        sys.setswitchinterval(old)


def _assert_all_equal(results: list, expected: list) -> None:
    for k, (got, want) in enumerate(zip(results, expected)):
        for r in got:
            assert not isinstance(r, Exception), f"thread {k}: {type(r).__name__}: {r}"
            np.testing.assert_allclose(r, want, rtol=1e-14, atol=1e-15, err_msg=f"thread {k}")


M = np.array([[4.0, 1.0, 0.5], [0.2, 3.0, -1.0], [0.3, 0.1, 5.0]])
WITHOUT_JVP = {
    "partials (erf)": lambda x: ag_special.erf(x) * x[::-1],
    "rows (solve)": lambda x: anp.linalg.solve(M + anp.diag(x**2), anp.sin(x)),
}


@pytest.mark.parametrize("name", list(WITHOUT_JVP))
def test_pushforward_fallbacks_chosen_by_racing_threads(name):
    """Fresh preparations, so that all threads meet the missing JVP rule at once."""
    fn = WITHOUT_JVP[name]
    points = [np.array([0.3, -0.5, 0.7]) + 0.1 * k for k in range(THREADS)]
    t = np.array([1.0, -2.0, 0.5])
    expected = [di.jacobian(fn, A(), p) @ t for p in points]
    for _ in range(3):
        for prep in (di.prepare_pushforward(fn, A(), points[0], t), di.prepare_pushforward(fn, A(), points[0], (t, t))):
            batched = prep.batch is not None

            def call(k: int, prep=prep, batched=batched) -> Any:
                return prep.pushforward(points[k], (t, t))[1] if batched else prep.pushforward(points[k], t)

            _assert_all_equal(_hammer(call, 4), expected)


def test_second_order_fallbacks_chosen_by_racing_threads():
    """A plain backend's Hessian switches to reverse over reverse at erf (no JVP rule)."""
    fn = lambda x: anp.sum(ag_special.erf(x) * x**2)
    points = [np.array([0.3, -0.5, 0.7]) + 0.1 * k for k in range(THREADS)]
    expected = [di.hessian(fn, SO(A(), A()), p) for p in points]
    for backend in FIRST_ORDER:
        for _ in range(3):
            prep = di.prepare_hessian(fn, backend, points[0])
            _assert_all_equal(_hammer(lambda k, prep=prep: prep.hessian(points[k]), 4), expected)


@primitive
def cube(x):
    return x**3


# a reverse-mode rule that runs autograd itself (as autograd.scipy.integrate.odeint's does): it starts a
# trace while the backward pass runs, outside any trace of f
defvjp(cube, lambda ans, x: lambda g: g * autograd.elementwise_grad(lambda z: z**3)(x))
defjvp(cube, lambda g, ans, x: g * autograd.elementwise_grad(lambda z: z**3)(x))


def test_rules_that_trace_during_the_backward_pass():
    """Half the threads run rules that trace (in a backward pass, or pushing tangents through a
    recording), half a function whose nested traces must stay above their outer one: the rule's trace
    moves the counter outside any trace of f."""
    fn = lambda x: anp.sum(cube(anp.sin(x)) * x)
    points = [np.array([0.3, -0.5, 0.7]) + 0.1 * k for k in range(THREADS)]
    gradient = lambda x: 3 * np.sin(x) ** 2 * np.cos(x) * x + np.sin(x) ** 3
    small = SMALL.bind(anp)
    for backend in (A(), A("forward"), SO(A(), A())):
        grad, other = di.prepare_gradient(fn, backend, points[0]), di.prepare_gradient(small, backend, points[0])
        expected = [gradient(p) if k % 2 else 2 * p for k, p in enumerate(points)]
        results = _hammer(lambda k, g=grad, o=other: (g if k % 2 else o).gradient(points[k]), 100)
        _assert_all_equal(results, expected)
        hess = di.prepare_hessian(fn, backend, points[0])
        expected = [di.hessian(fn, di.AutoFiniteDiff(), p) for p in points]
        results = _hammer(lambda k, p=hess: p.hessian(points[k]), 5)
        single = [hess.hessian(p) for p in points]
        _assert_all_equal(results, single)
        np.testing.assert_allclose(single, expected, rtol=1e-6, atol=1e-6)


def test_linearizers_and_plans_called_directly_from_eight_threads():
    """Other parts of diface (AutoSparse's compressed sweeps) call a backend's linearizers, their
    products and its second-order plan's `linearize` directly, outside any kernel: they hold the lock
    themselves."""
    from diface._arrays import NUMPY
    from diface._problem import Problem

    fn = lambda x: small_closure(anp, x)  # sum(x^2), with boxes of two traces in one primitive
    points = [np.array([0.3, -0.5, 0.7]) + 0.1 * k for k in range(THREADS)]
    problem = Problem(fn, points[0], (), None, NUMPY)
    pull = A().prepare_linearize(problem, "reverse")
    push = A().prepare_linearize(problem, "forward")
    plan = A().second_order_plan(problem)
    basis = np.eye(3)

    def call(k: int) -> Any:
        x = points[k]
        return np.concatenate(
            [
                pull(x, (), None).pull(np.ones((1,)))[0],
                push(x, (), None).push(basis),
                plan.linearize(x, ()).push(basis).ravel(),
            ]
        )

    expected = [np.concatenate([2 * p, 2 * p, 2 * np.eye(3).ravel()]) for p in points]
    _assert_all_equal(_hammer(call, 50), expected)
