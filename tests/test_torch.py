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
from diface._optable import OPERATORS
from diface.testing import default_scenarios, edge_scenarios, layout_scenarios, namespace_of
from diface.testing._check import SECOND_ORDER, check_operator, tolerances

torch = pytest.importorskip("torch")

import diface._derive._sweep as sweep  # noqa: E402  (after the skip: they are only useful with torch)
from diface.backends.torch import _batching as batching  # noqa: E402

AUTO, REVERSE, FORWARD = di.AutoTorch(), di.AutoTorch("reverse"), di.AutoTorch("forward")
FD = di.AutoFiniteDiff()
SCENARIOS = {s.name: s for s in default_scenarios()}
COMBINATIONS = [
    di.SecondOrder(FORWARD, REVERSE),  # forward over reverse
    di.SecondOrder(REVERSE, FORWARD),  # reverse over forward
    di.SecondOrder(REVERSE, REVERSE),  # reverse over reverse
    di.SecondOrder(FORWARD, FORWARD),  # forward over forward (nested torch.func.jvp)
    di.SecondOrder(FD, REVERSE),  # finite differences over torch
]


def force_batching(monkeypatch, strategy: str) -> None:
    """Batches of products one at a time ("loop") or through vmap wherever f allows it ("vmap"), instead of
    as preparation's timing decides: the documented way, monkeypatching `batching.vmap_threshold`."""
    if strategy == "loop":
        threshold = lambda trial: batching.INF
    else:
        threshold = lambda trial: 2 if trial is None or trial.vmap_works() else batching.INF
    monkeypatch.setattr(batching, "vmap_threshold", threshold)


# -- the whole test kit ------------------------------------------------------------------------------
@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases([FORWARD, REVERSE], False))
def test_every_operator_in_each_forced_mode(backend, scenario, op):  # "auto": tests/test_operators.py
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
    force_batching(monkeypatch, strategy)
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
    """Bases larger than a chunk are swept chunk by chunk on one linearization, and bases whose identity
    is larger than the result build their seeds per call (the core's memory budget, shrunk here to
    sizes a test can afford)."""
    force_batching(monkeypatch, strategy)
    monkeypatch.setattr(sweep, "MIN_BUDGET", 30)
    x = torch.linspace(-1.0, 1.5, 7, dtype=torch.float64)
    calls = []

    def sines(x):
        calls.append(None)
        return torch.sin(x)

    for backend in (AUTO, REVERSE, FORWARD, *COMBINATIONS[:4]):
        if not isinstance(backend, di.SecondOrder):
            prep = di.prepare_jacobian(sines, backend, x)
            calls.clear()
            assert torch.allclose(prep(x), torch.diag(torch.cos(x)))
            assert len(calls) == 1 or backend is not REVERSE  # one forward pass per call in reverse mode
            assert torch.allclose(di.jacobian(lambda x: torch.sin(x[:3]), backend, x), torch.diag(torch.cos(x))[:3])
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
    force_batching(monkeypatch, strategy)
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


# -- tensors as users hold them: layouts, autograd state, inference tensors, grad modes ---------------
D = torch.float64


def _held(v):
    """The ways a user may hold the values of `v` (each a maker of a new tensor): views with strides of
    their own, a view whose elements share memory (its values: `v`'s first row repeated), tensors that
    require grad or are views of one that does, inference tensors (made under inference_mode; one made
    under no_grad is an ordinary tensor)."""

    def sliced():
        big = torch.full((*v.shape[:-1], 2 * v.shape[-1]), float("nan"), dtype=v.dtype)
        big[..., ::2] = v
        return big[..., ::2]

    def inference():
        with torch.inference_mode():
            return v.clone()

    layouts = {"transposed": lambda: v.mT.contiguous().mT} if v.ndim >= 2 else {}
    if v.ndim >= 1:
        layouts["strided slice"] = sliced
    if v.ndim >= 1 and v.shape[0] > 1:
        layouts["expanded"] = lambda: v[:1].expand(v.shape)
    return {
        **layouts,
        "leaf requiring grad": lambda: v.clone().requires_grad_(),
        "view of a leaf requiring grad": lambda: (
            torch.cat([v.reshape(-1), v.reshape(-1)]).requires_grad_()[: v.numel()].view(v.shape)
        ),
        "inference tensor": inference,
    }


def _values(t):
    """A plain contiguous tensor with `t`'s values (an inference tensor's clone is an ordinary one)."""
    return t.detach().clone(memory_format=torch.contiguous_format)


def _state(t):
    return (_values(t), t.requires_grad, t.is_leaf, t.grad if t.is_leaf else None)


