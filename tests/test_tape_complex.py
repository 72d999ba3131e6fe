"""AutoTape through complex intermediates: real x, real output, complex values in between (the pattern
diface's realification of complex inputs and outputs produces: z = v[..., 0] + 1j v[..., 1] in,
np.stack([y.real, y.imag], -1) out).

Every case is written once for a namespace (NumPy for the tape, jax.numpy for the reference) and
checked in every mode, first and second order, prepared at one point and called twice at another.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import diface as di
from conftest import HAS_JAX

pytestmark = pytest.mark.skipif(not HAS_JAX, reason="JAX gives the reference derivatives")

RNG = np.random.default_rng(7)
C3 = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)  # a complex NumPy constant
M3 = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)) + 3 * np.eye(3)
W8 = RNG.standard_normal(8)


def _z(xp, x, k):
    return x[:k] + 1j * x[k:]


def _arith(xp, x):
    z = _z(xp, x, 3)
    w = (z * z - 2j * z + 1) / (z + 3.0) + C3 * z - (-z) ** 3 + z ** (1.5 + 0.5j) + z**2.5
    return w + xp.square(z) * (0.5 - 1j) + xp.reciprocal(z + 2) + 1 / (z - 4j) + (2 + 1j) ** z


def _conj_parts(xp, x):
    z = _z(xp, x, 3)
    w = xp.conj(z) * z**2 + xp.conjugate(z + 1j) + z.conj() * C3
    r = xp.real(w) * z.imag + xp.imag(w) * z.real + w.real
    return r + 1j * (w.imag + xp.abs(w) ** 2 + xp.angle(w + 3))


def _transcendental(xp, x):
    z = 0.5 * _z(xp, x, 3) + 1.5
    parts = (xp.exp, xp.log, xp.sqrt, xp.sin, xp.cos, xp.tan, xp.sinh, xp.cosh, xp.tanh)
    return sum(f(z) * (k + 1j) for k, f in enumerate(parts))


def _reductions(xp, x):
    z = _z(xp, x, 4)
    m = xp.reshape(z, (2, 2))
    return xp.stack([xp.sum(z * z), xp.mean(m * 1j), xp.prod(z + 1)]) + xp.cumsum(z)[:3]


def _contractions(xp, x):
    z = _z(xp, x, 3)
    zz = xp.reshape(xp.concatenate([z, z * z, z + 1j]), (3, 3))
    a = M3 @ z + xp.matmul(zz, z) + xp.dot(zz, C3) + xp.einsum("ij,j->i", zz, xp.conj(z))
    return a + xp.vdot(z, C3) + xp.inner(z, zz[0]) + xp.vdot(C3, z * z) * 1j


def _fourier(xp, x):
    z = _z(xp, x, 8)
    a = xp.abs(xp.fft.fft(z)) ** 2 * W8 + xp.fft.ifft(z * z, norm="ortho")
    b = xp.fft.irfft(xp.fft.rfft(x[:8] * x[8:]) * (1 + 2j), n=8) + xp.fft.fft(z, n=8, norm="forward")
    c = xp.reshape(xp.fft.fft2(xp.reshape(z, (2, 4))) + xp.fft.ifft2(xp.reshape(z * 1j, (2, 4))), (8,))
    return a + b + c + xp.fft.irfft(z[:5])


def _linalg(xp, x):
    a = xp.reshape(_z(xp, x, 4), (2, 2)) + 2 * xp.eye(2)
    v = a[0] * 1j
    s = xp.linalg.solve(a, v) + xp.linalg.solve(a @ a, xp.conj(a))[0]
    return xp.concatenate([s, xp.reshape(xp.linalg.inv(a), (4,)), xp.stack([xp.linalg.det(a)])])


def _structural(xp, x):
    z = _z(xp, x, 4)
    m = xp.reshape(z, (2, 2))
    s = xp.stack([m.T, m[::-1]], 0)[:, 1]
    c = xp.concatenate([z[1:3], xp.reshape(s, (4,))[xp.array([0, 3, 1])]])
    w = xp.where(xp.array([True, False, True, False, True]), c, c * c) * xp.ones((2, 1))
    return xp.reshape(w + m[:, :1] * 1j, (10,))


CASES = {
    "arithmetic": (_arith, 6),
    "conj, real, imag, abs, angle": (_conj_parts, 6),
    "exp, log, sqrt, trig": (_transcendental, 6),
    "sum, mean, prod, cumsum": (_reductions, 8),
    "matmul, dot, einsum, vdot, inner": (_contractions, 6),
    "fft, ifft, rfft, irfft, fft2, ifft2": (_fourier, 16),
    "solve, inv, det": (_linalg, 8),
    "indexing, stack, concatenate, where, broadcasting": (_structural, 8),
}


def _vector(case):
    """The realified output: real x to np.stack([Re w, Im w], -1)."""
    g = CASES[case][0]

    def f(xp, x):
        w = g(xp, x)
        return xp.stack([xp.real(w), xp.imag(w)], -1)

    return f


def _loss(case):
    """A real scalar of the complex values: sum |w|^2 + sum Re(w) c."""
    g = CASES[case][0]

    def f(xp, x):
        w = g(xp, x)
        c = xp.cos(xp.arange(w.shape[0]) * 1.0)
        return xp.sum(xp.abs(w) ** 2) + xp.sum(xp.real(w) * c) + xp.sum(xp.angle(w + 5.0) * c)

    return f


def _points(case):
    n = CASES[case][1]
    rng = np.random.default_rng(len(case))
    return 0.6 * rng.standard_normal(n) + 0.3, 0.6 * rng.standard_normal(n) - 0.1


@functools.cache
def _reference(case: str) -> dict:
    """JAX's derivatives of the case at its point (compiled: JAX's eager Hessians take seconds)."""
    import jax
    import jax.numpy as jnp

    fv, fl = _vector(case), _loss(case)
    v, loss = (lambda x: fv(jnp, x)), (lambda x: fl(jnp, x))
    x = _points(case)[1]
    return {
        "value": np.asarray(v(x)),
        "jacobian": np.asarray(jax.jit(jax.jacobian(v))(x)),
        "gradient": np.asarray(jax.jit(jax.grad(loss))(x)),
        "hessian": np.asarray(jax.jit(jax.hessian(loss))(x)),
    }


TAPES = [di.AutoTape("forward"), di.AutoTape("reverse"), di.AutoTape("auto")]
SECOND = [*TAPES, di.SecondOrder(di.AutoTape("forward"), di.AutoTape("reverse"))]
SECOND.append(di.SecondOrder(di.AutoTape("reverse"), di.AutoTape("reverse")))
TOL = dict(rtol=1e-10, atol=1e-10)


def _twice(expected, op, *args, **kw):
    for _ in range(2):
        np.testing.assert_allclose(op(*args, **kw), expected, **TOL)


@pytest.mark.parametrize("case", CASES)
def test_first_order_against_jax(case):
    fv, fl = _vector(case), _loss(case)
    v, loss = (lambda x: fv(np, x)), (lambda x: fl(np, x))
    prep_x, x = _points(case)
    ref = _reference(case)
    jac, grad = ref["jacobian"], ref["gradient"]
    np.testing.assert_allclose(v(x), ref["value"], **TOL)
    tx = np.linspace(-1, 1, x.size)
    ty = np.cos(np.arange(jac.shape[0] * 2)).reshape(jac.shape[:2])
    for b in TAPES:
        _twice(grad, di.gradient, loss, b, x)
        _twice(jac, di.jacobian, v, b, x)
        _twice(jac @ tx, di.pushforward, v, b, x, tx)
        _twice(np.einsum("ij,ijk->k", ty, jac), di.pullback, v, b, x, ty)
        pg, pj = di.prepare_gradient(loss, b, prep_x), di.prepare_jacobian(v, b, prep_x)
        pp = di.prepare_pushforward(v, b, prep_x, tx)
        pb = di.prepare_pullback(v, b, prep_x, ty)
        _twice(grad, di.gradient, loss, b, x, prep=pg)
        _twice(jac, di.jacobian, v, b, x, prep=pj)
        _twice(jac @ tx, di.pushforward, v, b, x, tx, prep=pp)
        _twice(np.einsum("ij,ijk->k", ty, jac), di.pullback, v, b, x, ty, prep=pb)


@pytest.mark.parametrize("case", CASES)
def test_second_order_against_jax(case):
    fl = _loss(case)
    loss = lambda x: fl(np, x)
    prep_x, x = _points(case)
    hess = _reference(case)["hessian"]
    tx = np.linspace(-1, 1, x.size)
    for b in SECOND:
        _twice(hess, di.hessian, loss, b, x)
        _twice(hess @ tx, di.hvp, loss, b, x, tx)
        ph, pv = di.prepare_hessian(loss, b, prep_x), di.prepare_hvp(loss, b, prep_x, tx)
        _twice(hess, di.hessian, loss, b, x, prep=ph)
        _twice(hess @ tx, di.hvp, loss, b, x, tx, prep=pv)


def _single(xp, x):
    """Complex values from Python numbers only: complex64 from float32 (NumPy's promotion)."""
    z = x[:4] + 1j * x[4:]
    w = xp.exp(z) * z**2 / (z + 2.0) + xp.conj(z) * (1 - 2j) + xp.sqrt(z + 3) + xp.fft.fft(z) * 0.25
    w = w + xp.fft.irfft(xp.fft.rfft(x), n=8)[:4] + xp.angle(z) + xp.abs(z) ** 3 + z.real * z.imag
    return xp.stack([xp.real(w), xp.imag(w)], -1)


def test_float32_has_complex64_intermediates():
    import jax
    import jax.numpy as jnp

    x = np.linspace(-0.9, 1.2, 8)
    jac = np.asarray(jax.jit(jax.jacobian(lambda x: _single(jnp, x)))(x))
    seen = []

    def f(x):
        seen.append((x[:1] * 1j).dtype)
        return _single(np, x)

    for b in TAPES:
        prep = di.prepare_jacobian(f, b, (x + 0.1).astype(np.float32))
        for _ in range(2):
            j = di.jacobian(f, b, x.astype(np.float32), prep=prep)
            assert j.dtype == np.float32
            np.testing.assert_allclose(j, jac, rtol=1e-4, atol=1e-4 * np.abs(jac).max())
        h = di.hessian(lambda x: np.sum(f(x) ** 2), b, x.astype(np.float32))
        assert h.dtype == np.float32 and np.allclose(h, h.T, atol=1e-3 * np.abs(h).max())
    assert seen and set(seen) == {np.dtype(np.complex64)}


def test_sparse_jacobian_of_an_elementwise_complex_function():
    def f(x):
        z = x[:5] + 1j * x[5:]
        w = np.exp(z) * z + np.conj(z) ** 2 - 1j * np.sqrt(z + 2)
        return np.stack([np.real(w), np.imag(w), np.abs(w), np.angle(w)], -1)

    x = np.linspace(0.1, 1, 10)
    dense = di.jacobian(f, di.AutoTape(), x)
    backend = di.AutoSparse(di.AutoTape())
    prep = di.prepare_jacobian(f, backend, x + 0.2)
    for _ in range(2):
        sparse = di.jacobian(f, backend, x, prep=prep)
        stored = sparse.nnz if hasattr(sparse, "nnz") else None
        got = np.asarray(sparse.todense() if hasattr(sparse, "todense") else sparse).reshape(dense.shape)
        np.testing.assert_allclose(got, dense, **TOL)
    pattern = np.zeros((5, 4, 10), dtype=bool)  # output (i, part) on x[i] and x[i + 5] only
    for i in range(5):
        pattern[i, :, [i, i + 5]] = True
    assert np.array_equal(got != 0, pattern)
    assert stored is None or stored == pattern.sum()  # the detected pattern: exactly these entries


def test_iscomplexobj_tells_the_truth():
    seen = {}

    def f(x):
        z = x[:2] + 1j * x[2:]
        seen.update(x=np.iscomplexobj(x), z=np.iscomplexobj(z), real=np.isrealobj(z.real))
        return np.sum(np.abs(z))

    di.gradient(f, di.AutoTape(), np.array([1.0, 2.0, 0.0, 3.0]))
    assert seen == {"x": False, "z": True, "real": True}


@pytest.mark.parametrize(
    "g",
    [
        lambda z: np.abs(np.linalg.eig(np.reshape(z, (2, 2)))[0]),
        lambda z: np.real(np.maximum(z, 0.5j)),
        lambda z: np.linalg.slogdet(np.diag(z))[1],
        lambda z: np.linalg.svd(np.reshape(z, (2, 2)))[1],
    ],
    ids=["eig", "maximum", "slogdet", "svd"],
)
def test_operations_without_a_complex_rule_are_refused(g):
    f = lambda x: np.sum(g(x[:4] + 1j * x[4:]))
    x = np.array([2.0, 0.3, 0.3, 1.0, 0.0, 0.2, -0.2, 0.1])
    for b in TAPES:
        with pytest.raises(di.NotSupportedError, match="complex"):
            di.gradient(f, b, x)


def test_a_complex_output_is_prepared_as_pairs():
    """A recording of complex output signals the call path, which prepares the real problem of pairs."""
    from diface._problem import ComplexOutput
    from diface.backends.tape.recording.record import record

    with pytest.raises(ComplexOutput, match="complex"):
        record(lambda x: x * 1j, np.ones(2), (), (), None)
    np.testing.assert_allclose(di.jacobian(lambda x: x * 1j, di.AutoTape(), np.ones(2)), 1j * np.eye(2))
