"""Sparsity detectors: where a Jacobian (or Hessian) may be nonzero.

- `TracerSparsityDetector()`: a global pattern, valid at every x, from f's program run on index sets
  (the engine's tracer: the tape's recording for NumPy code, the jaxpr for JAX, the captured graph for
  torch). Where f's structure depends on x (a branch on a traced value), no global pattern exists:
  `NotSupportedError` suggests the two detectors below.
- `DenseSparsityDetector(backend, atol=0.0)`: the nonzeros (above `atol`) of the dense Jacobian at the
  preparation point, computed with `backend`: a local pattern, right at that point only; an entry that
  happens to vanish there but not elsewhere is missed. Use it knowingly.
- `KnownSparsity(pattern)`: the pattern you give (a scipy.sparse matrix or a boolean array, shape
  (y.size, x.size), or (x.size, x.size) for Hessians).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import ArgumentError, ShapeError
from .._problem import Problem, size_of
from ._pattern import Pattern, as_pattern

__all__ = ["DenseSparsityDetector", "KnownSparsity", "TracerSparsityDetector"]


def _shape(problem: Problem, order: int) -> tuple[int, int]:
    n = size_of(problem.x_shape)
    return (size_of(problem.y_spec[0]), n) if order == 1 else (n, n)


@dataclass(frozen=True)
class TracerSparsityDetector:
    """The global pattern of f's Jacobian or Hessian, from its program (see the module docstring).

    Example:
        >>> import numpy as np, jax, jax.numpy as jnp, diface as di
        >>> jax.config.update("jax_enable_x64", True)
        >>> b = di.AutoSparse(di.AutoJAX(), sparsity_detector=di.TracerSparsityDetector())
        >>> prep = di.prepare_jacobian(lambda x: x[1:] - x[:-1] ** 2, b, np.zeros(4))
        >>> prep.sparsity_pattern.toarray().astype(int)
        array([[1, 1, 0, 0],
               [0, 1, 1, 0],
               [0, 0, 1, 1]])
    """

    def detect(self, backend: Any, problem: Problem, order: int) -> Pattern:
        """The pattern, (y.size, x.size) for `order` 1, (x.size, x.size) for 2."""
        from .._sparsity import Deps

        found = backend.detect_sparsity(problem, order)
        if isinstance(found, Deps):
            found = found.jacobian_pattern() if order == 1 else found.hessian_pattern()
        return as_pattern(found, shape=_shape(problem, order))


@dataclass(frozen=True)
class DenseSparsityDetector:
    """The nonzeros (|entry| > `atol`) of the dense Jacobian or Hessian at the preparation point,
    computed with `backend`: local, see the module docstring.

    Example:
        >>> import numpy as np, diface as di
        >>> detector = di.DenseSparsityDetector(di.AutoFiniteDiff(), atol=1e-8)
        >>> b = di.AutoSparse(di.AutoFiniteDiff(), sparsity_detector=detector)
        >>> di.prepare_jacobian(lambda x: x * x[::-1], b, np.arange(1.0, 4.0)).ncolors
        2
    """

    backend: Any
    atol: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.atol, (int, float)) and self.atol >= 0):
            raise ArgumentError(f"DenseSparsityDetector: atol must be a number >= 0, got {self.atol!r}")

    def detect(self, backend: Any, problem: Problem, order: int) -> Pattern:
        from .. import _operators as ops

        y = {} if problem.y is None else {"y": problem.ops.copy(problem.y)}
        if order == 1:
            dense = ops.jacobian(problem.f, self.backend, problem.x, *problem.contexts, **y)
        else:
            dense = ops.hessian(problem.f, self.backend, problem.x, *problem.contexts)
        values = np.abs(np.asarray(problem.ops.to_numpy(dense) if not isinstance(dense, np.ndarray) else dense))
        return Pattern.from_dense(values.reshape(_shape(problem, order)) > self.atol)


@dataclass(frozen=True)
class KnownSparsity:
    """A pattern you know: a scipy.sparse matrix, a boolean or 0/1 array, or a `Pattern`, of shape
    (y.size, x.size) for Jacobians and (x.size, x.size) for Hessians.

    Example:
        >>> import numpy as np, scipy.sparse as sp, diface as di
        >>> b = di.AutoSparse(di.AutoFiniteDiff(), sparsity_detector=di.KnownSparsity(sp.eye(3)))
        >>> di.jacobian(np.sin, b, np.zeros(3)).toarray()
        array([[1., 0., 0.],
               [0., 1., 0.],
               [0., 0., 1.]])
    """

    pattern: Any = field(compare=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "pattern", as_pattern(self.pattern))
        except (TypeError, ValueError) as e:
            raise ArgumentError(f"KnownSparsity: {e}") from None

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KnownSparsity) and self.pattern == other.pattern

    def detect(self, backend: Any, problem: Problem, order: int) -> Pattern:
        want = _shape(problem, order)
        if self.pattern.shape != want:
            what = "(y.size, x.size)" if order == 1 else "(x.size, x.size)"
            raise ShapeError(
                f"KnownSparsity: the pattern has shape {self.pattern.shape}, this problem needs {what} = {want}"
            )
        return self.pattern
