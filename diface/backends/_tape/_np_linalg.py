"""What the tape records for NumPy's contractions (einsum, tensordot, dot, vdot, inner, outer), linear
algebra (inv, solve, det, slogdet), and the functions whose results carry no derivative (argmax,
argsort, count_nonzero, isclose, ...; sort is a gather through argsort; nonzero is in `_np_shapes`)."""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ._contract import EINSUM, MATMUL, explicit_subscripts
from ._linalg import DET, INV, LOGABSDET, SOLVE
from ._np_common import FUNCTIONS, axis_of, implements, ndim_of, reshape_of, unsupported, write_out
from ._np_shapes import take_along_axis
from ._prim import shape_of
from ._reduce import NonDiff
from ._tracer import operand

__all__: list[str] = []


def _letters(n: int, skip: str = "") -> str:
    return "".join(ch for ch in string.ascii_letters if ch not in skip)[:n]


@implements(np.einsum)
def _einsum(
    *operands: Any, out: Any = None, optimize: Any = False, dtype: Any = None, order: str = "K", casting: str = "safe"
) -> Any:
    if not operands or not isinstance(operands[0], str):
        raise unsupported("numpy.einsum", " in the sublist form (pass a subscripts string)")
    subscripts, ops = operands[0], [operand(a) for a in operands[1:]]
    if dtype is not None:
        ops = [a.astype(dtype) for a in ops]
    subs = explicit_subscripts(subscripts, [shape_of(a) for a in ops])
    return write_out(EINSUM(*ops, subscripts=subs, optimize=optimize), out)


@implements(np.tensordot)
def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    a, b = operand(a), operand(b)
    na, nb = ndim_of(a), ndim_of(b)
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(na - int(axes), na)), list(range(int(axes)))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    ax_a = [axis_of(k, na) for k in ax_a]
    ax_b = [axis_of(k, nb) for k in ax_b]
    la = list(_letters(na))
    lb = list(_letters(nb, "".join(la)))
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    out = [la[i] for i in range(na) if i not in ax_a] + [lb[j] for j in range(nb) if j not in ax_b]
    return EINSUM(a, b, subscripts="".join(la) + "," + "".join(lb) + "->" + "".join(out), optimize=False)


@implements(np.dot)
def _dot(a: Any, b: Any, out: Any = None) -> Any:
    a, b = operand(a), operand(b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        r = np.multiply(a, b)
    elif na <= 2 and nb <= 2:
        r = MATMUL(a, b)
    else:
        r = _tensordot(a, b, ([-1], [-2 if nb >= 2 else -1]))
    return write_out(r, out)


@implements(np.vdot)
def _vdot(a: Any, b: Any) -> Any:
    return MATMUL(reshape_of(a, (-1,)), reshape_of(b, (-1,)))


@implements(np.inner)
def _inner(a: Any, b: Any) -> Any:
    a, b = operand(a), operand(b)
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        return np.multiply(a, b)
    if ndim_of(a) == 1 and ndim_of(b) == 1:
        return MATMUL(a, b)
    return _tensordot(a, b, ([-1], [-1]))


@implements(np.outer)
def _outer(a: Any, b: Any, out: Any = None) -> Any:
    a, b = reshape_of(a, (-1, 1)), reshape_of(b, (1, -1))
    return write_out(np.multiply(a, b), out)


@implements(np.linalg.matmul)
def _linalg_matmul(x1: Any, x2: Any) -> Any:
    return MATMUL(operand(x1), operand(x2))


# -- values without derivatives ------------------------------------------------------------------------------------
def _nondiff(func: Any, name: str | None = None, **fixed: Any) -> Callable:
    prim = NonDiff(func, name)

    def handler(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        return write_out(prim(*(operand(a) for a in args), **kwargs, **fixed), out)

    return handler


for _f in (
    np.argmax,
    np.argmin,
    np.argsort,
    np.count_nonzero,
    np.any,
    np.all,
    np.isclose,
    np.round,
    np.around,
    np.searchsorted,
    np.isin,
):
    FUNCTIONS[_f] = _nondiff(_f)


@implements(np.allclose)
def _allclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    return bool(np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@implements(np.array_equal)
def _array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    a1, a2 = operand(a1), operand(a2)
    if shape_of(a1) != shape_of(a2):
        return False
    eq = np.equal(a1, a2)
    if equal_nan:
        eq = np.logical_or(eq, np.logical_and(np.isnan(a1), np.isnan(a2)))
    return bool(np.all(eq))


@implements(np.sort)
def _sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    a = operand(a)
    if axis is None:
        a, axis = reshape_of(a, (-1,)), 0
    return take_along_axis(a, np.argsort(a, axis=axis, kind=kind), axis)


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
