"""The tape's rules for scipy.interpolate's interpolators of tables (reached through `numpy.hooks`): interp1d
(every kind) and RegularGridInterpolator and interpn (linear, nearest), as `scipy.interpolate` does for
the splines: a constructor called with traced data builds SciPy's object holding them, and an
evaluation of an object holding traced data, or at traced points, runs SciPy's search and formula on
the tape (interp1d's spline kinds through make_interp_spline and BSpline, hooked). Points outside the
data, where SciPy raises (`bounds_error`), are a guard; where it fills, a `where`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.graph import Traced
from ..numpy.hooks import hook
from ..prims.elementwise import WHERE
from ..prims.objects import holds_traced
from ..prims.prim import shape_of
from .interpolate import _M, _array, _failures, _get, _inexact, _points, _put, _refuse, _si, _values
from .splines import folding, gather, is_traced

__all__: list[str] = []


# -- interp1d ------------------------------------------------------------------------------------------------
_KINDS = ("linear", "nearest", "nearest-up", "previous", "next")


def interp1d_init(
    kept: Any,
    self: Any,
    x: Any,
    y: Any,
    kind: Any = "linear",
    axis: int = -1,
    copy: bool = True,
    bounds_error: Any = None,
    fill_value: Any = np.nan,
    assume_sorted: bool = False,
) -> None:
    x, y = _array(x), _array(y)
    nd = len(shape_of(y))
    shape = shape_of(y) or (1,)
    if shape[axis] != shape_of(x)[0]:
        raise ValueError("x and y arrays must be equal in length along interpolation axis.")
    self._y_axis = axis % nd
    self._y_extra_shape = shape_of(y)[: self._y_axis] + shape_of(y)[self._y_axis + 1 :]
    self.dtype = np.complex128 if y.dtype.kind == "c" else np.float64
    self.bounds_error = bounds_error
    self.copy = copy
    order = 0
    if kind in ("zero", "slinear", "quadratic", "cubic"):
        order, kind = {"zero": 0, "slinear": 1, "quadratic": 2, "cubic": 3}[kind], "spline"
    elif isinstance(kind, int):
        order, kind = kind, "spline"
    elif kind not in _KINDS:
        raise NotImplementedError(f"{kind} is unsupported: Use fitpack routines for other types.")
    if not assume_sorted:
        ind = np.argsort(x, kind="mergesort")
        x, y = x[ind], np.take(y, ind, axis=axis)
    if len(shape_of(x)) != 1:
        raise ValueError("the x array must have exactly one dimension.")
    if nd == 0:
        raise ValueError("the y array must have at least one dimension.")
    if y.dtype.kind not in "fc":
        y = y.astype(np.float64)
    self.axis = axis % nd
    self.y = y
    self._y = np.reshape(np.moveaxis(y, self._y_axis, 0), (shape_of(y)[self._y_axis], -1))
    self.x = x
    self._kind = kind
    extrapolate = isinstance(fill_value, str) and fill_value == "extrapolate"
    if kind == "spline":
        minval = order + 1
        if np.isnan(_values(x)).any() or np.isnan(_values(self._y)).any():
            raise _refuse("interp1d", f"(kind {order}) with NaN in x or y")
        self._spline = _si().make_interp_spline(x, self._y, k=order, check_finite=False)
    else:
        minval = 1
        if kind in ("nearest", "nearest-up"):
            self._side = "left" if kind == "nearest" else "right"
            half = np.divide(x, 2.0)
            self.x_bds = np.add(half[1:], half[:-1])
        elif kind in ("previous", "next"):
            self._side, self._ind = ("left", 0) if kind == "previous" else ("right", 1)
            self._x_shift = np.nextafter(_values(x), -np.inf if kind == "previous" else np.inf)
            if extrapolate:
                self._check_and_update_bounds_error_for_extrapolation()
                end = np.take(self.y, -1 if kind == "previous" else 0, axis)
                fill_value = (np.nan, end) if kind == "previous" else (end, np.nan)
    if shape_of(x)[0] < minval:
        raise ValueError(f"x and y arrays must have at least {minval} entries")
    if kind in ("previous", "next") and isinstance(x, Traced):
        raise _refuse("interp1d", f"(kind '{kind}') with traced x")
    if holds_traced(fill_value):  # SciPy's setter, on traced values (not "extrapolate")
        pair = fill_value if isinstance(fill_value, tuple) and len(fill_value) == 2 else (fill_value, fill_value)
        target = (shape_of(self.y)[: self.axis] + shape_of(self.y)[self.axis + 1 :]) or (1,)
        self._fill_value_below, self._fill_value_above = (_broadcast_up_to(_array(v), target) for v in pair)
        self._extrapolate = False
        if self.bounds_error is None:
            self.bounds_error = True
        self._fill_value_orig = fill_value
    else:
        self.fill_value = fill_value  # SciPy's setter (shapes only)
    self._call = getattr(type(self), _scipy_call(self, kind, extrapolate))


def _scipy_call(self: Any, kind: str, extrapolate: bool) -> str:
    """The name of interp1d's evaluation method SciPy chooses for the kind."""
    if kind == "linear":
        plain = (np.dtype(np.float64), np.dtype(int))
        simple = self.x.dtype in plain and self.y.dtype in plain and len(shape_of(self.y)) == 1
        return "_call_linear_np" if simple and not extrapolate else "_call_linear"
    if kind in ("nearest", "nearest-up"):
        return "_call_nearest"
    return "_call_previousnext" if kind in ("previous", "next") else "_call_spline"


