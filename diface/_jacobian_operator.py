"""`jacobian_operator`: J at one point as a linear operator, for iterative solvers and eigensolvers.

It is made of two same-point preparations (`prepare_pushforward_same_point` and, on the first
transposed product, `prepare_pullback_same_point`), each made once with a batch of tangents and then
called with batches of any size: f is linearized at x once per direction, and `matmat` applies J to all
the columns of a matrix in one batched call.

Vectors are flat: J has shape `(y.size, x.size)`; `matvec` takes `(x.size,)` (or `(x.size, 1)`) and
returns `(y.size,)`; `matmat` takes `(x.size, k)` and returns `(y.size, k)`; `rmatvec` and `rmatmat` the
other way round.

Complex numbers (docs/complex.md): J is the complex derivative ∂f/∂z, a complex matrix, and `rmatvec` its
conjugate transpose (the pullback). For complex x it describes f only where f is holomorphic, which is
checked when the operator is made (as `jacobian` does); for a real x with complex outputs, products with
complex vectors apply J to their real and imaginary parts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ._backend import Backend
from ._call.complex import has_complex_dtype
from ._call.prepare import require_holomorphic
from ._call.trees.info import TreeInfo
from ._contexts import Context
from ._operators import prepare_pullback_same_point, prepare_pushforward_same_point
from ._problem import size_of

if TYPE_CHECKING:
    from ._call.prep import PullbackPrep

__all__ = ["JacobianOperator", "jacobian_operator"]


class JacobianOperator:
    """J of `f` at `x` over the backend's native arrays (torch tensors, JAX arrays): the methods of a
    `scipy.sparse.linalg.LinearOperator` on flat vectors of that library.

    Attributes:
        shape: `(y.size, x.size)`.
        dtype: the result dtype (the library's).
    """

    def __init__(self, f: Callable, backend: Backend, x: Any, contexts: tuple) -> None:
        self._f, self._backend, self._x, self._contexts = f, backend, x, contexts
        self._x_complex = has_complex_dtype(x)
        if self._x_complex:  # J is the complex derivative: a complex matrix only for holomorphic f
            x_info = TreeInfo(x, "x", "jacobian_operator", complex_mode="real")
            require_holomorphic(x_info, f, backend, x, contexts, None, False, "jacobian_operator", "jacobian_operator")
        push = self._push = prepare_pushforward_same_point(f, backend, x, (x,), *contexts, strict=False)
        self._pull: PullbackPrep | None = None
        # a complex array is held as real pairs by the preparation: its codec knows the user's shapes
        codec = push.codec
        xi = codec.xi if codec is not None and codec.xi is not None and codec.xi.single else None
        yi = codec.yi if codec is not None and codec.yi is not None and codec.yi.single else None
        self._y_complex = yi is not None
        self.x_shape = xi.shapes[0] if xi is not None else push.x_shape
        self.y_shape = yi.shapes[0] if yi is not None else push.y_shape
        self._y_dtype = yi.leaf_specs[0][1] if yi is not None else push.y_dtype
        self.shape = (size_of(self.y_shape), size_of(self.x_shape))
        dtype = push.user_dtype
        if xi is not None or yi is not None:
            dtype = np.result_type(dtype, np.complex64) if push.user_numpy else push.ops.complex_dtype(dtype)
        self.dtype = dtype
        #: a real x with complex outputs: J is complex, products with complex vectors act on their parts
        self._split = self._y_complex and not self._x_complex

    # -- products ----------------------------------------------------------------------------------
    def matvec(self, v: Any) -> Any:
        """`J v`: `(x.size,)` -> `(y.size,)` (a column `(x.size, 1)` gives a column)."""
        column = len(v.shape) == 2
        result = self._products(True, [self._reshape(v, self.x_shape)])[0]
        return self._reshape(result, (self.shape[0], 1) if column else (self.shape[0],))

    def rmatvec(self, w: Any) -> Any:
        """`Jᵀ w`: `(y.size,)` -> `(x.size,)`."""
        column = len(w.shape) == 2
        result = self._products(False, [self._reshape(w, self.y_shape)])[0]
        return self._reshape(result, (self.shape[1], 1) if column else (self.shape[1],))

    def matmat(self, V: Any) -> Any:
        """`J V` for `V` of shape `(x.size, k)`: the k products in one batch, `(y.size, k)`."""
        return self._columns(True, V, self.x_shape, self.shape[0])

    def rmatmat(self, W: Any) -> Any:
        """`Jᵀ W` for `W` of shape `(y.size, k)`: `(x.size, k)`."""
        return self._columns(False, W, self.y_shape, self.shape[1])

    def __matmul__(self, v: Any) -> Any:
        return self.matvec(v) if len(v.shape) == 1 else self.matmat(v)

    def __repr__(self) -> str:
        return f"<{self.shape[0]}x{self.shape[1]} JacobianOperator with dtype={self.dtype}>"

    # -- helpers -----------------------------------------------------------------------------------
    def _products(self, forward: bool, tangents: list) -> tuple:
        if self._split:  # J (a + ib) = Ja + i Jb;  Jᴴ w = pullback(w) + i pullback(-i w) (x real)
            ops = np if self._push.user_numpy else self._push.ops
            if forward:
                parts = [p for t in tangents for p in (ops.real(t), ops.imag(t))]
            else:
                parts = [p for w in tangents for p in (w, -1j * w)]
            done = self._linear_products(forward, parts)
            return tuple(a + 1j * b for a, b in zip(done[0::2], done[1::2]))
        return self._linear_products(forward, tangents)

    def _linear_products(self, forward: bool, tangents: list) -> tuple:
        if forward:
            return self._push.pushforward(self._x, tuple(tangents), *self._contexts)
        if self._pull is None:  # the reverse linearization, made on the first transposed product
            seed = self._zeros(self.y_shape, self._y_dtype, self._x)
            self._pull = prepare_pullback_same_point(
                self._f, self._backend, self._x, (seed,), *self._contexts, strict=False
            )
        return self._pull.pullback(self._x, tuple(tangents), *self._contexts)

    def _columns(self, forward: bool, V: Any, shape: tuple, rows: int) -> Any:
        k = V.shape[1]
        if k == 0:
            return self._zeros((rows, 0), self.dtype, V)
        tangents = [self._reshape(V[:, j], shape) for j in range(k)]
        results = self._products(forward, tangents)
        return self._stack_columns([self._reshape(r, (rows,)) for r in results])

    def _reshape(self, a: Any, shape: tuple) -> Any:
        return a.reshape(shape)

    def _stack_columns(self, columns: list) -> Any:
        return np.stack(columns, axis=1) if self._push.user_numpy else self._push.ops.stack(columns, axis=1)

    def _zeros(self, shape: tuple, dtype: Any, like: Any) -> Any:
        if self._push.user_numpy:
            return np.zeros(
                shape,
                dtype
                if isinstance(dtype, np.dtype)
                else self._push.ops.to_numpy(self._push.ops.zeros((), dtype)).dtype,
            )
        return self._push.ops.zeros(shape, dtype, like)


def jacobian_operator(f: Callable, backend: Backend, x: Any, *contexts: Context) -> Any:
    """J of `f` at `x` as a linear operator of shape `(y.size, x.size)`: `matvec` is the pushforward,
    `rmatvec` the pullback, `matmat`/`rmatmat` batches of them; f is linearized at `x` once (per
    direction), when the operator is made.

    For NumPy `x` the result is a `scipy.sparse.linalg.LinearOperator` (dtype the result's), ready for
    `scipy.sparse.linalg.gmres`, `lsqr`, `eigs`, `svds`. For native torch tensors or JAX arrays it is a
    `JacobianOperator` with the same methods over that library's flat vectors (results stay native, on
    x's device).

    Example:
        >>> import numpy as np, diface as di
        >>> from scipy.sparse.linalg import gmres
        >>> f = lambda x: np.array([2.0 * x[0], x[0] + 3.0 * x[1]])
        >>> J = di.jacobian_operator(f, di.AutoTape(), np.zeros(2))
        >>> J.shape, J @ np.array([1.0, 1.0])
        ((2, 2), array([2., 4.]))
        >>> dx, info = gmres(J, np.array([2.0, 4.0]), rtol=1e-12)
        >>> info, dx.round(8)
        (0, array([1., 1.]))
    """
    operator = JacobianOperator(f, backend, x, contexts)
    if not operator._push.user_numpy:
        return operator
    return _scipy_classes()[0](operator)


@functools.cache
def _scipy_classes() -> tuple[type, type]:
    """The `LinearOperator` subclasses, made on first use (SciPy is imported then)."""
    from scipy.sparse.linalg import LinearOperator

    class ScipyJacobian(LinearOperator):
        """J as a `scipy.sparse.linalg.LinearOperator` (see `diface.jacobian_operator`); `.jacobian` is the
        `JacobianOperator` underneath."""

        def __init__(self, operator: JacobianOperator) -> None:
            super().__init__(np.dtype(operator.dtype), operator.shape)
            self.jacobian = operator

        def _matvec(self, v: Any) -> Any:
            return self.jacobian.matvec(np.asarray(v).reshape(-1))

        def _rmatvec(self, w: Any) -> Any:
            return self.jacobian.rmatvec(np.asarray(w).reshape(-1))

        def _matmat(self, V: Any) -> Any:
            return self.jacobian.matmat(np.asarray(V))

        def _rmatmat(self, W: Any) -> Any:
            return self.jacobian.rmatmat(np.asarray(W))

        def _adjoint(self) -> Any:
            return Transposed(self)

    class Transposed(LinearOperator):
        """Jᵀ: the products of `ScipyJacobian` the other way round."""

        def __init__(self, parent: Any) -> None:
            super().__init__(parent.dtype, (parent.shape[1], parent.shape[0]))
            self.parent, self.jacobian = parent, parent.jacobian

        def _matvec(self, w: Any) -> Any:
            return self.jacobian.rmatvec(np.asarray(w).reshape(-1))

        def _rmatvec(self, v: Any) -> Any:
            return self.jacobian.matvec(np.asarray(v).reshape(-1))

        def _matmat(self, W: Any) -> Any:
            return self.jacobian.rmatmat(np.asarray(W))

        def _rmatmat(self, V: Any) -> Any:
            return self.jacobian.matmat(np.asarray(V))

        def _adjoint(self) -> Any:
            return self.parent

    return ScipyJacobian, Transposed
