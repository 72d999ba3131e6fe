"""The tape's rules for scipy.linalg (reached through `numpy.hooks`): the matrix functions expm, expm_frechet,
logm, sqrtm, cosm, sinm, tanm, coshm, sinhm, tanhm; solve, inv, det, lstsq, pinv, norm,
solve_triangular; lu_factor, lu_solve, lu, cho_factor, cho_solve, cholesky; eigh, eigvalsh, svd, svdvals.

Matrix functions are primitives whose value is SciPy's own. Their derivative is the Fréchet derivative,
from the block identity f([[A, E], [0, A]]) = [[f(A), L_f(A, E)], [0, f(A)]] with the same primitive on
the 2n x 2n matrix (so the rule records, and second order takes a 4n x 4n block); the VJP is
L_f(A^T, G) (A^H for complex A: f has real Taylor coefficients, so the HOLOMORPHIC convention holds).
logm and sqrtm of a real matrix whose result SciPy returns complex (an eigenvalue on the closed
negative real axis, the principal branch's cut) are refused.

The rest reuses what the tape knows where it computes what SciPy computes (to rounding): solve, inv and
det are NumPy's primitives on the matrix LAPACK reads for `assume_a` (a triangle mirrored, a triangle,
the diagonal, the three diagonals); lstsq and pinv NumPy's (pseudo-inverse based); cholesky NumPy's on
the triangle mirrored. New primitives with SciPy's values: solve_triangular (the triangle read, `trans`,
`unit_diagonal`), lu_factor (the packed LU and its pivots in one array: the pivots are recomputed with
the factors at every replay, so lu_solve of a prepared call uses the pivots of its own point; the
derivative of the packed factors is dL = L tril(X, -1), dU = triu(X) U with X = L^-1 P^T dA U^-1), and
SciPy's eigh and svd (NumPy's eigenvectors may have other signs: the rules compute with SciPy's own).
lu_solve and cho_solve are written with triangular solves on the factors' triangles, so a traced
factor and a traced right-hand side are both differentiated.
"""

from __future__ import annotations

import operator
import sys
import warnings
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.graph import Traced
from ..data.messages import unsupported
from ..data.sites import user_location
from ..numpy.common import ndim_of
from ..numpy.hooks import hook, original
from ..numpy.linalg import _hermitian_from, _symmetric_from
from ..numpy.linalg_extra import lstsq as _numpy_lstsq
from ..prims.decomp import CHOLESKY, PINV, _Eigh, _Part, _Svd
from ..prims.linalg import DET, INV, SOLVE
from ..prims.prim import HOLOMORPHIC, expand_to, into, reduce_to, shape_of
from ..prims.reduce import NonDiff
from ..tracing.tracer import operand

__all__ = ["EXPM", "LOGM", "LU_FACTOR", "SCIPY_EIGH", "SCIPY_SVD", "SOLVE_TRIANGULAR", "SQRTM"]


def _scipy(name: str) -> Any:
    """scipy.linalg's function as SciPy wrote it (not the tape's forwarder)."""
    return original(getattr(sys.modules["scipy.linalg"], name))


def _t(a: Any) -> Any:
    return np.swapaxes(a, -1, -2)


def _floating(a: Any) -> Any:
    """An argument as the tape takes it, integers as float64 and float16 as float32 (as LAPACK)."""
    a = operand(a)
    if not hasattr(a, "dtype"):
        a = np.asarray(a)
    if not np.issubdtype(a.dtype, np.inexact):
        return a.astype(np.float64)
    if a.dtype == np.float16:
        return a.astype(np.float32)
    return a


def _square(a: Any, name: str) -> Any:
    a = _floating(a)
    s = shape_of(a)
    if len(s) < 2:
        raise ValueError(f"scipy.linalg.{name}: expected at least a 2-D array, got {len(s)}-D")
    if s[-1] != s[-2]:
        raise ValueError(f"scipy.linalg.{name}: expected a square matrix (or stack of them), got shape {s}")
    return a


class _Scipy(_Part):
    """A primitive of scipy.linalg computing SciPy's value. A `_Part` so that the sparsity detector takes
    each output matrix as depending on all of its input matrices (its `forward` takes the primitive's
    own inputs and parameters: the engine calls it as forward(*inputs, out=..., **params))."""

    def __init__(self, name: str) -> None:
        super().__init__(0, name)

    def label(self) -> str:
        return f"scipy.linalg.{self.name}"


