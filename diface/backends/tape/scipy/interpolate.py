"""The tape's rules for scipy.interpolate (reached through `numpy.hooks`): CubicSpline, CubicHermiteSpline,
PchipInterpolator, Akima1DInterpolator and PPoly; make_interp_spline and BSpline; splrep (s=0), splev,
splder, splantider, splint (interp1d and RegularGridInterpolator: `scipy.tables`).

SciPy's constructors turn their data into plain arrays, and their evaluations run in C. So each
constructor called with traced data (the values y, the breakpoints x, a derivative boundary condition)
runs here instead: it builds the same object (its class, its attributes) holding traced coefficients
computed with NumPy calls the tape records (`scipy.splines`: the spline's banded system solved by the
tape's banded solve), and each evaluation of an object holding traced values, or at traced points,
evaluates on the tape (`ppoly_eval`, `bspline_eval`: SciPy's interval search and polynomial, the same
operations). Objects built from plain data and evaluated at traced points, the common case of
tabulated data, take the same evaluation with constant coefficients. The values are SciPy's to
rounding; every interpolant is linear or piecewise polynomial in its data, so the derivatives are
exact, in the data, the points and (for the cubic interpolators and interp1d's linear and nearest
kinds) the breakpoints. A prepared call locates the points again (no guard); a check SciPy makes on
traced values (x increasing, points within bounds when it raises outside) is recorded as a guard, so
a replay where it fails raises `TapeMismatchError` rather than return another path's value.

Refused with `NotSupportedError` naming the call: traced knots of B-splines (make_interp_spline's x
and t, BSpline's t, splrep's x), splrep with smoothing (s > 0: FITPACK chooses the knots from y) or
given knots, periodic make_interp_spline, the roots of a traced piecewise polynomial (`solve`,
`roots`), `extend`, BPoly, and RegularGridInterpolator's spline methods on traced values.
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Any, cast

import numpy as np

from ...._errors import NotSupportedError
from ..data.graph import Traced
from ..data.sites import user_location
from ..numpy.hooks import hook
from ..prims.banded import BANDED_SOLVE
from ..prims.elementwise import WHERE
from ..prims.objects import holds_traced
from ..prims.prim import shape_of
from ..tracing.tracer import operand
from .splines import (
    akima_slopes,
    bspline_antiderivative,
    bspline_derivative,
    bspline_eval,
    colloc_band,
    constant,
    cubic_spline_slopes,
    folding,
    hermite_coefficients,
    is_traced,
    pchip_slopes,
    ppoly_antiderivative,
    ppoly_eval,
)

__all__: list[str] = []

_M = "scipy.interpolate"
#: NumPy's AxisError (in numpy.exceptions from NumPy 1.25 on)
_AXIS_ERROR: Any = getattr(np, "exceptions", np).AxisError


def _si() -> Any:
    return sys.modules[_M]


def _refuse(name: str, why: str) -> NotSupportedError:
    return NotSupportedError(
        f"AutoTape does not differentiate scipy.interpolate.{name} {why} (called with a traced array at "
        f"{user_location()}). Pass plain values there, or differentiate f with di.AutoFiniteDiff()."
    )


def _keep(a: Any, *args: Any, **kwargs: Any) -> Any:
    """The `_asarray` of an object holding traced values: its properties (`c`, `x`, `t`) return them."""
    return a if isinstance(a, Traced) else np.asarray(a, *args, **kwargs)


def _values(a: Any) -> np.ndarray:
    """The value of `a` seen while recording (no derivative flows through it)."""
    return np.asarray(cast(Any, a)._value()) if isinstance(a, Traced) else np.asarray(a)


def _failures(bad: Any, what: str) -> int:
    """How many points fail a check SciPy raises on (`bad` marks them); on traced values the count is
    a guard (a "check": a replay where some point fails raises `TapeMismatchError`)."""
    if isinstance(bad, Traced):
        return int(cast(Any, bad).observe("check", what, user_location()))
    return int(np.count_nonzero(bad))


def _array(a: Any) -> Any:
    """An argument as an array: traced where it may change between calls, else plain."""
    a = constant(operand(a))
    return a if isinstance(a, Traced) else np.asarray(a)


def _inexact(a: Any) -> Any:
    """`a` as float64 (complex128 if complex), traced or plain."""
    a = _array(a)
    want = np.complex128 if a.dtype.kind == "c" else np.float64
    return a if a.dtype == want else a.astype(want)


def _finish(out: Any, x_shape: tuple, trail: tuple, axis: int) -> Any:
    """Values `(p, t)` at the points shaped as SciPy returns them: x's shape, then the data's trailing
    shape, the interpolation axis moved back where it was."""
    out = np.reshape(out, x_shape + trail)
    if axis != 0:
        nd, x_ndim = len(x_shape) + len(trail), len(x_shape)
        order = list(range(nd))
        order = order[x_ndim : x_ndim + axis] + order[:x_ndim] + order[x_ndim + axis :]
        out = np.transpose(out, order)
    return out


def _points(x: Any) -> tuple[Any, tuple]:
    """Evaluation points as a flat float64 array, and their shape."""
    x = _array(x)
    if x.dtype != np.float64:
        x = x.astype(np.float64)
    return np.reshape(x, (-1,)), shape_of(x)


# -- PPoly and the cubic interpolators ------------------------------------------------------------------------
def _field(obj: Any, name: str) -> str:
    """The attribute holding `name` (SciPy 1.15 on: `_c` behind a property `c`; before: `c` itself)."""
    return f"_{name}" if isinstance(getattr(type(obj), name, None), property) else name


def _get(obj: Any, name: str) -> Any:
    return getattr(obj, _field(obj, name), None)


def _put(obj: Any, **values: Any) -> Any:
    """Set SciPy's fields of `obj` (and its `_asarray`, where SciPy has one, to `_keep`)."""
    for name, value in values.items():
        setattr(obj, _field(obj, name), value)
    if any(_field(obj, name) != name for name in values):
        obj._asarray = _keep
    return obj


