"""AutoTorch: every operator and variant on the default scenarios (both modes, and the same-engine
SecondOrder combinations), then what is specific to torch: tensors in and out without copies, NumPy in
and out, dtypes, independent prepared calls, Constants and Caches, inputs left intact, no graph left on
the user's tensors, both batching strategies, finite differences on tensors, availability."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

import diface as di
from conftest import assert_operator, operator_cases
from diface._prep import OPERATORS
from diface.testing import default_scenarios
from diface.testing._check import SECOND_ORDER, check_operator

torch = pytest.importorskip("torch")

import diface.backends.torch as torch_backend  # noqa: E402  (after the skip: it is only useful with torch)

REVERSE, FORWARD = di.AutoTorch(), di.AutoTorch("forward")
FD = di.AutoFiniteDiff()
SCENARIOS = {s.name: s for s in default_scenarios()}
COMBINATIONS = [
    di.SecondOrder(FORWARD, REVERSE),  # forward over reverse
    di.SecondOrder(REVERSE, FORWARD),  # reverse over forward
    di.SecondOrder(REVERSE, REVERSE),  # reverse over reverse
    di.SecondOrder(FORWARD, FORWARD),  # forward over forward (nested torch.func.jvp)
    di.SecondOrder(FD, REVERSE),  # finite differences over torch
]


# -- the whole test kit ------------------------------------------------------------------------------
@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases([FORWARD], False))
def test_every_operator_in_forward_mode(backend, scenario, op):  # reverse mode: tests/test_operators.py
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(COMBINATIONS, True))
def test_second_order_combinations(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize("strategy", ["loop", "vmap"])
@pytest.mark.parametrize(
    "backend", [REVERSE, FORWARD, *COMBINATIONS[:2], COMBINATIONS[3]], ids=lambda b: repr(b).replace(" ", "")
)
def test_both_batching_strategies(monkeypatch, strategy, backend):
    """Batches run one product at a time or through vmap (chosen by timing); force each in turn."""
    monkeypatch.setattr(torch_backend, "_FORCE_BATCHING", strategy)
    names = ["vector to vector", "vector to scalar", "vector to scalar, Cache context", "vector to vector, in place"]
    for scenario in (SCENARIOS[n] for n in names):
        for op in scenario.operators():
            if op in ("pushforward", "pullback", "jacobian", "hvp", "hessian", "gradient"):
                if isinstance(backend, di.SecondOrder) and op not in SECOND_ORDER:
                    continue
                failures = check_operator(backend, scenario, op)
                assert not failures, "\n".join(map(str, failures))


@pytest.mark.parametrize("strategy", ["loop", "vmap"])
def test_sweeps_in_chunks_with_seeds_made_per_call(monkeypatch, strategy):
    """Bases larger than a chunk are swept chunk by chunk, and bases too large to keep an identity for
    build their seeds per call (shrunk here to sizes a test can afford)."""
    monkeypatch.setattr(torch_backend, "_FORCE_BATCHING", strategy)
    monkeypatch.setattr(torch_backend, "_BASIS_CHUNK", 3)
    monkeypatch.setattr(torch_backend, "_CACHED_SEEDS_UP_TO", 4)
    x = torch.linspace(-1.0, 1.5, 7, dtype=torch.float64)
    for backend in (REVERSE, FORWARD, *COMBINATIONS[:4]):
        if not isinstance(backend, di.SecondOrder):
            assert torch.allclose(di.prepare_jacobian(torch.sin, backend, x)(x), torch.diag(torch.cos(x)))
        hessian = di.prepare_hessian(lambda x: torch.sum(x**3), backend, x)
        assert torch.allclose(hessian(x), torch.diag(6 * x))


def test_empty_inputs_and_outputs():
    empty = torch.zeros(0, dtype=torch.float64)
    for backend in (REVERSE, FORWARD):
        value, jac = di.value_and_jacobian(lambda x: torch.cat([x, torch.ones(2, dtype=x.dtype)]), backend, empty)
        assert torch.equal(value, torch.ones(2, dtype=torch.float64)) and jac.shape == (2, 0)
        value, g, h = di.value_gradient_and_hessian(lambda x: torch.sum(x) + 1.0, backend, empty)
        assert float(value) == 1.0 and g.shape == (0,) and h.shape == (0, 0)
        assert di.jacobian(lambda x: x[:0], backend, torch.ones(3, dtype=torch.float64)).shape == (0, 3)


# -- arrays: no copies in, the right type and dtype out ------------------------------------------------
def _sum_cubes(x):
    return torch.sum(x**3)


def _storages(calls: list):
    def f(x):
        calls.append(x.untyped_storage().data_ptr())
        return torch.sum(x**3)

    return f


@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_a_tensor_goes_in_without_a_copy_and_tensors_come_out(backend):
    x = torch.tensor([1.0, 2.0, -0.5], dtype=torch.float64)
    seen: list = []
    f = _storages(seen)
    g = di.gradient(f, backend, x)
    assert type(g) is torch.Tensor and torch.allclose(g, 3 * x**2)
    assert seen and all(ptr == x.untyped_storage().data_ptr() for ptr in seen[1:])  # seen[0]: f at preparation
    y, jac = di.value_and_jacobian(lambda x: x**2, backend, x)
    assert type(y) is torch.Tensor and type(jac) is torch.Tensor
    assert torch.equal(jac, torch.diag(2 * x))


@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_a_numpy_array_is_shared_with_torch_and_numpy_comes_out(backend):
    x = np.array([1.0, 2.0, -0.5])
    seen: list = []
    g = di.gradient(_storages(seen), backend, x)
    assert type(g) is np.ndarray and np.allclose(g, 3 * x**2)
    assert all(ptr == x.ctypes.data for ptr in seen)
    value, pulled = di.value_and_pullback(lambda x: x**2, backend, x, np.ones(3))
    assert type(value) is np.ndarray and type(pulled) is np.ndarray
    assert type(di.derivative(lambda t: t**2, backend, 3.0)) is np.float64  # scalar results are NumPy scalars
    assert not np.shares_memory(g, x)


def test_numpy_arrays_torch_cannot_share_are_copied():
    base = np.array([0.5, -1.0, 2.0, 0.25])
    read_only = base.copy()
    read_only.setflags(write=False)
    for x in (read_only, base[::-1], base.astype(">f8")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch warns when handed read-only memory
            g = di.gradient(_sum_cubes, REVERSE, x)
        assert np.allclose(g, 3 * np.asarray(x, dtype=float) ** 2)
    with pytest.raises(di.ArgumentError, match="no torch equivalent"):
        di.gradient(lambda x, c: torch.sum(x), REVERSE, base, di.Constant(np.array(["a", "b"])))


@pytest.mark.parametrize("backend", [REVERSE, FORWARD, *COMBINATIONS[:4]], ids=repr)
@pytest.mark.parametrize("numpy_input", [False, True], ids=["tensor", "numpy"])
def test_float32_stays_float32(backend, numpy_input):
    x32 = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    x = x32 if numpy_input else torch.from_numpy(x32.copy())
    want = np.float32 if numpy_input else torch.float32
    results = [
        di.hessian(_sum_cubes, backend, x),
        *di.gradient_and_hvp(_sum_cubes, backend, x, x),
        di.second_derivative(lambda t: t**3, backend, x[0]),
    ]
    if not isinstance(backend, di.SecondOrder):
        results += [
            di.gradient(_sum_cubes, backend, x),
            di.jacobian(torch.sin, backend, x),
            di.pushforward(torch.sin, backend, x, x),
            di.pullback(torch.sin, backend, x, x),
            di.derivative(torch.sin, backend, x[0]),
        ]
    for r in results:
        assert r.dtype == want
    assert np.allclose(np.asarray(results[0]), np.diag(6 * x32), rtol=1e-6)


def test_float64_in_float32_out_is_promoted_not_truncated():
    x = torch.tensor([1.0, 2.0], dtype=torch.float32)
    jac = di.jacobian(lambda x: x.double() ** 2, REVERSE, x)
    assert jac.dtype == torch.float64 and torch.equal(jac, torch.diag(2 * x.double()))


# -- prepared calls: independent, correct, no state carried over -----------------------------------
PREPARED_OPS = ["gradient", "jacobian", "hessian", "hvp", "pushforward", "pullback"]


@pytest.mark.parametrize(
    ("backend", "op"),
    [(b, op) for b in (REVERSE, FORWARD) for op in PREPARED_OPS]
    + [(b, op) for b in COMBINATIONS[:4] for op in PREPARED_OPS if op in SECOND_ORDER],
    ids=repr,
)
@pytest.mark.parametrize("numpy_input", [False, True], ids=["tensor", "numpy"])
def test_prepared_calls_at_different_points_are_independent(backend, op, numpy_input):
    scenario = SCENARIOS["vector to scalar"] if op in ("gradient", "hessian", "hvp") else SCENARIOS["vector to vector"]
    f = scenario.bind(torch)
    convert = (lambda a: np.asarray(a)) if numpy_input else (lambda a: torch.tensor(np.asarray(a)))
    rng = np.random.default_rng(3)
    points = [rng.standard_normal(4) for _ in range(2)]
    tangent_shape = scenario.y_shape if op == "pullback" else scenario.x_shape
    tangents = [rng.standard_normal(tangent_shape) for _ in range(2)]
    extra = () if op in ("gradient", "jacobian", "hessian") else (convert(tangents[0]),)
    prep = getattr(di, f"prepare_{op}")(f, backend, convert(scenario.prep_x), *extra)
    results = []
    for x, t in zip(points, tangents):
        args = () if not extra else (convert(t),)
        results.append(getattr(prep, op)(convert(x), *args))
    first = np.asarray(results[0]).copy()
    for x, t, r in zip(points, tangents, results):
        want = scenario.expected(op, x=x, tangents=(t,))[-1]
        want = want[0] if isinstance(want, tuple) else want
        assert np.allclose(np.asarray(r), want, rtol=1e-10, atol=1e-12)
    assert np.array_equal(np.asarray(results[0]), first)  # the second call left the first result alone


SAME_POINT_CASES = [
    pytest.param(b, s, op, id=f"{b!r}-{s.name}-{op}")
    for b in (REVERSE, FORWARD, *COMBINATIONS[:4])
    for s in SCENARIOS.values()
    for op in ("pushforward", "pullback", "hvp")
    if op in s.operators() and (op == "hvp" or not isinstance(b, di.SecondOrder))
]


@pytest.mark.parametrize(("backend", "scenario", "op"), SAME_POINT_CASES)
def test_same_point_preparations_on_every_scenario(backend, scenario, op):
    """Same-point preparations keep work from the preparation (a traced linearization, a recorded
    graph); calls at that point, with one tangent or several, plain or full, twice, stay right."""
    f = scenario.bind(torch)
    shape = scenario.y_shape if op == "pullback" else scenario.x_shape
    rng = np.random.default_rng(5)
    tangents = tuple(rng.standard_normal(shape) if shape else rng.standard_normal() for _ in range(2))
    y = (lambda: np.full(scenario.y_shape, np.nan)) if scenario.inplace else (lambda: None)
    kw = lambda: {} if y() is None else {"y": y()}
    x = np.array(scenario.x, copy=True) if np.ndim(scenario.x) else scenario.x
    for batch in (tangents[:1], tangents):
        extra = batch if len(batch) > 1 else batch[0]
        prep = getattr(di, f"prepare_{op}_same_point")(f, backend, x, extra, *scenario.make_contexts(), **kw())
        want = scenario.expected(op, tangents=batch)[-1]
        for _ in range(2):
            got = getattr(prep, op)(x, extra, *scenario.make_contexts(), **kw())
            got = got if len(batch) > 1 else (got,)
            assert all(np.allclose(g, w, rtol=1e-10, atol=1e-12) for g, w in zip(got, want))
            full = getattr(prep, OPERATORS[op].full_name)(x, extra, *scenario.make_contexts(), **kw())
            first = scenario.value() if op != "hvp" else scenario.expected("gradient")[0]
            assert np.allclose(full[0], first, rtol=1e-10, atol=1e-12)


def test_same_point_preparations_keep_the_graph_and_return_fresh_results():
    x = torch.tensor([0.3, -0.8, 1.4], dtype=torch.float64)
    f = lambda x: torch.sin(x) * x
    prep = di.prepare_pullback_same_point(f, REVERSE, x, (x, 2 * x))
    first = prep.value_and_pullback(x, (torch.ones(3, dtype=torch.float64), x))
    again = prep.value_and_pullback(x, (torch.ones(3, dtype=torch.float64), x))
    deriv = torch.cos(x) * x + torch.sin(x)
    assert torch.allclose(first[1][0], deriv) and torch.allclose(first[1][1], deriv * x)
    assert first[0] is not again[0] and first[0].untyped_storage().data_ptr() != again[0].untyped_storage().data_ptr()
    first[0].zero_()  # a caller may scribble on a result: the next call is unaffected
    assert torch.allclose(prep.value_and_pullback(x, (x, x))[0], f(x))
    g = lambda x: torch.sum(x**4)
    hvp = di.prepare_hvp_same_point(g, REVERSE, x, x)
    grad, hv = hvp.gradient_and_hvp(x, x)
    assert torch.allclose(grad, 4 * x**3) and torch.allclose(hv, 12 * x**2 * x)
    grad.zero_()
    assert torch.allclose(hvp.gradient_and_hvp(x, x)[0], 4 * x**3)


def test_same_point_inplace_pullback_writes_y_every_call():
    x = torch.tensor([0.3, -0.8, 1.4], dtype=torch.float64)

    def f(y, x):
        y[...] = x**2

    prep = di.prepare_pullback_same_point(
        f, REVERSE, x, torch.ones(3, dtype=torch.float64), y=torch.zeros(3, dtype=torch.float64)
    )
    for _ in range(2):
        y = torch.full((3,), float("nan"), dtype=torch.float64)
        value, pulled = prep.value_and_pullback(x, torch.ones(3, dtype=torch.float64), y=y)
        assert value is y and torch.equal(y, x**2) and torch.equal(pulled, 2 * x)


# -- contexts ----------------------------------------------------------------------------------------
def _scaled_sines(x, a, w):
    return a * torch.sum(w * torch.sin(x))


@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_constant_values_changed_between_prepared_calls_are_honoured(backend):
    x = torch.tensor([0.2, 0.7, -1.1], dtype=torch.float64)
    w = torch.ones(3, dtype=torch.float64)
    prep = di.prepare_gradient(_scaled_sines, backend, x, di.Constant(1.0), di.Constant(w))
    for a, scale in [(2.0, 1.0), (-0.5, 3.0), (4.0, -2.0)]:
        w.fill_(scale)  # the same tensor, changed in place, and a new Python number
        g = prep.gradient(x, di.Constant(a), di.Constant(w))
        assert torch.allclose(g, a * scale * torch.cos(x))
    hess = di.prepare_hessian(_scaled_sines, backend, x, di.Constant(1.0), di.Constant(w))
    h = hess.hessian(x, di.Constant(3.0), di.Constant(2 * w))
    assert torch.allclose(h, torch.diag(-3.0 * 2 * w * torch.sin(x)))


def _through_cache(x, buf):
    buf[...] = torch.sin(x)
    return buf * x


@pytest.mark.parametrize("backend", [REVERSE, FORWARD, *COMBINATIONS[:4]], ids=repr)
def test_caches_never_leak_their_contents_nor_keep_a_graph(backend):
    x = torch.tensor([0.4, -1.1, 0.8], dtype=torch.float64)
    jac_want = torch.diag(torch.cos(x) * x + torch.sin(x))
    scalar = lambda x, buf: torch.sum(_through_cache(x, buf))
    for garbage in (float("nan"), float("inf"), 1e300):
        buf = torch.full((3,), garbage, dtype=torch.float64)
        if not isinstance(backend, di.SecondOrder):
            assert torch.allclose(di.jacobian(_through_cache, backend, x, di.Cache(buf)), jac_want)
        hess = di.hessian(scalar, backend, x, di.Cache(torch.full((3,), garbage, dtype=torch.float64)))
        want = torch.diag(-torch.sin(x) * x + 2 * torch.cos(x))
        assert torch.allclose(hess, want)
        assert not buf.requires_grad and buf.grad_fn is None


# -- inputs and the user's tensors -------------------------------------------------------------------------
@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_inputs_and_their_autograd_state_are_left_intact(backend):
    x = torch.tensor([0.5, -0.25, 1.5], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)  # model weights, say
    t = torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64)
    snapshot = [a.detach().clone() for a in (x, w, t)]
    f = lambda x, w: torch.sum(w * x**3)
    g = di.gradient(f, backend, x, di.Constant(w))
    h = di.hessian(f, backend, x, di.Constant(w))
    pushed = di.pushforward(lambda x: w * x**2, backend, x, (t, 2 * t))
    pulled = di.pullback(lambda x: w * x**2, backend, x, (t, 2 * t))
    assert torch.allclose(g, 3 * w * x**2) and torch.allclose(h, torch.diag(6 * w * x))
    assert torch.allclose(pushed[1], 4 * w * x * t) and torch.allclose(pulled[0], 2 * w * x * t)
    for before, after in zip(snapshot, (x, w, t)):
        assert torch.equal(before, after)
    assert x.grad is None and w.grad is None and x.grad_fn is None
    for r in (g, h, *pushed, *pulled):
        assert not r.requires_grad  # results carry no graph


@pytest.mark.parametrize("strategy", ["loop", "vmap"])
@pytest.mark.parametrize("backend", [REVERSE, *COMBINATIONS[:4]], ids=repr)
def test_second_order_results_carry_no_graph_through_weights_that_require_grad(monkeypatch, strategy, backend):
    monkeypatch.setattr(torch_backend, "_FORCE_BATCHING", strategy)
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    x = torch.tensor([0.5, -0.25, 1.5], dtype=torch.float64)
    f = lambda x: torch.sum(w * x**3)
    value, g, h = di.value_gradient_and_hessian(f, backend, x)
    g2, hvs = di.gradient_and_hvp(f, backend, x, (x, 2 * x))
    y, d, d2 = di.value_derivative_and_second_derivative(lambda t: w * t**3, backend, x[0])
    assert torch.allclose(value, f(x)) and torch.allclose(g, 3 * w * x**2) and torch.allclose(g2, g)
    assert torch.allclose(h, torch.diag(6 * w * x)) and torch.allclose(hvs[1], 12 * w * x**2)
    assert torch.allclose(d, 3 * w * x[0] ** 2) and torch.allclose(d2, 6 * w * x[0])
    assert not any(r.requires_grad for r in (value, g, h, g2, *hvs, y, d, d2))
    assert w.grad is None


def test_works_under_no_grad_and_with_closures_over_weights():
    w = torch.tensor([2.0, -1.0], dtype=torch.float64, requires_grad=True)
    f = lambda x: torch.sum(w * torch.exp(x))
    x = torch.tensor([0.1, 0.2], dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(di.gradient(f, REVERSE, x), w * torch.exp(x))
        assert torch.allclose(di.hessian(f, REVERSE, x), torch.diag(w * torch.exp(x)))
        assert torch.allclose(di.pullback(torch.sin, REVERSE, x, x), torch.cos(x) * x)
    assert w.grad is None


@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_inplace_functions_write_into_tensor_and_numpy_outputs(backend):
    def f(y, x):
        y[...] = torch.sin(x) * 2

    x = torch.tensor([0.1, 0.9, -0.3], dtype=torch.float64)
    y = torch.full((3,), float("nan"), dtype=torch.float64)
    value, jac = di.value_and_jacobian(f, backend, x, y=y)
    assert value is y and torch.allclose(y, 2 * torch.sin(x)) and torch.allclose(jac, torch.diag(2 * torch.cos(x)))
    y_np = np.full(3, np.nan)
    pushed = di.pushforward(f, backend, x.numpy(), (np.ones(3), x.numpy()), y=y_np)
    assert np.allclose(y_np, 2 * np.sin(x.numpy())) and np.allclose(pushed[1], 2 * np.cos(x.numpy()) * x.numpy())


def test_functions_vmap_refuses_fall_back_to_a_loop():
    """`.item()` and a branch on its value: vmap cannot batch it, preparation notices and loops."""

    def branchy(x):
        return torch.sin(x) if x.sum().item() > 0 else torch.cos(x)

    x = torch.tensor([0.5, 1.0, 0.25], dtype=torch.float64)
    basis = tuple(torch.eye(3, dtype=torch.float64))
    for backend in (REVERSE, FORWARD):
        assert torch.allclose(di.jacobian(branchy, backend, x), torch.diag(torch.cos(x)))
        prep = di.prepare_pushforward(branchy, backend, x, basis)
        assert torch.allclose(torch.stack(prep.pushforward(x, basis)), torch.diag(torch.cos(x)))
        prep = di.prepare_pullback(branchy, backend, x, basis)
        assert torch.allclose(torch.stack(prep.pullback(x, basis)), torch.diag(torch.cos(x)))
    many = tuple(torch.randn(3, dtype=torch.float64) for _ in range(20))  # unprepared, large: tries vmap first
    for t, r in zip(many, di.pushforward(branchy, FORWARD, x, many)):
        assert torch.allclose(r, torch.cos(x) * t)


def test_out_buffers_are_tensors_of_the_result_dtype():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    buf = torch.empty(2, 2, dtype=torch.float64)
    assert di.jacobian(torch.sin, REVERSE, x, out=buf) is buf and torch.allclose(buf, torch.diag(torch.cos(x)))
    with pytest.raises(di.ArgumentError, match="dtype"):
        di.jacobian(torch.sin, REVERSE, x, out=torch.empty(2, 2, dtype=torch.float32))
    with pytest.raises(di.ArgumentError, match="torch arrays like x"):
        di.jacobian(torch.sin, REVERSE, x, out=np.empty((2, 2)))


# -- cross-engine: torch and finite differences on the same mathematics ----------------------------------
@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_agrees_with_finite_differences_on_every_operator(backend):
    f_torch = lambda x: torch.sum(torch.exp(torch.sin(x)) * x)
    f_numpy = lambda x: np.sum(np.exp(np.sin(x)) * x)
    g_torch = lambda x: torch.tanh(x[:3] * x[1:]) + x[:3] ** 2
    g_numpy = lambda x: np.tanh(x[:3] * x[1:]) + x[:3] ** 2
    x, t, ty = np.array([0.3, -1.2, 0.7, 2.0]), np.array([1.0, 0.5, -0.5, 2.0]), np.array([1.0, -1.0, 0.5])
    fd2 = di.SecondOrder(FD, FD)
    pairs = [
        (di.gradient(f_torch, backend, x), di.gradient(f_numpy, FD, x)),
        (di.jacobian(g_torch, backend, x), di.jacobian(g_numpy, FD, x)),
        (di.pushforward(g_torch, backend, x, t), di.pushforward(g_numpy, FD, x, t)),
        (di.pullback(g_torch, backend, x, ty), di.pullback(g_numpy, FD, x, ty)),
        (di.derivative(torch.sin, backend, 0.4), di.derivative(np.sin, FD, 0.4)),
        (di.hessian(f_torch, backend, x), di.hessian(f_numpy, fd2, x)),
        (di.hvp(f_torch, backend, x, t), di.hvp(f_numpy, fd2, x, t)),
        (di.second_derivative(torch.sin, backend, 0.4), di.second_derivative(np.sin, fd2, 0.4)),
    ]
    for mine, theirs in pairs:
        assert np.allclose(mine, theirs, rtol=1e-6, atol=1e-7)


def test_finite_differences_work_on_tensors():
    x = torch.tensor([0.3, -1.2, 0.7], dtype=torch.float64)
    f = lambda x: torch.sum(x**3)
    g = di.gradient(f, FD, x)
    assert type(g) is torch.Tensor and torch.allclose(g, 3 * x**2, rtol=1e-8)
    assert torch.allclose(di.jacobian(torch.sin, di.AutoFiniteDiff("complex"), x), torch.diag(torch.cos(x)))
    h = di.hessian(f, di.SecondOrder(FD, REVERSE), x)
    assert type(h) is torch.Tensor and torch.allclose(h, torch.diag(6 * x), rtol=1e-7)


# -- the backend object --------------------------------------------------------------------------------
def test_backend_object():
    assert REVERSE == di.AutoTorch("reverse") and hash(REVERSE) == hash(di.AutoTorch())
    assert repr(FORWARD) == "AutoTorch(mode='forward')"
    assert di.check_available(REVERSE) and di.check_inplace(REVERSE) and di.check_inplace(FORWARD)
    assert di.check_inplace(di.SecondOrder(FD, REVERSE))
    assert REVERSE.array_namespace() is torch
    with pytest.raises(di.ArgumentError, match="mode must be 'reverse' or 'forward'") as info:
        di.AutoTorch("sideways")
    assert isinstance(info.value, (TypeError, ValueError))
    with pytest.raises(di.ArgumentError, match="torch tensors, NumPy arrays and numbers"):
        di.gradient(_sum_cubes, REVERSE, "not an array")


def test_missing_torch_raises_naming_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *args, **kw: None if name == "torch" else real(name, *args, **kw)
    )
    assert not di.check_available(REVERSE)
    assert not di.check_available(di.SecondOrder(FD, REVERSE))
    with pytest.raises(di.BackendUnavailableError, match=r"pip install 'diface\[torch\]'") as info:
        di.gradient(_sum_cubes, REVERSE, np.ones(2))
    assert isinstance(info.value, ImportError)
    with pytest.raises(di.BackendUnavailableError, match=r"diface\[torch\]"):
        di.prepare_hessian(_sum_cubes, di.SecondOrder(FD, REVERSE), np.ones(2))
