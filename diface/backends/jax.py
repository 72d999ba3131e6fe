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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._arrays import ArrayOps, framework_ops, register_array_ops
from .._backend import Backend
from .._derive import SecondOrderPlan, choose_kernel
from .._errors import ArgumentError, NotSupportedError
from .._linearization import Linearization, Linearizer
from .._problem import Kernel, Problem

__all__ = ["AutoJAX", "JaxOps"]

_MODES = ("auto", "forward", "reverse")
_X64_HINT = (
    'enable 64-bit mode with jax.config.update("jax_enable_x64", True) at startup (or the environment '
    "variable JAX_ENABLE_X64=1), or pass float32 arrays"
)


class JaxOps(ArrayOps):
    """JAX arrays (and tracers): immutable, on the device of the array they are made like."""

    name = "jax"
    mutable = False

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp

        self.jax = jax
        self.jnp = jnp
        self.array_types = (jax.Array,)
        self._default_device = jax.devices()[0]

    # conversions -----------------------------------------------------------------------------
    def asarray(self, a: Any, like: Any = None) -> Any:
        if isinstance(a, self.jax.Array):
            return a
        a = np.asarray(a)
        self.check_precision(a.dtype)
        device = device_of(like)
        if device is None or device == self._default_device:
            return self.jnp.asarray(a)  # several times faster than naming the device
        return self.jnp.asarray(a, device=device)

    def check_precision(self, dtype: Any) -> None:
        """Raise `NotSupportedError` if JAX would store `dtype` with less precision (64-bit mode off)."""
        if np.dtype(dtype).kind in "fc" and self.jax.dtypes.canonicalize_dtype(dtype) != dtype:
            raise NotSupportedError(
                f"AutoJAX: a {np.dtype(dtype)} array would silently become "
                f"{self.jax.dtypes.canonicalize_dtype(dtype)} because JAX's 64-bit mode is off; {_X64_HINT}"
            )

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.array(a)  # a writable copy (np.asarray of a JAX array is a read-only view)

    # construction ----------------------------------------------------------------------------
    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.jnp.zeros(shape, dtype, device=device_of(like))

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.jnp.eye(n, dtype=dtype, device=device_of(like))

    def copy(self, a: Any) -> Any:
        return self.jnp.array(a, copy=True)

    # shape -----------------------------------------------------------------------------------
    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.jnp.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.jnp.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return self.jnp.concatenate(arrays)

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return self.jnp.moveaxis(a, source, destination)

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        rows = self.jnp.eye(hi - lo, n, lo, dtype=dtype, device=device_of(like))
        return rows.reshape((hi - lo, *shape))

    # arithmetic ------------------------------------------------------------------------------
    def matmul(self, a: Any, b: Any) -> Any:
        return self.jnp.matmul(a, b)

    def vdot(self, a: Any, b: Any) -> Any:
        return self.jnp.sum(a * b)

    def abs(self, a: Any) -> Any:
        return self.jnp.abs(a)

    def max(self, a: Any) -> Any:
        return self.jnp.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.jnp.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.jnp.imag(a)

    # writing: JAX arrays cannot be written -----------------------------------------------------
    def copyto(self, dst: Any, src: Any) -> None:
        raise NotSupportedError("JAX arrays are immutable and cannot be written into")

    def flat_view(self, a: Any) -> Any:
        raise NotSupportedError("JAX arrays are immutable: there are no writable views")

    def shares_memory(self, a: Any, b: Any) -> bool:
        return False  # nothing can be written through an immutable array

    def equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))

    # dtypes ----------------------------------------------------------------------------------
    def astype(self, a: Any, dtype: Any) -> Any:
        return self.jnp.asarray(a).astype(dtype)

    def result_type(self, *dtypes: Any) -> Any:
        return self.jnp.result_type(*dtypes)

    def is_floating(self, dtype: Any) -> bool:
        return bool(self.jnp.issubdtype(dtype, self.jnp.floating))

    def is_complex(self, dtype: Any) -> bool:
        return bool(self.jnp.issubdtype(dtype, self.jnp.complexfloating))

    def eps(self, dtype: Any) -> float:
        return float(self.jnp.finfo(dtype).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return self.jnp.result_type(dtype, self.jnp.complex64)


register_array_ops("jax", JaxOps)


def device_of(like: Any) -> Any:
    """The single device a concrete JAX array lives on, else None (tracers, NumPy, multi-device)."""
    device = getattr(like, "device", None) if like is not None else None
    if device is None:
        return None
    import jax

    return device if isinstance(device, jax.Device) else None


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
    cli_name: ClassVar[str] = "jax"

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

    def array_namespace(self) -> Any:
        import jax.numpy

        return jax.numpy

    def configure_for_float64(self) -> None:
        import jax

        jax.config.update("jax_enable_x64", True)

    def second_order_backends(self) -> tuple[Backend, Backend]:
        # forward over reverse: the cheapest Hessian-vector products (what jax.hessian does)
        return dataclasses.replace(self, mode="forward"), dataclasses.replace(self, mode="reverse")

    # -- first order ---------------------------------------------------------------------------
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        f = problem.f

        def pushforward(full: bool) -> Callable:
            def run(x: Any, tangents: tuple, cv: tuple) -> tuple:
                y, results, _ = push(bind(f, cv), x, tangents)
                return (y if full else None), results

            return run

        return self._kernel(problem, pushforward, tangents)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        f = problem.f

        def pullback(full: bool) -> Callable:
            def run(x: Any, cotangents: tuple, cv: tuple) -> tuple:
                y, results, _ = pull(bind(f, cv), x, cotangents)
                return (y if full else None), results

            return run

        return self._kernel(problem, pullback, cotangents)

    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        import jax

        y, linear = jax.linearize(bind(problem.f, problem.context_values), problem.x)
        return linear_kernel(problem, (y,), linear, push_with, tangents, self._jits(problem))

    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        import jax

        y, transposed = jax.vjp(bind(problem.f, problem.context_values), problem.x)
        return linear_kernel(problem, (y,), transposed, pull_with, cotangents, self._jits(problem))

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
            def run(x: Any, extra: Any, cv: tuple) -> tuple:
                y, jac, _ = sweep(mode, bind(f, cv), x, seeds)
                return (y if full else None), jac

            return run

        return self._kernel(problem, jacobian, None)

    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer:
        """`jax.linearize` of f at each point (compiled, when jitting, once for the problem's shapes); the
        linear map, a pytree of residuals, goes to compiled batched products: `vmap` of it (push) or of
        its transpose (pull)."""
        import jax

        f, jit = problem.f, self._jits(problem)
        x_spec = jax.ShapeDtypeStruct(np.shape(problem.x), problem.x_dtype)

        def linearize(x: Any, cv: tuple) -> tuple:
            return jax.linearize(bind(f, cv), x)

        def push(linear: Callable, tangents: Any) -> Any:
            return jax.vmap(linear)(tangents)

        def pull(linear: Callable, cotangents: Any) -> Any:
            return jax.vmap(lambda c: jax.linear_transpose(linear, x_spec)(c)[0])(cotangents)

        if jit:
            linearize, push, pull = jax.jit(linearize), jax.jit(push), jax.jit(pull)

        def linearizer(x: Any, cv: tuple, y: Any) -> Linearization:
            return _JaxLinearization(*linearize(x, cv), push, pull)

        return linearizer

    # -- second order (this backend outside, `inner` inside) -------------------------------------
    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoJAX):
            return None  # another engine inside: the core composes the two
        return _JaxNest(self, inner, problem)

    # -- kernels ---------------------------------------------------------------------------------
    def _jits(self, problem: Problem) -> bool:
        # an unprepared call runs once: compiling would cost more than it saves
        return self.jit and not problem.single_use

    def _kernel(
        self,
        problem: Problem,
        program: Callable[[bool], Callable],
        extra: Any,
        jit: bool | None = None,
        entries: int = 2,
    ) -> Kernel:
        """The kernel running `program(full)(x, extra, cv)`, which returns `entries` results: two
        programs (plain and full variant), compiled now when jitting."""
        jit = self._jits(problem) if jit is None else jit and not problem.single_use
        dtype = result_dtype(problem)
        full = compiled(casting(program(True), dtype), problem, extra, jit)
        plain_run = casting(program(False), dtype)
        if jit and extra is None and not problem.contexts:
            return x_only_kernel(plain_run, full, problem, entries, dtype)
        plain = compiled(plain_run, problem, extra, jit)

        def kernel(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> tuple:
            return (full if full_variant else plain)(x, extra, cv)

        kernel.result_dtype = dtype
        kernel.accepts_numpy = jit  # a compiled program converts NumPy arguments itself, fast
        return kernel

    def _hvp_same_point(self, problem: Problem, derivative: Callable, tangents: tuple, jit: bool) -> Kernel:
        """Hessian-vector products at one point: the gradient linearized (forward outside) or its
        `vjp` taken (reverse outside, H being symmetric) once, here."""
        import jax

        gradient = without_aux(derivative)
        if self.mode == "forward":
            g, linear = jax.linearize(gradient, problem.x)
            apply = push_with
        else:
            g, linear = jax.vjp(gradient, problem.x)
            apply = pull_with
        return linear_kernel(problem, (None, g), linear, apply, tangents, jit and not problem.single_use)


class _JaxNest(SecondOrderPlan):
    """`outer` over `inner`, both JAX: each second-order operator is one JAX computation nesting the two
    modes (compiled whole when both jit), rather than a linearization swept from Python."""

    def __init__(self, outer: AutoJAX, inner: AutoJAX, problem: Problem) -> None:
        super().__init__(problem)
        self.outer = outer
        self.jit = outer.jit and inner.jit
        self.seeds = Seeds(traced=self.jit and not problem.single_use)
        y_scalar = problem.y_spec[0] == ()
        # "auto": forward over reverse for a gradient (like jax.hessian), forward over forward for the
        # derivative of a scalar input
        self.outer_mode = "forward" if outer.mode == "auto" else outer.mode
        self.inner_mode = ("reverse" if y_scalar else "forward") if inner.mode == "auto" else inner.mode

    def inner_derivative(self, cv: tuple) -> Callable:
        """x -> (inner Jacobian of f at x, f(x)): the gradient, or the derivative for a scalar x."""
        f, seeds, mode = self.problem.f, self.seeds, self.inner_mode

        def d(x: Any) -> tuple:
            y, jac, _ = sweep(mode, bind(f, cv), x, seeds)
            return jac, y

        return d

    def hvp(self, tangents: tuple) -> Kernel:
        outer_mode = self.outer_mode

        def hvp(full: bool) -> Callable:
            def run(x: Any, tangents: tuple, cv: tuple) -> tuple:
                gradient = without_aux(self.inner_derivative(cv))
                # H is symmetric: a pullback of the gradient is a Hessian-vector product too
                g, hvps, _ = (push if outer_mode == "forward" else pull)(gradient, x, tangents)
                return None, (g if full else None), hvps

            return run

        return self.outer._kernel(self.problem, hvp, tangents, self.jit, entries=3)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        problem = self.problem
        derivative = self.inner_derivative(problem.context_values)
        return self.outer._hvp_same_point(problem, derivative, tangents, self.jit)

    def _nested(self) -> Kernel:
        """The outer Jacobian of the inner derivative: the Hessian, or the second derivative."""
        outer_mode, seeds = self.outer_mode, self.seeds

        def nested(full: bool) -> Callable:
            def run(x: Any, extra: Any, cv: tuple) -> tuple:
                d, d2, y = sweep(outer_mode, self.inner_derivative(cv), x, seeds, has_aux=True)
                return (y, d, d2) if full else (None, None, d2)

            return run

        return self.outer._kernel(self.problem, nested, None, self.jit, entries=3)

    def hessian(self) -> Kernel:
        return self._nested()

    def second_derivative(self) -> Kernel:
        return self._nested()


class _JaxLinearization(Linearization):
    """f linearized at a point by `jax.linearize`: its value and linear map (a pytree of residuals, so
    the compiled products take it as an argument without compiling again)."""

    shareable = True  # JAX arrays are immutable

    def __init__(self, value: Any, linear: Callable, push: Callable, pull: Callable) -> None:
        self.value = value
        self.linear = linear
        self._push, self._pull = push, pull

    def push(self, tangents: Any) -> Any:
        return self._push(self.linear, tangents)

    def pull(self, cotangents: Any) -> Any:
        return self._pull(self.linear, cotangents)


def x_only_kernel(plain: Callable, full: Callable, problem: Problem, entries: int, dtype: Any) -> Kernel:
    """The hot path of operators without tangents or contexts (gradient, jacobian, hessian, ...): the
    plain variant compiled as a function of `x` alone returning the result alone, the fewest
    arguments and outputs for JAX's dispatch to handle."""
    import jax

    program = jax.jit(lambda x: plain(x, None, ())[-1])
    program.lower(problem.x).compile()
    if entries == 2:

        def first_order_kernel(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> tuple:
            return full(x, extra, cv) if full_variant else (None, program(x))

        kernel = first_order_kernel
    else:

        def second_order_kernel(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> tuple:
            return full(x, extra, cv) if full_variant else (None, None, program(x))

        kernel = second_order_kernel
    kernel.result_dtype = dtype
    kernel.accepts_numpy = True
    kernel.x_only = program  # the prepared plain call: one compiled dispatch, nothing around it
    return kernel


def linear_kernel(problem: Problem, values: tuple, linear: Any, apply: Callable, extra: tuple, jit: bool) -> Kernel:
    """A same-point kernel: `apply(linear, tangents)`, where `linear` is a linearization (or a `vjp`)
    kept from the point; `values`, computed at the point, complete the full variant (the primal
    value first, then lower-order results)."""
    dtype = result_dtype(problem)
    program = lambda linear, extra: cast(apply(linear, extra), dtype)
    if jit:
        import jax

        program = jax.jit(program)
        program.lower(linear, extra).compile()
    values = (values[0], *cast(values[1:], dtype))
    nothing = (None,) * len(values)

    def same_point_kernel(x: Any, extra: tuple, cv: tuple, y: Any, full: bool) -> tuple:
        return (*(values if full else nothing), program(linear, extra))

    same_point_kernel.result_dtype = dtype
    same_point_kernel.accepts_numpy = jit
    return same_point_kernel


def result_dtype(problem: Problem) -> Any:
    """The dtype of every derivative a kernel returns (what the call path would cast them to)."""
    return problem.ops.result_type(problem.x_dtype, problem.y_spec[1])


def cast(results: Any, dtype: Any) -> Any:
    """Every array in `results` (a pytree; None entries stay None) as `dtype`."""
    import jax

    return jax.tree_util.tree_map(lambda a: a.astype(dtype), results)


def casting(run: Callable, dtype: Any) -> Callable:
    """`run(x, extra, cv) -> (value, *results)` with its results (not the value) cast to `dtype`."""

    def run_cast(x: Any, extra: Any, cv: tuple) -> tuple:
        value, *results = run(x, extra, cv)
        return (value, *cast(tuple(results), dtype))

    return run_cast


# -- traceable building blocks: each works eagerly and under jit ------------------------------------


def bind(f: Callable, cv: tuple) -> Callable:
    """`f` as a function of `x` alone, with the context values `cv`."""
    return lambda x: f(x, *cv)


def without_aux(fn: Callable) -> Callable:
    return lambda x: fn(x)[0]


def unstack(a: Any, n: int) -> tuple:
    return tuple(a[i] for i in range(n))


def push(fn: Callable, x: Any, tangents: tuple) -> tuple:
    """`(fn(x), (J t for each tangent), None)`: one `jvp`, or a `vmap` of them over the tangents."""
    import jax
    import jax.numpy as jnp

    if len(tangents) == 1:
        y, t = jax.jvp(fn, (x,), tangents)
        return y, (t,), None
    y, ts = jax.vmap(lambda t: jax.jvp(fn, (x,), (t,)), out_axes=(None, 0))(jnp.stack(tangents))
    return y, unstack(ts, len(tangents)), None


def pull(fn: Callable, x: Any, cotangents: tuple) -> tuple:
    """`(fn(x), (t J for each cotangent), None)`: one forward pass, its `vjp` mapped over the cotangents."""
    import jax

    y, transposed = jax.vjp(fn, x)
    return y, pull_with(transposed, cotangents), None


def push_with(linear: Callable, tangents: tuple) -> tuple:
    """A linearization (from `jax.linearize`) applied to each tangent."""
    import jax
    import jax.numpy as jnp

    if len(tangents) == 1:
        return (linear(tangents[0]),)
    return unstack(jax.vmap(linear)(jnp.stack(tangents)), len(tangents))


def pull_with(transposed: Callable, cotangents: tuple) -> tuple:
    """A `vjp` function applied to each cotangent."""
    import jax
    import jax.numpy as jnp

    if len(cotangents) == 1:
        return (transposed(cotangents[0])[0],)
    return unstack(jax.vmap(transposed)(jnp.stack(cotangents))[0], len(cotangents))


class Seeds:
    """Basis vectors of a space, stacked: `seeds(shape, dtype)` has shape `(size,) + shape`, or is
    the scalar 1 for shape `()`. Inside `jit` they are built in the traced program (XLA folds them);
    eagerly they are made once per space, on the device of the point, and kept."""

    def __init__(self, traced: bool) -> None:
        self.traced = traced
        self._made: dict[tuple, Any] = {}

    def __call__(self, shape: tuple, dtype: Any, like: Any) -> Any:
        if self.traced:
            return self._make(shape, dtype, None)
        import jax

        device = device_of(like)
        key = (shape, np.dtype(dtype), device)
        seeds = self._made.get(key)
        if seeds is None:
            seeds = self._make(shape, dtype, device)
            if not isinstance(seeds, jax.core.Tracer):  # made inside someone else's trace: not kept
                self._made[key] = seeds
        return seeds

    @staticmethod
    def _make(shape: tuple, dtype: Any, device: Any) -> Any:
        import jax.numpy as jnp

        if shape == ():
            return jnp.ones((), dtype, device=device)
        n = int(np.prod(shape))
        return jnp.eye(n, dtype=dtype, device=device).reshape((n, *shape))


def sweep(mode: str, fn: Callable, x: Any, seeds: Seeds, has_aux: bool = False) -> tuple:
    """`(fn(x), J, aux)` with `J` of shape `y.shape + x.shape`: `jvp`s of the input basis (forward,
    like `jax.jacfwd`) or `vjp`s of the output basis (reverse, like `jax.jacrev`; one `vjp` for a
    scalar output, like `jax.grad`). With `has_aux`, `fn` returns `(y, aux)`."""
    import jax
    import jax.numpy as jnp

    if mode == "forward":
        basis = seeds(x.shape, x.dtype, x)
        jvp = lambda t: jax.jvp(fn, (x,), (t,), has_aux=has_aux)
        if x.shape == ():
            r = jvp(basis)
            return r[0], r[1], (r[2] if has_aux else None)
        r = jax.vmap(jvp, out_axes=(None, 0, None) if has_aux else (None, 0))(basis)
        y, columns = r[0], r[1]
        jac = jnp.moveaxis(columns, 0, -1).reshape(y.shape + x.shape)
        return y, jac, (r[2] if has_aux else None)
    r = jax.vjp(fn, x, has_aux=has_aux)
    y, transposed = r[0], r[1]
    basis = seeds(y.shape, y.dtype, x)
    if y.shape == ():
        jac = transposed(basis)[0]
    else:
        jac = jax.vmap(transposed)(basis)[0].reshape(y.shape + x.shape)
    return y, jac, (r[2] if has_aux else None)


# -- compilation -------------------------------------------------------------------------------------


def compiled(run: Callable, problem: Problem, extra: Any, jit: bool) -> Callable:
    """`run(x, extra, cv)`, compiled now for the problem's shapes when `jit`, else as it is.

    Context values that are arrays, numbers or pytrees of them are traced arguments; the others
    (Python bools, strings, arbitrary objects) are static: each distinct value compiles once.
    """
    if not jit:
        return run
    import jax

    cv = problem.context_values
    static = tuple(i for i, v in enumerate(cv) if not is_traceable(v))
    if not static:
        program = jax.jit(run)
        program.lower(problem.x, extra, cv).compile()
        return program
    for i in static:
        _require_hashable(cv[i], i)
    traced = tuple(i for i in range(len(cv)) if i not in static)
    order = sorted(range(len(cv)), key=lambda i: (i in static, i))  # traced first, then static
    position = tuple(order.index(i) for i in range(len(cv)))

    def split(x: Any, extra: Any, traced_values: tuple, static_values: tuple) -> Any:
        values = (*traced_values, *static_values)
        return run(x, extra, tuple(values[p] for p in position))

    program = jax.jit(split, static_argnums=3)

    def call(x: Any, extra: Any, cv: tuple) -> Any:
        return program(x, extra, tuple(cv[i] for i in traced), tuple(cv[i] for i in static))

    program.lower(problem.x, extra, tuple(cv[i] for i in traced), tuple(cv[i] for i in static)).compile()
    return call


def is_traceable(value: Any) -> bool:
    """Whether `jit` can trace `value`: an array, a number (not a bool), or a pytree of them."""
    import jax

    leaves = jax.tree_util.tree_leaves(value)
    return all(
        isinstance(leaf, (jax.Array, np.ndarray, np.generic, int, float, complex))
        and not isinstance(leaf, (bool, np.bool_))
        for leaf in leaves
    )


def _require_hashable(value: Any, index: int) -> None:
    try:
        hash(value)
    except TypeError:
        raise NotSupportedError(
            f"AutoJAX(jit=True): context {index + 1} is a {type(value).__name__}, which JAX cannot trace (not an "
            "array, a number or a pytree of them), so it becomes a static argument of the compiled function; "
            "static arguments must be hashable. Make it hashable (a tuple, a frozen dataclass), pass its arrays "
            "as separate contexts, or use AutoJAX(jit=False)"
        ) from None