def _set_ppoly(obj: Any, c: Any, x: Any, extrapolate: Any, axis: int) -> Any:
    obj.extrapolate, obj.axis = extrapolate, axis
    return _put(obj, c=c, x=x)


def _traced_ppoly(obj: Any) -> bool:
    return is_traced(_get(obj, "c"), _get(obj, "x"))


def _prepare(x: Any, y: Any, axis: int, name: str, dydx: Any = None) -> tuple:
    """SciPy's prepare_input for the cubic interpolators, on traced values."""
    x, y = _array(x), _array(y)
    if x.dtype.kind == "c":
        raise ValueError("`x` must contain real values.")
    x = x if x.dtype == np.float64 else x.astype(np.float64)
    complex_ = y.dtype.kind == "c"
    if dydx is not None:
        dydx = _array(dydx)
        if shape_of(y) != shape_of(dydx):
            raise ValueError("The shapes of `y` and `dydx` must be identical.")
        complex_ = complex_ or dydx.dtype.kind == "c"
    dtype = np.complex128 if complex_ else np.float64
    y = y if y.dtype == dtype else y.astype(dtype)
    if dydx is not None and dydx.dtype != dtype:
        dydx = dydx.astype(dtype)
    axis = axis % len(shape_of(y))
    if len(shape_of(x)) != 1:
        raise ValueError("`x` must be 1-dimensional.")
    if shape_of(x)[0] < 2:
        raise ValueError("`x` must contain at least 2 elements.")
    if shape_of(x)[0] != shape_of(y)[axis]:
        raise ValueError(f"The length of `y` along `axis`={axis} doesn't match the length of `x`")
    for a, label in ((x, "x"), (y, "y"), (dydx, "dydx")):
        if a is not None and not np.all(np.isfinite(_values(a))):
            raise ValueError(f"`{label}` must contain only finite values.")
    dx = np.diff(x)
    if _failures(np.less_equal(dx, 0.0), f"the check that x is increasing ({name})"):
        raise ValueError("`x` must be strictly increasing sequence.")
    y = np.moveaxis(y, axis, 0)
    if dydx is not None:
        dydx = np.moveaxis(dydx, axis, 0)
    return x, dx, y, axis, dydx


def _hermite(obj: Any, x: Any, dx: Any, y: Any, dydx: Any, axis: int, extrapolate: Any) -> None:
    if extrapolate is None:
        extrapolate = True
    elif extrapolate != "periodic":
        extrapolate = bool(extrapolate)
    _set_ppoly(obj, hermite_coefficients(dx, y, dydx), x, extrapolate, 0)
    obj.axis = axis


def hermite_init(kept: Any, self: Any, x: Any, y: Any, dydx: Any, axis: int = 0, extrapolate: Any = None) -> None:
    x, dx, y, axis, dydx = _prepare(x, y, axis, "CubicHermiteSpline", dydx)
    _hermite(self, x, dx, y, dydx, axis, extrapolate)


def pchip_init(kept: Any, self: Any, x: Any, y: Any, axis: int = 0, extrapolate: Any = None) -> None:
    x, dx, y, axis, _ = _prepare(x, y, axis, "PchipInterpolator")
    if y.dtype.kind == "c":
        raise ValueError("`PchipInterpolator` only works with real values for `y`.")
    _hermite(self, x, dx, y, pchip_slopes(x, y), axis, extrapolate)


def akima_init(
    kept: Any, self: Any, x: Any, y: Any, axis: int = 0, *, method: str = "akima", extrapolate: Any = None
) -> None:
    if method not in {"akima", "makima"}:
        raise NotImplementedError(f"`method`={method} is unsupported.")
    x, dx, y, axis, _ = _prepare(x, y, axis, "Akima1DInterpolator")
    if y.dtype.kind == "c":
        raise ValueError("`Akima1DInterpolator` only works with real values for `y`.")
    _hermite(self, x, dx, y, akima_slopes(x, dx, y, method), axis, False if extrapolate is None else extrapolate)


