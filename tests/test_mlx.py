"""AutoMLX: every operator and variant in each mode and SecondOrder combination, the kit's layouts, edges,
structural and tree scenarios, then what is specific to MLX: native arrays in and out, dtypes (float64 kept,
complex refused), compilation (no retracing), contexts as inputs or closed over, the lock (MLX is not
thread-safe), sparsity through the dense detector, inverse products, DifferentiateWith with MLX outside."""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest

from conftest import assert_operator, operator_cases

mx = pytest.importorskip("mlx.core")

import diface as di  # noqa: E402
from diface.backends.mlx import MlxOps  # noqa: E402
from diface.backends.mlx import numpy as xp  # noqa: E402
from diface.testing import (  # noqa: E402
    check_threads,
    default_scenarios,
    edge_scenarios,
    layout_scenarios,
    structural_scenarios,
    test_differentiation,
    tree_scenarios,
)

FORWARD, REVERSE = di.AutoMLX("forward"), di.AutoMLX("reverse")
FIRST_ORDER = [di.AutoMLX(), FORWARD, REVERSE, di.AutoMLX(compile=False)]
SECOND_ORDER_BACKENDS = {
    "plain (forward over reverse)": di.AutoMLX(),
    "reverse over forward": di.SecondOrder(REVERSE, FORWARD),
    "reverse over reverse": di.SecondOrder(REVERSE, REVERSE),
    "forward over forward": di.SecondOrder(FORWARD, FORWARD),
    "finite differences over reverse": di.SecondOrder(di.AutoFiniteDiff(), REVERSE),
    "plain, not compiled": di.AutoMLX(compile=False),
}


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(FIRST_ORDER, False))
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(list(SECOND_ORDER_BACKENDS.values()), True))
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


def test_the_kit_with_threads_and_dot_products():
    """The default scenarios with the kit's dot-product check and 8 threads sharing each preparation."""
    assert test_differentiation([di.AutoMLX()], default_scenarios()).ok


@pytest.mark.parametrize(
    ("name", "scenarios"),
    [
        ("layouts and edges", lambda: layout_scenarios() + edge_scenarios()),
        ("structural", structural_scenarios),
        ("trees", tree_scenarios),
    ],
)
def test_kit_scenarios(name, scenarios):
    assert test_differentiation([di.AutoMLX()], scenarios(), threads=0).ok


# -- a function with analytic derivatives, for the engine-specific tests ---------------------------


def f(x):
    return mx.sum(mx.sin(x) * x**2)


def f_gradient(x):
    return 2 * x * np.sin(x) + x**2 * np.cos(x)


def f_hessian(x):
    return np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x))


def g(x):
    return mx.sin(x) * x[::-1]


def g_jacobian(x):
    return np.diag(np.cos(x) * x[::-1]) + np.diag(np.sin(x))[:, ::-1]


X = np.array([0.3, -1.2, 0.8, 2.0])
X2 = np.array([1.1, 0.4, -0.7, -1.5])
V = np.array([1.0, -2.0, 0.5, 3.0])
TOL = 1e-6  # MLX's float64 sin, cos and exp are float32-accurate (AutoMLX.accuracy_exponent)


def close(a, b, tol=TOL):
    return np.allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def mxa(a):
    return mx.array(np.asarray(a), dtype=mx.float64)


# -- arrays: native stays native, NumPy gives NumPy, dtypes kept ----------------------------------


