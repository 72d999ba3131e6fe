"""`AutoSparse(dense)`: Jacobians and Hessians that are mostly zeros, one compressed product per color.

Preparation detects the sparsity pattern (`sparsity_detector`), colors it (`coloring`: columns for
forward mode, rows for reverse mode, both for `MixedMode`, a star coloring for symmetric Hessians)
and builds the seeds; a prepared call evaluates the compressed products with the dense backend (one
batched product per color, on one linearization of f where the engine has it) and reads the nonzeros
out of them with a gather (`diface._sparse._plans`), on the arrays' own device. Every other operator
is the dense backend's.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._backend import Backend
from .._derive import SecondOrderPlan
from .._errors import ArgumentError, BackendUnavailableError
from .._kernel import Kernel, Result
from .._problem import Problem, size_of
from .._wrapper import Wrapper
from ._coloring import Coloring, GreedyColoring
from ._detectors import DenseSparsityDetector, KnownSparsity, TracerSparsityDetector
from ._layout import SparseLayout
from ._pattern import Pattern
from ._plans import decompress

__all__ = ["AutoSparse"]

_DETECTORS = (TracerSparsityDetector, DenseSparsityDetector, KnownSparsity)


@dataclass(frozen=True)
class AutoSparse(Wrapper):
    """Sparse `jacobian` and `hessian` (and their variants) through coloring; every other operator as
    `dense`.

    Args:
        dense: the backend that computes the compressed products (any diface backend, or
            `di.MixedMode(forward, reverse)` for forward and reverse products together).
        sparsity_detector: `di.TracerSparsityDetector()` (default: a global pattern from f's program),
            `di.DenseSparsityDetector(backend, atol)` (local: the nonzeros at the preparation point) or
            `di.KnownSparsity(pattern)`.
        coloring: `di.GreedyColoring(order=...)` (default: the best of a few orders).

    Results are 2-D sparse matrices of shape `(y.size, x.size)` (Hessians `(x.size, x.size)`):
    `scipy.sparse.csr_array` for NumPy input, `torch.sparse_csr_tensor` for torch tensors,
    `jax.experimental.sparse.BCOO` for JAX arrays. A preparation exposes `sparsity_pattern`, `ncolors`,
    `column_colors` and `row_colors`.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda x: x[1:] ** 2 - x[:-1]          # a bidiagonal Jacobian
        >>> prep = di.prepare_jacobian(f, di.AutoSparse(di.AutoTape()), np.zeros(1000))
        >>> prep.ncolors                                # 2 products instead of 999 or 1000
        2
        >>> J = prep.jacobian(np.linspace(0.0, 1.0, 1000))
        >>> J.shape, J.nnz, type(J).__name__
        ((999, 1000), 1998, 'csr_array')
    """

    dense: Backend
    sparsity_detector: Any = field(default_factory=TracerSparsityDetector)
    coloring: Any = field(default_factory=GreedyColoring)

    sparse_results: ClassVar[bool] = True

    own_hooks: ClassVar[dict[str, str]] = {
        "prepare_jacobian": "sparse: the detected pattern, colored, one compressed product per color",
        "prepare_hessian": "sparse: the detected pattern, star-colored, one Hessian-vector product per color",
        "sparse_results": "its Jacobians and Hessians are sparse matrices",
        "prepare_inverse_pushforward": "derived over this wrapper, so that method='dense' factors the sparse J",
        "prepare_inverse_pullback": "derived over this wrapper, so that method='dense' factors the sparse J",
        "prepare_inverse_pushforward_same_point": "derived over this wrapper (sparse J)",
        "prepare_inverse_pullback_same_point": "derived over this wrapper (sparse J)",
        "is_available": "needs SciPy besides the dense backend's package",
        "require": "needs SciPy besides the dense backend's package",
    }

    def __post_init__(self) -> None:
        if not isinstance(self.dense, Backend):
            raise ArgumentError(f"AutoSparse: dense must be a diface backend, got {self.dense!r}")
        if isinstance(self.dense, AutoSparse):
            raise ArgumentError("AutoSparse: dense cannot itself be an AutoSparse")
        if not isinstance(self.sparsity_detector, _DETECTORS):
            raise ArgumentError(
                "AutoSparse: sparsity_detector must be di.TracerSparsityDetector(), "
                f"di.DenseSparsityDetector(backend) or di.KnownSparsity(pattern), got {self.sparsity_detector!r}"
            )
        if not isinstance(self.coloring, GreedyColoring):
            raise ArgumentError(f"AutoSparse: coloring must be di.GreedyColoring(...), got {self.coloring!r}")

    @property
    def wrapped(self) -> Backend:
        return self.dense

    def is_available(self) -> bool:
        return self.dense.is_available() and importlib.util.find_spec("scipy") is not None

    def require(self) -> None:
        self.dense.require()
        if importlib.util.find_spec("scipy") is None:
            raise BackendUnavailableError("AutoSparse needs scipy: pip install 'diface[sparse]'")

    prepare_inverse_pushforward = Backend.prepare_inverse_pushforward
    prepare_inverse_pullback = Backend.prepare_inverse_pullback
    prepare_inverse_pushforward_same_point = Backend.prepare_inverse_pushforward_same_point
    prepare_inverse_pullback_same_point = Backend.prepare_inverse_pullback_same_point

    # -- sparse -------------------------------------------------------------------------------------------
    def prepare_jacobian(self, problem: Problem) -> Kernel:
        pattern = self.sparsity_detector.detect(self.dense, problem, 1)
        coloring = self._color(pattern, problem)
        own = self.dense.prepare_sparse_jacobian(problem, coloring)
        kernel = own if own is not None else _SparseJacobian(self.dense, problem, coloring).kernel()
        return kernel.replace(layout=SparseLayout.prepared(pattern, coloring, problem))

    def prepare_hessian(self, problem: Problem) -> Kernel:
        pattern = self.sparsity_detector.detect(self.dense, problem, 2)
        coloring = self.coloring.color(pattern, "star")
        own = self.dense.prepare_sparse_hessian(problem, coloring)
        kernel = own if own is not None else Kernel(_SparseHessian(self.dense, problem, coloring).run)
        return kernel.replace(layout=SparseLayout.prepared(pattern, coloring, problem))

    def _color(self, pattern: Pattern, problem: Problem) -> Coloring:
        """Columns (forward) or rows (reverse), as the dense backend's mode says; for "auto", whichever
        needs fewer colors; both where the dense backend colors both ways (`MixedMode`)."""
        if self.dense.colors_both_ways:
            return self.coloring.color(pattern, "bicolor")
        modes = self.dense.native_modes
        mode = self.dense.mode
        if mode in modes:
            return self.coloring.color(pattern, "column" if mode == "forward" else "row")
        if len(modes) == 1:
            return self.coloring.color(pattern, "column" if "forward" in modes else "row")
        by_columns = self.coloring.color(pattern, "column")
        by_rows = self.coloring.color(pattern, "row")
        return by_columns if by_columns.ncolors <= by_rows.ncolors else by_rows


def _seeds(ops: Any, seed: np.ndarray, shape: tuple, dtype: Any, like: Any) -> Any:
    """A NumPy (size, c) seed matrix as c stacked native tangents of `shape`."""
    stacked = np.ascontiguousarray(seed.T).reshape((seed.shape[1], *shape))
    return ops.astype(ops.asarray(stacked, like=like), dtype)


class _Products:
    """Compressed products of one mode for a stack of seeds: on a linearization of f where the backend
    has one (one forward pass for all of them), else with a batched pushforward or pullback kernel."""

    def __init__(self, backend: Backend, problem: Problem, mode: str, seeds: Any) -> None:
        ops = problem.ops
        self.ops, self.seeds, self.count = ops, seeds, int(seeds.shape[0])
        self.linearizer = backend.prepare_linearize(problem, mode) if mode in backend.native_modes else None
        self.forward = mode == "forward"
        self.kernel = None
        if self.linearizer is None and self.count:
            tangents = tuple(ops.unstack(seeds))
            prepare = backend.prepare_pushforward if self.forward else backend.prepare_pullback
            self.kernel = prepare(problem, tangents)
            self.tangents = tangents

    def __call__(self, x: Any, cv: tuple, y: Any, full: bool) -> tuple[Any, Any]:
        """(value or None, products stacked: `(count, size)`)."""
        ops = self.ops
        if self.linearizer is not None:
            lin = self.linearizer(x, cv, y)
            products = (lin.push if self.forward else lin.pull)(self.seeds)
            return lin.value, ops.reshape(products, (self.count, -1))
        assert self.kernel is not None  # made in __init__ wherever there is no linearizer
        value, _, results = self.kernel.run(x, self.tangents, cv, y, full)
        return value, ops.reshape(ops.stack(list(results)), (self.count, -1))


class _SparseJacobian:
    """The nonzeros of J from forward products `J S_c` and/or reverse products `S_r^T J`."""

    def __init__(self, backend: Backend, problem: Problem, coloring: Coloring) -> None:
        ops, x = problem.ops, problem.x
        self.problem = problem
        y_shape, y_dtype = problem.y_spec
        self.forward = self.reverse = None
        if coloring.forward:
            seeds = _seeds(ops, coloring.forward_seed(), problem.x_shape, problem.x_dtype, x)
            self.forward = _Products(backend, problem, "forward", seeds)
        if coloring.reverse:
            seeds = _seeds(ops, coloring.reverse_seed(), y_shape, y_dtype, x)
            self.reverse = _Products(backend, problem, "reverse", seeds)
        self.plan = coloring.plan().batch_first().map(lambda a: ops.index_array(a, like=x))
        self.ops = ops
        self.dtype = ops.result_type(problem.x_dtype, y_dtype)

    def kernel(self) -> Kernel:
        """As a kernel, with the evaluations per call where the dense kernel of a single mode counts
        them (finite differences)."""
        products = [p for p in (self.forward, self.reverse) if p is not None]
        counted = products[0].kernel if len(products) == 1 else None
        return Kernel(self.run, evaluations=counted.evaluations if counted is not None else None)

    def run(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        ops = self.ops
        value = B = C = None
        if self.forward is not None:
            value, B = self.forward(x, cv, y, full)
        if self.reverse is not None:
            v, C = self.reverse(x, cv, y, full)
            value = v if value is None else value
        if B is None and C is None:  # no nonzero at all
            value = self.problem.evaluate(x, cv, y) if (full or y is not None) else None
            return Result(value, result=ops.zeros((0,), self.dtype, x))
        return Result(value, result=decompress(self.plan, B, C, concat=ops.concat))


class _SparseHessian:
    """The nonzeros of H from Hessian-vector products `H S` of a star coloring (read directly)."""

    def __init__(self, backend: Backend, problem: Problem, coloring: Coloring) -> None:
        ops, x = problem.ops, problem.x
        self.problem, self.ops = problem, ops
        self.count = coloring.forward
        self.seeds = _seeds(ops, coloring.forward_seed(), problem.x_shape, problem.x_dtype, x)
        self.plan = coloring.plan().batch_first().map(lambda a: ops.index_array(a, like=x))
        self.dtype = ops.result_type(problem.x_dtype, problem.y_spec[1])
        self.second = backend.second_order_plan(problem)
        self.linearized = type(self.second).linearize is not SecondOrderPlan.linearize
        self.hvp = None
        if not self.linearized and self.count:
            self.tangents = tuple(ops.unstack(self.seeds))
            self.hvp = self.second.hvp(self.tangents)
        # the gradient of the full variant where the products do not give it
        self.gradient = backend.prepare_gradient(problem) if not self.count else None

    def run(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        ops, n = self.ops, size_of(self.problem.x_shape)
        value = gradient = None
        if not self.count:  # H is zero: nothing to compute but what the full variant owes
            data = ops.zeros((0,), self.dtype, x)
        else:
            if self.linearized:
                lin = self.second.linearize(x, cv)
                apply = lin.push if self.second.mode == "forward" else lin.pull
                products = apply(self.seeds)
                gradient, value = lin.value, lin.primal
            else:
                assert self.hvp is not None  # made in __init__ for a plan without a linearization
                _, gradient, hvps = self.hvp.run(x, self.tangents, cv, None, full)
                products = ops.stack(list(hvps))
            data = decompress(self.plan, ops.reshape(products, (self.count, n)), concat=ops.concat)
        if not full:
            return Result(result=data)
        if value is None:
            value = self.problem.evaluate(x, cv)
        if gradient is None:  # H is zero (the products give the gradient otherwise)
            assert self.gradient is not None
            gradient = self.gradient.result_of(x, None, cv)
        return Result(value, gradient, data)