def _validate_bc(bc_type: Any, y: Any, expected: tuple, axis: int) -> tuple[list, Any]:
    """CubicSpline's boundary conditions, as SciPy validates them (values may be traced)."""
    if isinstance(bc_type, str):
        if bc_type == "periodic":
            apart = np.greater(np.abs(np.subtract(y[0], y[-1])), np.add(1e-15, np.multiply(1e-15, np.abs(y[-1]))))
            if _failures(apart, "the check that y[0] == y[-1] (CubicSpline, bc_type='periodic')"):
                raise ValueError(
                    f"The first and last `y` point along axis {axis} must be identical (within machine "
                    "precision) when bc_type='periodic'."
                )
        bc_type = (bc_type, bc_type)
    else:
        if len(bc_type) != 2:
            raise ValueError("`bc_type` must contain 2 elements to specify start and end conditions.")
        if any(isinstance(b, str) and b == "periodic" for b in bc_type):
            raise ValueError(
                "'periodic' `bc_type` is defined for both curve ends and cannot be used with other boundary conditions."
            )
    validated: list = []
    for bc in bc_type:
        if isinstance(bc, str):
            if bc == "clamped":
                validated.append((1, np.zeros(expected)))
            elif bc == "natural":
                validated.append((2, np.zeros(expected)))
            elif bc in ("not-a-knot", "periodic"):
                validated.append(bc)
            else:
                raise ValueError(f"bc_type={bc} is not allowed.")
            continue
        try:
            order, value = bc
        except Exception as e:
            raise ValueError("A specified derivative value must be given in the form (order, value).") from e
        if order not in (1, 2):
            raise ValueError("The specified derivative order must be 1 or 2.")
        value = _array(value)
        if shape_of(value) != expected:
            raise ValueError(f"`deriv_value` shape {shape_of(value)} is not the expected one {expected}.")
        if value.dtype.kind == "c" and y.dtype.kind != "c":
            y = y.astype(np.complex128)
        validated.append((order, value))
    return validated, y


def cubic_spline_init(
    kept: Any, self: Any, x: Any, y: Any, axis: int = 0, bc_type: Any = "not-a-knot", extrapolate: Any = None
) -> None:
    x, dx, y, axis, _ = _prepare(x, y, axis, "CubicSpline")
    bc, y = _validate_bc(bc_type, y, shape_of(y)[1:], axis)
    if extrapolate is None:
        extrapolate = "periodic" if bc[0] == "periodic" else True
    if int(np.prod(shape_of(y))) == 0:
        s: Any = np.zeros(shape_of(y))
    else:
        s = cubic_spline_slopes(x, dx, y, bc)
    _hermite(self, x, dx, y, s, axis, extrapolate)


def ppoly_init(kept: Any, self: Any, c: Any, x: Any, extrapolate: Any = None, axis: int = 0) -> None:
    if not isinstance(self, _si().PPoly):
        raise _refuse(type(self).__name__, "(a polynomial in the Bernstein basis) with traced coefficients")
    c, x = _inexact(c), _array(x)
    x = x if x.dtype == np.float64 else x.astype(np.float64)
    if extrapolate is None:
        extrapolate = True
    elif extrapolate != "periodic":
        extrapolate = bool(extrapolate)
    nd = len(shape_of(c))
    if nd < 2:
        raise ValueError("Coefficients array must be at least 2-dimensional.")
    if not (0 <= axis < nd - 1):
        raise ValueError(f"axis={axis} must be between 0 and {nd - 1}")
    if axis != 0:
        c = np.moveaxis(np.moveaxis(c, axis + 1, 0), axis + 1, 0)
    if len(shape_of(x)) != 1:
        raise ValueError("x must be 1-dimensional")
    if shape_of(x)[0] < 2:
        raise ValueError("at least 2 breakpoints are needed")
    if shape_of(c)[0] == 0:
        raise ValueError("polynomial must be at least of order 0")
    if shape_of(c)[1] != shape_of(x)[0] - 1:
        raise ValueError("number of coefficients != len(x)-1")
    dx = np.diff(_values(x))
    if not (np.all(dx >= 0) or np.all(dx <= 0)):
        raise ValueError("`x` must be strictly increasing or decreasing.")
    if not np.all(dx >= 0):
        raise _refuse("PPoly", "with breakpoints in decreasing order")
    if isinstance(x, Traced):
        _failures(np.less(np.diff(cast(Any, x)), 0.0), "the check that x is increasing (PPoly)")
    _set_ppoly(self, c, x, extrapolate, axis)


