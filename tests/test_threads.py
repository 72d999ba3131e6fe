"""One preparation shared by many threads gives what it gives one thread, on every backend.

`check_threads` runs 8 threads, each at a point of its own, through one shared preparation and
compares every result with the single-threaded one (see `diface.testing._threads`)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import diface as di
from conftest import engine_defaults
from diface.testing import check_threads, default_scenarios, edge_scenarios, namespace_of
from diface.testing._kit import applicable


def backends() -> list:
    """Every engine with its defaults (torch's forward mode and its compositions, which take turns on
    torch's one forward-AD level, are checked in test_torch_threads.py)."""
    return [di.AutoFiniteDiff(), di.AutoFiniteDiff("complex"), *engine_defaults()]


def _cases() -> list:
    cases = []
    for backend in backends():
        for scenario in default_scenarios() + edge_scenarios():
            if applicable(backend, scenario):
                continue
            cases.append(pytest.param(backend, scenario, id=f"{backend.label()}-{scenario.name}"))
    return cases


@pytest.mark.parametrize(("backend", "scenario"), _cases())
def test_every_operator_from_eight_threads(backend, scenario):
    failures = [f for op in scenario.operators() for f in check_threads(backend, scenario, op, calls=6)]
    assert not failures, "\n".join(map(str, failures))


@pytest.mark.parametrize("backend", backends(), ids=lambda b: b.label())
def test_eight_threads_two_thousand_calls(backend):
    """The acceptance figure: 8 threads x 2,000 calls on one shared preparation, 0 wrong, 0 errors
    (for torch's forward mode: test_torch_threads.py)."""
    scenario = next(s for s in default_scenarios() if s.name == "vector to scalar")
    failures = check_threads(backend, scenario, "gradient", threads=8, calls=2000, switch_interval=None)
    assert not failures, "\n".join(map(str, failures))


def test_prep_copy_is_independent_and_equivalent():
    f = lambda x: np.sum(np.sin(x) * x**2)
    x = np.array([0.3, -1.2, 2.0])
    for backend in backends():
        if isinstance(backend, di.SecondOrder):
            continue
        namespace = namespace_of(backend)
        g = lambda x, xp=namespace: xp.sum(xp.sin(x) * x**2)
        prep = di.prepare_gradient(g, backend, np.zeros(3))
        twin = prep.copy()
        assert twin is not prep and type(twin) is type(prep) and twin.f is prep.f
        np.testing.assert_allclose(twin.gradient(x), prep.gradient(x), rtol=1e-12)
        np.testing.assert_allclose(twin.gradient(x), np.cos(x) * x**2 + 2 * x * np.sin(x), rtol=1e-5)
        with pytest.raises(di.PreparationMismatchError):
            twin.gradient(np.zeros(4))
    assert f(x) is not None


def test_one_copy_per_worker():
    b = di.AutoFiniteDiff()
    prep = di.prepare_jacobian(lambda x: np.sin(x) * x[0], b, np.zeros(3))
    results = {}

    def work(k: int) -> None:
        mine = prep.copy()
        x = np.full(3, 0.1 * k)
        results[k] = [mine.jacobian(x) for _ in range(20)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, jacs in results.items():
        want = prep.jacobian(np.full(3, 0.1 * k))
        assert all(np.allclose(j, want, rtol=1e-12) for j in jacs)
