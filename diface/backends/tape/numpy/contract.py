"""What the tape records for NumPy's products and contractions: einsum (subscripts and sublist forms),
tensordot, dot, vdot, inner, outer, cross, kron, convolve."""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from ..prims.contract import EINSUM, MATMUL, explicit_subscripts
from ..prims.convolve import CONVOLVE, centered
from ..prims.prim import shape_of
from ..tracing.tracer import operand
from .common import axis_of, implements, ndim_of, reshape_of, write_out

__all__: list[str] = []


def _letters(n: int, skip: str = "") -> str:
    return "".join(ch for ch in string.ascii_letters if ch not in skip)[:n]


@implements(np.einsum)
def _einsum(
    *operands: Any, out: Any = None, optimize: Any = False, dtype: Any = None, order: str = "K", casting: str = "safe"
) -> Any:
    if not operands:
        raise ValueError("No input operands")
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], [operand(a) for a in operands[1:]]
    else:
        subscripts, ops = _sublists(operands)
    if dtype is not None:
        ops = [a.astype(dtype) for a in ops]
    subs = explicit_subscripts(subscripts, [shape_of(a) for a in ops])
    return write_out(EINSUM(*ops, subscripts=subs, optimize=optimize), out)


@implements(np.tensordot)
def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    a, b = operand(a), operand(b)
    na, nb = ndim_of(a), ndim_of(b)
    ax_a: list[Any]
    ax_b: list[Any]
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
    a, b = operand(a), operand(b)
    if np.result_type(a).kind == "c":
        a = np.conjugate(a)  # vdot conjugates its first argument
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


def _sublists(operands: tuple) -> tuple[str, list]:
    """einsum(op0, sublist0, op1, sublist1, ..., [sublistout]) as a subscripts string and operands."""
    ops, subs = list(operands[0::2]), list(operands[1::2])
    out = None
    if len(ops) > len(subs):  # an output sublist ends the list
        out = ops.pop()
    letters: dict[Any, str] = {}

    def term(sub: Any) -> str:
        text = ""
        for s in sub:
            if s is Ellipsis:
                text += "..."
            else:
                key = int(s)
                if key not in letters:
                    letters[key] = string.ascii_letters[len(letters)]
                text += letters[key]
        return text

    terms = [term(s) for s in subs]
    subscripts = ",".join(terms) + ("" if out is None else "->" + term(out))
    return subscripts, [operand(a) for a in ops]


@implements(np.cross)
def _cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None) -> Any:
    """Vectors of 2 or 3 components (a missing third component is 0; two 2-vectors give a scalar)."""
    a, b = operand(a), operand(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = np.moveaxis(a, axis_of(axisa, ndim_of(a)), -1)
    b = np.moveaxis(b, axis_of(axisb, ndim_of(b)), -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    z = np.subtract(np.multiply(a0, b1), np.multiply(a1, b0))
    if na == 2 and nb == 2:
        return z
    a2 = a[..., 2] if na == 3 else 0.0
    b2 = b[..., 2] if nb == 3 else 0.0
    x = np.subtract(np.multiply(a1, b2), np.multiply(a2, b1))
    y = np.subtract(np.multiply(a2, b0), np.multiply(a0, b2))
    shape = np.broadcast_shapes(shape_of(x), shape_of(y), shape_of(z))
    c = np.stack([np.broadcast_to(v, shape) for v in (x, y, z)], axis=-1)
    return np.moveaxis(c, -1, axis_of(axisc, ndim_of(c)))


@implements(np.kron)
def _kron(a: Any, b: Any) -> Any:
    """The outer product with the axes of a and b interleaved, merged pairwise."""
    a, b = operand(a), operand(b)
    nd = max(ndim_of(a), ndim_of(b))
    sa = (1,) * (nd - ndim_of(a)) + shape_of(a)
    sb = (1,) * (nd - ndim_of(b)) + shape_of(b)
    a = reshape_of(a, tuple(n for k in sa for n in (k, 1)))
    b = reshape_of(b, tuple(n for k in sb for n in (1, k)))
    return reshape_of(np.multiply(a, b), tuple(p * q for p, q in zip(sa, sb)))


@implements(np.convolve)
def _convolve(a: Any, v: Any, mode: str = "full") -> Any:
    a, v = operand(a), operand(v)
    a = reshape_of(a, (-1,)) if ndim_of(a) == 0 else a
    v = reshape_of(v, (-1,)) if ndim_of(v) == 0 else v
    if ndim_of(a) != 1 or ndim_of(v) != 1:
        raise ValueError("object too deep for desired array")
    n, m = shape_of(a)[0], shape_of(v)[0]
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    full = CONVOLVE(a, v)
    if mode == "full":
        return full
    if mode == "same":
        return centered(full, (max(n, m),))
    if mode == "valid":
        return centered(full, (max(n, m) - min(n, m) + 1,))
    raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
