"""Backends, one package per registered engine: `autograd` (`AutoAutograd`), `finitediff`
(`AutoFiniteDiff`), `jax` (`AutoJAX`), `mlx` (`AutoMLX`), `pytensor` (`AutoPyTensor`), `tape` (`AutoTape`),
`tensorflow` (`AutoTensorFlow`) and `torch` (`AutoTorch`), each `diface/backends/<name>/`, shaped alike
(docs/add-a-backend.md; the tape's package has a folder per layer: docs/backends/tape.md). Importing
this package imports no framework."""

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