def _ascending(obj: Any, name: str) -> None:
    x = _values(_get(obj, "x"))
    if x.shape[0] > 1 and x[-1] < x[0]:
        raise _refuse(name, "with breakpoints in decreasing order")


def ppoly_call(kept: Any, self: Any, x: Any, nu: int = 0, extrapolate: Any = None) -> Any:
    if not (_traced_ppoly(self) or holds_traced(x)):
        return kept(self, x, nu, extrapolate)
    if not isinstance(self, _si().PPoly):
        raise _refuse(f"{type(self).__name__}.__call__", "(a polynomial in the Bernstein basis)")
    _ascending(self, f"{type(self).__name__}.__call__")
    if extrapolate is None:
        extrapolate = self.extrapolate
    xs, x_shape = _points(x)
    c = _get(self, "c")
    k, m = shape_of(c)[:2]
    out = ppoly_eval(np.reshape(c, (k, m, -1)), _get(self, "x"), xs, nu, extrapolate)
    return _finish(out, x_shape, shape_of(c)[2:], self.axis)


def ppoly_derivative(kept: Any, self: Any, nu: int = 1) -> Any:
    if not _traced_ppoly(self):
        return kept(self, nu)
    if nu < 0:
        return ppoly_antiderivative_rule(None, self, -nu)
    c = _get(self, "c")
    c2 = c if nu == 0 else c[:-nu]
    if shape_of(c2)[0] == 0:
        c2 = np.zeros((1, *shape_of(c2)[1:]), dtype=c2.dtype)
    factor = sys.modules["scipy.special"].poch(np.arange(shape_of(c2)[0], 0, -1), nu)
    c2 = np.multiply(c2, np.reshape(factor, (-1,) + (1,) * (len(shape_of(c2)) - 1)))
    return _set_ppoly(object.__new__(type(self)), c2, _get(self, "x"), self.extrapolate, self.axis)


def ppoly_antiderivative_rule(kept: Any, self: Any, nu: int = 1) -> Any:
    if not _traced_ppoly(self):
        return kept(self, nu)
    if nu <= 0:
        return ppoly_derivative(None, self, -nu)
    _ascending(self, f"{type(self).__name__}.antiderivative")
    c = _get(self, "c")
    k, m = shape_of(c)[:2]
    c3 = np.reshape(c, (k, m, -1))
    for _ in range(nu):
        c3 = ppoly_antiderivative(c3, _get(self, "x"))
    extrapolate = False if self.extrapolate == "periodic" else self.extrapolate
    c2 = np.reshape(c3, (k + nu, m, *shape_of(c)[2:]))
    return _set_ppoly(object.__new__(type(self)), c2, _get(self, "x"), extrapolate, self.axis)


def _ends(a: Any, b: Any) -> Any:
    return np.stack([_inexact(a), _inexact(b)]).astype(np.float64)


def ppoly_integrate(kept: Any, self: Any, a: Any, b: Any, extrapolate: Any = None) -> Any:
    if not (_traced_ppoly(self) or holds_traced(a) or holds_traced(b)):
        return kept(self, a, b, extrapolate)
    _ascending(self, f"{type(self).__name__}.integrate")
    if extrapolate is None:
        extrapolate = self.extrapolate
    c, x = _get(self, "c"), _get(self, "x")
    k, m = shape_of(c)[:2]
    anti = ppoly_antiderivative(np.reshape(c, (k, m, -1)), x)
    ends = _ends(a, b)
    if extrapolate == "periodic":
        start, period = x[0], np.subtract(x[-1], x[0])
        whole = ppoly_eval(anti, x, np.reshape(x[-1], (1,)), 0, True)[0]
        turns = np.floor(np.divide(np.subtract(ends, start), period))
        inside = ppoly_eval(anti, x, np.add(start, np.remainder(np.subtract(ends, start), period)), 0, True)
        vals = np.add(np.multiply(np.reshape(turns, (2, 1)), whole), inside)
    else:
        vals = ppoly_eval(anti, x, ends, 0, extrapolate)
    return np.reshape(np.subtract(vals[1], vals[0]), shape_of(c)[2:])


def ppoly_solve(kept: Any, self: Any, *args: Any, **kwargs: Any) -> Any:
    if _traced_ppoly(self) or holds_traced(args) or holds_traced(list(kwargs.values())):
        raise _refuse(f"{type(self).__name__}.solve", "(the roots of a piecewise polynomial of traced values)")
    return kept(self, *args, **kwargs)


def ppoly_extend(kept: Any, self: Any, c: Any, x: Any, *args: Any) -> Any:
    if _traced_ppoly(self) or holds_traced(c) or holds_traced(x):
        raise _refuse(f"{type(self).__name__}.extend", "(with traced coefficients or breakpoints)")
    return kept(self, c, x, *args)


