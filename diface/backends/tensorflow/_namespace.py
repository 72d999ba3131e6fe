"""The module functions differentiated by `AutoTensorFlow` are written with, as the test kit binds them:
`tensorflow.experimental.numpy` (NumPy's names on `tf.Tensor`s), with NumPy's `fft` module added
(`tf.signal`'s transforms over the last axis). Importing it imports TensorFlow (diface does so only when
asked for this module by name)."""

from __future__ import annotations

import types
from typing import Any

from ..._errors import NotSupportedError
from ._env import tf

_tf = tf()
_tnp = _tf.experimental.numpy


def __getattr__(name: str) -> Any:  # PEP 562: every other name is tensorflow.experimental.numpy's
    return getattr(_tnp, name)


def _last_axis(transform: Any) -> Any:
    def apply(a: Any, n: Any = None, axis: int = -1) -> Any:
        if n is not None or axis not in (-1, len(a.shape) - 1):
            raise NotSupportedError("diface's TensorFlow fft takes the whole last axis only (no n=, no other axis)")
        a = _tnp.asarray(a)
        if not a.dtype.is_complex:
            a = _tf.cast(a, _tf.complex128 if a.dtype == _tf.float64 else _tf.complex64)
        return transform(a)

    return apply


fft = types.SimpleNamespace(fft=_last_axis(_tf.signal.fft), ifft=_last_axis(_tf.signal.ifft))


def asarray(a: Any, dtype: Any = None) -> Any:
    """`tnp.asarray`; host data (NumPy arrays, numbers, lists) becomes an eager constant even while f is
    traced (`tf.init_scope`), so that a constant made once and kept serves every graph."""
    if isinstance(a, (_tf.Tensor, _tf.Variable)):
        return _tnp.asarray(a, dtype=dtype)
    with _tf.init_scope():
        return _tnp.asarray(a, dtype=dtype)
