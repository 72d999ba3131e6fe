"""What the tape records for NumPy's finite-difference and quadrature functions: gradient (NumPy's
formulas: central differences inside, one-sided of order 1 or 2 at the edges, uniform or not), and
trapezoid."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..prims.prim import shape_of
from ..tracing.tracer import operand
from .common import axes_of, axis_of, implements, ndim_of
from .shapes import _concatenate

__all__: list[str] = []


def _along(a: Any, axis: int, key: slice | int) -> Any:
    return a[(slice(None),) * axis + (key,)]


def _coefficient(c: Any, axis: int, nd: int) -> Any:
    """A coefficient (a number, or a vector along `axis`) shaped to broadcast against the array."""
    if ndim_of(c) == 0:
        return c
    return np.reshape(c, (-1,) + (1,) * (nd - axis - 1))


def _gradient_along(f: Any, axis: int, spacing: Any, edge_order: int) -> Any:
    n = shape_of(f)[axis]
    if n < edge_order + 1:
        raise ValueError(
            "Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are "
            "required."
        )
    nd = ndim_of(f)
    spacing = operand(spacing)
    if ndim_of(spacing) == 0:
        dx: Any = spacing
        uniform = True
    else:
        if shape_of(spacing) != (n,):
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        dx = np.diff(spacing)
        if not np.issubdtype(dx.dtype, np.inexact):
            dx = dx.astype(np.float64)
        uniform = bool(np.all(np.equal(dx, dx[0])))
        if uniform:
            dx = dx[0]
    take = lambda key: _along(f, axis, key)
    if uniform:
        inner = np.divide(np.subtract(take(slice(2, None)), take(slice(None, -2))), np.multiply(dx, 2.0))
    else:
        dx1, dx2 = dx[:-1], dx[1:]
        s = np.add(dx1, dx2)
        a = np.negative(np.divide(dx2, np.multiply(dx1, s)))
        b = np.divide(np.subtract(dx2, dx1), np.multiply(dx1, dx2))
        c = np.divide(dx1, np.multiply(dx2, s))
        terms = [
            np.multiply(_coefficient(a, axis, nd), take(slice(None, -2))),
            np.multiply(_coefficient(b, axis, nd), take(slice(1, -1))),
            np.multiply(_coefficient(c, axis, nd), take(slice(2, None))),
        ]
        inner = np.add(np.add(terms[0], terms[1]), terms[2])
    first, last = take(slice(0, 1)), take(slice(-1, None))
    if edge_order == 1:
        d0 = dx if uniform else dx[0]
        d1 = dx if uniform else dx[-1]
        start = np.divide(np.subtract(take(slice(1, 2)), first), d0)
        end = np.divide(np.subtract(last, take(slice(-2, -1))), d1)
    else:
        if uniform:
            a0, b0, c0 = np.divide(-1.5, dx), np.divide(2.0, dx), np.divide(-0.5, dx)
            a1, b1, c1 = np.divide(0.5, dx), np.divide(-2.0, dx), np.divide(1.5, dx)
        else:
            p, q = dx[0], dx[1]
            a0 = np.negative(np.divide(np.add(np.multiply(p, 2.0), q), np.multiply(p, np.add(p, q))))
            b0 = np.divide(np.add(p, q), np.multiply(p, q))
            c0 = np.negative(np.divide(p, np.multiply(q, np.add(p, q))))
            p, q = dx[-2], dx[-1]
            a1 = np.divide(q, np.multiply(p, np.add(p, q)))
            b1 = np.negative(np.divide(np.add(q, p), np.multiply(p, q)))
            c1 = np.divide(np.add(np.multiply(q, 2.0), p), np.multiply(q, np.add(p, q)))
        start = np.add(
            np.add(np.multiply(a0, first), np.multiply(b0, take(slice(1, 2)))), np.multiply(c0, take(slice(2, 3)))
        )
        end = np.add(
            np.add(np.multiply(a1, take(slice(-3, -2))), np.multiply(b1, take(slice(-2, -1)))), np.multiply(c1, last)
        )
    return _concatenate([start, inner, end], axis)


@implements(np.gradient)
def _gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    f = operand(f)
    if not np.issubdtype(f.dtype, np.inexact):
        f = f.astype(np.float64)
    nd = ndim_of(f)
    axes = axes_of(axis, nd)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    if not varargs:
        spacings: list = [1.0] * len(axes)
    elif len(varargs) == 1 and ndim_of(operand(varargs[0])) == 0:
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    out = [_gradient_along(f, axis_of(ax, nd), dx, edge_order) for ax, dx in zip(axes, spacings)]
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.trapezoid)
def _trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    y = operand(y)
    nd = ndim_of(y)
    ax = axis_of(axis, nd)
    if x is None:
        d: Any = dx
    else:
        x = operand(x)
        d = np.diff(x, axis=-1 if ndim_of(x) == 1 else ax)
        if ndim_of(x) == 1:
            d = np.reshape(d, (-1,) + (1,) * (nd - ax - 1))
    mid = np.add(_along(y, ax, slice(1, None)), _along(y, ax, slice(None, -1)))
    return np.sum(np.multiply(np.multiply(d, mid), 0.5), axis=ax)
