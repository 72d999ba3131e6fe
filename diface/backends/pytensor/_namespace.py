"""`pytensor.tensor` with the few NumPy names it lacks, for functions differentiated by `AutoPyTensor`
(the module the test kit binds its scenarios to): `asarray` (`as_tensor_variable`, with a dtype) and
`fft` (PyTensor has real FFTs only: `fft.fft` raises `NotSupportedError`). Everything else is
`pytensor.tensor`'s own."""

from __future__ import annotations

import types
from typing import Any

import numpy as _np
import pytensor.tensor as _pt
import pytensor.tensor.fft as _fft
from pytensor.tensor import *  # noqa: F403 - the namespace is pytensor.tensor's

from ..._errors import NotSupportedError


def asarray(a: Any, dtype: Any = None, copy: bool | None = None) -> Any:
    """`a` as an array: a symbolic tensor stays symbolic (cast to `dtype` where given); anything else
    becomes a NumPy array, PyTensor's arrays (its functions take them as constants)."""
    from pytensor.graph.basic import Variable

    if isinstance(a, Variable):
        t = _pt.as_tensor_variable(a)
        name = None if dtype is None else getattr(dtype, "name", None) or str(dtype)
        return t if name is None or t.dtype == name else t.astype(name)
    return _np.array(a, dtype=None if dtype is None else _np.dtype(str(dtype)), copy=copy)


def _complex_fft(*args: Any, **kwargs: Any) -> Any:
    raise NotSupportedError(
        "AutoPyTensor: PyTensor has no complex FFT (pytensor.tensor.fft has rfft and irfft only) and does not "
        "differentiate complex intermediates; use another backend for complex-valued functions"
    )


fft = types.SimpleNamespace(fft=_complex_fft, ifft=_complex_fft, rfft=_fft.rfft, irfft=_fft.irfft)


def __getattr__(name: str) -> Any:
    return getattr(_pt, name)
