"""AutoTape through scipy.linalg inside f: matrix functions (expm, expm_frechet, logm, sqrtm, cosm, ...),
solve (its assume_a structures, transposed), inv, det, lstsq, pinv, norm, solve_triangular, lu_factor /
lu_solve / lu, cho_factor / cho_solve / cholesky, eigh / eigvalsh, svd / svdvals.

Each is checked against the same function written with NumPy on the tape (whose rules are checked
against JAX and autograd in test_tape_rules.py), an identity (expm(logm(A)) = A, sqrtm(A)^2 = A,
P L U = A), or analytic derivatives (expm along a line): the value, a forward-mode Jacobian, a reverse-mode
gradient and Hessian-vector products (batched), each prepared at one point and called at another,
twice (`check`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diface as di

sl = pytest.importorskip("scipy.linalg")

REVERSE, FORWARD, TAPE = di.AutoTape(mode="reverse"), di.AutoTape(mode="forward"), di.AutoTape()
RNG = np.random.default_rng(7)
X9 = 0.4 * RNG.standard_normal(9)
X12 = 0.4 * RNG.standard_normal(12)
B3 = RNG.standard_normal((3, 2))


def check(f: Callable, ref: Callable, x: np.ndarray, *, rtol: float = 1e-9, second: bool = True) -> None:
    """f (with scipy.linalg) against ref (the same function, exactly differentiated) at x: the tape's value
    against SciPy's own and ref's, a forward-mode Jacobian, a reverse-mode gradient and batched
    Hessian-vector products, each prepared at another point and called at x twice."""
    other = x + 0.05 * np.cos(np.arange(x.size))
    flat = lambda v: np.ravel(f(v))
    value = np.asarray(ref(x))
    y, want = di.value_and_jacobian(flat, REVERSE, x)
    np.testing.assert_allclose(y, np.ravel(f(x)), rtol=1e-12, atol=1e-14)  # SciPy's own value
    np.testing.assert_allclose(y, np.ravel(value), rtol=1e-10, atol=1e-12)
    tol = {"rtol": rtol, "atol": rtol * max(1.0, float(np.abs(want).max()))}
    np.testing.assert_allclose(want, di.jacobian(lambda v: np.ravel(ref(v)), REVERSE, x), **tol)
    prep = di.prepare_jacobian(flat, FORWARD, other)
    weights = np.cos(np.arange(value.size) + 1.0).reshape(value.shape)

    def g(v: Any, fn: Callable = f) -> Any:
        return np.sum(np.sin(fn(v)) * weights)

    grad = di.prepare_gradient(g, REVERSE, other)
    ts = (np.sin(np.arange(x.size) + 2.0), np.cos(np.arange(x.size) * 3.0))
    hvp = di.prepare_hvp(g, TAPE, other, ts) if second else None
    grad_want = di.gradient(lambda v: g(v, ref), REVERSE, x)
    hvp_want = di.hvp(lambda v: g(v, ref), TAPE, x, ts) if second else ()
    for _ in range(2):
        np.testing.assert_allclose(prep.jacobian(x), want, **tol)
        np.testing.assert_allclose(grad.gradient(x), grad_want, **tol)
        if hvp is not None:
            for r, w in zip(hvp.hvp(x, ts), hvp_want):
                np.testing.assert_allclose(r, w, rtol=10 * rtol, atol=10 * tol["atol"])


def taped_value(f: Callable, x: np.ndarray) -> Any:
    """f's value as the tape computes it (f's traced result, the value of a recording)."""
    return di.value_and_jacobian(f, REVERSE, x)[0]


def expm_series(a: Any) -> Any:
    """exp(a) by scaling (2^-4), 12 Taylor terms and squaring: NumPy only, for |a| up to 1.5 or so."""
    n = a.shape[-1]
    m = a / 16.0
    term = total = np.eye(n) + 0 * m
    for k in range(1, 13):
        term = term @ m / k
        total = total + term
    for _ in range(4):
        total = total @ total
    return total


def _mat(x: Any, shift: float = 0.0) -> Any:
    return np.reshape(x[:9], (3, 3)) + shift * np.eye(3)


def _spd(x: Any) -> Any:
    a = _mat(x)
    return a @ a.T + 2.0 * np.eye(3)


# -- matrix functions ------------------------------------------------------------------------------------------
def test_expm_stacked_and_complex_against_the_series():
    check(lambda x: sl.expm(np.reshape(x, (3, 2, 2))), lambda x: expm_series(np.reshape(x, (3, 2, 2))), X12)
    cplx = lambda x: np.reshape(x[:4], (2, 2)) + 1j * np.reshape(x[4:8], (2, 2))
    check(lambda x: np.abs(sl.expm(cplx(x))) ** 2, lambda x: np.abs(expm_series(cplx(x))) ** 2, X9)


def test_expm_along_a_line_against_the_analytic_derivatives():
    """g(t) = sum(sin(exp(tA))): g' = sum(cos(E) * A E), g'' = sum(-sin(E) (A E)^2 + cos(E) A^2 E)."""
    a = RNG.standard_normal((3, 3))
    g = lambda t: np.sum(np.sin(sl.expm(t[0] * a)))
    t0, t1 = np.array([0.7]), np.array([0.2])
    e = sl.expm(t1[0] * a)
    first = np.sum(np.cos(e) * (a @ e))
    second = np.sum(-np.sin(e) * (a @ e) ** 2 + np.cos(e) * (a @ a @ e))
    grad, hess = di.prepare_gradient(g, REVERSE, t0), di.prepare_hessian(g, TAPE, t0)
    forward = di.prepare_jacobian(g, FORWARD, t0)
    for _ in range(2):
        np.testing.assert_allclose(grad.gradient(t1), [first], rtol=1e-12)
        np.testing.assert_allclose(forward.jacobian(t1), [first], rtol=1e-12)
        np.testing.assert_allclose(hess.hessian(t1), [[second]], rtol=1e-11)


