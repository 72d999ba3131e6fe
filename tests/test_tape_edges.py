"""AutoTape at the edges: empty inputs and outputs, linspace with traced end points, std and var of a
single element or at zero variance, and every operator with x, tangents, Constant arrays and in-place
`y` buffers in any layout (Fortran order, transposed, strided, reversed, broadcast views, read-only),
any shape (0-d, (0,), (1,), 3-d) and float32. Each call is made twice, prepared at another point."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import diface as di

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402

TAPE = di.AutoTape()
FD = di.AutoFiniteDiff()
OPERATORS = ("gradient", "jacobian", "pushforward", "pullback", "hvp", "hessian")


def twice(call: Callable[[], Any]) -> Any:
    first = call()
    second = call()
    for a, b in zip(_leaves(first), _leaves(second)):
        np.testing.assert_array_equal(a, b)
    return first


def _leaves(r: Any) -> list:
    return [leaf for e in r for leaf in _leaves(e)] if isinstance(r, tuple) else [np.asarray(r)]


# -- empty inputs and outputs --------------------------------------------------------------------------------
EMPTY = {
    "slice to nothing": (lambda x: x[:0] * 2, np.array([0.5, 1.5, 2.5])),
    "repeat 0 times": (lambda x: np.repeat(x, 0), np.array([0.5, 1.5, 2.5])),
    "diff of one element": (lambda x: np.diff(x), np.array([0.5])),
    "empty x, vector y": (lambda x: np.sum(x) * np.ones(2) + np.array([1.0, 2.0]), np.zeros(0)),
    "empty x, empty y": (lambda x: x * 2, np.zeros(0)),
    "empty 2-d x": (lambda x: np.sum(x, axis=0), np.zeros((0, 3))),
}


@pytest.mark.parametrize("name", list(EMPTY))
def test_empty_inputs_and_outputs(name):
    f, x = EMPTY[name]
    y = np.asarray(f(x))
    want_jacobian = np.zeros(y.shape + x.shape)
    other = x + 1.0
    value, jac = twice(lambda: di.value_and_jacobian(f, TAPE, x))
    np.testing.assert_array_equal(value, y)
    assert jac.shape == y.shape + x.shape
    np.testing.assert_array_equal(jac, want_jacobian)
    prep = di.prepare_jacobian(f, TAPE, other)
    np.testing.assert_array_equal(twice(lambda: prep.jacobian(x)), want_jacobian)
    t, w = np.ones_like(x), np.ones_like(y)
    np.testing.assert_array_equal(twice(lambda: di.pushforward(f, TAPE, x, t)), np.zeros_like(y))
    np.testing.assert_array_equal(twice(lambda: di.pullback(f, TAPE, x, w)), np.zeros_like(x))
    push = di.prepare_pushforward(f, TAPE, other, (t, t))
    pull = di.prepare_pullback(f, TAPE, other, (w, w))
    for r in twice(lambda: push.pushforward(x, (t, t))):
        np.testing.assert_array_equal(r, np.zeros_like(y))
    for r in twice(lambda: pull.pullback(x, (w, w))):
        np.testing.assert_array_equal(r, np.zeros_like(x))


def test_scalar_input_empty_output():
    f = lambda t: np.sin(t) * np.ones(0)
    for op in ("derivative", "second_derivative"):
        assert twice(lambda op=op: getattr(di, op)(f, TAPE, 0.3)).shape == (0,)
        prep = getattr(di, f"prepare_{op}")(f, TAPE, 1.0)
        assert twice(lambda op=op, prep=prep: getattr(prep, op)(0.3)).shape == (0,)


def test_scalar_outputs_of_empty_inputs_to_second_order():
    f = lambda x: np.sum(x**2) + 1.0
    x = np.zeros(0)
    assert twice(lambda: di.gradient(f, TAPE, x)).shape == (0,)
    assert twice(lambda: di.prepare_hessian(f, TAPE, x).hessian(x)).shape == (0, 0)
    assert twice(lambda: di.prepare_hvp(f, TAPE, x, x).hvp(x, x)).shape == (0,)


# -- linspace with traced end points -------------------------------------------------------------------------
@pytest.mark.parametrize("num, endpoint", [(5, True), (5, False), (1, True), (0, True), (2, True)])
def test_linspace_with_traced_start_and_stop(num, endpoint):
    f = lambda x: np.linspace(x[0], x[1], num, endpoint=endpoint)
    x = np.array([1.2, 3.4])
    div = (num - 1) if endpoint else num
    frac = np.arange(num) / div if div else np.zeros(num)
    want = np.stack([1.0 - frac, frac], axis=-1)
    if endpoint and num > 1:
        want[-1] = [0.0, 1.0]
    value, jac = twice(lambda: di.value_and_jacobian(f, TAPE, x))
    np.testing.assert_allclose(value, np.linspace(1.2, 3.4, num, endpoint=endpoint), rtol=1e-15)
    np.testing.assert_allclose(jac, want, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(twice(lambda: di.prepare_jacobian(f, TAPE, x + 1).jacobian(x)), want, atol=1e-15)


def test_linspace_arrays_axis_retstep_and_friends():
    def f(x):
        grid, step = np.linspace(x[:2], x[2:4], 4, axis=1, retstep=True)
        return np.concatenate([grid.ravel(), step, np.logspace(x[0], x[1], 3), np.geomspace(x[2], x[3], 3)])

    def f_autograd(x):
        s, e = x[:2], x[2:4]
        step = (e - s) / 3.0
        grid = anp.stack([s + k * step for k in range(3)] + [e], axis=1)
        lin = anp.stack([x[0], (x[0] + x[1]) / 2.0, x[1]])
        geo = anp.stack([x[2], anp.sqrt(x[2] * x[3]), x[3]])
        return anp.concatenate([anp.ravel(grid), step, 10.0**lin, geo])

    x = np.array([0.2, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(f(x), f_autograd(x), rtol=1e-14)
    want = autograd.jacobian(f_autograd)(x)
    np.testing.assert_allclose(twice(lambda: di.jacobian(f, TAPE, x)), want, rtol=1e-12)
    np.testing.assert_allclose(twice(lambda: di.prepare_jacobian(f, TAPE, x + 0.1).jacobian(x)), want, rtol=1e-12)


# -- std and var at zero variance ----------------------------------------------------------------------------
def test_std_and_var_of_one_element_have_derivative_zero():
    torch = pytest.importorskip("torch")
    cases = [
        (lambda x: np.std(x), np.array([2.0])),
        (lambda x: np.var(x), np.array([[2.0]])),
        (lambda x: x.std(ddof=0), np.array(2.0)),
        (lambda x: np.sum(np.std(x, axis=1)), np.array([[2.0], [-1.0]])),
        (lambda x: np.sum(np.var(x, axis=0) + np.std(x, axis=0)), np.array([[2.0, -1.0]])),
    ]
    for f, x in cases:
        np.testing.assert_array_equal(twice(lambda f=f, x=x: di.gradient(f, TAPE, x)), np.zeros_like(x))
        prep = di.prepare_gradient(f, TAPE, np.array(x + 1.0))
        np.testing.assert_array_equal(twice(lambda x=x, prep=prep: prep.gradient(x)), np.zeros_like(x))
        hess = di.prepare_hessian(f, TAPE, np.array(x + 1.0))
        np.testing.assert_array_equal(twice(lambda x=x, hess=hess: hess.hessian(x)), 0.0)
    t = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    torch.std(t, unbiased=False).backward()
    assert t.grad.item() == 0.0
    assert autograd.grad(lambda x: anp.std(x))(np.array([2.0]))[0] == 0.0


def test_std_at_zero_variance_of_several_elements_is_zero_as_torch():
    """autograd and JAX give NaN there; the tape gives 0, as PyTorch does (std is not differentiable at
    zero variance; 0 is the minimum-norm subgradient)."""
    torch = pytest.importorskip("torch")
    x = np.array([[2.0, 2.0, 2.0], [1.0, 3.0, 2.5]])
    t = torch.tensor(x, requires_grad=True)
    torch.std(t, dim=1, unbiased=False).sum().backward()
    f = lambda x: np.sum(np.std(x, axis=1))
    np.testing.assert_allclose(twice(lambda: di.gradient(f, TAPE, x)), t.grad.numpy(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(
        twice(lambda: di.prepare_gradient(f, TAPE, x + 1).gradient(x)), t.grad.numpy(), rtol=1e-14, atol=1e-15
    )


# -- layouts -------------------------------------------------------------------------------------------------
def layouts(a: np.ndarray, writable: bool = False) -> Iterator[tuple[str, np.ndarray]]:
    """`a`'s values in other memory layouts (a broadcast view repeats a's first entry along axis 0)."""
    yield "C order", a.copy()
    if a.ndim >= 2:
        yield "Fortran order", np.asfortranarray(a)
        yield "transposed", np.ascontiguousarray(np.swapaxes(a, 0, 1)).swapaxes(0, 1)
    if a.ndim >= 1:
        big = np.zeros((2 * a.shape[0] + 1, *a.shape[1:]), a.dtype)
        big[1::2] = a
        yield "strided slice", big[1::2]
        yield "reversed strides", np.flip(np.flip(a, 0).copy(), 0)
    if not writable:
        ro = a.copy()
        ro.flags.writeable = False
        yield "read-only", ro
        if a.ndim >= 1 and a.shape[0] > 0:
            yield "broadcast view", np.broadcast_to(a[:1], a.shape)


def _scalar_f(xp: Any) -> Callable:
    return lambda x, c: xp.sum(xp.sin(x) * c) + xp.sum(x**3) / 3.0


def _vector_f(xp: Any) -> Callable:
    return lambda x, c: xp.sin(x) * c + (x[::-1] if xp.ndim(x) else x) ** 2


def _in_place_f(y: Any, x: Any, c: Any) -> None:
    y[...] = np.sin(x) * c + (x[::-1] if np.ndim(x) else x) ** 2


def _reference(op: str, x: np.ndarray, c: np.ndarray, t: np.ndarray, w: np.ndarray) -> Any:
    """autograd's result for the operator, on contiguous float64 copies."""
    x, c, t, w = (np.array(v, dtype=np.float64) for v in (x, c, t, w))
    g, f = _scalar_f(anp), _vector_f(anp)
    if op == "gradient":
        return autograd.grad(lambda v: g(v, c))(x)
    jac = autograd.jacobian(lambda v: f(v, c))(x).reshape(x.size, x.size)
    hess = autograd.hessian(lambda v: g(v, c))(x).reshape(x.size, x.size)
    return {
        "jacobian": jac.reshape(x.shape + x.shape),
        "pushforward": (jac @ t.ravel()).reshape(x.shape),
        "pullback": (w.ravel() @ jac).reshape(x.shape),
        "hvp": (hess @ t.ravel()).reshape(x.shape),
        "hessian": hess.reshape(x.shape + x.shape),
    }[op]


