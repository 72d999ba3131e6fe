"""AutoJAX: every operator and variant in each mode and SecondOrder combination, then what is
specific to JAX: native arrays in and out, dtypes, 64-bit mode, compilation (no retracing), contexts
as traced or static arguments, immutability, availability."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from conftest import assert_operator, operator_cases

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import diface as di  # noqa: E402
from diface.backends.jax import JaxOps  # noqa: E402
from diface.testing import default_scenarios  # noqa: E402

jax.config.update("jax_enable_x64", True)  # also done in conftest; the scenarios are float64

FORWARD, REVERSE = di.AutoJAX("forward"), di.AutoJAX("reverse")
FIRST_ORDER = [FORWARD, di.AutoJAX(jit=False)]  # REVERSE, the default, runs in tests/test_operators.py
# a plain AutoJAX() is SecondOrder(AutoJAX("forward"), AutoJAX("reverse")) for second-order operators
# (it also runs through every scenario in tests/test_operators.py, which tests/conftest.py lists it for)
SECOND_ORDER_BACKENDS = {
    "forward over reverse": di.SecondOrder(FORWARD, REVERSE),
    "reverse over forward": di.SecondOrder(REVERSE, FORWARD),
    "reverse over reverse": di.SecondOrder(REVERSE, REVERSE),
    "finite differences over reverse": di.SecondOrder(di.AutoFiniteDiff(), REVERSE),
    "plain, no jit": di.AutoJAX(jit=False),
}
SCENARIOS = default_scenarios()


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(FIRST_ORDER, False))
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(list(SECOND_ORDER_BACKENDS.values()), True))
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


# -- a function with analytic derivatives, for the engine-specific tests ---------------------------


def f(x):
    return jnp.sum(jnp.sin(x) * x**2)


def f_gradient(x):
    return 2 * x * np.sin(x) + x**2 * np.cos(x)


def f_hessian(x):
    return np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x))


def g(x):
    return jnp.sin(x) * x[::-1]


def g_jacobian(x):
    return np.diag(np.cos(x) * x[::-1]) + np.diag(np.sin(x))[:, ::-1]


X = np.array([0.3, -1.2, 0.8, 2.0])
X2 = np.array([1.1, 0.4, -0.7, -1.5])
V = np.array([1.0, -2.0, 0.5, 3.0])


def close(a, b, tol=1e-12):
    return np.allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# -- arrays: native stays native, NumPy gives NumPy, dtypes kept ----------------------------------


@pytest.mark.parametrize("backend", [REVERSE, FORWARD, di.AutoJAX(jit=False)], ids=repr)
def test_native_input_stays_native_without_conversion(backend, monkeypatch):
    x, v = jnp.asarray(X), jnp.asarray(V)
    preps = {
        "gradient": di.prepare_gradient(f, backend, x),
        "jacobian": di.prepare_jacobian(g, backend, x),
        "hessian": di.prepare_hessian(f, backend, x),
        "hvp": di.prepare_hvp(f, backend, x, (v, v)),
        "pushforward": di.prepare_pushforward(g, backend, x, v),
        "pullback": di.prepare_pullback_same_point(g, backend, x, v),
    }

    def no_conversion(*args, **kwargs):
        raise AssertionError("a JAX array was converted")

    monkeypatch.setattr(JaxOps, "asarray", no_conversion)
    monkeypatch.setattr(JaxOps, "to_numpy", no_conversion)
    results = {
        "gradient": (di.gradient(f, backend, x), preps["gradient"].gradient(x)),
        "jacobian": (di.jacobian(g, backend, x), preps["jacobian"](x)),
        "hessian": (di.hessian(f, backend, x), preps["hessian"](x)),
        "hvp": (di.hvp(f, backend, x, (v, v))[1], preps["hvp"](x, (v, v))[1]),
        "pushforward": (di.pushforward(g, backend, x, v), preps["pushforward"](x, v)),
        "pullback": (di.pullback(g, backend, x, v), preps["pullback"](x, v)),
    }
    expected = {
        "gradient": f_gradient(X),
        "jacobian": g_jacobian(X),
        "hessian": f_hessian(X),
        "hvp": f_hessian(X) @ V,
        "pushforward": g_jacobian(X) @ V,
        "pullback": V @ g_jacobian(X),
    }
    for name, pair in results.items():
        for r in pair:
            assert isinstance(r, jax.Array), name
            assert r.devices() == x.devices(), name
            assert close(r, expected[name]), name
    y, grad = preps["gradient"].value_and_gradient(x)
    assert isinstance(y, jax.Array) and isinstance(grad, jax.Array)


@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_prepared_calls_hand_numpy_straight_to_the_compiled_program(backend, monkeypatch):
    """A compiled program takes NumPy arguments itself (about a microsecond); converting them first
    with jnp.asarray cost 30 to 240 us per array."""
    scaled = lambda x, a: jnp.sum(a * jnp.sin(x) * x)
    preps = {
        "gradient": di.prepare_gradient(f, backend, X),
        "hvp": di.prepare_hvp(f, backend, X, V),
        "pushforward": di.prepare_pushforward(g, backend, X, (V, V)),
        "pullback": di.prepare_pullback_same_point(g, backend, X, V),
        "constant": di.prepare_gradient(scaled, backend, X, di.Constant(V)),
    }

    def no_conversion(*args, **kwargs):
        raise AssertionError("a NumPy array was converted before the compiled program")

    monkeypatch.setattr(JaxOps, "asarray", no_conversion)
    for _ in range(2):
        results = {
            "gradient": (preps["gradient"].gradient(X), di.gradient(f, backend, X, prep=preps["gradient"])),
            "hvp": (preps["hvp"].hvp(X, V), preps["hvp"].gradient_and_hvp(X, V)[1]),
            "pushforward": (preps["pushforward"](X, (V, V))[1],),
            "pullback": (preps["pullback"](X, V),),
            "constant": (preps["constant"](X, di.Constant(V)),),
        }
        expected = {
            "gradient": f_gradient(X),
            "hvp": f_hessian(X) @ V,
            "pushforward": g_jacobian(X) @ V,
            "pullback": V @ g_jacobian(X),
            "constant": V * (np.cos(X) * X + np.sin(X)),
        }
        for name, rs in results.items():
            for r in rs:
                assert type(r) is np.ndarray and r.flags.writeable, name
                assert close(r, expected[name]), name


def test_numpy_in_numpy_out_writable():
    b = di.AutoJAX()
    grad = di.gradient(f, b, X)
    y, jac = di.prepare_jacobian(g, b, X).value_and_jacobian(X)
    d = di.derivative(jnp.sin, b, 0.5)
    for r in (grad, y, jac):
        assert type(r) is np.ndarray and r.flags.writeable
    assert isinstance(d, np.float64) and close(d, np.cos(0.5))
    grad += 1.0  # results are the caller's to keep and modify
    assert close(grad - 1.0, f_gradient(X))


@pytest.mark.parametrize(
    ("backend", "native"),
    [(REVERSE, False), (FORWARD, True), (di.AutoJAX(jit=False), True)],
    ids=["reverse-numpy", "forward-jax", "no jit-jax"],
)
def test_float32_stays_float32(backend, native):
    x32, v32 = X.astype(np.float32), V.astype(np.float32)
    if native:
        x32, v32 = jnp.asarray(x32), jnp.asarray(v32)
    results = [
        di.gradient(f, backend, x32),
        di.prepare_gradient(f, backend, x32).value_and_gradient(x32)[0],
        di.jacobian(g, backend, x32),
        di.prepare_hessian(f, backend, x32)(x32),
        di.hvp(f, backend, x32, v32),
        di.pushforward(g, backend, x32, (v32, v32))[1],
        di.pullback(g, backend, x32, v32),
        di.second_derivative(jnp.sin, backend, x32[0]),
    ]
    for r in results:
        assert r.dtype == np.float32
        assert isinstance(r, jax.Array) if native else isinstance(r, (np.ndarray, np.generic))
    assert close(results[0], f_gradient(X), tol=1e-5)
    assert close(results[3], f_hessian(X), tol=1e-5)


def test_float64_without_x64_mode_says_how_to_enable_it():
    b = di.AutoJAX()
    with jax.enable_x64(False):
        for call in (
            lambda: di.gradient(f, b, X),
            lambda: di.prepare_gradient(f, b, X),
            lambda: di.derivative(jnp.sin, b, 0.5),  # a Python float is float64
            lambda: di.gradient(lambda x, w: jnp.sum(w * x), b, X.astype(np.float32), di.Constant(V)),
            lambda: di.pushforward(g, b, X.astype(np.float32), V),  # float64 tangent
        ):
            with pytest.raises(di.NotSupportedError, match="jax_enable_x64") as info:
                call()
            assert "JAX_ENABLE_X64=1" in str(info.value)
        grad = di.gradient(f, b, X.astype(np.float32))  # float32 needs no 64-bit mode
        assert grad.dtype == np.float32 and close(grad, f_gradient(X), tol=1e-5)


# -- preparation: compiled once, calls independent, Constants honoured -----------------------------


def test_prepared_calls_are_independent():
    for backend in (REVERSE, FORWARD):
        prep = di.prepare_gradient(f, backend, np.zeros(4))
        g1 = prep.gradient(X)
        g2 = prep.gradient(X2)
        assert close(g1, f_gradient(X)) and close(g2, f_gradient(X2))  # g1 untouched by the next call
        jprep = di.prepare_jacobian(g, backend, jnp.zeros(4))
        j1, j2 = jprep(jnp.asarray(X)), jprep(jnp.asarray(X2))
        assert close(j1, g_jacobian(X)) and close(j2, g_jacobian(X2))


def _counting(fn):
    """`fn` with a counter of how often JAX traced it (or Python ran it)."""
    calls = []

    def counted(*args):
        calls.append(1)
        return fn(*args)

    return counted, calls


def test_prepared_calls_do_not_trace_again():
    """Preparation compiles; a prepared call is a compiled dispatch that never runs f in Python."""
    x, v = jnp.asarray(X), jnp.asarray(V)
    fc, f_calls = _counting(f)
    gc, g_calls = _counting(g)
    b = di.AutoJAX()
    preps = [
        (di.prepare_gradient(fc, b, x), None),
        (di.prepare_hessian(fc, b, x), None),
        (di.prepare_hvp(fc, b, x, (v, v)), (v, v)),
        (di.prepare_hvp_same_point(fc, b, x, v), v),
        (di.prepare_jacobian(gc, b, x), None),
        (di.prepare_pushforward(gc, b, x, (v, v, v)), (v, v, v)),
        (di.prepare_pullback(gc, b, x, v), v),
        (di.prepare_pullback_same_point(gc, b, x, v), v),
    ]
    traced = len(f_calls), len(g_calls)
    for prep, extra in preps:
        for full in (False, True):
            for _ in range(3):
                prep.run(full, x, extra, (), None, None, check=True)
    assert (len(f_calls), len(g_calls)) == traced


@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_new_constant_values_are_honoured_without_recompiling(backend):
    def weighted(x, a, w):
        return a * jnp.sum(w * jnp.sin(x))

    fc, calls = _counting(weighted)
    x = jnp.asarray(X)
    grad_prep = di.prepare_gradient(fc, backend, x, di.Constant(1.0), di.Constant(np.ones(4)))
    hess_prep = di.prepare_hessian(fc, backend, x, di.Constant(1.0), di.Constant(np.ones(4)))
    push_prep = di.prepare_pushforward(fc, backend, x, jnp.asarray(V), di.Constant(1.0), di.Constant(np.ones(4)))
    native_prep = di.prepare_gradient(fc, backend, x, di.Constant(1.0), di.Constant(jnp.ones(4)))
    traced = len(calls)
    for a, w in [(2.5, V), (-1.0, X2), (0.5, np.ones(4))]:
        contexts = (di.Constant(a), di.Constant(w))
        assert close(grad_prep(x, *contexts), a * w * np.cos(X))
        assert close(hess_prep(x, *contexts), np.diag(-a * w * np.sin(X)))
        assert close(push_prep(x, jnp.asarray(V), *contexts), np.sum(a * w * np.cos(X) * V))
        assert close(native_prep(x, di.Constant(a), di.Constant(jnp.asarray(w))), a * w * np.cos(X))
    assert len(calls) == traced


def test_static_contexts_pick_their_compiled_variant():
    """Non-array contexts (a bool flag, a string) cannot be traced: they are static arguments and
    each value gets its own compilation."""

    def shaped(x, flag, name):
        y = jnp.sin(x) if flag else jnp.cos(x)
        return jnp.sum(y) if name == "sum" else jnp.sum(y**2)

    x = jnp.asarray(X)
    prep = di.prepare_gradient(shaped, di.AutoJAX(), x, di.Constant(True), di.Constant("sum"))
    assert close(prep(x, di.Constant(True), di.Constant("sum")), np.cos(X))
    assert close(prep(x, di.Constant(False), di.Constant("sum")), -np.sin(X))
    assert close(prep(x, di.Constant(True), di.Constant("square")), 2 * np.sin(X) * np.cos(X))
    assert close(di.gradient(shaped, di.AutoJAX(), x, di.Constant(False), di.Constant("sum")), -np.sin(X))


def test_unhashable_untraceable_context_needs_jit_false():
    def with_options(x, options):
        return jnp.sum(x**2) * options["scale"]

    options = {"scale": 2.0, "name": "quadratic"}  # a string leaf: not traceable, and a dict: not hashable
    with pytest.raises(di.NotSupportedError, match="hashable"):
        di.prepare_gradient(with_options, di.AutoJAX(), X, di.Constant(options))
    assert close(di.gradient(with_options, di.AutoJAX(), X, di.Constant(options)), 4 * X)  # unprepared: eager
    prep = di.prepare_gradient(with_options, di.AutoJAX(jit=False), X, di.Constant(options))
    assert close(prep(X, di.Constant({"scale": 3.0, "name": "q"})), 6 * X)


def test_pytree_constants_are_traced():
    def with_params(x, params):
        return jnp.sum(params["w"] * x**2) + params["b"]

    fc, calls = _counting(with_params)
    x = jnp.asarray(X)
    prep = di.prepare_gradient(fc, di.AutoJAX(), x, di.Constant({"w": jnp.ones(4), "b": 1.0}))
    traced = len(calls)
    assert close(prep(x, di.Constant({"w": jnp.asarray(V), "b": 3.0})), 2 * V * X)
    assert len(calls) == traced


@pytest.mark.parametrize(
    "backend",
    [REVERSE, di.SecondOrder(REVERSE, FORWARD), di.SecondOrder(REVERSE, REVERSE), di.AutoJAX(jit=False)],
    ids=["forward over reverse", "reverse over forward", "reverse over reverse", "no jit"],
)
def test_same_point_preparations(backend):
    x = jnp.asarray(X)
    v, w = jnp.asarray(V), jnp.asarray(X2)
    hvp = di.prepare_hvp_same_point(f, backend, x, (v, w))
    grad, (hv, hw) = hvp.gradient_and_hvp(x, (v, w))
    assert close(grad, f_gradient(X)) and close(hv, f_hessian(X) @ V) and close(hw, f_hessian(X) @ X2)
    push = di.prepare_pushforward_same_point(g, backend, x, v)
    y, t = push.value_and_pushforward(x, w)
    assert close(y, np.sin(X) * X[::-1]) and close(t, g_jacobian(X) @ X2)
    pull = di.prepare_pullback_same_point(g, backend, x, (v, w))
    y, (tv, tw) = pull.value_and_pullback(x, (v, w))
    assert close(tv, V @ g_jacobian(X)) and close(tw, X2 @ g_jacobian(X))
    with pytest.raises(di.PreparationMismatchError, match="same point"):
        push(jnp.asarray(X2), v)


# -- contexts and immutability -----------------------------------------------------------------------


def test_cache_that_f_only_reads():
    def reads(x, buf):
        return jnp.sum(jnp.sin(x) * jnp.ones_like(buf))

    for cache in (jnp.full(4, jnp.nan), np.full(4, np.nan)):
        for backend in (REVERSE, FORWARD):
            assert close(di.gradient(reads, backend, X, di.Cache(cache)), np.cos(X))
            prep = di.prepare_hessian(reads, backend, X, di.Cache(cache))
            assert close(prep(X, di.Cache(cache)), np.diag(-np.sin(X)))


def test_writing_f_fails_with_jax_error():
    """A function writing into a Cache cannot run on immutable arrays: JAX's own error propagates."""

    def writes(x, buf):
        buf[...] = x**2
        return jnp.sum(buf)

    with pytest.raises(TypeError, match="immutable"):
        di.gradient(writes, di.AutoJAX(), X, di.Cache(np.zeros(4)))