def test_expm_frechet_cosm_sinhm_tanhm():
    e = np.reshape(RNG.standard_normal(4), (2, 2))
    a2 = lambda x: np.reshape(x[:4], (2, 2))

    def series_frechet(a: Any, e: Any) -> Any:
        top, bottom = np.concatenate([a, e], axis=1), np.concatenate([np.zeros((2, 2)), a], axis=1)
        return expm_series(np.concatenate([top, bottom]))[:2, 2:]

    check(
        lambda x: np.stack(sl.expm_frechet(a2(x), e * x[4])),
        lambda x: np.stack([expm_series(a2(x)), series_frechet(a2(x), e * x[4])]),
        X9,
    )
    check(
        lambda x: sl.cosm(_mat(x)) + sl.sinm(_mat(x)) * sl.sinhm(_mat(x)) + sl.tanhm(_mat(x)),
        lambda x: (
            np.real(expm_series(1j * _mat(x)))
            + np.imag(expm_series(1j * _mat(x))) * (expm_series(_mat(x)) - expm_series(-_mat(x))) / 2
            + np.linalg.solve(
                expm_series(_mat(x)) + expm_series(-_mat(x)), expm_series(_mat(x)) - expm_series(-_mat(x))
            )
        ),
        X9,
    )


def test_logm_and_sqrtm_invert_expm_and_squaring():
    """expm(logm(A)) = A and sqrtm(A) @ sqrtm(A) = A: their derivatives are A's own, to second order."""
    a = lambda x: _spd(x) + 0.3 * _mat(x)
    check(lambda x: sl.expm(sl.logm(a(x))), a, X9, rtol=1e-8)
    check(lambda x: (lambda s: s @ s)(sl.sqrtm(a(x))), a, X9, rtol=1e-8)
    s = lambda x: np.reshape(x[:4], (2, 2)) @ np.reshape(x[:4], (2, 2)).T + np.eye(2)
    check(lambda x: sl.sqrtm(np.stack([s(x), 2.0 * s(x)])), lambda x: sqrtm_spd(np.stack([s(x), 2.0 * s(x)])), X9)


def sqrtm_spd(a: Any) -> Any:
    w, v = np.linalg.eigh(a)
    return (v * np.sqrt(w)[..., None, :]) @ np.swapaxes(v, -1, -2)