# -- matrix functions ------------------------------------------------------------------------------------------
def _block(a: Any, e: Any) -> Any:
    """[[a, e], [0, a]] (stacks of matrices; e may carry a leading batch axis of tangents)."""
    se = shape_of(e)
    if len(se) > len(shape_of(a)) or shape_of(a) != se:
        a = np.broadcast_to(a, np.broadcast_shapes(shape_of(a), se))
        e = np.broadcast_to(e, shape_of(a))
    zero = np.zeros(shape_of(a), dtype=np.result_type(a.dtype, e.dtype))
    return np.concatenate([np.concatenate([a, e], axis=-1), np.concatenate([zero, a], axis=-1)], axis=-2)


class _MatrixFunction(_Scipy):
    """f(A) for a matrix function of SciPy's with real Taylor coefficients (expm, logm, sqrtm).

    `rule`: the call is the block matrix of a derivative rule, whose value is mathematically real where
    the primal's is (the imaginary rounding SciPy may leave is dropped, and its accuracy warnings, about
    the block matrix, not f's own argument, are silenced)."""

    complex = HOLOMORPHIC

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (0,), False

    def forward(self, a: Any, out: Any = None, rule: bool = False) -> Any:  # type: ignore[override]
        with warnings.catch_warnings():
            if rule:
                warnings.simplefilter("ignore")
            r = _scipy(self.name)(a)
        if np.iscomplexobj(r) and not np.iscomplexobj(a):
            if not rule:
                raise NotSupportedError(
                    f"AutoTape does not differentiate scipy.linalg.{self.name} of a real matrix whose result SciPy "
                    f"returns complex (at {user_location()}): the matrix has an eigenvalue on the closed negative real "
                    "axis, the cut of the principal branch, where the function is not differentiable as a real "
                    "function. Pass a complex matrix (A.astype(complex)) to differentiate the complex function, or "
                    "differentiate where no eigenvalue is real and negative."
                )
            r = r.real
        return into(out, r)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, rule: bool = False) -> Any:
        return into(out, self.frechet(ins[0], ts[0]))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, rule: bool = False) -> Any:
        return into(out, self.frechet(_t(ins[0]), g))

    def frechet(self, a: Any, e: Any) -> Any:
        """L_f(a, e), the top right block of f([[a, e], [0, a]])."""
        n = shape_of(a)[-1]
        return self(_block(a, e), rule=True)[..., :n, n:]


EXPM = _MatrixFunction("expm")
LOGM = _MatrixFunction("logm")
SQRTM = _MatrixFunction("sqrtm")


def _matrix_argument(a: Any, name: str) -> Any:
    a = _floating(a)
    if a.dtype.kind == "c" and a.dtype.char not in "FD":
        a = a.astype(np.complex128)
    if ndim_of(a) < 2:
        raise np.linalg.LinAlgError("The input array must be at least two-dimensional")
    if shape_of(a)[-1] != shape_of(a)[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return a


def expm(kept: Any, A: Any) -> Any:
    a = _floating(A)
    if a.size == 1 and ndim_of(a) < 2:
        return np.reshape(np.exp(a), (1, 1))
    return EXPM(_matrix_argument(a, "expm"))


def expm_frechet(
    kept: Any, A: Any, E: Any, method: Any = None, compute_expm: bool = True, check_finite: bool = True
) -> Any:
    """exp(A) and L_exp(A, E) from the block matrix [[A, E], [0, A]] (what SciPy's `blockEnlarge` method
    computes; its default method's values differ from these by rounding)."""
    a, e = _floating(A), _floating(E)
    if ndim_of(a) != 2 or shape_of(a)[0] != shape_of(a)[1]:
        raise ValueError("expected A to be a square matrix")
    if ndim_of(e) != 2 or shape_of(e)[0] != shape_of(e)[1]:
        raise ValueError("expected E to be a square matrix")
    if shape_of(a) != shape_of(e):
        raise ValueError("expected A and E to be the same shape")
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"Unknown implementation {method}")
    n = shape_of(a)[0]
    big = EXPM(_block(a, e))
    frechet = big[:n, n:]
    return (big[:n, :n], frechet) if compute_expm else frechet


def _disp_result(name: str, f: Any, a: Any, disp: Any) -> Any:
    """logm's and sqrtm's deprecated `disp`: with False, (value, SciPy's error estimate, no derivative)."""
    if disp is _NO_VALUE or disp:
        return f
    if name == "logm":
        estimate = NonDiff(lambda v, m: np.linalg.norm(_scipy("expm")(v) - m, 1) / np.linalg.norm(m, 1), "logm error")
    else:
        estimate = NonDiff(lambda v, m: np.linalg.norm(v @ v - m, "fro") ** 2 / np.linalg.norm(m, "fro"), "sqrtm error")
    return f, estimate(f, a)


_NO_VALUE = object()


