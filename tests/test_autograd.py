"""AutoAutograd: every operator and variant in both modes and every same-engine SecondOrder composition,
then what is particular to autograd (arrays and dtypes, state between prepared calls, wrongly shaped
cotangents of autograd's own rules, missing JVP rules, batched forward pushes, nesting)."""

from __future__ import annotations

import importlib.util
import math
import warnings

import numpy as np
import pytest

from conftest import assert_operator, operator_cases

pytest.importorskip("autograd")

import autograd
import autograd.numpy as anp
import autograd.scipy.special as ag_special

import diface as di
from diface.testing import Scenario, default_scenarios, edge_scenarios, layout_scenarios
from diface.testing._check import SECOND_ORDER, check_operator
from diface.testing._kit import applicable

A = di.AutoAutograd
FD = di.AutoFiniteDiff
SO = di.SecondOrder
SCENARIOS = default_scenarios()

FIRST_ORDER = [A("forward")]  # A("reverse") runs in tests/test_operators.py
SECOND_ORDER_BACKENDS = [
    A("forward"),  # A("reverse") runs in tests/test_operators.py
    SO(A("forward"), A("reverse")),
    SO(A("reverse"), A("forward")),
    SO(A("reverse"), A("reverse")),
    SO(A("forward"), A("forward")),
    SO(FD(), A("reverse")),
]


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(FIRST_ORDER, False))
def test_first_order_scenarios(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(SECOND_ORDER_BACKENDS, True))
def test_second_order_scenarios(backend, scenario, op):
    assert_operator(backend, scenario, op)


def _constant_into_cache(xp, x, buf):
    buf[...] = 3.0  # a write that does not depend on x: autograd traces it as a constant
    return xp.sum(xp.sin(x) * buf)


CACHE_READ = Scenario(
    "vector to scalar, Cache written with a constant",
    _constant_into_cache,
    np.array([0.4, -1.1, 0.8, 1.7]),
    np.array([1.2, 0.3, -0.6, 0.9]),
    jacobian=lambda x, buf: 3.0 * np.cos(x),
    hessian=lambda x, buf: np.diag(-3.0 * np.sin(x)),
    contexts=(di.Cache(np.full(4, np.nan)),),
    prep_contexts=(di.Cache(np.full(4, np.nan)),),
)


@pytest.mark.parametrize("backend", [*FIRST_ORDER, SO(A("reverse"), A("reverse"))], ids=repr)
@pytest.mark.parametrize("op", CACHE_READ.operators())
def test_cache_that_f_only_writes_constants_into(backend, op):
    failures = check_operator(backend, CACHE_READ, op)
    assert not failures, "\n".join(map(str, failures))


# -- arrays, dtypes, availability ----------------------------------------------------------------------
def test_numpy_in_numpy_out_and_no_copy_of_x_or_contexts():
    seen = []

    def f(x, c):
        seen.append((autograd.tracer.getval(x), c))
        return anp.sum(x**2 * c)

    x, c = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 2.0])
    g = di.gradient(f, A(), x, di.Constant(c))
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, 2 * x * c, rtol=1e-14)
    assert seen and all(v is x and cc is c for v, cc in seen)  # f saw the caller's arrays themselves
    d = di.derivative(lambda t: anp.sin(t) * t, A(), 0.5)
    assert type(d) is np.float64 and d == pytest.approx(math.sin(0.5) + 0.5 * math.cos(0.5), rel=1e-14)
    assert type(di.jacobian(anp.sin, A(), [0.1, 0.2])) is np.ndarray  # a list goes in like an array


@pytest.mark.parametrize("backend", [A("reverse"), A("forward"), SO(A("reverse"), A("reverse"))], ids=repr)
def test_float32_stays_float32(backend):
    f = lambda x: anp.sum(anp.sin(x) * x**2)
    vec = lambda x: anp.tanh(x) * x[::-1]
    x64 = np.array([0.3, -1.2, 0.7])
    x = x64.astype(np.float32)
    t = np.float32([1.0, -2.0, 0.5])
    results = {
        "gradient": (di.gradient(f, backend, x), di.gradient(f, backend, x64)),
        "hessian": (di.hessian(f, backend, x), di.hessian(f, backend, x64)),
        "hvp": (di.hvp(f, backend, x, (t, t))[1], di.hvp(f, backend, x64, (t.astype(float),) * 2)[1]),
        "jacobian": (di.jacobian(vec, backend, x), di.jacobian(vec, backend, x64)),
        "pushforward": (di.pushforward(vec, backend, x, (t, t))[0], di.pushforward(vec, backend, x64, t.astype(float))),
        "pullback": (di.pullback(vec, backend, x, t), di.pullback(vec, backend, x64, t.astype(float))),
        "derivative": (di.derivative(anp.sin, backend, np.float32(0.3)), di.derivative(anp.sin, backend, 0.3)),
        "second_derivative": (
            di.second_derivative(anp.sin, backend, np.float32(0.3)),
            di.second_derivative(anp.sin, backend, 0.3),
        ),
    }
    for name, (single, double) in results.items():
        assert single.dtype == np.float32, name
        np.testing.assert_allclose(single, double, rtol=2e-6, atol=2e-6, err_msg=name)


def test_check_available_and_inplace():
    assert di.check_available(A()) and di.check_available(A("forward"))
    assert not di.check_inplace(A()) and not di.check_inplace(SO(FD(), A()))


def test_missing_package_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "autograd" else real(name, *a))
    assert not di.check_available(A())
    with pytest.raises(di.BackendUnavailableError, match=r"pip install 'diface\[autograd\]'") as info:
        di.gradient(lambda x: anp.sum(x), A(), np.ones(2))
    assert isinstance(info.value, ImportError)


def test_fields_are_validated_and_backends_are_values():
    with pytest.raises(di.ArgumentError, match="'forward' or 'reverse'"):
        A("sideways")
    assert A() == A("reverse") and hash(A()) == hash(A("reverse")) and A() != A("forward")
    assert repr(A("forward")) == "AutoAutograd(mode='forward')"


def test_inplace_functions_and_other_arrays_are_refused():
    def square_into(y, x):
        y[...] = x**2

    with pytest.raises(di.NotSupportedError, match="in-place"):
        di.jacobian(square_into, A(), np.ones(2), y=np.zeros(2))
    with pytest.raises(di.ArgumentError, match="NumPy arrays"):
        di.gradient(lambda x: x, A(), object())


