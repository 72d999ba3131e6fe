"""Complex inputs and outputs (issue 18): the hand-written references of `complex_scenarios()`, and every
engine through the test kit on them.

The references are checked now, in NumPy alone: each Wirtinger pair against central differences of the
function along the real and imaginary directions of every entry of x (the realified function), the
gradient map's pair against differences of the reference gradient, second derivatives against
differences of the reference derivative. Then every engine runs the kit on them, in plain arrays, in
every layout, on empty arrays and from 8 threads sharing a preparation.
"""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

import diface as di
from conftest import HAS_AUTOGRAD, HAS_JAX, HAS_TORCH
from diface.testing import ComplexScenario, complex_scenarios, namespace_of, test_differentiation
from diface.testing._check import _tangents
from diface.testing._kit import COMPLEX_STEP_IO

SCENARIOS = complex_scenarios()
BY_NAME = {s.name: s for s in SCENARIOS}
FD, SO = di.AutoFiniteDiff, di.SecondOrder
SECOND = ["hvp", "hessian", "second_derivative"]


# -- the references, against differences of the NumPy function --------------------------------------------------
def _at_double(s: ComplexScenario, x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=complex if s.complex_x else float)


def _numeric_pair(fun, x: np.ndarray, complex_x: bool, h: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """(D, Dbar) of `fun` at `x` from central differences along the real (and imaginary) direction of
    every entry: D = (∂_a - i ∂_b) / 2, Dbar = (∂_a + i ∂_b) / 2 (Dbar = 0 for real x)."""
    y = np.asarray(fun(x))
    d = np.zeros(y.shape + x.shape, complex)
    dbar = np.zeros_like(d)
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = h
        da = (np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2 * h)
        if complex_x:
            db = (np.asarray(fun(x + 1j * e)) - np.asarray(fun(x - 1j * e))) / (2 * h)
            d[(..., *index)], dbar[(..., *index)] = (da - 1j * db) / 2, (da + 1j * db) / 2
        else:
            d[(..., *index)] = da
    return d, dbar


def _close(got, want, what: str) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=what)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_hand_references_agree_with_differences_of_the_realified_function(scenario):
    assert scenario.wirtinger is not None
    for prep in (False, True):
        x = _at_double(scenario, scenario.prep_x if prep else scenario.x)
        cv = scenario.context_values(prep)
        d, dbar = scenario.wirtinger(x, *cv)
        y_shape = np.shape(scenario.f(np, x, *cv))
        assert d.shape == dbar.shape == y_shape + np.shape(x)
        num_d, num_dbar = _numeric_pair(lambda v, cv=cv: scenario.f(np, v, *cv), x, scenario.complex_x)
        _close(d, num_d, "D = ∂f")
        _close(dbar, num_dbar, "Dbar = ∂̄f")
        if scenario.complex_x:  # the flag that decides whether jacobian is refused
            assert scenario.holomorphic == bool(np.allclose(num_dbar, 0, atol=1e-7))
        if scenario.gradient_wirtinger is not None:
            assert scenario.complex_x and not scenario.complex_y and y_shape == ()
            g, gbar = scenario.gradient_wirtinger(x, *cv)
            num_g, num_gbar = _numeric_pair(lambda v, cv=cv: 2 * scenario.wirtinger(v, *cv)[1], x, True)
            _close(g, num_g, "G = ∂(2 ∂̄f)")
            _close(gbar, num_gbar, "Gbar = ∂̄(2 ∂̄f)")
        if scenario.second_derivative is not None:
            assert np.ndim(x) == 0 and (scenario.holomorphic or not scenario.complex_x)
            h = 1e-6  # along the real axis: f'' of a holomorphic f, d²f/dx² of a real x
            num = (scenario.wirtinger(x + h, *cv)[0] - scenario.wirtinger(x - h, *cv)[0]) / (2 * h)
            _close(scenario.second_derivative(x, *cv), num, "second derivative")