def test_what_the_matrix_functions_refuse():
    negative = lambda x: np.array([[-1.0 - x[0], 0.2], [0.1, 2.0]])
    for fn in (sl.sqrtm, sl.logm):
        with pytest.raises(di.NotSupportedError, match=rf"scipy.linalg.{fn.__name__} of a real matrix whose result"):
            di.gradient(lambda x, fn=fn: np.sum(fn(negative(x))), REVERSE, np.array([0.5]))
    prep = di.prepare_gradient(lambda x: np.sum(sl.sqrtm(negative(-x - 2.0))), REVERSE, np.array([0.5]))
    with pytest.raises(di.NotSupportedError, match="closed negative real axis"):
        prep.gradient(np.array([-2.5]))  # a prepared call that meets the branch cut


# -- solve, inv, det, lstsq, pinv, norm -----------------------------------------------------------------------
def _sym_upper(m: Any) -> Any:
    return np.triu(m) + np.triu(m, 1).T


def test_solve_structures_inv_det():
    def f(x: Any) -> Any:
        a, s = _mat(x, 2.0), _spd(x) + 0.1 * _mat(x)  # s: LAPACK reads one triangle
        parts = [
            sl.solve(a, x[:3]),
            sl.solve(s, B3, assume_a="pos", lower=True).ravel(),
            sl.solve(s, x[3:6], assume_a="sym"),
            sl.solve(a, B3, transposed=True).ravel(),
            sl.solve(a, x[:3], assume_a="lower triangular"),
            sl.solve(a, x[:3], assume_a="tridiagonal"),
            sl.inv(s, assume_a="pos").ravel(),
            np.reshape(sl.det(a), (1,)),
        ]
        return np.concatenate(parts)

    def ref(x: Any) -> Any:
        a, s = _mat(x, 2.0), _spd(x) + 0.1 * _mat(x)
        band = np.abs(np.subtract.outer(np.arange(3), np.arange(3))) <= 1
        parts = [
            np.linalg.solve(a, x[:3]),
            np.linalg.solve(np.tril(s) + np.tril(s, -1).T, B3).ravel(),
            np.linalg.solve(_sym_upper(s), x[3:6]),
            np.linalg.solve(a.T, B3).ravel(),
            np.linalg.solve(np.tril(a), x[:3]),
            np.linalg.solve(a * band, x[:3]),
            np.linalg.inv(_sym_upper(s)).ravel(),
            np.reshape(np.linalg.det(a), (1,)),
        ]
        return np.concatenate(parts)

    check(f, ref, X9)


def test_lstsq_pinv_norm():
    b = RNG.standard_normal(4)
    check(
        lambda x: np.concatenate(
            [
                sl.lstsq(np.reshape(x, (4, 3)), b)[0],
                np.reshape(sl.lstsq(np.reshape(x, (4, 3)), b)[1], (1,)),
                sl.pinv(np.reshape(x, (3, 4))).ravel(),
                np.reshape(sl.norm(np.reshape(x, (4, 3)), 2) + sl.norm(x), (1,)),
            ]
        ),
        lambda x: np.concatenate(
            [
                np.linalg.pinv(np.reshape(x, (4, 3))) @ b,
                np.reshape(
                    np.sum((np.reshape(x, (4, 3)) @ (np.linalg.pinv(np.reshape(x, (4, 3))) @ b) - b) ** 2), (1,)
                ),
                np.linalg.pinv(np.reshape(x, (3, 4))).ravel(),
                np.reshape(np.linalg.norm(np.reshape(x, (4, 3)), 2) + np.linalg.norm(x), (1,)),
            ]
        ),
        X12,
    )
    _, res, rank, s = sl.lstsq(np.reshape(X12, (4, 3)), b)
    seen: dict[str, Any] = {}

    def f(v: Any) -> Any:
        out = sl.lstsq(np.reshape(v, (4, 3)), b)
        seen.update(shapes=(np.shape(out[1]), np.shape(out[3])), rank=out[2])
        return out[0]

    di.jacobian(f, REVERSE, X12)
    assert seen == {"shapes": (res.shape, s.shape), "rank": rank}  # SciPy's outputs' shapes and rank


