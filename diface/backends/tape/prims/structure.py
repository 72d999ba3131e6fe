"""Shape and selection primitives: reshape, transpose, broadcast_to, indexing, assignment,
concatenation, casts. Their metadata (shapes, axes, index templates) is never differentiated; each is
linear in its array input, so its JVP applies the same operation to the tangent and its VJP is the
transpose (a scatter for indexing, a split for concatenation)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ...._sparsity import Deps, Nonlinearity
from ..data.graph import Node, Traced
from ..data.index import build
from . import patterns
from .prim import HOLOMORPHIC, TAYLOR_LINEAR, InputsFrom, Prim, dtype_of, expand_to, into, reduce_to, shape_of

__all__ = ["ASTYPE", "BROADCAST_TO", "CONCATENATE", "GETITEM", "INDEX_ADD", "RESHAPE", "SETITEM", "TRANSPOSE"]


def _batched(template: tuple, b: int) -> tuple:
    return (slice(None),) * b + template


class _Linear(Prim):
    """A linear primitive whose rules read no values but its index arrays (`nondiff` inputs): its JVP
    rule gives every Taylor coefficient, and sparsity detection runs it on element ids (index arrays
    known at recording; `patterns.move`)."""

    complex = HOLOMORPHIC

    linear = True
    taylor = TAYLOR_LINEAR
    sparsity = staticmethod(patterns.move)

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return self.nondiff, False


class _Reshape(_Linear):
    name = "reshape"
    viewable = True

    def forward(self, a: Any, out: Any = None, shape: tuple = ()) -> Any:
        return into(out, np.reshape(a, shape))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, shape: tuple = ()) -> Any:
        t = ts[0]
        return into(out, np.reshape(t, shape_of(t)[:b] + shape))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, shape: tuple = ()) -> Any:
        return into(out, np.reshape(g, shape_of(g)[:b] + shape_of(ins[0])))

    def vjp_linear(self, i: int, ins: tuple, g: Any, b: int, params: dict) -> tuple[int, Any] | None:
        v = g.reshape(g.shape[:b] + ins[0].shape)
        return (1, v) if np.shares_memory(v, g) else None


RESHAPE = _Reshape()


class _Transpose(_Linear):
    name = "transpose"
    viewable = True

    def forward(self, a: Any, out: Any = None, axes: tuple = ()) -> Any:
        return into(out, np.transpose(a, axes))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, axes: tuple = ()) -> Any:
        return into(out, np.transpose(ts[0], tuple(range(b)) + tuple(a + b for a in axes)))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, axes: tuple = ()) -> Any:
        inverse = tuple(int(k) for k in np.argsort(axes))
        return into(out, np.transpose(g, tuple(range(b)) + tuple(a + b for a in inverse)))

    def vjp_linear(self, i: int, ins: tuple, g: Any, b: int, params: dict) -> tuple[int, Any] | None:
        return 1, self.vjp(i, ins, None, g, b, None, **params)


TRANSPOSE = _Transpose()


class _BroadcastTo(_Linear):
    name = "broadcast_to"
    viewable = True

    def forward(self, a: Any, out: Any = None, shape: tuple = ()) -> Any:
        return into(out, np.broadcast_to(a, shape))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, shape: tuple = ()) -> Any:
        t = expand_to(ts[0], shape, b)
        return into(out, np.broadcast_to(t, shape_of(t)[:b] + shape))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, shape: tuple = ()) -> Any:
        return reduce_to(g, shape_of(ins[0]), b, out)

    def vjp_linear(self, i: int, ins: tuple, g: Any, b: int, params: dict) -> tuple[int, Any] | None:
        return 1, g  # summed over the broadcast axes by the sweep


BROADCAST_TO = _BroadcastTo()


class _Astype(_Linear):
    name = "astype"
    sparsity = staticmethod(patterns.same)

    def forward(self, a: Any, out: Any = None, dtype: Any = None) -> Any:
        if out is None:
            return np.asarray(a).astype(dtype) if not isinstance(a, Traced) else a.astype(dtype)
        np.copyto(out, a, casting="unsafe")
        return out

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, dtype: Any = None) -> Any:
        return self.apply(ts[0], out=out, dtype=dtype)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, dtype: Any = None) -> Any:
        return self.apply(g, out=out, dtype=dtype_of(ins[0]))


ASTYPE = _Astype()


# -- indexing ------------------------------------------------------------------------------------------
def _move_batch(a: Any, adv_front: int, to_front: bool) -> Any:
    """Batched advanced indexing with the advanced block moved to the front: the batch axis lands after
    it; move it to position 0 (or back)."""
    if not adv_front:
        return a
    return np.moveaxis(a, adv_front, 0) if to_front else np.moveaxis(a, 0, adv_front)


class _Getitem(_Linear):
    """`a[key]`: inputs (a, *index_arrays); params: the template, `adv_front` (see `Key`), `unique`."""

    name = "getitem"
    viewable = True
    scatter = True
    linear = True
    nondiff = InputsFrom(1)

    def forward(
        self, a: Any, *arrays: Any, out: Any = None, template: tuple = (), adv_front: int = 0, unique: bool = True
    ) -> Any:
        return into(out, a[build(template, arrays)])

    def view(self, ins: tuple, template: tuple = (), adv_front: int = 0, unique: bool = True) -> Any:
        if len(ins) > 1:  # index arrays: a copy, whose contents depend on the indices
            return None
        return ins[0][(*template, Ellipsis)]

    def tangent_view(self, ins: tuple, ts: tuple, b: int, params: dict) -> Any:
        return None if len(ins) > 1 else super().tangent_view(ins, ts, b, params)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **p: Any) -> Any:
        key = _batched(build(p["template"], ins[1:]), b)
        if len(ins) == 1:
            key += (Ellipsis,)
        r = ts[0][key]
        return into(out, _move_batch(r, p["adv_front"], True) if b else r)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **p: Any) -> Any:
        z = np.zeros(shape_of(g)[:b] + shape_of(ins[0]), dtype=dtype_of(g))
        if b:
            g = _move_batch(g, p["adv_front"], False)
            p = dict(p, template=_batched(p["template"], b))
        return into(out, INDEX_ADD(z, g, *ins[1:], **p))

    def vjp_accumulate(self, i: int, ins: tuple, y: Any, g: Any, previous: Any, **p: Any) -> Any:
        return INDEX_ADD(previous, g, *ins[1:], **p)  # added into the region of the running cotangent

    def vjp_add(self, i: int, ins: tuple, y: Any, g: Any, b: int, target: Any, **p: Any) -> None:
        if b:
            g = _move_batch(g, p["adv_front"], False)
        _index_add_into(target, _batched(build(p["template"], ins[1:]), b), g, p["unique"])

    def vjp_step(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any, params: dict) -> Any:
        if len(ins) == 1:  # basic indexing: add into a fixed view of the target
            region = out[(*_batched(params["template"], b), Ellipsis)]
            return partial(np.add, region, g, region)
        return super().vjp_step(i, ins, y, g, b, out, params)

    def vjp_first_steps(self, i: int, ins: tuple, g: Any, b: int, out: Any, params: dict) -> list | None:
        """The first contribution to `out`: the region written, the rest zeroed (instead of zeroing all
        and adding), for a key that slices one axis with step 1; else None."""
        template = params["template"]
        if len(ins) != 1 or len(template) != 1 or type(template[0]) is not slice:
            return None
        n = out.shape[b]
        start, stop, step = template[0].indices(n)
        if step != 1 or stop < start:
            return None
        lead = (slice(None),) * b
        steps = [partial(np.copyto, out[(*lead, slice(start, stop))], g)]
        for rest in (slice(0, start), slice(stop, n)):
            if rest.stop > rest.start:
                steps.append(partial(np.copyto, out[(*lead, rest)], 0))
        return steps


def _index_add_into(target: Any, key: tuple, values: Any, unique: bool) -> None:
    if unique:
        target[key] += values
    else:
        np.add.at(target, key, values)


GETITEM = _Getitem()


class _IndexAdd(_Linear):
    """`index_add(a, v, *arrays)`: a copy of a with v added at key (repeated indices accumulate); the
    transpose of indexing."""

    name = "index_add"
    linear = True
    nondiff = InputsFrom(2)
    inplace = (0,)  # a replay may add into the buffer of a, where a dies here

    @staticmethod
    def sparsity(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
        """a with v's elements reduced into the positions the key selects (repeated positions accumulate);
        a key computed from inputs: anywhere."""
        a, v, arrays = run.deps(ins[0]), ins[1], ins[2:]
        if any(isinstance(k, Deps) for k in arrays):
            return run.anywhere([a, run.deps(v)], shape, Nonlinearity.LINEAR)
        if not isinstance(v, Deps):
            return a
        ids = np.arange(a.size).reshape(a.shape)
        targets = np.asarray(GETITEM.forward(ids, *(k.value for k in arrays), **node.params))
        added = v.broadcast_to(targets.shape).reduce(targets.ravel(), shape)
        return Deps.elementwise(shape, [a, added], Nonlinearity.LINEAR)

    def forward(
        self,
        a: Any,
        v: Any,
        *arrays: Any,
        out: Any = None,
        template: tuple = (),
        adv_front: int = 0,
        unique: bool = True,
    ) -> Any:
        if out is None:
            out = np.array(a, copy=True)
        elif out is not a:
            np.copyto(out, a)
        _index_add_into(out, build(template, arrays), v, unique)
        return out

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        if len(ins) == 2:  # a basic key: a fixed region
            region = out[(*params["template"], Ellipsis)]
            if out is ins[0]:  # in place
                return partial(np.add, region, ins[1], region)
            return partial(_base_then_add, out, ins[0], region, ins[1])
        return super().forward_step(ins, out, params)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **p: Any) -> Any:
        ta, tv = ts[0], ts[1]
        base = ta if ta is not None else np.zeros(shape_of(tv)[:b] + shape_of(ins[0]), dtype=dtype_of(tv))
        if tv is None:
            return into(out, base)
        if b:
            tv = _move_batch(expand_to(tv, _region_shape(ins, p), b), p["adv_front"], False)
            p = dict(p, template=_batched(p["template"], b))
        return self.apply(base, tv, *ins[2:], out=out, **p)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **p: Any) -> Any:
        if i == 0:
            return into(out, g)
        region = GETITEM.jvp((None, *ins[2:]), None, (g,), b, None, **p)
        return reduce_to(region, shape_of(ins[1]), b, out)

    def jvp_step(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> Any:
        if len(ins) == 2 and ts[1] is not None:  # a basic key: the base's tangent, the region's added
            return _region_step(np.add, ins, ts, b, out, params)
        return super().jvp_step(ins, y, ts, b, out, params)


def _region_step(write: Any, ins: tuple, ts: tuple, b: int, out: Any, params: dict) -> Any:
    """Prepared JVP of index_add / setitem with a basic key: copy the base's tangent (or zeros), then
    `write` (np.add or np.copyto) the value's tangent into the region."""
    region = out[(*_batched(params["template"], b), Ellipsis)]
    tv = ts[1]
    if b and isinstance(tv, np.ndarray):
        tv = expand_to(tv, _region_shape(ins, params), b)
    base = 0.0 if ts[0] is None else ts[0]
    if write is np.add:
        return partial(_base_then_add, out, base, region, tv)
    return partial(_copy_then_set, out, base, region, tv)


