"""Sparse Jacobians and Hessians of functions with complex inputs and intermediates (issue 18), with the
pattern found by each engine's own tracer (jaxpr, torch graph, the tape's recording).

A complex element is one index set in the tracers, so holomorphic functions get their exact complex
pattern (diagonal for elementwise ones, bidiagonal for a stencil); Hessians of realified real losses get
a superset (real and imaginary parts of one element share a set) and still their exact values. Results
are checked against analytic derivatives, so every engine is held to the same numbers, and against the
engine's dense operator; each preparation is made at one point and called at others, twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import diface as di
from conftest import HAS_JAX, HAS_TORCH

N = 6
RNG = np.random.default_rng(18)
Z0, Z1, Z2 = (RNG.normal(size=N) + 1j * RNG.normal(size=N) for _ in range(3))
#: the stencil's complex coefficients
C_UP, C_DOWN = 1 + 2j, 0.5 - 1j


def _engines() -> list:
    engines = ["tape", "finitediff"]
    engines += ["jax"] if HAS_JAX else []
    engines += ["torch"] if HAS_TORCH else []
    return engines


def _namespace(engine: str) -> Any:
    """The array namespace f is written in for `engine` (NumPy for the tape's tracer)."""
    if engine == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        return jax.numpy
    if engine == "torch":
        import torch

        return torch
    return np


def _backend(engine: str) -> Any:
    return {
        "jax": lambda: di.AutoJAX(),
        "torch": lambda: di.AutoTorch(),
        "tape": lambda: di.AutoTape(),
        "finitediff": lambda: di.AutoFiniteDiff(),
    }[engine]()


def _second_order(engine: str) -> Any:
    """A second-order backend whose sparsity detection is `engine`'s tracer."""
    if engine == "jax":
        return di.SecondOrder(di.AutoJAX("forward"), di.AutoJAX())
    if engine == "torch":
        return di.SecondOrder(di.AutoTorch("forward"), di.AutoTorch())
    return _backend(engine)


def _bidiagonal(up: complex, down: complex) -> np.ndarray:
    """The (N-1) x N matrix of y[k] = up * z[k+1] - down * z[k]."""
    m = np.zeros((N - 1, N), dtype=complex)
    m[np.arange(N - 1), np.arange(1, N)] = up
    m[np.arange(N - 1), np.arange(N - 1)] = -down
    return m


#: name -> (f in namespace xp, analytic complex Jacobian at z)
JACOBIANS: dict[str, tuple[Callable, Callable]] = {
    "square": (lambda xp: lambda z: z**2, lambda z: np.diag(2 * z)),
    "exp(z) * z": (lambda xp: lambda z: xp.exp(z) * z, lambda z: np.diag(np.exp(z) * (1 + z))),
    "complex stencil": (
        lambda xp: lambda z: C_UP * z[1:] - C_DOWN * z[:-1],
        lambda z: _bidiagonal(C_UP, C_DOWN),
    ),
    "nonlinear stencil": (
        lambda xp: lambda z: z[1:] * z[:-1] + C_UP * z[1:],
        lambda z: _bidiagonal(z[:-1] + C_UP, -z[1:]),
    ),
}


def _pattern(m: Any) -> np.ndarray:
    """The stored (structural) positions of a scipy.sparse matrix."""
    coo = sp.coo_array(m)
    out = np.zeros(coo.shape, dtype=bool)
    out[coo.row, coo.col] = True
    return out


@pytest.mark.parametrize("engine", _engines())
@pytest.mark.parametrize("name", list(JACOBIANS))
def test_sparse_complex_jacobian(engine: str, name: str) -> None:
    make, exact = JACOBIANS[name]
    f = make(_namespace(engine))
    backend = di.AutoSparse(_backend(engine))
    prep = di.prepare_jacobian(f, backend, Z0)
    tol = 1e-5 if engine == "finitediff" else 1e-10
    for z in (Z1, Z2, Z1):  # another point than the preparation's, and twice the same
        jac = di.jacobian(f, backend, z, prep=prep)
        assert sp.issparse(jac)
        expected = exact(z)
        stored = _pattern(jac)
        assert not (expected != 0)[~stored].any()
        if engine in ("jax", "torch"):  # holomorphic: their complex pattern is exact
            np.testing.assert_array_equal(stored, expected != 0)
        np.testing.assert_allclose(jac.toarray(), expected, rtol=tol, atol=tol)
    if engine in ("jax", "torch"):
        dense = di.jacobian(f, _backend(engine), Z2)
        np.testing.assert_allclose(di.jacobian(f, backend, Z2, prep=prep).toarray(), np.asarray(dense), atol=1e-12)


def _difference_matrix() -> np.ndarray:
    return _bidiagonal(1.0, 1.0).real


@pytest.mark.parametrize("engine", _engines())
def test_sparse_hessian_of_a_realified_loss(engine: str) -> None:
    """sum |z[k+1] - z[k]|^2 on pairs: the real Hessian is 2 DᵀD on the real parts and on the imaginary
    parts, not coupling them; the detected pattern may couple them (one index set per complex element),
    never miss an entry."""
    xp = _namespace(engine)
    g = di.realify(lambda z: xp.sum(xp.abs(z[1:] - z[:-1]) ** 2))
    backend = di.AutoSparse(_second_order(engine))
    pairs = [np.stack([z.real, z.imag], -1) for z in (Z0, Z1, Z2)]
    prep = di.prepare_hessian(g, backend, pairs[0])
    d = _difference_matrix()
    exact = np.kron(2 * d.T @ d, np.eye(2))  # pairs interleaved: (a0, b0, a1, b1, ...)
    pattern = prep.sparsity_pattern.toarray()
    assert not (exact != 0)[~pattern].any()  # a superset of the nonzeros
    assert not pattern[np.abs(np.arange(2 * N)[:, None] // 2 - np.arange(2 * N) // 2) > 1].any()  # banded
    tol = 1e-4 if engine == "finitediff" else 1e-9
    for v in (pairs[1], pairs[2], pairs[1]):
        h = di.hessian(g, backend, v, prep=prep)
        assert sp.issparse(h)
        np.testing.assert_allclose(h.toarray(), exact, atol=tol)
    if engine in ("jax", "torch"):
        dense = np.asarray(di.hessian(g, _backend(engine), pairs[2])).reshape(2 * N, 2 * N)
        np.testing.assert_allclose(di.hessian(g, backend, pairs[2], prep=prep).toarray(), dense, atol=1e-12)


def _reversed(xp: Any, z: Any) -> Any:
    return z.flip(0) if xp is not np and hasattr(z, "flip") else z[::-1]


#: functions that are not holomorphic: sparse real Jacobians of `di.realify(f)`; name -> f in namespace xp
REALIFIED: dict[str, Callable] = {
    "conj times reversed": lambda xp: lambda z: xp.conj(z) * _reversed(xp, z),
    "modulus and phase": lambda xp: lambda z: xp.abs(z[1:]) * xp.angle(z[:-1]),
    "real times imaginary": lambda xp: lambda z: xp.real(z[1:]) * xp.imag(z[:-1]),
}


@pytest.mark.parametrize("engine", _engines())
@pytest.mark.parametrize("name", list(REALIFIED))
def test_sparse_jacobian_of_a_realified_function(engine: str, name: str) -> None:
    """Real Jacobians on pairs: equal to the dense ones, stored only within the complex elements' blocks
    the function couples (a superset of the nonzeros: `conj`'s block is diagonal, its pattern full)."""
    xp = _namespace(engine)
    g = di.realify(REALIFIED[name](xp))
    backend = di.AutoSparse(_backend(engine))
    pairs = [np.stack([z.real, z.imag], -1) for z in (Z0, Z1, Z2)]
    prep = di.prepare_jacobian(g, backend, pairs[0])
    reference = _backend(engine) if engine in ("jax", "torch") else di.AutoFiniteDiff()
    tol = 1e-10 if engine in ("jax", "torch") else 1e-5
    for v in (pairs[1], pairs[2], pairs[1]):
        jac = di.jacobian(g, backend, v, prep=prep)
        assert sp.issparse(jac)
        dense = np.asarray(di.jacobian(g, reference, v)).reshape(jac.shape)
        assert not (np.abs(dense) > 0)[~_pattern(jac)].any()
        np.testing.assert_allclose(jac.toarray(), dense, atol=tol)


@pytest.mark.parametrize("engine", [e for e in _engines() if e in ("jax", "torch")])
def test_block_fft_pattern_is_per_block(engine: str) -> None:
    """An FFT along the last axis of (2, N/2) blocks: each output depends on its block only."""
    xp = _namespace(engine)
    fft = xp.fft

    def f(z: Any) -> Any:
        blocks = z.reshape(2, N // 2)
        out = fft.fft(blocks, axis=-1) if engine == "jax" else fft.fft(blocks, dim=-1)
        return out.reshape(N) * C_UP

    backend = di.AutoSparse(_backend(engine))
    prep = di.prepare_jacobian(f, backend, Z0)
    blocks = np.kron(np.eye(2), np.ones((N // 2, N // 2)))
    for z in (Z1, Z1):
        jac = di.jacobian(f, backend, z, prep=prep)
        assert not _pattern(jac)[blocks == 0].any()
        dft = np.exp(-2j * np.pi * np.outer(np.arange(N // 2), np.arange(N // 2)) / (N // 2))
        np.testing.assert_allclose(jac.toarray(), np.kron(np.eye(2), dft) * C_UP, atol=1e-12)


@pytest.mark.parametrize("engine", ["torch", "jax"])
def test_native_sparse_results_stay_sparse(engine):
    """Native complex input gives the library's own sparse matrix (torch CSR, JAX BCOO) of complex values,
    combined from the pairs' rows on the array's device, like a real sparse Jacobian."""
    pytest.importorskip(engine)
    zn = np.array([0.1 + 1j, 0.2, 0.3j, -0.5 + 0.2j])
    want = np.zeros((3, 4), complex)
    want[np.arange(3), np.arange(3)] = np.sin(zn[1:])  # d(sin(v[i+1]) v[i])/dv[i]
    want[np.arange(3), np.arange(1, 4)] = np.cos(zn[1:]) * zn[:-1]
    if engine == "torch":
        import torch

        backend, z, xp = di.AutoSparse(di.AutoTorch()), torch.tensor(zn), torch
        dense = lambda a: a.to_dense().numpy()
    else:
        import jax.numpy as jnp

        backend, z, xp = di.AutoSparse(di.AutoJAX()), jnp.asarray(zn), jnp
        dense = lambda a: np.asarray(a.todense())
    f = lambda v: xp.sin(v[1:]) * v[:-1]
    prep = di.prepare_jacobian(f, backend, z)
    for _ in range(2):
        got = prep.jacobian(z)
        assert got.dtype in (np.complex128, getattr(xp, "complex128", None))
        assert "sparse" in str(getattr(got, "layout", type(got).__name__)).lower() or "BCOO" in type(got).__name__
        np.testing.assert_allclose(dense(got), want, rtol=1e-12, atol=1e-14)
