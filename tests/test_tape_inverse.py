"""AutoTape's inverse accumulation (`prepare_inverse_linearize`): J⁻¹v and J⁻ᵀv step by step.

The linearizer is called directly, on a `Problem` built the way the core builds one; each function is
checked against solves with its Jacobian, against forward products (J (J⁻¹ v) = v), and for the
duality <J⁻¹v, w> = <v, J⁻ᵀw>."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

import diface as di
from diface._arrays import NUMPY
from diface._problem import Problem
from diface.backends.tape.analysis.inverse_plan import MAX_DENSE

RNG = np.random.default_rng(7)


def linearizer(f: Callable, x: np.ndarray, single_use: bool = False):
    lin = di.AutoTape().prepare_inverse_linearize(Problem(f, x, (), None, NUMPY, single_use=single_use))
    assert lin is not None
    return lin


def kinds(lin) -> list[str]:
    return [lump.kind for lump in lin.plan.lumps]


# -- functions -------------------------------------------------------------------------------------------------
def coupling_flow(n: int, layers: int, hidden: int, seed: int = 0, scale: float = 0.3, dtype=np.float64) -> Callable:
    """RealNVP-style affine coupling layers, halves swapped between layers and a fixed permutation."""
    rng = np.random.default_rng(seed)
    h = n // 2
    ws = [
        (
            rng.normal(size=(hidden, h)) / np.sqrt(h),
            rng.normal(size=(h, hidden)) * scale / np.sqrt(hidden),
            rng.normal(size=(h, hidden)) / np.sqrt(hidden),
        )
        for _ in range(layers)
    ]
    ws = [tuple(w.astype(dtype) for w in layer) for layer in ws]
    perm = rng.permutation(n)

    def f(x):
        z = x
        for w1, w2, w3 in ws:
            z1, z2 = z[:h], z[h:]
            hidden_ = np.tanh(w1 @ z1)
            s, t = np.tanh(w2 @ hidden_), w3 @ hidden_
            z = np.concatenate([z2 * np.exp(s) + t, z1])
            z = z[perm]
        return z

    return f


def revnet(x):
    """Additive coupling (RevNet blocks), reshaped halves."""
    a, b = x[:3], x[3:]
    for k in range(3):
        a = a + np.sin(b * (k + 1)) * 0.5
        b = b + np.tanh(a) ** 2
    return np.concatenate([b, a])


def autoregressive(x):
    """A triangular map: y_i = x_i exp(s_i(x_<i)) + t_i(x_<i), through a strictly lower mask."""
    n = x.shape[0]
    mask = np.tril(np.ones((n, n)), -1) * np.linspace(0.1, 0.5, n)[:, None]
    s = np.tanh(mask @ x)
    return x * np.exp(s) + np.sin(mask @ x)


def leapfrog(x, steps: int = 4, eps: float = 0.1):
    """Hamiltonian dynamics: kick, drift, kick; U(q) = sum(q^4/4 + cos q)."""
    h = x.shape[0] // 2
    q, p = x[:h], x[h:]
    for _ in range(steps):
        p = p - eps / 2 * (q**3 - np.sin(q))
        q = q + eps * p
        p = p - eps / 2 * (q**3 - np.sin(q))
    return np.concatenate([q, p])


def bijections(x):
    return np.tanh(np.logaddexp(0.0, np.exp(x * 0.5) - 1.0))


def mixing(x):
    """A dense step (a constant invertible matrix) between elementwise ones."""
    m = np.eye(x.shape[0]) + 0.3 * np.cos(np.arange(x.shape[0] ** 2).reshape(x.shape[0], -1))
    return np.sinh(m @ np.tanh(x))


def matrix_valued(x):
    """A 2-d x: transposes and row scalings."""
    y = np.exp(x[0]) * x[1]
    return np.stack([x[0] + np.sin(y), y]).T.reshape(x.shape)


def broadcast_coupling(x):
    """A coupling whose update reads a reduction and an element of the passed-through half (VJPs that
    sum a broadcast and scatter into a slot)."""
    a, b = x[:3], x[3:]
    s = np.sum(np.sin(a))
    b = b * np.exp(0.1 * s) + a[0] * np.cos(a)
    return np.concatenate([a, b])


def read_within(x):
    """A dense step two of whose new values are read again inside the step (b2 by t), both coupled to
    a passed-through c."""
    a, b, c = x[:2], x[2:4], x[4:]
    u = np.exp(0.3 * a) * (1.5 + np.sin(c))
    b2 = b * u
    t = b2 * b
    a2 = a + 0.2 * t
    return np.concatenate([a2, b2, c])


CASES = {
    "broadcast": (broadcast_coupling, (6,)),
    "read-within": (read_within, (6,)),
    "coupling": (coupling_flow(8, 4, 6), (8,)),
    "revnet": (revnet, (6,)),
    "autoregressive": (autoregressive, (5,)),
    "leapfrog": (leapfrog, (6,)),
    "bijections": (bijections, (7,)),
    "mixing": (mixing, (5,)),
    "matrix": (matrix_valued, (2, 3)),
}


# -- agreement -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_inverse_products_solve_with_the_jacobian(name):
    f, shape = CASES[name]
    x = RNG.normal(size=shape) * 0.7
    lin = linearizer(f, x)(x, (), None)
    np.testing.assert_allclose(lin.value, f(x), rtol=1e-12, atol=1e-12)
    n = x.size
    jac = di.jacobian(f, di.AutoTape(), x).reshape(n, n)
    v = RNG.normal(size=(3, *shape))
    w = RNG.normal(size=(3, *shape))
    dx = lin.push(v)
    dy = lin.pull(w)
    assert dx.shape == v.shape and dy.shape == w.shape
    np.testing.assert_allclose(dx.reshape(3, n), np.linalg.solve(jac, v.reshape(3, n).T).T, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(dy.reshape(3, n), np.linalg.solve(jac.T, w.reshape(3, n).T).T, rtol=1e-9, atol=1e-10)
    # J (J⁻¹ v) = v through forward mode, and <J⁻¹v, w> = <v, J⁻ᵀw>
    back = di.pushforward(f, di.AutoTape(), x, dx[0])
    np.testing.assert_allclose(back, v[0], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.vdot(dx[0], w[1]), np.vdot(v[0], dy[1]), rtol=1e-9)


def test_a_coupling_flow_is_cut_into_cheap_steps():
    f, _ = CASES["coupling"]
    lin = linearizer(f, np.zeros(8))
    assert set(kinds(lin)) == {"diag", "perm"}  # nothing formed densely
    assert [lump.size for lump in lin.plan.lumps if lump.kind == "diag"] == [4] * 4


def test_elementwise_leapfrog_and_revnet_steps_are_divisions():
    for name in ("leapfrog", "revnet", "bijections"):
        f, shape = CASES[name]
        assert "dense" not in kinds(linearizer(f, np.ones(shape))), name


def test_a_dense_step_is_formed_within_the_limit():
    lin = linearizer(mixing, np.ones(5))
    assert "dense" in kinds(lin) and max(lump.size for lump in lin.plan.lumps) <= MAX_DENSE


def test_calls_twice_and_at_other_points():
    f, shape = CASES["leapfrog"]
    lin = linearizer(f, np.zeros(shape))
    for _ in range(2):
        for x in (RNG.normal(size=shape), RNG.normal(size=shape)):
            jac = di.jacobian(f, di.AutoTape(), x)
            v = RNG.normal(size=(1, *shape))
            lin_x = lin(x, (), None)
            np.testing.assert_allclose(lin_x.push(v)[0], np.linalg.solve(jac, v[0]), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(lin_x.push(v)[0], np.linalg.solve(jac, v[0]), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(lin_x.pull(v)[0], np.linalg.solve(jac.T, v[0]), rtol=1e-10, atol=1e-12)


def test_single_use_preparation():
    f, shape = CASES["revnet"]
    x = RNG.normal(size=shape)
    lin = linearizer(f, x, single_use=True)(x, (), None)
    jac = di.jacobian(f, di.AutoTape(), x)
    v = RNG.normal(size=(2, *shape))
    np.testing.assert_allclose(lin.push(v), np.linalg.solve(jac, v.T).T, rtol=1e-10, atol=1e-12)


def test_float32():
    f = coupling_flow(8, 3, 5, dtype=np.float32)
    x = RNG.normal(size=8).astype(np.float32)
    lin = linearizer(f, x)(x, (), None)
    v = RNG.normal(size=(2, 8)).astype(np.float32)
    dx, dy = lin.push(v), lin.pull(v)
    assert dx.dtype == np.float32 and dy.dtype == np.float32
    jac = di.jacobian(coupling_flow(8, 3, 5), di.AutoTape(), x.astype(np.float64))
    np.testing.assert_allclose(dx, np.linalg.solve(jac, v.T.astype(np.float64)).T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dy, np.linalg.solve(jac.T, v.T.astype(np.float64)).T, rtol=1e-4, atol=1e-5)


def test_identity_and_in_place_reuse_of_the_output_buffer():
    lin = linearizer(lambda x: x, np.ones(3))(np.ones(3), (), None)
    v = RNG.normal(size=(2, 3))
    np.testing.assert_array_equal(lin.push(v), v)
    np.testing.assert_array_equal(lin.pull(v), v)


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_vector_and_batches_agree_and_results_are_fresh(name):
    """A batch of one runs the unbatched compiled sweep, larger ones a batched sweep per size; what a
    product returns is the caller's (later products do not write over it)."""
    f, shape = CASES[name]
    x = RNG.normal(size=shape) * 0.7
    lin = linearizer(f, x)(x, (), None)
    v = RNG.normal(size=(4, *shape))
    for sweep in (lin.push, lin.pull):
        whole = sweep(v)
        first = sweep(v[:1])
        np.testing.assert_allclose(first[0], whole[0], rtol=1e-12, atol=1e-13)
        kept = first.copy()
        for size in (1, 2, 4):
            np.testing.assert_allclose(sweep(v[:size]), whole[:size], rtol=1e-12, atol=1e-13)
        np.testing.assert_array_equal(first, kept)


