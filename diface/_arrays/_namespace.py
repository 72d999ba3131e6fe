"""`ArrayOps` written once over an array namespace `xp`: as einops' backends swap only the module, an
engine whose arrays have a NumPy-like module (`jax.numpy`, `mlx.core`, `autograd.numpy`, any array-API
namespace) subclasses one of these and overrides only what its library does differently.

- `NamespaceOps`: the computations on arrays (shape, arithmetic, complex numbers as pairs of reals),
  each one call of `xp`'s function of the same name;
- `StandardNamespaceOps`: those, plus construction and dtype queries as the Python array API standard
  spells them (a `device=` keyword taking `like`'s device, dtypes passed as they are).

Construction stays with the subclass where the library's constructors differ (MLX names its dtypes, and
has no `device=`; autograd's boxes are built by NumPy, `NumpyOps`).
"""

from __future__ import annotations

from typing import Any

from ._base import ArrayOps

__all__ = ["NamespaceOps", "StandardNamespaceOps"]


class NamespaceOps(ArrayOps):
    """The array computations the core needs, each one call of the namespace `xp`'s function.

    >>> import numpy as np
    >>> from diface._arrays import ArrayAPIOps
    >>> ops = ArrayAPIOps(np, np.ndarray)  # a `StandardNamespaceOps` over any array-API namespace
    >>> ops.to_pairs(np.array([1 + 2j]))
    array([[1., 2.]])
    >>> ops.concat([np.ones(1), np.zeros(2)])
    array([1., 0., 0.])
    """

    def __init__(self, xp: Any, array_types: tuple[type, ...] = ()) -> None:
        #: the array namespace every method computes with
        self.xp = xp
        self.array_types = array_types
        # NumPy's name where the library has it (autograd differentiates `concatenate` only), else the
        # standard's
        self._concatenate = getattr(xp, "concatenate", None) or xp.concat

    # shape -----------------------------------------------------------------------------------
    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.xp.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.xp.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return self._concatenate(arrays, axis=0)

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return self.xp.moveaxis(a, source, destination)

    # arithmetic ------------------------------------------------------------------------------
    def matmul(self, a: Any, b: Any) -> Any:
        return self.xp.matmul(a, b)

    def vdot(self, a: Any, b: Any) -> Any:
        return self.xp.sum(a * b)

    def abs(self, a: Any) -> Any:
        return self.xp.abs(a)

    def max(self, a: Any) -> Any:
        return self.xp.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.xp.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.xp.imag(a)

    def real(self, a: Any) -> Any:
        return self.xp.real(a)

    def to_pairs(self, z: Any) -> Any:
        xp = self.xp
        return xp.stack([xp.real(z), xp.imag(z)], axis=-1)


class StandardNamespaceOps(NamespaceOps):
    """`NamespaceOps` with construction and dtype queries as the array API standard spells them: arrays
    made on `device_like(like)` (`like`'s `device`, where it has one), dtypes passed to `xp` as they are."""

    def device_like(self, like: Any) -> Any:
        """The device to make an array on, like `like` (None: the library's default)."""
        return getattr(like, "device", None)

    # conversions and construction ------------------------------------------------------------
    def asarray(self, a: Any, like: Any = None) -> Any:
        device = self.device_like(like)
        return self.xp.asarray(a) if device is None else self.xp.asarray(a, device=device)

    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.xp.zeros(shape, dtype=dtype, device=self.device_like(like))

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.xp.eye(n, dtype=dtype, device=self.device_like(like))

    # dtypes ----------------------------------------------------------------------------------
    def result_type(self, *dtypes: Any) -> Any:
        return self.xp.result_type(*dtypes)

    def eps(self, dtype: Any) -> float:
        return float(self.xp.finfo(dtype).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return self.xp.result_type(dtype, self.xp.complex64)
