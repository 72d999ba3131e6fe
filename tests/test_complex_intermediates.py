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
    if HAS_JAX:  # "auto" is one of the two per operator: JAX compiles every preparation, so only those
        backends += [di.AutoJAX(m) for m in ("forward", "reverse")]
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
        hessians = [op for op in SECOND_ORDER if op not in ("taylor", "laplacian")]
        assert not any(known_unsupported(b, s, op) for b in plain for s in SCENARIOS for op in hessians)
        # Taylor coefficients and Laplacians are forward mode: refused through the FFT in forward mode only
        assert all(known_unsupported(a("forward"), s, op) for s in fft for op in ("taylor", "laplacian"))
        assert not any(known_unsupported(a("reverse"), s, op) for s in fft for op in ("taylor", "laplacian"))
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


# -- the same scenarios with complex inputs (issue 23 with issue 18: one set of rules) ---------------------------
#: the scenarios whose x holds the real and imaginary parts of z = x[:k] + 1j * x[k:]
PAIRED = [s for s in SCENARIOS if np.ndim(s.x) == 1 and "fft" not in s.needs]


def _complex_twin(scenario, xp):
    """g(z) = f(concat(Re z, Im z)): the scenario's function of the complex z its x stands for."""
    f = scenario.bind(xp)
    return lambda z: f(xp.concatenate([xp.real(z), xp.imag(z)]))


@pytest.mark.parametrize(
    "backend", [b for b in _backends() if not isinstance(b, SO) and getattr(b, "mode", "") != "auto"], ids=repr
)
def test_the_scenarios_with_complex_inputs(backend):
    """Each scenario's f as a function of the complex z its x holds: diface's pullback of g at z is the
    pullback of f at x, read as a complex number (J^T ty)[:k] + 1j (J^T ty)[k:], and its pushforward of t
    is f's of (Re t, Im t); the gradient of a real g is 2∂̄g the same way. The complex step has no place."""
    if backend == FD("complex"):
        pytest.skip(COMPLEX_STEP)
    from diface._engines import namespace_of

    xp = namespace_of(backend)
    rng = np.random.default_rng(7)
    for s in PAIRED:
        k = s.x.size // 2
        z = s.x[:k] + 1j * s.x[k:]
        g = _complex_twin(s, xp)
        jac = np.atleast_2d(s.jacobian(s.x))
        ty = rng.standard_normal(jac.shape[0])
        t = rng.standard_normal(k) + 1j * rng.standard_normal(k)
        tol = {"rtol": 1e-6, "atol": 1e-6} if isinstance(backend, FD) else {"rtol": 1e-10, "atol": 1e-12}
        pulled = ty @ jac
        ty_arg = ty if np.ndim(s.jacobian(s.x)) > 1 else ty[0]
        np.testing.assert_allclose(di.pullback(g, backend, z, ty_arg), pulled[:k] + 1j * pulled[k:], **tol)
        pushed = jac @ np.concatenate([t.real, t.imag])
        got = di.pushforward(g, backend, z, t)
        np.testing.assert_allclose(np.reshape(got, -1), pushed, **tol)
        if np.ndim(s.jacobian(s.x)) == 1:  # a real loss: its gradient
            np.testing.assert_allclose(di.gradient(g, backend, z), pulled[:k] / ty[0] + 1j * pulled[k:] / ty[0], **tol)
