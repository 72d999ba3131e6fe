"""AutoTape's rules for NumPy functions beyond the elementwise ones (cross, kron, pinv, gradient, einsum's
sublist form, rollaxis, svd, eigh, cholesky, qr, eig, r_/c_, partition, the split family,
real_if_close, fftshift, arrays built from lists, convolve, norms, ...) against JAX or autograd (finite
differences where neither has the function): values, Jacobians, batched pushforwards and pullbacks, and
second order (Hessians and batched Hessian-vector products), each prepared at one point and called at
another, twice.

`check_rule` is shared with the SciPy tests (test_tape_scipy.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diface as di

jax = pytest.importorskip("jax")
autograd = pytest.importorskip("autograd")

import autograd.numpy as anp  # noqa: E402
import jax.numpy as jnp  # noqa: E402

TAPE = di.AutoTape()
FD = di.AutoFiniteDiff()


def _reference(f: Callable, engine: str, xp: Any) -> tuple[Callable, Callable]:
    """(jacobian, hessian-of-g) functions of the reference engine for f written with namespace xp."""
    if engine == "jax":  # compiled: JAX's op-by-op dispatch is slower than compiling these small functions
        jac = lambda x: np.asarray(jax.jit(jax.jacfwd(lambda v: f(xp, v)))(jnp.asarray(x)))
        return jac, lambda g, x: np.asarray(jax.jit(jax.hessian(lambda v: g(xp, v)))(jnp.asarray(x)))
    if engine == "autograd":
        jac = lambda x: np.asarray(autograd.jacobian(lambda v: f(xp, v))(x))
        return jac, lambda g, x: np.asarray(autograd.hessian(lambda v: g(xp, v))(x))
    jac = lambda x: np.asarray(di.jacobian(lambda v: f(np, v), FD, x))
    return jac, lambda g, x: np.asarray(di.hessian(lambda v: g(np, v), di.SecondOrder(FD, TAPE), x))


NAMESPACES = {"jax": jnp, "autograd": anp, "fd": np}


def check_rule(
    f: Callable, x: np.ndarray, engine: str, *, other: np.ndarray | None = None, rtol: float = 1e-7, second: bool = True
) -> None:
    """f(xp, x) on AutoTape (xp = numpy) against the reference engine (xp = its namespace)."""
    xp = NAMESPACES[engine]
    fn = lambda v: f(np, v)
    other = x + 0.01 * np.cos(np.arange(x.size)).reshape(x.shape) if other is None else other
    jac_ref, hess_ref = _reference(f, engine, xp)
    value = np.asarray(fn(x))
    want = jac_ref(x).reshape(value.shape + x.shape)
    tol = dict(rtol=rtol, atol=rtol * max(1.0, float(np.abs(want).max(initial=0.0))))
    y, j = di.value_and_jacobian(fn, TAPE, x)
    np.testing.assert_allclose(y, value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j, want, **tol)
    prep = di.prepare_jacobian(fn, TAPE, other)
    for _ in range(2):
        np.testing.assert_allclose(prep.jacobian(x), want, **tol)
    jm = want.reshape(value.size, x.size)
    rng = np.random.default_rng(0)
    ts = tuple(rng.standard_normal(x.shape) for _ in range(2))
    ws = tuple(rng.standard_normal(value.shape) for _ in range(2))
    push = di.prepare_pushforward(fn, TAPE, other, ts)
    pull = di.prepare_pullback(fn, TAPE, other, ws)
    for _ in range(2):
        for t, r in zip(ts, push.pushforward(x, ts)):
            np.testing.assert_allclose(np.ravel(r), jm @ t.ravel(), **tol)
        for w, r in zip(ws, pull.pullback(x, ws)):
            np.testing.assert_allclose(np.ravel(r), w.ravel() @ jm, **tol)
    if not second:
        return
    weights = np.cos(np.arange(value.size) + 1.0).reshape(value.shape)

    def g(xp_: Any, v: Any) -> Any:
        return xp_.sum(xp_.sin(f(xp_, v)) * weights)

    h_want = hess_ref(g, x).reshape(x.size, x.size)
    htol = dict(rtol=100 * rtol, atol=100 * rtol * max(1.0, float(np.abs(h_want).max(initial=0.0))))
    hess = di.prepare_hessian(lambda v: g(np, v), TAPE, other)
    hvp = di.prepare_hvp(lambda v: g(np, v), TAPE, other, ts)
    for _ in range(2):
        np.testing.assert_allclose(hess.hessian(x).reshape(x.size, x.size), h_want, **htol)
        for t, r in zip(ts, hvp.hvp(x, ts)):
            np.testing.assert_allclose(np.ravel(r), h_want @ t.ravel(), **htol)


RNG = np.random.default_rng(11)
V12 = RNG.standard_normal(12)
V9 = RNG.standard_normal(9)
B43 = RNG.standard_normal((4, 3))
COORDS = np.array([0.0, 0.5, 1.7, 2.0])


def _spd(xp: Any, x: Any) -> Any:
    a = xp.reshape(x, (3, 3))
    return a @ a.T + 3.0 * xp.eye(3)


def _real_eigenvalues(xp: Any, x: Any) -> Any:
    return _spd(xp, x) + 0.1 * xp.reshape(x, (3, 3))


NUMPY_RULES: dict[str, tuple[Callable, np.ndarray, str]] = {
    "cross 3-vectors": (lambda xp, x: xp.cross(xp.reshape(x, (4, 3)), xp.reshape(x, (4, 3))[::-1]), V12, "autograd"),
    "cross 2 and 3": (lambda xp, x: xp.cross(x[:3], xp.reshape(x[3:], (3, 3)), axisb=0), V12, "jax"),
    "cross axisc": (lambda xp, x: xp.cross(xp.reshape(x, (3, 4))[:, :3], B43[:3], axisc=0), V12, "autograd"),
    "kron": (lambda xp, x: xp.kron(xp.reshape(x, (3, 4)), B43[:2, :2]), V12, "autograd"),
    "kron 1-d and 2-d": (lambda xp, x: xp.kron(x[:2], xp.reshape(x, (3, 4))), V12, "autograd"),
    "pinv tall": (lambda xp, x: xp.linalg.pinv(xp.reshape(x, (4, 3))), V12, "autograd"),
    "pinv wide": (lambda xp, x: xp.linalg.pinv(xp.reshape(x, (3, 4))), V12, "autograd"),
    "gradient": (lambda xp, x: xp.gradient(x), V12, "autograd"),
    "gradient 2-d edge order 2": (lambda xp, x: xp.stack(xp.gradient(xp.reshape(x, (3, 4)), edge_order=2)), V12, "fd"),
    "gradient coordinates": (lambda xp, x: xp.gradient(xp.reshape(x, (3, 4)), COORDS, axis=1), V12, "jax"),
    "einsum sublists": (lambda xp, x: xp.einsum(xp.reshape(x, (3, 4)), [0, 1], B43, [1, 2], [0, 2]), V12, "autograd"),
    "einsum sublists ellipsis": (
        lambda xp, x: xp.einsum(xp.reshape(x, (3, 4)), [Ellipsis, 1], B43, [1, 2]),
        V12,
        "jax",
    ),
    "rollaxis": (lambda xp, x: xp.rollaxis(xp.reshape(x, (2, 3, 2)), 2) * x[0], V12, "autograd"),
    "svd values": (lambda xp, x: xp.linalg.svd(xp.reshape(x, (4, 3)), compute_uv=False), V12, "autograd"),
    "svd thin tall": (lambda xp, x: _svd_product(xp, xp.reshape(x, (4, 3))), V12, "autograd"),
    "svd thin wide": (lambda xp, x: _svd_product(xp, xp.reshape(x, (3, 4))), V12, "autograd"),
    "svd stack": (lambda xp, x: _svd_product(xp, xp.reshape(x, (2, 3, 2))), V12, "autograd"),
    "eigh": (lambda xp, x: _eigh_product(xp, _spd(xp, x)), V9, "autograd"),
    "eigvalsh": (lambda xp, x: xp.linalg.eigvalsh(_spd(xp, x)), V9, "jax"),
    "cholesky": (lambda xp, x: xp.linalg.cholesky(_spd(xp, x)), V9, "autograd"),
    "qr": (lambda xp, x: _qr_product(xp, xp.reshape(x, (4, 3))), V12, "jax"),
    "eig real eigenvalues": (lambda xp, x: _eig_product(xp, _real_eigenvalues(xp, x)), V9, "autograd"),
    "r_": (lambda xp, x: xp.r_[x[:3], 2.0, x[5:7] ** 2], V12, "autograd"),
    "c_": (lambda xp, x: xp.c_[x[:3], x[3:6] ** 2], V12, "autograd"),
    "r_ directive": (lambda xp, x: xp.r_["0,2", x[:3], x[3:6]], V12, "autograd"),
    "partition": (lambda xp, x: xp.partition(xp.reshape(x, (3, 4)), 2, axis=1), V12, "jax"),
    "vsplit hsplit": (
        lambda xp, x: xp.vsplit(xp.reshape(x, (4, 3)), 2)[1] * xp.sum(xp.hsplit(xp.reshape(x, (4, 3)), 3)[0]),
        V12,
        "jax",
    ),
    "dsplit": (lambda xp, x: xp.dsplit(xp.reshape(x, (1, 3, 4)), [1, 3])[1], V12, "autograd"),
    "array_split": (lambda xp, x: xp.array_split(x, 5)[1], V12, "autograd"),
    "fftshift": (lambda xp, x: xp.fft.fftshift(xp.reshape(x, (3, 4))) + xp.fft.ifftshift(x[:4]), V12, "autograd"),
    "array from a list of scalars": (lambda xp, x: xp.array([x[0] ** 2, x[1], x[0] * x[2]]), V12, "autograd"),
    "array from a list of arrays": (lambda xp, x: xp.asarray([x[:3], 2.0 * x[3:6]]) @ x[6:9], V12, "jax"),
    "mean of a list of arrays": (lambda xp, x: xp.mean(xp.asarray([x[:4], x[4:8] ** 2]), axis=0), V12, "jax"),
    "convolve": (lambda xp, x: xp.convolve(x[:5], x[5:8]), V12, "jax"),
    "convolve same valid": (
        lambda xp, x: xp.convolve(x[:3], x[3:8], "same") * xp.convolve(x[:5], x[5:8], "valid")[0],
        V12,
        "jax",
    ),
    "linspace": (lambda xp, x: xp.linspace(x[0], x[1], 5) * xp.linspace(x[2:4], 2.0, 3, axis=1).sum(), V12, "jax"),
    "norms": (
        lambda xp, x: xp.stack(
            [
                xp.linalg.norm(x, 3),
                xp.linalg.norm(xp.reshape(x, (3, 4)), "nuc"),
                xp.linalg.norm(xp.reshape(x, (3, 4)), 2),
                xp.linalg.norm(xp.reshape(x, (3, 4)), -np.inf),
            ]
        ),
        V12,
        "jax",
    ),
    "sinc": (lambda xp, x: xp.sinc(x), V12, "autograd"),
    "nan_to_num select": (
        lambda xp, x: xp.nan_to_num(x) * xp.select([x > 0.5, x < -0.5], [x, x**2], 1.0),
        V12,
        "autograd",
    ),
    "trapezoid": (lambda xp, x: xp.trapezoid(xp.reshape(x, (3, 4)), COORDS), V12, "jax"),
}


def _svd_product(xp: Any, a: Any) -> Any:
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    # sign-invariant: u_i s_i vh_i products, and the singular values
    return xp.concatenate([xp.reshape(xp.einsum("...ik,...k,...kj->...ij", u, s, vh), (-1,)), xp.reshape(s, (-1,))])


def _eigh_product(xp: Any, a: Any) -> Any:
    w, v = xp.linalg.eigh(a)
    return xp.concatenate([w, xp.reshape(v[:, :1] * v[:, :1].T, (-1,)), xp.reshape((v * w) @ v.T, (-1,))])


def _qr_product(xp: Any, a: Any) -> Any:
    q, r = xp.linalg.qr(a)
    return xp.concatenate([xp.reshape(q * xp.sign(xp.diagonal(r)), (-1,)), xp.reshape(r, (-1,))])


def _eig_product(xp: Any, a: Any) -> Any:
    w, v = xp.linalg.eig(a)
    return xp.concatenate([w, xp.reshape(v * xp.sign(v[0]), (-1,))])


@pytest.mark.filterwarnings("ignore:r_ is slow:UserWarning", "ignore:c_ is slow:UserWarning")  # autograd's
@pytest.mark.parametrize("name", list(NUMPY_RULES))
def test_numpy_rule(name):
    f, x, engine = NUMPY_RULES[name]
    check_rule(f, x, engine, rtol=1e-6 if engine == "fd" else 1e-8)


def test_decompositions_match_numpy_values_exactly():
    """The factors are NumPy's own (signs and order included), not just equivalent ones."""
    a = B43 @ B43.T[:, :3] + np.eye(4)[:, :3]
    sq = _spd(np, V9)
    cases = [
        (lambda m: np.linalg.svd(m), a[:3]),
        (lambda m: np.linalg.svd(m, full_matrices=False), a),
        (lambda m: np.linalg.eigh(m), sq),
        (lambda m: np.linalg.eigh(m, UPLO="U"), sq + np.triu(np.ones((3, 3)))),
        (lambda m: np.linalg.qr(m), a),
        (lambda m: (np.linalg.cholesky(m), np.linalg.cholesky(m, upper=True)), sq),
        (lambda m: np.linalg.eig(m), _real_eigenvalues(np, V9)),
    ]
    for f, m in cases:
        want = f(m)
        seen: list = []
        di.gradient(lambda v, f=f, seen=seen: seen.append(f(v)) or np.sum(v), TAPE, m)
        got = [leaf._value() for leaf in seen[-1]]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_what_the_decompositions_refuse():
    with pytest.raises(di.NotSupportedError, match="full_matrices=False"):
        di.jacobian(lambda x: np.linalg.svd(x.reshape(4, 3))[0], TAPE, V12)
    with pytest.raises(di.NotSupportedError, match="complex"):
        rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
        di.jacobian(lambda x: np.linalg.eig(rotation * x[0])[0], TAPE, V12)
    with pytest.raises(di.NotSupportedError, match="qr"):
        di.jacobian(lambda x: np.linalg.qr(x.reshape(3, 4))[1], TAPE, V12)


def test_repeated_eigenvalues_keep_invariant_derivatives():
    """At a repeated eigenvalue the eigenvectors are not unique; functions that do not depend on the
    choice (a projector onto the whole eigenspace) still get the right derivative."""

    q = np.linalg.qr(B43[:3] + np.eye(3))[0]  # a fixed rotation

    def projector(x: Any) -> Any:
        a = q @ np.diag(np.stack([x[0], x[0], x[1]])) @ q.T  # eigenvalue x[0] twice
        w, v = np.linalg.eigh(a)
        return np.concatenate([np.ravel(v[:, :2] @ v[:, :2].T * x[2]), w])

    x = np.array([1.0, 2.0, 0.5])
    jac = di.jacobian(projector, TAPE, x)
    np.testing.assert_allclose(jac[:9, :2], 0.0, atol=1e-12)  # the projector does not move
    np.testing.assert_allclose(jac[:9, 2], np.ravel(q[:, :2] @ q[:, :2].T), atol=1e-12)
    np.testing.assert_allclose(jac[9:], [[1, 0, 0], [1, 0, 0], [0, 1, 0]], atol=1e-12)
