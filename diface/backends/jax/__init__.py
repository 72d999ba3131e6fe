"""`AutoJAX`: JAX's `jvp`, `vjp` and `linearize`, batched with `vmap`, compiled whole with `jit`.

Every operator is one JAX computation built here: pushforwards are `jvp`s (a `vmap` of them for a
tuple of tangents), pullbacks `vjp`s, Jacobians, gradients and derivatives a `vmap` over the basis
of the input (`mode="forward"`, like `jax.jacfwd`) or of the output (`mode="reverse"`, like
`jax.jacrev`; a scalar output takes one `vjp`, like `jax.grad`); the default `mode="auto"` takes
the one with fewer products (forward where x has no more elements than f's output) and, where the
counts are close, compiles both and keeps the faster at preparation. Second-order operators nest two of
these in one computation: a plain `AutoJAX` is forward-over-reverse (`hvp` is a `jvp` of the
gradient, `hessian` the forward basis sweep of it, like `jax.hessian`), and `SecondOrder` of two
`AutoJAX` backends nests their modes as given. Same-point preparations keep a `linearize` (forward)
or `vjp` (reverse) of the point, so a call runs only the linear part.

With `jit=True` a preparation compiles the whole operator (and, separately, its full variant) for
the prepared shapes, so a prepared call is one compiled dispatch. Contexts that are arrays, numbers
or pytrees of them are traced arguments of the compiled function (a new value does not recompile);
Python bools and other objects are static arguments (compared by `==`: each distinct value compiles
once; they must be hashable). Unprepared calls run eagerly (compiling costs more than one call).
`jit=False` never compiles.

JAX arrays are immutable: no in-place functions, no `out=` into JAX arrays (NumPy input, and so
NumPy `out=` buffers, work), and functions cannot write into a `Cache` (one they only read works).
Without JAX's 64-bit mode a float64 NumPy array would silently become float32: that raises
`NotSupportedError` saying how to enable it.

Modules, one job each (the names every engine uses, docs/add-a-backend.md), none importing jax at
module import: `_ops` (`JaxOps`, JAX arrays as the core sees them), `_trees` (JAX's pytrees),
`_transforms` (traceable building blocks: jvp/vjp batches, basis sweeps, seeds), `_kernels` (whole
programs compiled per preparation, the direct path for x alone), `_linearize` (`jax.linearize` compiled
once), `_second_order` (two modes nested in one computation), `_taylor` (jet and nested jvps, the
collapsed Laplacian), `_sparsity` and `_sparsity_rules` (the jaxpr interpreted on index sets), `_sparse`
(compressed products and decompression as one program), `_boundary` (JAX outside `DifferentiateWith`),
`_memory` (`jax.checkpoint` for `di.checkpoint`; `di.scan` as one program: nested checkpointed
`lax.scan`s, or the binomial schedule as a `custom_vjp`).
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
from ..._errors import ArgumentError
from ..._kernel import Kernel, Result
from ..._linearization import Linearizer
from ..._memory.engines import register_memory
from ..._problem import Problem
from ._kernels import linear_kernel, make_kernel, one_program_kernel
from ._linearize import linearizer
from ._ops import JaxOps
from ._second_order import JaxNest
from ._transforms import Seeds, bind, pull, pull_with, push, push_with, sweep
from ._trees import JaxTrees  # noqa: F401 - registers JAX's pytrees as trees

__all__ = ["AutoJAX", "JaxOps"]

_MODES = ("auto", "forward", "reverse")


@dataclass(frozen=True)
class AutoJAX(Backend):
    """JAX: `jvp` (forward), `vjp` (reverse), batched with `vmap` and compiled with `jit`.

    Args:
        mode: "auto" (default), "forward" or "reverse": the direction Jacobians, gradients and
            derivatives sweep in (`jax.jacfwd`-like or `jax.jacrev`-like); "auto" picks per problem:
            fewer products wins, and both are compiled and timed at preparation where it is close.
            Pushforwards always use `jvp` and pullbacks `vjp`.
        jit: compile each prepared operator whole with `jax.jit` at preparation (default). With
            `jit=False` nothing is compiled, for functions JAX cannot trace.

    `f` is written with `jax.numpy`; it receives JAX arrays. NumPy input gives NumPy results, JAX
    input JAX results. float64 needs JAX's 64-bit mode (`jax.config.update("jax_enable_x64", True)`).

    Example:
        >>> import numpy as np, jax.numpy as jnp, diface as di
        >>> f = lambda x: jnp.sum(x**3)
        >>> x = np.array([1.0, 2.0], dtype=np.float32)
        >>> di.gradient(f, di.AutoJAX(), x)
        array([ 3., 12.], dtype=float32)
        >>> prep = di.prepare_hessian(f, di.AutoJAX(), np.zeros(2, np.float32))  # compiled here
        >>> prep.hessian(x)
        array([[ 6.,  0.],
               [ 0., 12.]], dtype=float32)
    """

    mode: str = "auto"
    jit: bool = True

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward", "reverse"})
    supports_inplace: ClassVar[bool] = False
    package: ClassVar[str | None] = "jax"
    extra: ClassVar[str | None] = "jax"

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ArgumentError(f"AutoJAX: mode must be 'auto', 'forward' or 'reverse', got {self.mode!r}")
        if not isinstance(self.jit, bool):
            raise ArgumentError(f"AutoJAX: jit must be True or False, got {self.jit!r}")

    # -- arrays --------------------------------------------------------------------------------
    def array_ops(self, x: Any) -> ArrayOps:
        ops = framework_ops("jax")  # imports jax
        if ops.is_native(x) or isinstance(x, (np.ndarray, np.generic, bool, int, float, list)):
            return ops
        raise ArgumentError(
            f"AutoJAX takes JAX arrays, NumPy arrays and numbers as x, got {type(x).__module__}.{type(x).__name__}"
        )

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        """f's output shape and dtype from an abstract trace (`jax.eval_shape`) where the preparation
        compiles anyway: running f eagerly would compile each of its operations for x's shape first.
        f that cannot be traced abstractly (a Python branch on x) is evaluated as it is."""
        if not self._jits(problem) or problem.y is not None:
            return problem.y_spec
        import jax

        try:
            out = jax.eval_shape(bind(problem.f, problem.context_values), problem.x)
        except Exception:  # whatever f does under tracing, evaluating it says it plainly
            return problem.y_spec
        if not isinstance(out, jax.ShapeDtypeStruct):
            return problem.y_spec  # None, a list, a tuple...: the evaluation says what is wrong
        return tuple(out.shape), out.dtype

    def second_order_backends(self) -> tuple[Backend, Backend]:
        # forward over reverse: the cheapest Hessian-vector products (what jax.hessian does)
        return dataclasses.replace(self, mode="forward"), dataclasses.replace(self, mode="reverse")

    # -- first order ---------------------------------------------------------------------------
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        f = problem.f

        def pushforward(full: bool) -> Callable:
            def run(x: Any, tangents: tuple, cv: tuple) -> Result:
                y, results, _ = push(bind(f, cv), x, tangents)
                return Result(y if full else None, result=results)

            return run

        return make_kernel(problem, pushforward, tangents, self._jits(problem), per_tangent=True)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        f = problem.f

        def pullback(full: bool) -> Callable:
            def run(x: Any, cotangents: tuple, cv: tuple) -> Result:
                y, results, _ = pull(bind(f, cv), x, cotangents)
                return Result(y if full else None, result=results)

            return run

        return make_kernel(problem, pullback, cotangents, self._jits(problem), per_tangent=True)

    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        import jax

        y, linear = jax.linearize(bind(problem.f, problem.context_values), problem.x)
        return linear_kernel(problem, Result(y), linear, push_with, tangents, self._jits(problem))

    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        import jax

        y, transposed = jax.vjp(bind(problem.f, problem.context_values), problem.x)
        return linear_kernel(problem, Result(y), transposed, pull_with, cotangents, self._jits(problem))

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        return choose_kernel(self, problem, lambda mode: self._jacobian_kernel(problem, mode))

    prepare_gradient = prepare_jacobian
    prepare_derivative = prepare_jacobian

    def _jacobian_kernel(self, problem: Problem, mode: str) -> Kernel:
        """The Jacobian as one computation: `vmap` of `jvp`s over the input basis (forward, like
        `jax.jacfwd`) or of `vjp`s over the output basis (reverse, like `jax.jacrev`)."""
        f = problem.f
        seeds = Seeds(traced=self._jits(problem))

        def jacobian(full: bool) -> Callable:
            def run(x: Any, extra: Any, cv: tuple) -> Result:
                y, jac, _ = sweep(mode, bind(f, cv), x, seeds)
                return Result(y if full else None, result=jac)

            return run

        return self._kernel(problem, jacobian, None)

    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer:
        """`jax.linearize` compiled once for the problem's shapes; its linear map goes to compiled
        batched products (see `diface.backends.jax._linearize`)."""
        return linearizer(problem, self._jits(problem))

    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        """The global pattern from f's jaxpr (see `diface.backends.jax._sparsity`)."""
        from ._sparsity import jaxpr_sparsity

        return jaxpr_sparsity(problem.f, problem.x, problem.context_values, order == 2)

    def prepare_sparse_jacobian(self, problem: Problem, coloring: Any) -> Kernel:
        """Compressed products and decompression compiled as one program (`diface.backends.jax._sparse`)."""
        from ._sparse import sparse_jacobian_kernel

        return sparse_jacobian_kernel(problem, coloring, self._jits(problem))

    def prepare_sparse_hessian(self, problem: Problem, coloring: Any) -> Kernel:
        from ._sparse import sparse_hessian_kernel

        return sparse_hessian_kernel(problem, coloring, self._jits(problem))

    # -- Taylor mode ------------------------------------------------------------------------------
    def prepare_taylor(self, problem: Problem, tangents: tuple, order: int) -> Kernel:
        """`jax.experimental.jet` where it has a rule for every primitive of f's jaxpr that depends on
        x, else `order` nested `jvp`s; a batch of directions under `vmap`; compiled whole (see
        `diface.backends.jax._taylor`)."""
        from ._taylor import batched_series, jet_covers

        f = problem.f
        use_jet = jet_covers(bind(f, problem.context_values), problem.x)
        if use_jet is None:  # f cannot be traced: nested pushforwards of its concrete values
            return super().prepare_taylor(problem, tangents, order)

        def taylor(x: Any, tangents: tuple, cv: tuple) -> Result:
            y, coefficients = batched_series(bind(f, cv), x, tangents, order, use_jet)
            return Result(y, result=coefficients)

        # one program: the value comes with the series (jet's primal, the nest's innermost value), so
        # the plain variant is the full one's result alone, and the preparation compiles once
        return one_program_kernel(problem, taylor, tangents, self._jits(problem))

    def prepare_laplacian(self, problem: Problem, method: LaplacianMethod) -> Kernel:
        """The exact Laplacian by one collapsed forward propagation through f's jaxpr (the value, the
        Jacobian and one summed second-order coefficient), compiled whole; by second derivatives along
        the basis of x (nested `jvp`s under `vmap`, summed) where the jaxpr holds what the collapsed
        propagation cannot walk. Hutchinson's estimate is the core's (`diface._derive.laplacian`)."""
        import jax

        from ._taylor import collapsed_laplacian, swept_laplacian

        if method.method != "exact" or 0 in problem.x_shape:
            return super().prepare_laplacian(problem, method)
        f, fn = problem.f, bind(problem.f, problem.context_values)
        for laplacian in (collapsed_laplacian, swept_laplacian):
            try:
                jax.eval_shape(lambda x: laplacian(fn, x), problem.x)  # noqa: B023 - called at once
                break
            except Exception:  # an operation it cannot take: the next way, then the core's
                continue
        else:
            return super().prepare_laplacian(problem, method)
        compute = laplacian

        def program(full: bool) -> Callable:
            def run(x: Any, extra: Any, cv: tuple) -> Result:
                y, jac, lap = compute(bind(f, cv), x)
                return Result(y, jac, lap) if full else Result(result=lap)

            return run

        return self._kernel(problem, program, None)

    # -- second order (this backend outside, `inner` inside) -------------------------------------
    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoJAX):
            return None  # another engine inside: the core composes the two
        return JaxNest(self, inner, problem)

    # -- kernels ---------------------------------------------------------------------------------
    def _jits(self, problem: Problem) -> bool:
        # an unprepared call runs once: compiling would cost more than it saves
        return self.jit and not problem.single_use

    def _kernel(self, problem: Problem, program: Callable[[bool], Callable], extra: Any) -> Kernel:
        return make_kernel(problem, program, extra, self._jits(problem))


def _enable_x64() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)


register_engine(AutoJAX, name="jax", namespace="jax.numpy", float64=_enable_x64)


def _boundary() -> Any:
    from ._boundary import JaxBoundary

    return JaxBoundary()


register_boundary("jax", _boundary)


def _memory_hooks() -> Any:
    from ._memory import Memory

    return Memory()


register_memory("jax", _memory_hooks)