def ppoly_from_spline(kept: Any, cls: Any, tck: Any, extrapolate: Any = None) -> Any:
    if isinstance(tck, _si().BSpline):
        t, c, k = _get(tck, "t"), _get(tck, "c"), tck.k
        if extrapolate is None:
            extrapolate = tck.extrapolate
    else:
        t, c, k = tck
    if not (is_traced(t, c) or holds_traced(c)):
        return kept(cls, tck, extrapolate)
    t, c = _plain_knots(t, "PPoly.from_spline"), _inexact(c)
    n = t.shape[0] - k - 1
    if len(shape_of(c)) != 1 or shape_of(c)[0] < n:
        raise ValueError("PPoly.from_spline takes a spline of 1-D coefficients, at least len(t) - k - 1 of them")
    _check_ends(t, k, "PPoly.from_spline")
    c2 = np.reshape(c[:n], (n, 1))
    rows = [
        np.divide(bspline_eval(t, c2, k, t[:-1], m, True)[:, 0], float(math.factorial(m))) for m in range(k, -1, -1)
    ]
    return _set_ppoly(object.__new__(cls), np.stack(rows), t, True if extrapolate is None else extrapolate, 0)


# -- B-splines ----------------------------------------------------------------------------------------------
def _set_bspline(obj: Any, t: np.ndarray, c: Any, k: int, extrapolate: Any, axis: int) -> Any:
    obj.k, obj.extrapolate, obj.axis = k, extrapolate, axis
    return _put(obj, t=t, c=c)


def _plain_knots(t: Any, name: str) -> np.ndarray:
    t = _array(t)
    if isinstance(t, Traced):
        raise _refuse(name, "with a traced knot vector t (the B-spline basis is not differentiated in its knots)")
    return np.ascontiguousarray(t, dtype=np.float64)


def bspline_init(kept: Any, self: Any, t: Any, c: Any, k: Any, extrapolate: Any = True, axis: int = 0) -> None:
    t = _plain_knots(t, "BSpline")
    k = operator.index(k)
    c = _array(c)
    extrapolate = extrapolate if extrapolate == "periodic" else bool(extrapolate)
    n = t.shape[0] - k - 1
    nd = len(shape_of(c))
    if not -nd <= axis < nd:
        raise _AXIS_ERROR(axis, nd)
    axis %= nd
    if axis != 0:
        c = np.moveaxis(c, axis, 0)
    if k < 0:
        raise ValueError("Spline order cannot be negative.")
    if t.ndim != 1:
        raise ValueError("Knot vector must be one-dimensional.")
    if n < k + 1:
        raise ValueError(f"Need at least {2 * k + 2} knots for degree {k}")
    if (np.diff(t) < 0).any():
        raise ValueError("Knots must be in a non-decreasing order.")
    if len(np.unique(t[k : n + 1])) < 2:
        raise ValueError("Need at least two internal knots.")
    if not np.isfinite(t).all():
        raise ValueError("Knots should not have nans or infs.")
    if nd < 1:
        raise ValueError("Coefficients must be at least 1-dimensional.")
    if shape_of(c)[0] < n:
        raise ValueError("Knots, coefficients and degree are inconsistent.")
    _set_bspline(self, t, _inexact(c), k, extrapolate, axis)


def _traced_bspline(obj: Any) -> bool:
    return is_traced(_get(obj, "c"))


def _check_ends(t: np.ndarray, k: int, name: str) -> None:
    """The first and last intervals must not be empty (the evaluation assumes it, as SciPy's search)."""
    n = t.shape[0] - k - 1
    if not (t[k] < t[k + 1] and t[n - 1] < t[n]):
        raise _refuse(name, "with repeated knots at the ends of the base interval")


def bspline_call(kept: Any, self: Any, x: Any, nu: int = 0, extrapolate: Any = None) -> Any:
    if not (_traced_bspline(self) or holds_traced(x)):
        return kept(self, x, nu, extrapolate)
    _check_ends(_get(self, "t"), self.k, "BSpline.__call__")
    if extrapolate is None:
        extrapolate = self.extrapolate
    xs, x_shape = _points(x)
    c = _get(self, "c")
    out = bspline_eval(_get(self, "t"), np.reshape(c, (shape_of(c)[0], -1)), self.k, xs, nu, extrapolate)
    return _finish(out, x_shape, shape_of(c)[1:], self.axis)


def _padded(t: np.ndarray, c: Any) -> Any:
    ct = t.shape[0] - shape_of(c)[0]
    return np.concatenate([c, np.zeros((ct, *shape_of(c)[1:]))], axis=0) if ct > 0 else c


def bspline_derivative_rule(kept: Any, self: Any, nu: int = 1) -> Any:
    if not _traced_bspline(self):
        return kept(self, nu)
    if nu < 0:
        return bspline_antiderivative_rule(None, self, -nu)
    if nu > self.k:
        raise ValueError(f"Order of derivative (n = {nu!r}) must be <= order of spline (k = {self.k!r})")
    t, c, k = bspline_derivative(_get(self, "t"), _padded(_get(self, "t"), _get(self, "c")), self.k, nu)
    return _set_bspline(object.__new__(type(self)), t, c, k, self.extrapolate, self.axis)