def _broadcast_up_to(a: Any, target: tuple) -> Any:
    """interp1d's fill value broadcast to the data's trailing shape, flattened."""
    shape = shape_of(a)
    if len(shape) > len(target) or any(f not in (1, t) for t, f in zip(target[::-1], shape[::-1])):
        raise ValueError(f"fill_value argument must be able to broadcast up to shape {target} but had shape {shape}")
    if int(np.prod(shape, dtype=np.int64)) != 1 and shape != target:
        a = np.broadcast_to(a, target)
    return np.reshape(a, (-1,))


def _interp1d_values(self: Any, xs: Any) -> Any:
    """interp1d's `_call` (the method SciPy chose) on the tape: values `(p, t)` at the flat points."""
    call, x, y = getattr(self._call, "__name__", ""), self.x, self._y
    n = shape_of(x)[0]
    if call == "_call_linear_np":  # SciPy delegates to np.interp
        return np.reshape(np.interp(xs, x, np.reshape(y, (-1,))), (-1, 1))
    if call == "_call_linear":
        hi = np.clip(np.searchsorted(x, xs), 1, n - 1)
        lo = np.subtract(hi, 1)
        x_lo, x_hi = gather(x, lo), gather(x, hi)
        y_lo, y_hi = gather(y, lo), gather(y, hi)
        slope = np.divide(np.subtract(y_hi, y_lo), np.reshape(np.subtract(x_hi, x_lo), (-1, 1)))
        return np.add(np.multiply(slope, np.reshape(np.subtract(xs, x_lo), (-1, 1))), y_lo)
    if call == "_call_nearest":
        return gather(y, np.clip(np.searchsorted(self.x_bds, xs, side=self._side), 0, n - 1))
    if call == "_call_previousnext":
        idx = np.clip(np.searchsorted(self._x_shift, xs, side=self._side), 1 - self._ind, n - self._ind)
        return gather(y, np.add(idx, self._ind - 1))
    if call == "_call_spline":
        return self._spline(xs)
    if call == "_call_nan_spline":  # data with NaN: NaN everywhere, as SciPy gives
        return np.multiply(self._spline(xs), np.nan)
    raise _refuse("interp1d.__call__", f"here (an evaluation method {call!r} the tape does not know)")


def interp1d_call(kept: Any, self: Any, x: Any) -> Any:
    traced_self = is_traced(getattr(self, "_y", None), getattr(self, "x", None))
    if not isinstance(self, _si().interp1d) or not (traced_self or holds_traced(x)):
        return kept(self, x)
    xs, x_shape = _points(x)
    y_new = _interp1d_values(self, xs)
    if not self._extrapolate:
        x = self.x
        below, above = np.less(xs, x[0]), np.greater(xs, x[-1])
        if self.bounds_error and _failures(below, "the check that no point is below the data (interp1d)"):
            raise ValueError("A value in x_new is below the interpolation range's minimum value.")
        if self.bounds_error and _failures(above, "the check that no point is above the data (interp1d)"):
            raise ValueError("A value in x_new is above the interpolation range's maximum value.")
        if shape_of(xs)[0] > 0:
            y_new = WHERE(np.reshape(below, (-1, 1)), self._fill_value_below, y_new)
            y_new = WHERE(np.reshape(above, (-1, 1)), self._fill_value_above, y_new)
    y_new = np.reshape(y_new, x_shape + self._y_extra_shape)
    if self._y_axis != 0 and x_shape != ():
        nx, ny = len(x_shape), len(self._y_extra_shape)
        order = list(range(nx, nx + self._y_axis)) + list(range(nx)) + list(range(nx + self._y_axis, nx + ny))
        y_new = np.transpose(y_new, order)
    return y_new