def _elementwise(x, c, buf):  # Constant c, Cache buf, all shaped like x
    buf.copy_(torch.sin(x))
    return buf * c + x**2


def _summed(x, c, buf):
    return torch.sum(_elementwise(x, c, buf) * x)


def _in_place(y, x, c, buf):
    y.copy_(_elementwise(x, c, buf))


#: operator: (function, x's shape, the tangent's kind)
LAYOUT_OPS = {
    "pushforward": (_elementwise, (3, 2), "tx"),
    "pullback": (_elementwise, (3, 2), "ty"),
    "jacobian": (_elementwise, (3, 2), None),
    "gradient": (_summed, (3, 2), None),
    "hessian": (_summed, (3, 2), None),
    "hvp": (_summed, (3, 2), "tx"),
    "derivative": (_elementwise, (), None),
    "second_derivative": (_elementwise, (), None),
}
ROLES = ["x", "tangent", "Constant", "Cache", "y", "out"]


def _layout_call(op, f, backend, args, kind, **kw):
    """`op` on the arguments `args` (x, a tangent if `kind`, a Constant, a Cache)."""
    extra = (args["tangent"],) if kind else ()
    return getattr(di, op)(f, backend, args["x"], *extra, di.Constant(args["Constant"]), di.Cache(args["Cache"]), **kw)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("backend", [REVERSE, FORWARD, *COMBINATIONS[:4]], ids=repr)
def test_every_operator_takes_tensors_as_users_hold_them(backend, role):
    """Each operator with one argument (x, a tangent, a context, y, out=) held in each way a user may
    hold it, prepared at another (plain) point (each call twice) and unprepared: the results of the same
    call on plain contiguous copies, no result requiring grad, the user's tensors as they were. An
    expanded y or out= cannot take a result: `ArgumentError`, with nothing written."""
    rng = torch.Generator().manual_seed(1)

    def randn(shape):
        return torch.randn(shape, generator=rng, dtype=D)

    for op, (f, shape, kind) in LAYOUT_OPS.items():
        if (isinstance(backend, di.SecondOrder) and op not in SECOND_ORDER) or (role == "tangent" and kind is None):
            continue
        if role == "y":
            if op not in ("pushforward", "pullback", "jacobian", "derivative"):
                continue
            f = _in_place
        y = (lambda shape=shape: {"y": torch.zeros(shape, dtype=D)}) if role == "y" else dict
        plain = {name: randn(shape) for name in ("x", "tangent", "Constant", "Cache")}
        result_shape = _layout_call(op, f, backend, plain, kind, **y()).shape
        prep = _layout_call(f"prepare_{op}", f, backend, {k: randn(shape) for k in plain}, kind, **y())
        base = {"y": torch.zeros(shape, dtype=D), "out": randn(result_shape)}.get(role, plain.get(role))
        for name, make in _held(base).items():
            args = dict(plain, **({role: make()} if role in plain else {}))
            want = _layout_call(op, f, backend, {k: _values(v) for k, v in args.items()}, kind, **y())
            before = {k: _state(v) for k, v in args.items() if k != "Cache"}
            for p in (prep, prep, None):
                where = f"{op}, {role} {name}, {'prepared' if p else 'unprepared'}"
                buffer = make() if role in ("y", "out") else None
                kw = {role: buffer} if buffer is not None else y()
                if name == "expanded" and role in ("y", "out"):
                    snapshot = _values(buffer)
                    with pytest.raises(di.ArgumentError, match="share memory"):
                        _layout_call(op, f, backend, args, kind, prep=p, **kw)
                    assert torch.equal(_values(buffer), snapshot), where
                    continue
                got = _layout_call(op, f, backend, args, kind, prep=p, **kw)
                assert torch.allclose(_values(got), want, rtol=1e-12, atol=1e-12), where
                if role == "out":
                    assert got is buffer, where
                else:
                    assert not got.requires_grad and got.grad_fn is None, where
                if role == "y":
                    value = _elementwise(_values(args["x"]), _values(args["Constant"]), torch.empty(shape, dtype=D))
                    assert torch.allclose(_values(buffer), value), where
            for k, state in before.items():
                after = _state(args[k])
                assert torch.equal(after[0], state[0]) and after[1:] == state[1:], f"{op}: {k} changed"


def _sines(x):
    return torch.sin(x) * x


def _sines_derivative(x):
    return torch.cos(x) * x + torch.sin(x)


def _sines_second_derivative(x):
    return 2 * torch.cos(x) - x * torch.sin(x)


