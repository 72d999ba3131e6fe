"""`AutoAutograd`: HIPS autograd, in reverse mode (VJP rules) and forward mode (JVP rules).

autograd records a function anew at every call: it runs the Python code with its arrays wrapped in
boxes, each primitive call adding a node. A prepared call cannot skip that trace (except at a fixed
point: the same-point preparations keep it); preparation keeps everything else (basis seeds,
which composition to use, the probe for missing rules). This module drives autograd's tracer with
node types of its own instead of calling `make_vjp` / `make_jvp`, for three reasons:

- **Reverse mode** (`_Tape`): each node keeps its primitive's VJP closure, like `make_vjp`, and the
  backward pass here runs any number of cotangents through one trace (pullback batches, Jacobian
  rows, reverse-over-reverse Hessians). Every cotangent a rule returns is fitted to the shape of the
  value it belongs to: autograd's rule for `np.where` hands a lower-rank branch (a scalar `x` in
  `np.where(c, x, array)`) a cotangent of the output's shape, which then spreads to every later rule
  and ends in a wrongly shaped or wrong result; summing over the broadcast axes, where the error
  arises, gives the right cotangent.
- **Forward mode** (`_Linearization`): each node keeps the primitive call (function, arguments,
  value); tangents are then pushed through autograd's JVP rules without recomputing the primal. A
  batch of tangents goes through together: an elementwise ufunc multiplies the batch by its partial
  derivatives (one rule evaluation for the whole batch), indexing, sums, reshapes and the
  accumulations of a reverse pass act on the batch as a whole, and any other primitive runs its rule
  once per tangent. This is what makes forward-over-reverse Hessians fast here: the gradient is
  traced once and all basis vectors are pushed through it together, where `autograd.hessian`
  (reverse over reverse) runs a Python backward pass per row.
- **Missing rules**: many autograd primitives (linear algebra solves, special functions, FFTs) have
  a VJP but no JVP rule. Forward mode finds that out from the recording, before pushing anything,
  and raises `NotSupportedError` saying what to use instead. With mode="reverse" a pushforward then
  takes the partial derivatives of an elementwise primitive (erf, gammaln) from its VJP rule, and
  otherwise builds J from pullbacks of the output basis; a plain backend's Hessian falls back to
  reverse over reverse. Every linear map here is evaluated at the vectors it is applied to, never
  recorded at one (a zero cotangent, say) and reused: rules take shortcuts at special values
  (autograd's eigh skips its eigenvector terms at a zero cotangent).

Threads: autograd numbers traces with one process-wide counter; each preparation and kernel call
holds `_TRACING` (see there), which keeps the traces of concurrent calls apart.

f receives autograd boxes, so it must be written with `autograd.numpy` and cannot assign traced
values into arrays (in-place functions and writes into a `Cache` are not supported); the errors that
come from doing so say so.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._arrays import NUMPY, ArrayOps, NumpyOps, framework_ops, register_array_ops
from .._backend import Backend
from .._contexts import Cache
from .._derive import SecondOrderPlan
from .._errors import ArgumentError, DifaceError, NotSupportedError
from .._problem import Kernel, Problem, dtype_of, shape_of, size_of

__all__ = ["AutoAutograd"]

_MODES = ("forward", "reverse")
# a batch of tangents pushed through a recording together holds at most this many elements per node
_BATCH_ELEMENTS = 2**20
# basis seeds for spaces up to this size are built once (an n x n identity), larger ones per chunk
_CACHED_SEEDS_UP_TO = 2048


# Threads. autograd keeps one piece of mutable tracing state per process: the trace counter
# `autograd.tracer.trace_stack.top`. A trace takes level top + 1, nested traces (ours, and any
# `autograd.grad` that f or a rule calls) take higher ones, and a primitive called with boxes of
# several levels differentiates with respect to the highest. Threads tracing at once share the
# counter, so a trace nested in one thread can get a level at or below its own outer trace's once
# another thread's trace ends, and f's values are then differentiated with respect to the wrong trace
# (wrong results, or errors such as `_RecordNode has no attribute vjp`); rules that run autograd
# (odeint's VJP) move the counter during a backward pass too. Everything else autograd keeps (the
# registries of rules and box types) is only read while differentiating, and boxes carry their level
# and node with them. So every preparation and every kernel call of this backend holds this lock while
# it runs (`_serialized`), as does the evaluation of f for its output's shape (`output_spec`): one
# thread's traces then take exactly the levels they take single-threaded. It is reentrant (diface
# inside f). The kernels' own state (fallback switches, cached partial derivatives, backward orders)
# is only touched under it too. autograd traces started outside diface (autograd.grad called directly
# in another thread) do not take it.
_TRACING = threading.RLock()


def _serialized(prepare: Callable) -> Callable:
    """A `prepare_*` method that holds `_TRACING` while it prepares, and returns a kernel that holds
    it while it runs."""

    @functools.wraps(prepare)
    def serialized_prepare(self: Any, *args: Any) -> Kernel:
        with _TRACING:
            kernel = prepare(self, *args)
        if getattr(kernel, "serialized", False):  # from another prepare_* method
            return kernel

        def serialized_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
            with _TRACING:
                return kernel(x, extra, cv, y, full)

        serialized_kernel.serialized = True  # type: ignore[attr-defined]
        return serialized_kernel

    return serialized_prepare


@dataclass(frozen=True)
class AutoAutograd(Backend):
    """HIPS autograd: reverse mode from its VJP rules, forward mode from its JVP rules.

    Args:
        mode: "reverse" (default) or "forward": the mode Jacobians, gradients and derivatives sweep
            in. Pullbacks are always reverse mode and pushforwards forward mode; with mode="reverse"
            a pushforward through a primitive that has no JVP rule uses its VJP rule instead (the
            partial derivatives of an elementwise one, else J from pullbacks of the output basis),
            with mode="forward" it raises `NotSupportedError`.

    f receives autograd boxes: write it with `autograd.numpy`. In-place functions (`y=`) and writes of
    traced values into arrays (a `Cache` included) are not supported. Second-order operators on a
    plain backend are forward over reverse (reverse over reverse where autograd lacks a JVP rule);
    `di.SecondOrder(di.AutoAutograd(outer_mode), di.AutoAutograd(inner_mode))` picks the composition.

    Example:
        >>> import numpy as np, diface as di
        >>> import autograd.numpy as anp
        >>> f = lambda x: anp.sum(anp.sin(x) * x)
        >>> x = np.array([0.0, 1.0])
        >>> di.gradient(f, di.AutoAutograd(), x).round(6)
        array([0.      , 1.381773])
        >>> di.hessian(f, di.AutoAutograd(), x).round(6)
        array([[2.      , 0.      ],
               [0.      , 0.239134]])
    """

    mode: str = "reverse"

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward", "reverse"})
    supports_inplace: ClassVar[bool] = False
    package: ClassVar[str] = "autograd"
    extra: ClassVar[str] = "autograd"
    cli_name: ClassVar[str] = "autograd"

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ArgumentError(f"AutoAutograd: mode must be 'forward' or 'reverse', got {self.mode!r}")

    # -- arrays ------------------------------------------------------------------------------------
    def array_ops(self, x: Any) -> ArrayOps:
        if isinstance(x, (np.ndarray, np.generic, float, int, list)):
            return NUMPY
        _load()
        if _AG.isbox(x):  # diface called inside a function autograd is differentiating
            return _box_ops()
        raise ArgumentError(
            f"AutoAutograd works on NumPy arrays and numbers, got {type(x).__module__}.{type(x).__qualname__}; "
            "convert it with np.asarray, or use the backend of its framework (di.AutoTorch(), di.AutoJAX())"
        )

    def array_namespace(self) -> Any:
        self.require()
        import autograd.numpy

        return autograd.numpy

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        with _TRACING:  # f may run autograd itself
            return problem.y_spec

    # -- first order -------------------------------------------------------------------------------
    @_serialized
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        _load()
        f, hint = problem.f, self._jvp_hint()
        if self.mode == "forward" and not problem.single_use:
            _Linearization(_bound(f, problem.context_values), problem.x, hint)  # raises if a JVP rule is missing
        # with mode="reverse", a missing JVP rule moves the kernel for good down to: 1, JVP rules with the
        # partial derivatives of elementwise primitives lacking one taken from their VJP rules (erf,
        # gammaln); 2, J row by row from pullbacks of the output basis (solve, inv, eigh, fft)
        step, last = [0], 0 if self.mode == "forward" else 2
        y_spec, y_basis = problem.y_spec, []  # the output basis is built when first needed

        def pushforward_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            fun, now = _bound(f, cv), step[0]
            try:
                if now == 0:
                    return _pushforward(fun, x, tangents, hint)
                if now == 1:
                    lin = _Linearization(fun, x, hint, partials=True)
                    return lin.value, lin.push(tangents)
            except _NoJVPRule:
                if now == last:
                    raise
                step[0] = max(step[0], now + 1)
                return pushforward_kernel(x, tangents, cv, y, full)
            tape = _Tape(fun, x)
            if not y_basis:
                y_basis.append(_Basis(*y_spec))
            return tape.value, _products(tape, y_basis[0], tangents)

        return pushforward_kernel

    @_serialized
    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        _load()
        fun = _bound(problem.f, _private_caches(problem))
        try:
            lin = _Linearization(fun, problem.x, self._jvp_hint(), partials=self.mode == "reverse")
        except _NoJVPRule:
            if self.mode == "forward":
                raise
            tape, y_basis = _Tape(fun, problem.x), _Basis(*problem.y_spec)
            shape = (y_basis.n, size_of(problem.x_shape))
            jac = _rows(tape, y_basis, shape) if size_of(shape) <= _BATCH_ELEMENTS else None  # J, once

            def reverse_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
                return (_copy(tape.value) if full else None), _products(tape, y_basis, tangents, jac)

            return reverse_kernel

        def pushforward_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            return (_copy(lin.value) if full else None), lin.push(tangents)

        return pushforward_kernel

    @_serialized
    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        _load()
        f = problem.f

        def pullback_kernel(x: Any, cotangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            tape = _Tape(_bound(f, cv), x)
            return tape.value, tape.pull_all(cotangents)

        return pullback_kernel

    @_serialized
    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        _load()
        tape = _Tape(_bound(problem.f, _private_caches(problem)), problem.x)

        def pullback_kernel(x: Any, cotangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            return (_copy(tape.value) if full else None), tape.pull_all(cotangents)

        return pullback_kernel

    @_serialized
    def prepare_jacobian(self, problem: Problem) -> Kernel:
        """J (shape y.shape + x.shape): pushforwards of the input basis in forward mode, pullbacks of
        the output basis in reverse mode."""
        _load()
        f = problem.f
        y_shape, y_dtype = problem.y_spec
        out_shape = y_shape + problem.x_shape
        if self.mode == "reverse":
            y_basis = _Basis(y_shape, y_dtype)

            def reverse_jacobian_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
                tape = _Tape(_bound(f, cv), x)
                return tape.value, _rows(tape, y_basis, out_shape)

            return reverse_jacobian_kernel
        x_basis, hint = _Basis(problem.x_shape, problem.x_dtype), self._jvp_hint()
        if not problem.single_use:
            _Linearization(_bound(f, problem.context_values), problem.x, hint)  # raises if a JVP rule is missing

        def forward_jacobian_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
            return _forward_jacobian(_bound(f, cv), x, x_basis, out_shape, hint)

        return forward_jacobian_kernel

    @_serialized
    def prepare_gradient(self, problem: Problem) -> Kernel:
        _load()
        if self.mode == "forward":
            return self.prepare_jacobian(problem)
        f = problem.f
        seed = np.ones((), problem.y_spec[1])

        def gradient_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
            tape = _Tape(_bound(f, cv), x)
            return tape.value, _fresh(tape.pull(seed), seed)

        return gradient_kernel

    def prepare_derivative(self, problem: Problem) -> Kernel:
        return self.prepare_jacobian(problem)

    def _jvp_hint(self) -> str:
        return "use di.AutoAutograd(mode='reverse'), which needs no JVP rules"

    # -- second order ------------------------------------------------------------------------------
    # A plain backend is forward over reverse where autograd has every JVP rule the gradient needs, and
    # reverse over reverse otherwise; SecondOrder(AutoAutograd(a), AutoAutograd(b)) is exactly a over b.
    @_serialized
    def prepare_hvp(self, problem: Problem, tangents: tuple) -> Kernel:
        _load()
        return _with_fallback(
            _SecondOrderPlan("forward", "reverse", problem).hvp_kernel(),
            lambda: _SecondOrderPlan("reverse", "reverse", problem).hvp_kernel(),
        )

    @_serialized
    def prepare_hvp_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        _load()
        try:
            return _SecondOrderPlan("forward", "reverse", problem).hvp_same_point_kernel()
        except _NoJVPRule:
            return _SecondOrderPlan("reverse", "reverse", problem).hvp_same_point_kernel()

    @_serialized
    def prepare_hessian(self, problem: Problem) -> Kernel:
        _load()
        return _with_fallback(
            _SecondOrderPlan("forward", "reverse", problem).hessian_kernel(),
            lambda: _SecondOrderPlan("reverse", "reverse", problem).hessian_kernel(),
        )

    @_serialized
    def prepare_second_derivative(self, problem: Problem) -> Kernel:
        _load()
        return _with_fallback(
            _SecondOrderPlan("forward", "forward", problem).second_derivative_kernel(),
            lambda: _SecondOrderPlan("reverse", "reverse", problem).second_derivative_kernel(),
        )

    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoAutograd):
            raise NotSupportedError(
                f"{self!r} as the outer backend can only differentiate what autograd computes, not {inner!r}; "
                f"use di.SecondOrder(di.AutoAutograd(...), di.AutoAutograd(...)), or di.AutoFiniteDiff() outside"
            )
        return _AutogradNest(self.mode, inner.mode, problem)


class _AutogradNest(SecondOrderPlan):
    """Two autograd modes nested: the kernels of `_SecondOrderPlan`, probed at preparation for missing
    JVP rules where a mode is forward."""

    def __init__(self, outer: str, inner: str, problem: Problem) -> None:
        super().__init__(problem)
        self.modes = (outer, inner)

    @_serialized
    def _made(self, op: str) -> Kernel:
        _load()
        plan = _SecondOrderPlan(*self.modes, self.problem)
        if "forward" in self.modes and not self.problem.single_use:
            plan.probe(op)  # raises at preparation if a JVP rule is missing
        return getattr(plan, f"{op}_kernel")()

    def hvp(self, tangents: tuple) -> Kernel:
        return self._made("hvp")

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self._made("hvp_same_point")

    def hessian(self) -> Kernel:
        return self._made("hessian")

    def second_derivative(self) -> Kernel:
        return self._made("second_derivative")


# -- autograd's internals, bound on first use ---------------------------------------------------------
class _AG:
    """autograd's modules and internals this backend drives; filled by `_load` (importing diface
    imports no framework)."""

    loaded: ClassVar[bool] = False
    anp: Any
    isbox: Callable
    getval: Callable
    new_box: Callable
    trace_stack: Any
    box_types: set
    toposort: Callable
    add_outgrads: Callable
    sparse_add: Callable
    vspace: Callable
    primitive_vjps: dict
    primitive_jvps: dict
    SparseObject: type
    ArrayVSpace: type
    getitem: Callable
    untake: Callable
    accumulations: frozenset


def _load() -> None:
    """Import autograd and bind the internals used here (once)."""
    if _AG.loaded:
        return
    import autograd.numpy as anp
    from autograd import core, tracer, util
    from autograd.numpy.numpy_boxes import ArrayBox
    from autograd.numpy.numpy_vjps import untake
    from autograd.numpy.numpy_vspaces import ArrayVSpace

    _AG.anp = anp
    _AG.isbox, _AG.getval, _AG.new_box = tracer.isbox, tracer.getval, tracer.new_box
    _AG.trace_stack, _AG.box_types, _AG.toposort = tracer.trace_stack, tracer.box_types, util.toposort
    _AG.add_outgrads, _AG.sparse_add, _AG.vspace = core.add_outgrads, core.sparse_add, core.vspace
    _AG.primitive_vjps, _AG.primitive_jvps = core.primitive_vjps, core.primitive_jvps
    _AG.SparseObject, _AG.ArrayVSpace = core.SparseObject, ArrayVSpace
    _AG.getitem, _AG.untake = ArrayBox.__getitem__, untake
    _AG.accumulations = frozenset({core.VSpace.add, core.VSpace.mut_add, core.sparse_add})
    # primitives autograd does not record (shape queries, comparisons, ...) are registered per node
    # type: share its sets, including what later imports (autograd.scipy, ...) add to them
    tracer.notrace_primitives[_VJPNode] = tracer.notrace_primitives[core.VJPNode]
    tracer.notrace_primitives[_RecordNode] = tracer.notrace_primitives[core.JVPNode]
    tracer.notrace_primitives[_JVPNode] = tracer.notrace_primitives[core.JVPNode]
    _AG.loaded = True


def _name(fun: Any) -> str:
    return getattr(fun, "__name__", None) or repr(fun)


class _NoJVPRule(NotSupportedError):
    """A primitive on the way from x to f(x) has no forward-mode rule in autograd."""

    def __init__(self, fun: Any, hint: str) -> None:
        if fun not in _AG.primitive_vjps:  # reverse mode cannot help either
            hint = "define rules with autograd.extend.defjvp and defvjp, or differentiate with di.AutoFiniteDiff()"
        super().__init__(
            f"autograd has no forward-mode (JVP) rule for {_name(fun)!r}, which f calls, so it cannot push "
            f"tangents through f; {hint}"
        )


def _rule_failed(fun: Any, kind: str, e: Exception) -> NotSupportedError:
    return NotSupportedError(
        f"autograd's {kind} rule for {_name(fun)!r} failed on the arguments f called it with ({type(e).__name__}: "
        f"{e}); if f calls a plain NumPy function there, call autograd.numpy's (import autograd.numpy as np)"
    )


# -- tracing -----------------------------------------------------------------------------------------
_PLAIN_NUMPY = (
    "f returned a NumPy array of autograd boxes (dtype object): it called a plain NumPy function (np.asarray, "
    "np.array, np.dot, np.stack, np.where, ...) on a traced value, which NumPy turns into an array of objects "
    "that autograd cannot differentiate. Write f with autograd.numpy (import autograd.numpy as np)"
)


def _trace(root: Any, fun: Callable, x: Any) -> tuple[Any, Any]:
    """`fun(x)` with x boxed at a new trace level under `root`: (value, end node), or (value, None)
    when the value does not depend on x. Callers hold `_TRACING`."""
    stack = _AG.trace_stack
    outer = stack.top
    level = stack.top = outer + 1
    try:
        end = fun(_AG.new_box(x, level, root))
    finally:
        stack.top = outer  # also undoes a level that an autograd.grad inside f left raised as it failed
    if _AG.isbox(end) and end._trace == level:
        return end._value, end._node
    if isinstance(end, (list, tuple)):
        raise ArgumentError(f"f must return an array, got a {type(end).__name__}; build it with np.stack or np.array")
    if type(end) is np.ndarray and end.dtype == object:
        raise NotSupportedError(_PLAIN_NUMPY)
    return end, None


def _bound(f: Callable, cv: tuple) -> Callable:
    """`x -> f(x, *cv)`, explaining the errors that come from handing traced values to code that needs
    plain ones (any other error of f propagates unchanged)."""

    def bound(x: Any) -> Any:
        try:
            return f(x, *cv)
        except (TypeError, ValueError) as e:
            message = _misused_box(e)
            if message is None:
                raise
            raise NotSupportedError(message) from e

    return bound


_INSTEAD = (
    "Build arrays from traced values with np.stack, np.concatenate or np.where instead, or use a backend that "
    "supports mutation (di.AutoFiniteDiff(), di.AutoTorch())"
)


def _misused_box(e: Exception) -> str | None:
    """What went wrong and what to do, when `e` (raised while f runs on autograd's boxes) comes from
    passing a box where a plain value is needed; None for any other error."""
    text = str(e)
    if isinstance(e, ValueError) and not isinstance(e, DifaceError):
        if not text.startswith("setting an array element with a sequence"):
            return None
        return (
            "f writes a value that depends on x into a NumPy array (a di.Cache, an array it made, or "
            f"np.array(..., dtype=float) of traced values): autograd cannot trace item assignment. {_INSTEAD}"
        )
    if isinstance(e, DifaceError) or not (any(t.__name__ in text for t in _AG.box_types) or "dtype('O')" in text):
        return None
    if "does not support item assignment" in text:
        return (
            "f assigns into an array that depends on x (x itself, or a value computed from it): autograd cannot "
            f"trace item assignment. {_INSTEAD}"
        )
    return (
        "f passes a value that depends on x (an autograd box, what f receives instead of a NumPy array) to code "
        "that needs a plain number or NumPy array: float() or .item(), a plain NumPy function (np.linalg.solve, "
        "np.asarray, ...), or an in-place operation (+=) on a NumPy array. Write f with autograd.numpy "
        "(import autograd.numpy as np), without in-place updates"
    )


def _private_caches(problem: Problem) -> tuple:
    """The context values for a recording kept by a same-point preparation: Cache arrays replaced by
    buffers of its own (their contents do not matter), so the recording never reads the caller's."""
    return tuple(
        np.zeros_like(c.value) if isinstance(c, Cache) and isinstance(c.value, np.ndarray) else c.value
        for c in problem.contexts
    )


def _shape_or_none(value: Any) -> tuple | None:
    """The shape of an array value (a box's shape inside a nested trace), None for anything else."""
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else None


def _broadcastable(small: tuple, big: tuple) -> bool:
    return len(small) <= len(big) and all(a in (1, b) for a, b in zip(reversed(small), reversed(big)))


def _fresh(r: Any, *inputs: Any) -> Any:
    """`r` as an array the caller may keep and write: a copy when it is a view, read-only, or one
    of `inputs` (identity rules hand their cotangent back)."""
    if type(r) is np.ndarray and (not r.flags.owndata or not r.flags.writeable or any(r is i for i in inputs)):
        return r.copy()
    return r


def _copy(a: Any) -> Any:
    return a.copy() if type(a) is np.ndarray else a


def _zeros(shape: tuple, dtype: Any) -> Any:
    return np.zeros(shape, dtype)


# -- reverse mode --------------------------------------------------------------------------------------
class _VJPNode:
    """A reverse-mode node: its parents, the primitive's VJP closure, and the shape of its value."""

    __slots__ = ("parents", "shape", "vjp")

    def __init__(self, value: Any, fun: Any, args: tuple, kwargs: dict, argnums: tuple, parents: tuple) -> None:
        maker = _AG.primitive_vjps.get(fun)
        if maker is None:
            raise NotSupportedError(
                f"autograd has no reverse-mode (VJP) rule for {_name(fun)!r}, which f calls: define one with "
                "autograd.extend.defvjp, or differentiate with di.AutoFiniteDiff()"
            )
        self.parents = parents
        try:
            self.vjp = maker(argnums, value, args, kwargs)
        except TypeError as e:
            raise _rule_failed(fun, "reverse-mode (VJP)", e) from e
        except NotImplementedError as e:  # a rule for some arguments only (np.clip: x, not its bounds)
            raise NotSupportedError(
                f"autograd has no reverse-mode (VJP) rule for {_name(fun)!r} with respect to argument(s) "
                f"{', '.join(map(str, argnums))} (counted from 0), through which x reaches f's output ({e})"
            ) from e
        self.shape = _shape_or_none(value)

    @classmethod
    def root(cls, x: Any) -> _VJPNode:
        node = cls.__new__(cls)
        node.parents, node.vjp, node.shape = (), None, _shape_or_none(x)
        return node


def _fit_cotangent(g: Any, shape: tuple) -> Any:
    """A cotangent a rule returned with another shape than its value's: summed over the axes it was
    broadcast along (or broadcast up from a lower rank)."""
    anp = _AG.anp
    g_shape = tuple(anp.shape(g))
    lead = len(g_shape) - len(shape)
    if lead >= 0 and all(a == b or b == 1 for a, b in zip(g_shape[lead:], shape)):
        axes = tuple(range(lead)) + tuple(lead + i for i, (a, b) in enumerate(zip(g_shape[lead:], shape)) if a != b)
        return anp.reshape(anp.sum(g, axis=axes), shape)
    if _broadcastable(g_shape, shape):
        return anp.broadcast_to(g, shape)
    raise NotSupportedError(
        f"an autograd reverse-mode rule returned a cotangent of shape {g_shape} for a value of shape {shape}"
    )


class _Tape:
    """`fun` recorded in reverse mode at `x`: its value, and the backward pass for any number of
    cotangents. Written with autograd operations, so an outer trace can differentiate it."""

    __slots__ = ("_order", "end", "root", "value", "x")

    def __init__(self, fun: Callable, x: Any) -> None:
        self.x = x
        self.root = _VJPNode.root(x)
        self.value, self.end = _trace(self.root, fun, x)
        self._order: list | None = None

    def pull(self, ct: Any) -> Any:
        """`ct @ J`, shaped like x."""
        root, end = self.root, self.end
        if end is None:
            return _zeros(shape_of(self.x), dtype_of(self.x))
        if end is root:
            g = ct
        else:
            order = self._order
            if order is None:
                order = self._order = [node for node in _AG.toposort(end) if node is not root]
            add = _AG.add_outgrads
            grads = {end: (ct, False)}
            for node in order:
                g = grads.pop(node)[0]
                for parent, pg in zip(node.parents, node.vjp(g)):
                    shape = parent.shape
                    if shape is not None:
                        pg_shape = getattr(pg, "shape", None)
                        if pg_shape is not None and pg_shape != shape:
                            pg = _fit_cotangent(pg, shape)
                    grads[parent] = add(grads.get(parent), pg)
            g = grads[root][0]
        if root.shape is not None and _shape_or_none(g) != root.shape:
            g = _fit_cotangent(g, root.shape)
        return g

    def pull_all(self, cotangents: tuple) -> tuple:
        return tuple(_fresh(self.pull(ct), ct) for ct in cotangents)


# -- forward mode --------------------------------------------------------------------------------------
class _RecordNode:
    """A forward-mode recording node: the primitive call and its value."""

    __slots__ = ("argnums", "args", "fun", "kwargs", "parents", "value")

    def __init__(self, value: Any, fun: Any, args: tuple, kwargs: dict, argnums: tuple, parents: tuple) -> None:
        self.value, self.fun, self.args, self.kwargs = value, fun, args, kwargs
        self.argnums, self.parents = argnums, parents

    @classmethod
    def root(cls) -> _RecordNode:
        node = cls.__new__(cls)
        node.parents, node.fun = (), None
        return node


def _value_shape(value: Any) -> tuple | None:
    """The shape a tangent of `value` has (None for values that are not arrays, such as tuples)."""
    raw = _AG.getval(value)
    if isinstance(raw, (np.ndarray, np.generic, float, int)):
        return np.shape(raw)
    if isinstance(raw, _AG.SparseObject) and isinstance(raw.vs, _AG.ArrayVSpace):
        return tuple(raw.vs.shape)
    return None  # containers (the list, tuple or dict cotangents of an autograd.grad inside f) included


def _fit_tangent(t: Any, shape: tuple | None) -> Any:
    """A tangent as a dense array shaped like its value (sparse tangents of indexing densified, lower
    ranks broadcast)."""
    if type(_AG.getval(t)) is _AG.SparseObject:
        t = _AG.sparse_add(_AG.vspace(t), None, t)
    if shape is None:
        return t
    t_shape = np.shape(t)
    if t_shape == shape:
        return t
    if _broadcastable(t_shape, shape):
        return _AG.anp.broadcast_to(t, shape)
    raise NotSupportedError(
        f"an autograd forward-mode rule returned a tangent of shape {t_shape} for a value of shape {shape}"
    )


def _tangent_like(t: Any, value: Any) -> Any:
    """`_fit_tangent` with a fast path for the common case (an array shaped like its value)."""
    if type(t) is np.ndarray and type(value) is np.ndarray and t.shape == value.shape:
        return t
    return _fit_tangent(t, _value_shape(value))


class _MissingRule(Exception):
    """Raised from inside a trace for a primitive without a JVP rule; becomes `_NoJVPRule`."""

    def __init__(self, fun: Any) -> None:
        super().__init__(_name(fun))
        self.fun = fun


class _JVPNode:
    """An eager forward-mode node: the tangent of its value, computed as the primitive runs (one
    tangent per trace, like `make_jvp`)."""

    __slots__ = ("g",)

    def __init__(self, value: Any, fun: Any, args: tuple, kwargs: dict, argnums: tuple, parents: tuple) -> None:
        rule = _AG.primitive_jvps.get(fun)
        if rule is None:
            raise _MissingRule(fun)
        try:
            g = rule(argnums, [p.g for p in parents], value, args, kwargs)
        except NotImplementedError as e:
            raise _MissingRule(fun) from e
        except TypeError as e:
            raise _rule_failed(fun, "forward-mode (JVP)", e) from e
        self.g = _tangent_like(g, value)

    @classmethod
    def root(cls, t: Any) -> _JVPNode:
        node = cls.__new__(cls)
        node.g = t
        return node


def _jvp(fun: Callable, x: Any, t: Any, hint: str) -> tuple[Any, Any]:
    """`(fun(x), J @ t)` for one tangent, in one eager forward trace."""
    try:
        value, end = _trace(_JVPNode.root(t), fun, x)
    except _MissingRule as e:
        raise _NoJVPRule(e.fun, hint) from None
    if end is None:
        return value, _zeros(np.shape(value), dtype_of(value))
    return value, _tangent_like(end.g, value)


def _basic_index(idx: Any) -> bool:
    """Whether `idx` is basic indexing (integers, slices, None, Ellipsis), which a leading batch
    axis does not change."""
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(
        i is None
        or i is Ellipsis
        or isinstance(i, slice)
        or (isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)))
        for i in items
    )


