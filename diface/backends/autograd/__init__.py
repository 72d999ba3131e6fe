"""`AutoAutograd`: HIPS autograd, in reverse mode (VJP rules) and forward mode (JVP rules).

autograd records a function anew at every call: it runs the Python code with its arrays wrapped in
boxes, each primitive call adding a node. This backend drives autograd's tracer with node types of its
own (`_internals`) and gives the core a linearization per call (`prepare_linearize`): a
`Tape` (one trace, then the backward pass for every cotangent of a batch) or a `Recording` (one trace,
then a whole batch of tangents pushed through the JVP rules together). Jacobians, gradients,
derivatives, pushforwards, pullbacks and the same-point preparations are the core's derivations on it;
second-order operators come from `SecondOrderPlan`s (`autograd/_second_order.py`): a plain backend computes
Hessians forward over reverse, the gradient traced once and every basis vector pushed through it
together, where `autograd.hessian` runs a Python backward pass per row.

Missing rules: many autograd primitives (linear algebra solves, special functions, FFTs) have a VJP
but no JVP rule. Forward mode finds that out from the recording, before pushing anything, and with
mode="forward" raises `NotSupportedError` (at preparation) saying what to use instead. Otherwise a
pushforward takes the partial derivatives of an elementwise primitive (erf, gammaln) from its VJP
rule, and elsewhere builds J from pullbacks of the output basis; a plain backend's second order falls
back to reverse over reverse.

Threads: autograd numbers traces with one process-wide counter; every preparation and kernel call
holds one lock (`autograd/_lock.py`), which keeps the traces of concurrent calls apart.

f receives autograd boxes, so it must be written with `autograd.numpy` and cannot assign traced values
into arrays (in-place functions and writes into a `Cache` are not supported); the errors that come from
doing so say so.

Modules, one job each (the names every engine uses, docs/add-a-backend.md), bottom-up: `_internals`
(autograd's modules and internals bound on first use, this backend's node types), `_lock` (`TRACING`),
`_messages` (what goes wrong and what to do), `_shapes` ((co)tangents fitted to their values' shapes),
`_trace` (f run on boxes at a fresh trace level), `_rule_fixes` (autograd's wrong rules repaired or
refused), `_reverse` (`Tape`), `_batching` and `_forward` (`Recording`, batches of tangents through the
JVP rules), `_linearize` (the two as the core's linearizations), `_second_order` (`SecondOrderPlan`s),
`_ops` (autograd's boxes as an `ArrayOps`), `_boundary` (autograd outside `DifferentiateWith`), `_memory`
(a recomputing primitive for `di.checkpoint`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._arrays import NUMPY, ArrayOps
from ..._backend import Backend
from ..._boundary import register_boundary
from ..._derive import SecondOrderPlan
from ..._engines import register_engine
from ..._errors import ArgumentError, NotSupportedError
from ..._kernel import Kernel
from ..._linearization import Linearizer
from ..._memory.engines import register_memory
from ..._problem import Problem
from ._forward import Recording
from ._internals import AG, load
from ._linearize import eager_pushforward, forward_linearizer, reverse_linearizer
from ._lock import TRACING, serialized
from ._ops import box_ops
from ._second_order import plan_for
from ._shapes import open_containers
from ._trace import bound, private_caches

__all__ = ["AutoAutograd"]

_MODES = ("reverse", "forward", "auto")


@dataclass(frozen=True)
class AutoAutograd(Backend):
    """HIPS autograd: reverse mode from its VJP rules, forward mode from its JVP rules.

    Args:
        mode: "reverse" (default), "forward" or "auto": the mode Jacobians, gradients and derivatives
            sweep in ("auto": the one with fewer products, both timed at preparation where the counts
            are close). Pullbacks are always reverse mode and pushforwards forward mode; a pushforward
            through a primitive that has no JVP rule uses its VJP rule instead (the partial
            derivatives of an elementwise one, else J from pullbacks of the output basis), except
            with mode="forward", where it raises `NotSupportedError`.

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
    #: forward sweeps push a whole chunk of the basis through one recording at once (the core's memory
    #: budget bounds the chunk); pulls run one backward pass per row whatever the chunk
    max_batch_size: ClassVar[int] = 1024

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ArgumentError(f"AutoAutograd: mode must be 'auto', 'forward' or 'reverse', got {self.mode!r}")

    # -- arrays ------------------------------------------------------------------------------------
    def array_ops(self, x: Any) -> ArrayOps:
        if isinstance(x, (np.ndarray, np.generic, float, int, list)):
            return NUMPY
        load()
        if AG.isbox(x):  # diface called inside a function autograd is differentiating
            return box_ops()
        raise ArgumentError(
            f"AutoAutograd works on NumPy arrays and numbers, got {type(x).__module__}.{type(x).__qualname__}; "
            "convert it with np.asarray, or use the backend of its framework (di.AutoTorch(), di.AutoJAX())"
        )

    def evaluator(self, f: Any) -> Any:
        """f with the container boxes of its output opened (see `open_containers`): traced by autograd,
        a function returning `anp.split(x, 3)` returns one `SequenceBox`, not a list of arrays."""
        if getattr(f, "_diface_opens_containers", False):
            return f

        def opening(*args: Any) -> Any:
            out = f(*args)
            return open_containers(out) if AG.loaded else out

        opening._diface_opens_containers = True  # type: ignore[attr-defined]
        return opening

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        with TRACING:  # f may run autograd itself
            return problem.y_spec

    # -- sparsity ------------------------------------------------------------------------------------
    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        """The global pattern from AutoTape's tracer (`TracerSparsityDetector`): autograd.numpy's functions
        call NumPy's on arrays that are not autograd boxes, so f records on a traced x; the recording
        runs on index sets (see `diface.backends.tape.analysis.sparsity`)."""
        from ..tape.analysis.sparsity import tape_sparsity

        return tape_sparsity(problem, order)

    # -- first order: linearizations, everything else derived by the core ----------------------------
    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer:
        with TRACING:
            load()
            if mode == "reverse":
                return reverse_linearizer(problem.f)
            strict = self.mode == "forward"
            if strict and not problem.single_use:
                Recording(bound(problem.f, problem.context_values), problem.x)  # raises now if a JVP rule is missing
            return forward_linearizer(problem.f, strict)

    @serialized
    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        kernel = Backend.prepare_pushforward(self, problem, tangents)
        return eager_pushforward(problem.f, kernel, self.mode == "forward") if len(tangents) == 1 else kernel

    @serialized
    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        return Backend.prepare_pushforward_same_point(self, private_caches(problem), tangents)

    @serialized
    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        return Backend.prepare_pullback_same_point(self, private_caches(problem), cotangents)

    # every kernel holds the lock while it runs (see `autograd/_lock.py`)
    prepare_pullback = serialized(Backend.prepare_pullback)
    prepare_derivative = serialized(Backend.prepare_derivative)
    prepare_gradient = serialized(Backend.prepare_gradient)
    prepare_jacobian = serialized(Backend.prepare_jacobian)

    # -- second order --------------------------------------------------------------------------------
    def second_order_plan(self, problem: Problem) -> SecondOrderPlan:
        """A plain backend's plan: forward over reverse (reverse over reverse where a JVP rule is missing)."""
        with TRACING:
            load()
            return plan_for(problem, "auto", "auto")

    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoAutograd):
            raise NotSupportedError(
                f"{self!r} as the outer backend can only differentiate what autograd computes, not {inner!r}; "
                f"use di.SecondOrder(di.AutoAutograd(...), di.AutoAutograd(...)), or di.AutoFiniteDiff() outside"
            )
        with TRACING:
            load()
            return plan_for(problem, self.mode, inner.mode)


register_engine(AutoAutograd, name="autograd", namespace="autograd.numpy")


def _boundary() -> Any:
    from ._boundary import AutogradBoundary

    return AutogradBoundary()


register_boundary("autograd", _boundary)


def _memory() -> Any:
    from ._memory import Memory

    return Memory()


register_memory("autograd", _memory)
