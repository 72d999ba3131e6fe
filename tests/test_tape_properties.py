"""AutoTape against autograd and JAX on random compositions of NumPy operations (hypothesis).

A program is a list of steps, each applying an operation to values computed before (x itself first);
the same program is written with NumPy (for AutoTape), autograd.numpy and jax.numpy. Every operator
the tape runs natively is compared: gradient, jacobian, pushforward, pullback, hvp, prepared at another
point and unprepared.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import diface as di

hypothesis = pytest.importorskip("hypothesis")
autograd = pytest.importorskip("autograd")
jax = pytest.importorskip("jax")

import autograd.numpy as anp  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

N = 6  # every value in a program is a vector of N elements
RNG = np.random.default_rng(7)
A = RNG.standard_normal((N, N)) / N
IDX = np.array([3, 0, 0, 5, 2, 1])  # repeated index: scatter-add in reverse
W = RNG.standard_normal(N)


def _smooth_abs(xp: Any, a: Any) -> Any:
    return xp.sqrt(a * a + 0.1)


# (name, arity, function of (xp, *operands)); all map N-vectors to N-vectors, smoothly enough that
# finite values come out for inputs in [-2, 2] and values kept in range by the tanh/sin steps
UNARY = [
    ("sin", lambda xp, a: xp.sin(a)),
    ("cos", lambda xp, a: xp.cos(a)),
    ("tanh", lambda xp, a: xp.tanh(a)),
    ("exp", lambda xp, a: xp.exp(0.3 * xp.tanh(a))),
    ("log1p", lambda xp, a: xp.log1p(a * a)),
    ("sqrt", lambda xp, a: _smooth_abs(xp, a)),
    ("square", lambda xp, a: a**2 / 4.0),
    ("cube", lambda xp, a: xp.power(xp.tanh(a), 3)),
    ("arctan", lambda xp, a: xp.arctan(a)),
    ("neg", lambda xp, a: -a),
    ("reverse", lambda xp, a: a[::-1]),
    ("roll", lambda xp, a: xp.concatenate([a[2:], a[:2]])),
    ("reshape", lambda xp, a: xp.reshape(xp.reshape(a, (2, N // 2)).T, (N,))),
    ("matvec", lambda xp, a: xp.dot(xp.asarray(A), a)),
    ("einsum", lambda xp, a: xp.einsum("ij,j->i", xp.asarray(A), a)),
    ("gather", lambda xp, a: a[IDX]),
    ("cumsum", lambda xp, a: xp.cumsum(a) / N),
    ("clip", lambda xp, a: xp.clip(a, -0.7, 0.8)),
    ("center", lambda xp, a: a - xp.mean(a)),
    ("normalize", lambda xp, a: a / xp.sqrt(xp.sum(a * a) + 1.0)),
    ("softmax", lambda xp, a: xp.exp(a - xp.max(a)) / xp.sum(xp.exp(a - xp.max(a)))),
    ("prodscale", lambda xp, a: a * xp.prod(xp.tanh(a) * 0.5 + 1.0)),
    ("stack", lambda xp, a: xp.sum(xp.stack([a, xp.sin(a)], axis=1), axis=1)),
    ("outer", lambda xp, a: xp.sum(xp.outer(a, xp.tanh(a)), axis=0) / N),
    ("broadcast", lambda xp, a: xp.sum(xp.reshape(a, (N, 1)) * xp.reshape(xp.asarray(W), (1, N)), axis=0) / N),
]
BINARY = [
    ("add", lambda xp, a, b: a + b),
    ("sub", lambda xp, a, b: a - b),
    ("mul", lambda xp, a, b: a * b),
    ("div", lambda xp, a, b: a / (1.0 + b * b)),
    ("maximum", lambda xp, a, b: xp.maximum(a, b)),
    ("minimum", lambda xp, a, b: xp.minimum(a, b)),
    ("where", lambda xp, a, b: xp.where(a > b, a * b, a - b)),
    ("hypot", lambda xp, a, b: xp.sqrt(a * a + b * b + 0.1)),
    ("arctan2", lambda xp, a, b: xp.arctan2(a, b + 3.0)),
    ("dot", lambda xp, a, b: a * xp.dot(a, b) / N),
]


@st.composite
def programs(draw: Any) -> list:
    steps = []
    for k in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            name, _ = draw(st.sampled_from(UNARY))
            steps.append((name, (draw(st.integers(0, k)),)))
        else:
            name, _ = draw(st.sampled_from(BINARY))
            steps.append((name, (draw(st.integers(0, k)), draw(st.integers(0, k)))))
    return steps


OPS = {name: fn for name, fn in UNARY + BINARY}


def build(program: list, xp: Any, scalar: bool) -> Any:
    def f(x: Any) -> Any:
        values = [x]
        for name, args in program:
            values.append(OPS[name](xp, *(values[i] for i in args)))
        y = values[-1]
        return xp.sum(xp.sin(y) * xp.asarray(W)) if scalar else y

    return f


#: the clip bounds of the programs: at a bound the engines' derivatives differ by convention (docs/backends.md,
#: "At non-differentiable points"), so no input lies on one
CLIP_BOUNDS = (-0.7, 0.8, 0.9)


def _off_the_bounds(v: float, bounds: tuple = CLIP_BOUNDS) -> bool:
    return all(abs(v - b) > 1e-6 for b in bounds)


coordinates = st.floats(-2.0, 2.0, allow_nan=False, allow_subnormal=False).filter(_off_the_bounds)
points = st.lists(coordinates, min_size=N, max_size=N).map(np.array)
SETTINGS = settings(max_examples=100, deadline=None, derandomize=True)
TAPE = di.AutoTape()


def _close(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11)


@pytest.mark.slow
@SETTINGS
@given(programs(), points, points)
def test_gradient_and_hvp_match_autograd_and_jax(program: list, x: np.ndarray, x0: np.ndarray) -> None:
    f, fa, fj = build(program, np, True), build(program, anp, True), build(program, jnp, True)
    expected = autograd.grad(fa)(x)
    _close(jax.grad(fj)(x), expected)
    _close(di.gradient(f, TAPE, x), expected)
    _close(di.prepare_gradient(f, TAPE, x0).gradient(x), expected)
    v = np.cos(np.arange(N) + x0)
    hv = jax.jvp(jax.grad(fj), (x,), (v,))[1]
    _close(di.hvp(f, TAPE, x, v), hv)
    g, hvs = di.prepare_hvp(f, TAPE, x0, (v, x0)).gradient_and_hvp(x, (v, x0))
    _close(g, expected)
    _close(hvs[0], hv)
    _close(hvs[1], jax.jvp(jax.grad(fj), (x,), (x0,))[1])


@pytest.mark.slow
@SETTINGS
@given(programs(), points, points)
def test_jacobian_pushforward_pullback_match_jax(program: list, x: np.ndarray, x0: np.ndarray) -> None:
    f, fa, fj = build(program, np, False), build(program, anp, False), build(program, jnp, False)
    jac = jax.jacobian(fj)(x)
    _close(autograd.jacobian(fa)(x), jac)
    _close(di.jacobian(f, TAPE, x), jac)
    _close(di.prepare_jacobian(f, TAPE, x0).jacobian(x), jac)
    t1, t2 = np.sin(np.arange(N) + x0), x0
    jvps = tuple(jax.jvp(fj, (x,), (t,))[1] for t in (t1, t2))
    for got, want in zip(di.prepare_pushforward(f, TAPE, x0, (t1, t2)).pushforward(x, (t1, t2)), jvps):
        _close(got, want)
    _close(di.pushforward(f, TAPE, x, t1), jvps[0])
    _, vjp = jax.vjp(fj, x)
    vjps = tuple(vjp(t)[0] for t in (t1, t2))
    for got, want in zip(di.prepare_pullback(f, TAPE, x0, (t1, t2)).pullback(x, (t1, t2)), vjps):
        _close(got, want)
    _close(di.pullback(f, TAPE, x, t2), vjps[1])


# -- matrices: axis reductions with keepdims, matmul chains, transposes, broadcasting ---------------
R, C = 3, 4
B = RNG.standard_normal((C, C)) / C
L = RNG.standard_normal((R, R)) / R
LO = -RNG.uniform(0.2, 0.8, (R, 1))
WM = RNG.standard_normal((R, C))

MATRIX_UNARY = [
    ("tanh", lambda xp, m: xp.tanh(m)),
    ("sin", lambda xp, m: xp.sin(m)),
    ("right", lambda xp, m: m @ xp.asarray(B)),
    ("left", lambda xp, m: xp.matmul(xp.asarray(L), m)),
    ("gram", lambda xp, m: (m @ m.T) @ m / C),
    ("colnorm", lambda xp, m: m / xp.sqrt(xp.sum(m * m, axis=0, keepdims=True) + 1.0)),
    ("rowmax", lambda xp, m: m - xp.max(m, axis=1, keepdims=True)),
    ("rowmin", lambda xp, m: m * xp.min(m, axis=-1)[:, None]),
    ("rowmean", lambda xp, m: m - xp.mean(m, axis=1)[:, None]),
    ("swapcols", lambda xp, m: xp.concatenate([m[:, 2:], m[:, :2]], axis=1)),
    ("flipud", lambda xp, m: m[::-1]),
    ("einsum", lambda xp, m: xp.einsum("ij,jk->ik", m, xp.asarray(B))),
    ("stackmean", lambda xp, m: xp.mean(xp.stack([m, xp.sin(m)]), axis=0)),
    ("reshapeT", lambda xp, m: xp.reshape(m.T, (R, C))),
    ("leaky", lambda xp, m: xp.where(m > 0, m, 0.1 * m)),
    ("colsum", lambda xp, m: m * xp.sum(xp.tanh(m), axis=0) / R),
    ("clip", lambda xp, m: xp.clip(m, xp.asarray(LO), 0.9)),
    ("var", lambda xp, m: m * xp.var(m, axis=0, keepdims=True)),
    ("row", lambda xp, m: m + m[1]),
    ("expand", lambda xp, m: xp.squeeze(xp.expand_dims(m, 0), axis=0) * xp.tanh(m[:, :1])),
]
MATRIX_BINARY = [
    ("add", lambda xp, a, b: a + b),
    ("mul", lambda xp, a, b: a * b),
    ("maximum", lambda xp, a, b: xp.maximum(a, b)),
    ("abT", lambda xp, a, b: (a @ b.T) @ a / C),
]


@st.composite
def matrix_programs(draw: Any) -> list:
    steps = []
    for k in range(draw(st.integers(1, 5))):
        if draw(st.integers(0, 3)):
            name, _ = draw(st.sampled_from(MATRIX_UNARY))
            steps.append((name, (draw(st.integers(0, k)),)))
        else:
            name, _ = draw(st.sampled_from(MATRIX_BINARY))
            steps.append((name, (draw(st.integers(0, k)), draw(st.integers(0, k)))))
    return steps


MATRIX_OPS = {name: fn for name, fn in MATRIX_UNARY + MATRIX_BINARY}


def build_matrix(program: list, xp: Any, scalar: bool) -> Any:
    def f(x: Any) -> Any:
        values = [x]
        for name, args in program:
            values.append(MATRIX_OPS[name](xp, *(values[i] for i in args)))
        y = values[-1]
        return xp.sum(xp.sin(y) * xp.asarray(WM)) if scalar else y

    return f


matrices = st.lists(
    coordinates.filter(lambda v: _off_the_bounds(v, tuple(LO.ravel()))), min_size=R * C, max_size=R * C
).map(lambda v: np.array(v).reshape(R, C))


@pytest.mark.slow
@SETTINGS
@given(matrix_programs(), matrices, matrices)
def test_matrix_programs_match_jax(program: list, x: np.ndarray, x0: np.ndarray) -> None:
    fs, fjs = build_matrix(program, np, True), build_matrix(program, jnp, True)
    _close(di.prepare_gradient(fs, TAPE, x0).gradient(x), jax.grad(fjs)(x))
    _close(autograd.grad(build_matrix(program, anp, True))(x), jax.grad(fjs)(x))
    v = np.cos(x0)
    _close(di.prepare_hvp(fs, TAPE, x0, v).hvp(x, v), jax.jvp(jax.grad(fjs), (x,), (v,))[1])
    f, fj = build_matrix(program, np, False), build_matrix(program, jnp, False)
    _close(di.prepare_jacobian(f, TAPE, x0).jacobian(x), jax.jacobian(fj)(x))
    t = (np.sin(x0), x0)
    _, vjp = jax.vjp(fj, x)
    for got, want in zip(di.prepare_pullback(f, TAPE, x0, t).pullback(x, t), (vjp(s)[0] for s in t)):
        _close(got, want)


# -- writes and views: autograd and JAX have no in-place writes, so against finite differences --------
VIEW_SLICES = [slice(None), slice(1, None), slice(None, -2), slice(None, None, 2), slice(None, None, -1), slice(2, 5)]
WRITES = ["set", "view_imul", "iadd", "copyto", "reshape_set", "fancy_set", "view_of_view", "mask_set"]


@st.composite
def write_programs(draw: Any) -> list:
    n = len(VIEW_SLICES) - 1
    return [
        (draw(st.sampled_from(WRITES)), draw(st.integers(0, n)), draw(st.integers(0, n)))
        for _ in range(draw(st.integers(1, 6)))
    ]


MASK_AT = 0.5


def run_writes(program: list, x: Any, margins: list | None = None) -> Any:
    """NumPy code writing into an array and into views of it (the same code runs on plain arrays).
    `margins` collects how far the masked values are from the mask's edge (on plain arrays)."""
    y = x * 1.0
    for kind, i, j in program:
        a, b = VIEW_SLICES[i], VIEW_SLICES[j]
        if kind == "set":
            n = len(y[a])
            y[a] = np.sin(y[b][:n]) if len(y[b]) >= n else np.sin(y[b][0])
        elif kind == "view_imul":  # writing into a view writes into y
            v = y[a]
            v *= 1.5
            v += x[0]
        elif kind == "iadd":
            y += np.sin(y) * 0.3
        elif kind == "copyto":
            n = len(y[a])
            np.copyto(y[a], np.tanh(y[b][:n]) if len(y[b]) >= n else 0.5)
        elif kind == "reshape_set":  # a reshape of y is a view too
            r = y.reshape(2, 3)
            r[i % 2, j % 3] = r[(i + 1) % 2, j % 3] ** 2
        elif kind == "fancy_set":
            y[[i % N, (i + 2) % N]] = y[[j % N, (j + 3) % N]] * 2.0
        elif kind == "view_of_view":
            w = y[a][::-1][:2]
            w[...] = w * y[b][-1]
        else:  # a traced mask
            if margins is not None:
                margins.append(float(np.min(np.abs(y - MASK_AT))))
            y[y > MASK_AT] = np.cos(y[y > MASK_AT])
    return y * x


@pytest.mark.slow
@SETTINGS
@given(write_programs(), points)
def test_writes_into_arrays_and_views_match_finite_differences(program: list, x: np.ndarray) -> None:
    margins: list = []
    run_writes(program, x, margins)
    hypothesis.assume(not margins or min(margins) > 1e-3)  # finite differences must not cross the mask's edge
    f = lambda x: run_writes(program, x)
    want = di.jacobian(f, di.AutoFiniteDiff(), x)
    value, jac = di.value_and_jacobian(f, TAPE, x)
    np.testing.assert_allclose(value, f(x), rtol=1e-15)  # the tape's values follow NumPy's view semantics
    np.testing.assert_allclose(jac, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(di.prepare_jacobian(f, TAPE, x).jacobian(x), want, rtol=1e-6, atol=1e-6)