def test_the_kinds_and_their_counts():
    kinds: dict[str, int] = {}
    for s in SCENARIOS:
        if s.complex_x and s.complex_y:
            kind = "holomorphic C→C" if s.holomorphic else "non-holomorphic C→C"
        else:
            kind = "R→C" if s.complex_y else "C→R"
        kinds[kind] = kinds.get(kind, 0) + 1
    assert len(SCENARIOS) >= 40
    assert min(kinds.values()) >= 7, kinds
    low = [s for s in SCENARIOS if np.finfo(s.dtype).dtype == np.float32]
    assert len(low) >= 8 and all(np.asarray(s.value()).dtype in (np.float32, np.complex64) for s in low)
    assert any(s.x_shape == (2, 3) and s.complex_x for s in SCENARIOS)


def test_what_each_kind_refuses():
    """jacobian/derivative where f is not holomorphic in complex x; hessian of a real f of complex x;
    gradient of a complex-valued f (ShapeError); no number is expected there."""
    for s in SCENARIOS:
        refused = s.refusals()
        assert ("jacobian" in refused) == (s.complex_x and not s.holomorphic), s.name
        assert ("hessian" in refused) == (s.scalar_y and s.complex_x and not s.complex_y), s.name
        if "gradient" in refused:
            assert refused["gradient"].error is di.ShapeError and s.complex_y
        assert set(refused) <= set(s.operators())
        for op in refused:
            with pytest.raises(ValueError, match="refused"):
                s.expected(op)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_expected_results_follow_the_convention(scenario):
    """Pushforward and pullback are adjoint under <u, v> = Re sum conj(u) v; the gradient is 2 ∂̄f;
    results are real where the convention says so; the kit's tangents are complex where x or y is."""
    tx, ty = _tangents(scenario, "pushforward", 3, None), _tangents(scenario, "pullback", 4, None)
    assert np.iscomplexobj(tx) == scenario.complex_x and np.iscomplexobj(ty) == scenario.complex_y
    assert np.asarray(tx).dtype == scenario.dtype
    (jtx,), (jty,) = (
        scenario.expected("pushforward", tangents=(tx,))[0],
        scenario.expected("pullback", tangents=(ty,))[0],
    )
    assert np.iscomplexobj(jtx) == scenario.complex_y and np.iscomplexobj(jty) == scenario.complex_x
    np.testing.assert_allclose(np.real(np.vdot(ty, jtx)), np.real(np.vdot(jty, tx)), rtol=1e-5)
    if "gradient" in scenario.operators() and "gradient" not in scenario.refusals():
        _, dbar = scenario.wirtinger(scenario.x, *scenario.context_values())
        np.testing.assert_allclose(scenario.expected("gradient")[0], 2 * dbar, rtol=1e-12)


def _torch_pair_products(s: ComplexScenario):
    """torch's own VJP and JVP at x (PyTorch's convention is diface's)."""
    import torch

    f = s.bind(torch)
    x = torch.from_numpy(np.asarray(s.x))
    cv = tuple(torch.from_numpy(np.asarray(v)) for v in s.context_values())
    tx, ty = _tangents(s, "pushforward", 3, None), _tangents(s, "pullback", 4, None)
    _, jtx = torch.func.jvp(lambda v: f(v, *cv), (x,), (torch.from_numpy(np.asarray(tx)),))
    _, vjp = torch.func.vjp(lambda v: f(v, *cv), x)
    (jty,) = vjp(torch.from_numpy(np.asarray(ty)))
    return (tx, jtx.resolve_conj().numpy()), (ty, jty.resolve_conj().numpy())


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
@pytest.mark.parametrize(
    "scenario", [s for s in SCENARIOS if s.dtype in (np.float64, np.complex128)], ids=lambda s: s.name
)
def test_the_convention_is_pytorchs(scenario):
    """PyTorch's own jvp and vjp, run directly, give the kit's expected pushforward and pullback."""
    (tx, jtx), (ty, jty) = _torch_pair_products(scenario)
    (want_jtx,) = scenario.expected("pushforward", tangents=(tx,))[0]
    (want_jty,) = scenario.expected("pullback", tangents=(ty,))[0]
    np.testing.assert_allclose(jtx, want_jtx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jty, want_jty, rtol=1e-10, atol=1e-12)