# -- triangular, LU, Cholesky ---------------------------------------------------------------------------------
def test_solve_triangular_variants():
    a = lambda x: _mat(x, 2.0)
    stack = lambda x: np.reshape(x[:8], (2, 2, 2)) + 2.0 * np.eye(2)
    check(
        lambda x: np.concatenate(
            [
                sl.solve_triangular(a(x), B3, lower=True).ravel(),
                sl.solve_triangular(a(x), x[:3], trans="T", unit_diagonal=True),
                sl.solve_triangular(a(x), x[3:6], trans=1, lower=True),
                sl.solve_triangular(stack(x), x[:2]).ravel(),
            ]
        ),
        lambda x: np.concatenate(
            [
                np.linalg.solve(np.tril(a(x)), B3).ravel(),
                np.linalg.solve((np.triu(a(x), 1) + np.eye(3)).T, x[:3]),
                np.linalg.solve(np.tril(a(x)).T, x[3:6]),
                np.linalg.solve(np.triu(stack(x)), x[:2]).ravel(),
            ]
        ),
        X9,
    )


def _pivoting(x: Any) -> Any:
    """A matrix whose pivots differ between PIVOTING and the point `check` prepares at."""
    return np.array([[2.5 * x[0], 1.0, 0.3], [1.0, x[1] + 2.0, 0.2], [0.5, 0.1, 2.0]]) + 0.1 * _mat(x)


PIVOTING = np.array([0.33, 0.1, *X9[2:]])


def test_lu_factor_lu_solve_lu():
    """lu_factor's pivots differ between the preparation point and PIVOTING: a prepared call uses the
    pivots of its own point (recomputed with the factors)."""
    other = PIVOTING + 0.05 * np.cos(np.arange(9))
    assert not np.array_equal(sl.lu_factor(_pivoting(PIVOTING))[1], sl.lu_factor(_pivoting(other))[1])
    b = np.array([1.0, -2.0, 0.5])
    check(
        lambda x: np.concatenate(
            [
                sl.lu_solve(sl.lu_factor(_pivoting(x)), b + x[:3]),
                sl.lu_solve(sl.lu_factor(_pivoting(x)), B3, trans=1).ravel(),
                [np.sum(np.log(np.abs(np.diag(sl.lu_factor(_pivoting(x))[0]))))],
            ]
        ),
        lambda x: np.concatenate(
            [
                np.linalg.solve(_pivoting(x), b + x[:3]),
                np.linalg.solve(_pivoting(x).T, B3).ravel(),
                [np.linalg.slogdet(_pivoting(x))[1]],
            ]
        ),
        PIVOTING,
    )
    # P L U = A with L unit lower and U upper: the factors' derivatives are the unique split of dA
    check(lambda x: (lambda p, lo, up: p @ lo @ up)(*sl.lu(_pivoting(x))), _pivoting, PIVOTING)
    check(lambda x: (lambda pl, up: pl @ up)(*sl.lu(_pivoting(x), permute_l=True)), _pivoting, PIVOTING, second=False)
    lu, piv = sl.lu_factor(_pivoting(X9))
    p = sl.lu(_pivoting(X9), p_indices=True)[0]

    def outputs(x: Any) -> Any:
        lu_, piv_ = sl.lu_factor(_pivoting(x))
        return np.concatenate([lu_.ravel(), piv_, sl.lu(_pivoting(x), p_indices=True)[0]])

    np.testing.assert_allclose(taped_value(outputs, X9), np.concatenate([lu.ravel(), piv, p]), rtol=1e-14)


def test_cho_factor_cho_solve_cholesky():
    s = lambda x: _spd(x) + 0.1 * _mat(x)  # not symmetric: LAPACK reads one triangle
    check(
        lambda x: np.concatenate(
            [
                sl.cho_solve(sl.cho_factor(s(x)), x[:3]),
                sl.cho_solve(sl.cho_factor(s(x), lower=True), B3).ravel(),
                sl.cho_factor(s(x))[0].ravel(),  # the factor above, a's entries below
                sl.cholesky(s(x), lower=True).ravel(),
            ]
        ),
        lambda x: np.concatenate(
            [
                np.linalg.solve(_sym_upper(s(x)), x[:3]),
                np.linalg.solve(np.tril(s(x)) + np.tril(s(x), -1).T, B3).ravel(),
                (np.linalg.cholesky(_sym_upper(s(x))).T + np.tril(s(x), -1)).ravel(),
                np.linalg.cholesky(np.tril(s(x)) + np.tril(s(x), -1).T).ravel(),
            ]
        ),
        X9,
    )


