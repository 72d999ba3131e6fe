"""AutoTape through eigh / eigvalsh of complex Hermitian matrices.

Real parameters p build a Hermitian H(p) = A0 + sum_i p_i B_i (complex Hermitian B_i); the functions
use the eigenvalues and gauge-invariant functions of the eigenvectors only (the phase of each column
of V is arbitrary: NumPy's and JAX's differ), and are compared with JAX (jax.numpy.linalg.eigh, x64)
in every mode, first and second order, prepared at one point and called twice at another. NumPy reads
one triangle (UPLO) and the real part of the diagonal; JAX symmetrizes the whole matrix, so its
reference is given the Hermitian matrix NumPy sees, while the tape gets the raw matrix with junk in the
ignored triangle and on the imaginary diagonal (whose derivatives must be 0).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import diface as di
from conftest import HAS_JAX

pytestmark = pytest.mark.skipif(not HAS_JAX, reason="JAX gives the reference derivatives")

N = 4
RNG = np.random.default_rng(11)


def _random_hermitian(n: int) -> np.ndarray:
    m = RNG.standard_normal((n, n)) + 1j * RNG.standard_normal((n, n))
    return (m + m.conj().T) / 2


A0 = _random_hermitian(N) + np.diag([-3.0, -1.0, 1.0, 3.0])  # well separated eigenvalues
B = np.stack([_random_hermitian(N) for _ in range(3)])
OBS = _random_hermitian(N)  # an observable
J = RNG.standard_normal((N, N)) + 1j * RNG.standard_normal((N, N))  # junk for the ignored triangle
BV = RNG.standard_normal(N) + 1j * RNG.standard_normal(N)
WV = np.cos(np.arange(N * N)).reshape(N, N)


def _h(xp, p):
    return A0 + xp.tensordot(p, B, axes=1)


def _eigh(xp, m, uplo="L"):
    """NumPy's eigh of the raw matrix; JAX's of the Hermitian matrix NumPy reads from it."""
    if xp is np:
        return np.linalg.eigh(m, UPLO=uplo)
    return xp.linalg.eigh(_seen(xp, m, uplo))


def _eigvalsh(xp, m, uplo="L"):
    if xp is np:
        return np.linalg.eigvalsh(m, UPLO=uplo)
    return xp.linalg.eigvalsh(_seen(xp, m, uplo))


def _seen(xp, m, uplo):
    part = xp.tril(m, -1) if uplo == "L" else xp.triu(m, 1)
    return part + xp.conj(part).T + xp.diag(xp.real(xp.diagonal(m)))


def _junk(xp, p, uplo):
    """H(p) in one triangle only: the other holds p-dependent junk, the diagonal an imaginary part."""
    h = _h(xp, p)
    kept = xp.tril(h) if uplo == "L" else xp.triu(h)
    junk = xp.triu(J * p[0] * p[2], 1) if uplo == "L" else xp.tril(J * p[0] * p[2], -1)
    return kept + junk + 1j * (p[1] + p[1] * p[0]) * xp.eye(N)


def _softplus(xp, w):
    return xp.log1p(xp.exp(w))


def _eigenvalues(xp, p):
    w = _eigvalsh(xp, _h(xp, p))
    return xp.concatenate([w**2, _softplus(xp, w), xp.stack([xp.sum(w**2)])])


def _vectors(xp, p):
    """|V|^2, |v_k^H b|^2 and V diag(tanh w) V^H (real and imaginary parts): gauge invariant."""
    w, v = _eigh(xp, _h(xp, p))
    overlaps = xp.abs(xp.conj(v).T @ BV) ** 2
    f = (v * xp.tanh(w)) @ xp.conj(v).T
    parts = [xp.reshape(xp.abs(v) ** 2 * WV, (N * N,)), overlaps, xp.reshape(xp.real(f), (N * N,))]
    return xp.concatenate([*parts, xp.reshape(xp.imag(f), (N * N,))])


def _density(xp, p):
    """Tr(rho OBS) with rho = V diag(softmax(-w)) V^H, and the populations of rho."""
    w, v = _eigh(xp, _h(xp, p))
    e = xp.exp(-(w - xp.min(w)))
    rho = (v * (e / xp.sum(e))) @ xp.conj(v).T
    return xp.concatenate([xp.stack([xp.real(xp.trace(rho @ OBS))]), xp.real(xp.diagonal(rho))])


def _triangle(uplo):
    def f(xp, p):
        w, v = _eigh(xp, _junk(xp, p, uplo), uplo)
        e = xp.exp(-w)
        rho = (v * (e / xp.sum(e))) @ xp.conj(v).T
        tr = xp.real(xp.trace(rho @ OBS))
        return xp.concatenate([w, _softplus(xp, w), xp.reshape(xp.abs(v) ** 2, (N * N,)), xp.stack([tr])])

    return f


def _eigvalsh_upper(xp, p):
    w = _eigvalsh(xp, _junk(xp, p, "U"), "U")
    return xp.concatenate([w**2, _softplus(xp, -w)])


CASES = {
    "eigvalsh: w^2, softplus(w)": _eigenvalues,
    "eigh: |V|^2, |v^H b|^2, V g(w) V^H": _vectors,
    "eigh: Tr(rho OBS), rho = V softmax(-w) V^H": _density,
    "eigh of the lower triangle (junk above)": _triangle("L"),
    "eigh UPLO='U' (junk below)": _triangle("U"),
    "eigvalsh UPLO='U' (junk below)": _eigvalsh_upper,
}

P_PREP = np.array([0.3, -0.2, 0.5])
P = np.array([-0.25, 0.4, 0.15])
TAPES = [di.AutoTape("forward"), di.AutoTape("reverse"), di.AutoTape("auto")]
SECOND = [*TAPES, di.SecondOrder(di.AutoTape("forward"), di.AutoTape("reverse"))]
TOL = dict(rtol=1e-9, atol=1e-11)


def _loss(case):
    g = CASES[case]

    def f(xp, p):
        r = g(xp, p)
        return xp.sum(r * xp.cos(xp.arange(r.shape[0]) * 0.7))

    return f


@functools.cache
def _reference(case: str) -> dict:
    import jax
    import jax.numpy as jnp

    v = lambda p: CASES[case](jnp, p)
    loss = lambda p: _loss(case)(jnp, p)
    return {
        "value": np.asarray(v(P)),
        "jacobian": np.asarray(jax.jit(jax.jacobian(v))(P)),
        "gradient": np.asarray(jax.jit(jax.grad(loss))(P)),
        "hessian": np.asarray(jax.jit(jax.hessian(loss))(P)),
    }


def _twice(expected, op, *args, **kw):
    for _ in range(2):
        np.testing.assert_allclose(op(*args, **kw), expected, **TOL)


@pytest.mark.parametrize("case", CASES)
def test_first_order_against_jax(case):
    v, loss = (lambda p: CASES[case](np, p)), (lambda p: _loss(case)(np, p))
    ref = _reference(case)
    np.testing.assert_allclose(v(P), ref["value"], **TOL)
    for b in TAPES:
        _twice(ref["gradient"], di.gradient, loss, b, P)
        _twice(ref["jacobian"], di.jacobian, v, b, P)
        _twice(ref["gradient"], di.gradient, loss, b, P, prep=di.prepare_gradient(loss, b, P_PREP))
        _twice(ref["jacobian"], di.jacobian, v, b, P, prep=di.prepare_jacobian(v, b, P_PREP))


@pytest.mark.parametrize("case", CASES)
def test_second_order_against_jax(case):
    loss = lambda p: _loss(case)(np, p)
    hess = _reference(case)["hessian"]
    t = np.array([0.7, -1.1, 0.4])
    for b in SECOND:
        _twice(hess, di.hessian, loss, b, P)
        _twice(hess @ t, di.hvp, loss, b, P, t)
        _twice(hess, di.hessian, loss, b, P, prep=di.prepare_hessian(loss, b, P_PREP))
        _twice(hess @ t, di.hvp, loss, b, P, t, prep=di.prepare_hvp(loss, b, P_PREP, t))


# -- complex inputs through diface's core ---------------------------------------------------------
H0 = A0
Z = np.array([0.3 + 0.2j, -0.5 + 0.1j, 0.2 - 0.4j, 0.6 + 0.3j])
Z_PREP = np.array([0.1 - 0.3j, 0.4 + 0.2j, -0.2 + 0.5j, 0.3 - 0.1j])


def _on_diagonal(xp, z):
    return xp.sum(xp.linalg.eigvalsh(H0 + xp.diag(z) + xp.diag(z).conj().T) ** 2)


def _off_diagonal(xp, z):
    """z on the first superdiagonal (and its conjugate below): the phases matter."""
    m = xp.diag(z[:3], 1)
    w, v = xp.linalg.eigh(H0 + m + xp.conj(m).T + xp.real(z[3]) * OBS)
    e = xp.exp(-w)
    rho = (v * (e / xp.sum(e))) @ xp.conj(v).T
    return xp.real(xp.trace(rho @ OBS)) + xp.sum(_softplus(xp, w)) + xp.sum(xp.abs(v) ** 4 * WV)


@pytest.mark.parametrize("g", [_on_diagonal, _off_diagonal], ids=["diag(z) + diag(z)^H", "superdiagonal"])
def test_complex_input_gradient_and_hvp_against_jax(g):
    """diface's gradient of a real f of complex z is 2 dbar f = conj of JAX's grad; hvp is the
    pushforward of that gradient map."""
    import jax
    import jax.numpy as jnp

    f = lambda z: g(np, z)
    grad_map = lambda z: jnp.conj(jax.grad(lambda z: g(jnp, z))(z))
    t = np.array([0.5 - 0.2j, -0.3 + 0.8j, 0.1 + 0.1j, -0.6 - 0.4j])
    grad = np.asarray(grad_map(Z))
    hvp = np.asarray(jax.jvp(grad_map, (Z,), (t,))[1])
    for b in TAPES:
        _twice(grad, di.gradient, f, b, Z)
        _twice(grad, di.gradient, f, b, Z, prep=di.prepare_gradient(f, b, Z_PREP))
        _twice(hvp, di.hvp, f, b, Z, t)
        _twice(hvp, di.hvp, f, b, Z, t, prep=di.prepare_hvp(f, b, Z_PREP, t))


# -- degenerate eigenvalues ------------------------------------------------------------------------
Q = np.linalg.qr(RNG.standard_normal((N, N)))[0]
S0 = Q @ np.diag([1.0, 1.0, 2.0, 4.0]) @ Q.T  # a double eigenvalue at p = 0
SB = np.stack([(m + m.T) / 2 for m in RNG.standard_normal((2, N, N))])


def _degenerate(cast):
    def f(p):
        w, v = np.linalg.eigh(cast(S0 + np.tensordot(p, SB, axes=1)))
        return np.sum(w**2) + np.sum(np.abs(v) ** 2 * WV) + np.sum(np.tanh(w) * np.abs(v[0]) ** 2)

    return f


def test_real_symmetric_through_the_complex_rules_matches_the_real_rules():
    """A real symmetric matrix as complex takes the complex rules; they agree with the real ones."""
    real, cplx = _degenerate(lambda m: m), _degenerate(lambda m: m.astype(complex))
    p, t = np.array([0.2, -0.1]), np.array([0.3, -0.8])
    for b in TAPES:
        np.testing.assert_allclose(di.gradient(cplx, b, p), di.gradient(real, b, p), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(di.hvp(cplx, b, p, t), di.hvp(real, b, p, t), rtol=1e-9, atol=1e-12)


def test_a_double_eigenvalue_is_left_out_as_in_the_real_rules():
    """At a double eigenvalue (p = 0) the rules, real and complex alike, leave the pair out of F: every
    result is finite (JAX's are inf or NaN there). First derivatives of eigenvalue functions stay right
    (sum w^2 = ||H||_F^2: its gradient is 2 Re tr(H B_i)); those that see the eigenvectors of the pair
    (and second derivatives, whose reverse sweep differentiates V) depend on the basis LAPACK picks in
    the eigenspace, so they are only checked to be finite."""
    c = Q.astype(complex) @ np.diag([1.0, 1.0, 2.0, 4.0]) @ Q.T
    p, t = np.zeros(2), np.array([0.3, -0.8])
    f = lambda p: np.sum(np.linalg.eigvalsh(c + np.tensordot(p, B[:2], axes=1)) ** 2)
    expected = 2 * np.real(np.einsum("ij,kji->k", c, B[:2]))
    for b in TAPES:
        np.testing.assert_allclose(di.gradient(f, b, p), expected, rtol=1e-9)
        for g in (_degenerate(lambda m: m), _degenerate(lambda m: m.astype(complex))):
            assert np.all(np.isfinite(di.gradient(g, b, p)))
            assert np.all(np.isfinite(di.hvp(g, b, p, t)))


def test_complex64_stays_single_precision():
    def loss(dtype):
        a0, b, wv = A0.astype(dtype), B.astype(dtype), WV.astype(np.real(np.zeros(1, dtype)).dtype)

        def f(p):
            w, v = np.linalg.eigh(np.tril(a0 + np.tensordot(p, b, axes=1)))
            return np.sum(w**2) + np.sum(np.abs(v) ** 4 * wv)

        return f

    exact = di.gradient(loss(np.complex128), di.AutoTape(), P)
    for bk in TAPES:
        g = di.gradient(loss(np.complex64), bk, P.astype(np.float32))
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, exact, rtol=1e-4, atol=1e-4 * np.abs(exact).max())