def test_writing_x_into_a_cache_is_a_clear_error():
    def f(x, buf):
        buf[...] = x**2
        return anp.sum(buf)

    with pytest.raises(di.NotSupportedError, match="cannot trace item assignment") as info:
        di.gradient(f, A(), np.ones(3), di.Cache(np.zeros(3)))
    assert isinstance(info.value.__cause__, ValueError)


def test_outer_autograd_over_another_engine_is_refused():
    with pytest.raises(di.NotSupportedError, match="only differentiate what autograd computes"):
        di.hessian(lambda x: np.sum(x**3), SO(A(), FD()), np.ones(2))


# -- state between prepared calls ----------------------------------------------------------------------
def _cubic(x, a, w):
    return a * anp.sum(w * x**3)


def _cubic_gradient(x, a, w):
    return 3 * a * w * x**2


@pytest.mark.parametrize("backend", [A("reverse"), A("forward")], ids=repr)
def test_prepared_calls_are_independent_and_honour_new_constants(backend):
    x0, x1, x2 = np.zeros(3), np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.4, -1.5])
    w0, w1, w2 = np.ones(3), np.array([2.0, 0.5, -1.0]), np.array([-1.0, 3.0, 0.25])
    ctx = lambda a, w: (di.Constant(a), di.Constant(w))
    grad = di.prepare_gradient(_cubic, backend, x0, *ctx(1.0, w0))
    jac = di.prepare_jacobian(lambda x, a, w: a * w * x**3, backend, x0, *ctx(1.0, w0))
    hess = di.prepare_hessian(_cubic, backend, x0, *ctx(1.0, w0))
    hvp = di.prepare_hvp(_cubic, backend, x0, (x0, x0), *ctx(1.0, w0))
    g1 = grad.gradient(x1, *ctx(2.0, w1))
    j1 = jac.jacobian(x1, *ctx(2.0, w1))
    h1 = hess.hessian(x1, *ctx(2.0, w1))
    v1 = hvp.hvp(x1, (w2, x2), *ctx(2.0, w1))
    kept = [a.copy() for a in (g1, j1, h1, *v1)]
    for a in (g1, j1, h1, *v1):
        a[...] = 1e9  # results belong to the caller: scribbling on them must not reach the next call
    g2 = grad.gradient(x2, *ctx(-0.5, w2))
    np.testing.assert_allclose(g2, _cubic_gradient(x2, -0.5, w2), rtol=1e-13)
    np.testing.assert_allclose(jac.jacobian(x2, *ctx(-0.5, w2)), np.diag(_cubic_gradient(x2, -0.5, w2)), rtol=1e-13)
    h2 = hess.hessian(x2, *ctx(-0.5, w2))
    np.testing.assert_allclose(h2, np.diag(6 * -0.5 * w2 * x2), rtol=1e-13)
    np.testing.assert_allclose(hvp.hvp(x2, (w1, x1), *ctx(-0.5, w2))[1], 6 * -0.5 * w2 * x2 * x1, rtol=1e-13)
    np.testing.assert_allclose(kept[0], _cubic_gradient(x1, 2.0, w1), rtol=1e-13)
    np.testing.assert_allclose(kept[1], np.diag(_cubic_gradient(x1, 2.0, w1)), rtol=1e-13)
    np.testing.assert_allclose(kept[2], np.diag(12 * w1 * x1), rtol=1e-13)
    np.testing.assert_allclose(kept[3], 12 * w1 * x1 * w2, rtol=1e-13)


@pytest.mark.parametrize("backend", [A("reverse"), A("forward")], ids=repr)
def test_inputs_are_never_mutated(backend):
    x = np.array([0.3, -1.2, 0.7])
    t = np.array([1.0, 2.0, -1.0])
    w = np.array([2.0, 0.5, -1.0])
    for a in (x, t, w):
        a.setflags(write=False)  # any write raises
    f = lambda x, w: anp.sum(w * anp.sin(x) * x)
    vec = lambda x, w: w * anp.sin(x)
    di.gradient(f, backend, x, di.Constant(w))
    di.hessian(f, backend, x, di.Constant(w))
    di.hvp(f, backend, x, (t, t), di.Constant(w))
    di.jacobian(vec, backend, x, di.Constant(w))
    di.pushforward(vec, backend, x, (t, t), di.Constant(w))
    di.pullback(vec, backend, x, t, di.Constant(w))
    di.pushforward(
        vec, backend, x, t, di.Constant(w), prep=di.prepare_pushforward_same_point(vec, backend, x, t, di.Constant(w))
    )
    np.testing.assert_array_equal(x, [0.3, -1.2, 0.7])


FLIP = np.eye(3)[::-1]


@pytest.mark.parametrize(
    ("fn", "jac"),
    [
        (lambda x: x, np.eye(3)),
        (lambda x: anp.reshape(x, (3,)), np.eye(3)),
        (lambda x: x + 0.0, np.eye(3)),
        (lambda x: x[::-1], FLIP),
    ],
    ids=["identity", "reshape", "add", "flip"],
)
@pytest.mark.parametrize("backend", [A("reverse"), A("forward")], ids=repr)
def test_results_never_alias_inputs_or_seeds(backend, fn, jac):
    """Identity-like rules hand back their tangent, or a view of a basis seed the preparation keeps."""
    x, t = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    prep = di.prepare_jacobian(fn, backend, x)
    for _ in range(2):
        got = prep.jacobian(x)
        np.testing.assert_array_equal(got, jac)
        got[...] = 7.0  # must not reach the seeds of the next call
        for r in (
            di.pushforward(fn, backend, x, t),
            di.pullback(fn, backend, x, t),
            di.pushforward(fn, backend, x, (t, t))[1],
        ):
            assert not np.shares_memory(r, t) and not np.shares_memory(r, x)
    np.testing.assert_array_equal(t, [4.0, 5.0, 6.0])
    assert di.gradient(lambda s: s, backend, np.float64(2.0)) == 1.0


# -- wrongly shaped cotangents of autograd's own rules -----------------------------------------------------
C3 = np.array([True, False, True])
ARR3 = np.array([1.0, 2.0, 3.0])
C23 = np.array([[True, False, True], [False, True, True]])


