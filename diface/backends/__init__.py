"""Backends, one per registered engine: `autograd` (`AutoAutograd`), `finitediff` (`AutoFiniteDiff`),
`jax` (`AutoJAX`), `mlx` (`AutoMLX`), `pytensor` (`AutoPyTensor`), `tape` (`AutoTape`), `tensorflow`
(`AutoTensorFlow`) and `torch` (`AutoTorch`), each importable as `diface.backends.<name>`. An engine's
machinery lives beside it (`_<name>/`, or the package's private modules). Importing this package
imports no framework."""

from .autograd import AutoAutograd
from .finitediff import AutoFiniteDiff
from .jax import AutoJAX
from .mlx import AutoMLX
from .pytensor import AutoPyTensor
from .tape import AutoTape
from .tensorflow import AutoTensorFlow
from .torch import AutoTorch

__all__ = [
    "AutoAutograd",
    "AutoFiniteDiff",
    "AutoJAX",
    "AutoMLX",
    "AutoPyTensor",
    "AutoTape",
    "AutoTensorFlow",
    "AutoTorch",
]
