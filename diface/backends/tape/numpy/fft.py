"""What NumPy's FFT functions record: fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft (the
transforms of `prims.fft`, after the pads and slices that NumPy's `n=` and `s=` make)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..prims.fft import FFT, IRFFT, RFFT
from ..prims.prim import PROMOTE, shape_of
from ..tracing.tracer import operand
from .common import implements, ndim_of, unsupported

__all__: list[str] = []


def _norm(norm: Any) -> str:
    if norm is None:
        return "backward"
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return norm


def _axis(axis: int, nd: int) -> int:
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(axis, nd)
    return axis - nd if axis >= 0 else axis


def _fit(a: Any, n: int | None, axis: int) -> Any:
    """`a` cut or zero-padded to length n along `axis` (negative), as NumPy's transforms do."""
    if n is None:
        return a
    n = int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    length = shape_of(a)[axis]
    if n < length:
        return a[(Ellipsis, slice(0, n)) + (slice(None),) * (-axis - 1)]
    if n > length:
        widths = [(0, 0)] * ndim_of(a)
        widths[axis] = (0, n - length)
        return np.pad(a, widths)
    return a


def _refuse_out(name: str, out: Any) -> None:
    if out is not None:
        raise unsupported(f"numpy.fft.{name}", " with out=")


def _complex_handler(name: str, inverse: bool) -> Any:
    def handler(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
        _refuse_out(name, out)
        a = operand(a)
        ax = _axis(axis, ndim_of(a))
        return FFT(_fit(a, n, ax), inverse=inverse, axes=(ax,), norm=_norm(norm))

    return handler


def _many_handler(name: str, inverse: bool, default_axes: Any) -> Any:
    def handler(a: Any, s: Any = None, axes: Any = default_axes, norm: Any = None, out: Any = None) -> Any:
        _refuse_out(name, out)
        a = operand(a)
        nd = ndim_of(a)
        if axes is None:
            axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
        axes = tuple(_axis(int(ax), nd) for ax in axes)
        if len(set(axes)) != len(axes):
            raise unsupported(f"numpy.fft.{name}", " over repeated axes")
        if s is not None:
            if len(s) != len(axes):
                raise ValueError("Shape and axes have different lengths.")
            for ax, n in zip(axes, s):
                a = _fit(a, n, ax)
        return FFT(a, inverse=inverse, axes=axes, norm=_norm(norm))

    return handler


implements(np.fft.fft)(_complex_handler("fft", False))
implements(np.fft.ifft)(_complex_handler("ifft", True))
implements(np.fft.fft2)(_many_handler("fft2", False, (-2, -1)))
implements(np.fft.ifft2)(_many_handler("ifft2", True, (-2, -1)))
implements(np.fft.fftn)(_many_handler("fftn", False, None))
implements(np.fft.ifftn)(_many_handler("ifftn", True, None))


@implements(np.fft.rfft)
def _rfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    _refuse_out("rfft", out)
    a = operand(a)
    if np.result_type(a).kind == "c":
        raise TypeError("rfft: the input must be real (AutoTape: take np.real explicitly)")
    ax = _axis(axis, ndim_of(a))
    return RFFT(_fit(a, n, ax), axis=ax, norm=_norm(norm))


@implements(np.fft.irfft)
def _irfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    _refuse_out("irfft", out)
    a = operand(a)
    ax = _axis(axis, ndim_of(a))
    n = 2 * (shape_of(a)[ax] - 1) if n is None else int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    a = _fit(a, n // 2 + 1, ax)
    kind = np.result_type(a).kind
    if kind != "c":  # irfft's rules take complex values: promote a real half spectrum first
        a = PROMOTE(a, dtype=np.result_type(a, np.complex64))
    return IRFFT(a, n=n, axis=ax, norm=_norm(norm))