# -- RegularGridInterpolator ------------------------------------------------------------------------------
def rgi_init(
    kept: Any,
    self: Any,
    points: Any,
    values: Any,
    method: str = "linear",
    bounds_error: bool = True,
    fill_value: Any = np.nan,
    *,
    solver: Any = None,
    solver_args: Any = None,
) -> None:
    points = tuple(_array(p) for p in points)
    if any(isinstance(p, Traced) for p in points):
        raise _refuse("RegularGridInterpolator", "with traced grid points")
    if method not in self._ALL_METHODS:
        raise ValueError(f"Method '{method}' is not defined")
    if method not in ("linear", "nearest"):
        raise _refuse("RegularGridInterpolator", f"(method '{method}') with traced values")
    if solver is not None or solver_args:
        raise ValueError(f"{method =} does not accept the 'solver' argument.")
    values = _array(values)
    if values.dtype.kind not in "fc":
        values = values.astype(np.float64)
    self.method = method
    self._spline = None
    self.bounds_error = bounds_error
    grid, descending = [], []
    for i, p in enumerate(points):  # SciPy's _check_points: each axis ascending (or descending: flipped)
        p = np.asarray(p, dtype=float)
        if not np.all(p[1:] > p[:-1]):
            if not np.all(p[1:] < p[:-1]):
                raise ValueError(f"The points in dimension {i} must be strictly ascending or descending")
            descending.append(i)
            p = np.flip(p)
        grid.append(np.ascontiguousarray(p))
    if len(grid) > len(shape_of(values)):
        raise ValueError(f"There are {len(grid)} point arrays, but values has {len(shape_of(values))} dimensions")
    for i, p in enumerate(grid):
        if p.ndim != 1:
            raise ValueError(f"The points in dimension {i} must be 1-dimensional")
        if shape_of(values)[i] != len(p):
            raise ValueError(f"There are {len(p)} points and {shape_of(values)[i]} values in dimension {i}")
    self._descending_dimensions = tuple(descending)
    self.fill_value = self._check_fill_value(values, fill_value)
    if descending:
        values = np.flip(values, axis=tuple(descending))
    _put(self, grid=tuple(grid), values=values)


