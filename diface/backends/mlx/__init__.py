"""`AutoMLX`: MLX's `mx.jvp` and `mx.vjp`, batched with `mx.vmap`, compiled with `mx.compile`.

Every operator is one MLX computation built here: pushforwards are `jvp`s (a `vmap` of them for a tuple of
tangents), pullbacks `vjp`s, Jacobians, gradients and derivatives a `vmap` over the basis of the input
(`mode="forward"`, like `jacfwd`) or of the output (`mode="reverse"`, like `jacrev`; a scalar output takes
one `vjp`, like `mx.grad`); `mode="auto"` takes the one with fewer products and, where the counts are close,
compiles both and keeps the faster at preparation. Second-order operators nest two of these in one
computation: a plain `AutoMLX` is forward over reverse (`hvp` a `jvp` of the gradient, `hessian` a `vmap`
of them), and `SecondOrder` of two `AutoMLX` nests their modes as given.

With `compile=True` a preparation compiles each operator (and its full variant) with `mx.compile` and
traces it there, so a prepared call is one compiled call; results are evaluated (`mx.eval`) before they
are returned. MLX is not thread-safe: every MLX computation diface runs holds one lock (see `_lock`).

Modules, one job each (the names every engine uses, docs/add-a-backend.md): `_lock` (where and how every
MLX computation runs), `_ops` (`MlxOps`), `_namespace` (`mlx.core` plus what MLX lacks; also
`diface.backends.mlx.numpy`, the module `numpy` here), `_transforms` (`mx.jvp`/`mx.vjp`, batched by
`mx.vmap`), `_kernels` (one `mx.compile`d program per variant), `_second_order`, `_taylor`, `_memory`
(a recomputing `mx.custom_function` for `di.checkpoint`), `_boundary`
(MLX outside `DifferentiateWith`), `_direct` (MLX's own fastest calls, for `python -m diface bench`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._arrays import ArrayOps, framework_ops
from ..._backend import Backend
from ..._boundary import register_boundary
from ..._derive import LaplacianMethod, SecondOrderPlan, choose_kernel
from ..._engines import register_engine
from ..._errors import ArgumentError, NotSupportedError
from ..._kernel import Kernel, Result
from ..._memory.engines import register_memory
from ..._problem import Problem, size_of
from ._kernels import forward_or_reverse, make_kernel
from ._lock import MLX_LOCK, on_mlx_thread
from ._ops import MlxOps, mx_dtype
from ._transforms import Basis, bind, pull, push, sweep

__all__ = ["AutoMLX", "MlxOps"]

_MODES = ("auto", "forward", "reverse")


@dataclass(frozen=True)
class AutoMLX(Backend):
    """MLX: `mx.jvp` (forward), `mx.vjp` (reverse), batched with `mx.vmap` and compiled with `mx.compile`.

    Args:
        mode: "auto" (default), "forward" or "reverse": the direction Jacobians, gradients and
            derivatives sweep in (`jacfwd`-like or `jacrev`-like); "auto" picks per problem: fewer
            products wins, and both are compiled and timed at preparation where it is close.
            Pushforwards always use `mx.jvp` and pullbacks `mx.vjp`.
        compile: compile each prepared operator with `mx.compile` at preparation (default). Functions
            that evaluate arrays themselves (`.item()`, NumPy inside) run uncompiled; `compile=False`
            never compiles.

    `f` is written with `mlx.core` (or `diface.backends.mlx.numpy`, which adds the NumPy names MLX lacks);
    it receives MLX arrays. NumPy input gives NumPy results of the same dtype, MLX input MLX results.
    float64 stays float64 (on MLX's CPU device, where MLX has it; elsewhere `ArgumentError`); MLX has no
    complex128. MLX arrays are immutable to diface: no in-place `f(y, x)`, no `out=` into MLX arrays.

    Example:
        >>> import numpy as np, mlx.core as mx, diface as di
        >>> f = lambda x: mx.sum(x**3)
        >>> x = np.array([1.0, 2.0])
        >>> di.gradient(f, di.AutoMLX(), x)
        array([ 3., 12.])
        >>> prep = di.prepare_hessian(f, di.AutoMLX(), np.zeros(2))  # compiled here
        >>> prep.hessian(x)
        array([[ 6.,  0.],
               [ 0., 12.]])
    """

    mode: str = "auto"
    compile: bool = True

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward", "reverse"})
    supports_inplace: ClassVar[bool] = False
    package: ClassVar[str | None] = "mlx"
    extra: ClassVar[str | None] = "mlx"
    #: MLX's CPU float64 sin, cos and exp (and what is made of them) are float32-accurate approximations
    #: (relative errors about 1e-8, measured on MLX 0.32): results are accurate to about sqrt(eps) in float64
    accuracy_exponent: ClassVar[float] = 0.5

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ArgumentError(f"AutoMLX: mode must be 'auto', 'forward' or 'reverse', got {self.mode!r}")
        if not isinstance(self.compile, bool):
            raise ArgumentError(f"AutoMLX: compile must be True or False, got {self.compile!r}")

    # -- arrays --------------------------------------------------------------------------------
    def array_ops(self, x: Any) -> ArrayOps:
        ops = framework_ops("mlx")  # imports mlx
        if ops.is_native(x) or isinstance(x, (np.ndarray, np.generic, bool, int, float, list)):
            return ops
        raise ArgumentError(
            f"AutoMLX takes MLX arrays, NumPy arrays and numbers as x, got {type(x).__module__}.{type(x).__name__}"
        )

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        return on_mlx_thread(lambda: problem.y_spec)

    def second_order_backends(self) -> tuple[Backend, Backend]:
        # forward over reverse: the cheapest Hessian-vector products
        return dataclasses.replace(self, mode="forward"), dataclasses.replace(self, mode="reverse")

    # -- first order ---------------------------------------------------------------------------
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        return self._products(problem, tangents, push)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self._products(problem, cotangents, pull)

    def _products(self, problem: Problem, extra: tuple, products: Callable) -> Kernel:
        f = problem.f

        def program(full: bool) -> Callable:
            def run(x: Any, extra: tuple, cv: tuple) -> Result:
                fn = bind(f, cv)
                return Result(fn(x) if full else None, result=products(fn, x, extra))

            return run

        return self._kernel(problem, program, extra)

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        return choose_kernel(
            self, problem, lambda mode: forward_or_reverse(lambda m: self._jacobian_kernel(problem, m), mode)
        )

    prepare_gradient = prepare_jacobian
    prepare_derivative = prepare_jacobian

    def _jacobian_kernel(self, problem: Problem, mode: str) -> Kernel:
        """The Jacobian as one computation: a `vmap` of `jvp`s over the input basis (forward) or of
        `vjp`s over the output basis (reverse)."""
        f = problem.f
        with MLX_LOCK:
            y_shape, y_dtype = problem.y_spec
            x_basis, y_basis = Basis(problem.x_shape, mx_dtype(problem.x_dtype)), Basis(y_shape, mx_dtype(y_dtype))

        def program(full: bool) -> Callable:
            def run(x: Any, extra: Any, cv: tuple) -> Result:
                fn = bind(f, cv)
                return Result(fn(x) if full else None, result=sweep(mode, fn, x, x_basis, y_basis))

            return run

        return self._kernel(problem, program, None)

    # -- Taylor coefficients and Laplacians ------------------------------------------------------
    # nested `mx.jvp`s in one program (`diface.backends.mlx._taylor`), compiled or not: the core's nested
    # pushforward kernels would give zeros past the first coefficient (a kernel's results are evaluated,
    # and `mx.eval` inside an `mx.jvp` trace makes them constants)
    def prepare_taylor(self, problem: Problem, tangents: tuple, order: int) -> Kernel:
        from ._taylor import taylor_kernel

        return taylor_kernel(problem, tangents, order, self.compile)

    def prepare_laplacian(self, problem: Problem, method: LaplacianMethod) -> Kernel:
        if method.method != "exact" or size_of(problem.x_shape) == 0:
            return super().prepare_laplacian(problem, method)
        from ._taylor import laplacian_kernel

        return laplacian_kernel(problem, self.compile)

    def check_complex(self, where: str) -> None:
        raise NotSupportedError(
            f"{where}: AutoMLX does not differentiate functions of complex inputs or outputs: MLX has no complex128, "
            "and its reverse-mode rule of complex powers is conjugated (mx.vjp of z**2 gives conj(2z), MLX 0.32), so "
            "pullbacks through complex values would be wrong; use di.AutoJAX() or di.AutoTorch() for them"
        )

    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        raise NotSupportedError(
            f"{self!r} has no sparsity tracer (MLX exposes no graph of f to read a global pattern from); use "
            "di.DenseSparsityDetector(di.AutoMLX()) (the pattern at the preparation point) or di.KnownSparsity(pattern)"
        )

    # -- second order (this backend outside, `inner` inside) -------------------------------------
    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoMLX):
            return None  # another engine inside: the core composes the two
        from ._second_order import MlxNest

        with MLX_LOCK:
            return MlxNest(self, inner, problem)

    # -- kernels ---------------------------------------------------------------------------------
    def _kernel(self, problem: Problem, program: Callable[[bool], Callable], extra: Any) -> Kernel:
        return make_kernel(problem, program, extra, self.compile)


register_engine(AutoMLX, name="mlx", namespace="diface.backends.mlx.numpy", direct="diface.backends.mlx._direct:direct")


def _boundary() -> Any:
    from ._boundary import MlxBoundary

    return MlxBoundary()


register_boundary("mlx", _boundary)


def _memory() -> Any:
    from ._memory import Memory

    return Memory()


register_memory("mlx.core", _memory)