def test_inplace_functions_and_out_buffers_are_refused():
    b = di.AutoJAX()
    assert not di.check_inplace(b) and not di.check_inplace(di.SecondOrder(b, b))

    def inplace(y, x):
        y[...] = jnp.sin(x)

    with pytest.raises(di.NotSupportedError, match="in-place"):
        di.jacobian(inplace, b, X, y=np.zeros(4))
    x = jnp.asarray(X)
    with pytest.raises(di.NotSupportedError, match="immutable"):
        di.gradient(f, b, x, out=jnp.zeros(4))
    with pytest.raises(di.NotSupportedError, match="immutable"):
        di.prepare_gradient(f, b, x).value_and_gradient(x, out=jnp.zeros(4))
    out = np.zeros(4)  # NumPy input: NumPy buffers work
    assert di.gradient(f, b, X, out=out) is out and close(out, f_gradient(X))


def test_inputs_are_never_mutated():
    x, v, w = X.copy(), V.copy(), X2.copy()
    b = di.AutoJAX()
    di.hvp(lambda x, w: jnp.sum(w * jnp.sin(x)), b, x, (v, v), di.Constant(w))
    di.prepare_pullback(g, b, x, v).value_and_pullback(x, v)
    di.prepare_hessian(f, b, x).value_gradient_and_hessian(x, out=(np.zeros(4), np.zeros((4, 4))))
    assert np.array_equal(x, X) and np.array_equal(v, V) and np.array_equal(w, X2)