def scalar_where_sum(x):
    """A scalar x as a branch of np.where against an array: autograd's rule returns the cotangent with the
    output's shape (3,) for x's shape ()."""
    return anp.sum(anp.where(C3, anp.sin(x), ARR3) * 2.0)


def scalar_where_vector(x):
    return anp.where(C3, anp.sin(x), ARR3)


def vector_where_matrix(x):
    """x of shape (3,) broadcast against (2, 3)."""
    return anp.sum(anp.where(C23, anp.sin(x), 1.0) ** 2)


def vector_where_matrix_out(x):
    return anp.where(C23, x**2, 0.5)


def where_through_indexing(x):
    """The wrong shape reaches indexing and reshapes, where autograd fails outright."""
    return anp.sum(anp.reshape(anp.where(C3, anp.sin(x[0]), ARR3), (3, 1)) * ARR3[:, None])


def column_where(x):
    """x of shape (3, 1) against (3, 4): the cotangent must be summed over axis 1, keeping it."""
    return anp.sum(anp.where(np.arange(12).reshape(3, 4) % 3 == 0, x, 0.0) ** 3)


WHERE_BACKENDS = [
    *FIRST_ORDER,
    SO(A("forward"), A("reverse")),
    SO(A("reverse"), A("reverse")),
    SO(A("reverse"), A("forward")),
]


@pytest.mark.parametrize("backend", WHERE_BACKENDS, ids=repr)
def test_scalar_branch_of_where(backend):
    s = 0.5
    k = 2.0 * C3.sum()
    assert np.shape(di.gradient(scalar_where_sum, backend, s)) == ()
    assert di.derivative(scalar_where_sum, backend, s) == pytest.approx(k * math.cos(s), rel=1e-14)
    assert di.second_derivative(scalar_where_sum, backend, s) == pytest.approx(-k * math.sin(s), rel=1e-14)
    np.testing.assert_allclose(di.hessian(scalar_where_sum, backend, np.float64(s)), -k * math.sin(s), rtol=1e-14)
    assert di.pullback(scalar_where_sum, backend, s, 3.0) == pytest.approx(3 * k * math.cos(s), rel=1e-14)
    d = np.where(C3, math.cos(s), 0.0)
    np.testing.assert_allclose(di.jacobian(scalar_where_vector, backend, s), d, rtol=1e-14)
    np.testing.assert_allclose(di.pushforward(scalar_where_vector, backend, s, (2.0, -1.0))[1], -d, rtol=1e-14)
    assert di.pullback(scalar_where_vector, backend, s, ARR3) == pytest.approx(ARR3 @ d, rel=1e-14)
    np.testing.assert_allclose(di.second_derivative(scalar_where_vector, backend, s), np.where(C3, -math.sin(s), 0.0))


@pytest.mark.parametrize("backend", WHERE_BACKENDS, ids=repr)
def test_lower_rank_branch_of_where(backend):
    x = np.array([0.1, 0.2, 0.3])
    count = C23.sum(axis=0)
    gradient = count * 2 * np.sin(x) * np.cos(x)
    hessian = np.diag(count * 2 * np.cos(2 * x))
    np.testing.assert_allclose(di.gradient(vector_where_matrix, backend, x), gradient, rtol=1e-14)
    np.testing.assert_allclose(di.hessian(vector_where_matrix, backend, x), hessian, rtol=1e-13, atol=1e-15)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(di.hvp(vector_where_matrix, backend, x, v), hessian @ v, rtol=1e-13)
    jac = np.zeros((2, 3, 3))
    for i in range(2):
        for j in range(3):
            jac[i, j, j] = C23[i, j] * 2 * x[j]
    np.testing.assert_allclose(di.jacobian(vector_where_matrix_out, backend, x), jac, rtol=1e-14)
    ty = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(di.pullback(vector_where_matrix_out, backend, x, ty), np.tensordot(ty, jac, 2))
    np.testing.assert_allclose(di.pushforward(vector_where_matrix_out, backend, x, (v, x))[0], jac @ v)
    xc = np.array([[0.5], [-1.0], [2.0]])
    mask = (np.arange(12).reshape(3, 4) % 3 == 0).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(di.gradient(column_where, backend, xc), 3 * mask * xc**2, rtol=1e-14)
    np.testing.assert_allclose(di.hessian(column_where, backend, xc).reshape(3, 3), np.diag((6 * mask * xc).ravel()))


@pytest.mark.parametrize("backend", WHERE_BACKENDS, ids=repr)
def test_wrong_shape_reaching_indexing_and_reshape(backend):
    x = np.array([0.5, 1.0])
    k = (C3 * ARR3).sum()
    np.testing.assert_allclose(di.gradient(where_through_indexing, backend, x), [k * math.cos(0.5), 0.0], rtol=1e-14)
    np.testing.assert_allclose(di.hessian(where_through_indexing, backend, x), [[-k * math.sin(0.5), 0], [0, 0]])


# -- missing JVP rules ---------------------------------------------------------------------------------------
def erf_weighted(x):
    return anp.sum(ag_special.erf(x) * x)  # erf has a VJP but no JVP rule in autograd


def _erf_gradient(x):
    return np.array([math.erf(v) for v in x]) + x * 2 / math.sqrt(math.pi) * np.exp(-(x**2))


def _erf_hessian(x):
    return np.diag(4 / math.sqrt(math.pi) * np.exp(-(x**2)) * (1 - x**2))


X_ERF = np.array([0.3, -0.8, 1.1])


def test_forward_mode_without_a_jvp_rule_is_refused_at_preparation():
    for prepare, extra in [
        (di.prepare_gradient, ()),
        (di.prepare_jacobian, ()),
        (di.prepare_pushforward, (X_ERF,)),
        (di.prepare_pushforward_same_point, (X_ERF,)),
    ]:
        with pytest.raises(di.NotSupportedError, match=r"no forward-mode \(JVP\) rule for 'erf'.*mode='reverse'"):
            prepare(erf_weighted, A("forward"), X_ERF, *extra)
    with pytest.raises(di.NotSupportedError, match="'erf'"):  # unprepared: at the call
        di.pushforward(erf_weighted, A("forward"), X_ERF, X_ERF)
    with pytest.raises(di.NotSupportedError, match="reverse over reverse"):
        di.prepare_hessian(erf_weighted, SO(A("forward"), A("reverse")), X_ERF)
    with pytest.raises(di.NotSupportedError, match="reverse over reverse"):
        di.prepare_hvp(erf_weighted, SO(A("reverse"), A("forward")), X_ERF, X_ERF)


