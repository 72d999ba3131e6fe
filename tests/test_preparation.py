"""Preparation internals a backend can rely on: the direct path of a kernel's `direct` program."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import diface as di
from diface._call import plan


@dataclass(frozen=True)
class WithProgram(di.AutoFiniteDiff):
    """Finite differences whose gradient kernel also offers `direct`: a program of x and the contexts."""

    def prepare_gradient(self, problem: Any) -> Any:
        kernel = super().prepare_gradient(problem)

        def program(x: Any, cv: tuple) -> Any:
            CALLS.append(x)
            return kernel.result_of(x, None, cv)

        return kernel.replace(direct=program)


CALLS: list = []


f = lambda x: np.sum(x**3)
x = np.array([1.0, 2.0])


def test_plain_calls_with_only_x_go_straight_to_the_program():
    b = WithProgram()
    prep = di.prepare_gradient(f, b, np.zeros(2))
    calls = CALLS
    calls.clear()
    np.testing.assert_allclose(prep.gradient(x), 3 * x**2, rtol=1e-8)
    np.testing.assert_allclose(di.gradient(f, b, x, prep=prep), 3 * x**2, rtol=1e-8)
    assert len(calls) == 2
    # everything else takes the general path
    y, _ = prep.value_and_gradient(x)
    out = np.empty(2)
    assert prep.gradient(x, out=out) is out
    assert len(calls) == 2 and y == 9.0


def test_the_direct_path_still_checks():
    b = WithProgram()
    prep = di.prepare_gradient(f, b, np.zeros(2))
    with pytest.raises(di.PreparationMismatchError, match=r"shape \(2,\) at preparation, \(3,\) now"):
        prep.gradient(np.ones(3))
    with pytest.raises(di.PreparationMismatchError, match="another function"):
        di.gradient(lambda x: np.sum(x), b, x, prep=prep)
    with pytest.raises(di.PreparationMismatchError, match="dtype float64 at preparation, float32 now"):
        di.gradient(f, b, x.astype(np.float32), prep=prep)


def test_an_unprepared_tape_call_runs_f_once():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(np.sin(x) * x)

    np.testing.assert_allclose(di.gradient(f, di.AutoTape(), x), np.cos(x) * x + np.sin(x), rtol=1e-12)
    assert len(calls) == 1  # the backend answered the output's shape from its own recording
    calls.clear()
    di.gradient(f, di.AutoFiniteDiff(), x)
    assert len(calls) == 1 + 2 * x.size  # the default: one evaluation for the shape, then the differences


def test_prepare_hvp_needs_no_tangent():
    """`tx` only gives the tangents' type: left out, they are like x; a context may follow x directly."""
    f = lambda x, c: c * np.sum(x**3)
    x, t = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    for prepare in (di.prepare_hvp, di.prepare_hvp_same_point):
        prep = prepare(f, di.AutoTape(), x, di.Constant(2.0))
        for _ in range(2):
            np.testing.assert_allclose(prep.hvp(x, t, di.Constant(2.0)), 12 * x * t)
    prep = di.prepare_hvp(lambda p: np.sum(p["a"] ** 3), di.AutoTape(), {"a": np.zeros(2)})
    np.testing.assert_allclose(prep.hvp({"a": x}, {"a": t})["a"], 6 * x * t)


@pytest.mark.parametrize("op", ["pushforward", "pullback", "hvp"])
def test_x_and_one_tangent_of_the_prepared_specs_take_the_quick_test(op, monkeypatch):
    """The quick test of x and one tangent passes for arguments of the prepared specs (it compared x's
    spec with a field only set for calls without a tangent, so every such call took the general path)."""
    f = (lambda x: np.sum(np.sin(x) ** 2)) if op == "hvp" else np.sin
    x, t = np.linspace(0.0, 1.0, 5), np.ones(5)
    prep = getattr(di, f"prepare_{op}")(f, di.AutoTape(), x, t)
    assert prep.route[op].accept == "x and 1 tangent"
    general: list = []
    original = plan.general_call
    monkeypatch.setattr(plan, "general_call", lambda *a: general.append(a) or original(*a))
    for _ in range(2):
        getattr(prep, op)(x, t)
    assert general == []  # the plan took both calls
    with pytest.raises(di.PreparationMismatchError, match=r"tx|ty"):
        getattr(prep, op)(x, t.astype(np.float32))
    assert len(general) == 1  # the general path reported the one of other specs