# -- agreement with an independent engine ---------------------------------------------------------


def test_agrees_with_finite_differences_on_every_operator():
    """The same functions written for NumPy and for JAX: AutoJAX against complex-step differences."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4))
    x, v, u = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal(3)

    def scalar_np(x):
        return np.sum(np.exp(np.sin(x)) * x) + x[0] * x[3] ** 2

    def scalar_jax(x):
        return jnp.sum(jnp.exp(jnp.sin(x)) * x) + x[0] * x[3] ** 2

    def vector_np(x):
        return np.tanh(a @ x) + x[:3] ** 3

    def vector_jax(x):
        return jnp.tanh(jnp.asarray(a) @ x) + x[:3] ** 3

    fd, fd2 = di.AutoFiniteDiff("complex"), di.SecondOrder(di.AutoFiniteDiff("complex"), di.AutoFiniteDiff())
    for b in (REVERSE, FORWARD, di.SecondOrder(REVERSE, FORWARD), di.SecondOrder(FORWARD, FORWARD)):
        assert close(di.gradient(scalar_jax, b, x), di.gradient(scalar_np, fd, x), 1e-12)
        assert close(di.jacobian(vector_jax, b, x), di.jacobian(vector_np, fd, x), 1e-12)
        assert close(di.pushforward(vector_jax, b, x, v), di.pushforward(vector_np, fd, x, v), 1e-12)
        assert close(di.pullback(vector_jax, b, x, u), di.pullback(vector_np, fd, x, u), 1e-12)
        assert close(di.hessian(scalar_jax, b, x), di.hessian(scalar_np, fd2, x), 1e-6)
        assert close(di.hvp(scalar_jax, b, x, v), di.hvp(scalar_np, fd2, x, v), 1e-6)
        assert close(
            di.second_derivative(lambda t: jnp.sin(t) * t**3, b, 0.7),
            di.second_derivative(lambda t: np.sin(t) * t**3, fd2, 0.7),
            1e-6,
        )


# -- the backend object --------------------------------------------------------------------------------


def test_backend_fields_are_validated_and_hashable():
    assert di.AutoJAX() == di.AutoJAX("auto", True) and hash(di.AutoJAX()) == hash(di.AutoJAX("auto", True))
    assert repr(di.AutoJAX()) == "AutoJAX(mode='auto', jit=True)"
    assert di.AutoJAX().native_modes == {"forward", "reverse"}
    with pytest.raises(di.ArgumentError, match="mode"):
        di.AutoJAX("sideways")
    with pytest.raises(di.ArgumentError, match="jit"):
        di.AutoJAX(jit="yes")
    with pytest.raises(di.ArgumentError, match="JAX arrays, NumPy arrays and numbers"):
        di.gradient(f, di.AutoJAX(), "not an array")
    outer, inner = di.AutoJAX("reverse", jit=False).second_order_backends()
    assert (outer, inner) == (di.AutoJAX("forward", jit=False), di.AutoJAX("reverse", jit=False))


def test_availability_and_missing_package(monkeypatch):
    b = di.AutoJAX()
    assert di.check_available(b) and di.check_available(di.SecondOrder(di.AutoFiniteDiff(), b))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jax" else find_spec(name, *a))
    assert not di.check_available(b)
    with pytest.raises(di.BackendUnavailableError, match=r"diface\[jax\]") as info:
        di.gradient(f, b, X)
    assert isinstance(info.value, ImportError)
    with pytest.raises(di.BackendUnavailableError, match=r"diface\[jax\]"):
        di.prepare_hessian(f, di.SecondOrder(di.AutoFiniteDiff(), b), X)


def test_auto_mode_picks_the_sweep_with_fewer_products(monkeypatch):
    """jacfwd-like for tall Jacobians, jacrev-like for wide ones; square ones are timed both ways."""
    from diface._derive import mode as mode_module

    built = []
    real = di.AutoJAX._jacobian_kernel

    def spy(self, problem, mode):
        built.append(mode)
        return real(self, problem, mode)

    monkeypatch.setattr(di.AutoJAX, "_jacobian_kernel", spy)
    tall = lambda x: jnp.concatenate([jnp.sin(x)] * 10)
    wide = lambda x: jnp.sum(x.reshape(10, -1), axis=0)
    x = np.linspace(0.1, 1.0, 40)
    for f, shape, want in ((tall, (400, 40), ["forward"]), (wide, (4, 40), ["reverse"])):
        built.clear()
        prep = di.prepare_jacobian(f, di.AutoJAX(), x)
        assert built == want and prep.jacobian(x).shape == shape
    built.clear()
    square = lambda x: jnp.tanh(x) * x[::-1]
    prep = di.prepare_jacobian(square, di.AutoJAX(), x)
    assert sorted(built) == ["forward", "reverse"]  # close: both compiled and timed
    np.testing.assert_allclose(prep.jacobian(x), np.asarray(jax.jacfwd(square)(x)), rtol=1e-12)
    built.clear()
    di.prepare_jacobian(square, di.AutoJAX("reverse"), x)
    assert built == ["reverse"]  # an explicit mode is never second-guessed
    assert mode_module.CLOSE >= 1


def test_linearize_once_then_products():
    """AutoJAX's linearization: jax.linearize compiled once, its linear map (a pytree) handed to compiled
    batched products: pushes of the input basis and pulls of the output basis give J."""
    from diface._problem import Problem

    b, xj = di.AutoJAX(), jnp.asarray(X)
    problem = Problem(g, xj, (), None, b.array_ops(xj))
    jac = g_jacobian(X)
    for mode in ("forward", "reverse"):
        linearizer = b.prepare_linearize(problem, mode)
        for point in (xj, xj + 0.5):  # one compiled linearization serves every point
            lin = linearizer(point, (), None)
            jac = g_jacobian(np.asarray(point))
            got = lin.push(jnp.eye(X.size)) if mode == "forward" else lin.pull(jnp.eye(jac.shape[0]))
            np.testing.assert_allclose(np.asarray(got), jac.T if mode == "forward" else jac, rtol=1e-12)
            np.testing.assert_allclose(np.asarray(lin.value), np.asarray(g(point)), rtol=1e-12)


# -- preparation leaves nothing to compile ---------------------------------------------------------------------
def _loss(p, X):
    h = jnp.tanh(X @ p["w"] + p["b"])
    return jnp.mean(h**2), {"h": h}


_P = {"w": jnp.linspace(-1.0, 1.0, 12).reshape(4, 3), "b": jnp.zeros(3)}
_X = jnp.linspace(0.0, 1.0, 20).reshape(5, 4)
_V = jnp.linspace(0.0, 1.0, 6)
_PREPARED = {
    "gradient of a tree, Constant, has_aux": (
        lambda: di.prepare_gradient(_loss, di.AutoJAX(), _P, di.Constant(_X), has_aux=True),
        lambda p: (p.gradient(_P, di.Constant(_X)), p.value_and_gradient(_P, di.Constant(_X))),
    ),
    "hvp of a tree": (
        lambda: di.prepare_hvp(lambda p, X: _loss(p, X)[0], di.AutoJAX(), _P, di.Constant(_X)),
        lambda p: (p.hvp(_P, _P, di.Constant(_X)), p.gradient_and_hvp(_P, _P, di.Constant(_X))),
    ),
    "jacobian, NumPy input": (
        lambda: di.prepare_jacobian(jnp.sin, di.AutoJAX(), np.ones(6)),
        lambda p: (p.jacobian(np.ones(6)), p.value_and_jacobian(np.ones(6))),
    ),
    "sparse hessian": (
        lambda: di.prepare_hessian(lambda x: jnp.sum(jnp.sin(x[1:] * x[:-1])), di.AutoSparse(di.AutoJAX()), _V),
        lambda p: (p.hessian(_V), p.value_gradient_and_hessian(_V)),
    ),
    "a batch of pullbacks": (
        lambda: di.prepare_pullback(jnp.sin, di.AutoJAX(), _V, (_V, _V)),
        lambda p: (p.pullback(_V, (_V, _V)), p.value_and_pullback(_V, (_V, _V))),
    ),
}


@pytest.mark.parametrize("case", list(_PREPARED))
def test_prepared_calls_compile_nothing(case, caplog):
    """Preparation compiles every program the plain operator and its full variant reach (the kernel's,
    the tree layer's, the auxiliary output's): a prepared call with the prepared specs only runs them."""
    make, use = _PREPARED[case]
    prep = make()
    with jax.log_compiles(True), caplog.at_level("WARNING"):
        for _ in range(2):
            jax.block_until_ready(use(prep))
    assert [r.getMessage() for r in caplog.records if "Compiling" in r.getMessage()] == []
