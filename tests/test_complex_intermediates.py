"""Real functions with complex intermediates (issue 23) on every engine and mode, through the test kit.

Every operator of every scenario of `complex_intermediate_scenarios()` must match its hand-written
derivatives, or raise `NotSupportedError` where the engine is registered as refusing
(`diface.testing.known_unsupported`: autograd's forward mode through an FFT, which has no JVP rule).
The tape differentiates them all (tests/test_tape_complex.py has its own, wider checks). The complex
step is not run on them (`diface.testing._kit.COMPLEX_STEP`): it cannot tell every non-analytic f
(tests/test_finitediff.py checks the cases it refuses).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import diface as di
from conftest import HAS_AUTOGRAD, HAS_JAX, HAS_TORCH
from diface.testing import complex_intermediate_scenarios, known_unsupported, test_differentiation
from diface.testing._check import SECOND_ORDER
from diface.testing._kit import COMPLEX_STEP

SCENARIOS = complex_intermediate_scenarios()
FD, SO = di.AutoFiniteDiff, di.SecondOrder
MODES = ("auto", "forward", "reverse")


def _backends() -> list:
    backends = [di.AutoTape(m) for m in MODES] + [FD(), FD("forward"), FD("backward"), FD("complex")]
    if HAS_AUTOGRAD:
        a = di.AutoAutograd
        backends += [a(m) for m in MODES]
        backends += [SO(a(outer), a(inner)) for outer in ("forward", "reverse") for inner in ("forward", "reverse")]
        backends.append(SO(FD(), a()))
    tape = di.AutoTape
    backends += [SO(tape(outer), tape(inner)) for outer, inner in (("forward", "reverse"), ("reverse", "reverse"))]
    if HAS_TORCH:
        backends += [di.AutoTorch(m) for m in MODES]
    if HAS_JAX:
        backends += [di.AutoJAX(m) for m in MODES]
    return backends


@pytest.mark.parametrize("backend", _backends(), ids=repr)
def test_every_operator_is_right_or_refused(backend):
    # JAX compiles every preparation: its threads check runs on the default scenarios (tests/test_jax.py)
    threads = 0 if isinstance(backend, di.AutoJAX) else 8
    report = test_differentiation([backend], SCENARIOS, threads=threads)  # raises on any wrong number
    by_status: dict[str, list] = {}
    for row in report.rows:
        by_status.setdefault(row.status, []).append(row)
    assert set(by_status) <= {"pass", "unsupported", "n/a"}, [(r.scenario, r.operator, r.status) for r in report.rows]
    for row in by_status.get("unsupported", []):  # every failing call raised NotSupportedError
        assert row.failures and all(isinstance(f.error, di.NotSupportedError) for f in row.failures)
    assert {r.reason for r in by_status.get("n/a", [])} <= {COMPLEX_STEP}


def test_who_refuses_what():
    """The register names exactly the engines that refuse; the others answer everything."""
    refusing = {type(b).__name__ for b in _backends() if any(known_unsupported(b, s, "gradient") for s in SCENARIOS)}
    # autograd's forward mode through an FFT, alone or as the inner backend of a SecondOrder
    assert refusing == ({"AutoAutograd", "SecondOrder"} if HAS_AUTOGRAD else set())
    tapes = [di.AutoTape(m) for m in MODES] + [SO(di.AutoTape(o), di.AutoTape(i)) for o in MODES for i in MODES]
    assert not any(known_unsupported(b, s, op) for b in tapes for s in SCENARIOS for op in (*SECOND_ORDER, "pullback"))
    if HAS_AUTOGRAD:
        a = di.AutoAutograd
        fft = [s for s in SCENARIOS if "fft" in s.needs]
        assert len(fft) == 2 and all(known_unsupported(a("forward"), s, "jacobian") for s in fft)
        assert not any(known_unsupported(a("forward"), s, "pullback") for s in fft)
        plain = [a(m) for m in MODES]  # second order falls back to reverse over reverse
        assert not any(known_unsupported(b, s, op) for b in plain for s in SCENARIOS for op in SECOND_ORDER)
        assert known_unsupported(SO(a("reverse"), a("forward")), fft[1], "hessian")
        assert not known_unsupported(SO(a("reverse"), a("reverse")), fft[1], "hessian")


def test_the_issue_example():
    pytest.importorskip("autograd")
    import autograd.numpy as anp

    def f(v):
        z = v[0] + 1j * v[1]
        return anp.real(z * anp.conj(z))  # v0^2 + v1^2

    x = np.array([0.7, -1.3])
    for mode in MODES:
        b = di.AutoAutograd(mode)
        np.testing.assert_allclose(di.hessian(f, b, x), 2 * np.eye(2), atol=1e-14)
        np.testing.assert_allclose(di.gradient(f, b, x), 2 * x, rtol=1e-15)


def _central(fun, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return (np.asarray(fun(x + h)) - np.asarray(fun(x - h))) / (2 * h)
    columns = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        columns.append((np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2 * h))
    return np.stack(columns, axis=-1)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_references_agree_with_central_differences_of_numpy(scenario):
    """The hand-written derivatives against central differences of the NumPy function and of the
    Jacobian (error ~ 1e-10 here)."""
    for x in (scenario.x, scenario.prep_x):
        jac = scenario.jacobian(x)
        np.testing.assert_allclose(_central(lambda v: scenario.f(np, v), x), jac, rtol=1e-7, atol=1e-7)
        second = scenario.hessian or scenario.second_derivative
        if second is not None:
            np.testing.assert_allclose(_central(scenario.jacobian, x), second(x), rtol=1e-7, atol=1e-7)
    assert scenario.needs >= {"complex"}


def test_every_namespace_has_what_the_scenarios_call():
    namespaces = [np]
    for name in ("autograd.numpy", "torch", "jax.numpy"):
        if importlib.util.find_spec(name.split(".")[0]) is not None:
            namespaces.append(importlib.import_module(name))
    for xp in namespaces:
        assert all(hasattr(xp, f) for f in ("real", "imag", "conj", "abs", "angle", "exp", "sum", "stack"))
        assert hasattr(xp.fft, "fft")