def test_every_namespace_computes_the_same_values():
    namespaces = {}
    for name in ("autograd.numpy", "torch", "jax.numpy"):
        if importlib.util.find_spec(name.split(".")[0]) is not None:
            namespaces[name] = importlib.import_module(name)
    for s in SCENARIOS:
        want = s.value()
        for name, xp in namespaces.items():
            x, cv = xp.asarray(np.asarray(s.x)), tuple(xp.asarray(v) for v in s.context_values())
            got = s.bind(xp)(x, *cv)
            got = got.resolve_conj().numpy() if name == "torch" else np.asarray(got)
            assert got.dtype == want.dtype, (name, s.name, got.dtype, want.dtype)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{name}: {s.name}")


# -- every engine through the kit (once the core accepts complex x) -----------------------------------------------
#: JAX compiles every preparation: one scenario of each kind (and a complex64 one)
JAX_SUBSET = (
    "exp(z)",
    "complex scalar z^2 e^z",
    "real scalar t to complex vector [e^{it}, t^2 + it, (1+it)^3]",
    "phase retrieval sum (|A z|^2 - m)^2",
    "|z| z",
    "least squares ||A z - b||^2, complex64",
)


def _engines() -> list[tuple[object, list]]:
    """(backend, scenarios) pairs."""
    out: list[tuple[object, list]] = [(FD(), SCENARIOS), (FD("complex"), FIRST_THREE)]
    out += [(di.AutoTape(m), SCENARIOS) for m in ("forward", "reverse")]
    if HAS_AUTOGRAD:
        out += [(di.AutoAutograd(m), SCENARIOS) for m in ("forward", "reverse")]
    if HAS_TORCH:
        out += [(di.AutoTorch(m), SCENARIOS) for m in ("forward", "reverse")]
    if HAS_JAX:
        # JAX compiles every preparation: one mode here (tests/test_complex.py runs both on every operator)
        out += [(di.AutoJAX("reverse"), [BY_NAME[n] for n in JAX_SUBSET])]
    return out


#: the complex step's few scenarios (all n/a: it cannot step into complex inputs or outputs)
FIRST_THREE = SCENARIOS[:3]


def _second_order() -> list:
    pairs = [SO(FD(), FD())]
    if HAS_AUTOGRAD:
        a = di.AutoAutograd
        pairs += [SO(a("forward"), a("reverse")), SO(a("reverse"), a("reverse"))]
    if HAS_TORCH:
        pairs.append(SO(di.AutoTorch("forward"), di.AutoTorch("reverse")))
    return pairs


def _statuses(report) -> dict[str, list]:
    by_status: dict[str, list] = {}
    for row in report.rows:
        by_status.setdefault(row.status, []).append(row)
    return by_status


@pytest.mark.parametrize(("backend", "scenarios"), _engines(), ids=lambda v: repr(v) if not isinstance(v, list) else "")
def test_every_engine_is_right_or_refuses(backend, scenarios):
    threads = 2 if isinstance(backend, di.AutoFiniteDiff) else 0
    report = test_differentiation([backend], scenarios, threads=threads)  # raises on any wrong number
    by_status = _statuses(report)
    assert set(by_status) <= {"pass", "refused", "unsupported", "n/a"}, sorted(by_status)
    assert "refused" in by_status or scenarios is FIRST_THREE
    for row in by_status.get("unsupported", []):  # autograd's forward mode through an FFT
        assert isinstance(backend, di.AutoAutograd) and "fft" in BY_NAME[row.scenario].needs
    assert {r.reason for r in by_status.get("n/a", [])} <= {COMPLEX_STEP_IO}