def logm(kept: Any, A: Any, disp: Any = _NO_VALUE) -> Any:
    a = _matrix_argument(A, "logm")
    if disp is not _NO_VALUE:
        warnings.warn("The `disp` argument is deprecated and will be removed in SciPy 1.18.0.", DeprecationWarning, 3)
    return _disp_result("logm", LOGM(a), a, disp)


def sqrtm(kept: Any, A: Any, disp: Any = _NO_VALUE, blocksize: Any = _NO_VALUE) -> Any:
    a = _floating(A)
    if a.size == 1 and ndim_of(a) < 2:
        return np.reshape(np.exp(a), (1, 1))  # what SciPy returns there
    a = _matrix_argument(a, "sqrtm")
    if disp is not _NO_VALUE:
        warnings.warn("The `disp` argument is deprecated and will be removed in SciPy 1.18.0.", DeprecationWarning, 3)
    return _disp_result("sqrtm", SQRTM(a), a, disp)


def _square_2d(A: Any, name: str) -> Any:
    a = _floating(A)
    if ndim_of(a) != 2 or shape_of(a)[0] != shape_of(a)[1]:
        raise ValueError(f"expected square array_like input to scipy.linalg.{name}")
    return a


def cosm(kept: Any, A: Any) -> Any:
    a = _square_2d(A, "cosm")
    if a.dtype.kind == "c":
        return np.multiply(0.5, np.add(EXPM(np.multiply(1j, a)), EXPM(np.multiply(-1j, a))))
    return np.real(EXPM(np.multiply(1j, a)))


def sinm(kept: Any, A: Any) -> Any:
    a = _square_2d(A, "sinm")
    if a.dtype.kind == "c":
        return np.multiply(-0.5j, np.subtract(EXPM(np.multiply(1j, a)), EXPM(np.multiply(-1j, a))))
    return np.imag(EXPM(np.multiply(1j, a)))


def tanm(kept: Any, A: Any) -> Any:
    return SOLVE(cosm(kept, A), sinm(kept, A))


def coshm(kept: Any, A: Any) -> Any:
    a = _square_2d(A, "coshm")
    return np.multiply(0.5, np.add(EXPM(a), EXPM(np.negative(a))))


def sinhm(kept: Any, A: Any) -> Any:
    a = _square_2d(A, "sinhm")
    return np.multiply(0.5, np.subtract(EXPM(a), EXPM(np.negative(a))))


def tanhm(kept: Any, A: Any) -> Any:
    return SOLVE(coshm(kept, A), sinhm(kept, A))


# -- solve, inv, det ----------------------------------------------------------------------------------------
_STRUCTURES = {
    None: "general",
    "general": "general",
    "gen": "general",
    "banded": "general",  # SciPy finds the bands from the zeros: the matrix is all of a
    "diagonal": "diagonal",
    "tridiagonal": "tridiagonal",
    "upper triangular": "upper",
    "lower triangular": "lower",
    "pos": "pos",
    "positive definite": "pos",
    "sym": "sym",
    "symmetric": "sym",
    "her": "her",
    "hermitian": "her",
}


def _structured(a: Any, assume_a: Any, lower: bool) -> Any:
    """The matrix LAPACK reads for `assume_a`: only its entries carry derivatives. A structure SciPy
    detects itself (`assume_a=None`) leaves the matrix whole: the function is a's solve all around."""
    kind = _STRUCTURES.get(assume_a, "unknown") if isinstance(assume_a, (str, type(None))) else "unknown"
    if kind == "unknown":
        raise ValueError(f"{assume_a} is not a recognized matrix structure")
    n = shape_of(a)[-1]
    if kind == "general":
        return a
    if kind == "diagonal":
        return np.multiply(a, np.eye(n, dtype=bool))
    if kind == "tridiagonal":
        band = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
        return np.multiply(a, band)
    if kind == "upper":
        return np.triu(a)
    if kind == "lower":
        return np.tril(a)
    if kind == "sym" or (kind == "pos" and a.dtype.kind != "c"):
        return _symmetric_from(a, not lower)
    return _hermitian_from(a, not lower)


def solve(
    kept: Any,
    a: Any,
    b: Any,
    lower: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    assume_a: Any = None,
    transposed: bool = False,
) -> Any:
    a, c = _floating(a), _floating(b)
    if ndim_of(a) < 2:
        a = np.reshape(a, (1,) * (2 - ndim_of(a)) + shape_of(a))
    if ndim_of(c) == 0:
        c = np.reshape(c, (1,))
    if shape_of(a)[-1] != shape_of(a)[-2]:
        raise ValueError(f"Expected square matrix, got a1.shape={shape_of(a)}")
    if a.dtype.kind == "c" and transposed:
        raise NotImplementedError(
            "scipy.linalg.solve can currently not solve a^T x = b or a^H x = b for complex matrices."
        )
    rows = shape_of(c)[0] if ndim_of(c) == 1 else shape_of(c)[-2]
    if a.size == 1:  # SciPy divides (whatever the length of b)
        column = np.reshape(c, (*shape_of(c), 1)) if ndim_of(c) == 1 else c
        x = np.divide(column, a)
        return x[..., 0] if ndim_of(c) == 1 else x
    if rows != shape_of(a)[-1]:
        raise ValueError(f"incompatible shapes: a1.shape={shape_of(a)} and b1.shape={shape_of(c)}")
    m = _structured(a, assume_a, lower)
    return SOLVE(_t(m) if transposed else m, c)


