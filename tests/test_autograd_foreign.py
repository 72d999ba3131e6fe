"""HIPS autograd's own test functions through `di.AutoAutograd`: what once escaped as a foreign exception.

scripts/autograd_foreign_sweep.py runs every function autograd's test suite checks (its `check_grads`
and `combo_check` calls, at its own sample arguments, with the VJPs and JVPs it checks at order two)
through diface's gradient, jacobian, hessian and hvp on both of autograd's modes. The functions here are
those that ended in an exception that was not diface's (ValueError from NumPy, AttributeError,
IndexError), rewritten as our own tests: each now gives the right derivative, checked against a closed
form (prepared at one point, called at another, each call twice), or a clear diface error.
"""

from __future__ import annotations

import numpy as np
import pytest

import diface as di

pytest.importorskip("autograd")

import autograd
import autograd.numpy as anp
from autograd import tuple as ag_tuple

MODES = ("reverse", "forward")
RTOL = 1e-12


def _close(got, want) -> None:
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    elif isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            _close(got[k], want[k])
    else:
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-13)


def _prepared_twice(prepare, method, f, backend, x0, x1, *extra):
    """The operator prepared at x0 and called twice at x1 (and the unprepared call at x1)."""
    prep = prepare(f, backend, x0, *extra)
    results = [getattr(prep, method)(x1, *extra) for _ in range(2)]
    results.append(getattr(di, method)(f, backend, x1, *extra))
    return results


# -- autograd.grad of a tuple, list or dict inside f (test_tuple, test_list, test_dict: `d_fun`) -----------
# Hessians ended in a ValueError from np.iscomplexobj (the tangent of autograd's tuple of gradients)
def _fun(t):
    return anp.sum(anp.sin(t[0])) + anp.sum(anp.cos(t[1]))


def _d_fun(t):
    g = autograd.grad(_fun)(t)  # (cos t0, -sin t1, 0)
    return anp.sum(g[0]) + anp.sum(anp.sin(g[0])) + anp.sum(anp.sin(g[1]))


def _d_fun_grad(t):
    a, b, c = (np.asarray(v) for v in t)
    return (-np.sin(a) - np.cos(np.cos(a)) * np.sin(a), -np.cos(np.sin(b)) * np.cos(b), np.zeros_like(c))


def _d_fun_hess_diag(t):
    a, b, c = (np.asarray(v) for v in t)
    haa = -np.cos(a) - np.sin(np.cos(a)) * np.sin(a) ** 2 - np.cos(np.cos(a)) * np.cos(a)
    hbb = np.sin(np.sin(b)) * np.cos(b) ** 2 + np.cos(np.sin(b)) * np.sin(b)
    return haa, hbb, np.zeros_like(c)


