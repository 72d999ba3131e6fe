"""Which `ArrayOps` owns an array: NumPy, a registered framework (only once it is imported), or the
generic array-API namespace."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ._array_api import ArrayAPIOps
from ._base import ArrayOps
from ._numpy import NumpyOps

__all__ = ["NUMPY", "framework_ops", "ops_for", "register_array_ops", "reshaped"]

NUMPY = NumpyOps()

# framework module name -> ArrayOps subclass (instantiated lazily, once the framework is imported)
_REGISTERED: dict[str, Callable[[], ArrayOps]] = {}
_INSTANCES: dict[str, ArrayOps] = {}
_BY_TYPE: dict[type, ArrayOps] = {}
_PYTHON_SCALARS = (float, int, complex, bool, list)


def register_array_ops(framework: str, factory: Callable[[], ArrayOps]) -> None:
    """Make arrays of `framework` known to the core. `factory` must not be called before the
    framework is imported; diface calls it on the first array of that framework it meets."""
    _REGISTERED[framework] = factory


def framework_ops(framework: str) -> ArrayOps:
    """The (single) namespace registered for `framework`, instantiated on first use."""
    ops = _INSTANCES.get(framework)
    if ops is None:
        ops = _INSTANCES[framework] = _REGISTERED[framework]()
    return ops


def ops_for(a: Any) -> ArrayOps | None:
    """The namespace that owns `a`: NumPy for NumPy arrays, NumPy scalars and Python numbers; a
    registered framework's namespace; a generic array-API one; or None for anything else."""
    t = type(a)
    ops = _BY_TYPE.get(t)
    if ops is not None:
        return ops
    if isinstance(a, (np.ndarray, np.generic, *_PYTHON_SCALARS)):
        ops = NUMPY
    else:
        for framework in _REGISTERED:
            if framework in sys.modules:
                candidate = framework_ops(framework)
                if candidate.is_native(a):
                    ops = candidate
                    break
        if ops is None and hasattr(a, "__array_namespace__"):
            ops = ArrayAPIOps(a.__array_namespace__(), t)
        if ops is None:
            return None
    _BY_TYPE[t] = ops
    return ops


def reshaped(a: Any, shape: tuple) -> Any:
    """`a` in `shape`: by its own `reshape` method where it has one (NumPy, torch, JAX, autograd's boxes),
    else by its namespace (arrays of the array API standard have `xp.reshape` and no method)."""
    if hasattr(a, "reshape"):
        return a.reshape(shape)
    ops = ops_for(a)
    if ops is None:
        raise TypeError(f"cannot reshape a {type(a).__name__}: it has no reshape method and no array namespace")
    return ops.reshape(a, shape)