def test_reverse_mode_works_around_missing_jvp_rules():
    b = A("reverse")
    t1, t2 = np.array([1.0, 0.0, -2.0]), np.array([0.5, 3.0, 1.0])
    g = _erf_gradient(X_ERF)
    assert di.pushforward(erf_weighted, b, X_ERF, t1) == pytest.approx(g @ t1, rel=1e-14)
    np.testing.assert_allclose(di.pushforward(erf_weighted, b, X_ERF, (t1, t2)), (g @ t1, g @ t2), rtol=1e-14)
    prep = di.prepare_pushforward(erf_weighted, b, np.zeros(3), t1)
    for _ in range(2):
        assert prep.pushforward(X_ERF, t2) == pytest.approx(g @ t2, rel=1e-14)
    same = di.prepare_pushforward_same_point(erf_weighted, b, X_ERF, t1)
    assert same.pushforward(X_ERF, t2) == pytest.approx(g @ t2, rel=1e-14)
    hess = _erf_hessian(X_ERF)
    for backend in (b, A("forward"), SO(A("reverse"), A("reverse"))):  # plain backends fall back
        np.testing.assert_allclose(di.hessian(erf_weighted, backend, X_ERF), hess, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(di.hvp(erf_weighted, backend, X_ERF, (t1, t2)), (hess @ t1, hess @ t2), rtol=1e-13)
        prep = di.prepare_hvp_same_point(erf_weighted, backend, X_ERF, t1)
        np.testing.assert_allclose(prep.hvp(X_ERF, t2), hess @ t2, rtol=1e-13)
    d2 = di.second_derivative(lambda s: ag_special.erf(s), A(), 0.7)
    assert d2 == pytest.approx(-2 * 0.7 * 2 / math.sqrt(math.pi) * math.exp(-0.49), rel=1e-13)


# Pushforwards where autograd lacks JVP rules (mode="reverse"): elementwise primitives take their partial
# derivatives from their VJP rules; anything else goes through J row by row (pullbacks of the output
# basis). Nothing is recorded at a special cotangent: autograd's eigh skips its eigenvector terms at a
# zero one, which made pushforwards through eigenvectors zero.
EIGH_SHIFT = np.diag([1.0, 2.0, 4.0])
EIGH_WEIGHTS = np.array([1.0, -2.0, 0.5])


def eigenvector_weights(a, xp=anp):
    """Squared eigenvector entries (free of the sign choice), weighted: a vector output."""
    return (xp.linalg.eigh(a + a.T + EIGH_SHIFT)[1] ** 2) @ EIGH_WEIGHTS


def _pushforwards_every_way(fn, x, x_prep, tangents):
    """Single and batched pushforwards, unprepared, prepared at `x_prep` and at `x` itself, each call
    twice: a list of (how, results) to compare with the same reference."""
    b, t0 = A("reverse"), tangents[0]
    prep, batched = di.prepare_pushforward(fn, b, x_prep, t0), di.prepare_pushforward(fn, b, x_prep, tangents)
    same = di.prepare_pushforward_same_point(fn, b, x, tangents)
    got = []
    for _ in range(2):
        got.append(("unprepared", [di.pushforward(fn, b, x, t) for t in tangents]))
        got.append(("unprepared batch", list(di.pushforward(fn, b, x, tangents))))
        got.append(("prepared", [prep.pushforward(x, t) for t in tangents]))
        got.append(("prepared batch", list(batched.pushforward(x, tangents))))
        got.append(("same point", list(same.pushforward(x, tangents))))
        value, pushed = batched.value_and_pushforward(x, tangents)
        np.testing.assert_allclose(value, fn(x), rtol=1e-14)
        got.append(("value and", list(pushed)))
    return got


def test_pushforward_through_eigenvectors_against_jax():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    rng = np.random.default_rng(5)
    a, a_prep = 0.3 * rng.standard_normal((3, 3)), 0.3 * rng.standard_normal((3, 3))
    tangents = tuple(rng.standard_normal((3, 3)) for _ in range(3))
    want = [np.asarray(jax.jvp(lambda m: eigenvector_weights(m, jnp), (a,), (t,))[1]) for t in tangents]
    assert all(w.dtype == np.float64 for w in want)  # conftest turns on JAX's 64-bit mode
    assert min(np.abs(w).max() for w in want) > 0.05  # the reference is far from zero
    for how, got in _pushforwards_every_way(eigenvector_weights, a, a_prep, tangents):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=how)
    scalar = lambda m: anp.sum(eigenvector_weights(m) * np.array([1.0, 0.0, -1.0]))  # one row
    np.testing.assert_allclose(di.pushforward(scalar, A(), a, tangents[0]), want[0][0] - want[0][2], rtol=1e-10)


def test_second_order_through_eigenvectors_against_jax():
    """eigh has no JVP rule: plain backends fall back to reverse over reverse, whose inner backward pass
    meets the eigenvector cotangent at its value at x (nonzero here)."""
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    weights = np.array([1.0, 0.0, -1.0])
    rng = np.random.default_rng(6)
    a, a_prep, t = (0.3 * rng.standard_normal((3, 3)) for _ in range(3))
    want = np.asarray(jax.jvp(jax.grad(lambda m: jnp.sum(eigenvector_weights(m, jnp) * weights)), (a,), (t,))[1])
    assert np.abs(want).max() > 0.05
    fn = lambda m: anp.sum(eigenvector_weights(m) * weights)
    for backend in (A(), A("forward"), SO(A("reverse"), A("reverse"))):
        prep = di.prepare_hvp(fn, backend, a_prep, t)
        for _ in range(2):
            np.testing.assert_allclose(prep.hvp(a, t), want, rtol=1e-10, atol=1e-12, err_msg=repr(backend))
            hess = di.hessian(fn, backend, a).reshape(9, 9)
            np.testing.assert_allclose(hess @ t.ravel(), want.ravel(), rtol=1e-10, atol=1e-12, err_msg=repr(backend))