def _call(op: str, x: Any, c: Any, t: Any, w: Any, prep: Any = None) -> Any:
    ctx = di.Constant(c)
    f = _scalar_f(np) if op in ("gradient", "hvp", "hessian") else _vector_f(np)
    extra = {"pushforward": (t,), "hvp": (t,), "pullback": (w,)}.get(op, ())
    if prep is None:
        return getattr(di, op)(f, TAPE, x, *extra, ctx)
    return getattr(prep, op)(x, *extra, ctx)


def _prepare(op: str, x: Any, c: Any, t: Any, w: Any) -> Any:
    f = _scalar_f(np) if op in ("gradient", "hvp", "hessian") else _vector_f(np)
    extra = {"pushforward": (t,), "hvp": (t,), "pullback": (w,)}.get(op, ())
    return getattr(di, f"prepare_{op}")(f, TAPE, np.array(x + 0.25), *extra, di.Constant(np.array(c + 1.0)))


SHAPES = [(4,), (3, 2), (2, 3, 2), (1,), ()]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPERATORS)
def test_every_operator_in_every_layout(op, shape):
    rng = np.random.default_rng(len(shape))
    x0, c0, t0, w0 = (np.array(rng.standard_normal(shape)) for _ in range(4))
    prep = _prepare(op, x0, c0, t0, w0)
    for role in ("x", "c", "t", "w"):
        base = {"x": x0, "c": c0, "t": t0, "w": w0}
        for name, arranged in layouts(base[role]):
            args = dict(base, **{role: arranged})
            contiguous = {k: np.array(v) for k, v in args.items()}
            want = _reference(op, contiguous["x"], contiguous["c"], contiguous["t"], contiguous["w"])
            for p in (None, prep):
                got = twice(lambda p=p, a=args: _call(op, a["x"], a["c"], a["t"], a["w"], p))
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{role} {name}")
            assert np.array_equal(args[role], arranged)  # inputs intact


