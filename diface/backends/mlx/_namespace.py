"""`mlx.core` as the namespace functions for `AutoMLX` are written with, plus what MLX lacks or does
differently from NumPy.

Everything of `mlx.core` is here under its own name. Differences: `asarray` and `array` keep a NumPy
array's dtype (MLX's make a float64 NumPy array float32 unless told), and `angle` is added. Importing this
module imports MLX (it is the engine's namespace, imported on first use, never by `import diface`).
"""

from __future__ import annotations

from typing import Any

import mlx.core as _mx
import numpy as _np
from mlx.core import *  # noqa: F403 - the namespace is mlx.core's
from mlx.core import fft, linalg, random  # noqa: F401 - submodules, as NumPy has them

from ._ops import check_float64 as _check_float64
from ._ops import mx_dtype as _mx_dtype


def asarray(a: Any, dtype: Any = None) -> Any:  # type: ignore[no-redef]
    """`a` as an MLX array; NumPy arrays keep their dtype (float64 included) unless `dtype` is given."""
    if isinstance(a, (_np.ndarray, _np.generic)):
        a = _np.asarray(a)
        a = a if a.flags.c_contiguous else _np.array(a, order="C")  # MLX takes no negative strides
        dtype = a.dtype if dtype is None else dtype
    if dtype is not None:
        dtype = _mx_dtype(dtype)
        _check_float64(dtype)
    if isinstance(a, _mx.array):
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    return _mx.array(a) if dtype is None else _mx.array(a, dtype=dtype)


array = asarray  # type: ignore[misc, assignment]


def angle(z: Any) -> Any:
    """The argument of complex `z` (0 or pi for real `z`), differentiable where MLX differentiates
    `arctan2`."""
    return _mx.arctan2(_mx.imag(z), _mx.real(z))