def test_pushforward_through_solve_and_inv_against_the_analytic_jacobian():
    m = np.array([[4.0, 1.0, 0.5], [0.2, 3.0, -1.0], [0.3, 0.1, 5.0]])
    b = np.array([1.0, -2.0, 0.5])
    solve = lambda x: anp.linalg.solve(m + anp.diag(x), b)
    inverse_row = lambda x: anp.linalg.inv(m + anp.diag(x))[0] * 2.0
    x, x_prep = np.array([0.3, -0.5, 0.8]), np.array([1.0, 0.2, -0.4])
    tangents = (np.array([1.0, 0.0, -2.0]), np.array([0.5, 3.0, 1.0]))
    k_inv = np.linalg.inv(m + np.diag(x))
    solve_jac = -k_inv * np.linalg.solve(m + np.diag(x), b)  # d/dx_i solve(K, b) = -K^-1 e_i z_i, z = K^-1 b
    inv_jac = -2.0 * k_inv[0][None, :] * k_inv.T  # d/dx_i (K^-1)[0] = -(K^-1)[0, i] (K^-1)[i]
    for fn, jac in ((solve, solve_jac), (inverse_row, inv_jac)):
        want = [jac @ t for t in tangents]
        for how, got in _pushforwards_every_way(fn, x, x_prep, tangents):
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=how)


ELEMENTWISE_WITHOUT_JVP = {
    "erf": lambda x: ag_special.erf(x) * x[::-1],
    "gammaln of an affine map": lambda x: ag_special.gammaln(2.0 * x + 3.0) + x,
    "hypot, both arguments broadcast": lambda x: anp.hypot(x[:, None], anp.sin(x)[None, :] + 1.0),
    "betainc in its last argument": lambda x: ag_special.betainc(2.0, 3.0, 0.5 + 0.4 * anp.tanh(x)),
    "logit of expit, then psi": lambda x: ag_special.logit(0.5 * ag_special.expit(x) + 0.2) * ag_special.psi(x + 2.0),
    "a scalar broadcast": lambda x: ag_special.erf(x[0]) * anp.arange(1.0, 4.0) + x,
}


@pytest.mark.parametrize("name", list(ELEMENTWISE_WITHOUT_JVP))
def test_elementwise_primitives_without_jvp_rules(name):
    fn = ELEMENTWISE_WITHOUT_JVP[name]
    x, x_prep = np.array([0.3, -0.8, 1.1]), np.array([0.5, 0.1, -0.6])
    rng = np.random.default_rng(len(name))
    tangents = tuple(rng.standard_normal(3) for _ in range(3))
    jac = di.jacobian(fn, A("reverse"), x)  # pullbacks of the output basis: VJP rules only
    np.testing.assert_allclose(jac, di.jacobian(fn, FD(), x), rtol=1e-6, atol=1e-7)
    want = [np.tensordot(jac, t, axes=1) for t in tangents]
    for how, got in _pushforwards_every_way(fn, x, x_prep, tangents):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14, err_msg=how)


def test_erf_partials_against_the_analytic_derivative():
    x = np.linspace(-2.0, 2.0, 50)
    t = np.cos(np.arange(50.0))
    want = 2 / math.sqrt(math.pi) * np.exp(-(x**2)) * t
    np.testing.assert_allclose(di.pushforward(ag_special.erf, A(), x, t), want, rtol=1e-14, atol=1e-16)


def test_pushforwards_without_jvp_rules_inside_an_outer_trace():
    """diface inside a function autograd differentiates: the partials and the rows are boxes."""
    m = np.array([[4.0, 1.0], [0.5, 3.0]])
    t = np.array([1.0, -0.5])
    for fn in (lambda x: ag_special.erf(x) * x, lambda x: anp.linalg.solve(m + anp.diag(x**2), x)):
        outer = lambda w, fn=fn: anp.sum(di.pushforward(fn, A(), w, t) ** 2)
        x = np.array([0.4, -0.7])
        np.testing.assert_allclose(autograd.grad(outer)(x), di.gradient(outer, FD(), x), rtol=1e-6, atol=1e-8)


# -- batched forward pushes -----------------------------------------------------------------------------------
BATCHED = {
    "broadcast outer product": (lambda x: anp.sin(x)[:, None] * anp.exp(x)[None, :], (3,)),
    "sum over an axis, kept": (lambda x: anp.sum(x**2, axis=1, keepdims=True) * x / (1.0 + x**2), (2, 3)),
    "sum over negative axes": (lambda x: anp.sum(anp.cos(x), axis=(-1, 0)) - anp.maximum(x, 0.1)[0, 0], (2, 3)),
    "reshape and index": (lambda x: anp.reshape(x, (2, 3))[1, ::2] ** 3 - x[0], (6,)),
    "subtract power divide": (lambda x: (x[1:] - x[:-1] ** 2) ** 2 / (x[1:] + 3.0), (5,)),
    "matmul (per tangent)": (lambda x: anp.tanh(np.arange(12.0).reshape(4, 3) / 10 @ x) + x[0] ** 2, (3,)),
    "where (per tangent)": (lambda x: anp.where(x > 0, anp.sqrt(anp.abs(x) + 1), x**2), (4,)),
    "scalar input": (lambda x: anp.stack([anp.sin(x), x**3, anp.exp(-x)]), ()),
}


