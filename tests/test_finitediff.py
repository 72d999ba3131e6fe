"""AutoFiniteDiff: accuracy per method and dtype, steps, nesting, and arrays other than NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import diface as di
from diface.testing import _reference as ref

N = 10
X = np.random.default_rng(2).uniform(-1.5, 1.5, N)


def rel(d, exact):
    return float(np.max(np.abs(np.asarray(d, dtype=np.float64) - exact)) / np.max(np.abs(exact)))


# the documented accuracy (module docstring of diface.backends.finitediff), with a 100x margin
BOUNDS = {
    (np.float64, "forward"): 1.5e-6,
    (np.float64, "backward"): 1.5e-6,
    (np.float64, "central"): 3.7e-9,
    (np.float64, "complex"): 2.2e-14,
    (np.float32, "forward"): 3.5e-2,
    (np.float32, "backward"): 3.5e-2,
    (np.float32, "central"): 2.4e-3,
    (np.float32, "complex"): 1.2e-5,
}


@pytest.mark.parametrize(("dtype", "method"), list(BOUNDS))
def test_accuracy_per_method_and_dtype(dtype, method):
    b = di.AutoFiniteDiff(method)
    x = X.astype(dtype)
    grad, jac = di.gradient(ref.exp_sin, b, x), di.jacobian(ref.tanh_cubic, b, x)
    assert grad.dtype == dtype and jac.dtype == dtype  # float32 stays float32
    assert rel(grad, ref.exp_sin_gradient(X)) < BOUNDS[dtype, method]
    assert rel(jac, ref.tanh_cubic_jacobian(X)) < BOUNDS[dtype, method]


# smooth functions for the second-order accuracy requirement (about 1e-5 relative)
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


def logsumexp(x):
    return np.log(np.sum(np.exp(x)))


def logsumexp_hessian(x):
    p = np.exp(x) / np.sum(np.exp(x))
    return np.diag(p) - np.outer(p, p)


@pytest.mark.parametrize(
    ("fn", "hess", "x"),
    [
        (rosenbrock, rosenbrock_hessian, np.linspace(-1.2, 1.1, 8)),
        (logsumexp, logsumexp_hessian, np.linspace(-2.0, 2.0, 6)),
        (ref.exp_sin, ref.exp_sin_hessian, X),
    ],
)
def test_second_order_accuracy(fn, hess, x):
    backend = di.SecondOrder(di.AutoFiniteDiff(), di.AutoFiniteDiff())
    exact = hess(x)
    assert rel(di.hessian(fn, backend, x), exact) < 1e-5
    v = np.linspace(1.0, -1.0, x.size)
    assert rel(di.hvp(fn, backend, x, v), exact @ v) < 1e-5
    assert rel(di.hessian(fn, di.AutoFiniteDiff("complex"), x), exact) < 1e-8


def test_second_derivative_accuracy():
    d2 = di.second_derivative(lambda t: np.exp(np.sin(t)), di.AutoFiniteDiff(), 0.3)
    exact = np.exp(np.sin(0.3)) * (np.cos(0.3) ** 2 - np.sin(0.3))
    assert abs(d2 - exact) / abs(exact) < 1e-5


def test_outer_step_widens_to_the_inner_accuracy():
    b = di.AutoFiniteDiff()
    nested = b.as_outer_of(b)
    assert nested.step_factor(2.0**-52) > b.step_factor(2.0**-52)
    assert nested.accuracy_exponent == pytest.approx(4 / 9)
    assert di.AutoFiniteDiff("complex").as_outer_of(b).accuracy_exponent == pytest.approx(2 / 3)
    assert "input_accuracy" not in repr(nested)  # the repr shows what a user sets


def test_step_override():
    # the central error on x**3 at 1 is exactly h**2 (relative step h for |x| <= 1)
    d = di.derivative(lambda x: x**3, di.AutoFiniteDiff(step=1e-2), 1.0)
    assert d == pytest.approx(3 + 1e-4, rel=1e-9)
    d = di.derivative(lambda x: x**3, di.AutoFiniteDiff("forward", step=1e-2), 1.0)
    assert d == pytest.approx(3 + 3e-2 + 1e-4, rel=1e-9)


def test_steps_scale_with_x():
    # at |x| = 1e6 an absolute step of eps^(1/3) would be lost to rounding
    x = np.array([1e6, -2e6])
    np.testing.assert_allclose(di.gradient(lambda x: np.sum(x**2), di.AutoFiniteDiff(), x), 2 * x, rtol=1e-9)
    np.testing.assert_allclose(
        di.pushforward(lambda x: x**2, di.AutoFiniteDiff(), x, np.array([0.0, 1.0])), [0.0, -4e6], rtol=1e-9, atol=1e-3
    )


def test_identity_returning_its_input():
    # f returns (a view of) the very array the backend perturbs: the backend must copy it
    for fn in (lambda x: x, lambda x: x[1:], lambda x: x.T):
        x = np.array([1.0, 2.0, 3.0])
        jac = di.jacobian(fn, di.AutoFiniteDiff(), x)
        np.testing.assert_allclose(jac, fn(np.eye(3)), atol=1e-9)


def test_non_contiguous_input_and_python_float_outputs():
    big = np.arange(12.0)
    x = big[::3]
    np.testing.assert_allclose(di.gradient(lambda x: np.sum(x**2), di.AutoFiniteDiff(), x), 2 * x, rtol=1e-9)
    assert np.array_equal(big, np.arange(12.0))
    assert di.derivative(math.sin, di.AutoFiniteDiff(), 1.0) == pytest.approx(math.cos(1.0), rel=1e-9)
    assert isinstance(di.derivative(math.sin, di.AutoFiniteDiff(), 1.0), np.float64)


def test_scalar_results_are_numpy_scalars():
    d = di.derivative(np.sin, di.AutoFiniteDiff(), 0.5)
    assert isinstance(d, np.float64)
    _, d = di.value_and_derivative(np.sin, di.AutoFiniteDiff(), np.float32(0.5))
    assert isinstance(d, np.float32)
    out = np.zeros(())
    assert di.derivative(np.sin, di.AutoFiniteDiff(), 0.5, out=out) is out


def test_jax_arrays_stay_jax():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.asarray(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    b = di.AutoFiniteDiff()
    grad = di.gradient(lambda x: jnp.sum(x**2), b, x)
    assert type(grad) is type(x) and grad.dtype == x.dtype
    np.testing.assert_allclose(np.asarray(grad), [2.0, 4.0, 6.0], rtol=1e-4)
    hess = di.hessian(lambda x: jnp.sum(x**3), b, x)
    np.testing.assert_allclose(np.asarray(hess), np.diag([6.0, 12.0, 18.0]), rtol=2e-3, atol=5e-3)
    with pytest.raises(di.NotSupportedError, match="immutable"):
        di.gradient(lambda x: jnp.sum(x**2), b, x, out=jnp.zeros(3))


def test_same_point_one_sided_differences_evaluate_f_once_per_tangent():
    calls = []

    def f(x):
        calls.append(1)
        return x**2

    x = np.array([1.0, 2.0])
    prep = di.prepare_pushforward_same_point(f, di.AutoFiniteDiff("forward"), x, x)
    calls.clear()
    ty = prep.pushforward(x, np.array([1.0, 0.0]))
    np.testing.assert_allclose(ty, [2.0, 0.0], atol=1e-6)
    assert len(calls) == 1
    y, ty = prep.value_and_pushforward(x, np.array([0.0, 1.0]))
    np.testing.assert_allclose(y, x**2)
    y[0] = 99.0  # the value handed out is a copy, not the preparation's own
    np.testing.assert_allclose(prep.value_and_pushforward(x, x)[0], x**2)


def test_complex_step_is_nan_where_f_is_nan():
    """log(-1) is NaN in real arithmetic, but log(-1 + ih) = i pi: the complex extension is finite
    there, and its imaginary part over h was 1e16. f is not differentiable where it is NaN."""
    x = np.array([-1.0, 2.0])
    b = di.AutoFiniteDiff("complex")
    with np.errstate(invalid="ignore"):
        g = di.jacobian(np.log, b, x)
        assert np.isnan(g[0, 0]) and g[1, 1] == pytest.approx(0.5)
        assert np.all(np.isnan(di.pushforward(np.log, b, x, np.ones(2))[:1]))
        assert np.isnan(di.derivative(np.log, b, -1.0))
        prep = di.prepare_jacobian(np.log, b, np.ones(2))
        assert np.isnan(prep.jacobian(x)[0, 0])


def test_complex_step_of_f_returning_none_is_an_error():
    with pytest.raises(di.ArgumentError, match="f returned None"):
        di.gradient(lambda x: None, di.AutoFiniteDiff("complex"), np.ones(2))


def _abs2(x):
    z = x[0] + 1j * x[1]
    return np.real(z * np.conj(z))  # |z|^2 = x0^2 + x1^2: real, but not analytic in x


@pytest.mark.parametrize(
    "fn",
    [_abs2, lambda x: np.abs(x[0] + 1j * x[1]), lambda x: np.angle(x[0] + 1j * x[1]), lambda x: np.sum(x.real**2)],
    ids=["|z|^2", "abs", "angle", ".real"],
)
def test_complex_step_through_a_real_only_function_raises(fn):
    """f real at complex points is not analytic: its imaginary part, 0, is no derivative (the gradient
    of |z|^2 came out as [0, 0]). Every way to the complex step refuses; central differences work."""
    from concurrent.futures import ThreadPoolExecutor

    x = np.array([0.7, -1.3])
    cs = di.AutoFiniteDiff("complex")
    with ThreadPoolExecutor(2) as pool:
        for backend in (cs, di.AutoFiniteDiff("complex", executor=pool)):
            for op, extra in (("gradient", ()), ("pushforward", (np.array([0.0, 1.0]),)), ("hessian", ())):
                with pytest.raises(di.NotSupportedError, match="not complex-analytic"):
                    getattr(di, op)(fn, backend, x, *extra)
        for op, extra in (("hessian", ()), ("hvp", (np.array([0.0, 1.0]),))):  # central differences inside
            with pytest.raises(di.NotSupportedError, match="not complex-analytic"):
                getattr(di, op)(fn, di.SecondOrder(cs, di.AutoFiniteDiff()), x, *extra)
        vectorized = di.AutoFiniteDiff("complex", vectorized=True)
        with pytest.raises(di.NotSupportedError, match="not complex-analytic"):
            di.gradient(lambda xs: np.abs(xs[:, 0] + 1j * xs[:, 1]), vectorized, x)
    np.testing.assert_allclose(di.gradient(_abs2, di.AutoFiniteDiff(), x), 2 * x, rtol=1e-9)
    np.testing.assert_allclose(di.hessian(_abs2, di.AutoFiniteDiff(), x), 2 * np.eye(2), rtol=1e-5, atol=1e-5)