def bspline_antiderivative_rule(kept: Any, self: Any, nu: int = 1) -> Any:
    if not _traced_bspline(self):
        return kept(self, nu)
    if nu < 0:
        return bspline_derivative_rule(None, self, -nu)
    t, c, k = bspline_antiderivative(_get(self, "t"), _padded(_get(self, "t"), _get(self, "c")), self.k, nu)
    extrapolate = False if self.extrapolate == "periodic" else self.extrapolate
    return _set_bspline(object.__new__(type(self)), t, c, k, extrapolate, self.axis)


def _spline_integral(t: np.ndarray, c: Any, k: int, a: Any, b: Any, extrapolate: Any) -> Any:
    """∫_a^b of the spline (t, c, k), c `(nc, ...)`: the antiderivative's difference, shape c's trailing."""
    n = t.shape[0] - k - 1
    ends = _ends(a, b)
    if extrapolate != "periodic" and not extrapolate:
        ends = np.clip(ends, t[k], t[n])
    ta, ca, ka = bspline_antiderivative(t, _padded(t, c), k, 1)
    flat = np.reshape(ca, (shape_of(ca)[0], -1))
    if extrapolate == "periodic":
        start, period = t[k], t[n] - t[k]
        whole = bspline_eval(ta, flat, ka, np.array([t[k], t[n]]), 0, True)
        whole = np.subtract(whole[1], whole[0])
        turns = np.floor(np.divide(np.subtract(ends, start), period))
        inside = bspline_eval(ta, flat, ka, np.add(start, np.remainder(np.subtract(ends, start), period)), 0, True)
        vals = np.add(np.multiply(np.reshape(turns, (2, 1)), whole), inside)
    else:
        vals = bspline_eval(ta, flat, ka, ends, 0, extrapolate)
    return np.reshape(np.subtract(vals[1], vals[0]), shape_of(ca)[1:])


def bspline_integrate(kept: Any, self: Any, a: Any, b: Any, extrapolate: Any = None) -> Any:
    if not (_traced_bspline(self) or holds_traced(a) or holds_traced(b)):
        return kept(self, a, b, extrapolate)
    if extrapolate is None:
        extrapolate = self.extrapolate
    return _spline_integral(_get(self, "t"), _get(self, "c"), self.k, a, b, extrapolate)


def make_interp_spline(
    kept: Any,
    x: Any,
    y: Any,
    k: int = 3,
    t: Any = None,
    bc_type: Any = None,
    axis: int = 0,
    check_finite: bool = True,
) -> Any:
    x = _array(x)
    if isinstance(x, Traced):
        raise _refuse("make_interp_spline", "with traced x (its knots are placed at x)")
    if t is not None:
        t = _plain_knots(t, "make_interp_spline")
    if bc_type == "periodic":
        raise _refuse("make_interp_spline", "with bc_type='periodic' and traced values")
    if bc_type is None or bc_type == "not-a-knot":
        deriv_l: Any = None
        deriv_r: Any = None
    elif isinstance(bc_type, str):
        deriv_l, deriv_r = bc_type, bc_type
    else:
        try:
            deriv_l, deriv_r = bc_type
        except TypeError as e:
            raise ValueError(f"Unknown boundary condition: {bc_type}") from e
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = _inexact(y)
    if check_finite and not (np.isfinite(x).all() and np.isfinite(_values(y)).all()):
        raise ValueError("Array must not contain infs or nans.")
    nd = len(shape_of(y))
    if not -nd <= axis < nd:
        raise _AXIS_ERROR(axis, nd)
    axis %= nd
    y = np.moveaxis(y, axis, 0)
    if x.size != shape_of(y)[0]:
        raise ValueError(f"Shapes of x {x.shape} and y {shape_of(y)} are incompatible")
    if np.any(x[1:] == x[:-1]):
        raise ValueError("Expect x to not have duplicates")
    if x.ndim != 1 or np.any(x[1:] < x[:-1]):
        raise ValueError("Expect x to be a 1D strictly increasing sequence.")
    bspline = _si().BSpline
    if k == 0:
        if any(v is not None for v in (t, deriv_l, deriv_r)):
            raise ValueError("Too much info for k=0: t and bc_type can only be None.")
        return _set_bspline(object.__new__(bspline), np.r_[x, x[-1]], y, 0, True, axis)
    if k == 1 and t is None:
        if not (deriv_l is None and deriv_r is None):
            raise ValueError("Too much info for k=1: bc_type can only be None.")
        return _set_bspline(object.__new__(bspline), np.r_[x[0], x, x[-1]], y, 1, True, axis)
    k = operator.index(k)
    if t is None:
        t = _not_a_knot(x, k) if deriv_l is None and deriv_r is None else np.r_[(x[0],) * k, x, (x[-1],) * k]
    if k < 0:
        raise ValueError("Expect non-negative k.")
    if t.ndim != 1 or np.any(t[1:] < t[:-1]):
        raise ValueError("Expect t to be a 1-D sorted array_like.")
    if t.size < x.size + k + 1:
        raise ValueError(f"Got {t.size} knots, need at least {x.size + k + 1}.")
    if (x[0] < t[k]) or (x[-1] > t[-k]):
        raise ValueError(f"Out of bounds w/ x = {x}.")
    trail = shape_of(y)[1:]
    left, left_vals = _derivatives(deriv_l, trail)
    right, right_vals = _derivatives(deriv_r, trail)
    if not all(0 <= i <= k for i in left):
        raise ValueError(f"Bad boundary conditions at {x[0]}.")
    if not all(0 <= i <= k for i in right):
        raise ValueError(f"Bad boundary conditions at {x[-1]}.")
    n, nt = x.size, t.size - k - 1
    if nt - n != len(left) + len(right):
        raise ValueError(
            f"The number of derivatives at boundaries does not match: expected {nt - n}, got {len(left)}+{len(right)}"
        )
    _check_ends(t, k, "make_interp_spline")
    width = int(np.prod(trail, dtype=np.int64))
    rhs = np.concatenate([np.reshape(v, (-1, width)) for v in (*left_vals, y, *right_vals)], axis=0)
    c = BANDED_SOLVE(colloc_band(x, t, k, left, right), rhs, lower=k, upper=k)
    return _set_bspline(object.__new__(bspline), t, np.reshape(c, (nt, *trail)), k, True, axis)