@pytest.mark.parametrize("name", list(BATCHED))
def test_batched_pushes_match_reverse_mode(name):
    fn, shape = BATCHED[name]
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.0, 1.0, shape) if shape else np.float64(0.4)
    tangents = tuple(rng.standard_normal(shape) if shape else np.float64(rng.standard_normal()) for _ in range(5))
    jac = di.jacobian(fn, A("reverse"), x)  # rows by pullbacks: VJP rules only
    y_ndim = jac.ndim - len(shape)
    expected = [np.tensordot(jac, t, axes=len(shape)) for t in tangents]
    np.testing.assert_allclose(di.pushforward(fn, A(), x, tangents), expected, rtol=1e-13, atol=1e-14)
    one_by_one = [di.pushforward(fn, A(), x, t) for t in tangents]
    np.testing.assert_allclose(one_by_one, expected, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(di.jacobian(fn, A("forward"), x), jac, rtol=1e-13, atol=1e-14)
    assert jac.shape[:y_ndim] == np.shape(fn(x))


# -- complex intermediates (issue 23): the kit's scenarios run in tests/test_complex_intermediates.py ---------
def _z(x):
    return x[0] + 1j * x[1]


#: real functions through complex values: (f, its Jacobian, at a point x of shape (2,))
COMPLEX = {
    "|z|^2 (issue 23)": (lambda x: anp.real(_z(x) * anp.conj(_z(x))), lambda x: 2 * x),
    "conj, elementwise": (
        lambda x: anp.real(anp.conjugate(_z(x)) * (0.3 - 1.2j)),
        lambda x: np.array([0.3, -1.2]),  # Re((x0 - i x1)(0.3 - 1.2i)) = 0.3 x0 - 1.2 x1
    ),
    "abs": (lambda x: anp.abs(_z(x)), lambda x: x / np.hypot(*x)),
    "imag of a holomorphic exp": (
        lambda x: anp.imag(anp.exp(_z(x))),
        lambda x: np.exp(x[0]) * np.array([np.sin(x[1]), np.cos(x[1])]),
    ),
    "a real vector times a complex constant, then abs squared": (
        lambda x: anp.abs(x * (1.0 - 2.0j)) ** 2,
        lambda x: np.diag(10.0 * x),
    ),
}


@pytest.mark.parametrize("name", list(COMPLEX))
def test_forward_mode_through_complex_intermediates(name):
    """The batched push took an elementwise primitive's partial as its JVP rule at 1, right only for
    complex-linear rules; conj and abs are real-linear (J t = Re(t) J(1) + Im(t) J(1j))."""
    fn, jac = COMPLEX[name]
    x, x_prep = np.array([0.7, -1.3]), np.array([-0.4, 0.9])
    want = jac(x)
    tangents = (np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.5, -2.0]))
    expected = [np.tensordot(want, t, axes=1) for t in tangents]
    for how, got in _pushforwards_every_way(fn, x, x_prep, tangents):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14, err_msg=how)
    for mode in ("forward", "reverse", "auto"):
        np.testing.assert_allclose(di.jacobian(fn, A(mode), x), want, rtol=1e-13, atol=1e-14, err_msg=mode)


def test_issue_23_hessians_in_every_mode():
    fn = COMPLEX["|z|^2 (issue 23)"][0]
    x = np.array([0.7, -1.3])
    assert np.array_equal(autograd.hessian(fn)(x), 2 * np.eye(2))
    backends = [A(m) for m in ("forward", "reverse", "auto")]
    backends += [SO(A(outer), A(inner)) for outer in ("forward", "reverse") for inner in ("forward", "reverse")]
    for backend in backends:
        np.testing.assert_allclose(di.hessian(fn, backend, x), 2 * np.eye(2), atol=1e-14, err_msg=repr(backend))
        for v in (np.array([0.0, 1.0]), (np.array([0.0, 1.0]), np.array([1.0, 0.0]))):
            got = di.hvp(fn, backend, x, v)
            np.testing.assert_allclose(got, np.multiply(2, v), atol=1e-14, err_msg=repr(backend))


def test_complex_tangent_of_a_real_value_keeps_its_real_part():
    """autograd's JVP rule for np.linalg.norm of a complex array, sum(g * conj(x)) / norm, returns a
    complex tangent for the real norm; multiplied by a complex number its imaginary part made the
    real result wrong (autograd alone gives d|z|/dx1 = 0.2 here, not 0.8)."""
    from autograd.differential_operators import make_jvp

    fn = lambda x: anp.real(anp.linalg.norm(anp.stack([_z(x)])) * (1.0 + 1.0j))  # |z|
    x = np.array([0.6, 0.8])
    assert make_jvp(fn)(x)(np.array([0.0, 1.0]))[1] == pytest.approx(0.2)  # autograd's bug, still there?
    hess = (np.eye(2) - np.outer(x, x)) / 1.0  # |x| = 1
    for mode in ("forward", "reverse", "auto"):
        np.testing.assert_allclose(di.gradient(fn, A(mode), x), x, rtol=1e-14, err_msg=mode)
        np.testing.assert_allclose(di.hessian(fn, A(mode), x), hess, rtol=1e-13, atol=1e-15, err_msg=mode)
        np.testing.assert_allclose(di.pushforward(fn, A(mode), x, np.array([0.0, 1.0])), 0.8, rtol=1e-14)


def test_partials_from_vjp_rules_are_for_real_values_only():
    """erf has no JVP rule: its partials come from its VJP rule, whose complex convention is autograd's;
    through a complex erf, mode='forward' refuses and the others take J from pullbacks."""
    fn = lambda x: anp.real(ag_special.erf(_z(x)) * (0.5 - 2.0j))
    x = np.array([0.3, 0.4])
    d = 2 / math.sqrt(math.pi) * np.exp(-(_z(x) ** 2)) * (0.5 - 2.0j)
    want = np.array([d.real, (1j * d).real])
    with pytest.raises(di.NotSupportedError, match="erf"):
        di.gradient(fn, A("forward"), x)
    for mode in ("reverse", "auto"):
        np.testing.assert_allclose(di.gradient(fn, A(mode), x), want, rtol=1e-14, err_msg=mode)
    np.testing.assert_allclose(di.pushforward(fn, A(), x, (np.eye(2)[0], np.eye(2)[1])), want, rtol=1e-14)


def test_large_batches_are_pushed_in_chunks(monkeypatch):
    from diface.backends.autograd import _forward

    monkeypatch.setattr(_forward, "BATCH_ELEMENTS", 40)  # 4 tangents of 10 elements per push
    fn = lambda x: anp.sin(x) * anp.sum(x**2)
    x = np.linspace(-1.0, 1.0, 10)
    np.testing.assert_allclose(di.jacobian(fn, A("forward"), x), di.jacobian(fn, A(), x), rtol=1e-13)
    tangents = tuple(np.eye(10)[:7])
    np.testing.assert_allclose(di.pushforward(fn, A(), x, tangents), di.jacobian(fn, A(), x).T[:7], rtol=1e-13)