@pytest.mark.parametrize("backend", _second_order(), ids=repr)
def test_second_order_pairs(backend):
    scenarios = [s for s in SCENARIOS if set(SECOND) & set(s.operators())]
    report = test_differentiation([backend], scenarios, operators=SECOND, threads=0)
    by_status = _statuses(report)
    assert {"pass", "refused", "unsupported"} >= set(by_status) >= {"pass", "refused"}
    for row in by_status.get("unsupported", []):  # autograd has no forward-mode rule for the FFT
        assert "fft" in BY_NAME[row.scenario].needs and "AutoAutograd(mode='forward')" in repr(backend)


def _forward_reverse_engines() -> list:
    engines = [di.AutoTape]
    engines += [di.AutoAutograd] if HAS_AUTOGRAD else []
    engines += [di.AutoTorch] if HAS_TORCH else []
    return engines


@pytest.mark.parametrize("engine", _forward_reverse_engines(), ids=lambda e: e.__name__)
def test_forward_and_reverse_agree(engine):
    """The complex derivative and the gradient are the same numbers from either mode."""
    fwd, rev = engine("forward"), engine("reverse")
    f = lambda s: s.bind(namespace_of(fwd))
    for s in SCENARIOS:
        for op in ("jacobian", "gradient"):
            if op not in s.operators() or op in s.refusals() or "fft" in s.needs:
                continue
            a = getattr(di, op)(f(s), fwd, s.x, *s.make_contexts())
            b = getattr(di, op)(f(s), rev, s.x, *s.make_contexts())
            rtol = 1e-12 if np.result_type(s.x) in (np.float64, np.complex128) else 1e-5
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2, err_msg=f"{op} of {s.name}")


#: complex x of every rank the layouts fit: vectors, a holomorphic map, a real loss, a non-holomorphic map,
#: 2x3 matrices
LAYOUT_SCENARIOS = ("exp(z)", "sum |z|^2", "|z| z", "A @ z, A complex", "2x3 complex matrix, tanh(Z) @ B")


def _layout_backends() -> list:
    backends = [FD(), di.AutoTape()]
    backends += [di.AutoTorch()] if HAS_TORCH else []
    backends += [di.AutoAutograd()] if HAS_AUTOGRAD else []
    return backends


@pytest.mark.parametrize("backend", _layout_backends(), ids=repr)
def test_layouts_and_threads(backend):
    """Complex x transposed, in Fortran order, reversed, strided, broadcast and read-only, every operator
    (or its required refusal), and 8 threads sharing each preparation."""
    from diface.testing._layouts import layout_scenarios

    scenarios = layout_scenarios([BY_NAME[name] for name in LAYOUT_SCENARIOS])
    assert len(scenarios) >= 20
    report = test_differentiation([backend], scenarios, threads=8)  # raises on any wrong number
    assert set(_statuses(report)) == {"pass", "refused"}


@pytest.mark.parametrize("backend", _layout_backends() + ([di.AutoJAX()] if HAS_JAX else []), ids=repr)
def test_empty_complex_arrays(backend):
    xp = namespace_of(backend)
    z, t = np.zeros(0, complex), np.zeros(0, complex)
    assert di.gradient(lambda v: xp.sum(xp.abs(v) ** 2), backend, z).shape == (0,)
    assert di.jacobian(lambda v: v**2, backend, z).shape == (0, 0)
    assert di.pushforward(lambda v: v**2, backend, z, t).dtype == np.complex128
    assert di.pullback(lambda v: v**2, backend, z, t).shape == (0,)
    assert di.jacobian(lambda s: xp.exp(1j * s), backend, np.zeros(0)).dtype == np.complex128