def inv(
    kept: Any,
    a: Any,
    overwrite_a: bool = False,
    check_finite: bool = True,
    *,
    assume_a: Any = None,
    lower: bool = False,
) -> Any:
    a = _square(a, "inv")
    return INV(_structured(a, assume_a, lower))


def det(kept: Any, a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    a = _floating(a)
    if ndim_of(a) < 2:
        raise ValueError("The input array must be at least two-dimensional.")
    if shape_of(a)[-1] != shape_of(a)[-2]:
        raise ValueError(f"Last 2 dimensions of the array must be square but received shape {shape_of(a)}.")
    return DET(a)


def lstsq(
    kept: Any,
    a: Any,
    b: Any,
    cond: Any = None,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
    lapack_driver: Any = None,
) -> tuple:
    """The minimum-norm least-squares solution (NumPy's lstsq: x = pinv(a) b with SciPy's cut-off `cond`
    of small singular values), differentiable where the rank stays the same (the rank is a guard);
    residues at full column rank, differentiated; singular values (gelsd, gelss) differentiated."""
    a, c = _floating(a), _floating(b)
    if ndim_of(a) != 2:
        raise ValueError("Input array a should be 2D")
    m, n = shape_of(a)
    if m != shape_of(c)[0]:
        raise ValueError(f"Shape mismatch: a and b should have the same number of rows ({m} != {shape_of(c)[0]}).")
    driver = "gelsd" if lapack_driver is None else lapack_driver
    if driver not in ("gelsd", "gelsy", "gelss"):
        raise ValueError(f'LAPACK driver "{driver}" is not found')
    if m == 0 or n == 0:
        raise unsupported("scipy.linalg.lstsq", " of an empty matrix")
    eps = float(np.finfo(np.result_type(a.dtype, c.dtype)).eps)
    x, residues, rank, s = _numpy_lstsq(a, c, eps if cond is None else cond)
    if driver == "gelsy":
        if rank < min(m, n):
            raise unsupported(
                "scipy.linalg.lstsq",
                " with lapack_driver='gelsy' of a rank-deficient matrix (its rank decision is not the singular "
                "values' one the tape follows): use the default driver gelsd",
            )
        return x, np.zeros((0,), dtype=x.dtype), rank, None
    if ndim_of(c) == 1 and shape_of(residues) == (1,):
        residues = np.reshape(residues, ())
    return x, residues, rank, s


def pinv(
    kept: Any, a: Any, *, atol: Any = None, rtol: Any = None, return_rank: bool = False, check_finite: bool = True
) -> Any:
    a = _floating(a)
    if ndim_of(a) != 2:
        raise ValueError("scipy.linalg.pinv: expected a 2-D array")
    if atol is not None and atol != 0:
        if atol < 0:
            raise ValueError("atol and rtol values must be positive.")
        raise unsupported(
            "scipy.linalg.pinv",
            " with an absolute tolerance atol > 0 (the tape's pinv cuts singular values relative to the largest): "
            "pass rtol alone",
        )
    rtol = max(shape_of(a)) * float(np.finfo(a.dtype).eps) if rtol is None else rtol
    if rtol < 0:
        raise ValueError("atol and rtol values must be positive.")
    p = PINV(a, rcond=rtol)
    if not return_rank:
        return p
    s = SCIPY_SVD[1](a, values_only=True)
    counted = NonDiff(lambda v: np.count_nonzero(v > rtol * np.max(v, initial=0.0)), "matrix_rank")(s)
    if isinstance(counted, Traced):
        return p, counted.observe("int", "the rank of the matrix scipy.linalg.pinv inverts", user_location())
    return p, int(counted)


def norm(
    kept: Any, a: Any, ord: Any = None, axis: Any = None, keepdims: bool = False, check_finite: bool = True
) -> Any:
    a = operand(a)
    return np.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims)


# -- triangular solves ----------------------------------------------------------------------------------------
def _triangle(m: Any, lower: bool, unit: bool) -> Any:
    """The part of m a triangular solve reads (without the diagonal where it is taken as ones)."""
    if lower:
        return np.tril(m, -1 if unit else 0)
    return np.triu(m, 1 if unit else 0)


