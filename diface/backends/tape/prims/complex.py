"""The operations that are not complex-differentiable: conj, real, imag, abs and angle of complex values.

Each is R-linear or real-valued, so its derivative is not a complex number times the tangent; its rules
take complex values as they are (`Prim.complex` = OWN). Forward mode gives the R-linear derivative
(conj: conj(t); real: Re t; imag: Im t; abs: Re(conj(z) t) / |z|; angle: Im(conj(z) t) / |z|^2), and
reverse mode its adjoint under the real inner product Re <u, v> (real: the cotangent as complex; imag:
i times it; abs: g z / |z|; angle: g i z / |z|^2; conj: conj(g)). The rules are written with NumPy
calls that record on traced values, so second order differentiates them again. abs and angle take the
derivative 0 at z = 0, as PyTorch and JAX do for abs.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from . import patterns
from .prim import OWN, PROMOTE, Prim, dtype_of, into

__all__ = ["ABS", "ANGLE", "CONJ", "IMAG", "REAL", "complex_ufunc"]


class _Op(Prim):
    """An elementwise operation on one complex input (its rules' own treatment of complex values)."""

    elementwise = True
    complex = OWN
    promotes = False


class _Conj(_Op):
    name = "conjugate"
    linear = True
    sparsity = staticmethod(patterns.same)
    inplace = True

    def label(self) -> str:
        return "numpy.conjugate"

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), False

    def forward(self, a: Any, out: Any = None) -> Any:
        return np.conjugate(a, out=out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        return self.apply(ts[0], out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        return self.apply(g, out=out)


class _Real(_Op):
    name = "real"
    linear = True
    sparsity = staticmethod(patterns.same)

    def label(self) -> str:
        return "numpy.real"

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), False

    def forward(self, a: Any, out: Any = None) -> Any:
        return np.array(np.real(a)) if out is None else into(out, np.real(a))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        return self.apply(ts[0], out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        return PROMOTE.apply(g, out=out, dtype=dtype_of(ins[0]))


class _Imag(_Op):
    name = "imag"
    linear = True
    sparsity = staticmethod(patterns.same)

    def label(self) -> str:
        return "numpy.imag"

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), False

    def forward(self, a: Any, out: Any = None) -> Any:
        return np.array(np.imag(a)) if out is None else into(out, np.imag(a))

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        return self.apply(ts[0], out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        # i g: Re(conj(i g) t) = g Im t; a real g times 1j records a promotion first (second order)
        return np.multiply(g, 1j, out=out)


def _nonzero(r: Any) -> Any:
    """`r` with its zeros replaced by 1 (a divisor whose numerator is 0 there)."""
    return np.where(np.equal(r, 0), 1.0, r)


class _Abs(_Op):
    """|z| of complex z (real z goes through the ufunc's own rule, sign(x))."""

    name = "absolute"
    sparsity = staticmethod(patterns.nonlinear)

    def label(self) -> str:
        return "numpy.abs"

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return {0}, True

    def forward(self, a: Any, out: Any = None) -> Any:
        return np.absolute(a, out=out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        ct = np.multiply(np.conjugate(ins[0]), ts[0])
        return np.divide(np.real(ct), _nonzero(y), out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        return np.multiply(g, np.divide(ins[0], _nonzero(y)), out=out)

    def vjp_step(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any, params: dict) -> Any:
        if b:
            return super().vjp_step(i, ins, y, g, b, out, params)
        # prepared: g / |z| on the real array (0 where z = 0), then times z: no temporaries per call
        return partial(_abs_vjp, ins[0], y, g, np.empty(y.shape, bool), np.empty(y.shape, y.dtype), out)


def _abs_vjp(z: Any, y: Any, g: Any, nonzero: Any, ratio: Any, out: Any) -> None:
    np.not_equal(y, 0, out=nonzero)
    ratio.fill(0)
    np.divide(g, y, out=ratio, where=nonzero)
    np.multiply(z, ratio, out=out)


def _abs2(z: Any) -> Any:
    return np.real(np.multiply(z, np.conjugate(z)))


class _Angle(_Op):
    """arg z of complex z, in radians (deg=True scales the result outside)."""

    name = "angle"
    sparsity = staticmethod(patterns.nonlinear)

    def label(self) -> str:
        return "numpy.angle"

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return {0}, False

    def forward(self, a: Any, out: Any = None) -> Any:
        return np.arctan2(np.imag(a), np.real(a), out=out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        z = ins[0]
        ct = np.multiply(np.conjugate(z), ts[0])
        return np.divide(np.imag(ct), _nonzero(_abs2(z)), out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        z = ins[0]
        return np.multiply(g, np.divide(np.multiply(z, 1j), _nonzero(_abs2(z))), out=out)


CONJ = _Conj()
REAL = _Real()
IMAG = _Imag()
ABS = _Abs()
ANGLE = _Angle()

#: degrees per radian (numpy.angle(z, deg=True))
DEGREES = 180.0 / math.pi


def complex_ufunc(ufunc: np.ufunc, args: list) -> Prim | None:
    """The primitive for a ufunc that is not complex-differentiable, called on a complex value: None
    for the others (and for real values, which take the ufunc's own rules)."""
    if len(args) != 1 or dtype_of(args[0]).kind != "c":
        return None
    prims: dict[Any, Prim] = {np.conjugate: CONJ, np.absolute: ABS}
    return prims.get(ufunc)