def test_rosenbrock_hessian_against_autograd():
    def rosenbrock(x):
        return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x = np.linspace(-1.2, 1.1, 30)
    expected = autograd.hessian(rosenbrock)(x)
    for backend in (A(), SO(A("reverse"), A("reverse")), SO(A("forward"), A("forward"))):
        np.testing.assert_allclose(di.hessian(rosenbrock, backend, x), expected, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(di.gradient(rosenbrock, A(), x), autograd.grad(rosenbrock)(x), rtol=1e-14)


# -- same-point preparations ---------------------------------------------------------------------------------
def test_same_point_preparations_reuse_the_trace():
    calls = []

    def f(x, w):
        calls.append(1)
        return w * anp.sin(x) * x[::-1]

    def loss(x, w):
        calls.append(1)
        return anp.sum(w * anp.sin(x) * x**2)

    x, w = np.array([0.3, -1.2, 0.7]), di.Constant(np.array([1.0, 2.0, -0.5]))
    t1, t2 = np.array([1.0, 0.0, 2.0]), np.array([-1.0, 1.0, 0.5])
    jac = di.jacobian(f, A(), x, w)
    hess = di.hessian(loss, A(), x, w)
    second = SO(A("reverse"), A("reverse"))
    cases = [
        (di.prepare_pushforward_same_point, f, A(), "pushforward", lambda t: jac @ t),
        (di.prepare_pullback_same_point, f, A(), "pullback", lambda t: t @ jac),
        (di.prepare_hvp_same_point, loss, A(), "hvp", lambda t: hess @ t),
        (di.prepare_hvp_same_point, loss, second, "hvp", lambda t: hess @ t),
    ]
    preps = [(prepare(fn, b, x, t1, w), prepare(fn, b, x, (t1, t2), w), op, want) for prepare, fn, b, op, want in cases]
    calls.clear()
    for single, batched, op, expected in preps:
        np.testing.assert_allclose(getattr(single, op)(x, t2, w), expected(t2), rtol=1e-13)
        np.testing.assert_allclose(getattr(batched, op)(x, (t2, t1), w), (expected(t2), expected(t1)), rtol=1e-13)
    assert not calls  # f was traced once, at preparation
    prep = preps[0][1]
    value, _ = prep.value_and_pushforward(x, (t1, t2), w)
    value[...] = 0.0  # the value handed out is a copy
    np.testing.assert_allclose(prep.value_and_pushforward(x, (t1, t2), w)[0], f(x, w.value), rtol=1e-14)


# -- nesting and odd functions ------------------------------------------------------------------------------
def test_diface_inside_a_function_autograd_differentiates():
    f = lambda x: anp.sum(anp.sin(x) * x**2)
    x = np.array([0.3, -1.2, 2.0])
    g = 2 * x * np.sin(x) + x**2 * np.cos(x)
    h = 2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x)
    for backend in (A("reverse"), A("forward")):
        outer = autograd.grad(lambda w, b=backend: anp.sum(di.gradient(f, b, w) ** 2))(x)
        np.testing.assert_allclose(outer, 2 * g * h, rtol=1e-13)


def test_output_independent_of_x_gives_zeros_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for backend in (A("reverse"), A("forward")):
            np.testing.assert_array_equal(di.gradient(lambda x: anp.sum(np.ones(3)), backend, np.ones(3)), np.zeros(3))
            np.testing.assert_array_equal(di.jacobian(lambda x: np.ones(2), backend, np.ones(3)), np.zeros((2, 3)))
            np.testing.assert_array_equal(di.hessian(lambda x: 2.0, backend, np.ones(2)), np.zeros((2, 2)))
            assert di.pushforward(lambda x: np.ones(2), backend, np.ones(3), (np.ones(3),) * 2)[0].shape == (2,)


def test_agrees_with_finite_differences_on_every_operator():
    f = lambda x: anp.sum(anp.exp(anp.sin(x)) * x) + x[0] * x[-1]
    vec = lambda x: anp.tanh(x[:3] * x[1:]) + x[0]
    x = np.array([0.3, -1.2, 0.7, 1.5])
    t, ty = np.array([1.0, -1.0, 0.5, 2.0]), np.array([0.3, 0.2, -1.0])
    for backend in (A("reverse"), A("forward")):
        for name, got, want in [
            ("gradient", di.gradient(f, backend, x), di.gradient(f, FD(), x)),
            ("jacobian", di.jacobian(vec, backend, x), di.jacobian(vec, FD(), x)),
            ("pushforward", di.pushforward(vec, backend, x, t), di.pushforward(vec, FD(), x, t)),
            ("pullback", di.pullback(vec, backend, x, ty), di.pullback(vec, FD(), x, ty)),
            ("hessian", di.hessian(f, backend, x), di.hessian(f, FD(), x)),
            ("hvp", di.hvp(f, backend, x, t), di.hvp(f, FD(), x, t)),
            ("derivative", di.derivative(anp.tanh, backend, 0.4), di.derivative(anp.tanh, FD(), 0.4)),
            (
                "second_derivative",
                di.second_derivative(anp.tanh, backend, 0.4),
                di.second_derivative(anp.tanh, FD(), 0.4),
            ),
        ]:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{backend!r} {name}")


# -- what users get wrong ---------------------------------------------------------------------------------
M3 = np.array([[2.0, 0.5, 0.0], [0.1, 3.0, -0.4], [0.0, 0.2, 1.5]])


def _assign_into_x(x):
    x[0] = 1.0
    return x * 2


def _assign_into_a_result(x):
    y = anp.sin(x)
    y[1] = 0.0
    return y


def _add_into_a_numpy_array(x):
    acc = np.zeros(3)
    acc += x
    return acc


def _array_of_traced_values(x):
    return np.array([x[0], x[1] ** 2, 1.0], dtype=float)


@autograd.extend.primitive
def _no_rules(x):
    return 2.0 * x