def _times(m: Any, x: Any, vector: bool) -> Any:
    return np.matmul(m, x[..., None])[..., 0] if vector else np.matmul(m, x)


def _outer(u: Any, v: Any, vector: bool) -> Any:
    """u v^T (vectors) or u @ v^T (matrices)."""
    if vector:
        return np.multiply(u[..., :, None], v[..., None, :])
    return np.matmul(u, _t(v))


def triangular_solve(a: Any, rhs: Any, vector: bool, b: int, **params: Any) -> Any:
    """SOLVE_TRIANGULAR of a right-hand side with `b` leading tangent axes, `vector` where the primal's
    right-hand side is one vector: SciPy takes a 1-D b as a vector and anything else as matrices, so
    batch axes are moved into the columns, and vectors of a stack become columns."""
    if vector and (b or ndim_of(rhs) > 1):
        if not b:
            return SOLVE_TRIANGULAR(a, rhs[..., None], **params)[..., 0]
        return np.moveaxis(SOLVE_TRIANGULAR(a, np.moveaxis(rhs, 0, -1), **params), -1, 0)
    if not b:
        return SOLVE_TRIANGULAR(a, rhs, **params)
    moved = np.moveaxis(rhs, 0, -1)  # (..., n, k, B)
    s = shape_of(moved)
    x = SOLVE_TRIANGULAR(a, np.reshape(moved, (*s[:-2], s[-2] * s[-1])), **params)
    return np.moveaxis(np.reshape(x, s), -1, 0)


class _SolveTriangular(_Scipy):
    """`solve_triangular(a, b, trans, lower, unit_diagonal)`: x = T^-1 b (trans 0) or T^-T b (trans 1),
    T the triangle of a LAPACK reads (with ones on its diagonal if `unit`). With dT that triangle of da:
    dx = T^-1 (db - dT x); the cotangents g_b = T^-T g and g_a = -triangle(g_b x^T) (trans 1: T^-T
    everywhere, and g_a = -triangle(x g_b^T)). Real matrices (the tape refuses complex ones here)."""

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (0,), True

    def forward(  # type: ignore[override]
        self, a: Any, c: Any, out: Any = None, trans: int = 0, lower: bool = False, unit: bool = False
    ) -> Any:
        x = _scipy("solve_triangular")(a, c, trans=trans, lower=lower, unit_diagonal=unit, check_finite=False)
        return into(out, x)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **params: Any) -> Any:
        a, c = ins
        ta, tc = ts
        vector = ndim_of(c) == 1
        ny = ndim_of(y)
        rhs = None if tc is None else expand_to(tc, (0,) * ny, b)
        if ta is not None:
            dt = _triangle(expand_to(ta, (0,) * (ny + vector), b), params["lower"], params["unit"])
            prod = _times(_t(dt) if params["trans"] else dt, y, vector)
            rhs = np.negative(prod) if rhs is None else np.subtract(rhs, prod)
        return into(out, triangular_solve(a, rhs, vector, b, **params))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **params: Any) -> Any:
        a, c = ins
        vector = ndim_of(c) == 1
        gc = triangular_solve(a, g, vector, b, **{**params, "trans": 1 - params["trans"]})
        if i == 1:
            return reduce_to(gc, shape_of(c), b, out)
        ga = _outer(y, gc, vector) if params["trans"] else _outer(gc, y, vector)
        return reduce_to(np.negative(_triangle(ga, params["lower"], params["unit"])), shape_of(a), b, out)


SOLVE_TRIANGULAR = _SolveTriangular("solve_triangular")

_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def _trans(trans: Any, complex_: bool) -> int:
    t = _TRANS.get(trans) if isinstance(trans, (int, str)) else None
    if t is None:
        raise ValueError("Incorrect value for trans")
    return 1 if t == 2 and not complex_ else t


def solve_triangular(
    kept: Any,
    a: Any,
    b: Any,
    trans: Any = 0,
    lower: bool = False,
    unit_diagonal: bool = False,
    overwrite_b: bool = False,
    check_finite: bool = True,
) -> Any:
    a, c = _square(a, "solve_triangular"), _floating(b)
    t = _trans(trans, a.dtype.kind == "c" or c.dtype.kind == "c")
    rows = shape_of(c)[0] if ndim_of(c) == 1 else shape_of(c)[-2] if ndim_of(c) else -1
    if rows != shape_of(a)[-1]:
        raise ValueError(f"shapes of a {shape_of(a)} and b {shape_of(c)} are incompatible")
    return SOLVE_TRIANGULAR(a, c, trans=t, lower=bool(lower), unit=bool(unit_diagonal))


