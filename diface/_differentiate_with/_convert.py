"""Arrays across library boundaries: zero-copy through DLPack where the layout allows, copies otherwise.

Every boundary crossing goes through host NumPy arrays: a CPU torch tensor or JAX array and a NumPy array
share memory through DLPack (`np.from_dlpack`, `torch.from_dlpack`, `jax.numpy.from_dlpack`); a
non-contiguous tensor, a read-only or misaligned NumPy array is copied first (DLPack cannot describe a
read-only buffer, and torch refuses to wrap one).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._errors import ArgumentError

__all__ = ["kind_of", "split_constants", "to_native", "to_numpy", "to_torch"]


def kind_of(a: Any) -> str:
    """ "torch", "jax", "autograd", "tape" or "numpy": the engine whose array `a` is."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        return "torch"
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(a, (jax.Array, jax.core.Tracer)):
        return "jax"
    tracer = sys.modules.get("diface.backends._tape._graph")
    if tracer is not None and isinstance(a, tracer.Traced):
        return "tape"
    tracer_mod = sys.modules.get("autograd.tracer")
    if tracer_mod is not None and isinstance(a, tracer_mod.Box):
        return "autograd"
    return "numpy"


def is_array(a: Any) -> bool:
    return kind_of(a) != "numpy" or isinstance(a, (np.ndarray, np.generic))


def split_constants(constants: Sequence[Any]) -> tuple[list, Callable[[Sequence[Any]], tuple]]:
    """The array constants, and a function putting (converted) arrays back among the other constants."""
    where = [i for i, c in enumerate(constants) if is_array(c)]
    arrays = [constants[i] for i in where]

    def rebuild(values: Sequence[Any]) -> tuple:
        out = list(constants)
        for i, v in zip(where, values, strict=True):
            out[i] = v
        return tuple(out)

    return arrays, rebuild


def to_numpy(a: Any, what: str = "x") -> np.ndarray:
    """`a` (a torch tensor, JAX array, NumPy array or number) as a host NumPy array, shared where possible."""
    kind = kind_of(a)
    if kind == "torch":
        a = a.detach()
        if a.device.type != "cpu":
            raise ArgumentError(
                f"DifferentiateWith: {what} is a torch tensor on {a.device}; the boundary between engines "
                "passes host memory: move it with .cpu() (and the result back with .to(device)), or "
                "differentiate with the engine that owns the device"
            )
        a = a.resolve_conj().resolve_neg()
        if not a.is_contiguous():
            a = a.contiguous()  # DLPack exports strided tensors, but NumPy code expects C order
        try:
            return np.from_dlpack(a)
        except (TypeError, RuntimeError, BufferError):
            return a.numpy()
    if kind == "jax":
        devices = getattr(a, "devices", None)
        if devices is not None:
            platforms = {d.platform for d in devices()}
            if platforms - {"cpu"}:
                raise ArgumentError(
                    f"DifferentiateWith: {what} is a JAX array on {sorted(platforms)}; the boundary between "
                    "engines passes host memory: jax.device_put it on the CPU first"
                )
        try:
            return np.from_dlpack(a)
        except (TypeError, RuntimeError, BufferError):
            return np.asarray(a)
    if kind == "autograd":
        from autograd.tracer import getval

        return to_numpy(getval(a), what)
    return np.asarray(a)


def _exportable(a: np.ndarray) -> np.ndarray:
    """`a`, or a copy DLPack and torch accept (writable, aligned, C-contiguous)."""
    if not (a.flags.writeable and a.flags.aligned and a.flags.c_contiguous):
        return np.array(a, order="C")
    return a


def to_torch(a: np.ndarray, like: Any = None) -> Any:
    import torch

    t = torch.from_dlpack(_exportable(np.asarray(a)))
    if like is not None and like.device != t.device:
        t = t.to(like.device)
    return t


def to_jax(a: np.ndarray) -> Any:
    import jax.numpy as jnp

    a = np.asarray(a)
    try:
        return jnp.from_dlpack(_exportable(a))
    except (TypeError, RuntimeError, BufferError, ValueError):
        return jnp.asarray(a)


def to_native(a: Any, native: str) -> Any:
    """A NumPy array as the inner engine takes it ("torch", "jax" or "numpy")."""
    if not isinstance(a, np.ndarray):
        return a
    if native == "torch":
        return to_torch(a)
    if native == "jax":
        return to_jax(a)
    return a
