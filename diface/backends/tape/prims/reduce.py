"""Reductions (sum, prod, max, min over axes), cumulative sums, and the non-differentiable functions
(argmax, count_nonzero, ...). Axes are metadata: a tuple of non-negative axes."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ...._sparsity import Nonlinearity
from ..data.graph import Node
from . import patterns
from .prim import HOLOMORPHIC, TAYLOR_LINEAR, Prim, dtype_of, into, shape_of

_L = Nonlinearity.LINEAR

__all__ = ["AMAX", "AMIN", "CUMSUM", "NonDiff", "PROD", "SUM"]


def _shift(axis: tuple, b: int) -> tuple:
    return tuple(a + b for a in axis)


def _kept(shape: tuple, axis: tuple) -> tuple:
    return tuple(1 if i in axis else n for i, n in enumerate(shape))


def _expand(g: Any, a_shape: tuple, axis: tuple, b: int) -> Any:
    """The cotangent of a reduction with its reduced axes back as size 1."""
    return np.reshape(g, shape_of(g)[:b] + _kept(a_shape, axis))


class _Sum(Prim):
    complex = HOLOMORPHIC
    name = "sum"
    linear = True
    taylor = TAYLOR_LINEAR
    sparsity = staticmethod(patterns.reduction(_L))

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), False

    def forward(self, a: Any, out: Any = None, axis: tuple = (), keepdims: bool = False) -> Any:
        return np.sum(a, axis=axis, keepdims=keepdims, out=out)

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        return partial(np.add.reduce, ins[0], params["axis"], None, out, params["keepdims"])

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **p: Any) -> Any:
        return np.sum(ts[0], axis=_shift(p["axis"], b), keepdims=p["keepdims"], out=out)

    def jvp_step(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> Any:
        return partial(np.add.reduce, ts[0], _shift(params["axis"], b), None, out, params["keepdims"])

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **p: Any) -> Any:
        a_shape = shape_of(ins[0])
        g = _expand(g, a_shape, p["axis"], b)
        if out is not None:
            np.copyto(out, g)
            return out
        return np.broadcast_to(g, shape_of(g)[:b] + a_shape)

    def vjp_linear(self, i: int, ins: tuple, g: Any, b: int, params: dict) -> tuple[int, Any] | None:
        return 1, _expand(g, ins[0].shape, params["axis"], b)  # broadcast by the sweep


SUM = _Sum()


class _ProdOthers(Prim):
    """For each element, the product of the other elements of its reduction group (exact with zeros):
    the partial derivative of `prod`."""

    complex = HOLOMORPHIC
    name = "prod_others"

    @staticmethod
    def sparsity(run: Any, node: Node, ins: list, shape: tuple) -> Any:
        """Each element: the product of the others of its group (taken as all of its group)."""
        d = run.deps(ins[0])
        ids = patterns.groups(d.shape, tuple(node.params["axis"]))
        pooled = d.reduce(ids, (int(ids.max(initial=-1)) + 1,), Nonlinearity.BILINEAR)
        return pooled.gather(ids)

    def forward(self, a: Any, out: Any = None, axis: tuple = ()) -> Any:
        shape = shape_of(a)
        rest = tuple(i for i in range(len(shape)) if i not in axis)
        perm = rest + axis
        moved = np.transpose(a, perm)
        n = int(np.prod([shape[i] for i in axis], dtype=np.int64))
        flat = np.reshape(moved, (*moved.shape[: len(rest)], n))
        ones = np.ones((*flat.shape[:-1], 1), dtype=flat.dtype)
        left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
        right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
        others = np.reshape(left * right, moved.shape)
        return into(out, np.transpose(others, tuple(np.argsort(perm))))

    # second derivatives use the quotient form, valid where no factor is zero
    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, axis: tuple = ()) -> Any:
        a, t = ins[0], ts[0]
        ratio = np.divide(t, a)
        total = np.sum(ratio, axis=_shift(axis, b), keepdims=True)
        return np.multiply(y, np.subtract(total, ratio), out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, axis: tuple = ()) -> Any:
        a = ins[0]
        gy = np.multiply(g, y)
        total = np.sum(gy, axis=_shift(axis, b), keepdims=True)
        return np.divide(np.subtract(total, gy), a, out=out)


PROD_OTHERS = _ProdOthers()


class _Prod(Prim):
    complex = HOLOMORPHIC
    name = "prod"
    sparsity = staticmethod(patterns.reduction(Nonlinearity.BILINEAR))  # bilinear within a group

    def forward(self, a: Any, out: Any = None, axis: tuple = (), keepdims: bool = False) -> Any:
        return np.prod(a, axis=axis, keepdims=keepdims, out=out)

    def jvp(
        self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, axis: tuple = (), keepdims: bool = False
    ) -> Any:
        others = PROD_OTHERS(ins[0], axis=axis)
        return np.sum(np.multiply(ts[0], others), axis=_shift(axis, b), keepdims=keepdims, out=out)

    def vjp(
        self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, axis: tuple = (), keepdims: bool = False
    ) -> Any:
        others = PROD_OTHERS(ins[0], axis=axis)
        return np.multiply(_expand(g, shape_of(ins[0]), axis, b), others, out=out)


PROD = _Prod()


class _Extreme(Prim):
    """max / min over axes. Ties: the derivative is split evenly among the elements equal to the
    extreme (the mean of their tangents; each gets cotangent / count)."""

    taylor = TAYLOR_LINEAR  # piecewise linear
    sparsity = staticmethod(patterns.reduction(_L))

    def __init__(self, name: str, reduce: Any) -> None:
        self.name = name
        self.reduce = reduce

    def forward(self, a: Any, out: Any = None, axis: tuple = (), keepdims: bool = False) -> Any:
        return self.reduce(a, axis=axis, keepdims=keepdims, out=out)

    @staticmethod
    def _weights(a: Any, y: Any, axis: tuple, keepdims: bool) -> Any:
        yk = y if keepdims else np.reshape(y, _kept(shape_of(a), axis))
        hits = np.equal(a, yk)
        count = np.sum(hits, axis=axis, keepdims=True)
        return np.divide(hits, count)

    def jvp(
        self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, axis: tuple = (), keepdims: bool = False
    ) -> Any:
        w = self._weights(ins[0], y, axis, keepdims)
        return np.sum(np.multiply(ts[0], w), axis=_shift(axis, b), keepdims=keepdims, out=out)

    def vjp(
        self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, axis: tuple = (), keepdims: bool = False
    ) -> Any:
        w = self._weights(ins[0], y, axis, keepdims)
        return np.multiply(_expand(g, shape_of(ins[0]), axis, b), w, out=out)


AMAX = _Extreme("max", np.max)
AMIN = _Extreme("min", np.min)


class _Cumsum(Prim):
    complex = HOLOMORPHIC
    name = "cumsum"
    linear = True
    taylor = TAYLOR_LINEAR
    sparsity = staticmethod(patterns.cumulative(_L))

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), False

    def forward(self, a: Any, out: Any = None, axis: int = 0) -> Any:
        return np.cumsum(a, axis=axis, out=out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, axis: int = 0) -> Any:
        return np.cumsum(ts[0], axis=axis + b, out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, axis: int = 0) -> Any:
        flip = (slice(None),) * (axis + b) + (slice(None, None, -1),)
        return into(out, np.cumsum(g[flip], axis=axis + b)[flip])


CUMSUM = _Cumsum()


class NonDiff(Prim):
    """A NumPy function whose result carries no derivative (indices, counts, booleans, ...)."""

    differentiable = False

    def __init__(self, func: Any, name: str | None = None) -> None:
        self.func = func
        self.name = name or func.__name__

    def forward(self, *ins: Any, out: Any = None, **params: Any) -> Any:
        return into(out, np.asarray(self.func(*ins, **params)))


def zeros_like_of(a: Any) -> Any:
    return np.zeros(shape_of(a), dtype=dtype_of(a))
