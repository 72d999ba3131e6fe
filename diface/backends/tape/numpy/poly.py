"""What the tape records for polynomials: NumPy's polyval, poly1d evaluation, vander, polyfit, roots,
trim_zeros, and the evaluation functions of numpy.polynomial (polyval, chebval, legval, hermval,
hermeval, lagval, their 2-d and 3-d forms and the classes' `__call__`: Polynomial(c)(x),
Chebyshev(c)(x), ...), with traced coefficients, points, or both.

Each is NumPy's own algorithm with recorded operations: Horner's scheme or the Clenshaw recurrences,
the same arithmetic in the same order (the same values to the bit). numpy.polynomial's functions are
Python code that converts its inputs first (`np.array(c, ndmin=1)`, `np.asanyarray(x)`), so `numpy.hooks`
makes `polyutils.as_series` (the classes' constructors), `polyutils.mapdomain` (their `__call__`),
`polyutils._valnd` (the n-d forms) and the six evaluation functions dispatch here on traced arguments.

- polyfit is NumPy's scaled Vandermonde least-squares problem solved by `lstsq` (differentiable in y,
  in x and in the weights; the rank is a guard), cov= and full= included;
- roots are the eigenvalues of the companion matrix (`np.linalg.eigvals`, real eigenvalues only: a
  polynomial with complex roots raises), differentiable where the roots are simple;
- trim_zeros, poly1d's constructor (which trims leading zeros) and roots (which strip leading and
  trailing zeros) guard where the zeros end: the shape of the result depends on it.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.graph import Traced
from ..data.sites import user_location
from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..prims.scan import CUMPROD
from ..tracing.tracer import operand
from .common import axes_of, implements, literal_like, ndim_of, reshape_of, unsupported
from .hooks import hook
from .linalg import _eigvals, _inv
from .linalg_extra import lstsq
from .shapes import _concatenate, _flip

__all__: list[str] = []


# -- numpy's polyval, poly1d, vander ------------------------------------------------------------------------
@implements(np.polyval)
def _polyval(p: Any, x: Any) -> Any:
    if isinstance(x, np.poly1d):
        raise unsupported("numpy.polyval", " of a poly1d (composing polynomials)")
    p, x = operand(p), operand(x)
    if not isinstance(x, Traced):
        x = np.asanyarray(x)
    if ndim_of(p) == 0:
        raise TypeError("iteration over a 0-d array")
    y: Any = np.zeros_like(x)
    for i in range(shape_of(p)[0]):
        y = np.add(np.multiply(y, x), p[i])
    return y


def _bounds(a: np.ndarray) -> np.ndarray:
    """[first nonzero index, last nonzero index] along each axis (-1 where a is all zero)."""
    nonzero = np.argwhere(a)
    if nonzero.size == 0:
        return np.full((2, a.ndim), -1, dtype=np.intp)
    return np.stack([nonzero.min(axis=0), nonzero.max(axis=0)]).astype(np.intp)


def _guarded_bounds(a: Any, what: str) -> np.ndarray:
    """`_bounds` of a traced array's values, each a guard (a replay must find the zeros where they were)."""
    b = NonDiff(_bounds, "nonzero_bounds")(a)
    if not isinstance(b, Traced):
        return np.asarray(b)
    where = user_location()
    flat = reshape_of(b, (-1,))
    values = [flat[k].observe("int", what, where) for k in range(shape_of(flat)[0])]
    return np.asarray(values, dtype=np.intp).reshape(shape_of(b))


@implements(np.trim_zeros)
def _trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    a = operand(filt)
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    nd = ndim_of(a)
    axes = axes_of(axis, nd)
    if not axes:
        return filt
    bounds = _guarded_bounds(a, "where the zeros numpy.trim_zeros trims end")
    if bounds[0, 0] < 0:
        return a[tuple(slice(0, 0) if k in axes else slice(None) for k in range(nd))]
    start = bounds[0] if "f" in trim else [None] * nd
    stop = bounds[1] + 1 if "b" in trim else [None] * nd
    return a[tuple(slice(start[k], stop[k]) if k in axes else slice(None) for k in range(nd))]