def _diagonal(d, shape):
    return torch.diag(d.reshape(-1)).reshape(shape + shape)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("shape", [(), (0,), (1,), (2, 3, 2)], ids=["0-d", "(0,)", "(1,)", "3-d"])
@pytest.mark.parametrize("backend", [REVERSE, FORWARD, *COMBINATIONS[:4]], ids=repr)
def test_every_operator_on_edge_shapes_against_analytic_results(backend, shape, dtype):
    """0-d, empty, one-element and 3-d tensors, in float64 and float32, prepared at another point and
    unprepared, each call twice, against analytic results."""
    rng = torch.Generator().manual_seed(2)
    x, t = (torch.randn(shape, generator=rng, dtype=dtype) for _ in range(2))
    ty = torch.randn(shape, generator=rng, dtype=dtype)
    d, d2 = _sines_derivative(x), _sines_second_derivative(x)
    summed = lambda x: torch.sum(_sines(x))
    cases = {  # operator: (function, tangent, expected)
        "pushforward": (_sines, t, d * t),
        "pullback": (_sines, ty, d * ty),
        "jacobian": (_sines, None, _diagonal(d, shape)),
        "gradient": (summed, None, d),
        "hessian": (summed, None, _diagonal(d2, shape)),
        "hvp": (summed, t, d2 * t),
        "derivative": (_sines, None, d),
        "second_derivative": (_sines, None, d2),
    }
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for op, (f, tangent, want) in cases.items():
        if (isinstance(backend, di.SecondOrder) and op not in SECOND_ORDER) or (op.endswith("derivative") and shape):
            continue
        extra = () if tangent is None else (tangent,)
        prep = getattr(di, f"prepare_{op}")(f, backend, torch.randn(shape, generator=rng, dtype=dtype), *extra)
        for p in (prep, prep, None, None):
            got = getattr(di, op)(f, backend, x, *extra, prep=p)
            assert got.dtype == dtype and got.shape == want.shape and not got.requires_grad, op
            assert torch.allclose(got, want, **tolerance), op


@pytest.mark.parametrize("mode", [torch.no_grad, torch.inference_mode, torch.enable_grad])
@pytest.mark.parametrize("backend", [REVERSE, FORWARD, *COMBINATIONS[:4]], ids=repr)
def test_calls_under_no_grad_and_inference_mode(backend, mode):
    """Under torch.inference_mode() autograd records nothing (every derivative came out zero): diface
    leaves it for the call. Tensors made inside the mode, preparations made inside it and outside, all
    serve; each call twice."""
    x0, t0 = torch.tensor([0.4, -1.1, 0.8], dtype=D), torch.tensor([1.0, 0.5, -2.0], dtype=D)
    summed = lambda x: torch.sum(_sines(x))
    d, hessian = _sines_derivative(x0), torch.diag(_sines_second_derivative(x0))
    outside = di.prepare_hvp(summed, backend, x0 + 1, t0)
    results, wanted = [], []
    with mode():
        x, t = x0.clone(), t0.clone()  # inference tensors under inference_mode
        inside = di.prepare_hvp(summed, backend, x + 1, t)
        for _ in range(2):
            results += [
                di.hessian(summed, backend, x),
                *(di.hvp(summed, backend, x, t, prep=p) for p in (None, inside, outside)),
            ]
            wanted += [hessian, *[hessian @ t0] * 3]
            if not isinstance(backend, di.SecondOrder):
                results += [
                    di.jacobian(_sines, backend, x),
                    di.pushforward(_sines, backend, x, t),
                    di.gradient(summed, backend, x),
                ]
                wanted += [torch.diag(d), d * t0, d]
    for got, want in zip(results, wanted, strict=True):
        assert torch.allclose(got, want, rtol=1e-12)
        assert not got.requires_grad and not got.is_inference()


# NumPy arrays in every layout the test kit knows (transposed, Fortran order, reversed strides, strided
# slices, broadcast views, read-only), and its edge shapes: every operator in reverse mode, and in
# forward mode those that forward mode computes differently (the Jacobian sweeps)
LAYOUT_SCENARIOS = layout_scenarios(
    [SCENARIOS[n] for n in ("matrix to matrix, in place", "matrix to scalar", "vector to scalar, Constant contexts")]
)
KIT_LAYOUT_CASES = [
    pytest.param(backend, group, id=f"{backend!r}-{group}")
    for backend in (REVERSE, FORWARD)
    for group in ("layouts", "edges")
]