def _base_then_add(out: Any, base: Any, region: Any, v: Any) -> None:
    np.copyto(out, base)
    np.add(region, v, region)


def _region_shape(ins: tuple, p: dict) -> tuple:
    """A shape with the number of axes of a[key] (without batch axes): what v broadcasts against."""
    template, arrays = p["template"], ins[2:]
    ndim = sum(1 for e in template if type(e) is slice or e is None)
    if arrays:
        shapes = [(1,) if a.dtype == np.bool_ else shape_of(a) for a in arrays]
        ndim += len(np.broadcast_shapes(*shapes))
    return (1,) * ndim


INDEX_ADD = _IndexAdd()


class _Setitem(_Linear):
    """`setitem(a, v, *arrays)`: a copy of a with a[key] = v (the new version of an array written in
    place). The cotangent of a is zero on the region; v receives the region, summed over broadcasting."""

    name = "setitem"
    linear = True
    nondiff = InputsFrom(2)
    inplace = (0,)  # a replay may write into the buffer of a, where a dies here (a buffer filled in a loop)

    def forward(
        self,
        a: Any,
        v: Any,
        *arrays: Any,
        out: Any = None,
        template: tuple = (),
        adv_front: int = 0,
        unique: bool = True,
    ) -> Any:
        if out is None:
            out = np.array(a, copy=True)
        elif out is not a:
            np.copyto(out, a)
        out[build(template, arrays)] = v
        return out

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        if len(ins) == 2:
            region = out[params["template"] + (Ellipsis,)]
            if out is ins[0]:  # in place: only the region is written
                return partial(np.copyto, region, ins[1])
            return partial(_copy_then_set, out, ins[0], region, ins[1])
        return super().forward_step(ins, out, params)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **p: Any) -> Any:
        ta, tv = ts[0], ts[1]
        t = ta if ta is not None else tv
        base = ta if ta is not None else np.zeros(shape_of(t)[:b] + shape_of(ins[0]), dtype=dtype_of(t))
        if tv is None:
            tv = 0.0
        elif b:
            tv = _move_batch(expand_to(tv, _region_shape(ins, p), b), p["adv_front"], False)
        if b:
            p = dict(p, template=_batched(p["template"], b))
        return self.apply(base, tv, *ins[2:], out=out, **p)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **p: Any) -> Any:
        if i == 0:
            bp = dict(p, template=_batched(p["template"], b)) if b else p
            return self.apply(g, 0.0, *ins[2:], out=out, **bp)
        region = GETITEM.jvp((None, *ins[2:]), None, (g,), b, None, **p)
        return reduce_to(region, shape_of(ins[1]), b, out)

    def jvp_step(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> Any:
        if len(ins) == 2:  # a basic key: the base's tangent, the region's overwritten
            return _region_step(np.copyto, ins, (ts[0], 0.0 if ts[1] is None else ts[1]), b, out, params)
        return super().jvp_step(ins, y, ts, b, out, params)


def _copy_then_set(out: Any, a: Any, region: Any, v: Any) -> None:
    np.copyto(out, a)
    np.copyto(region, v)


SETITEM = _Setitem()


class _Concatenate(_Linear):
    """`concatenate(*arrays, axis)`: the cotangent splits along the axis, one slice per input."""

    name = "concatenate"

    def forward(self, *ins: Any, out: Any = None, axis: int = 0) -> Any:
        if out is None or any(isinstance(a, Traced) for a in ins):
            return into(out, np.concatenate(ins, axis=axis))
        return np.concatenate(ins, axis=axis, out=out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, axis: int = 0) -> Any:
        t0 = next(t for t in ts if t is not None)
        lead = shape_of(t0)[:b]
        pieces = tuple(
            t if t is not None else np.zeros(lead + shape_of(a), dtype=dtype_of(t0)) for a, t in zip(ins, ts)
        )
        return self.apply(*pieces, out=out, axis=axis + b)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, axis: int = 0) -> Any:
        start = sum(shape_of(a)[axis] for a in ins[:i])
        stop = start + shape_of(ins[i])[axis]
        return into(out, g[(slice(None),) * (axis + b) + (slice(start, stop),)])

    def vjp_linear(self, i: int, ins: tuple, g: Any, b: int, params: dict) -> tuple[int, Any] | None:
        return 1, self.vjp(i, ins, None, g, b, None, **params)


CONCATENATE = _Concatenate()