@pytest.mark.parametrize("backend", [di.AutoMLX(), REVERSE, FORWARD, di.AutoMLX(compile=False)], ids=repr)
def test_native_input_stays_native_without_conversion(backend, monkeypatch):
    x, v = mxa(X), mxa(V)
    preps = {
        "gradient": di.prepare_gradient(f, backend, x),
        "jacobian": di.prepare_jacobian(g, backend, x),
        "hessian": di.prepare_hessian(f, backend, x),
        "hvp": di.prepare_hvp(f, backend, x, (v, v)),
        "pushforward": di.prepare_pushforward(g, backend, x, v),
        "pullback": di.prepare_pullback_same_point(g, backend, x, v),
    }

    def no_conversion(*args, **kwargs):
        raise AssertionError("an MLX array was converted")

    monkeypatch.setattr(MlxOps, "asarray", no_conversion)
    monkeypatch.setattr(MlxOps, "to_numpy", no_conversion)
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
            assert isinstance(r, mx.array) and r.dtype == mx.float64, name
            assert close(r, expected[name]), name
    y, grad = preps["gradient"].value_and_gradient(x)
    assert isinstance(y, mx.array) and isinstance(grad, mx.array)


def test_numpy_in_numpy_out_writable_and_float64():
    b = di.AutoMLX()
    grad = di.gradient(f, b, X)
    y, jac = di.prepare_jacobian(g, b, X).value_and_jacobian(X)
    d = di.derivative(mx.sin, b, 0.5)
    for r in (grad, y, jac):
        assert type(r) is np.ndarray and r.flags.writeable and r.dtype == np.float64
    assert isinstance(d, np.float64) and close(d, np.cos(0.5))
    grad += 1.0  # results are the caller's to keep and modify
    assert close(grad - 1.0, f_gradient(X))
    # float64 is computed in float64 (a float32 computation would be off by ~1e-8 here)
    h = di.gradient(lambda x: mx.sum(x * x * 1e-3 + x), b, np.array([1e8 + 1.0]))
    assert h[0] == 1.0 + 2e-3 * (1e8 + 1.0)


@pytest.mark.parametrize("native", [False, True], ids=["numpy", "mlx"])
def test_float32_stays_float32(native):
    x32, v32 = X.astype(np.float32), V.astype(np.float32)
    if native:
        x32, v32 = mx.array(x32), mx.array(v32)
    b = di.AutoMLX()
    results = [
        di.gradient(f, b, x32),
        di.prepare_gradient(f, b, x32).value_and_gradient(x32)[0],
        di.jacobian(g, b, x32),
        di.prepare_hessian(f, b, x32)(x32),
        di.hvp(f, b, x32, v32),
        di.pushforward(g, b, x32, (v32, v32))[1],
        di.pullback(g, b, x32, v32),
    ]
    for r in results:
        assert r.dtype == (mx.float32 if native else np.float32)
        assert isinstance(r, mx.array) if native else isinstance(r, (np.ndarray, np.generic))
    assert close(results[0], f_gradient(X), tol=1e-5)
    assert close(results[3], f_hessian(X), tol=1e-4)


def test_namespace_keeps_float64_and_adds_missing_names():
    a = xp.asarray(np.array([0.1, 0.2]))
    assert a.dtype == mx.float64 and mx.array(np.array([0.1])).dtype == mx.float32  # what the namespace fixes
    assert xp.asarray(np.array([1.0]), dtype=np.float32).dtype == mx.float32
    assert xp.asarray(np.arange(4.0)[::-1]).tolist() == [3.0, 2.0, 1.0, 0.0]  # negative strides
    assert close(xp.angle(xp.asarray(np.array([1j, -1.0 + 0j], np.complex64))), [np.pi / 2, np.pi], 1e-6)
    assert xp.sin is mx.sin and xp.fft.fft is mx.fft.fft


def test_float64_off_the_cpu_and_complex_are_refused(monkeypatch):
    with pytest.raises(di.NotSupportedError, match="complex128"):
        di.AutoMLX().array_ops(X).asarray(np.zeros(2, np.complex128))
    with pytest.raises(di.NotSupportedError, match="complex inputs or outputs"):
        di.gradient(lambda z: xp.sum(xp.real(z * xp.conj(z))), di.AutoMLX(), np.ones(2, np.complex64))
    with pytest.raises(di.NotSupportedError, match=r"di\.hvp"):
        di.hessian(lambda z: xp.sum(xp.real(z)), di.AutoMLX(), np.ones(2, np.complex128))
    monkeypatch.setattr(mx, "default_device", lambda: mx.Device(mx.gpu))
    with pytest.raises(di.ArgumentError, match="float64 on its CPU device only"):
        di.gradient(f, di.AutoMLX(), X)
    grad = di.gradient(f, di.AutoMLX(), X.astype(np.float32))  # float32 is fine anywhere
    assert grad.dtype == np.float32


