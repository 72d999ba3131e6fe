"""Sparsity rules (see `_sparsity`) of the operations on complex values and of the Fourier transforms,
and the reduction groups they share with `_sparsity`'s reductions.

A complex element depends on the elements of x its real and imaginary parts depend on; conj, real,
imag and the promotion of a real array keep each element's dependencies (linear), abs and angle of a
complex value are nonlinear in them (|z| = sqrt(a^2 + b^2), unlike the piecewise-linear |x| of a real
x). A transform along some axes mixes every element of a line along them, linearly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._sparsity import Deps, Nonlinearity
from ..data.graph import Node
from ..prims.complex import ABS, ANGLE, CONJ, IMAG, REAL
from ..prims.fft import FFT, IRFFT, RFFT
from ..prims.prim import PROMOTE

__all__ = ["SPECTRAL_RULES", "groups"]

L, N = Nonlinearity.LINEAR, Nonlinearity.NONLINEAR


def groups(shape: tuple, axes: tuple) -> np.ndarray:
    """For each element of an array of `shape`, the flat index of its group when `axes` are reduced."""
    outer = tuple(1 if i in axes else s for i, s in enumerate(shape))
    return np.broadcast_to(np.arange(int(np.prod(outer, dtype=np.int64))).reshape(outer), shape)


def _same(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    return run.deps(ins[0])


def _nonlinear(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    return Deps.elementwise(shape, [run.deps(ins[0])], N)


def _fourier(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
    """Every output element on every input element of its line along the transformed axes."""
    a = run.deps(ins[0])
    nd = len(a.shape)
    axes = node.params.get("axes", (node.params.get("axis"),))
    axes = tuple(int(ax) % nd for ax in axes)
    outer = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
    pooled = a.reduce(groups(a.shape, axes), outer, L)
    return pooled.gather(np.broadcast_to(np.arange(pooled.size).reshape(outer), shape))


SPECTRAL_RULES: dict[Any, Callable] = {
    PROMOTE: _same,
    CONJ: _same,
    REAL: _same,
    IMAG: _same,
    ABS: _nonlinear,
    ANGLE: _nonlinear,
    FFT: _fourier,
    RFFT: _fourier,
    IRFFT: _fourier,
}
