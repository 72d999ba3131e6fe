"""`AutoTensorFlow`: TensorFlow's `GradientTape` and `ForwardAccumulator`, traced with `tf.function`.

See the class docstring. Importing this package imports no TensorFlow: it is imported on first use.

Modules, one job each (the names every engine uses, docs/add-a-backend.md): `_env` (TensorFlow imported
quietly, once), `_ops` (`TensorFlowOps`), `_namespace` (`tensorflow.experimental.numpy` plus `fft`),
`_transforms` (`ForwardAccumulator` and `GradientTape`, batched), `_kernels` (one `tf.function` per
operator and variant, traced at preparation), `_second_order`, `_taylor`, `_sparsity` (the traced graph
on index sets), `_boundary` (TensorFlow outside `DifferentiateWith`), `_memory` (a
recomputing custom gradient for `di.checkpoint`), `_direct` (TensorFlow's own fastest
calls, for `python -m diface bench`).
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
from ..._derive import LaplacianMethod, SecondOrderPlan
from ..._derive.mode import sweep_mode
from ..._engines import register_engine
from ..._errors import ArgumentError
from ..._kernel import Kernel, Result
from ..._memory.engines import register_memory
from ..._problem import Problem, size_of
from . import _ops  # noqa: F401 - registers TensorFlowOps (instantiated only once tensorflow is imported)
from ._kernels import make_kernel
from ._transforms import bind, pull, push, sweep

__all__ = ["AutoTensorFlow"]

_MODES = ("auto", "forward", "reverse")

#: the highest order computed by nested ForwardAccumulators in one graph (TensorFlow 2.21, measured): from
#: order 4 on, tracing them fails inside TensorFlow for functions whose operations are function calls
#: (NumPy-behavior `z**5` and `1/(2+z)`: an IndexError in `ConcreteFunction.outputs`), and where it works it
#: takes seconds (each accumulator transposes the inner ones' backward functions: order 6 of sin traced
#: in 27 s); the core's nested pushforwards are right there, if slow to trace too
NATIVE_TAYLOR_ORDER = 3


@dataclass(frozen=True)
class AutoTensorFlow(Backend):
    """TensorFlow: `tf.autodiff.ForwardAccumulator` (forward), `tf.GradientTape` (reverse), each prepared
    operator traced into one `tf.function`.

    Args:
        mode: "auto" (default), "forward" or "reverse": the direction Jacobians, gradients and
            derivatives sweep in (`ForwardAccumulator`s of the input basis, batched by
            `tf.vectorized_map`, or the tape's `jacobian`); "auto" picks per problem (fewer products wins,
            forward on a tie). Pushforwards always use the
            accumulator, pullbacks the tape (a batch of cotangents: one `tape.jacobian` of their inner
            products with f's output).
        jit: trace each prepared operator with `tf.function` at preparation (default), with an input
            signature fixed to the prepared shapes and dtypes, so a prepared call is one graph dispatch and
            never retraces. With `jit=False` everything runs eagerly, for functions TensorFlow cannot trace.

    `f` receives `tf.Tensor`s and is written with TensorFlow (`tf.*` or `tensorflow.experimental.numpy`);
    float64 and float32 are kept. NumPy input gives NumPy results, tensor input tensor results. Hessians
    and Hessian-vector products are forward over reverse (a `ForwardAccumulator` around a `GradientTape`);
    `SecondOrder(AutoTensorFlow(m1), AutoTensorFlow(m2))` nests other modes in one graph.

    Contexts that are tensors, arrays, floats or complex numbers (or `tf.nest` structures of them) are
    traced inputs: a new `Constant` value runs the same graph. Python ints, bools and other objects are
    static (each distinct, hashable value traces once). Tensors are immutable: no in-place functions, no
    writes into a `Cache`, no `out=` into tensors (NumPy `out=` buffers work).

    Global effects, on diface's first use of TensorFlow: `TF_CPP_MIN_LOG_LEVEL=2` is set before diface
    first imports TensorFlow, only where it is unset (and the import's oneDNN notices are dropped), and
    NumPy behavior is enabled (`tf.experimental.numpy.experimental_enable_numpy_behavior()`: `x.T`,
    `matrix @ vector`, NumPy's type promotion), which f written NumPy-style needs.

    Example:
        >>> import numpy as np, tensorflow as tf, diface as di
        >>> f = lambda x: tf.reduce_sum(x**3)
        >>> x = np.array([1.0, 2.0])
        >>> di.gradient(f, di.AutoTensorFlow(), x)
        array([ 3., 12.])
        >>> prep = di.prepare_hessian(f, di.AutoTensorFlow(), np.zeros(2))  # traced here
        >>> prep.hessian(x)
        array([[ 6.,  0.],
               [ 0., 12.]])
    """

    mode: str = "auto"
    jit: bool = True

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward", "reverse"})
    supports_inplace: ClassVar[bool] = False
    package: ClassVar[str | None] = "tensorflow"
    extra: ClassVar[str | None] = "tensorflow"

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ArgumentError(f"AutoTensorFlow: mode must be 'auto', 'forward' or 'reverse', got {self.mode!r}")
        if not isinstance(self.jit, bool):
            raise ArgumentError(f"AutoTensorFlow: jit must be True or False, got {self.jit!r}")

    # -- arrays --------------------------------------------------------------------------------
    def array_ops(self, x: Any) -> ArrayOps:
        self.require()
        from ._env import tf

        tf()  # imported quietly, NumPy behavior on (see the class docstring)
        ops = framework_ops("tensorflow")
        if ops.is_native(x) or isinstance(x, (np.ndarray, np.generic, bool, int, float, list)):
            return ops
        raise ArgumentError(
            f"AutoTensorFlow takes tf.Tensors, NumPy arrays and numbers as x, got "
            f"{type(x).__module__}.{type(x).__name__}"
        )

    def second_order_backends(self) -> tuple[Backend, Backend]:
        # outside "auto": forward over reverse for Hessian-vector products, the tape's jacobian of the gradient
        # for Hessians (see `diface.backends.tensorflow._second_order`)
        return dataclasses.replace(self, mode="auto"), dataclasses.replace(self, mode="reverse")

    # -- first order ---------------------------------------------------------------------------
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        return self._products(problem, push, tangents)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        return self._products(problem, pull, cotangents)

    def _products(self, problem: Problem, products: Callable, extra: tuple) -> Kernel:
        f = problem.f

        def program(full: bool) -> Callable:
            def run(x: Any, extra: tuple, cv: tuple) -> Result:
                y, results = products(bind(f, cv), x, extra)
                return Result(y if full else None, result=results)

            return run

        return make_kernel(problem, program, extra, self._traces(problem), per_tangent=True)

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        # "auto": the mode with fewer products, without tracing and timing both (tracing costs a tenth of a
        # second per operator, more than the two sweeps differ on the problems where the counts are close);
        # reverse on a tie: the tape's pfor-vectorized jacobian measured 1.2x faster than a vectorized map
        # of accumulators (n = m = 100)
        mode = sweep_mode(self, problem)
        if self.mode == "auto" and mode == "forward" and size_of(problem.x_shape) == size_of(problem.y_spec[0]):
            mode = "reverse"
        return self._jacobian_kernel(problem, mode)

    prepare_gradient = prepare_jacobian
    prepare_derivative = prepare_jacobian

    def _jacobian_kernel(self, problem: Problem, mode: str) -> Kernel:
        f = problem.f

        def program(full: bool) -> Callable:
            def run(x: Any, extra: Any, cv: tuple) -> Result:
                y, jac = sweep(mode, bind(f, cv), x)
                return Result(y if full else None, result=jac)

            return run

        return make_kernel(problem, program, None, self._traces(problem))

    # -- Taylor coefficients and Laplacians ------------------------------------------------------
    def prepare_taylor(self, problem: Problem, tangents: tuple, order: int) -> Kernel:
        # nested ForwardAccumulators in one traced graph (`diface.backends.tensorflow._taylor`) up to
        # NATIVE_TAYLOR_ORDER; eagerly (jit=False, a one-off call) and beyond it the core's nested
        # pushforwards (eagerly on eager_push's tapes rather than the accumulator's per-operation traced JVPs)
        if order > NATIVE_TAYLOR_ORDER or not self._native_taylor(problem):
            return super().prepare_taylor(problem, tangents, order)
        from ._taylor import taylor_kernel

        return taylor_kernel(problem, tangents, order, True)

    def prepare_laplacian(self, problem: Problem, method: LaplacianMethod) -> Kernel:
        if method.method != "exact" or not self._native_taylor(problem):
            return super().prepare_laplacian(problem, method)
        from ._taylor import laplacian_kernel

        return laplacian_kernel(problem, True)

    def _native_taylor(self, problem: Problem) -> bool:
        # real x with at least one entry, traced (the core handles the empty and complex cases)
        from ._env import tf

        floating = tf().as_dtype(problem.x_dtype).is_floating
        return self._traces(problem) and size_of(problem.x_shape) > 0 and floating

    # -- sparsity --------------------------------------------------------------------------------
    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        """The global pattern from f's traced graph (see `diface.backends.tensorflow._sparsity`)."""
        from ._sparsity import graph_sparsity

        return graph_sparsity(problem.f, problem.x, problem.context_values, order == 2)

    # -- second order (this backend outside, `inner` inside) -------------------------------------
    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoTensorFlow):
            return None  # another engine inside: the core composes the two
        from ._second_order import TensorFlowNest

        return TensorFlowNest(self, inner, problem)

    def _traces(self, problem: Problem) -> bool:
        # an unprepared call runs once: tracing would cost more than it saves
        return self.jit and not problem.single_use


register_engine(
    AutoTensorFlow,
    name="tensorflow",
    namespace="diface.backends.tensorflow._namespace",
    direct="diface.backends.tensorflow._direct:direct",
)


def _boundary() -> Any:
    from ._boundary import TensorFlowBoundary

    return TensorFlowBoundary()


register_boundary("tensorflow", _boundary)


def _memory() -> Any:
    from ._memory import Memory

    return Memory()


register_memory("tensorflow", _memory)