# -- preparation: compiled once, calls independent, Constants honoured -----------------------------


def _counting(fn):
    """`fn` with a counter of how often it ran in Python (MLX tracing it, or an uncompiled call)."""
    calls = []

    def counted(*args):
        calls.append(1)
        return fn(*args)

    return counted, calls


def test_prepared_calls_are_one_compiled_call():
    """Preparation compiles and traces; a prepared call runs the compiled program, never f in Python."""
    x, v = mxa(X), mxa(V)
    fc, f_calls = _counting(f)
    gc, g_calls = _counting(g)
    b = di.AutoMLX()
    preps = [
        (di.prepare_gradient(fc, b, x), None),
        (di.prepare_hessian(fc, b, x), None),
        (di.prepare_hvp(fc, b, x, (v, v)), (v, v)),
        (di.prepare_hvp_same_point(fc, b, x, v), v),
        (di.prepare_jacobian(gc, b, x), None),
        (di.prepare_pushforward(gc, b, x, (v, v, v)), (v, v, v)),
        (di.prepare_pullback(gc, b, X, V), V),
        (di.prepare_pullback_same_point(gc, b, x, v), v),
    ]
    traced = len(f_calls), len(g_calls)
    for prep, extra in preps:
        for full in (False, True):
            for point in (x, mxa(X2)) if not prep.same_point else (x,):
                prep.run(full, point if extra is not V else np.asarray(point), extra, (), None, None, check=True)
    assert (len(f_calls), len(g_calls)) == traced
    assert close(preps[0][0].gradient(mxa(X2)), f_gradient(X2))
    assert close(preps[4][0].jacobian(mxa(X2)), g_jacobian(X2))


@pytest.mark.parametrize("backend", [REVERSE, FORWARD], ids=repr)
def test_new_constant_values_are_honoured_without_recompiling(backend):
    def weighted(x, a, w):
        return a * mx.sum(w * mx.sin(x))

    fc, calls = _counting(weighted)
    x = mxa(X)
    grad_prep = di.prepare_gradient(fc, backend, x, di.Constant(1.0), di.Constant(np.ones(4)))
    hess_prep = di.prepare_hessian(fc, backend, x, di.Constant(1.0), di.Constant(np.ones(4)))
    push_prep = di.prepare_pushforward(fc, backend, x, mxa(V), di.Constant(1.0), di.Constant(np.ones(4)))
    native_prep = di.prepare_gradient(fc, backend, x, di.Constant(1.0), di.Constant(mxa(np.ones(4))))
    traced = len(calls)
    for a, w in [(2.5, V), (-1.0, X2), (0.1, np.ones(4))]:
        contexts = (di.Constant(a), di.Constant(w))
        assert close(grad_prep(x, *contexts), a * w * np.cos(X))
        assert close(hess_prep(x, *contexts), np.diag(-a * w * np.sin(X)))
        assert close(push_prep(x, mxa(V), *contexts), np.sum(a * w * np.cos(X) * V))
        assert close(native_prep(x, di.Constant(a), di.Constant(mxa(w))), a * w * np.cos(X))
    assert len(calls) == traced


