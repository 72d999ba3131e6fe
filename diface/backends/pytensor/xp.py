"""AutoPyTensor's namespace under its public name (`register_engine(namespace=...)`):
`diface.backends.pytensor.xp` is `_namespace`'s contents (`pytensor.tensor`, with `asarray` and `fft`)."""

from ._namespace import *  # noqa: F403 - the namespace's every public name
from ._namespace import __getattr__, asarray, fft  # noqa: F401 - the rest of pytensor.tensor's names, lazily
