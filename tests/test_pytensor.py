"""AutoPyTensor: every operator and variant in each mode and SecondOrder combination, then what is
specific to PyTensor: symbolic tracing, NumPy in and out, dtypes, compiled-function caching, contexts as
inputs or keyed constants, threads, errors, availability."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_operator, operator_cases

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt  # noqa: E402

# PyTensor compiles C code for every new graph (fused elementwise kernels are new per expression): over
# the kit and the generated matrices that is minutes on a cold compile cache. The suite runs PyTensor's
# own FAST_COMPILE mode (Python thunks, no C), as a user who wants compile time down would
# (PYTENSOR_FLAGS=mode=FAST_COMPILE); AutoPyTensor compiles with the configured mode, and
# test_the_default_c_mode runs the C code.
pytensor.config.mode = "FAST_COMPILE"

import diface as di  # noqa: E402
from diface.testing import default_scenarios  # noqa: E402

REVERSE, FORWARD = di.AutoPyTensor(), di.AutoPyTensor("forward")
FIRST_ORDER = [REVERSE, FORWARD]
SECOND_ORDER_BACKENDS = {
    "reverse over reverse": REVERSE,
    "forward over reverse": di.SecondOrder(FORWARD, REVERSE),
    "reverse over forward": di.SecondOrder(REVERSE, FORWARD),
    "forward over forward": di.SecondOrder(FORWARD, FORWARD),
}


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(FIRST_ORDER, False))
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(list(SECOND_ORDER_BACKENDS.values()), True))
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


# -- the kit beyond the default scenarios ----------------------------------------------------------


def _statuses(report) -> dict:
    counts: dict = {}
    for row in report.rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    return counts


def test_layouts_edges_and_structural_scenarios():
    """x, tangents and Constant arrays in every layout; 0-d, empty, 3-d, float32; the structural
    database's where / cat / narrow / clamp families."""
    from diface.testing import edge_scenarios, layout_scenarios, structural_scenarios, test_differentiation

    scenarios = layout_scenarios() + edge_scenarios()
    scenarios += structural_scenarios()
    report = test_differentiation([REVERSE], scenarios, operators=["jacobian", "pullback", "hessian"], threads=0)
    assert set(_statuses(report)) <= {"pass", "skip", "n/a"}, _statuses(report)


def test_tree_scenarios():
    from diface.testing import test_differentiation, tree_scenarios

    report = test_differentiation([REVERSE], tree_scenarios(), threads=0)
    assert report.ok


def test_eight_threads_on_one_preparation():
    """Calls on one preparation are serialized by a lock (a compiled pytensor.function holds its storage):
    8 threads x 500 calls, every result right."""
    from diface.testing import check_threads

    scenario = next(s for s in default_scenarios() if s.name == "vector to scalar")
    for op in ("gradient", "hessian"):
        failures = check_threads(REVERSE, scenario, op, threads=8, calls=500, switch_interval=None)
        assert not failures, "\n".join(map(str, failures))


# -- a function with analytic derivatives, for the engine-specific tests ---------------------------


def f(x):
    return pt.sum(pt.sin(x) * x**2)


def f_gradient(x):
    return 2 * x * np.sin(x) + x**2 * np.cos(x)


def f_hessian(x):
    return np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x))


def g(x):
    return pt.sin(x) * x[::-1]


def g_jacobian(x):
    return np.diag(np.cos(x) * x[::-1]) + np.diag(np.sin(x))[:, ::-1]


X = np.array([0.3, -1.2, 0.8, 2.0])
X2 = np.array([1.1, 0.4, -0.7, -1.5])
V = np.array([1.0, -2.0, 0.5, 3.0])


def close(a, b, tol=1e-12):
    return np.allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_analytic_values_numpy_in_numpy_out_and_dtypes():
    for backend in (REVERSE, FORWARD):
        assert close(di.jacobian(g, backend, X), g_jacobian(X))
    grad = di.gradient(f, REVERSE, X)
    assert type(grad) is np.ndarray and grad.dtype == np.float64 and close(grad, f_gradient(X))
    assert close(di.hessian(f, REVERSE, X), f_hessian(X))
    assert close(di.hvp(f, REVERSE, X, V), f_hessian(X) @ V)
    x32 = X.astype(np.float32)
    g32 = di.gradient(f, REVERSE, x32)
    assert g32.dtype == np.float32 and close(g32, f_gradient(X), 1e-5)


def test_the_default_c_mode():
    with pytensor.config.change_flags(mode="FAST_RUN"):
        prep = di.prepare_hessian(f, REVERSE, X)
        assert close(prep.hessian(X2), f_hessian(X2))
        assert close(di.pullback(g, REVERSE, X, (V, 2 * V)), (V @ g_jacobian(X), 2 * V @ g_jacobian(X)))


def test_prepared_at_one_point_used_at_another_is_one_compiled_call():
    prep = di.prepare_hessian(f, REVERSE, X)
    for _ in range(2):
        assert close(prep.hessian(X2), f_hessian(X2))
    jprep = di.prepare_jacobian(g, FORWARD, X)
    assert close(jprep.jacobian(X2), g_jacobian(X2))


