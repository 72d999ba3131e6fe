"""What the tape records for NumPy's table lookups and piecewise definitions: interp and piecewise.

Both are compositions of recorded primitives, so every mode, second order, Taylor mode and sparsity
detection apply to them as to any other code:

- `np.interp(x, xp, fp)`: the segment of each x is found with `np.searchsorted` (recorded without a
  derivative: a replay at another x finds the segments again), then xp and fp are gathered at it and the
  segment's line evaluated with NumPy's own formula (`slope * (x - xp[j]) + fp[j]`, the same value to
  the bit). The derivative in x is the slope of the segment (0 outside the table, where the value is
  `left` or `right`); at a knot xp[j] it is the slope of the segment starting there (the right-hand
  derivative; at xp[-1], 0). It is linear in fp and differentiable in xp away from ties. `period=`
  wraps x and xp as NumPy does (a remainder and an argsort).
- `np.piecewise(x, condlist, funclist)`: NumPy calls each function on `x[cond]`, the selected elements
  only, whose number depends on x when the condition does. The tape instead calls a function on all of
  x (the unselected entries replaced by a selected value, with no derivative, and its floating-point
  warnings silenced) and selects with `where`, so one recording serves every x, no guard. That is
  NumPy's result exactly when the function is elementwise, which the tape checks on what the call
  recorded (only elementwise operations of x, with numbers); a function that is not (one that reduces,
  reshapes or indexes its argument) gets NumPy's own evaluation on `x[cond]`, whose count of selected
  elements is then guarded. A condition known at recording (not traced) always takes NumPy's path: it
  needs no guard.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..data.graph import GUARD_OUTPUT, Traced
from ..prims.elementwise import WHERE
from ..prims.prim import shape_of
from ..prims.reduce import NonDiff
from ..prims.structure import ASTYPE
from ..tracing.tracer import operand
from .common import implements, literal_like, ndim_of

__all__: list[str] = []

#: a value with no derivative (the fill of piecewise's unselected entries)
_STOP = NonDiff(lambda a: np.array(a, copy=True), "stop_gradient")


# -- interp ---------------------------------------------------------------------------------------------
def _as_dtype(a: Any, dtype: Any) -> Any:
    """`a` (a traced array, an array or a number) as an array of `dtype` (what NumPy's interp computes in)."""
    if not isinstance(a, Traced):
        return np.asarray(a, dtype=dtype)
    return a if a.dtype == dtype else a.astype(dtype)


def _traced_on(a: Any, tape_of: Any) -> Any:
    """`a` as a traced array (a literal on the tape of `tape_of` when it is a plain value)."""
    return a if isinstance(a, Traced) else literal_like(tape_of, np.asarray(a))


@implements(np.interp)
def _interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    x, xp, fp = operand(x), operand(xp), operand(fp)
    fp_dtype = np.complex128 if np.dtype(fp.dtype).kind == "c" else np.float64
    x, xp, fp = _as_dtype(x, np.float64), _as_dtype(xp, np.float64), _as_dtype(fp, fp_dtype)
    if period is not None:
        period = operand(period)
        if not isinstance(period, Traced) and period == 0:
            raise ValueError("period must be a non-zero value")
        period = np.abs(period)
        left = right = None
        if ndim_of(xp) != 1 or ndim_of(fp) != 1:
            raise ValueError("Data points must be 1-D sequences")
        if shape_of(xp)[0] != shape_of(fp)[0]:
            raise ValueError("fp and xp are not of the same length")
        x = np.remainder(x, period)
        xp = np.remainder(xp, period)
        order = np.argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = np.concatenate((np.subtract(xp[-1:], period), xp, np.add(xp[0:1], period)))
        fp = np.concatenate((fp[-1:], fp, fp[0:1]))
    if ndim_of(xp) != 1 or ndim_of(fp) != 1:
        raise ValueError("object too deep for desired array")
    n = shape_of(xp)[0]
    if shape_of(fp)[0] != n:
        raise ValueError("fp and xp are not of the same length.")
    if n == 0:
        raise ValueError("array of sample points is empty")
    traced = next(a for a in (x, xp, fp, left, right) if isinstance(a, Traced))
    xp, fp = _traced_on(xp, traced), _traced_on(fp, traced)
    lo = fp[0] if left is None else operand(left)
    hi = fp[-1] if right is None else operand(right)
    inner: Any = fp[0]
    if n > 1:
        j = np.subtract(np.searchsorted(xp, x, side="right"), 1)
        k = np.clip(j, 0, n - 2)
        x0, y0 = xp[k], fp[k]
        slope = np.divide(np.subtract(fp[np.add(k, 1)], y0), np.subtract(xp[np.add(k, 1)], x0))
        inner = np.add(np.multiply(slope, np.subtract(x, x0)), y0)  # NumPy's formula, to the bit
        inner = WHERE(np.greater_equal(j, n - 1), fp[-1], inner)  # x == xp[-1]: fp[-1] (beyond: hi, below)
    r = WHERE(np.greater(x, xp[-1]), hi, inner)
    r = WHERE(np.less(x, xp[0]), lo, r)
    return WHERE(np.isnan(x), x, r)  # NumPy gives x itself where it is NaN


# -- piecewise --------------------------------------------------------------------------------------------
def _conditions(condlist: Any, nd: int) -> list:
    """NumPy's reading of condlist: a single condition (a scalar, or an array of x's elements) is a list
    of one."""
    if isinstance(condlist, Traced):
        single = condlist.ndim < 2 and nd != 0
    elif np.isscalar(condlist) or (isinstance(condlist, np.ndarray) and condlist.ndim == 0):
        single = True
    else:
        first = condlist[0]
        single = not isinstance(first, (list, np.ndarray, Traced)) and nd != 0
    if single:
        condlist = [condlist]
    return [_as_bool(operand(c)) for c in condlist]


def _as_bool(c: Any) -> Any:
    if isinstance(c, Traced):
        c = cast(Any, c)
        return c if c.dtype == np.bool_ else np.not_equal(c, 0)
    return np.asarray(c, dtype=bool)


@implements(np.piecewise)
def _piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    x = operand(x)
    if not isinstance(x, Traced):
        x = np.asanyarray(x)
    shape, dtype = shape_of(x), x.dtype
    conds = _conditions(condlist, len(shape))
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:  # the "otherwise" condition
        conds.append(np.logical_not(np.any(np.stack([np.broadcast_to(c, shape) for c in conds]), axis=0)))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    traced = next(a for a in (x, *conds) if isinstance(a, Traced))
    x = _traced_on(x, traced)
    y: Any = literal_like(traced, np.zeros(shape, dtype))
    for cond, func in zip(conds, funclist):
        cond = np.broadcast_to(cond, shape)
        if not callable(func):
            value = operand(func)
            if np.size(value) == 1:
                y = _cast(WHERE(cond, value, y), dtype)
            else:
                y[cond] = value
        elif isinstance(cond, Traced):
            y = _select_branch(x, cond, func, args, kw, y)
        else:
            vals = x[cond]
            if np.size(vals) > 0:
                y[cond] = func(vals, *args, **kw)
    return y


def _cast(a: Any, dtype: np.dtype) -> Any:
    return a if a.dtype == dtype else a.astype(dtype)


def _select_branch(x: Any, cond: Any, func: Any, args: tuple, kw: dict, y: Any) -> Any:
    """y with func's values where the traced `cond` holds: func run on all of x, selected by `where`, if
    func is elementwise; else NumPy's way (func on x[cond], the count of selected elements guarded)."""
    flat = np.reshape(cond, (-1,))
    # the unselected entries: a selected element, or (none selected) a value func was defined at
    fill = WHERE(np.any(flat), np.reshape(x, (-1,))[np.argmax(flat)], _domain_value(x, cond, func, args, kw))
    v = WHERE(cond, x, _STOP(fill))
    tape, slot = v._tape, v._read()
    start = len(tape.nodes)
    with np.errstate(all="ignore"):  # NumPy computes no unselected entry, and so warns of none
        r = func(v, *args, **kw)
    if _elementwise_of(tape, start, slot, shape_of(v), r):
        return _cast(WHERE(cond, operand(r), y), y.dtype)
    vals = x[cond]  # guards the number of selected elements
    if np.size(vals) > 0:
        y[cond] = func(vals, *args, **kw)
    return y


#: the values tried for a point of func's domain when no element of x is selected at recording
_TRIES = np.array([1.0, 0.5, 2.0, 0.0, -0.5, -1.0, -2.0])


def _domain_value(x: Any, cond: Any, func: Any, args: tuple, kw: dict) -> Any:
    """A number at which func gives a finite value, for the unselected entries of a replay where cond
    selects nothing (so that they compute, and differentiate, without NaN or warnings): the first element
    selected at recording, else the first of x's values or of `_TRIES` where func (run on plain numbers)
    is finite."""
    values, chosen = np.asarray(x._value()), np.asarray(cond._value())
    selected = values[chosen]
    if selected.size:
        return selected.reshape(-1)[0]
    tries = np.concatenate([values.reshape(-1)[:8], _TRIES.astype(values.dtype)])
    try:
        with np.errstate(all="ignore"):
            r = func(tries, *args, **kw)
        r = r._value() if isinstance(r, Traced) else np.asarray(r)
    except Exception:  # a trial only: func need not take these values
        return tries[0]
    if r.shape == tries.shape and r.dtype.kind in "fc":
        finite = np.flatnonzero(np.isfinite(r))
        if finite.size:
            return tries[finite[0]]
    return tries[0]


def _elementwise_of(tape: Any, start: int, slot: int, shape: tuple, r: Any) -> bool:
    """Whether r, recorded by the nodes from `start` on, is an elementwise function of the value in
    `slot` (elementwise operations only between its values and numbers) or a number: then func(x)[cond]
    is func(x[cond])."""
    if isinstance(r, (list, tuple)):
        return False
    reached = {slot}
    slots = tape.slots
    for node in tape.nodes[start:]:
        if node.output == GUARD_OUTPUT or not any(s in reached for s in node.inputs):
            continue
        if not (getattr(node.prim, "elementwise", False) or node.prim is ASTYPE):
            return False
        if slots[node.output].shape != shape:
            return False
        if any(s not in reached and int(np.prod(slots[s].shape)) != 1 for s in node.inputs):
            return False
        reached.add(node.output)
    if isinstance(r, Traced):
        return r._read() in reached or r.size == 1
    return np.size(r) == 1