def test_other_contexts_are_closed_over_one_compilation_per_value():
    def shaped(x, flag, name):
        y = mx.sin(x) if flag else mx.cos(x)
        return mx.sum(y) if name == "sum" else mx.sum(y**2)

    x = mxa(X)
    prep = di.prepare_gradient(shaped, di.AutoMLX(), x, di.Constant(True), di.Constant("sum"))
    assert close(prep(x, di.Constant(True), di.Constant("sum")), np.cos(X))
    assert close(prep(x, di.Constant(False), di.Constant("sum")), -np.sin(X))
    assert close(prep(x, di.Constant(True), di.Constant("square")), 2 * np.sin(X) * np.cos(X))
    with pytest.raises(di.NotSupportedError, match="hashable"):
        di.prepare_gradient(lambda x, o: mx.sum(x) * o["s"], di.AutoMLX(), X, di.Constant({"s": 2.0, "n": "q"}))
    prep = di.prepare_gradient(lambda x, o: mx.sum(x) * o["s"], di.AutoMLX(compile=False), X, di.Constant({"s": 2.0}))
    assert close(prep(X, di.Constant({"s": 3.0})), 3 * np.ones(4))


def test_functions_that_evaluate_arrays_run_uncompiled():
    """f calling .item() or NumPy cannot be compiled or vmapped: the kernel runs it as it is, one product at a
    time, with the same results."""

    def evaluates(x):
        scale = float(np.asarray(x).sum()) * 0 + 2.0  # evaluates x
        return mx.sin(x) * scale

    prep = di.prepare_jacobian(evaluates, di.AutoMLX(), X)
    assert close(prep(X2), 2 * np.diag(np.cos(X2)))
    assert close(di.jacobian(evaluates, di.AutoMLX(), X), 2 * np.diag(np.cos(X)))
    assert close(di.hessian(lambda x: mx.sum(evaluates(x)), di.AutoMLX(), X), np.diag(-2 * np.sin(X)))


def test_indexing_gradients_have_no_jvp_in_mlx_so_hessians_go_reverse_over_reverse():
    """MLX has no JVP of scatter (the gradient of x[0]): forward over reverse falls back to reverse over
    reverse, the same Hessian."""
    h = lambda x: mx.sum(mx.sin(x) * x**2) + x[0] * x[1]
    want = f_hessian(X) + np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    for backend in (di.AutoMLX(), di.AutoMLX(compile=False), di.SecondOrder(FORWARD, REVERSE)):
        assert close(di.hessian(h, backend, X), want)
        assert close(di.prepare_hvp(h, backend, X, V)(X, V), want @ V)


def test_same_point_preparations():
    x, v, w = mxa(X), mxa(V), mxa(X2)
    hvp = di.prepare_hvp_same_point(f, di.AutoMLX(), x, (v, w))
    grad, (hv, hw) = hvp.gradient_and_hvp(x, (v, w))
    assert close(grad, f_gradient(X)) and close(hv, f_hessian(X) @ V) and close(hw, f_hessian(X) @ X2)
    push = di.prepare_pushforward_same_point(g, di.AutoMLX(), x, v)
    y, t = push.value_and_pushforward(x, w)
    assert close(y, np.sin(X) * X[::-1]) and close(t, g_jacobian(X) @ X2)
    with pytest.raises(di.PreparationMismatchError, match="same point"):
        push(w, v)


def test_auto_mode_picks_the_sweep_with_fewer_products(monkeypatch):
    built = []
    real = di.AutoMLX._jacobian_kernel

    def spy(self, problem, mode):
        built.append(mode)
        return real(self, problem, mode)

    monkeypatch.setattr(di.AutoMLX, "_jacobian_kernel", spy)
    x = np.linspace(0.1, 1.0, 40)
    tall = lambda x: mx.concatenate([mx.sin(x)] * 10)
    wide = lambda x: mx.sum(x.reshape(10, -1), axis=0)
    for fn, shape, want in ((tall, (400, 40), ["forward"]), (wide, (4, 40), ["reverse"])):
        built.clear()
        assert di.prepare_jacobian(fn, di.AutoMLX(), x).jacobian(x).shape == shape and built == want
    built.clear()
    di.prepare_jacobian(lambda x: mx.tanh(x) * x[::-1], di.AutoMLX(), x)
    assert sorted(built) == ["forward", "reverse"]  # close: both compiled and timed