@pytest.mark.parametrize(("backend", "group"), KIT_LAYOUT_CASES)
def test_numpy_layouts_and_edge_shapes_of_the_test_kit(backend, group):
    scenarios = LAYOUT_SCENARIOS if group == "layouts" else edge_scenarios()
    failures = []
    for scenario in scenarios:
        for op in scenario.operators():
            if backend is FORWARD and op not in ("jacobian", "gradient", "derivative"):
                continue
            failures += check_operator(backend, scenario, op)
    assert not failures, "\n".join(map(str, failures))


# -- errors: what a user passes wrong is a diface error that says what to do ---------------------------
def test_tensors_diface_cannot_use_give_diface_errors_before_anything_is_written():
    x, t = torch.tensor([0.4, -1.1], dtype=D), torch.tensor([1.0, 0.5], dtype=D)
    meta = torch.empty(2, dtype=D, device="meta")
    square = lambda y, x: y.copy_(x**2)
    cases = [  # (error, message, call)
        (di.ArgumentError, "meta", lambda b: di.jacobian(torch.sin, b, meta)),
        (di.ArgumentError, "meta", lambda b: di.pushforward(torch.sin, b, x, meta)),
        (di.ArgumentError, "meta", lambda b: di.pullback(torch.sin, b, x, meta)),
        (di.ArgumentError, "meta", lambda b: di.jacobian(lambda x, c: x * c, b, x, di.Constant(meta))),
        (di.ArgumentError, "meta", lambda b: di.jacobian(square, b, x, y=meta)),
        (
            di.ArgumentError,
            "meta",
            lambda b: di.jacobian(torch.sin, b, x, out=torch.empty(2, 2, dtype=D, device="meta")),
        ),
        (  # a prepared call compares x's device with the preparation's (the plan's accept test)
            di.PreparationMismatchError,
            "device cpu at preparation, meta now",
            lambda b: di.prepare_jacobian(torch.sin, b, x)(meta),
        ),
        (
            di.PreparationMismatchError,
            "device cpu at preparation, meta now",
            lambda b: di.prepare_pushforward(torch.sin, b, x, t)(x, meta),
        ),
        (di.ArgumentError, "share memory", lambda b: di.jacobian(square, b, x, y=torch.zeros(1, dtype=D).expand(2))),
        (di.ArgumentError, "floating point", lambda b: di.jacobian(torch.sin, b, torch.tensor([1, 2]))),
        (di.ArgumentError, "floating point", lambda b: di.jacobian(lambda x: (x > 0).long(), b, x)),
        (di.ArgumentError, "dtype of x", lambda b: di.pushforward(torch.sin, b, x, t.to(torch.complex128))),
        (di.ArgumentError, "dtype of x", lambda b: di.pushforward(torch.sin, b, x, torch.tensor([1, 2]))),
        (
            di.PreparationMismatchError,
            "dtype",
            lambda b: di.prepare_pushforward(torch.sin, b, x, t)(x, torch.tensor([1, 2])),
        ),
    ]
    for backend in (REVERSE, FORWARD):
        for error, message, call in cases:
            with pytest.raises(error, match=message):
                call(backend)
    for buffer in (torch.zeros(1, 2, dtype=D).expand(2, 2), torch.empty(2, 2, dtype=D, device="meta")):
        snapshot = buffer.clone()
        with pytest.raises(di.ArgumentError, match=r"share memory|meta"):
            di.jacobian(torch.sin, REVERSE, x, out=buffer)
        assert buffer.is_meta or torch.equal(buffer, snapshot)


def test_closures_over_weights_that_require_grad_are_fine():
    w = torch.tensor([0.5, -2.0], dtype=D, requires_grad=True)
    x = torch.tensor([0.4, -1.1], dtype=D)
    for backend in (REVERSE, FORWARD, *COMBINATIONS[:4]):
        h = di.hessian(lambda x: torch.sum(w * x**3), backend, x)
        assert torch.allclose(h, torch.diag(6 * w * x)) and not h.requires_grad
        if not isinstance(backend, di.SecondOrder):
            j = di.jacobian(lambda x: w * x**3, backend, x)
            assert torch.allclose(j, torch.diag(3 * w * x**2)) and not j.requires_grad
    assert w.grad is None


# -- cross-engine: torch and finite differences on the same mathematics ----------------------------------
def _exp_sin(x):  # f(x) = sum(exp(sin x) * x): its gradient and (diagonal) Hessian
    e, s, c = np.exp(np.sin(x)), np.sin(x), np.cos(x)
    return e * (c * x + 1), np.diag(e * ((c * c - s) * x + 2 * c))