@implements(np.vander)
def _vander(x: Any, N: Any = None, increasing: bool = False) -> Any:
    x = operand(x)
    if ndim_of(x) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = shape_of(x)[0]
    N = n if N is None else operator.index(N)
    dtype = np.promote_types(x.dtype, int)
    x = x.astype(dtype) if x.dtype != dtype else x
    ones = np.ones((n, min(N, 1)), dtype=dtype)
    if N > 1:  # NumPy's multiply.accumulate of x repeated: x, x*x, (x*x)*x, ...
        powers = CUMPROD(np.broadcast_to(np.reshape(x, (n, 1)), (n, N - 1)), axis=1)
        v = _concatenate([ones, powers], 1)
    else:
        v = literal_like(x, ones) if isinstance(x, Traced) else ones
    return v if increasing else _flip(v, 1)


# -- polyfit --------------------------------------------------------------------------------------------
@implements(np.polyfit)
def _polyfit(x: Any, y: Any, deg: Any, rcond: Any = None, full: bool = False, w: Any = None, cov: Any = False) -> Any:
    """NumPy's polyfit, step by step: the scaled Vandermonde least-squares problem, solved by lstsq."""
    order = int(deg) + 1
    x = np.add(operand(x), 0.0)
    y = np.add(operand(y), 0.0)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if ndim_of(x) != 1:
        raise TypeError("expected 1D vector for x")
    if shape_of(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if ndim_of(y) < 1 or ndim_of(y) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if shape_of(x)[0] != shape_of(y)[0]:
        raise TypeError("expected x and y to have same length")
    n = shape_of(x)[0]
    if rcond is None:
        rcond = n * np.finfo(x.dtype).eps
    lhs = _vander(x, order)
    rhs = y
    if w is not None:
        w = np.add(operand(w), 0.0)
        if ndim_of(w) != 1:
            raise TypeError("expected a 1-d array for weights")
        if shape_of(w)[0] != shape_of(y)[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = np.multiply(lhs, w[:, None])
        rhs = np.multiply(rhs, w[:, None] if ndim_of(rhs) == 2 else w)
    scale = np.sqrt(np.sum(np.multiply(lhs, lhs), axis=0))
    lhs = np.divide(lhs, scale)
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = np.transpose(np.divide(np.transpose(c), scale))
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=3)
    if full:
        return c, resids, rank, s, rcond
    if cov:
        base = _inv(np.dot(np.transpose(lhs), lhs))
        base = np.divide(base, np.outer(scale, scale))
        if cov == "unscaled":
            fac: Any = 1
        else:
            if n <= order:
                raise ValueError("the number of data points must exceed order to scale the covariance matrix")
            fac = np.divide(resids, n - order)
        if ndim_of(y) == 1:
            return c, np.multiply(base, fac)
        return c, np.multiply(base[:, :, None], fac)
    return c


# -- roots ---------------------------------------------------------------------------------------------
@implements(np.roots)
def _roots(p: Any) -> Any:
    p = np.atleast_1d(operand(p))
    if ndim_of(p) != 1:
        raise ValueError("Input must be a rank-1 array.")
    bounds = _guarded_bounds(p, "where the zero coefficients numpy.roots strips end")
    if bounds[0, 0] < 0:
        return np.array([])
    first, last = int(bounds[0, 0]), int(bounds[1, 0])
    trailing = shape_of(p)[0] - last - 1
    p = p[first : last + 1]
    if not np.issubdtype(p.dtype, np.inexact):
        p = p.astype(float)
    n = shape_of(p)[0]
    if n <= 1:
        found: Any = np.array([], dtype=p.dtype)
    else:
        top = np.reshape(np.divide(np.negative(p[1:]), p[0]), (1, n - 1))
        below = np.diag(np.ones((n - 2,), p.dtype), -1)[1:]
        companion = _concatenate([top, below], 0)
        try:
            found = _eigvals(companion)
        except NotSupportedError:
            raise unsupported(
                "numpy.roots",
                " of a polynomial with complex roots (the tape differentiates real eigenvalues only)",
            ) from None
    if trailing:
        found = _concatenate([found, np.zeros(trailing, found.dtype)], 0)
    return found


# -- numpy.polynomial -----------------------------------------------------------------------------------------
def _series(c: Any) -> Any:
    """A coefficient array as numpy.polynomial reads it (`np.array(c, ndmin=1)`, integers as floats)."""
    c = operand(c)
    if not isinstance(c, Traced):
        c = np.array(c, ndmin=1, copy=None)
    elif ndim_of(c) == 0:
        c = reshape_of(c, (1,))
    if c.dtype.char in "?bBhHiIlLqQpP":
        c = c.astype(np.double)
    return c


def _prepared(x: Any, c: Any, tensor: bool) -> tuple[Any, Any]:
    """(x, c) as the evaluation functions read them: c with an axis per axis of an array x (tensor)."""
    c = _series(c)
    if isinstance(x, (tuple, list)):
        x = operand(x)
        if not isinstance(x, Traced):
            x = np.asarray(x)
    if isinstance(x, (np.ndarray, Traced)) and tensor:
        c = reshape_of(c, shape_of(c) + (1,) * ndim_of(x))
    return x, c


def _polyval_series(kept: Any, x: Any, c: Any, tensor: bool = True) -> Any:
    x, c = _prepared(x, c, tensor)
    c0 = np.add(c[-1], np.multiply(x, 0))
    for i in range(2, shape_of(c)[0] + 1):
        c0 = np.add(c[-i], np.multiply(c0, x))
    return c0


def _clenshaw(step: Any, finish: Any) -> Any:
    """An evaluation function of numpy.polynomial: the recurrence `step(c, x, i, nd, c0, c1)` run from
    the end of c, then `finish(x, c0, c1)` (NumPy's code for the 1- and 2-term cases included)."""

    def rule(kept: Any, x: Any, c: Any, tensor: bool = True) -> Any:
        x, c = _prepared(x, c, tensor)
        n = shape_of(c)[0]
        if n == 1:
            c0, c1 = c[0], 0
        elif n == 2:
            c0, c1 = c[0], c[1]
        else:
            nd = n
            c0, c1 = c[-2], c[-1]
            for i in range(3, n + 1):
                nd = nd - 1
                c0, c1 = step(c, x, i, nd, c0, c1)
        return finish(x, c0, c1)

    return rule


def _cheb_step(c: Any, x: Any, i: int, nd: int, c0: Any, c1: Any) -> tuple[Any, Any]:
    return np.subtract(c[-i], c1), np.add(c0, np.multiply(c1, np.multiply(2, x)))


def _leg_step(c: Any, x: Any, i: int, nd: int, c0: Any, c1: Any) -> tuple[Any, Any]:
    return (
        np.subtract(c[-i], np.multiply(c1, (nd - 1) / nd)),
        np.add(c0, np.multiply(np.multiply(c1, x), (2 * nd - 1) / nd)),
    )


def _herm_step(c: Any, x: Any, i: int, nd: int, c0: Any, c1: Any) -> tuple[Any, Any]:
    return np.subtract(c[-i], np.multiply(c1, 2 * (nd - 1))), np.add(c0, np.multiply(c1, np.multiply(x, 2)))


def _herme_step(c: Any, x: Any, i: int, nd: int, c0: Any, c1: Any) -> tuple[Any, Any]:
    return np.subtract(c[-i], np.multiply(c1, nd - 1)), np.add(c0, np.multiply(c1, x))


def _lag_step(c: Any, x: Any, i: int, nd: int, c0: Any, c1: Any) -> tuple[Any, Any]:
    return (
        np.subtract(c[-i], np.divide(np.multiply(c1, nd - 1), nd)),
        np.add(c0, np.divide(np.multiply(c1, np.subtract(2 * nd - 1, x)), nd)),
    )


_EVALUATIONS = {
    ("numpy.polynomial.polynomial", "polyval"): lambda: _polyval_series,
    ("numpy.polynomial.chebyshev", "chebval"): lambda: _clenshaw(
        _cheb_step, lambda x, c0, c1: np.add(c0, np.multiply(c1, x))
    ),
    ("numpy.polynomial.legendre", "legval"): lambda: _clenshaw(
        _leg_step, lambda x, c0, c1: np.add(c0, np.multiply(c1, x))
    ),
    ("numpy.polynomial.hermite", "hermval"): lambda: _clenshaw(
        _herm_step, lambda x, c0, c1: np.add(c0, np.multiply(c1, np.multiply(x, 2)))
    ),
    ("numpy.polynomial.hermite_e", "hermeval"): lambda: _clenshaw(
        _herme_step, lambda x, c0, c1: np.add(c0, np.multiply(c1, x))
    ),
    ("numpy.polynomial.laguerre", "lagval"): lambda: _clenshaw(
        _lag_step, lambda x, c0, c1: np.add(c0, np.multiply(c1, np.subtract(1, x)))
    ),
}
for (_module, _name), _factory in _EVALUATIONS.items():
    hook(_module, _name)(_factory)


def _as_series(kept: Any, alist: Any, trim: bool = True) -> list:
    """polyutils.as_series with traced coefficient arrays: 1-d arrays of a common floating type (trailing
    zeros trimmed by NumPy's own trimseq, which guards where they end)."""
    arrays = [_series_array(a) for a in alist]
    for a in arrays:
        if int(np.prod(shape_of(a), dtype=np.int64)) == 0:
            raise ValueError("Coefficient array is empty")
        if ndim_of(a) != 1:
            raise ValueError("Coefficient array is not 1-d")
    if trim:
        trimseq = np.polynomial.polyutils.trimseq
        arrays = [trimseq(a) for a in arrays]
    kinds = [np.zeros((), a.dtype) for a in arrays]
    try:
        dtype = np.common_type(*kinds)
    except TypeError as e:
        raise unsupported("numpy.polynomial", " with coefficients that are not numbers") from e
    return [a.astype(dtype) if isinstance(a, Traced) else np.array(a, copy=True, dtype=dtype) for a in arrays]


def _series_array(a: Any) -> Any:
    a = operand(a)
    if not isinstance(a, Traced):
        return np.array(a, ndmin=1, copy=None)
    return reshape_of(a, (1,)) if ndim_of(a) == 0 else a


def _mapdomain(kept: Any, x: Any, old: Any, new: Any) -> Any:
    x = operand(x)
    off, scl = np.polynomial.polyutils.mapparms(old, new)
    return np.add(off, np.multiply(scl, x))


def _point(a: Any) -> Any:
    a = operand(a)
    return a if isinstance(a, Traced) else np.asanyarray(a)


def _valnd(kept: Any, val_f: Any, c: Any, *args: Any) -> Any:
    args = tuple(_point(a) for a in args)
    shape0 = shape_of(args[0])
    if not all(shape_of(a) == shape0 for a in args[1:]):
        if len(args) == 3:
            raise ValueError("x, y, z are incompatible")
        if len(args) == 2:
            raise ValueError("x, y are incompatible")
        raise ValueError("ordinates are incompatible")
    c = val_f(args[0], c)
    for xi in args[1:]:
        c = val_f(xi, c, tensor=False)
    return c


def _implementation(kept: Any, *args: Any, **kwargs: Any) -> Any:
    """NumPy's own code (what it calls is made to dispatch here)."""
    return kept(*args, **kwargs)


# NumPy dispatches these two through __array_function__: the tape's handler runs NumPy's code
hook("numpy.polynomial.polynomial", "polyval2d")(lambda: _implementation)
hook("numpy.polynomial.polynomial", "polygrid2d")(lambda: _implementation)
hook("numpy.polynomial.polyutils", "as_series")(lambda: _as_series)
hook("numpy.polynomial.polyutils", "mapdomain")(lambda: _mapdomain)
hook("numpy.polynomial.polyutils", "_valnd")(lambda: _valnd)