def _not_a_knot(x: np.ndarray, k: int) -> np.ndarray:
    """make_interp_spline's knots for the not-a-knot condition (SciPy's `_not_a_knot`)."""
    if k % 2 == 1:
        k2, t = (k + 1) // 2, x.copy()
    else:
        k2, t = k // 2, (x[1:] + x[:-1]) / 2
    return np.r_[(x[0],) * (k + 1), t[k2:-k2], (x[-1],) * (k + 1)]


def _derivatives(deriv: Any, trail: tuple) -> tuple[list, list]:
    """make_interp_spline's boundary derivatives: (orders, values), the values possibly traced."""
    if isinstance(deriv, str):
        if deriv == "clamped":
            deriv = [(1, np.zeros(trail))]
        elif deriv == "natural":
            deriv = [(2, np.zeros(trail))]
        else:
            raise ValueError(f"Unknown boundary condition : {deriv}")
    if deriv is None:
        return [], []
    try:
        orders, values = zip(*deriv)
    except TypeError as e:
        raise ValueError(
            "Derivatives, `bc_type`, should be specified as a pair of iterables of pairs of (order, value)."
        ) from e
    return [int(o) for o in orders], [_inexact(v) for v in values]


# -- FITPACK's functional interface ---------------------------------------------------------------------------
def splrep(
    kept: Any,
    x: Any,
    y: Any,
    w: Any = None,
    xb: Any = None,
    xe: Any = None,
    k: int = 3,
    task: int = 0,
    s: Any = None,
    t: Any = None,
    full_output: int = 0,
    per: int = 0,
    quiet: int = 1,
) -> Any:
    x, w, xb, xe, t, s = (None if v is None else _array(v) for v in (x, w, xb, xe, t, s))
    for value, label in ((x, "x"), (w, "weights w"), (xb, "xb"), (xe, "xe"), (t, "knots t"), (s, "s")):
        if isinstance(value, Traced):
            raise _refuse("splrep", f"with traced {label}")
    if s is None:
        s = 0.0 if w is None else None  # SciPy's default with weights: m - sqrt(2 m), a smoothing spline
    if s is None or s != 0:
        raise _refuse("splrep", "with s > 0 (a smoothing spline: FITPACK chooses its knots from y)")
    if task != 0 or t is not None:
        raise _refuse("splrep", "with given knots (task=-1) or task=1")
    if per:
        raise _refuse("splrep", "with per=1")
    if full_output:
        raise _refuse("splrep", "with full_output")
    y = _inexact(y)
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    t0, _, k0 = kept(x, _values(y), w, xb, xe, k, task, 0.0, None, 0, 0, quiet)  # FITPACK's knots for s=0
    nt = t0.shape[0] - k0 - 1
    if nt != x.shape[0] or len(shape_of(y)) != 1:
        raise _refuse("splrep", "here (FITPACK did not interpolate the data)")
    _check_ends(t0, k0, "splrep")
    c = BANDED_SOLVE(colloc_band(x, t0, k0, [], []), np.reshape(y, (-1, 1)), lower=k0, upper=k0)
    return t0, np.concatenate([np.reshape(c, (-1,)), np.zeros(k0 + 1)]), k0


