"""`AutoTape`: exact derivatives of plain NumPy code, recorded once and replayed.

Preparation traces `f` with a `TapeArray` standing in for x: NumPy dispatches every ufunc, function,
operator and index on it to the tape, which computes the value and appends a node (the operation, the
slots it reads and writes, its metadata; its local JVP and VJP rules are functions of the saved values).
Prepared calls replay the tape over buffers planned by lifetime and sweep it in reverse (gradient,
pullback) or forward mode (pushforward, derivative), batching tangents along a leading axis. A
linearization (`prepare_linearize`) replays the tape once at x and then applies batched sweeps as
often as asked; second order (`prepare_second_order`) records the reverse sweep itself as a tape and
linearizes that: forward over reverse, all tangents of a batch in one sweep. The recording is never
written after preparation: each thread replays it over buffers of its own, so one preparation serves
many threads at once. See docs/backends/tape.md.

The package's folders are its layers, from the bottom: each module imports only modules of its own
layer or of the layers before it, at module level (no module imports another inside a function; this
module, the engine's front door, imports its layers inside its methods, so that `import diface` does
not load the tape), checked by tests/test_tape_layers.py.

1. `data/`: `graph` (the tape: slots, nodes, the recorder), `index` (index keys), `sites` and
   `messages` (where a call happens, for messages), `buffers` (buffer planning), `dispatch` (the
   registry NumPy's protocols on a traced array go through);
2. `prims/`, the primitives, each with its rules where it is defined (`prim.Prim`: JVP, VJP, Taylor,
   sparsity): `elementwise` (ufuncs, where, clip) with `partials` (the ufuncs' partial derivatives),
   `series` (the recurrences of Taylor arithmetic the ufuncs' Taylor rules are written with),
   `patterns` (the sparsity rules many primitives share),
   `special` (the scipy.special ufuncs') and `special_params` (their parameter derivatives without a
   closed form: primitives of their own), `structure` (shapes, indexing, assignment), `reduce`, `scan`
   (cumprod), `contract` (matmul, einsum), `convolve`, `linalg` (inv, solve, det), `banded`
   (solve_banded), `decomp` (eigh, eig, svd, qr, cholesky, pinv), `complex` (conj, real, imag, abs,
   angle of complex values), `fft`, `guards` (branches taken while recording), `objects` (traced values
   inside NumPy object arrays);
3. `sweeps/`, running a tape: `interpret` (on any values, and so recording its sweeps), `compile` (the
   prepared forward replay and reverse sweep over planned buffers), `tangent` (the forward-mode sweep,
   symbolic in batches), `seeds` (identity seeds of basis sweeps), `segments` (sweeps within a memory
   budget: the tape cut into segments recomputed from snapshots on a binomial schedule);
4. `tracing/`: `tracer`, the traced array NumPy dispatches to, with its Python operators and methods
   (`array_methods`);
5. what each NumPy and SciPy function records, registered with `data.dispatch` when imported
   (`numpy.protocols`, the targets of NumPy's protocols, imports them all): `numpy/`: `common` (the
   registry of handlers), `arrange`, `assorted`, `calculus`, `contract`, `counts`, `creation`,
   `cumulative`, `fft`, `interp` (interp, piecewise), `linalg`, `linalg_extra` (lstsq, matrix_power,
   ...), `nondiff`, `poly` (polynomials, numpy.polynomial), `reductions`, `shapes`, `statistics`
   (nan- reductions, order statistics, cov), `values`, `vectorize`; `hooks`: SciPy's (and a few of
   NumPy's) Python-level functions made to dispatch to the tape; `intercept`: NumPy's conversions and
   creation functions and the `math` module while f is recorded (conversions of traced values stay
   traced, arrays f creates are buffers it may write traced values into, math functions record);
   `scipy/`: `functions` (logsumexp, softmax, ..., scipy.signal.convolve), `stats` (with the
   distributions in `stats_laws`), `linalg` (scipy.linalg, with its primitives), `interpolate` (on
   `splines`' kernels), `tables` (interp1d, RegularGridInterpolator), `samples` (integration rules on
   samples: trapezoid, simpson, romb); `roots`, `quadrature` and `odes`: SciPy's root finders and
   minimizers, quad/quad_vec and solve_ivp, whose callbacks are recorded as sub-tapes (`callbacks`)
   and whose results are `implicit` roots, quadratures and ODE solutions; `solvers`: the other solvers
   and integrators, whose callbacks may not compute with traced values;
6. `recording/`: `record` (tracing f with its contexts), `replay` (per-thread replays of one
   recording), `marks` (`di.checkpoint` and `di.scan` while recording: marks the reverse kernels cut at);
7. what the core calls: `kernels/`: `first_order` (gradient, derivative, pushforward, pullback,
   jacobian), `linearize` (linearizations: one forward replay, then batched sweeps), `second_order`
   (the derivative map recorded as a tape and linearized), `sparse` (compressed Jacobians in one
   replay), `boundary` (AutoTape as the outer engine of `DifferentiateWith`), `bounded` (the
   kernels' sweeps within `memory=` or as `di.checkpoint`/`di.scan` marked f, and their report),
   `bounded_second_order` (hvp and Hessians within `memory=`: the gradient of the recorded, streamed
   directional derivative); `analysis/`: `taylor`
   (Taylor mode and the exact Laplacian), `sparsity` (global sparsity on index sets), `inverse`
   (inverse accumulation, with `inverse_plan`, `inverse_sites`, `inverse_steps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ... import _derive
from ..._arrays import NUMPY, ArrayOps
from ..._backend import Backend
from ..._boundary import register_boundary
from ..._derive import SecondOrderPlan
from ..._engines import register_engine
from ..._errors import ArgumentError, NotSupportedError
from ..._kernel import Kernel
from ..._linearization import Linearizer
from ..._memory.budget import parse_memory
from ..._memory.engines import register_memory
from ..._problem import Problem

__all__ = ["AutoTape"]


@dataclass(frozen=True)
class AutoTape(Backend):
    """diface's own tape engine: reverse and forward mode over plain NumPy code, NumPy arrays only.

    `f` is written with ordinary NumPy calls (ufuncs, reductions, matmul/einsum, indexing, where,
    concatenate, linear algebra, ...) and SciPy's special functions, distributions, logsumexp and
    convolve. Preparation records `f` once; prepared calls replay the recording without calling `f`
    again, from any number of threads at once. A branch on a traced value (`if x[0] > 0:`) is recorded
    as a guard: a prepared call whose branch would differ raises `di.TapeMismatchError` (an unprepared
    call traces `f` again). An operation the tape does not know raises `di.NotSupportedError` naming it
    and the line of `f` that called it.

    Inside `f`, `x` is a traced array standing in for a NumPy array (`isinstance(x, np.ndarray)` is
    True in the user's code, `type(x)` is not `numpy.ndarray`). Conversions (`np.asarray(x, float)`)
    keep it traced, arrays `f` creates (`np.zeros`, `np.empty`, ...) may be filled with traced values,
    and `math`'s functions, `.item()` and `.tolist()` keep the derivative; `float(t)` of a value that
    depends on `x` raises `di.NotSupportedError` (it would drop the derivative).

    Args:
        mode: "auto" (default), "forward" or "reverse": the direction of Jacobians (gradients are
            reverse sweeps and derivatives forward ones unless the other mode is forced). "auto" sweeps
            the smaller side (the columns when x has fewer elements than f's output) and, where the
            sizes are close, times both at preparation.
        memory: None (default: every value a reverse sweep reads is kept), or a budget in bytes (a
            number, or a string such as "1GB" or "512MB"). With a budget, f is recorded without holding
            every value, and where a reverse sweep keeping every value would need more, the tape is cut
            into segments recomputed from a few snapshots on the binomial (Revolve) schedule: the same
            derivatives, within the budget, for more forward runs. `prep.report` says what was chosen
            (see docs/memory.md).

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: np.sum(np.sin(x) * x[::-1])
        >>> prep = di.prepare_gradient(f, di.AutoTape(), np.zeros(3))
        >>> x = np.array([0.0, 1.0, 2.0])
        >>> np.allclose(prep.gradient(x), np.cos(x) * x[::-1] + np.sin(x)[::-1])
        True

        A long loop within a budget:

        >>> def simulate(p):
        ...     u = np.ones(10_000)
        ...     for _ in range(200):
        ...         u = u + 0.01 * (np.tanh(u) * p - u)
        ...     return np.sum(u**2)
        >>> prep = di.prepare_gradient(simulate, di.AutoTape(memory="20MB"), np.zeros(10_000))
        >>> prep.report.strategy, prep.report.peak_bytes <= 20_000_000
        ('binomial', True)
    """

    mode: str = "auto"
    memory: int | str | None = None

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward", "reverse"})
    supports_inplace: ClassVar[bool] = True
    package: ClassVar[str | None] = None
    #: basis vectors per sweep at most (chunks also stay within the result's size)
    max_batch_size: ClassVar[int] = 256

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "forward", "reverse"):
            raise ArgumentError(f"AutoTape: mode must be 'auto', 'forward' or 'reverse', got {self.mode!r}")
        self.budget  # noqa: B018 - parsed now: a bad memory= fails here, before any f runs

    def __repr__(self) -> str:
        memory = "" if self.memory is None else f", memory={self.memory!r}"
        return f"AutoTape(mode={self.mode!r}{memory})"

    @property
    def budget(self) -> int | None:
        """`memory` in bytes (None: no budget)."""
        try:
            return parse_memory(self.memory)
        except ValueError as e:
            raise ArgumentError(
                f"AutoTape: memory must be None, a positive number of bytes or a string such as '1GB', "
                f"'512MB' or '2GiB'; {e}"
            ) from None

    def as_outer_of(self, inner: Backend) -> Backend:
        if not isinstance(inner, AutoTape):
            raise NotSupportedError(
                f"AutoTape differentiates what the inner backend computes by recording it, which works for an "
                f"AutoTape inner backend only, not {inner!r}; use SecondOrder(AutoTape(), AutoTape()) (the "
                "default for AutoTape()) or SecondOrder(AutoFiniteDiff(), inner)"
            )
        return self

    def array_ops(self, x: Any) -> ArrayOps:
        if isinstance(x, (np.ndarray, np.generic, float, int, list)) and not isinstance(x, bool):
            return NUMPY
        raise ArgumentError(f"AutoTape differentiates NumPy arrays and numbers; got {type(x).__name__}")

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        # the recording knows the output: the kernel prepared next takes it instead of tracing again
        from .recording.record import recording_for

        return recording_for(problem, self.budget).output_spec()

    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        """The global pattern from f's recording, run on index sets (see `diface.backends.tape.analysis.sparsity`);
        the recording is kept for the kernel prepared next."""
        from .analysis.sparsity import tape_sparsity

        return tape_sparsity(problem, order, reuse=True)

    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer:
        from .kernels.linearize import TapeLinearizer

        return TapeLinearizer(problem)

    def prepare_inverse_linearize(self, problem: Problem) -> Linearizer | None:
        """Inverse accumulation over the recording (`diface.backends.tape.analysis.inverse`): J⁻¹ and J⁻ᵀ step
        by step, each step a k x k solve (a division for k = 1); None where a step is too large to form."""
        from .analysis.inverse import TapeInverseLinearizer

        linearizer = TapeInverseLinearizer(problem)
        return linearizer if linearizer.plan is not None else None

    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan | None:
        if not isinstance(inner, AutoTape):
            return None  # the core's composition, which says what AutoTape can differentiate
        budget = self.budget
        if budget is not None:
            from .kernels.bounded_second_order import BoundedSecondOrder
            from .recording.record import recording_for
            from .sweeps.segments import unbounded_bytes

            # the compiled plan replays f and its reverse sweep, keeping about three times what first order does
            if problem.single_use or 3 * unbounded_bytes(recording_for(problem, budget).tape) > budget:
                return BoundedSecondOrder(problem, budget)
        from .kernels.second_order import TapeSecondOrder

        return TapeSecondOrder(problem)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        from .kernels.first_order import PullbackKernel

        return PullbackKernel(problem, len(cotangents), self.budget).kernel()

    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        from .kernels.first_order import PushforwardKernel

        return PushforwardKernel(problem, len(tangents), self.budget).kernel()

    def prepare_gradient(self, problem: Problem) -> Kernel:
        if self.mode == "forward":  # forced: the columns of the Jacobian, through the linearization
            return _derive.derive_jacobian(self, problem)
        from .kernels.first_order import GradientKernel

        return GradientKernel(problem, budget=self.budget).kernel()

    def prepare_derivative(self, problem: Problem) -> Kernel:
        if self.mode == "reverse":
            return _derive.derive_jacobian(self, problem)
        from .kernels.first_order import DerivativeKernel

        return DerivativeKernel(problem, budget=self.budget).kernel()

    def prepare_sparse_jacobian(self, problem: Problem, coloring: Any) -> Kernel | None:
        """The compressed products in one replay of the tape (`diface.backends.tape.kernels.sparse`); within
        a memory budget, the core's, from the budgeted pullbacks or pushforwards."""
        if self.budget is not None:
            return None
        from .kernels.sparse import SparseJacobianKernel

        return SparseJacobianKernel(problem, coloring).kernel()

    def prepare_taylor(self, problem: Problem, tangents: tuple, order: int) -> Kernel:
        """Taylor mode on the recording (`diface.backends.tape.analysis.taylor`): truncated Taylor polynomials
        of all the directions propagated in one pass per call; the core's nested pushforwards where the
        recording holds an operation without a Taylor rule."""
        from .analysis.taylor import TapeTaylor, plan_for

        if not plan_for(problem).ok:
            return super().prepare_taylor(problem, tangents, order)

        def fallback() -> Kernel:
            return _derive.derive_taylor(self, problem, tangents, order)

        return TapeTaylor(problem, order, fallback).kernel()

    def prepare_laplacian(self, problem: Problem, method: _derive.LaplacianMethod) -> Kernel:
        """The exact Laplacian by the collapsed Taylor pass (`diface.backends.tape.analysis.taylor`): the value,
        the basis of x as first coefficients and one summed second coefficient, in one pass per chunk
        of the basis; Hutchinson's estimate, and recordings without Taylor rules, by the core."""
        if method.method != "exact":
            return super().prepare_laplacian(problem, method)
        from .analysis.taylor import TapeLaplacian, plan_for

        if not plan_for(problem).ok:
            return super().prepare_laplacian(problem, method)

        def fallback() -> Kernel:
            return _derive.derive_laplacian(self, problem, method)

        return TapeLaplacian(problem, fallback).kernel()

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        from .kernels.first_order import JacobianKernel

        return _derive.choose_kernel(
            self, problem, lambda mode: JacobianKernel(problem, mode, self.max_batch_size, self.budget).kernel()
        )


register_engine(AutoTape, name="tape", namespace="numpy")


def _boundary() -> Any:
    from .kernels.boundary import TapeBoundary

    return TapeBoundary()


register_boundary("diface.backends.tape", _boundary)


def _memory() -> Any:
    from .recording.marks import TapeMemory

    return TapeMemory()


# traced arrays exist only once the tracer is imported: until then no value is the tape's
register_memory("diface.backends.tape.tracing.tracer", _memory)
