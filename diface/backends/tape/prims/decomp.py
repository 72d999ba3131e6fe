"""Matrix decompositions as primitives, one per output (each computes the decomposition; a replay that
uses several outputs runs it several times): eigh, eig (real eigenvalues), svd, qr, cholesky, and pinv.

Rules (stacks of matrices broadcast; a batch of tangents is a leading axis), with T the transpose:

- eigh of a symmetric A = V diag(w) V^T: dw = diag(V^T dA V), dV = V (F o V^T dA V), F_ij = 1/(w_j - w_i)
  off the diagonal (0 for equal eigenvalues, whose eigenvectors are not unique); the cotangent is
  symmetrized. The handlers pass A built from the triangle LAPACK reads, so tangents are symmetric.
  A complex Hermitian A = V diag(w) V^H takes the same rules with H for T: dw = Re diag(V^H dA V),
  dV = V (F o V^H dA V) (JAX's gauge: v_k^H dv_k = 0, so the phase of each eigenvector is held; only
  gauge-invariant functions of V have a meaning), and the VJPs are their adjoints under Re <u, v>:
  V diag(g) V^H and (V (F o V^H G) V^H + its conjugate transpose) / 2.
- eig with real eigenvalues, A V = V diag(w), unit columns: M = V^-1 dA V, dw = diag(M),
  dV = P(V (F o M)) with P(D) = D - V diag(V^T D) (the columns stay unit vectors).
- svd (thin) A = U diag(s) V^T with J = U^T dA V, F_ij = 1/(s_j^2 - s_i^2): ds = diag(J),
  dU = U (F o (J S + S J^T)) + (I - U U^T) dA V S^-1, dV = V (F o (S J + J^T S)) + (I - V V^T) dA^T U S^-1.
- qr (reduced, m >= n) A = Q R: M = Q^T dA R^-1, X = tril(M, -1) - tril(M, -1)^T, dQ = Q X + dA R^-1 - Q M,
  dR = (M - X) R.
- cholesky A = L L^T: dL = L Phi(L^-1 dA L^-T), Phi = lower triangle with the diagonal halved.
- pinv P (constant rank): dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P.

Each VJP is the transpose of its JVP. The rules are written with NumPy calls (these primitives, solve,
matmul, ...), so they are recorded and differentiated again for second order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.sites import user_location
from . import patterns
from .prim import OWN, Prim, conjugated, dtype_of, into, shape_of

__all__ = ["CHOLESKY", "EIG", "EIGH", "PINV", "QR", "SVD"]


def _t(a: Any) -> Any:
    return np.swapaxes(a, -1, -2)


def _sym(a: Any) -> Any:
    return np.multiply(np.add(a, _t(a)), 0.5)


def _h(a: Any) -> Any:
    """The conjugate transpose (the transpose of a real array, recording nothing more)."""
    return conjugated(_t(a))


def _herm(a: Any) -> Any:
    """The Hermitian part (the symmetric part of a real array)."""
    return np.multiply(np.add(a, _h(a)), 0.5)


def _diag(a: Any) -> Any:
    return np.diagonal(a, axis1=-2, axis2=-1)


def _as_diag(v: Any, n: int) -> Any:
    """A stack of diagonal matrices from a stack of vectors."""
    return np.multiply(np.expand_dims(v, -1), np.eye(n))


def _gaps(w: Any, square: bool) -> Any:
    """F_ij = 1 / (w_j - w_i) (or 1 / (w_j^2 - w_i^2)) off the diagonal; 0 on it and for values equal up
    to rounding (64 ulps of the largest), whose vectors are not unique."""
    if square:
        w = np.multiply(w, w)
    d = np.subtract(np.expand_dims(w, -2), np.expand_dims(w, -1))
    scale = np.max(np.abs(w), axis=-1, keepdims=True, initial=0.0)
    tolerance = np.multiply(np.expand_dims(scale, -1), 64.0 * np.finfo(dtype_of(w)).eps)
    distinct = np.greater(np.abs(d), tolerance)
    return np.where(distinct, np.divide(1.0, np.where(distinct, d, 1.0)), 0.0)


def _solve(a: Any, b: Any) -> Any:
    return np.linalg.solve(a, b)


def _right_solve(x: Any, r: Any) -> Any:
    """x r^-1."""
    return _t(np.linalg.solve(_t(r), _t(x)))


def _right_solve_t(x: Any, r: Any) -> Any:
    """x r^-T."""
    return _t(np.linalg.solve(r, _t(x)))


class _Part(Prim):
    """One output of a decomposition of input 0 (`part`: its index in NumPy's result)."""

    what = "?"
    sparsity = staticmethod(patterns.per_matrix)

    def __init__(self, part: int, name: str) -> None:
        self.part = part
        self.name = name

    def label(self) -> str:
        return f"numpy.linalg.{self.what}"

    def decompose(self, a: Any, *_: Any, **params: Any) -> tuple:
        raise NotImplementedError

    def forward(self, a: Any, out: Any = None, **params: Any) -> Any:
        return into(out, self.decompose(a, **params)[self.part])


# -- eigh ----------------------------------------------------------------------------------------------------
class _Eigh(_Part):
    """`upper`: LAPACK reads the upper triangle (UPLO="U"), so the values are NumPy's to the last bit.
    Real symmetric or complex Hermitian input (the rules conjugate where the values are complex).
    `family`: the two parts (values, vectors) the rules compute with: the same decomposition, so a
    subclass computing it another way (SciPy's eigh) keeps its own eigenvectors' signs."""

    what = "eigh"
    complex = OWN
    family: tuple = ()

    def decompose(self, a: Any, upper: bool = False) -> tuple:
        return tuple(np.linalg.eigh(a, UPLO="U" if upper else "L"))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **params: Any) -> Any:
        a = ins[0]
        w, v = self.family[0](a, **params), self.family[1](a, **params)
        m = np.matmul(np.matmul(_h(v), _herm(ts[0])), v)
        if self.part == 0:
            d = _diag(m)
            return into(out, np.real(d) if dtype_of(d).kind == "c" else d)
        return into(out, np.matmul(v, np.multiply(_gaps(w, False), m)))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **params: Any) -> Any:
        a = ins[0]
        v = self.family[1](a, **params)
        if self.part == 0:
            inner = _as_diag(g, shape_of(a)[-1])
        else:
            inner = np.multiply(_gaps(self.family[0](a, **params), False), np.matmul(_h(v), g))
        return into(out, _herm(np.matmul(np.matmul(v, inner), _h(v))))


