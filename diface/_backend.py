"""The backend contract.

A backend is a small immutable, hashable object. To add an engine, subclass `Backend` in one file of
`diface/backends/` and implement:

- `native_modes`: the subset of {"forward", "reverse"} the engine computes natively, and `mode`, the
  one the derived operators (jacobian, gradient, derivative) sweep in ("auto": chosen per problem);
- `array_ops(x)`: the `ArrayOps` of the arrays `f` receives (converting NumPy input to them);
- one of:
  - `prepare_linearize(problem, mode)`: f's forward pass at a point, then batched products with J
    (see `diface._linearization`): everything else derives from it;
  - `prepare_pushforward` and/or `prepare_pullback`: prepared, batched primitives returning kernels
    (see `diface._kernel.Kernel`);
- optionally `supports_inplace`, `package`/`extra` (for availability), `max_batch_size`, a
  `prepare_second_order(inner, problem)` plan for differentiating its own derivatives, and faster
  native versions of any other `prepare_*` method. Everything not overridden is derived here, once
  (`diface._derive`).

Framework imports happen inside methods, never at module import.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib.util
from typing import Any, ClassVar

from . import _derive
from ._arrays import ArrayOps
from ._errors import ArgumentError, BackendUnavailableError, NotSupportedError
from ._kernel import Kernel
from ._linearization import Linearizer
from ._problem import Problem

__all__ = ["Backend", "check_available", "check_inplace", "require_backend"]


class Backend(abc.ABC):
    """Base class of all backends: the minimal contract plus every operator derived from it."""

    #: modes the engine has natively: a subset of {"forward", "reverse"}
    native_modes: ClassVar[frozenset[str]] = frozenset()
    #: mode the derived operators sweep in (subclasses with a `mode` field override it per instance)
    mode: str = "reverse"
    #: whether in-place functions f(y, x) are supported
    supports_inplace: ClassVar[bool] = False
    #: importable module the backend needs (None: NumPy only) and the pip extra that installs it
    package: ClassVar[str | None] = None
    extra: ClassVar[str | None] = None
    #: tangents per batched primitive call in basis sweeps (jacobian, hessian, ...)
    max_batch_size: ClassVar[int] = 64
    #: derivatives are accurate to about eps ** accuracy_exponent (relative); 1 for exact AD
    accuracy_exponent: ClassVar[float] = 1.0
    #: `jacobian` and `hessian` return sparse matrices (`AutoSparse`)
    sparse_results: ClassVar[bool] = False
    #: a sparse Jacobian on this backend colors rows and columns together (`MixedMode`: a bicoloring)
    colors_both_ways: ClassVar[bool] = False

    def label(self) -> str:
        """A short repr: the class and the settings that differ from their defaults."""
        settings: list[str] = []
        fields: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(self) if dataclasses.is_dataclass(self) else ()
        for f in fields:
            if not f.repr:
                continue
            value = getattr(self, f.name)
            if isinstance(value, Backend):
                settings.append(value.label())
            elif f.default is dataclasses.MISSING or value != f.default:
                settings.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(settings)})"

    # -- availability --------------------------------------------------------------------------
    def is_available(self) -> bool:
        """Whether the backend's package can be imported (without importing it)."""
        return self.package is None or importlib.util.find_spec(self.package) is not None

    def require(self) -> None:
        """Raise `BackendUnavailableError`, saying what to install, if the package is missing."""
        if not self.is_available():
            raise BackendUnavailableError(
                f"{self!r} needs the '{self.package}' package, which is not installed: "
                f"pip install 'diface[{self.extra}]'"
            )

    def check_complex(self, where: str) -> None:
        """Raise `NotSupportedError` (saying what to use instead) where this backend cannot differentiate
        a function of complex inputs or outputs. The call path holds them as real pairs (docs/complex.md),
        so an engine that differentiates real functions with complex values inside
        needs nothing more; the default accepts."""
        return None

    # -- arrays --------------------------------------------------------------------------------
    @abc.abstractmethod
    def array_ops(self, x: Any) -> ArrayOps:
        """The namespace of the arrays `f` receives when called at `x` (NumPy input is converted to
        it); raises `ArgumentError` for an `x` the backend cannot take."""

    def evaluator(self, f: Any) -> Any:
        """`f` as the core calls it on native arrays, outside any kernel (f's output where no kernel says
        it, the structure of a tree output, `has_aux`'s auxiliary output). The default is f itself; an
        engine whose functions build a symbolic graph when called returns a function that computes."""
        return f

    def output_spec(self, problem: Problem) -> tuple[tuple, Any]:
        """(shape, dtype) of f's output at `problem.x`, which the core needs before preparing. The
        default evaluates f once; a backend that traces f anyway may answer from its trace (keeping
        it in `problem.memo` for its kernels), so that an unprepared call runs f only once."""
        return problem.y_spec

    # -- first-order primitives ----------------------------------------------------------------
    def prepare_linearize(self, problem: Problem, mode: str) -> Linearizer | None:
        """A `Linearizer` of f for products in `mode` ("forward": `push`, "reverse": `pull`): each call
        runs f's forward pass once and returns a `Linearization` that applies J to batches of vectors.
        None (the default): the engine has none, and sweeps call batched kernels chunk by chunk."""
        return None

    def prepare_pushforward(self, problem: Problem, tangents: tuple) -> Kernel:
        """Batched JVPs. Forward-mode backends override this or linearize; reverse-only ones get it
        through the Jacobian."""
        return _derive.derive_pushforward(self, problem, tangents)

    def prepare_pullback(self, problem: Problem, cotangents: tuple) -> Kernel:
        """Batched VJPs. Reverse-mode backends override this or linearize; forward-only ones get it
        through the Jacobian."""
        return _derive.derive_pullback(self, problem, cotangents)

    def prepare_pushforward_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        """Like `prepare_pushforward`, for calls at `problem.x` only: f linearized there once, where the
        engine linearizes."""
        linearizer = self.prepare_linearize(problem, "forward") if "forward" in self.native_modes else None
        if linearizer is not None:
            return _derive.same_point_products(linearizer, problem, True)
        return self.prepare_pushforward(problem, tangents)

    def prepare_pullback_same_point(self, problem: Problem, cotangents: tuple) -> Kernel:
        """Like `prepare_pullback`, for calls at `problem.x` only: f's forward pass done there once,
        where the engine linearizes."""
        linearizer = self.prepare_linearize(problem, "reverse") if "reverse" in self.native_modes else None
        if linearizer is not None:
            return _derive.same_point_products(linearizer, problem, False)
        return self.prepare_pullback(problem, cotangents)

    # -- Jacobian-inverse products -------------------------------------------------------------
    def prepare_inverse_linearize(self, problem: Problem) -> Linearizer | None:
        """Inverse accumulation (`method="accumulate"` of `inverse_pushforward`/`inverse_pullback`): a
        `Linearizer` whose linearizations at x apply J⁻¹ and J⁻ᵀ without forming J. Their `push`
        solves `J dx = ty` for a batch of `ty` (`(B, *y_shape)` -> `(B, *x_shape)`), their `pull` solves
        `Jᵀ dy = tx` (`(B, *x_shape)` -> `(B, *y_shape)`); a step that cannot be inverted raises
        `SingularError`. None (the default): the engine has no such plan for f, and the core solves with
        J (`"dense"`) or its products (`"krylov"`)."""
        return None

    def prepare_inverse_pushforward(self, problem: Problem, tangents: tuple, solver: _derive.InverseSolver) -> Kernel:
        """`J⁻¹ t` for each `t` shaped like y (solves `J dx = t`), by `solver.method`: the core derives it
        from `prepare_inverse_linearize`, `prepare_jacobian` or the products (`diface._derive.inverse`)."""
        return _derive.derive_inverse(self, problem, True, False, solver)

    def prepare_inverse_pullback(self, problem: Problem, cotangents: tuple, solver: _derive.InverseSolver) -> Kernel:
        """`J⁻ᵀ t` for each `t` shaped like x (solves `Jᵀ dy = t`); see `prepare_inverse_pushforward`."""
        return _derive.derive_inverse(self, problem, False, False, solver)

    def prepare_inverse_pushforward_same_point(
        self, problem: Problem, tangents: tuple, solver: _derive.InverseSolver
    ) -> Kernel:
        """Like `prepare_inverse_pushforward`, at `problem.x` only: the factorization or linearization is
        made once, here."""
        return _derive.derive_inverse(self, problem, True, True, solver)

    def prepare_inverse_pullback_same_point(
        self, problem: Problem, cotangents: tuple, solver: _derive.InverseSolver
    ) -> Kernel:
        """Like `prepare_inverse_pullback`, at `problem.x` only."""
        return _derive.derive_inverse(self, problem, False, True, solver)

    # -- sparsity ------------------------------------------------------------------------------
    def detect_sparsity(self, problem: Problem, order: int) -> Any:
        """The global pattern (valid at every x) of f's Jacobian (`order` 1, shape (y.size, x.size)) or
        Hessian (2, (x.size, x.size)), from f's program: a scipy.sparse matrix, a `Pattern`, or
        `diface._sparsity.Deps`. Engines that can trace f override this (`TracerSparsityDetector`)."""
        raise NotSupportedError(
            f"{self!r} cannot trace f for its sparsity pattern; use di.DenseSparsityDetector(backend) (the "
            "pattern at the preparation point) or di.KnownSparsity(pattern)"
        )

    def prepare_sparse_jacobian(self, problem: Problem, coloring: Any) -> Kernel | None:
        """A kernel returning the nonzeros of J (in the pattern's CSR order) for `coloring` (see
        `diface._sparse.Coloring`), or None for the core's (compressed products and a gather). Engines
        that compile whole programs override this."""
        return None

    def prepare_sparse_hessian(self, problem: Problem, coloring: Any) -> Kernel | None:
        """Like `prepare_sparse_jacobian`, for the nonzeros of H from a star `coloring`; full variants
        also return the value and the gradient."""
        return None

    # -- derived first-order operators ---------------------------------------------------------
    def prepare_derivative(self, problem: Problem) -> Kernel:
        return _derive.derive_jacobian(self, problem)

    def prepare_gradient(self, problem: Problem) -> Kernel:
        return _derive.derive_jacobian(self, problem)

    def prepare_jacobian(self, problem: Problem) -> Kernel:
        return _derive.derive_jacobian(self, problem)

    # -- Taylor mode and Laplacians -----------------------------------------------------------------
    def prepare_taylor(self, problem: Problem, tangents: tuple, order: int) -> Kernel:
        """Taylor coefficients along each tangent v: `run(...).result[i]` is the tuple
        `(d₁, ..., d_order)`, dⱼ = dʲ/dtʲ f(x + t·vᵢ) at t = 0, each shaped like y (derivatives, not
        divided by j!); the full variant also returns f(x) as `value`. The default nests the engine's own
        pushforward `order` levels deep (`diface._derive.taylor`); engines with a Taylor mode override it."""
        return _derive.derive_taylor(self, problem, tangents, order)

    def prepare_laplacian(self, problem: Problem, method: _derive.LaplacianMethod) -> Kernel:
        """Σᵢ ∂²f/∂xᵢ² (shaped like y) by `method` ("exact" or "hutchinson"); the full variant also
        returns f(x) and the Jacobian (the gradient for a scalar f) as `lower`. Derived from
        `prepare_taylor` of order two over the basis of x (`diface._derive.laplacian`); an engine with a
        collapsed propagation overrides it."""
        return _derive.derive_laplacian(self, problem, method)

    # -- second order: outer over inner (a plain backend acts as SecondOrder(self, self)) --------
    def second_order_backends(self) -> tuple[Backend, Backend]:
        """(outer, inner) for second-order operators: (self, self) unless overridden."""
        return self, self

    def second_order_plan(self, problem: Problem) -> _derive.SecondOrderPlan:
        """The plan every second-order operator of `problem` derives from: the outer engine's own
        (`prepare_second_order`), else the composition of the two engines' first-order kernels."""
        outer, inner = self.second_order_backends()
        try:
            outer_ops = outer.array_ops(problem.x)
        except ArgumentError:  # the outer engine cannot take these arrays at all
            outer_ops = None
        if outer_ops is not problem.ops:
            works_on = f"works on {outer_ops.name} arrays" if outer_ops is not None else "cannot take these arrays"
            raise NotSupportedError(
                f"{self!r}: the outer backend {works_on} but the inner one gives it {problem.ops.name} arrays; "
                "use one engine for both, or AutoFiniteDiff() outside"
            )
        plan = outer.prepare_second_order(inner, problem)
        return plan if plan is not None else _derive.compose(outer, inner, problem)

    def prepare_hvp(self, problem: Problem, tangents: tuple) -> Kernel:
        return self.second_order_plan(problem).hvp(tangents)

    def prepare_hvp_same_point(self, problem: Problem, tangents: tuple) -> Kernel:
        return self.second_order_plan(problem).hvp_same_point(tangents)

    def prepare_hessian(self, problem: Problem) -> Kernel:
        return self.second_order_plan(problem).hessian()

    def prepare_second_derivative(self, problem: Problem) -> Kernel:
        return self.second_order_plan(problem).second_derivative()

    def prepare_second_order(self, inner: Backend, problem: Problem) -> _derive.SecondOrderPlan | None:
        """This engine's own plan for differentiating what `inner` computes on `problem` (a
        `diface._derive.SecondOrderPlan`: a linearization of the inner derivative, or whole
        second-order kernels), or None to compose the two engines' first-order kernels. Engines that
        compose with themselves (forward over reverse in one engine) override this."""
        return None

    def as_outer_of(self, inner: Backend) -> Backend:
        """This backend as configured to differentiate what `inner` computes. Finite differences
        widen their step to the inner backend's accuracy; exact engines return themselves."""
        return self


def check_available(backend: Backend) -> bool:
    """Whether `backend`'s package can be imported (checked without importing it).

    Example:
        >>> import diface as di
        >>> di.check_available(di.AutoFiniteDiff())
        True
    """
    require_backend(backend)
    return backend.is_available()


def check_inplace(backend: Backend) -> bool:
    """Whether `backend` supports in-place functions `f(y, x, *ctx)` (the `y=` keyword).

    Example:
        >>> import diface as di
        >>> di.check_inplace(di.AutoFiniteDiff())
        True
    """
    require_backend(backend)
    return backend.supports_inplace


def require_backend(backend: Any) -> None:
    if not isinstance(backend, Backend):
        raise ArgumentError(f"expected a diface backend such as di.AutoFiniteDiff() or di.AutoJAX(), got {backend!r}")
