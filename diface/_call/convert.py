"""Argument conversion: the user's arrays as the backend's, checked on the way.

A NumPy `x` (a Python number, a nested list) becomes the backend's native array; tangents become
native arrays of the dtype they must have; NumPy arrays inside context values (also inside dicts,
lists, tuples and namedtuples) become native arrays on x's device; everything else reaches f as it is.
Preparation, prepared calls, trees and auxiliary outputs all convert through these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._arrays import NUMPY, ArrayOps
from .._errors import ArgumentError, NotSupportedError

__all__ = [
    "check_floating",
    "kind",
    "native_context_value",
    "native_tangent",
    "native_x",
    "snapshot",
]


def kind(a: Any) -> str:
    """`a`'s type, with its shape where it has one: for messages."""
    shape = getattr(a, "shape", None)
    return type(a).__name__ + (f" of shape {tuple(shape)}" if shape is not None else "")


def check_floating(ops: ArrayOps, dtype: Any, where: str, what: str) -> None:
    """Raise unless `dtype` is a real floating-point dtype (`NotSupportedError` for complex ones)."""
    if ops.is_floating(dtype):
        return
    prefix = f"{where}: " if where else ""
    if ops.is_complex(dtype):
        raise NotSupportedError(
            f"{prefix}{what} is complex ({dtype}); diface differentiates real floating-point arrays"
        )
    raise ArgumentError(
        f"{prefix}{what} has dtype {dtype}; differentiation needs floating point (e.g. pass x.astype(float))"
    )


def native_x(ops: ArrayOps, x: Any) -> Any:
    """`x` as the backend's native array: NumPy input converted, Python numbers as float64."""
    if isinstance(x, (bool, int)):
        x = float(x)
    if isinstance(x, float):
        x = np.float64(x)
    elif isinstance(x, list):
        x = np.asarray(x)
    elif not isinstance(x, (np.ndarray, np.generic)):
        raise ArgumentError(
            f"x must be an array or a number, got {type(x).__name__}; this backend takes NumPy arrays "
            f"and {ops.name} arrays"
        )
    if ops is NUMPY:
        return x
    if np.result_type(x).kind not in "fc":  # before the framework sees it: its errors say less
        check_floating(NUMPY, np.result_type(x), "", "x")
    return ops.asarray(x)


def native_tangent(ops: ArrayOps, t: Any, like: Any, dtype: Any, where: str, label: str) -> Any:
    """A tangent (NumPy array, number, nested list) as a native array like `like` (of `dtype` for
    numbers); `ArgumentError` naming `label` for anything else."""
    if isinstance(t, (bool, int, float)):
        return ops.astype(ops.asarray(np.asarray(t), like=like), dtype)
    if isinstance(t, (np.ndarray, np.generic, list)):
        t = np.asarray(t)
        if t.dtype.kind not in "fc":
            raise ArgumentError(f"{where}: tangent {label} has dtype {t.dtype}; it must be floating point like {dtype}")
        return ops.asarray(t, like=like)
    raise ArgumentError(f"{where}: tangent {label} must be an array or a number, got {kind(t)}")


def native_context_value(ops: ArrayOps, value: Any, like: Any) -> Any:
    """A context value as f receives it: NumPy arrays (also the leaves of dicts, lists and tuples, a
    namedtuple's fields) converted to the backend's arrays; everything else as it is."""
    if ops is NUMPY:
        return value
    if isinstance(value, np.ndarray):
        return ops.asarray(value, like=like)
    container = type(value)
    if container is dict:
        return {k: native_context_value(ops, v, like) for k, v in value.items()}
    if container is list:
        return [native_context_value(ops, v, like) for v in value]
    if isinstance(value, tuple):
        items = [native_context_value(ops, v, like) for v in value]
        return container(*items) if hasattr(value, "_fields") else container(items)
    return value


def snapshot(ops: ArrayOps, value: Any) -> Any:
    """A copy of a mutable array (the user may change theirs later), anything else as it is."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if ops.mutable and ops.is_native(value):
        return ops.copy(value)
    return value
