"""The inner engine's side of `DifferentiateWith`: f's value, pushforward, pullback and the second-order
product, on host NumPy arrays, each prepared once per input spec and reused."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _operators as di
from .._arrays import NUMPY, ops_for
from .._backend import Backend
from .._boundary import boundary_of, from_host, to_host
from .._contexts import Constant
from .._errors import ArgumentError, NotSupportedError

__all__ = ["Inner"]


def _spec(a: Any) -> tuple:
    if isinstance(a, np.ndarray):
        return ("array", a.shape, a.dtype.str)
    return ("object", type(a).__name__)


class Inner:
    """`f` on the inner engine: evaluations and products on NumPy arrays, preparations kept per spec."""

    def __init__(self, f: Callable, backend: Backend) -> None:
        self.f = f
        self.backend = backend
        self._ops: Any = None
        self._lock = threading.Lock()
        self._preps: dict[tuple, Any] = {}
        self._y_dtypes: dict[tuple, np.dtype] = {}

    # -- helpers ------------------------------------------------------------------------------------
    def third_order(self) -> NotSupportedError:
        """The error of a derivative the boundary does not carry: of order 3 and more, or forward over
        forward (Taylor coefficients, Laplacians)."""
        return NotSupportedError(
            f"DifferentiateWith({getattr(self.f, '__name__', 'f')}, ...): first derivatives and Hessian-vector "
            "products cross the boundary between engines; derivatives of order 3 and more, and Taylor "
            "coefficients or Laplacians (forward mode over forward mode), do not. Differentiate the whole "
            "function with one engine"
        )

    def check_x(self, x: np.ndarray) -> None:
        if x.dtype.kind not in "fc":
            raise ArgumentError(
                f"DifferentiateWith: x must be a floating-point or complex array, got dtype {x.dtype}; convert it "
                "(e.g. x.astype(float) or torch.tensor(x, dtype=torch.float64))"
            )
        if self._ops is None:
            self._ops = self.backend.array_ops(x)
        # the inner engine's arrays say what they cannot hold (JAX without 64 bits)
        self._ops.asarray(np.empty(0, x.dtype))

    def native(self, a: Any) -> Any:
        """A host array as the inner engine's array (shared where possible); anything else as it is."""
        return from_host(a, self._ops)

    def _contexts(self, constants: tuple) -> tuple:
        return tuple(Constant(self.native(c)) for c in constants)

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
        y = self.backend.evaluator(self.f)(self.native(x), *(self.native(c) for c in constants))
        y = to_host(y, "f's output")
        if y.dtype.kind not in "fc":
            raise ArgumentError(
                f"DifferentiateWith: f returned an array of dtype {y.dtype}; it must return a floating-point or "
                "complex array"
            )
        self._y_dtypes[self._key("value", constants, x)] = y.dtype
        return y

    def _cotangent(self, x: np.ndarray, ty: np.ndarray, constants: tuple) -> np.ndarray:
        """`ty` in y's dtype. Engines hand a complex cotangent to a real output where complex values
        follow it (autograd); only its real part acts on a real y (⟨ty, y⟩ = Re Σ conj(ty)·y), whichever
        convention the engine keeps (the real part of conj(ty) is that of ty)."""
        ty = np.asarray(ty)
        key = self._key("value", constants, x)
        y_dtype = self._y_dtypes.get(key)
        if y_dtype is None:  # an outer engine asking for a pullback at a point it never evaluated
            self.value(x, constants)
            y_dtype = self._y_dtypes[key]
        if ty.dtype.kind == "c" and y_dtype.kind != "c":
            ty = ty.real
        return ty.astype(y_dtype, copy=False)

    @staticmethod
    def _like_x(r: np.ndarray, x: np.ndarray) -> np.ndarray:
        """A cotangent of x in x's dtype: the real part for a real x (its imaginary part moves nothing)."""
        if r.dtype.kind == "c" and x.dtype.kind != "c":
            r = r.real
        return r.astype(x.dtype, copy=False)

    def pushforward(self, x: np.ndarray, tx: np.ndarray, constants: tuple) -> np.ndarray:
        self.check_x(x)
        tx = self._like_x(np.asarray(tx), x)
        # an engine may have to give it another way right now (torch's one forward-AD level, taken outside)
        boundary = boundary_of(self._ops.name) if self._ops is not NUMPY else None
        if boundary is not None:
            other = boundary.inner_pushforward(self.f, x, tx, constants)
            if other is not None:
                return other
        ctx = self._contexts(constants)
        native = self.native
        prep = self._prep(
            self._key("pushforward", constants, x, tx),
            lambda: di.prepare_pushforward(self.f, self.backend, native(x), native(tx), *ctx),
        )
        return to_host(prep.pushforward(native(x), native(tx), *ctx), "a pushforward")

    def pullback(self, x: np.ndarray, ty: np.ndarray, constants: tuple) -> np.ndarray:
        """The pullback in diface's convention (the adjoint of the pushforward under ⟨u, v⟩ = Re Σ
        conj(u)·v); outer engines of the transposed convention (JAX, autograd) conjugate around it."""
        self.check_x(x)
        ty = self._cotangent(x, ty, constants)
        ctx = self._contexts(constants)
        native = self.native
        prep = self._prep(
            self._key("pullback", constants, x, ty),
            lambda: di.prepare_pullback(self.f, self.backend, native(x), native(ty), *ctx),
        )
        r = to_host(prep.pullback(native(x), native(ty), *ctx), "a pullback")
        return self._like_x(r, x)

    def hvp(self, x: np.ndarray, ty: np.ndarray, v: np.ndarray, constants: tuple) -> np.ndarray:
        """The derivative of the pullback `ty @ J(x)` along `v`: the Hessian of `<ty, f(x)>` times v
        (⟨ty, y⟩ = Re Σ conj(ty)·y, whose gradient is the pullback of ty, for complex y)."""
        self.check_x(x)
        v = self._like_x(np.asarray(v), x)
        ty = self._cotangent(x, ty, constants)
        is_complex = ty.dtype.kind == "c"
        ctx = (Constant(self.native(np.conj(ty) if is_complex else ty)), *self._contexts(constants))
        native = self.native
        f = self.f
        ops = self._ops

        def weighted(x: Any, w: Any, *cs: Any) -> Any:
            y = f(x, *cs)
            # sum(y * w) by the namespace of what f returned (a traced value's, where the engine traces f
            # on values of its own), for arrays without a .sum() method (tf.Tensor) too
            s = (ops_for(y) or ops).vdot(y, w)
            return ops.real(s) if is_complex else s

        try:
            prep = self._prep(
                self._key("hvp", constants, x, ty, v),
                lambda: di.prepare_hvp(weighted, self.backend, native(x), native(v), *ctx),
            )
        except NotSupportedError as e:
            raise NotSupportedError(
                f"DifferentiateWith: second order through the boundary needs second derivatives from the inner "
                f"backend {self.backend!r}, which it cannot give ({e}); wrap f with a backend that has them "
                "(e.g. di.AutoJAX(), di.AutoTorch(), di.AutoTape())"
            ) from e
        r = to_host(prep.hvp(native(x), native(v), *ctx), "an hvp")
        return self._like_x(r, x)

    def batched(self, op: Callable, x: np.ndarray, t: np.ndarray, constants: tuple, b: int) -> np.ndarray:
        """`op(x, t, constants)`, or one result per row of `t` stacked when `b` (a batch axis leads)."""
        if not b:
            return op(x, t, constants)
        return np.stack([op(x, t[k], constants) for k in range(t.shape[0])])