# -- LU ----------------------------------------------------------------------------------------------------
def _perm_t(piv: Any, dtype: str = "float64") -> np.ndarray:
    """P^T from LAPACK's row interchanges (0-based, as lu_factor returns them): A = P L U."""
    piv = np.asarray(piv).astype(np.intp)
    n = piv.shape[-1]
    out = np.empty((*piv.shape, n), dtype=dtype)
    for k in np.ndindex(*piv.shape[:-1]):
        perm = np.arange(n)
        for i, j in enumerate(piv[k]):
            perm[i], perm[j] = perm[j], perm[i]
        out[k] = np.eye(n, dtype=dtype)[perm]
    return out


PERM_T = NonDiff(_perm_t, "lu permutation")
PIVOTS = NonDiff(lambda row: np.asarray(row).astype(np.int32), "lu pivots")
P_INDICES = NonDiff(lambda pt: np.argmax(np.swapaxes(np.asarray(pt), -1, -2), axis=-1), "lu p_indices")


def _factors(packed: Any, n: int) -> tuple:
    """(lu, P^T, L, U) of lu_factor's packed output (the factors on top, the pivots in the last row)."""
    lu = packed[..., :n, :]
    pt = PERM_T(packed[..., n, :], dtype=lu.dtype.str)
    return lu, pt, np.add(np.tril(lu, -1), np.eye(n, dtype=lu.dtype)), np.triu(lu)


class _LuFactor(_Scipy):
    """lu_factor of a square matrix (stack): SciPy's (lu, piv) as one array (..., n + 1, n), the pivots
    in the last row, so that each replay computes both at once. With A = P L U and
    X = L^-1 P^T dA U^-1: d lu = L tril(X, -1) + triu(X) U (the pivots carry no derivative);
    its VJP g_A = P L^-T (tril(L^T tril(G, -1), -1) + triu(triu(G) U^T)) U^-T."""

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), True

    def forward(self, a: Any, out: Any = None) -> Any:  # type: ignore[override]
        lu, piv = _scipy("lu_factor")(a, check_finite=False)
        return into(out, np.concatenate([lu, np.expand_dims(piv, -2).astype(lu.dtype)], axis=-2))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        n = shape_of(ins[0])[-1]
        lu, pt, low, up = _factors(y, n)
        x = triangular_solve(lu, np.matmul(pt, ts[0]), False, b, trans=0, lower=True, unit=True)
        x = _t(triangular_solve(lu, _t(x), False, b, trans=1, lower=False, unit=False))  # x U^-1
        d = np.add(np.matmul(low, np.tril(x, -1)), np.matmul(np.triu(x), up))
        zero = np.zeros((*shape_of(d)[:-2], 1, n), dtype=d.dtype)
        return into(out, np.concatenate([d, zero], axis=-2))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        n = shape_of(ins[0])[-1]
        lu, pt, low, up = _factors(y, n)
        gf = g[..., :n, :]
        gx = np.add(np.tril(np.matmul(_t(low), np.tril(gf, -1)), -1), np.triu(np.matmul(np.triu(gf), _t(up))))
        z = triangular_solve(lu, gx, False, b, trans=1, lower=True, unit=True)  # L^-T gx
        z = _t(triangular_solve(lu, _t(z), False, b, trans=0, lower=False, unit=False))  # z U^-T
        return into(out, np.matmul(_t(pt), z))


LU_FACTOR = _LuFactor("lu_factor")


def _lu_packed(a: Any, name: str) -> tuple:
    a = operand(a)
    if ndim_of(a) >= 2 and shape_of(a)[-1] != shape_of(a)[-2]:
        raise unsupported(f"scipy.linalg.{name}", " of a non-square matrix (the tape factors square ones)")
    a = _square(a, name)
    if a.dtype.kind == "c":
        raise unsupported(f"scipy.linalg.{name}", " of a complex matrix")
    return a, LU_FACTOR(a)