def _tanh_jacobian(x):  # g(x) = tanh(x[:3] * x[1:]) + x[:3] ** 2, a 3 x 4 Jacobian
    sech2 = 1 - np.tanh(x[:3] * x[1:]) ** 2
    jac = np.zeros((3, 4))
    jac[np.arange(3), np.arange(3)] = sech2 * x[1:] + 2 * x[:3]
    jac[np.arange(3), np.arange(1, 4)] = sech2 * x[:3]
    return jac


@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_torch_and_finite_differences_agree_with_the_analytic_derivatives(backend):
    """The same mathematics written in torch and NumPy: torch's results against the analytic
    derivatives at exact-engine tolerances, finite differences' at the tolerance their step allows
    (`tolerances`: 300 eps ** accuracy_exponent, of the second-order composition for second-order
    operators). Comparing the two directly held the exact engine to the differences' error (the
    README's command missed `atol=1e-7` by 1.1e-7 on another CPU)."""
    f_torch = lambda x: torch.sum(torch.exp(torch.sin(x)) * x)
    f_numpy = lambda x: np.sum(np.exp(np.sin(x)) * x)
    g_torch = lambda x: torch.tanh(x[:3] * x[1:]) + x[:3] ** 2
    g_numpy = lambda x: np.tanh(x[:3] * x[1:]) + x[:3] ** 2
    x, t, ty = np.array([0.3, -1.2, 0.7, 2.0]), np.array([1.0, 0.5, -0.5, 2.0]), np.array([1.0, -1.0, 0.5])
    grad, hess = _exp_sin(x)
    jac = _tanh_jacobian(x)
    fd2 = di.SecondOrder(FD, FD)
    cases = [  # operator, torch's result, finite differences' result, the analytic one
        ("gradient", di.gradient(f_torch, backend, x), di.gradient(f_numpy, FD, x), grad),
        ("jacobian", di.jacobian(g_torch, backend, x), di.jacobian(g_numpy, FD, x), jac),
        ("pushforward", di.pushforward(g_torch, backend, x, t), di.pushforward(g_numpy, FD, x, t), jac @ t),
        ("pullback", di.pullback(g_torch, backend, x, ty), di.pullback(g_numpy, FD, x, ty), ty @ jac),
        ("derivative", di.derivative(torch.sin, backend, 0.4), di.derivative(np.sin, FD, 0.4), np.cos(0.4)),
        ("hessian", di.hessian(f_torch, backend, x), di.hessian(f_numpy, fd2, x), hess),
        ("hvp", di.hvp(f_torch, backend, x, t), di.hvp(f_numpy, fd2, x, t), hess @ t),
        (
            "second_derivative",
            di.second_derivative(torch.sin, backend, 0.4),
            di.second_derivative(np.sin, fd2, 0.4),
            -np.sin(0.4),
        ),
    ]
    for op, mine, theirs, want in cases:
        assert np.allclose(mine, want, rtol=1e-12, atol=1e-12), op
        rtol, atol = tolerances(fd2 if op in SECOND_ORDER else FD, op)
        assert np.allclose(theirs, want, rtol=rtol, atol=atol), op


def test_finite_differences_work_on_tensors():
    """Tensors in, tensors out; each result against the analytic one at the tolerance of its step."""
    x = torch.tensor([0.3, -1.2, 0.7], dtype=torch.float64)
    f = lambda x: torch.sum(x**3)
    g = di.gradient(f, FD, x)
    assert type(g) is torch.Tensor and torch.allclose(g, 3 * x**2, *tolerances(FD, "gradient"))
    complex_step = di.AutoFiniteDiff("complex")
    jac = di.jacobian(torch.sin, complex_step, x)
    assert torch.allclose(jac, torch.diag(torch.cos(x)), *tolerances(complex_step, "jacobian"))
    over_torch = di.SecondOrder(FD, REVERSE)
    h = di.hessian(f, over_torch, x)
    assert type(h) is torch.Tensor and torch.allclose(h, torch.diag(6 * x), *tolerances(over_torch, "hessian"))


# -- the backend object --------------------------------------------------------------------------------
def test_backend_object():
    assert AUTO == di.AutoTorch("auto") and hash(AUTO) == hash(di.AutoTorch("auto")) and AUTO != REVERSE
    assert repr(FORWARD) == "AutoTorch(mode='forward')" and AUTO.label() == "AutoTorch()"
    assert di.check_available(REVERSE) and di.check_inplace(REVERSE) and di.check_inplace(FORWARD)
    assert di.check_inplace(di.SecondOrder(FD, REVERSE))
    assert namespace_of(REVERSE) is torch
    with pytest.raises(di.ArgumentError, match="mode must be 'auto', 'forward' or 'reverse'") as info:
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