# -- threads: one lock --------------------------------------------------------------------------------


def test_eight_threads_share_one_preparation_under_the_lock():
    """MLX gives wrong numbers when graphs are evaluated from several threads at once; every MLX
    computation diface runs holds one lock, so a shared preparation gives the single-threaded results."""
    from diface.backends.mlx._lock import MLX_LOCK

    scenario = default_scenarios()[4]
    for op in ("gradient", "hessian", "hvp"):
        if op in scenario.operators():
            assert check_threads(di.AutoMLX(), scenario, op, threads=8, calls=40) == []
    held = []

    def watched(x):  # uncompiled, f runs at every call: always under the lock
        held.append(MLX_LOCK._is_owned())
        return f(x)

    prep = di.prepare_hessian(watched, di.AutoMLX(compile=False), X)
    bad = []

    def work(k):
        x = X + 0.01 * k
        for _ in range(20):
            if not close(prep.hessian(x), f_hessian(x)):
                bad.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == [] and held and all(held)


def test_kernels_from_other_threads_run_on_one_mlx_thread_and_the_process_exits_cleanly():
    """A thread that ran an mx.compile'd function aborts the process when it exits (MLX 0.32): kernels called
    from other threads than the main one run on one daemon thread, so a threaded program exits with 0."""
    import subprocess
    import sys

    script = (
        "import threading, numpy as np, mlx.core as mx, diface as di\n"
        "prep = di.prepare_gradient(lambda x: mx.sum(mx.sin(x) * x), di.AutoMLX(), np.ones(3))\n"
        "names = []\n"
        "def work():\n"
        "    names.append(threading.current_thread().name)\n"
        "    for _ in range(5):\n"
        "        prep.gradient(np.ones(3))\n"
        "        di.prepare_hessian(lambda x: mx.sum(x**3), di.AutoMLX(), np.ones(3))(np.ones(3))\n"
        "threads = [threading.Thread(target=work) for _ in range(4)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "from diface.backends.mlx._lock import _WORKER\n"
        "assert _WORKER and _WORKER[0].name == 'diface-mlx' and _WORKER[0].name not in names\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# -- sparsity, inverse products -------------------------------------------------------------------------


def test_sparsity_through_the_dense_detector():
    chain = lambda x: mx.sin(x[1:] * x[:-1])
    energy = lambda x: mx.sum(mx.sin(x[1:] * x[:-1])) + mx.sum(x**3)
    x = np.linspace(0.1, 1.0, 8)
    with pytest.raises(di.NotSupportedError, match=r"DenseSparsityDetector\(di.AutoMLX\(\)\)"):
        di.jacobian(chain, di.AutoSparse(di.AutoMLX()), x)
    sparse = di.AutoSparse(di.AutoMLX(), sparsity_detector=di.DenseSparsityDetector(di.AutoMLX()))
    prep = di.prepare_jacobian(chain, sparse, x)
    assert prep.ncolors == 2
    assert close(prep.jacobian(x).toarray(), di.jacobian(chain, di.AutoMLX(), x))
    hess = di.hessian(energy, sparse, x)
    assert close(hess.toarray(), di.hessian(energy, di.AutoMLX(), x))


@pytest.mark.parametrize("method", ["dense", "krylov"])
def test_inverse_products(method):
    h = lambda x: x**3 + mx.sin(x[::-1]) + 2 * x
    jac = np.diag(3 * X**2 + 2) + np.diag(np.cos(X))[::-1]
    dx = di.inverse_pushforward(h, di.AutoMLX(), X, V, method=method)
    dy = di.inverse_pullback(h, di.AutoMLX(), X, V, method=method)
    assert close(jac @ dx, V) and close(jac.T @ dy, V)
    native = di.inverse_pushforward(h, di.AutoMLX(), mxa(X), mxa(V), method=method)
    assert isinstance(native, mx.array) and close(native, dx)


# -- DifferentiateWith: MLX outside --------------------------------------------------------------------


def test_mlx_differentiates_through_another_engine():
    inner = di.DifferentiateWith(lambda x: np.sin(x) * x, di.AutoTape())
    h = lambda x: mx.sum(inner(x) ** 2)
    x = mxa(X)
    want = 2 * np.sin(X) * X * (np.cos(X) * X + np.sin(X))
    assert close(mx.grad(h)(x), want, 1e-10)  # MLX called directly, float64 through the boundary
    assert close(di.gradient(h, di.AutoMLX(), X), want, 1e-10)
    assert close(di.prepare_gradient(h, di.AutoMLX(), X)(X2), 2 * np.sin(X2) * X2 * (np.cos(X2) * X2 + np.sin(X2)))
    s = lambda x: mx.sum(inner(x))
    assert close(di.hessian(s, di.AutoMLX(), X), np.diag(2 * np.cos(X) - X * np.sin(X)))
    assert close(di.hessian(s, di.SecondOrder(REVERSE, REVERSE), X), np.diag(2 * np.cos(X) - X * np.sin(X)))
    with pytest.raises(di.NotSupportedError, match="order 3"):
        third = mx.grad(lambda x: mx.sum(mx.grad(lambda x: mx.sum(mx.grad(s)(x)))(x)))
        third(x)


# -- errors and the backend object -----------------------------------------------------------------------


def test_inplace_functions_and_out_buffers_are_refused():
    b = di.AutoMLX()
    assert not di.check_inplace(b) and not di.check_inplace(di.SecondOrder(b, b))

    def inplace(y, x):
        y[...] = mx.sin(x)

    with pytest.raises(di.NotSupportedError, match="in-place"):
        di.jacobian(inplace, b, X, y=np.zeros(4))
    with pytest.raises(di.NotSupportedError, match="immutable"):
        di.gradient(f, b, mxa(X), out=mx.zeros(4, dtype=mx.float64))
    out = np.zeros(4)  # NumPy input: NumPy buffers work
    assert di.gradient(f, b, X, out=out) is out and close(out, f_gradient(X))


def test_inputs_are_never_mutated():
    x, v, w = X.copy(), V.copy(), X2.copy()
    b = di.AutoMLX()
    di.hvp(lambda x, w: mx.sum(w * mx.sin(x)), b, x, (v, v), di.Constant(w))
    di.prepare_pullback(g, b, x, v).value_and_pullback(x, v)
    di.prepare_hessian(f, b, x).value_gradient_and_hessian(x, out=(np.zeros(4), np.zeros((4, 4))))
    assert np.array_equal(x, X) and np.array_equal(v, V) and np.array_equal(w, X2)


def test_backend_fields_are_validated_and_hashable():
    assert di.AutoMLX() == di.AutoMLX("auto", True) and hash(di.AutoMLX()) == hash(di.AutoMLX("auto", True))
    assert repr(di.AutoMLX()) == "AutoMLX(mode='auto', compile=True)"
    assert di.AutoMLX().native_modes == {"forward", "reverse"}
    with pytest.raises(di.ArgumentError, match="mode"):
        di.AutoMLX("sideways")
    with pytest.raises(di.ArgumentError, match="compile"):
        di.AutoMLX(compile="yes")
    with pytest.raises(di.ArgumentError, match="MLX arrays, NumPy arrays and numbers"):
        di.gradient(f, di.AutoMLX(), "not an array")
    outer, inner = di.AutoMLX("reverse", compile=False).second_order_backends()
    assert (outer, inner) == (di.AutoMLX("forward", compile=False), di.AutoMLX("reverse", compile=False))


def test_availability_and_missing_package(monkeypatch):
    b = di.AutoMLX()
    assert di.check_available(b)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlx" else find_spec(name, *a))
    assert not di.check_available(b)
    with pytest.raises(di.BackendUnavailableError, match=r"diface\[mlx\]") as info:
        di.gradient(f, b, X)
    assert isinstance(info.value, ImportError)
