"""The test kit itself: reports, failures, expected failures, benchmarks."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import diface as di
from diface.extend import Result
from diface.testing import (
    Scenario,
    benchmark_differentiation,
    default_scenarios,
    structural_scenarios,
    test_differentiation,
)


def test_default_scenarios_cover_the_kinds():
    names = " | ".join(s.name for s in default_scenarios())
    for kind in (
        "scalar to scalar",
        "scalar to vector",
        "vector to scalar",
        "vector to vector",
        "matrix to scalar",
        "matrix to matrix",
        "in place",
        "Constant",
        "Cache",
    ):
        assert kind in names
    for s in default_scenarios():
        assert s.prep_x is not None and np.shape(s.prep_x) == np.shape(s.x)
        assert not np.array_equal(s.prep_x, s.x)


def test_a_correct_backend_passes_everything():
    report = test_differentiation([di.AutoFiniteDiff()])
    statuses = {r.status for r in report.rows}
    assert statuses == {"pass"}
    operators = {r.operator for r in report.rows}
    assert operators == {
        "pushforward",
        "pullback",
        "derivative",
        "gradient",
        "jacobian",
        "hessian",
        "hvp",
        "second_derivative",
        "taylor",  # AutoFiniteDiff's own (Richardson), not the nesting the core refuses past order 2
        "laplacian",
        "dot product",
        "threads",
    }
    scenarios = {r.scenario for r in report.rows}
    assert "matrix to matrix, transposed" in scenarios and "empty to scalar" in scenarios
    assert "vector to scalar, float32" in scenarios and "vector to vector, broadcast view" in scenarios


@dataclass(frozen=True)
class WrongTranspose(di.AutoFiniteDiff):
    """Pullbacks off by a factor: every reverse result and the dot-product identity must fail."""

    def prepare_pullback(self, problem: Any, cotangents: tuple) -> Any:
        kernel = super().prepare_pullback(problem, cotangents)

        def wrong(x: Any, t: tuple, cv: tuple, y: Any, full: bool) -> Result:
            value, _, results = kernel.run(x, t, cv, y, full)
            return Result(value, result=tuple(1.01 * r for r in results))

        return kernel.replace(run=wrong)


def test_a_wrong_backend_fails_with_a_readable_table():
    with pytest.raises(AssertionError) as info:
        test_differentiation([WrongTranspose()], default_scenarios()[2:4])
    text = str(info.value)
    assert "checks failed" in text
    assert "backend" in text and "scenario" in text and "operator" in text and "what differs" in text
    assert "pullback" in text and "dot product" in text and "max abs error" in text
    assert "pushforward" not in text.split("summary:")[0]  # forward results are right


@dataclass(frozen=True)
class KnownLimit(WrongTranspose):
    known_reason: ClassVar[str] = "this engine's pullback is known to be off (test double)"


def test_known_deviations_are_named_expected_failures():
    deviations = lambda backend, scenario: KnownLimit.known_reason if isinstance(backend, KnownLimit) else None
    report = test_differentiation(
        [KnownLimit()], default_scenarios()[2:3], operators=["pullback", "gradient"], known_deviations=deviations
    )
    by_op = {r.operator: r for r in report.rows}
    assert by_op["pullback"].status == "xfail" and by_op["pullback"].reason == KnownLimit.known_reason
    assert by_op["pullback"].failures  # the evidence is kept
    assert by_op["gradient"].status == "xpass"


def test_scenarios_a_backend_cannot_run_are_not_applicable():
    @dataclass(frozen=True)
    class Immutable(di.AutoFiniteDiff):
        supports_inplace: ClassVar[bool] = False

    report = test_differentiation([Immutable()], [s for s in default_scenarios() if s.mutates])
    assert {r.status for r in report.rows} == {"n/a"}
    assert all("write into arrays" in r.reason for r in report.rows)


def test_structural_probes_are_checked():
    scenario = structural_scenarios(("narrow",))[0]
    broken = Scenario(
        scenario.name,
        scenario.f,
        scenario.x,
        scenario.prep_x,
        jacobian=scenario.jacobian,
        probes=tuple((op, t, 2 * expected) for op, t, expected in scenario.probes),
    )
    with pytest.raises(AssertionError, match="the recorded result"):
        test_differentiation([di.AutoFiniteDiff()], [broken], operators=["pushforward"])


def test_benchmark_rows_count_calls_to_f():
    rows = benchmark_differentiation([di.AutoFiniteDiff()], default_scenarios()[:3])
    assert {tuple(sorted(r)) for r in rows} == {("backend", "calls", "operator", "prepared", "scenario", "seconds")}
    gradient = {r["prepared"]: r for r in rows if r["scenario"] == "vector to scalar" and r["operator"] == "gradient"}
    assert gradient[True]["calls"] == 8  # central differences, n = 4: 2n evaluations
    assert gradient[False]["calls"] == 9  # plus the evaluation that learns the output shape
    assert all(r["seconds"] > 0 for r in rows)


@dataclass(frozen=True)
class MemoryOrder(di.AutoFiniteDiff):
    """Reads x in memory order as if it were row-major: right for C-contiguous arrays only."""

    def prepare_gradient(self, problem: Any) -> Any:
        kernel = super().prepare_gradient(problem)

        def gradient(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            if isinstance(x, np.ndarray):
                x = x.ravel(order="K").reshape(x.shape)
            return kernel.run(x, extra, cv, y, full)

        return kernel.replace(run=gradient)


def test_layouts_catch_a_backend_that_assumes_row_major_arrays():
    from diface.testing import layout_scenarios

    with pytest.raises(AssertionError, match="transposed"):
        test_differentiation([MemoryOrder()], layout_scenarios(), operators=["gradient"], threads=0)
    report = test_differentiation([MemoryOrder()], default_scenarios(), operators=["gradient"], threads=0)
    assert report.ok  # plain arrays hide it


@dataclass(frozen=True)
class SharedBuffer(di.AutoFiniteDiff):
    """Returns its gradients through one buffer per preparation: wrong as soon as two threads share it."""

    def prepare_gradient(self, problem: Any) -> Any:
        kernel = super().prepare_gradient(problem)
        shared = np.zeros(problem.x_shape)

        def gradient(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            value, _, g = kernel.run(x, extra, cv, y, full)
            shared[...] = g
            time.sleep(1e-4)  # another thread writes meanwhile
            return Result(value, result=shared.copy())

        return kernel.replace(run=gradient)


def test_the_thread_check_catches_shared_state():
    from diface.testing import check_threads

    scenario = default_scenarios()[2]
    failures = check_threads(SharedBuffer(), scenario, "gradient", threads=4, calls=20)
    assert failures and "differs from the single-threaded one" in failures[0].message
    assert check_threads(di.AutoFiniteDiff(), scenario, "gradient", threads=4, calls=20) == []
    with pytest.raises(AssertionError, match="threads"):
        test_differentiation([SharedBuffer()], [scenario], operators=["gradient"])


def test_the_register_of_known_deviations():
    from diface.testing import known_deviation, register_deviation, structural_scenarios

    clamp_bound = next(s for s in structural_scenarios(("clamp",)) if s.role == "lo")
    assert "np.clip" in known_deviation(di.AutoAutograd(), clamp_bound)
    assert known_deviation(di.SecondOrder(di.AutoFiniteDiff(), di.AutoAutograd()), clamp_bound)
    assert known_deviation(di.AutoFiniteDiff(), clamp_bound) is None
    register_deviation("KnownLimit", lambda scenario: KnownLimit.known_reason)
    try:
        report = test_differentiation([KnownLimit()], default_scenarios()[2:3], operators=["pullback"])
        assert {r.status for r in report.rows} <= {"xfail", "xpass"}
    finally:
        from diface.testing._deviations import _RULES

        del _RULES["KnownLimit"]


@dataclass(frozen=True)
class Refusing(di.AutoFiniteDiff):
    """Gradients raise NotSupportedError (`refuse`), or come back 1% off (`wrong`)."""

    how: str = "refuse"

    def prepare_gradient(self, problem: Any) -> Any:
        if self.how == "refuse":
            raise di.NotSupportedError("this test double refuses gradients")
        kernel = super().prepare_gradient(problem)
        if self.how == "right":
            return kernel

        def off(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            value, _, g = kernel.run(x, extra, cv, y, full)
            return Result(value, result=1.01 * g)

        return kernel.replace(run=off)


def test_known_refusals_must_raise_not_supported_error():
    """A case registered as unsupported is "unsupported" where every failing call raised
    NotSupportedError, a failure where a number came back wrong, "xpass" where it came back right."""
    scenario = default_scenarios()[2]
    refusals = lambda backend, scenario, op: "refuses gradients" if op == "gradient" else None
    kw = dict(operators=["gradient", "pullback"], unsupported=refusals, threads=0)
    report = test_differentiation([Refusing(how="refuse")], [scenario], **kw)
    by_op = {r.operator: r for r in report.rows}
    assert by_op["gradient"].status == "unsupported" and by_op["gradient"].reason == "refuses gradients"
    assert all(isinstance(f.error, di.NotSupportedError) for f in by_op["gradient"].failures)
    assert by_op["pullback"].status == "pass"
    with pytest.raises(AssertionError, match="max abs error"):
        test_differentiation([Refusing(how="wrong")], [scenario], **kw)
    report = test_differentiation([Refusing(how="right")], [scenario], **kw)
    assert {r.operator: r.status for r in report.rows} == {"gradient": "xpass", "pullback": "pass"}


def test_the_register_of_known_refusals():
    from diface.testing import complex_intermediate_scenarios, known_unsupported, register_unsupported

    complex_abs2 = complex_intermediate_scenarios()[0]
    fft = next(s for s in complex_intermediate_scenarios() if "fft" in s.needs)
    autograd_forward = type("AutoAutograd", (), {"mode": "forward"})()  # the register reads the class name
    assert "forward-mode" in known_unsupported(autograd_forward, fft, "gradient")
    assert known_unsupported(autograd_forward, fft, "dot product")
    assert known_unsupported(di.AutoTape(), complex_abs2, "gradient") is None  # the tape differentiates it
    assert known_unsupported(di.AutoFiniteDiff(), complex_abs2, "gradient") is None
    assert known_unsupported(di.AutoTape(), default_scenarios()[2], "gradient") is None
    register_unsupported("Refusing", lambda backend, scenario, op: "refuses" if op == "gradient" else None)
    try:
        report = test_differentiation([Refusing()], default_scenarios()[2:3], operators=["gradient"], threads=0)
        assert {r.status for r in report.rows} == {"unsupported"}
    finally:
        from diface.testing._deviations import _UNSUPPORTED

        del _UNSUPPORTED["Refusing"]
