"""Importing TensorFlow quietly, once, on first use.

TensorFlow logs from C++ at import (oneDNN notices, absl's "before InitializeLog" warning) and from
Python at tracing (retracing warnings). diface sets `TF_CPP_MIN_LOG_LEVEL=2` before TensorFlow's first
import, only where the variable is unset (a user's own setting wins; JAX's import sets 1), and, unless
it is 0, drops the notices that ignore it from what the import and TensorFlow's first kernel write to
the standard error; every other line is written on.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from types import ModuleType

__all__ = ["tf"]

_LOCK = threading.Lock()
_NOISE = (
    b"before absl::InitializeLog()",
    b"oneDNN custom operations are on",
    b"cpu_feature_guard",
    b"rebuild TensorFlow with the appropriate compiler flags",
)


_READY: list[ModuleType] = []


def tf() -> ModuleType:
    """The `tensorflow` module, imported now if it is not yet (quietly, see the module docstring), with
    NumPy behavior enabled (`tnp.experimental_enable_numpy_behavior()`: `.T`, `x @ v` of a vector,
    NumPy's type promotion between tensors and numbers) on diface's first use of TensorFlow."""
    if _READY:
        return _READY[0]
    with _LOCK:
        if _READY:
            return _READY[0]
        module: ModuleType
        if "tensorflow" not in sys.modules and os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") != "0":
            # unset: 2; set (JAX's import sets 1 where it is unset): kept, and the INFO notices it asks to
            # hide, which TensorFlow prints anyway, are dropped
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
            module = _import_filtered()
        else:
            import tensorflow

            module = tensorflow
        module.experimental.numpy.experimental_enable_numpy_behavior()
        _READY.append(module)
        return module


def _import_filtered() -> ModuleType:
    """`import tensorflow` with the standard error (file descriptor 2) captured and written on without
    the notices TF_CPP_MIN_LOG_LEVEL does not silence."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real standard error (an embedded interpreter): import as it is
        import tensorflow

        return tensorflow
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow

            # the first kernel TensorFlow runs logs the oneDNN notice again: run one while capturing
            tensorflow.reduce_sum(tensorflow.constant([1.0]) * 2.0).numpy()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [line for line in captured.read().splitlines(True) if not any(n in line for n in _NOISE)]
            if kept:
                os.write(2, b"".join(kept))
    tensorflow.get_logger().setLevel("ERROR")  # retracing warnings: a preparation traces on purpose
    return tensorflow
