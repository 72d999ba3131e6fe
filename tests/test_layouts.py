"""Every operator on every backend with inputs in every layout a user can pass (transposed, Fortran
order, reversed and strided views, broadcast views, read-only arrays) and at the edges (0-d, empty
inputs and outputs, one element, 3-d, float32), against analytic results; prepared at a plain
contiguous point, so prepared calls meet the layout for the first time.

JAX compiles its own programs for every case (about half a second each on a CI core, for a few hundred
cases), and the reverse-only test double's own second order nests finite differences in finite
differences: their layout cases are a pairwise covering of the full grid (`pairwise`), every pair of
(base scenario, layout), (base scenario, operator) and (layout, operator) still met, chosen
deterministically (a seeded shuffle, then greedy); their edge cases, and every case of the other
backends, run in full."""

from __future__ import annotations

import numpy as np
import pytest
from toy_backends import ReverseOnly

import diface as di
from conftest import assert_operator, first_order_backends, operator_cases, second_order_backends
from diface.testing import LAYOUTS, edge_scenarios, layout_scenarios

SCENARIOS = layout_scenarios() + edge_scenarios()
#: the backends whose layout cases are sampled: JAX (it compiles per case) and, in second order, the
#: reverse-only double (reverse over reverse: finite differences of finite differences, its slowest)
SAMPLED = (di.AutoJAX,)
SAMPLED_SECOND_ORDER = (di.AutoJAX, ReverseOnly)


def _base_and_layout(name: str) -> tuple[str, str] | None:
    """("vector to scalar", "read-only") of "vector to scalar, read-only"; None for an edge scenario."""
    for layout in LAYOUTS:
        if name.endswith(", " + layout.name):
            return name[: -len(layout.name) - 2], layout.name
    return None


def pairwise(cases: list, sampled: tuple = SAMPLED) -> list:
    """Of each sampled backend's layout cases without marks (the skips and strict expected failures all
    stay), a subset covering every (base, layout), (base, operator) and (layout, operator) pair the full
    grid has: the cases in an order shuffled by a seeded generator, each kept where it meets a pair not
    met yet. Fixed: the same cases on every run."""
    kept, covered = [], set()
    candidates = []
    for case in cases:
        backend, scenario, op = case.values
        split = _base_and_layout(scenario.name)
        if isinstance(backend, sampled) and split and not case.marks:
            candidates.append((case, (backend.label(), *split, op)))
        else:
            kept.append(case)
    for i in np.random.default_rng(0).permutation(len(candidates)):
        case, (label, base, layout, op) = candidates[i]
        pairs = {(label, "bl", base, layout), (label, "bo", base, op), (label, "lo", layout, op)}
        if pairs - covered:
            covered |= pairs
            kept.append(case)
    return kept


@pytest.mark.parametrize(
    ("backend", "scenario", "op"), pairwise(operator_cases(first_order_backends(), False, SCENARIOS))
)
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(
    ("backend", "scenario", "op"),
    pairwise(operator_cases(second_order_backends(), True, SCENARIOS), SAMPLED_SECOND_ORDER),
)
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_each_layout_holds_the_values_it_claims(layout):
    a = np.arange(24.0).reshape(2, 3, 4)
    arranged = layout.arrange(a)
    assert arranged.shape == a.shape and arranged.dtype == a.dtype
    if layout.name == "broadcast view":
        assert arranged.strides[0] == 0 and np.array_equal(arranged, np.broadcast_to(a[:1], a.shape))
    else:
        assert np.array_equal(arranged, a)
    assert not arranged.flags.c_contiguous or layout.name == "read-only"
    assert arranged.flags.writeable == layout.writable


def test_finite_differences_of_a_transposed_input():
    """The reproducer: a Fortran-ordered x gave all-zero gradients (perturbations written into a copy)."""
    x = np.arange(1.0, 7.0).reshape(3, 2).T
    f = lambda x: np.sum(np.sin(x) * x**2)
    exact = np.cos(x) * x**2 + 2 * x * np.sin(x)
    for method in ("forward", "central", "backward", "complex"):
        b = di.AutoFiniteDiff(method)
        np.testing.assert_allclose(di.gradient(f, b, x), exact, rtol=1e-5)
        np.testing.assert_allclose(di.pullback(f, b, x, 1.0), exact, rtol=1e-5)
        np.testing.assert_allclose(di.jacobian(f, b, np.broadcast_to(x[:1], x.shape)).shape, x.shape)
    h = di.hessian(f, di.AutoFiniteDiff("forward"), x).reshape(6, 6)
    exact_h = np.diag((2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x)).ravel())
    np.testing.assert_allclose(h, exact_h, atol=2e-3 * np.abs(exact_h).max())


def test_finite_differences_on_an_empty_input():
    b = di.AutoFiniteDiff()
    assert di.pushforward(lambda x: x * 2, b, np.zeros(0), np.zeros(0)).shape == (0,)
    np.testing.assert_array_equal(di.hvp(lambda x: np.sum(x**2) + 1.0, b, np.zeros(0), np.zeros(0)), np.zeros(0))