def _point(seed: int, kind: type):
    rng = np.random.default_rng(seed)
    return kind(rng.standard_normal(s) for s in ((2, 3), (3,), (2,)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", [tuple, list])
def test_autograd_grad_of_a_container_inside_f(mode, kind):
    backend = di.AutoAutograd(mode)
    x0, x1, t = _point(0, kind), _point(1, kind), _point(2, kind)
    for g in _prepared_twice(di.prepare_gradient, "gradient", _d_fun, backend, x0, x1):
        _close(g, kind(_d_fun_grad(x1)))
    # the Hessian is diagonal within each leaf: hvp = diag * t leaf by leaf
    want = kind(d * v for d, v in zip(_d_fun_hess_diag(x1), t))
    for hv in _prepared_twice(di.prepare_hvp, "hvp", _d_fun, backend, x0, x1, t):
        _close(hv, want)
    H = di.hessian(_d_fun, backend, x1)
    diag = _d_fun_hess_diag(x1)
    for i, leaf in enumerate(x1):
        n = np.size(leaf)
        np.testing.assert_allclose(np.reshape(H[i][i], (n, n)), np.diag(np.ravel(diag[i])), rtol=RTOL, atol=1e-13)
        for j in range(len(x1)):
            if j != i:
                assert not np.any(H[i][j])


@pytest.mark.parametrize("mode", MODES)
def test_autograd_grad_of_a_dict_inside_f(mode):
    def fun(d):
        return anp.sum(anp.sin(d["a"])) * 2.0 + anp.sum(anp.exp(d["b"]))

    def d_fun(d):  # test_dict.py's items/values/keys: the gradient's values summed
        g = autograd.grad(fun)(d)  # {"a": 2 cos a, "b": exp b}
        return sum(anp.sum(v) for v in g.values())

    rng = np.random.default_rng(3)
    x0, x1 = ({"a": rng.standard_normal(3), "b": rng.standard_normal(2)} for _ in range(2))
    backend = di.AutoAutograd(mode)
    for g in _prepared_twice(di.prepare_gradient, "gradient", d_fun, backend, x0, x1):
        _close(g, {"a": -2.0 * np.sin(x1["a"]), "b": np.exp(x1["b"])})
    H = di.hessian(d_fun, backend, x1)
    np.testing.assert_allclose(H["a"]["a"], np.diag(-2.0 * np.cos(x1["a"])), rtol=RTOL)
    np.testing.assert_allclose(H["b"]["b"], np.diag(np.exp(x1["b"])), rtol=RTOL)


# -- container boxes as f's output (autograd's `tuple`, `anp.split`): a tree, not one traced value ---------
@pytest.mark.parametrize("mode", MODES)
def test_container_box_outputs_are_trees(mode):
    backend = di.AutoAutograd(mode)
    x0, x1 = np.arange(1.0, 7.0), np.linspace(-1.0, 2.0, 6)

    def f(x):  # test_systematic's split tests; test_linalg's `tuple((w, v))` of eig and eigh
        return ag_tuple((anp.split(x**2, 3), anp.sum(x)))

    prep = di.prepare_jacobian(f, backend, x0)
    for J in (prep.jacobian(x1), prep.jacobian(x1), di.jacobian(f, backend, x1)):
        assert isinstance(J, tuple) and isinstance(J[0], list) and len(J[0]) == 3
        np.testing.assert_allclose(np.concatenate(J[0]), np.diag(2.0 * x1), rtol=RTOL)
        np.testing.assert_allclose(J[1], np.ones(6), rtol=RTOL)


def test_eigh_tuple_jacobian():
    """test_linalg's eigh functions return autograd's tuple((w, v)): its eigenvalue block is d w_k = q_kᵀ dA
    q_k, with dA symmetric and read from the lower triangle, as `np.linalg.eigh` reads A."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 3))
    a = a + a.T
    q = np.linalg.eigh(a)[1]
    J = di.jacobian(lambda x: ag_tuple(anp.linalg.eigh(x)), di.AutoAutograd(), a)
    full = np.einsum("ik,jk->kij", q, q)
    lower = np.tril(2.0 * full) - full * np.eye(3)  # off-diagonal entries count twice, the upper ones not at all
    np.testing.assert_allclose(J[0], lower, rtol=1e-10, atol=1e-12)


def test_non_holomorphic_complex_eig_is_refused():
    """test_linalg's eig of a complex matrix, `tuple((w, abs(v)))`, is not holomorphic: jacobian refuses,
    also at an x drawn from `default_rng(0)` (the holomorphy probe once drew the same numbers: v = x, along
    which eigenvectors do not move)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    f = lambda z: ag_tuple((anp.linalg.eig(z)[0], anp.abs(anp.linalg.eig(z)[1])))
    with pytest.raises(di.NotSupportedError, match="not holomorphic"):
        di.jacobian(f, di.AutoAutograd(), x)


# -- Python complex numbers as x (test_complex's abs and angle, test_logic) ---------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_python_complex_x(mode):
    backend = di.AutoAutograd(mode)
    z0, z1 = 1.1 + 1.2j, -0.3 + 0.7j
    for g in _prepared_twice(di.prepare_gradient, "gradient", lambda z: anp.abs(z), backend, z0, z1):
        np.testing.assert_allclose(g, z1 / abs(z1), rtol=RTOL)  # 2∂̄|z| = z/|z|
    # |z|² = z z̄: gradient 2z, hvp the pushforward of g = 2z: 2t, with a Python complex tangent
    for hv in _prepared_twice(di.prepare_hvp, "hvp", lambda z: anp.abs(z) ** 2, backend, z0, z1, 0.5 - 2.0j):
        np.testing.assert_allclose(hv, 2.0 * (0.5 - 2.0j), rtol=RTOL)


# -- trees that are not arrays: ragged lists, and trees without leaves (test_list, test_builtins) -----------
@pytest.mark.parametrize("mode", MODES)
def test_ragged_list_is_a_tree(mode):
    backend = di.AutoAutograd(mode)
    x0, x1 = [[1.0], 2.0, 1.5], [[0.5], -1.0, 3.0]
    f = lambda x: x[1:][0] * x[0][0] ** 2  # test_list.py's nested list: x[1:][0] is x[1]
    for g in _prepared_twice(di.prepare_gradient, "gradient", f, backend, x0, x1):
        assert isinstance(g, list) and isinstance(g[0], list)
        np.testing.assert_allclose(g[0][0], 2.0 * x1[0][0] * x1[1], rtol=RTOL)
        np.testing.assert_allclose(g[1], x1[0][0] ** 2, rtol=RTOL)
        np.testing.assert_allclose(g[2], 0.0)
    # a rectangular nested list of numbers stays one array
    g = di.gradient(lambda x: anp.sum(x**2), backend, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(g, [[2.0, 4.0], [6.0, 8.0]], rtol=RTOL)


@pytest.mark.parametrize("backend", [di.AutoAutograd(), di.AutoAutograd("forward"), di.AutoTape()], ids=repr)
@pytest.mark.parametrize("x", [(), [()], [[], ()], {"a": None}], ids=repr)
def test_trees_without_leaves_are_refused(backend, x):
    """test_builtins' isinstance checker differentiated at `[()]`: nothing to differentiate."""
    with pytest.raises(di.ArgumentError, match="a tree without leaves"):
        di.gradient(lambda ex: 1.0, backend, x)


@pytest.mark.parametrize("backend", [di.AutoAutograd(), di.AutoTape()], ids=repr)
def test_outputs_without_leaves_are_refused(backend):
    for op in (di.jacobian, di.prepare_jacobian):
        with pytest.raises(di.ArgumentError, match="f's output is \\(\\), a tree without leaves"):
            op(lambda x: (), backend, np.ones(2))


# -- traced values hidden in an array of objects (test_numpy's append of lists): refused, not zero ----------
@pytest.mark.parametrize("mode", MODES)
def test_lists_of_traced_numbers_hidden_from_autograd_are_refused(mode):
    """x = (A, B), lists of numbers inside a tuple: f gets lists of traced numbers. `anp.append(a, b)`
    makes `a` an array but hands `b`, a list, to NumPy's concatenate, which hides its traced numbers in an
    array of objects: reverse mode gave B a zero gradient, forward mode returned autograd's boxes."""
    A, B = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]]
    backend = di.AutoAutograd(mode)
    with pytest.raises(di.NotSupportedError, match=r"autograd\.numpy\.array"):
        di.gradient(lambda x: anp.sum(anp.append(x[0], x[1], axis=0) ** 2), backend, (A, B))
    with pytest.raises(di.NotSupportedError, match="hidden from autograd"):
        di.jacobian(lambda x: anp.append(x[0], x[1], axis=0), backend, (A, B))
    # made an array first, the derivative flows: d/dB sum(append(A, B)²) = 2B
    g = di.gradient(lambda x: anp.sum(anp.append(x[0], anp.array(x[1]), axis=0) ** 2), backend, (A, B))
    np.testing.assert_allclose(np.array(g[1], dtype=float), 2.0 * np.array(B), rtol=RTOL)


# -- autograd's order-2 checks: its own make_vjp inside f (test_systematic's three-argument einsum) --------
@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_autograds_own_vjp(mode):
    """check_grads at order 2 differentiates the VJP of `einsum("ijk,lji,lli->lki", a, b, C)` as a function
    of (a, b, v); its output is autograd's tuple of the two cotangents (a container box: once refused as
    "another tree structure"). Each cotangent is linear in each of its arguments: J contracted with that
    argument gives the cotangent back, and the block of the argument it does not read is zero."""
    s = "ijk,lji,lli->lki"
    rng = np.random.default_rng(7)
    A, B, C = rng.standard_normal((3, 4, 4)), rng.standard_normal((4, 4, 3)), rng.standard_normal((4, 4, 3))
    V = rng.standard_normal((4, 4, 3))

    def f(x):
        a, b, v = x
        return autograd.core.make_vjp(lambda ab: anp.einsum(s, ab[0], ab[1], C), (a, b))[0](v)

    ga = np.einsum("lki,lji,lli->ijk", V, B, C)  # the cotangents of a and b
    gb = np.einsum("ijk,lki,lli->lji", A, V, C)
    J = di.jacobian(f, di.AutoAutograd(mode), (A, B, V))
    contract = lambda block, arg: np.tensordot(block, arg, axes=arg.ndim)
    np.testing.assert_allclose(contract(J[0][1], B), ga, rtol=1e-12)
    np.testing.assert_allclose(contract(J[0][2], V), ga, rtol=1e-12)
    np.testing.assert_allclose(contract(J[1][0], A), gb, rtol=1e-12)
    np.testing.assert_allclose(contract(J[1][2], V), gb, rtol=1e-12)
    assert not np.any(J[0][0]) and not np.any(J[1][1])