@pytest.mark.parametrize("shape", [(4,), (3, 2), (2, 3, 2)], ids=str)
def test_in_place_functions_write_into_any_layout(shape):
    rng = np.random.default_rng(3)
    x, c = rng.standard_normal(shape), rng.standard_normal(shape)
    want_y = _vector_f(np)(x, c)
    want_j = autograd.jacobian(lambda v: _vector_f(anp)(v, c))(x)
    prep = di.prepare_jacobian(_in_place_f, TAPE, x + 0.5, di.Constant(c), y=np.zeros(shape))
    for name, y in layouts(np.full(shape, np.nan), writable=True):
        for p in (None, prep):
            y[...] = np.nan
            if p is None:
                j = twice(lambda y=y: di.jacobian(_in_place_f, TAPE, x, di.Constant(c), y=y))
            else:
                j = twice(lambda y=y, p=p: p.jacobian(x, di.Constant(c), y=y))
            np.testing.assert_allclose(y, want_y, rtol=1e-14, err_msg=name)
            np.testing.assert_allclose(j, want_j, rtol=1e-12, err_msg=name)


def test_scalar_inputs_float32_and_zero_d_arrays():
    f = lambda t: np.stack([np.sin(t) * t, np.exp(0.5 * t)])
    d = lambda t: np.array([np.cos(t) * t + np.sin(t), 0.5 * np.exp(0.5 * t)])
    d2 = lambda t: np.array([2 * np.cos(t) - t * np.sin(t), 0.25 * np.exp(0.5 * t)])
    for t in (0.7, np.float64(0.7), np.array(0.7)):
        np.testing.assert_allclose(twice(lambda t=t: di.derivative(f, TAPE, t)), d(0.7), rtol=1e-14)
        prep = di.prepare_second_derivative(f, TAPE, np.array(t + 1.0) if isinstance(t, np.ndarray) else t + 1.0)
        np.testing.assert_allclose(twice(lambda t=t, prep=prep: prep.second_derivative(t)), d2(0.7), rtol=1e-14)
    x32 = np.array([[0.5, -1.0], [2.0, 0.25]], dtype=np.float32)
    g = lambda x: np.sum(np.sin(x) * x)
    for name, x in layouts(x32):
        grad = twice(lambda x=x: di.prepare_gradient(g, TAPE, x32 + 1).gradient(x))
        assert grad.dtype == np.float32, name
        np.testing.assert_allclose(grad, np.cos(np.array(x)) * np.array(x) + np.sin(np.array(x)), rtol=1e-6)
        hess = twice(lambda x=x: di.hessian(g, TAPE, x))
        assert hess.dtype == np.float32
        jac = twice(lambda x=x: di.prepare_jacobian(lambda v: np.sin(v) * v, TAPE, x32).jacobian(x))
        assert jac.dtype == np.float32


def test_unprepared_results_are_fresh_arrays():
    """Never a view of the caller's tangent or of a value inside the tape."""
    t = np.arange(3.0)
    r = di.pushforward(lambda x: x, TAPE, np.ones(3), t)
    assert not np.shares_memory(r, t) and r.flags.writeable
    g = di.gradient(np.sum, TAPE, np.ones(3))
    assert g.flags.writeable and g.flags.owndata
    r = di.pullback(lambda x: x[::-1], TAPE, np.ones(3), t)
    assert not np.shares_memory(r, t)