def test_threads_share_a_preparation():
    f, shape = CASES["coupling"]
    lin = linearizer(f, np.zeros(shape))
    points = [RNG.normal(size=shape) for _ in range(4)]
    expected = [np.linalg.solve(di.jacobian(f, di.AutoTape(), x), np.ones(shape)) for x in points]
    errors: list = []

    def work(i: int) -> None:
        for _ in range(20):
            got = lin(points[i], (), None).push(np.ones((1, *shape)))[0]
            if not np.allclose(got, expected[i], rtol=1e-10, atol=1e-12):
                errors.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# -- singular ------------------------------------------------------------------------------------------------
def narrowing(x):
    s = x[0] + x[1]  # one value made from two, both dropped: the width falls
    return np.concatenate([np.stack([s, s * 2.0]), x[2:]])


def test_a_narrowing_step_is_named_with_its_line():
    with pytest.raises(di.SingularError, match=r"test_tape_inverse\.py:\d+ \(`x\[0\] \+ x\[1\]`\)"):
        di.AutoTape().prepare_inverse_linearize(Problem(narrowing, np.ones(4), (), None, NUMPY))


def test_unused_elements_of_x_make_j_singular():
    def f(x):
        return np.concatenate([x[:2], np.sin(x[:2])])

    with pytest.raises(di.SingularError, match="2 of the 4 elements of x are never used"):
        di.AutoTape().prepare_inverse_linearize(Problem(f, np.ones(4), (), None, NUMPY))


