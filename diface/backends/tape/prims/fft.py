"""The discrete Fourier transforms: fft/ifft over any axes, rfft and irfft along one axis.

All are linear, so their rules read no values: the JVP is the transform of the tangent, and the VJP is
the adjoint under the real inner product Re <u, v> (`Prim.complex`). The adjoint of a complex DFT is the
inverse transform with the dual normalization (the conjugate transpose of F is n ifft: `norm`
"backward" <-> "forward", "ortho" <-> "ortho"). rfft (real to complex) and irfft (complex to real) are
only R-linear; their adjoints are irfft and rfft with the dual normalization and the weights that count
each half-spectrum entry for its mirrored twin (see `_Rfft.vjp` and `_Irfft.vjp`). Lengths other than
the input's (`n=`, `s=`) are pads and slices recorded before the transform (`numpy.fft`).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ...._sparsity import Deps, Nonlinearity
from ..data.graph import Node
from . import patterns
from .prim import OWN, Prim, into, shape_of

__all__ = ["FFT", "IRFFT", "RFFT"]

#: the normalization whose transform is the adjoint's
DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}

#: NumPy's transforms take out= (NumPy 2)
_OUT = "out" in inspect.signature(np.fft.fft).parameters


def _call(fn: Any, a: Any, out: Any, **kw: Any) -> Any:
    if _OUT and out is not None and isinstance(a, np.ndarray):
        return fn(a, out=out, **kw)
    return into(out, fn(a, **kw))


class _Fourier(Prim):
    linear = True
    complex = OWN

    @staticmethod
    def sparsity(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
        """Every output element on every input element of its line along the transformed axes."""
        a = run.deps(ins[0])
        nd = len(a.shape)
        axes = node.params.get("axes", (node.params.get("axis"),))
        axes = tuple(int(ax) % nd for ax in axes)
        outer = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
        pooled = a.reduce(patterns.groups(a.shape, axes), outer, Nonlinearity.LINEAR)
        return pooled.gather(np.broadcast_to(np.arange(pooled.size).reshape(outer), shape))

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), False

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, **params: Any) -> Any:
        return self.apply(ts[0], out=out, **params)  # axes count from the end: a batch axis in front is kept


class _Fft(_Fourier):
    """fftn / ifftn (`inverse`) over `axes` (negative), complex in and out (real inputs promoted)."""

    name = "fft"

    def label(self) -> str:
        return "numpy.fft.fft"

    def forward(self, a: Any, out: Any = None, inverse: bool = False, axes: tuple = (-1,), norm: str = "") -> Any:
        if len(axes) == 1:
            return _call(np.fft.ifft if inverse else np.fft.fft, a, out, axis=axes[0], norm=norm)
        return _call(np.fft.ifftn if inverse else np.fft.fftn, a, out, axes=axes, norm=norm)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, **p: Any) -> Any:
        return self.apply(g, out=out, inverse=not p["inverse"], axes=p["axes"], norm=DUAL[p["norm"]])


def _weights(m: int, n: int, axis: int, dtype: Any, twice: bool) -> np.ndarray:
    """Along `axis`, for a half spectrum of m entries of a length-n signal: 1 at the entries without a
    twin (0, and n/2 for even n), 2 (`twice`) or 1/2 at the others."""
    w = np.full(m, 2.0 if twice else 0.5, dtype=dtype)
    w[0] = 1.0
    if n % 2 == 0 and m > 1:
        w[-1] = 1.0
    return w.reshape((m,) + (1,) * (-axis - 1))


class _Rfft(_Fourier):
    """rfft along `axis` (negative) of a real array of length n: n // 2 + 1 complex entries."""

    name = "rfft"
    promotes = False

    def label(self) -> str:
        return "numpy.fft.rfft"

    def forward(self, a: Any, out: Any = None, axis: int = -1, norm: str = "") -> Any:
        return _call(np.fft.rfft, a, out, axis=axis, norm=norm)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, axis: int = -1, norm: str = "") -> Any:
        # Re(F_r^H g): irfft sums each entry k of 0 < k < n/2 twice (with its mirrored twin), so halve those
        n = shape_of(ins[0])[axis]
        half = _weights(shape_of(g)[axis], n, axis, np.dtype(g.dtype).char.lower(), twice=False)
        return IRFFT.apply(np.multiply(g, half), out=out, n=n, axis=axis, norm=DUAL[norm])


class _Irfft(_Fourier):
    """irfft along `axis` (negative) of n // 2 + 1 complex entries (real inputs promoted before): a real
    array of length n."""

    name = "irfft"
    promotes = False

    def label(self) -> str:
        return "numpy.fft.irfft"

    def forward(self, a: Any, out: Any = None, n: int = 0, axis: int = -1, norm: str = "") -> Any:
        return _call(np.fft.irfft, a, out, n=n, axis=axis, norm=norm)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, n: int = 0, **p: Any) -> Any:
        # <r, irfft(c)> = Re sum_k w_k conj(rfft(r)_k) c_k: each entry k of 0 < k < n/2 stands for two
        m = shape_of(ins[0])[p["axis"]]
        twice = _weights(m, n, p["axis"], np.dtype(g.dtype), twice=True)
        return np.multiply(RFFT.apply(g, axis=p["axis"], norm=DUAL[p["norm"]]), twice, out=out)


FFT = _Fft()
RFFT = _Rfft()
IRFFT = _Irfft()
