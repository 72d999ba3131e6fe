"""diface: one differentiation API over many automatic-differentiation engines.

    >>> import numpy as np, diface as di
    >>> di.gradient(lambda x: np.sum(x**2), di.AutoFiniteDiff(), np.array([1.0, 2.0])).round(6)
    array([2., 4.])

Importing diface imports no framework: a backend imports its engine on first use.
"""

from typing import TYPE_CHECKING

from ._backend import Backend, check_available, check_inplace
from ._call.complex import realify
from ._call.prep import Prep
from ._call.trees.info import ravel
from ._contexts import Cache, Constant
from ._differentiate_with import DifferentiateWith
from ._errors import (
    ArgumentError,
    BackendUnavailableError,
    ConvergenceError,
    DifaceError,
    EvaluationError,
    NotSupportedError,
    PreparationMismatchError,
    ShapeError,
    SingularError,
    TapeMismatchError,
)
from ._memory.checkpoint import checkpoint
from ._memory.scan import scan
from ._mixed_mode import MixedMode
from ._operators import (
    derivative,
    gradient,
    gradient_and_hvp,
    hessian,
    hvp,
    inverse_pullback,
    inverse_pushforward,
    jacobian,
    laplacian,
    prepare_derivative,
    prepare_gradient,
    prepare_hessian,
    prepare_hvp,
    prepare_hvp_same_point,
    prepare_inverse_pullback,
    prepare_inverse_pullback_same_point,
    prepare_inverse_pushforward,
    prepare_inverse_pushforward_same_point,
    prepare_jacobian,
    prepare_laplacian,
    prepare_pullback,
    prepare_pullback_same_point,
    prepare_pushforward,
    prepare_pushforward_same_point,
    prepare_second_derivative,
    prepare_taylor,
    pullback,
    pushforward,
    second_derivative,
    taylor,
    taylor_coefficients,
    value_and_derivative,
    value_and_gradient,
    value_and_inverse_pullback,
    value_and_inverse_pushforward,
    value_and_jacobian,
    value_and_pullback,
    value_and_pushforward,
    value_derivative_and_second_derivative,
    value_gradient_and_hessian,
    value_gradient_and_hvp,
    value_gradient_and_laplacian,
)
from ._second_order import SecondOrder
from .backends import AutoAutograd, AutoFiniteDiff, AutoJAX, AutoMLX, AutoPyTensor, AutoTape, AutoTensorFlow, AutoTorch

if TYPE_CHECKING:  # loaded lazily below; imported here for type checkers and the API reference
    from ._distributed import AutoDistributed
    from ._jacobian_operator import jacobian_operator
    from ._sparse._autosparse import AutoSparse
    from ._sparse._coloring import GreedyColoring
    from ._sparse._detectors import DenseSparsityDetector, KnownSparsity, TracerSparsityDetector
    from ._sparse._spy import spy

__version__ = "0.1.0"

# the sparse machinery (colorings, detectors) loads when first asked for: `import diface` stays quick
_LAZY = {
    "AutoDistributed": "._distributed",
    "AutoSparse": "._sparse._autosparse",
    "GreedyColoring": "._sparse._coloring",
    "DenseSparsityDetector": "._sparse._detectors",
    "KnownSparsity": "._sparse._detectors",
    "TracerSparsityDetector": "._sparse._detectors",
    "spy": "._sparse._spy",
    "jacobian_operator": "._jacobian_operator",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'diface' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ravel",
    "realify",
    # backends
    "AutoAutograd",
    "AutoDistributed",
    "AutoFiniteDiff",
    "AutoJAX",
    "AutoMLX",
    "AutoPyTensor",
    "AutoSparse",
    "AutoTape",
    "AutoTensorFlow",
    "AutoTorch",
    "Backend",
    "MixedMode",
    "SecondOrder",
    "check_available",
    "check_inplace",
    # sparsity
    "DenseSparsityDetector",
    "GreedyColoring",
    "KnownSparsity",
    "TracerSparsityDetector",
    "spy",
    # contexts
    "Cache",
    "Constant",
    # engine inside engine
    "DifferentiateWith",
    # reverse mode at bounded memory
    "checkpoint",
    # operators
    "derivative",
    "gradient",
    "gradient_and_hvp",
    "hessian",
    "hvp",
    "jacobian",
    "pullback",
    "pushforward",
    "second_derivative",
    "value_and_derivative",
    "value_and_gradient",
    "value_and_jacobian",
    "value_and_pullback",
    "value_and_pushforward",
    "value_derivative_and_second_derivative",
    "value_gradient_and_hessian",
    "value_gradient_and_hvp",
    # Jacobian-inverse products and the Jacobian as an operator
    "inverse_pullback",
    "inverse_pushforward",
    "jacobian_operator",
    "value_and_inverse_pullback",
    "value_and_inverse_pushforward",
    # beyond second order: Taylor coefficients and Laplacians
    "laplacian",
    "taylor",
    "taylor_coefficients",
    "value_gradient_and_laplacian",
    # reverse mode at bounded memory
    "scan",
    # preparation
    "Prep",
    "prepare_derivative",
    "prepare_gradient",
    "prepare_hessian",
    "prepare_hvp",
    "prepare_hvp_same_point",
    "prepare_inverse_pullback",
    "prepare_inverse_pullback_same_point",
    "prepare_inverse_pushforward",
    "prepare_inverse_pushforward_same_point",
    "prepare_jacobian",
    "prepare_pullback",
    "prepare_pullback_same_point",
    "prepare_pushforward",
    "prepare_pushforward_same_point",
    "prepare_second_derivative",
    "prepare_laplacian",
    "prepare_taylor",
    # errors
    "ArgumentError",
    "BackendUnavailableError",
    "ConvergenceError",
    "DifaceError",
    "EvaluationError",
    "NotSupportedError",
    "PreparationMismatchError",
    "ShapeError",
    "SingularError",
    "TapeMismatchError",
]