# -- eigh, svd ------------------------------------------------------------------------------------------------
def test_eigh_svd_and_their_values():
    def f(x: Any) -> Any:
        s = _spd(x) + 0.1 * _mat(x)
        w, v = sl.eigh(s)
        u, sv, vh = sl.svd(np.reshape(x, (4, 3)), full_matrices=False)
        return np.concatenate(
            [
                w,
                np.ravel(v**2),
                sl.eigvalsh(s, lower=False, subset_by_index=[1, 2]),
                sv,
                np.ravel(u**2),
                np.ravel(vh**2),
                sl.svdvals(np.reshape(x, (3, 4))),
                sl.svd(np.reshape(x, (4, 3)), compute_uv=False, lapack_driver="gesvd"),
            ]
        )

    def ref(x: Any) -> Any:
        s = _spd(x) + 0.1 * _mat(x)
        w, v = np.linalg.eigh(s)
        u, sv, vh = np.linalg.svd(np.reshape(x, (4, 3)), full_matrices=False)
        return np.concatenate(
            [
                w,
                np.ravel(v**2),
                np.linalg.eigvalsh(s, UPLO="U")[1:],
                sv,
                np.ravel(u**2),
                np.ravel(vh**2),
                np.linalg.svd(np.reshape(x, (3, 4)), compute_uv=False),
                sv,
            ]
        )

    check(f, ref, X12)
    v = sl.eigh(_spd(X12) + 0.1 * _mat(X12))[1]  # SciPy's eigenvectors, signs included
    np.testing.assert_allclose(taped_value(lambda x: sl.eigh(_spd(x) + 0.1 * _mat(x))[1], X12), v, rtol=1e-12)


def test_what_the_decompositions_refuse():
    cases = [
        (lambda x: sl.svd(np.reshape(x[:6], (2, 3)))[0], "full_matrices=True"),
        (lambda x: sl.eigh(np.reshape(x[:4], (2, 2)), np.eye(2))[0], "generalized"),
        (lambda x: sl.eigh(_spd(x), subset_by_value=(0.0, 2.0))[0], "subset_by_value"),
        (lambda x: np.real(sl.lu_factor(_mat(x) * 1j)[0]), "complex"),
        (lambda x: np.real(sl.solve_triangular(_mat(x, 2.0) * 1j, np.ones(3))), "complex"),
        (lambda x: sl.pinv(np.reshape(x[:6], (2, 3)), atol=1e-3), "atol"),
        (lambda x: sl.lu_factor(np.reshape(x[:6], (2, 3)))[0], "non-square"),
    ]
    for f, match in cases:
        with pytest.raises(di.NotSupportedError, match=match):
            di.jacobian(f, REVERSE, X9)


def test_sparsity_and_taylor_run_through_the_new_operations():
    def f(x: Any) -> Any:
        a = np.reshape(x[:8], (2, 2, 2))
        lu = sl.lu_solve(sl.lu_factor(a[0] + 3.0 * np.eye(2)), x[:2])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.concatenate([sl.expm(a).ravel(), lu, sl.sqrtm(a[1] @ a[1].T + np.eye(2)).ravel()])

    x = X9[:8]
    sparse = di.prepare_jacobian(f, di.AutoSparse(TAPE), x).jacobian(x)
    np.testing.assert_allclose(sparse.toarray(), di.jacobian(f, TAPE, x), rtol=1e-13, atol=1e-15)
    assert sparse.nnz < sparse.shape[0] * sparse.shape[1]  # the matrices of a stack kept apart
    g = lambda v: np.sum(f(v))
    taylor = di.taylor(g, TAPE, x, np.ones(8), order=2)
    np.testing.assert_allclose(taylor[1][1], di.second_derivative(lambda t: g(x + t * np.ones(8)), TAPE, 0.0))