def scaled(x):
    h = x.shape[0] // 2
    a, b = x[:h], x[h:]
    return np.concatenate([a, b * a])  # a coupling whose scale is a: singular where an entry of a is 0


def test_a_singular_point_raises_naming_the_step():
    lin = linearizer(scaled, np.ones(4))
    ok = lin(np.ones(4), (), None)
    np.testing.assert_allclose(ok.push(np.ones((1, 4)))[0], [1, 1, 0, 0], atol=1e-14)
    at_zero = lin(np.array([1.0, 0.0, 2.0, 3.0]), (), None)
    with pytest.raises(di.SingularError, match=r"test_tape_inverse\.py:\d+"):
        at_zero.push(np.ones((1, 4)))
    with pytest.raises(di.SingularError):
        at_zero.pull(np.ones((1, 4)))


def test_a_singular_dense_step_raises():
    lin = linearizer(lambda x: np.array([[1.0, 2.0], [0.5, 1.0]]) @ x * 2 + np.sin(x), np.ones(2))
    jac_ok = lin(np.ones(2), (), None)
    assert np.all(np.isfinite(jac_ok.push(np.ones((1, 2)))))
    singular = linearizer(lambda x: np.array([[1.0, 2.0], [0.5, 1.0]]) @ x, np.ones(2))
    with pytest.raises(di.SingularError, match="singular"):
        singular(np.ones(2), (), None).push(np.ones((1, 2)))


# -- accuracy ------------------------------------------------------------------------------------------------
def test_an_ill_conditioned_flow_is_solved_accurately():
    n = 16
    scales = np.linspace(0.0, 10.0, n // 2)

    def f(x):
        h = n // 2
        z = x
        for k in range(4):
            z1, z2 = z[:h], z[h:]
            s = scales * (k == 0) + 0.1 * np.tanh(z1)
            z = np.concatenate([z2 * np.exp(s) + 0.1 * np.sin(z1), z1])
        return z

    x = np.random.default_rng(7).normal(size=n)
    jac = di.jacobian(f, di.AutoTape(), x)
    assert 1e6 < np.linalg.cond(jac) < 1e9
    v = jac @ RNG.normal(size=n)
    dx = linearizer(f, x)(x, (), None).push(v[None])[0]
    exact = np.linalg.solve(jac, v)
    assert np.linalg.norm(dx - exact) / np.linalg.norm(exact) < 1e-8