def test_a_constant_is_an_input_of_the_compiled_function():
    from diface.backends.pytensor import _compile

    h = lambda x, c: pt.sum(c * x**2)
    prep = di.prepare_gradient(h, REVERSE, X, di.Constant(np.ones(4)))
    before = {k: dict(v) for k, v in _compile._cache.items()}
    for c in (np.ones(4), 2 * np.ones(4), V):
        assert close(prep.gradient(X2, di.Constant(c)), 2 * c * X2)
    assert {k: dict(v) for k, v in _compile._cache.items()} == before  # nothing compiled again
    # a number is a constant of the graph, keyed: another value is traced once more, and right
    k = lambda x, s: s * pt.sum(x**2)
    kprep = di.prepare_gradient(k, REVERSE, X, di.Constant(2.0))
    assert close(kprep.gradient(X, di.Constant(3.0)), 6 * X)
    assert close(kprep.gradient(X, di.Constant(2.0)), 4 * X)


def test_unprepared_calls_reuse_compiled_functions():
    from diface.backends.pytensor import _compile

    di.gradient(f, REVERSE, X)
    entries = len(_compile._cache[f])
    for _ in range(3):
        di.gradient(f, REVERSE, X2)
    assert len(_compile._cache[f]) == entries


def test_clear_errors():
    with pytest.raises(di.NotSupportedError, match="in-place"):
        di.jacobian(lambda y, x: None, REVERSE, X, y=np.zeros(4))

    def branches(x):
        if x[0] > 0:
            return pt.sum(x)
        return -pt.sum(x)

    with pytest.raises(di.NotSupportedError, match="traced symbolically"):
        di.gradient(branches, REVERSE, X)
    torch = pytest.importorskip("torch")
    with pytest.raises(di.ArgumentError, match="NumPy"):
        di.gradient(f, REVERSE, torch.tensor(X))
    with pytest.raises(di.ArgumentError, match="mode"):
        di.AutoPyTensor("sideways")


def test_complex_intermediates_as_real_pairs():
    """PyTensor's complex gradients are broken; complex values inside f are rewritten as real pairs."""
    z = X + 1j * X2
    loss = lambda z: pt.sum(pt.real(z * pt.conj(z)) ** 2) / 4 + 0.1 * pt.real(pt.sum(z)) ** 2
    assert close(di.gradient(loss, REVERSE, z), np.abs(z) ** 2 * z + 0.2 * np.sum(z.real))
    t = np.complex128(0.3 + 0.2j)
    curve = lambda t: pt.stack([pt.sin(t), t**2, pt.exp(t)])
    assert close(di.derivative(curve, REVERSE, t), [np.cos(t), 2 * t, np.exp(t)])
    with pytest.raises(di.NotSupportedError, match="complex op"):
        di.gradient(lambda z: pt.sum(pt.real(pt.tanh(z))), REVERSE, z)


def test_missing_package_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pytensor" else real(name, *a))
    with pytest.raises(di.BackendUnavailableError, match=r"diface\[pytensor\]"):
        di.gradient(f, di.AutoPyTensor(), X)


def test_inverse_products_dense_and_krylov():
    for method in ("dense", "krylov"):
        dx = di.inverse_pushforward(g, REVERSE, X, V, method=method)
        assert close(g_jacobian(X) @ dx, V, 1e-8)
        dy = di.inverse_pullback(g, REVERSE, X, V, method=method)
        assert close(g_jacobian(X).T @ dy, V, 1e-8)


def test_second_order_with_another_engine_inside_is_refused_clearly():
    with pytest.raises(di.NotSupportedError, match="DifferentiateWith"):
        di.hessian(f, di.SecondOrder(REVERSE, di.AutoFiniteDiff()), X)


def test_sparsity_tracer_patterns_and_sparse_results():
    A = np.zeros((3, 4))
    A[0, 1], A[1, 0], A[2, 3] = 1.0, 2.0, 3.0
    funcs = {
        "shifted": (lambda x: x[1:] ** 2 - x[:-1], 6),
        "constant matrix": (lambda x: pt.tanh(pt.matmul(pt.as_tensor(A), x)), 3),
        "stack, where, concatenate": (
            lambda x: pt.concatenate([pt.stack([x[0] * x[1], pt.sum(x)]), pt.where(x > 0, x**2, -x)]),
            10,
        ),
        "set_subtensor": (lambda x: pt.set_subtensor(x[1:3], x[2:4] ** 2), 4),
    }
    sparse = di.AutoSparse(REVERSE)
    for name, (h, nnz) in funcs.items():
        prep = di.prepare_jacobian(h, sparse, X)
        assert prep.sparsity_pattern.nnz == nnz, name
        assert close(prep.jacobian(X2).toarray(), di.jacobian(h, REVERSE, X2)), name
    chain = lambda x: pt.sum(x[1:] ** 2 * x[:-1]) + pt.sum(pt.exp(x))
    hprep = di.prepare_hessian(chain, di.AutoSparse(REVERSE), X)
    assert hprep.sparsity_pattern.nnz == 10  # tridiagonal
    assert close(hprep.hessian(X2).toarray(), di.hessian(chain, REVERSE, X2))