EIGH = (_Eigh(0, "eigh values"), _Eigh(1, "eigh vectors"))
_Eigh.family = EIGH


# -- eig (real eigenvalues) ----------------------------------------------------------------------------------
class _Eig(_Part):
    what = "eig"

    def decompose(self, a: Any) -> tuple:
        w, v = np.linalg.eig(a)
        if np.iscomplexobj(w) or np.iscomplexobj(v):
            raise NotSupportedError(
                f"AutoTape differentiates numpy.linalg.eig (called at {user_location()}) only where the "
                "eigenvalues and eigenvectors are real (here they are complex: AutoTape has no rule for "
                "complex eigendecompositions); for a symmetric matrix use "
                "numpy.linalg.eigh, or differentiate f with di.AutoJAX() or di.AutoTorch()"
            )
        return w, v

    @staticmethod
    def _unit(v: Any, d: Any) -> Any:
        """D - V diag(V^T D): the part of D that keeps the columns of V unit vectors."""
        return np.subtract(d, np.multiply(v, np.sum(np.multiply(v, d), axis=-2, keepdims=True)))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        a = ins[0]
        w, v = EIG[0](a), EIG[1](a)
        m = _solve(v, np.matmul(ts[0], v))
        if self.part == 0:
            return into(out, _diag(m))
        return into(out, self._unit(v, np.matmul(v, np.multiply(_gaps(w, False), m))))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        a = ins[0]
        v = EIG[1](a)
        if self.part == 0:
            inner = _as_diag(g, shape_of(a)[-1])
        else:
            inner = np.multiply(_gaps(EIG[0](a), False), np.matmul(_t(v), self._unit(v, g)))
        return into(out, _solve(_t(v), np.matmul(inner, _t(v))))


EIG = (_Eig(0, "eig values"), _Eig(1, "eig vectors"))


# -- svd -----------------------------------------------------------------------------------------------------
class _Svd(_Part):
    """Thin SVD parts (u, s, vh); `family`: the three parts the rules compute with (see `_Eigh`)."""

    what = "svd"
    family: tuple = ()

    def decompose(self, a: Any) -> tuple:
        return tuple(np.linalg.svd(a, full_matrices=False))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **params: Any) -> Any:
        a = ins[0]
        da = ts[0]
        u, s, vh = (part(a, **params) for part in self.family)
        v = _t(vh)
        j = np.matmul(np.matmul(_t(u), da), v)
        if self.part == 1:
            return into(out, _diag(j))
        f = _gaps(s, True)
        row, col = np.expand_dims(s, -1), np.expand_dims(s, -2)  # s_i, s_j
        m, n = shape_of(a)[-2:]
        if self.part == 0:
            du = np.matmul(u, np.multiply(f, np.add(np.multiply(j, col), np.multiply(row, _t(j)))))
            if m > n:
                rest = np.matmul(da, v)
                rest = np.subtract(rest, np.matmul(u, np.matmul(_t(u), rest)))
                du = np.add(du, np.divide(rest, col))
            return into(out, du)
        dv = np.matmul(v, np.multiply(f, np.add(np.multiply(row, j), np.multiply(_t(j), col))))
        if n > m:
            rest = np.matmul(_t(da), u)
            rest = np.subtract(rest, np.matmul(v, np.matmul(vh, rest)))
            dv = np.add(dv, np.divide(rest, col))
        return into(out, _t(dv))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **params: Any) -> Any:
        a = ins[0]
        u, s, vh = (part(a, **params) for part in self.family)
        m, n = shape_of(a)[-2:]
        k = min(m, n)
        if self.part == 1:
            return into(out, np.matmul(np.matmul(u, _as_diag(g, k)), vh))
        f = _gaps(s, True)
        row, col = np.expand_dims(s, -1), np.expand_dims(s, -2)
        if self.part == 0:
            a1 = np.multiply(f, np.matmul(_t(u), g))
            inner = np.multiply(np.add(a1, _t(a1)), col)
            r = np.matmul(np.matmul(u, inner), vh)
            if m > n:
                rest = np.subtract(g, np.matmul(u, np.matmul(_t(u), g)))
                r = np.add(r, np.matmul(np.divide(rest, col), vh))
            return into(out, r)
        gv = _t(g)
        v = _t(vh)
        b1 = np.multiply(f, np.matmul(vh, gv))
        inner = np.multiply(row, np.add(b1, _t(b1)))
        r = np.matmul(np.matmul(u, inner), vh)
        if n > m:
            rest = np.subtract(gv, np.matmul(v, np.matmul(vh, gv)))
            r = np.add(r, np.matmul(u, np.divide(_t(rest), row)))
        return into(out, r)