def _batched_index(idx: Any) -> tuple:
    return (slice(None), *(idx if isinstance(idx, tuple) else (idx,)))


def _batched_axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(1, ndim + 1))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim + 1 for a in axes)


def _kind(node: _RecordNode, shape: tuple | None) -> str:
    """How a batch of tangents goes through `node`: "loop" (the rule once per tangent) or a rule
    that takes the whole batch."""
    if shape is None:
        return "loop"
    fun, args, kwargs = node.fun, node.args, node.kwargs
    raw = getattr(fun, "fun", None)
    if isinstance(raw, np.ufunc) and raw.signature is None and raw.nout == 1 and not kwargs:
        return "elementwise"
    if fun is _AG.getitem and _basic_index(args[1]):
        return "getitem"
    if fun is _AG.untake and _basic_index(args[1]):
        return "untake"
    if fun is _AG.anp.sum and len(args) == 1 and set(kwargs) <= {"axis", "keepdims"}:
        return "sum"
    if fun is _AG.anp.reshape and kwargs.get("order", "C") == "C" and len(args) == 2:
        return "reshape"
    if fun in _AG.accumulations:
        return "add"
    return "loop"


class _Linearization:
    """`fun` recorded in forward mode at `x`: its value, and `push` of any number of tangents through
    autograd's JVP rules (the primal is not recomputed). Raises `_NoJVPRule` for a primitive without
    a JVP rule on the way from x to the value; with `partials`, only for one that is not elementwise
    (an elementwise one takes its partial derivatives from its VJP rule instead, see `_factor`)."""

    __slots__ = ("_factors", "batch_cap", "end", "hint", "root", "stackable", "steps", "uses", "value", "x")

    def __init__(self, fun: Callable, x: Any, hint: str, partials: bool = False) -> None:
        self.x, self.hint = x, hint
        self.root = _RecordNode.root()
        self.value, self.end = _trace(self.root, fun, x)
        self.steps: list[tuple[_RecordNode, str, tuple | None]] = []
        self.uses: dict = {}
        self._factors: dict = {}
        largest = 1
        if self.end is not None and self.end is not self.root:
            nodes = list(_AG.toposort(self.end))[::-1]  # parents before children, the root first
            for node in nodes[1:]:
                shape = _value_shape(node.value)
                kind = _kind(node, shape)
                if node.fun not in _AG.primitive_jvps:
                    if not (partials and kind == "elementwise" and node.fun in _AG.primitive_vjps):
                        raise _NoJVPRule(node.fun, hint)
                    kind = "partials"
                self.steps.append((node, kind, shape))
                largest = max(largest, size_of(shape) if shape is not None else 1)
                for parent in node.parents:
                    self.uses[parent] = self.uses.get(parent, 0) + 1
            self.uses[self.end] = self.uses.get(self.end, 0) + 1
        out_shape = _value_shape(self.value)
        # batches are NumPy arrays with a leading tangent axis: not inside an outer trace
        self.stackable = out_shape is not None and not _AG.isbox(x)
        self.batch_cap = max(1, _BATCH_ELEMENTS // largest)

    # -- pushing -------------------------------------------------------------------------------------
    def push(self, tangents: tuple) -> tuple:
        """`J @ t` for each tangent (shaped like x): fresh arrays shaped like the value."""
        if len(tangents) > 1 and self.stackable and self.steps:
            results: list = []
            cap = self.batch_cap
            for lo in range(0, len(tangents), cap):
                out = self.push_batch(np.stack(tangents[lo : lo + cap]))
                if isinstance(out, np.ndarray):
                    results.extend(out if out.flags.writeable else out.copy())
                else:
                    results.extend(_fresh(t) for t in out)
            return tuple(results)
        return tuple(_fresh(t, *tangents) for t in self._run(list(tangents), len(tangents), stacked=False))

    def push_batch(self, batch: np.ndarray) -> Any:
        """`J @ t` for a stacked batch of tangents (leading axis): a stacked batch of results, or a
        list of them where they do not stack."""
        return self._run(batch, len(batch), stacked=True)

    def _run(self, root_tangent: Any, count: int, stacked: bool) -> Any:
        end, root = self.end, self.root
        out_shape = _value_shape(self.value)
        if end is None:
            zero = _zeros(np.shape(self.value), dtype_of(self.value))
            return np.zeros((count, *zero.shape), zero.dtype) if stacked else [zero.copy() for _ in range(count)]
        if end is root:
            return root_tangent if stacked else [_fit_tangent(t, out_shape) for t in root_tangent]
        tangents = {root: root_tangent}
        remaining = dict(self.uses)
        for node, kind, shape in self.steps:
            ins = [tangents[p] for p in node.parents]
            if stacked and kind != "loop" and all(type(t) is np.ndarray for t in ins):
                t = self._batched(kind, node, shape, ins, count)
            else:
                t = self._looped(node, kind, shape, ins, count, stacked)
            tangents[node] = t
            for parent in node.parents:
                left = remaining[parent] - 1
                if left:
                    remaining[parent] = left
                else:
                    del tangents[parent]
        return tangents[end]

    def _looped(self, node: _RecordNode, kind: str, shape: tuple | None, ins: list, count: int, stacked: bool) -> Any:
        rule = _AG.primitive_jvps.get(node.fun)
        outs = []
        for b in range(count):
            try:
                if kind == "partials":  # no JVP rule: the partial derivatives times the tangents
                    t = sum(self._factor(node, a) * t_in[b] for a, t_in in zip(node.argnums, ins))
                else:
                    t = rule(node.argnums, [t_in[b] for t_in in ins], node.value, node.args, node.kwargs)
            except NotImplementedError as e:
                raise _NoJVPRule(node.fun, self.hint) from e
            except TypeError as e:
                raise _rule_failed(node.fun, "forward-mode (JVP)", e) from e
            outs.append(_fit_tangent(t, shape))
        if stacked and shape is not None:
            return np.stack(outs)
        return outs

    def _batched(self, kind: str, node: _RecordNode, shape: tuple, ins: list, count: int) -> np.ndarray:
        args, kwargs = node.args, node.kwargs
        if kind in ("elementwise", "partials"):
            out = None
            for argnum, t in zip(node.argnums, ins):
                arg_shape = np.shape(args[argnum])
                t = t.reshape((count,) + (1,) * (len(shape) - len(arg_shape)) + arg_shape)
                term = self._factor(node, argnum) * t
                out = term if out is None else out + term
        elif kind == "getitem":
            out = ins[0][_batched_index(args[1])]
        elif kind == "untake":
            vs = args[2]
            out = np.zeros((count, *vs.shape), vs.dtype)
            out[_batched_index(args[1])] = ins[0]
        elif kind == "sum":
            axes = _batched_axes(kwargs.get("axis"), np.ndim(args[0]))
            out = np.sum(ins[0], axis=axes, keepdims=kwargs.get("keepdims", False))
        elif kind == "reshape":
            out = np.reshape(ins[0], (count, *shape))
        else:  # "add": the accumulations of a reverse pass, whose JVP is the sum of the tangents
            out = ins[0]
            for t in ins[1:]:
                out = out + t
        if out.shape[1:] != shape:
            out = np.broadcast_to(out, (count, *shape))
        return out

    def _factor(self, node: _RecordNode, argnum: int) -> Any:
        """The partial derivative of an elementwise primitive in argument `argnum`, shaped like its
        output: its JVP rule at a tangent of ones, or else its VJP rule at a cotangent of ones with that
        argument broadcast to the output's shape (so that the rule sums over nothing). Both rules are
        linear, and for an elementwise primitive diagonal: this evaluates them, at a point where every
        shortcut a rule may take is exact, and records nothing."""
        key = (node, argnum)
        factor = self._factors.get(key)
        if factor is None:
            arg, args = node.args[argnum], node.args
            rule = _AG.primitive_jvps.get(node.fun)
            if rule is not None:
                ones = np.ones(np.shape(arg), dtype_of(_AG.getval(arg)))
                factor = rule((argnum,), [ones], node.value, args, node.kwargs)
            else:
                shape = np.shape(node.value)
                broadcast = (_AG.anp if _AG.isbox(arg) else np).broadcast_to(arg, shape)
                args = (*args[:argnum], broadcast, *args[argnum + 1 :])
                ones = np.ones(shape, dtype_of(_AG.getval(node.value)))
                (factor,) = _AG.primitive_vjps[node.fun]((argnum,), node.value, args, node.kwargs)(ones)
            self._factors[key] = factor
        return factor


# -- Jacobians from tapes and linearizations ------------------------------------------------------------
class _Basis:
    """The standard basis of a space of `shape` and `dtype`: one seed at a time, or stacked chunks."""

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype
        self.n = n = size_of(shape)
        self._eye = np.eye(n, dtype=dtype) if n <= _CACHED_SEEDS_UP_TO else None

    def seed(self, i: int) -> np.ndarray:
        if self._eye is not None:
            return self._eye[i].reshape(self.shape)
        e = np.zeros(self.n, self.dtype)
        e[i] = 1
        return e.reshape(self.shape)

    def shares_memory(self, a: np.ndarray) -> bool:
        return self._eye is not None and np.may_share_memory(a, self._eye)

    def seeds(self) -> tuple:
        return tuple(self.seed(i) for i in range(self.n))

    def chunk(self, lo: int, hi: int) -> np.ndarray:
        """Seeds lo..hi-1 stacked along a leading axis."""
        if self._eye is not None:
            rows = self._eye[lo:hi]
        else:
            rows = np.zeros((hi - lo, self.n), self.dtype)
            rows[np.arange(hi - lo), np.arange(lo, hi)] = 1
        return rows.reshape((hi - lo, *self.shape))


def _rows(tape: _Tape, y_basis: _Basis, out_shape: tuple) -> Any:
    """The Jacobian of a tape, row by row: one pullback per output basis vector."""
    if y_basis.n == 0 or tape.end is None:
        return _zeros(out_shape, dtype_of(tape.x))
    rows = [tape.pull(y_basis.seed(i)) for i in range(y_basis.n)]
    xp = _AG.anp if _AG.isbox(tape.x) else np
    return xp.reshape(xp.stack(rows), out_shape)


def _products(tape: _Tape, y_basis: _Basis, tangents: tuple, jac: Any = None) -> tuple:
    """`J @ t` for each tangent from the rows of J (`jac`, or pullbacks of the output basis through
    `tape`, a chunk at a time): pushforwards without JVP rules. Each row is a pullback evaluated at its
    own cotangent; a backward pass recorded at one cotangent and transposed would keep whatever the
    rules skip there (autograd's eigh drops its eigenvector terms at a zero cotangent)."""
    m, n = y_basis.n, size_of(shape_of(tape.x))
    if m == 0 or tape.end is None:
        dtype = np.result_type(dtype_of(tape.x), y_basis.dtype)
        return tuple(_zeros(y_basis.shape, dtype) for _ in tangents)
    xp = _AG.anp if _AG.isbox(tape.x) or any(_AG.isbox(t) for t in tangents) else np
    cols = xp.stack([xp.reshape(t, (n,)) for t in tangents], axis=1)
    if jac is not None:
        out = xp.dot(jac, cols)
    else:
        step, parts = max(1, _BATCH_ELEMENTS // max(n, 1)), []
        for lo in range(0, m, step):
            hi = min(m, lo + step)
            rows = xp.stack([tape.pull(y_basis.seed(i)) for i in range(lo, hi)])
            parts.append(xp.dot(xp.reshape(rows, (hi - lo, n)), cols))
        out = parts[0] if len(parts) == 1 else xp.concatenate(parts)
    return tuple(_fresh(xp.reshape(out[:, j], y_basis.shape)) for j in range(len(tangents)))


def _pushforward(fun: Callable, x: Any, tangents: tuple, hint: str) -> tuple[Any, tuple]:
    """`(fun(x), (J @ t for t in tangents))`: one eager trace for one tangent, else one recording
    and a batched push."""
    if len(tangents) == 1:
        value, t = _jvp(fun, x, tangents[0], hint)
        return value, (_fresh(t, tangents[0]),)
    lin = _Linearization(fun, x, hint)
    return lin.value, lin.push(tangents)


def _forward_jacobian(fun: Callable, x: Any, x_basis: _Basis, out_shape: tuple, hint: str) -> tuple[Any, Any]:
    """`(fun(x), J)` from pushforwards of the input basis."""
    if x_basis.n == 1:
        seed = x_basis.seed(0)
        value, t = _jvp(fun, x, seed, hint)
        xp = _AG.anp if _AG.isbox(x) else np
        return value, _fresh(xp.reshape(t, out_shape), seed)
    lin = _Linearization(fun, x, hint)
    return lin.value, _columns(lin, x_basis, out_shape)


def _columns(lin: _Linearization, x_basis: _Basis, out_shape: tuple) -> Any:
    """The Jacobian of a linearization, column by column: the input basis pushed through it, in
    stacked batches where it can."""
    n = x_basis.n
    if n == 0 or lin.end is None:
        return _zeros(out_shape, dtype_of(lin.value))
    if not (lin.stackable and n > 1 and lin.steps):
        cols = lin.push(x_basis.seeds())
        xp = _AG.anp if _AG.isbox(lin.x) else np
        return xp.reshape(xp.stack(cols, axis=-1), out_shape)
    parts = []
    for lo in range(0, n, lin.batch_cap):
        out = lin.push_batch(x_basis.chunk(lo, min(n, lo + lin.batch_cap)))
        parts.append(out if isinstance(out, np.ndarray) else np.stack(out))
    cols = parts[0] if len(parts) == 1 else np.concatenate(parts)
    jac = np.moveaxis(cols, 0, -1).reshape(out_shape)
    if not jac.flags.writeable or x_basis.shares_memory(jac):
        jac = jac.copy()  # f passed (a view of) the seeds through
    return jac


# -- second order ----------------------------------------------------------------------------------------
def _with_fallback(kernel: Kernel, make_fallback: Callable[[], Kernel]) -> Kernel:
    """`kernel`, switching for good to `make_fallback()` the first time a JVP rule is missing."""
    state: list = [kernel]

    def kernel_with_fallback(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        try:
            return state[0](x, extra, cv, y, full)
        except _NoJVPRule:
            if state[0] is not kernel:
                raise
            state[0] = make_fallback()
            return state[0](x, extra, cv, y, full)

    return kernel_with_fallback


class _SecondOrderPlan:
    """Second-order kernels for autograd (`outer` mode) differentiating autograd (`inner` mode).

    The inner derivative (the gradient, or the derivative for a scalar x) is a function of x written
    with autograd operations, which the outer mode differentiates: forward pushes tangents through it
    (one eager trace for one tangent; one recording and a batched push of all basis vectors for a
    Hessian), reverse pulls cotangents back through one tape of it (for a symmetric Hessian
    `v @ H = H @ v`)."""

    def __init__(self, outer: str, inner: str, problem: Problem) -> None:
        self.outer, self.inner, self.problem = outer, inner, problem
        self.f = problem.f
        self.x_shape = problem.x_shape
        self.y_shape, y_dtype = problem.y_spec
        self.x_basis = _Basis(problem.x_shape, problem.x_dtype)
        self.y_basis = _Basis(self.y_shape, y_dtype)
        self.one_y = np.ones(self.y_shape, y_dtype)
        self.one_x = np.ones((), problem.x_dtype)
        self.hint = (
            f"{outer} over {inner} needs them: use reverse over reverse, di.SecondOrder(di.AutoAutograd('reverse'), "
            "di.AutoAutograd('reverse')), or a plain di.AutoAutograd(), which falls back to it"
        )

    # -- the inner derivative, as a function an outer trace differentiates ---------------------------
    def _gradient(self, cv: tuple, stash: list) -> Callable:
        fun = _bound(self.f, cv)
        if self.inner == "reverse":

            def gradient(x: Any) -> Any:
                tape = _Tape(fun, x)
                stash[0] = tape.value
                return tape.pull(self.one_y)

        else:

            def gradient(x: Any) -> Any:
                stash[0], g = _forward_jacobian(fun, x, self.x_basis, self.x_shape, self.hint)
                return g

        return gradient

    def _derivative(self, cv: tuple, stash: list) -> Callable:
        fun = _bound(self.f, cv)
        if self.inner == "reverse":

            def derivative(x: Any) -> Any:
                tape = _Tape(fun, x)
                stash[0] = tape.value
                return _rows(tape, self.y_basis, self.y_shape)

        else:

            def derivative(x: Any) -> Any:
                stash[0], d = _jvp(fun, x, self.one_x, self.hint)
                return d

        return derivative

    def probe(self, op: str) -> None:
        """Record the inner derivative of `op` once at the preparation point, in the outer mode:
        raises `_NoJVPRule` now rather than at the first call."""
        make = self._derivative if op == "second_derivative" else self._gradient
        fun = make(self.problem.context_values, [None])
        if self.outer == "forward":
            _Linearization(fun, self.problem.x, self.hint)
        else:
            _Tape(fun, self.problem.x)

    # -- kernels -------------------------------------------------------------------------------------
    def hvp_kernel(self) -> Kernel:
        if self.outer == "forward":

            def forward_hvp_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
                gradient, hvps = _pushforward(self._gradient(cv, [None]), x, tangents, self.hint)
                return None, _fresh(gradient, self.one_y), hvps

            return forward_hvp_kernel
        if self.inner == "forward":
            return self._reverse_over_forward_hvp_kernel()

        def reverse_hvp_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            tape = _Tape(self._gradient(cv, [None]), x)
            return None, _fresh(tape.value, self.one_y), tape.pull_all(tangents)

        return reverse_hvp_kernel

    def hvp_same_point_kernel(self) -> Kernel:
        """The inner gradient recorded once, at the preparation point; calls only push or pull."""
        if self.outer == "reverse" and self.inner == "forward":
            return self._reverse_over_forward_hvp_kernel()
        gradient = self._gradient(_private_caches(self.problem), [None])
        if self.outer == "forward":
            lin = _Linearization(gradient, self.problem.x, self.hint)
            products, value = lin.push, lin.value
        else:
            tape = _Tape(gradient, self.problem.x)
            products, value = tape.pull_all, tape.value

        def hvp_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            return None, (_copy(value) if full else None), products(tangents)

        return hvp_kernel

    def _reverse_over_forward_hvp_kernel(self) -> Kernel:
        """`H v` as the reverse-mode gradient of the directional derivative `x -> J(x) v`."""

        def hvp_kernel(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> tuple:
            fun = _bound(self.f, cv)
            hvps = []
            for v in tangents:

                def directional(x: Any, v: Any = v) -> Any:
                    return _jvp(fun, x, v, self.hint)[1]

                hvps.append(_fresh(_Tape(directional, x).pull(self.one_y), v))
            gradient = _fresh(self._gradient(cv, [None])(x), self.one_y) if full else None
            return None, gradient, tuple(hvps)

        return hvp_kernel

    def hessian_kernel(self) -> Kernel:
        out_shape = self.x_shape + self.x_shape

        def hessian_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
            stash = [None]
            gradient_function = self._gradient(cv, stash)
            if self.outer == "forward":
                gradient, hess = _forward_jacobian(gradient_function, x, self.x_basis, out_shape, self.hint)
            else:
                tape = _Tape(gradient_function, x)
                gradient, hess = tape.value, _rows(tape, self.x_basis, out_shape)
            return (_AG.getval(stash[0]) if full else None), _fresh(gradient, self.one_y), hess

        return hessian_kernel

    def second_derivative_kernel(self) -> Kernel:
        def second_derivative_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
            stash = [None]
            derivative_function = self._derivative(cv, stash)
            if self.outer == "forward":
                derivative, d2 = _jvp(derivative_function, x, self.one_x, self.hint)
                d2 = _fresh(d2, self.one_x)
            else:
                tape = _Tape(derivative_function, x)
                derivative, d2 = tape.value, _rows(tape, self.y_basis, self.y_shape)
            return (_AG.getval(stash[0]) if full else None), _fresh(derivative, self.one_x), d2

        return second_derivative_kernel


# -- arrays inside a trace ------------------------------------------------------------------------------
class _ArrayBoxOps(NumpyOps):
    """autograd's traced arrays (boxes), as the core sees them when diface runs inside a function that
    autograd differentiates: NumPy's dtypes and constructors, immutable values computed on with
    `autograd.numpy`."""

    name = "autograd"
    mutable = False

    def __init__(self) -> None:
        import autograd.numpy as anp
        from autograd.numpy.numpy_boxes import ArrayBox

        self.anp = anp
        self.array_types = (ArrayBox,)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(_AG.getval(a))

    def copy(self, a: Any) -> Any:
        return a  # boxes are immutable values

    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.anp.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.anp.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return self.anp.concatenate(arrays)

    def unstack(self, a: Any) -> list:
        return [a[i] for i in range(a.shape[0])]

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return self.anp.moveaxis(a, source, destination)

    def matmul(self, a: Any, b: Any) -> Any:
        return self.anp.matmul(a, b)

    def vdot(self, a: Any, b: Any) -> Any:
        return self.anp.sum(a * b)

    def abs(self, a: Any) -> Any:
        return self.anp.abs(a)

    def max(self, a: Any) -> Any:
        return self.anp.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.anp.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.anp.imag(a)

    def equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(_AG.getval(a), _AG.getval(b)))

    def astype(self, a: Any, dtype: Any) -> Any:
        return a if a.dtype == dtype else a.astype(dtype)


def _box_ops() -> ArrayOps:
    return framework_ops("autograd")


register_array_ops("autograd", _ArrayBoxOps)
