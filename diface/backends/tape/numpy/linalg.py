"""What the tape records for NumPy's linear algebra: inv, solve, det, slogdet, pinv, and the
decompositions eigh/eigvalsh, eig/eigvals (real eigenvalues), svd, cholesky, qr."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..prims.decomp import CHOLESKY, EIG, EIGH, PINV, QR, SVD
from ..prims.linalg import DET, INV, LOGABSDET, SOLVE
from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..tracing.tracer import operand
from .common import NO, implements, unsupported

__all__: list[str] = []


# -- linear algebra ---------------------------------------------------------------------------------------------
class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


def _square(a: Any, name: str) -> Any:
    a = operand(a)
    s = shape_of(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise np.linalg.LinAlgError(f"{name}: last 2 dimensions of the array must be square")
    return a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)


@implements(np.linalg.inv)
def _inv(a: Any) -> Any:
    return INV(_square(a, "inv"))


@implements(np.linalg.solve)
def _solve(a: Any, b: Any) -> Any:
    return SOLVE(_square(a, "solve"), operand(b))


@implements(np.linalg.det)
def _det(a: Any) -> Any:
    return DET(_square(a, "det"))


@implements(np.linalg.slogdet)
def _slogdet(a: Any) -> SlogdetResult:
    a = _square(a, "slogdet")
    return SlogdetResult(NonDiff(lambda m: np.linalg.slogdet(m)[0], "sign_of_det")(a), LOGABSDET(a))


# -- decompositions ---------------------------------------------------------------------------------------------
class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


def _symmetric_from(a: Any, upper: bool) -> Any:
    """The symmetric matrix LAPACK sees: the lower (or upper) triangle of a, mirrored."""
    if upper:
        return np.add(np.triu(a), np.swapaxes(np.triu(a, 1), -1, -2))
    return np.add(np.tril(a), np.swapaxes(np.tril(a, -1), -1, -2))


def _hermitian_from(a: Any, upper: bool) -> Any:
    """The Hermitian matrix LAPACK sees: the strict lower (or upper) triangle of a, its conjugate
    transpose, and the real part of the diagonal (LAPACK ignores the imaginary part); a real a is
    mirrored (`_symmetric_from`). Recorded, so the ignored entries get the derivative 0."""
    if a.dtype.kind != "c":
        return _symmetric_from(a, upper)
    part = np.triu(a, 1) if upper else np.tril(a, -1)
    diagonal = np.real(a)
    diagonal = np.multiply(diagonal, np.eye(shape_of(a)[-1], dtype=diagonal.dtype))  # complex64 stays
    return np.add(np.add(part, np.swapaxes(np.conjugate(part), -1, -2)), diagonal)


def _uplo(uplo: str) -> bool:
    if uplo not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return uplo == "U"


@implements(np.linalg.eigh)
def _eigh(a: Any, UPLO: str = "L") -> EighResult:
    upper = _uplo(UPLO)
    s = _hermitian_from(_square(a, "eigh"), upper)
    return EighResult(EIGH[0](s, upper=upper), EIGH[1](s, upper=upper))


@implements(np.linalg.eigvalsh)
def _eigvalsh(a: Any, UPLO: str = "L") -> Any:
    upper = _uplo(UPLO)
    return EIGH[0](_hermitian_from(_square(a, "eigvalsh"), upper), upper=upper)


@implements(np.linalg.eig)
def _eig(a: Any) -> EigResult:
    a = _square(a, "eig")
    return EigResult(EIG[0](a), EIG[1](a))


@implements(np.linalg.eigvals)
def _eigvals(a: Any) -> Any:
    return EIG[0](_square(a, "eigvals"))


@implements(np.linalg.svd)
def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    a = _floating(operand(a), "svd")
    m, n = shape_of(a)[-2:]
    if not compute_uv:
        return SVD[1](a)
    if full_matrices and m != n:
        raise unsupported(
            "numpy.linalg.svd",
            " with full_matrices=True for a non-square matrix (the extra singular vectors are not unique, so "
            "they have no derivative): pass full_matrices=False",
        )
    return SVDResult(SVD[0](a), SVD[1](a), SVD[2](a))


@implements(np.linalg.svdvals)
def _svdvals(x: Any) -> Any:
    return SVD[1](_floating(operand(x), "svdvals"))


@implements(np.linalg.cholesky)
def _cholesky(a: Any, /, *, upper: bool = False) -> Any:
    low = CHOLESKY(_symmetric_from(_square(a, "cholesky"), upper))
    return np.swapaxes(low, -1, -2) if upper else low


@implements(np.linalg.qr)
def _qr(a: Any, mode: str = "reduced") -> Any:
    a = _floating(operand(a), "qr")
    m, n = shape_of(a)[-2:]
    if mode not in ("reduced", "complete", "r") or (m < n) or (mode == "complete" and m != n):
        raise unsupported(
            "numpy.linalg.qr",
            f" with mode={mode!r} for a {m} x {n} matrix (the tape differentiates the reduced "
            "QR of matrices with at least as many rows as columns)",
        )
    if mode == "r":
        return QR[1](a)
    return QRResult(QR[0](a), QR[1](a))


@implements(np.linalg.pinv)
def _pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = NO) -> Any:
    if rtol is not NO and rtol is not None:
        rcond = rtol
    return PINV(_floating(operand(a), "pinv"), rcond=rcond, hermitian=bool(hermitian))


def _floating(a: Any, name: str) -> Any:
    if len(shape_of(a)) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape_of(a))}-dimensional array given. Array must be at least two-dimensional"
        )
    return a if np.issubdtype(a.dtype, np.inexact) else a.astype(np.float64)
