"""The inner engine's side of `DifferentiateWith`: f's value, pushforward, pullback and the second-order
product, on host NumPy arrays, each prepared once per input spec and reused."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .._backend import Backend
from .._contexts import Constant
from .._errors import ArgumentError, NotSupportedError
from ._convert import to_native, to_numpy

__all__ = ["Inner", "third_order"]


def _native(backend: Backend) -> str:
    name = type(backend).__name__
    return {"AutoTorch": "torch", "AutoJAX": "jax"}.get(name, "numpy")


def _spec(a: Any) -> tuple:
    if isinstance(a, np.ndarray):
        return ("array", a.shape, a.dtype.str)
    return ("object", type(a).__name__)


def third_order(f: Callable) -> NotSupportedError:
    return NotSupportedError(
        f"DifferentiateWith({getattr(f, '__name__', 'f')}, ...): derivatives of order 3 and more do not cross "
        "the boundary between engines (first and second order do); differentiate the whole function with one "
        "engine"
    )


def _dual_level_open() -> bool:
    import sys

    forward_ad = sys.modules.get("torch.autograd.forward_ad")
    return forward_ad is not None and forward_ad._current_level >= 0


class Inner:
    """`f` on the inner engine: evaluations and products on NumPy arrays, preparations kept per spec."""

    def __init__(self, f: Callable, backend: Backend) -> None:
        self.f = f
        self.backend = backend
        self.native = _native(backend)
        self._lock = threading.Lock()
        self._preps: dict[tuple, Any] = {}

    # -- helpers ------------------------------------------------------------------------------------
    def check_x(self, x: np.ndarray) -> None:
        if x.dtype.kind != "f":
            raise ArgumentError(
                f"DifferentiateWith: x must be a real floating-point array, got dtype {x.dtype}; convert it "
                "(e.g. x.astype(float) or torch.tensor(x, dtype=torch.float64))"
            )
        if self.native == "jax" and x.dtype == np.float64:
            import jax

            if not jax.config.jax_enable_x64:
                raise ArgumentError(
                    "DifferentiateWith: x is float64 but JAX runs in 32-bit mode, so the inner AutoJAX would "
                    'compute in float32; enable jax.config.update("jax_enable_x64", True) at startup, or pass '
                    "float32 arrays"
                )

    def _contexts(self, constants: tuple) -> tuple:
        return tuple(Constant(to_native(c, self.native)) for c in constants)

    def _prep(self, key: tuple, make: Callable[[], Any]) -> Any:
        prep = self._preps.get(key)
        if prep is None:
            with self._lock:
                prep = self._preps.get(key)
                if prep is None:
                    prep = make()
                    self._preps[key] = prep
        return prep

    def _key(self, op: str, constants: tuple, *arrays: np.ndarray) -> tuple:
        return (op, *(_spec(a) for a in arrays), *(_spec(c) for c in constants))

    # -- what the outer engines call ----------------------------------------------------------------
    def value(self, x: np.ndarray, constants: tuple) -> np.ndarray:
        self.check_x(x)
        native = self.native
        y = self.f(to_native(x, native), *(to_native(c, native) for c in constants))
        y = to_numpy(y, "f's output")
        if y.dtype.kind != "f":
            raise ArgumentError(
                f"DifferentiateWith: f returned an array of dtype {y.dtype}; it must return a real floating-point array"
            )
        return y

    def pushforward(self, x: np.ndarray, tx: np.ndarray, constants: tuple) -> np.ndarray:
        import diface as di

        self.check_x(x)
        tx = np.asarray(tx, dtype=x.dtype)
        ctx = self._contexts(constants)
        native = self.native
        if native == "torch" and _dual_level_open():
            return self._torch_double_backward_jvp(x, tx, constants)
        prep = self._prep(
            self._key("pushforward", constants, x, tx),
            lambda: di.prepare_pushforward(self.f, self.backend, to_native(x, native), to_native(tx, native), *ctx),
        )
        return to_numpy(prep.pushforward(to_native(x, native), to_native(tx, native), *ctx), "a pushforward")

    def _torch_double_backward_jvp(self, x: np.ndarray, tx: np.ndarray, constants: tuple) -> np.ndarray:
        """J t by two reverse sweeps: torch has one forward-AD level, taken by the outer engine here."""
        import torch

        cs = tuple(to_native(c, "torch") for c in constants)
        with torch.enable_grad():
            _, jt = torch.autograd.functional.jvp(
                lambda x: self.f(x, *cs), to_native(x, "torch"), to_native(tx, "torch")
            )
        return to_numpy(jt, "a pushforward")

    def pullback(self, x: np.ndarray, ty: np.ndarray, constants: tuple) -> np.ndarray:
        import diface as di

        self.check_x(x)
        ctx = self._contexts(constants)
        native = self.native
        prep = self._prep(
            self._key("pullback", constants, x, ty),
            lambda: di.prepare_pullback(self.f, self.backend, to_native(x, native), to_native(ty, native), *ctx),
        )
        r = to_numpy(prep.pullback(to_native(x, native), to_native(ty, native), *ctx), "a pullback")
        return r.astype(x.dtype, copy=False)

    def hvp(self, x: np.ndarray, ty: np.ndarray, v: np.ndarray, constants: tuple) -> np.ndarray:
        """The derivative of the pullback `ty @ J(x)` along `v`: the Hessian of `<ty, f(x)>` times v."""
        import diface as di

        self.check_x(x)
        v = np.asarray(v, dtype=x.dtype)
        ctx = (Constant(to_native(ty, self.native)), *self._contexts(constants))
        native = self.native
        f = self.f

        def weighted(x: Any, w: Any, *cs: Any) -> Any:
            return (f(x, *cs) * w).sum()

        try:
            prep = self._prep(
                self._key("hvp", constants, x, ty, v),
                lambda: di.prepare_hvp(weighted, self.backend, to_native(x, native), to_native(v, native), *ctx),
            )
        except NotSupportedError as e:
            raise NotSupportedError(
                f"DifferentiateWith: second order through the boundary needs second derivatives from the inner "
                f"backend {self.backend!r}, which it cannot give ({e}); wrap f with a backend that has them "
                "(e.g. di.AutoJAX(), di.AutoTorch(), di.AutoTape())"
            ) from e
        r = to_numpy(prep.hvp(to_native(x, native), to_native(v, native), *ctx), "an hvp")
        return r.astype(x.dtype, copy=False)

    def batched(self, op: Callable, x: np.ndarray, t: np.ndarray, constants: tuple, b: int) -> np.ndarray:
        """`op(x, t, constants)`, or one result per row of `t` stacked when `b` (a batch axis leads)."""
        if not b:
            return op(x, t, constants)
        return np.stack([op(x, t[k], constants) for k in range(t.shape[0])])