SVD = (_Svd(0, "svd u"), _Svd(1, "svd s"), _Svd(2, "svd vh"))
_Svd.family = SVD


# -- qr ------------------------------------------------------------------------------------------------------
class _Qr(_Part):
    """Reduced QR of a matrix with at least as many rows as columns."""

    what = "qr"

    def decompose(self, a: Any) -> tuple:
        return tuple(np.linalg.qr(a, mode="reduced"))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        a = ins[0]
        q, r = QR[0](a), QR[1](a)
        dar = _right_solve(ts[0], r)
        m = np.matmul(_t(q), dar)
        low = np.tril(m, -1)
        x = np.subtract(low, _t(low))
        if self.part == 1:
            return into(out, np.matmul(np.subtract(m, x), r))
        return into(out, np.add(np.matmul(q, np.subtract(x, m)), dar))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        a = ins[0]
        q, r = QR[0](a), QR[1](a)
        if self.part == 0:
            nmat = np.matmul(_t(q), g)
            k = np.tril(np.subtract(nmat, _t(nmat)), -1)
            y_ = np.add(np.matmul(q, np.subtract(k, nmat)), g)
        else:
            grt = np.matmul(g, _t(r))
            k = np.add(grt, np.tril(np.subtract(_t(grt), grt), -1))
            y_ = np.matmul(q, k)
        return into(out, _right_solve_t(y_, r))


QR = (_Qr(0, "qr q"), _Qr(1, "qr r"))


# -- cholesky ------------------------------------------------------------------------------------------------
def _phi(x: Any) -> Any:
    """The lower triangle of x with its diagonal halved."""
    n = shape_of(x)[-1]
    return np.multiply(x, np.subtract(np.tri(n), np.multiply(np.eye(n), 0.5)))


class _Cholesky(_Part):
    what = "cholesky"

    def decompose(self, a: Any) -> tuple:
        return (np.linalg.cholesky(a),)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        low = CHOLESKY(ins[0])
        inner = _right_solve_t(_solve(low, _sym(ts[0])), low)
        return into(out, np.matmul(low, _phi(inner)))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        low = CHOLESKY(ins[0])
        z = _phi(np.matmul(_t(low), g))
        r = _right_solve(_solve(_t(low), z), low)
        return into(out, _sym(r))


CHOLESKY = _Cholesky(0, "cholesky")


# -- pinv ----------------------------------------------------------------------------------------------------
class _Pinv(Prim):
    name = "pinv"
    sparsity = staticmethod(patterns.per_matrix)

    def label(self) -> str:
        return "numpy.linalg.pinv"

    def forward(self, a: Any, out: Any = None, rcond: Any = None, hermitian: bool = False) -> Any:
        kw = {} if rcond is None else {"rcond": rcond}
        return into(out, np.linalg.pinv(a, hermitian=hermitian, **kw))

    @staticmethod
    def _complements(a: Any, p: Any) -> tuple:
        m, n = shape_of(a)[-2:]
        return np.subtract(np.eye(m), np.matmul(a, p)), np.subtract(np.eye(n), np.matmul(p, a))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **params: Any) -> Any:
        a, da = ins[0], ts[0]
        p = PINV(a, **params)
        q, r = self._complements(a, p)
        pt, dat = _t(p), _t(da)
        t1 = np.negative(np.matmul(np.matmul(p, da), p))
        t2 = np.matmul(np.matmul(np.matmul(p, pt), dat), q)
        t3 = np.matmul(np.matmul(np.matmul(r, dat), pt), p)
        return into(out, np.add(np.add(t1, t2), t3))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **params: Any) -> Any:
        a = ins[0]
        p = PINV(a, **params)
        q, r = self._complements(a, p)
        pt, gt = _t(p), _t(g)
        t1 = np.negative(np.matmul(np.matmul(pt, g), pt))
        t2 = np.matmul(np.matmul(np.matmul(q, gt), p), pt)
        t3 = np.matmul(np.matmul(np.matmul(pt, p), gt), r)
        return into(out, np.add(np.add(t1, t2), t3))


PINV = _Pinv()