def lu_factor(kept: Any, a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    a, packed = _lu_packed(a, "lu_factor")
    n = shape_of(a)[-1]
    return packed[..., :n, :], PIVOTS(packed[..., n, :])


def lu(
    kept: Any,
    a: Any,
    permute_l: bool = False,
    overwrite_a: bool = False,
    check_finite: bool = True,
    p_indices: bool = False,
) -> tuple:
    a, packed = _lu_packed(a, "lu")
    _, pt, low, up = _factors(packed, shape_of(a)[-1])
    if permute_l:
        return np.matmul(_t(pt), low), up
    if p_indices:
        return P_INDICES(pt), low, up
    return _t(pt), low, up


def lu_solve(
    kept: Any, lu_and_piv: Any, b: Any, trans: Any = 0, overwrite_b: bool = False, check_finite: bool = True
) -> Any:
    """x = U^-1 L^-1 P^T b (trans 1: P L^-T U^-T b), with triangular solves on lu's triangles (the factors
    differentiated there) and the permutation from piv (no derivative; recomputed where piv is)."""
    factors, piv = lu_and_piv
    factors, c = _square(factors, "lu_solve"), _floating(b)
    if shape_of(factors)[-1] != (shape_of(c)[0] if ndim_of(c) else -1):
        raise ValueError(f"Shapes of lu {shape_of(factors)} and b {shape_of(c)} are incompatible")
    t = _trans(trans, factors.dtype.kind == "c" or c.dtype.kind == "c")
    pt = PERM_T(operand(piv), dtype=np.result_type(factors.dtype, c.dtype).str)
    if t == 0:
        y = SOLVE_TRIANGULAR(factors, np.matmul(pt, c), trans=0, lower=True, unit=True)
        return SOLVE_TRIANGULAR(factors, y, trans=0, lower=False, unit=False)
    y = SOLVE_TRIANGULAR(factors, c, trans=t, lower=False, unit=False)
    return np.matmul(_t(pt), SOLVE_TRIANGULAR(factors, y, trans=t, lower=True, unit=True))


# -- Cholesky ------------------------------------------------------------------------------------------------
def _cholesky_factor(a: Any, lower: bool, name: str) -> Any:
    """The factor (lower, or upper: the transpose) of the matrix LAPACK reads, a's triangle mirrored."""
    a = _floating(a)
    if ndim_of(a) < 2:
        a = np.reshape(a, (1, 1))
    if shape_of(a)[-1] != shape_of(a)[-2]:
        raise ValueError(f"Input array is expected to be square but has the shape: {shape_of(a)}.")
    if a.dtype.kind == "c":
        raise unsupported(f"scipy.linalg.{name}", " of a complex matrix")
    factor = CHOLESKY(_symmetric_from(a, not lower))
    return a, (factor if lower else _t(factor))


def cholesky(kept: Any, a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    return _cholesky_factor(a, bool(lower), "cholesky")[1]


def cho_factor(kept: Any, a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """(c, lower): the factor in its triangle and, as SciPy leaves it, a's entries in the other one."""
    a, factor = _cholesky_factor(a, bool(lower), "cho_factor")
    rest = np.triu(a, 1) if lower else np.tril(a, -1)
    return np.add(factor, rest), lower


def cho_solve(kept: Any, c_and_lower: Any, b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """x = (L L^T)^-1 b (or (U^T U)^-1 b) with triangular solves on c's triangle."""
    factor, lower = c_and_lower
    factor, c = _floating(factor), _floating(b)
    if ndim_of(factor) != 2 or shape_of(factor)[0] != shape_of(factor)[1]:
        raise ValueError("The factored matrix c is not square.")
    if shape_of(factor)[1] != (shape_of(c)[0] if ndim_of(c) else -1):
        raise ValueError(f"incompatible dimensions ({shape_of(factor)} and {shape_of(c)})")
    lower = bool(lower)
    y = SOLVE_TRIANGULAR(factor, c, trans=0 if lower else 1, lower=lower, unit=False)
    return SOLVE_TRIANGULAR(factor, y, trans=1 if lower else 0, lower=lower, unit=False)


# -- eigh, svd ---------------------------------------------------------------------------------------------
class _ScipyEigh(_Eigh):
    """SciPy's eigh (its driver; `values_only`: eigvals_only, LAPACK's values without vectors); the rules
    are numpy.linalg.eigh's, computed with these parts, so the eigenvectors keep SciPy's signs."""

    what = "eigh"

    def label(self) -> str:
        return "scipy.linalg.eigh"

    def decompose(self, a: Any, lower: bool = True, driver: Any = None, values_only: bool = False) -> tuple:
        f = _scipy("eigh")
        if values_only and self.part == 0:
            return (f(a, lower=lower, driver=driver, eigvals_only=True, check_finite=False),)
        return tuple(f(a, lower=lower, driver=driver, check_finite=False))


SCIPY_EIGH = (_ScipyEigh(0, "scipy eigh values"), _ScipyEigh(1, "scipy eigh vectors"))
_ScipyEigh.family = SCIPY_EIGH


class _ScipySvd(_Svd):
    """SciPy's thin svd (its lapack_driver; `values_only`: compute_uv=False), with numpy.linalg.svd's rules."""

    def label(self) -> str:
        return "scipy.linalg.svd"

    def decompose(self, a: Any, driver: str = "gesdd", values_only: bool = False) -> tuple:
        f = _scipy("svd")
        if values_only and self.part == 1:
            return (None, f(a, compute_uv=False, lapack_driver=driver, check_finite=False), None)
        return tuple(f(a, full_matrices=False, lapack_driver=driver, check_finite=False))


SCIPY_SVD = (_ScipySvd(0, "scipy svd u"), _ScipySvd(1, "scipy svd s"), _ScipySvd(2, "scipy svd vh"))
_ScipySvd.family = SCIPY_SVD


def _subset(lo_hi: Any, n: int) -> slice:
    lo, hi = (operator.index(v) for v in lo_hi)
    if not 0 <= lo <= hi < n:
        raise ValueError(
            f"Requested eigenvalue indices are not valid. Valid range is [0, {n - 1}] and start <= end, but "
            f"start={lo}, end={hi} is given"
        )
    return slice(lo, hi + 1)


def eigh(
    kept: Any,
    a: Any,
    b: Any = None,
    *,
    lower: bool = True,
    eigvals_only: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    type: int = 1,
    check_finite: bool = True,
    subset_by_index: Any = None,
    subset_by_value: Any = None,
    driver: Any = None,
) -> Any:
    a = _square(a, "eigh")
    if b is not None:
        raise unsupported("scipy.linalg.eigh", " of a generalized problem (b given)")
    if subset_by_value is not None:
        raise unsupported(
            "scipy.linalg.eigh", " with subset_by_value (which eigenvalues it returns depends on their values)"
        )
    if subset_by_index is not None and not eigvals_only:
        raise unsupported(
            "scipy.linalg.eigh",
            " with subset_by_index and eigenvectors (LAPACK's partial eigenvectors may differ in sign from the "
            "full decomposition's the rules use): take the full decomposition and slice it",
        )
    s = _hermitian_from(a, not lower)
    params = {"lower": bool(lower), "driver": driver}
    if eigvals_only:
        w = SCIPY_EIGH[0](s, values_only=True, **params)
        return w if subset_by_index is None else w[..., _subset(subset_by_index, shape_of(a)[-1])]
    return SCIPY_EIGH[0](s, **params), SCIPY_EIGH[1](s, **params)


def eigvalsh(
    kept: Any,
    a: Any,
    b: Any = None,
    *,
    lower: bool = True,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    type: int = 1,
    check_finite: bool = True,
    subset_by_index: Any = None,
    subset_by_value: Any = None,
    driver: Any = None,
) -> Any:
    return eigh(
        kept,
        a,
        b,
        lower=lower,
        eigvals_only=True,
        subset_by_index=subset_by_index,
        subset_by_value=subset_by_value,
        driver=driver,
    )


def _matrix(a: Any, name: str) -> Any:
    a = _floating(a)
    if ndim_of(a) < 2:
        raise ValueError(f"scipy.linalg.{name}: expected a matrix (at least 2-D), got {ndim_of(a)}-D")
    return a


def svd(
    kept: Any,
    a: Any,
    full_matrices: bool = True,
    compute_uv: bool = True,
    overwrite_a: bool = False,
    check_finite: bool = True,
    lapack_driver: str = "gesdd",
) -> Any:
    a = _matrix(a, "svd")
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f'lapack_driver must be "gesdd" or "gesvd", not "{lapack_driver}"')
    if not compute_uv:
        return SCIPY_SVD[1](a, driver=lapack_driver, values_only=True)
    m, n = shape_of(a)[-2:]
    if full_matrices and m != n:
        raise unsupported(
            "scipy.linalg.svd",
            " with full_matrices=True (the default) of a non-square matrix: the extra singular vectors are not "
            "unique, so they have no derivative. Pass full_matrices=False, or compute_uv=False (or "
            "scipy.linalg.svdvals) for the singular values alone",
        )
    return tuple(part(a, driver=lapack_driver) for part in SCIPY_SVD)


def svdvals(kept: Any, a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    return SCIPY_SVD[1](_matrix(a, "svdvals"), values_only=True)


for _name, _rule in (
    ("expm", expm),
    ("expm_frechet", expm_frechet),
    ("logm", logm),
    ("sqrtm", sqrtm),
    ("cosm", cosm),
    ("sinm", sinm),
    ("tanm", tanm),
    ("coshm", coshm),
    ("sinhm", sinhm),
    ("tanhm", tanhm),
    ("solve", solve),
    ("inv", inv),
    ("det", det),
    ("lstsq", lstsq),
    ("pinv", pinv),
    ("norm", norm),
    ("solve_triangular", solve_triangular),
    ("lu_factor", lu_factor),
    ("lu_solve", lu_solve),
    ("lu", lu),
    ("cholesky", cholesky),
    ("cho_factor", cho_factor),
    ("cho_solve", cho_solve),
    ("eigh", eigh),
    ("eigvalsh", eigvalsh),
    ("svd", svd),
    ("svdvals", svdvals),
):
    hook("scipy.linalg", _name)(lambda rule=_rule: rule)
