"""`AutoPyTensor`: PyTensor's `grad`, `Lop` and `Rop` on f's symbolic graph, one compiled
`pytensor.function` per operator.

PyTensor is symbolic: f receives `TensorVariable`s (write it with `pytensor.tensor`, NumPy-like) and is
traced once per input spec (x's shape and dtype, the shapes and dtypes of the context arrays, the other
context values) at preparation. Each operator is a graph built on that trace and compiled once:
gradients by `pytensor.grad`, pullbacks by `Lop` and pushforwards by `Rop` (PyTensor's Rop transposes
a `Lop` where an op has no R-rule), a batch of tangents as one stacked input (`vectorize_graph`,
PyTensor's vmap), Jacobians as the vectorized pullbacks of the output basis (`mode="reverse"`) or
pushforwards of the input basis (`mode="forward"`), Hessians and Hessian-vector products as the outer
mode applied to the gradient's graph. Context arrays are inputs of the compiled function (a new
`Constant` value does not recompile); other context values are constants of the graph, keyed by value.

PyTensor has no eager array type: NumPy arrays are its arrays (its functions take and return them), so
`array_ops` is NumPy's and NumPy input gives NumPy results, with nothing converted. Compiling costs far
more than calling (see `_compile`): compiled functions are cached per (f, operator, spec) and by their
graph's structure, compiled with PyTensor's default mode (C code). A compiled
function holds its own storage, so calls on one preparation are serialized by a lock (threads get
right results, one at a time). In-place functions are refused: symbolic tensors cannot be written to.

Modules, one job each (the names every engine uses, docs/add-a-backend.md): `_compile` (the compile mode,
a bounded cache, thread-safe calls), `_trace` (f traced into a graph on symbolic inputs), `_realify`
(complex intermediates as real pairs), `_eager` (f on NumPy arrays), `_ops` (`SymbolicOps`, for the core's
code inside a trace), `_kernels` (one compiled function per operator), `_second_order`, `_taylor`,
`_sparsity` (f's graph on index sets), `_boundary` (PyTensor outside `DifferentiateWith`), `_memory`
(`OpFromGraph` for `di.checkpoint`), `_namespace`
(`pytensor.tensor` plus the NumPy names it lacks; `diface.backends.pytensor.xp`, the module `xp` here,
its public name), `_direct` (PyTensor's own fastest calls, for `python -m diface bench`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._arrays import NUMPY, ArrayOps, register_array_ops
from ..._backend import Backend
from ..._boundary import register_boundary
from ..._derive import LaplacianMethod, SecondOrderPlan
from ..._engines import register_engine
from ..._errors import ArgumentError, NotSupportedError
from ..._kernel import Kernel
from ..._memory.engines import register_memory
from ..._problem import Problem, size_of
from ._eager import Eager
from ._kernels import (
    graph_kernel,
    jacobian_graph,
    problem_trace,
    pullback_graph,
    pushforward_graph,
)
from ._trace import Trace

__all__ = ["AutoPyTensor"]

_MODES = ("reverse", "forward")


@dataclass(frozen=True)
class AutoPyTensor(Backend):
    """PyTensor: `grad`, `Lop` (reverse) and `Rop` (forward) on f's graph, compiled with `pytensor.function`.

    Args:
        mode: "reverse" (default) or "forward": the direction Jacobians and derivatives sweep in
            (pullbacks of the output basis or pushforwards of the input basis, each one vectorized
            graph). Gradients are `pytensor.grad`, pullbacks `Lop`, pushforwards `Rop` in either mode.

    `f` is written with `pytensor.tensor` and receives symbolic tensors: it is traced, not run, so it
    cannot branch on values (use `pt.where` or `pytensor.ifelse`). NumPy arrays go in and come out.

    Example:
        >>> import numpy as np, pytensor.tensor as pt, diface as di
        >>> f = lambda x: pt.sum(x**3)
        >>> x = np.array([1.0, 2.0])
        >>> di.gradient(f, di.AutoPyTensor(), x)
        array([ 3., 12.])
        >>> prep = di.prepare_hessian(f, di.AutoPyTensor(), np.zeros(2))  # traced and compiled here
        >>> prep.hessian(x)
        array([[ 6.,  0.],
               [ 0., 12.]])
    """

    mode: str = "reverse"

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward", "reverse"})
    supports_inplace: ClassVar[bool] = False
    package: ClassVar[str | None] = "pytensor"
    extra: ClassVar[str | None] = "pytensor"

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ArgumentError(f"AutoPyTensor: mode must be 'reverse' or 'forward', got {self.mode!r}")

    # -- arrays --------------------------------------------------------------------------------
    def array_ops(self, x: Any) -> ArrayOps:
        """NumPy's: PyTensor computes on NumPy arrays (it has no eager array type of its own)."""
        self.require()
        if isinstance(x, (np.ndarray, np.generic, bool, int, float, list)):
            return NUMPY
        raise ArgumentError(
            f"AutoPyTensor takes NumPy arrays and numbers as x (it traces f on symbolic tensors itself), got "
            f"{type(x).__module__}.{type(x).__name__}"
        )

    def evaluator(self, f: Callable) -> Callable:
        """f computing on NumPy arrays (PyTensor's functions build graphs of constants there)."""
        return f if isinstance(f, Eager) else Eager(f)

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        """f's output shape and dtype from its trace (kept for the kernels); evaluated where the graph
        leaves a dimension unknown."""
        tr = problem_trace(problem)
        shape = tr.y.type.shape
        if any(s is None for s in shape):
            return problem.y_spec
        return tuple(int(s) for s in shape), np.dtype(tr.y.type.dtype)

    # -- first order ---------------------------------------------------------------------------
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        def build(tr: Trace, T: Any) -> dict:
            return {"value": tr.y, "result": pushforward_graph(tr, T)}

        return graph_kernel(problem, "pushforward", build, tangents, tangent_like=_like(tangents, problem.x))

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        y_like = np.zeros(*problem.y_spec)

        def build(tr: Trace, U: Any) -> dict:
            return {"value": tr.y, "result": pullback_graph(tr, U)}

        return graph_kernel(problem, "pullback", build, cotangents, tangent_like=_like(cotangents, y_like))

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        mode = self.mode

        def build(tr: Trace, _: Any) -> dict:
            return {"value": tr.y, "result": jacobian_graph(tr, mode)}

        return graph_kernel(problem, f"jacobian:{mode}", build)

    prepare_gradient = prepare_jacobian
    prepare_derivative = prepare_jacobian

    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        """The global pattern from f's graph (see `diface.backends.pytensor._sparsity`)."""
        from ._sparsity import graph_sparsity

        return graph_sparsity(problem, order == 2)

    # -- Taylor coefficients and Laplacians ------------------------------------------------------
    # nested `Rop`s on f's graph, one compiled program (`diface.backends.pytensor._taylor`): the core's
    # nested pushforward kernels would call compiled functions on symbolic tensors
    def prepare_taylor(self, problem: Problem, tangents: tuple, order: int) -> Kernel:
        from ._taylor import taylor_kernel

        return taylor_kernel(problem, tangents, order)

    def prepare_laplacian(self, problem: Problem, method: LaplacianMethod) -> Kernel:
        if method.method != "exact" or size_of(problem.x_shape) == 0:
            return super().prepare_laplacian(problem, method)
        from ._taylor import laplacian_kernel

        return laplacian_kernel(problem)

    # -- second order --------------------------------------------------------------------------
    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        from ._second_order import PyTensorNest

        if not isinstance(inner, AutoPyTensor):
            raise NotSupportedError(
                f"{self!r} differentiates graphs, and {inner!r} computes outside PyTensor's graph; use "
                "SecondOrder(AutoPyTensor(), AutoPyTensor()), another engine outside, or wrap the inner part "
                "in di.DifferentiateWith(f, inner)"
            )
        return PyTensorNest(self.mode, inner.mode, problem)


def _like(tangents: tuple, default: Any) -> Any:
    return tangents[0] if tangents else default


register_engine(
    AutoPyTensor,
    name="pytensor",
    namespace="diface.backends.pytensor.xp",
    direct="diface.backends.pytensor._direct:direct",
)


def _symbolic_ops() -> ArrayOps:
    from ._ops import SymbolicOps

    return SymbolicOps()


register_array_ops("pytensor", _symbolic_ops)  # the core's code inside a trace meets symbolic tensors


def _boundary() -> Any:
    from ._boundary import PyTensorBoundary

    return PyTensorBoundary()


register_boundary("pytensor", _boundary)


def _memory() -> Any:
    from ._memory import Memory

    return Memory()


register_memory("pytensor", _memory)