MISTAKES = {
    # plain NumPy on autograd's boxes: NumPy makes an object array of them (silently zero before)
    "np.dot": (lambda x: np.dot(M3, x), "autograd.numpy"),
    "np.stack": (lambda x: np.stack([x, x])[0], "autograd.numpy"),
    "np.asarray": (lambda x: np.asarray(x) * 2, "autograd.numpy"),
    "np.where": (lambda x: np.where(x > 0, x, 0.0), "autograd.numpy"),
    "np.clip": (lambda x: np.clip(x, 0.0, 1.0), "autograd.numpy"),
    "np.linalg.solve": (lambda x: np.linalg.solve(M3, x), "autograd.numpy"),
    "float()": (lambda x: x * float(anp.sum(x)), "autograd.numpy"),
    "assignment into x": (_assign_into_x, "item assignment"),
    "assignment into a result": (_assign_into_a_result, "item assignment"),
    "+= into a NumPy array": (_add_into_a_numpy_array, "in-place"),
    "np.array(..., dtype=float) of traced values": (_array_of_traced_values, "item assignment"),
    "a primitive without rules": (lambda x: _no_rules(x) + x, r"rule for '_no_rules'.*defvjp"),
}


@pytest.mark.parametrize("backend", [A("reverse"), A("forward")], ids=repr)
@pytest.mark.parametrize("name", list(MISTAKES))
def test_mistakes_in_f_are_diface_errors_that_say_what_to_do(name, backend):
    """Never a raw autograd or NumPy TypeError (nor a silently wrong result), and no out= buffer written."""
    fn, says = MISTAKES[name]
    x, t = np.array([0.3, -0.5, 0.7]), np.array([1.0, 2.0, -1.0])
    out = np.full((3, 3), -7.0)
    with pytest.raises(di.NotSupportedError, match=says) as info:
        di.jacobian(fn, backend, x, out=out)
    assert isinstance(info.value, TypeError) and isinstance(info.value, di.DifaceError)
    np.testing.assert_array_equal(out, -7.0)
    for prepare, call in [
        (lambda: di.prepare_jacobian(fn, backend, x), lambda p: p.jacobian(x, out=out)),
        (lambda: di.prepare_pushforward(fn, backend, x, t), lambda p: p.pushforward(x, t, out=out[0])),
        (lambda: di.prepare_pullback(fn, backend, x, t), lambda p: p.pullback(x, t, out=out[0])),
    ]:
        with pytest.raises(di.NotSupportedError, match=says):
            call(prepare())  # at preparation where it traces, else at the call
        np.testing.assert_array_equal(out, -7.0)


@pytest.mark.parametrize("backend", [A("reverse"), A("forward")], ids=repr)
def test_f_returning_none_is_an_argument_error(backend):
    def no_return(x):
        anp.sum(x**2)

    for op in (di.gradient, di.jacobian, di.hessian):
        with pytest.raises(di.ArgumentError, match="returned None"):
            op(no_return, backend, np.ones(3))
    with pytest.raises(di.ArgumentError, match="returned None"):
        di.pushforward(no_return, backend, np.ones(3), np.ones(3))


def test_missing_jvp_rule_message_says_when_reverse_mode_cannot_help_either():
    with pytest.raises(di.NotSupportedError, match=r"defjvp and defvjp, or differentiate with di\.AutoFiniteDiff"):
        di.pushforward(lambda x: _no_rules(x), A("forward"), np.ones(2), np.ones(2))
    with pytest.raises(di.NotSupportedError, match="mode='reverse'"):
        di.pushforward(lambda x: ag_special.erf(x), A("forward"), np.ones(2), np.ones(2))


# -- layouts and edge shapes -----------------------------------------------------------------------------------
LAYOUT_BACKENDS = [A("reverse"), A("forward"), SO(A("reverse"), A("reverse")), SO(A("reverse"), A("forward"))]


@pytest.mark.parametrize("backend", LAYOUT_BACKENDS, ids=repr)
def test_layouts_and_edge_shapes(backend):
    """Transposed, Fortran-ordered, reversed, strided, broadcast and read-only inputs, and 0-d, empty,
    one-element, 3-d and float32 ones: every operator against the analytic references (the second-order
    compositions: second-order operators)."""
    failures = []
    for scenario in layout_scenarios() + edge_scenarios():
        if applicable(backend, scenario):
            continue
        for op in scenario.operators():
            if isinstance(backend, di.SecondOrder) and op not in SECOND_ORDER:
                continue
            failures += check_operator(backend, scenario, op)
    assert not failures, "\n".join(map(str, failures))


# -- autograd's own rules that are wrong for some calls (found by tests/test_autograd_complex_suite.py) ------------
@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("n", [2, 6])
def test_rfft_with_n_by_keyword_pulls_back_like_by_position(mode, n):
    """autograd's rfft VJP reads n from a positional argument only: by keyword it scaled by x's length."""
    x = np.linspace(-1.0, 1.0, 16).reshape(4, 4) ** 2
    k = np.arange(n // 2 + 1)
    ty = np.outer(np.arange(1.0, 5.0), np.cos(k + 0.5) + 1j * np.sin(2 * k + 1))
    J = np.stack([np.fft.rfft(e.reshape(4, 4), n=n) for e in np.eye(16)], -1)  # the real Jacobian, by columns
    want = np.real(np.einsum("ijk,ij->k", np.conj(J), ty)).reshape(4, 4)  # its adjoint applied to ty
    for f in (lambda x: anp.fft.rfft(x, n=n), lambda x: anp.fft.rfft(x, n)):
        np.testing.assert_allclose(di.pullback(f, A(mode), x, ty), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_complex_cholesky_is_refused_not_wrong(mode):
    """autograd's cholesky VJP holds for real matrices only; the real case still works."""
    f = lambda x: anp.linalg.cholesky(x @ anp.conj(x.T) + 3 * anp.eye(2))
    z = np.array([[1.0 + 0.5j, 0.2], [-0.3j, 0.7 - 0.1j]])
    with pytest.raises(di.NotSupportedError, match="cholesky"):
        di.pullback(f, A(mode), z, np.ones((2, 2), complex))
    r = np.real(z)
    got = di.pullback(f, A(mode), r, np.tril(np.ones((2, 2))))
    np.testing.assert_allclose(got, di.pullback(f, FD(), r, np.tril(np.ones((2, 2)))), rtol=1e-6)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_rule_refusing_in_the_backward_pass_is_not_supported(mode):
    """autograd's diagonal VJP raises NotImplementedError as it runs (off the last two axes)."""
    f = lambda x: anp.diagonal(x, 1, 1, 2)
    with pytest.raises(di.NotSupportedError, match="diagonal"):
        di.pullback(f, A(mode), np.ones((3, 4, 5)), np.ones((3, 4)))