def _tck(tck: Any, name: str) -> tuple:
    t, c, k = tck
    return _plain_knots(t, name), c, operator.index(k)


def _parametric(c: Any) -> bool:
    return isinstance(c, (list, tuple)) and len(c) > 0 and not np.isscalar(c[0])


def splev(kept: Any, x: Any, tck: Any, der: int = 0, ext: int = 0) -> Any:
    if isinstance(tck, _si().BSpline):
        if len(shape_of(_get(tck, "c"))) > 1:
            raise ValueError(
                "Calling splev() with BSpline objects with c.ndim > 1 is not allowed. Use BSpline.__call__(x) instead."
            )
        if ext != 0:
            raise ValueError(f"Extrapolation mode {ext} is not supported by BSpline.")
        return tck(x, der, extrapolate=True)
    t, c, k = _tck(tck, "splev")
    if _parametric(c):
        return [splev(None, x, (t, ci, k), der, ext) for ci in c]
    if not (0 <= der <= k):
        raise ValueError(f"0<=der={der}<=k={k} must hold")
    if ext not in (0, 1, 2, 3):
        raise ValueError(f"ext = {ext} not in (0, 1, 2, 3) ")
    _check_ends(t, k, "splev")
    xs, shape = _points(x)
    n = t.shape[0] - k - 1
    lo, hi = t[k], t[n]
    outside = np.logical_or(np.less(xs, lo), np.greater(xs, hi))
    if ext == 2 and _failures(outside, "the check that no point is outside the spline's domain (splev, ext=2)"):
        raise ValueError("Found x value not in the domain")
    if ext == 3 and der == 0:  # (FITPACK extrapolates derivatives with ext=3)
        xs = np.clip(xs, lo, hi)
    c1 = np.reshape(_inexact(c)[:n], (n, 1))
    r = bspline_eval(t, c1, k, xs, der, True)[:, 0]
    if ext == 1:
        r = WHERE(outside, 0.0, r)
    return np.reshape(r, shape)


def splint(kept: Any, a: Any, b: Any, tck: Any, full_output: int = 0) -> Any:
    if isinstance(tck, _si().BSpline):
        return kept(a, b, tck, full_output)  # BSpline.integrate, hooked
    t, c, k = _tck(tck, "splint")
    if _parametric(c):
        return [splint(None, a, b, (t, ci, k)) for ci in c]
    if full_output:
        raise _refuse("splint", "with full_output")
    return _spline_integral(t, _inexact(c), k, a, b, False)


def splder(kept: Any, tck: Any, n: int = 1) -> Any:
    if isinstance(tck, _si().BSpline):
        return kept(tck, n)
    t, c, k = _tck(tck, "splder")
    if n < 0:
        return splantider(None, (t, c, k), -n)
    if n > k:
        raise ValueError(f"Order of derivative (n = {n!r}) must be <= order of spline (k = {k!r})")
    return bspline_derivative(t, _inexact(c), k, n)


def splantider(kept: Any, tck: Any, n: int = 1) -> Any:
    if isinstance(tck, _si().BSpline):
        return kept(tck, n)
    t, c, k = _tck(tck, "splantider")
    if n < 0:
        return splder(None, (t, c, k), -n)
    return bspline_antiderivative(t, _inexact(c), k, n)


# -- registrations -------------------------------------------------------------------------------------------
for _path, _rule, _always in (
    ("PPoly.__init__", ppoly_init, False),
    ("PPoly.__call__", ppoly_call, True),
    ("PPoly.derivative", ppoly_derivative, True),
    ("PPoly.antiderivative", ppoly_antiderivative_rule, True),
    ("PPoly.integrate", ppoly_integrate, True),
    ("PPoly.solve", ppoly_solve, True),
    ("PPoly.extend", ppoly_extend, True),
    ("PPoly.from_spline.__func__", ppoly_from_spline, True),
    ("CubicHermiteSpline.__init__", hermite_init, False),
    ("PchipInterpolator.__init__", pchip_init, False),
    ("Akima1DInterpolator.__init__", akima_init, False),
    ("CubicSpline.__init__", cubic_spline_init, False),
    ("BSpline.__init__", bspline_init, False),
    ("BSpline.__call__", bspline_call, True),
    ("BSpline.derivative", bspline_derivative_rule, True),
    ("BSpline.antiderivative", bspline_antiderivative_rule, True),
    ("BSpline.integrate", bspline_integrate, True),
    ("make_interp_spline", make_interp_spline, False),
    ("splrep", splrep, False),
    ("splev", splev, False),
    ("splint", splint, False),
    ("splder", splder, False),
    ("splantider", splantider, False),
):
    hook(_M, _path, always=_always)(lambda rule=_rule, always=_always: folding(rule, always))