def _grid_points(xi: Any, ndim: int) -> Any:
    """SciPy's `_ndim_coords_from_arrays` on traced values."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        parts = np.broadcast_arrays(*[_inexact(p) for p in xi])
        return np.stack(parts, axis=-1)
    xi = _array(xi)
    if len(shape_of(xi)) == 1:
        xi = np.reshape(xi, (-1, ndim))
    return xi


def rgi_call(kept: Any, self: Any, xi: Any, method: Any = None, **kwargs: Any) -> Any:
    if not (is_traced(_get(self, "values")) or holds_traced(xi)):
        return kept(self, xi, method, **kwargs)
    method = self.method if method is None else method
    if method not in self._ALL_METHODS:
        raise ValueError(f"Method '{method}' is not defined")
    if method not in ("linear", "nearest"):
        raise _refuse("RegularGridInterpolator.__call__", f"(method '{method}') at traced points or on traced values")
    if kwargs.get("nu") is not None:
        raise ValueError(f"Can only compute derivatives for spline methods, got {method =}.")
    grid, values = _get(self, "grid"), _get(self, "values")
    ndim = len(grid)
    xi = _grid_points(xi, ndim)
    if shape_of(xi)[-1] != ndim:
        raise ValueError(
            f"The requested sample points xi have dimension {shape_of(xi)[-1]} but this "
            f"RegularGridInterpolator has dimension {ndim}"
        )
    xi_shape = shape_of(xi)
    xi = _inexact(np.reshape(xi, (-1, ndim)))
    nans = np.any(np.isnan(xi), axis=-1)
    columns = [xi[:, i] for i in range(ndim)]
    outside: Any = None
    for i, p in enumerate(columns):
        out_i = np.logical_or(np.less(p, grid[i][0]), np.greater(p, grid[i][-1]))
        outside = out_i if outside is None else np.logical_or(outside, out_i)
        if self.bounds_error and _failures(
            out_i, f"the check that no point is out of bounds in dimension {i} (RegularGridInterpolator)"
        ):
            raise ValueError(f"One of the requested xi is out of bounds in dimension {i}")
    indices, distances = [], []
    for g, p in zip(grid, columns):
        if g.shape[0] == 1:
            indices.append(np.full(shape_of(p), -1))
            distances.append(np.zeros(shape_of(p)))
            continue
        i = np.clip(np.subtract(np.searchsorted(g, p, side="right"), 1), 0, g.shape[0] - 2)
        low = gather(g, i)
        indices.append(i)
        distances.append(np.divide(np.subtract(p, low), np.subtract(gather(g, np.add(i, 1)), low)))
    if method == "nearest":
        result = _rgi_take(values, [WHERE(np.less_equal(d, 0.5), i, np.add(i, 1)) for i, d in zip(indices, distances)])
    else:
        result = _rgi_linear(values, indices, distances, ndim)
    trail = shape_of(values)[ndim:]
    mask_shape = (-1,) + (1,) * len(trail)
    if not self.bounds_error and self.fill_value is not None:
        result = WHERE(np.reshape(outside, mask_shape), self.fill_value, result)
    result = WHERE(np.reshape(nans, mask_shape), np.nan, result)
    return np.reshape(result, xi_shape[:-1] + trail)


def _rgi_take(values: Any, idx: list) -> Any:
    """values[i0, i1, ...] for index arrays (traced or plain; -1 for the first of a length-1 axis), the
    trailing dimensions kept: one gather at the flat index."""
    flat_index: Any = None
    shape = shape_of(values)
    for d, i in enumerate(idx):
        term = np.multiply(np.remainder(i, shape[d]), int(np.prod(shape[d + 1 : len(idx)], dtype=np.int64)))
        flat_index = term if flat_index is None else np.add(flat_index, term)
    flat = np.reshape(values, (int(np.prod(shape[: len(idx)], dtype=np.int64)), *shape[len(idx) :]))
    return gather(flat, flat_index)


def _rgi_linear(values: Any, indices: list, distances: list, ndim: int) -> Any:
    """SciPy's multilinear interpolation (the 2-D fast path's operations for 2-D values)."""
    trail = len(shape_of(values)) - ndim
    if ndim == 2 and trail == 0:
        (i0, i1), (y0, y1) = indices, distances
        u0, u1 = np.subtract(1, y0), np.subtract(1, y1)
        j0, j1 = np.add(i0, 1), np.add(i1, 1)
        result: Any = np.multiply(np.multiply(_rgi_take(values, [i0, i1]), u0), u1)
        result = np.add(result, np.multiply(np.multiply(_rgi_take(values, [i0, j1]), u0), y1))
        result = np.add(result, np.multiply(np.multiply(_rgi_take(values, [j0, i1]), y0), u1))
        return np.add(result, np.multiply(np.multiply(_rgi_take(values, [j0, j1]), y0), y1))
    result = None
    corners = [[(i, np.subtract(1, d)), (np.add(i, 1), d)] for i, d in zip(indices, distances)]
    for choice in np.ndindex(*([2] * ndim)):
        edge = [corners[d][c][0] for d, c in enumerate(choice)]
        weight: Any = np.ones(1)
        for d, c in enumerate(choice):
            weight = np.multiply(weight, corners[d][c][1])
        term = np.multiply(_rgi_take(values, edge), np.reshape(weight, (-1,) + (1,) * trail))
        result = term if result is None else np.add(result, term)
    return result


def interpn(
    kept: Any,
    points: Any,
    values: Any,
    xi: Any,
    method: str = "linear",
    bounds_error: bool = True,
    fill_value: Any = np.nan,
) -> Any:
    if method not in ("linear", "nearest"):
        raise _refuse("interpn", f"(method '{method}') at traced points or on traced values")
    rgi = _si().RegularGridInterpolator
    return rgi(points, values, method=method, bounds_error=bounds_error, fill_value=fill_value)(xi)


for _path, _rule, _always in (
    ("interp1d.__init__", interp1d_init, False),
    ("interp1d.__call__", interp1d_call, True),
    ("RegularGridInterpolator.__init__", rgi_init, False),
    ("RegularGridInterpolator.__call__", rgi_call, True),
    ("interpn", interpn, False),
):
    hook(_M, _path, always=_always)(lambda rule=_rule, always=_always: folding(rule, always))
