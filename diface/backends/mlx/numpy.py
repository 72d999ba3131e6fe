"""AutoMLX's namespace under its documented name (also `register_engine(namespace=...)`'s):
`diface.backends.mlx.numpy` is `_namespace`'s contents (`mlx.core`, with `asarray`/`array` that keep a
NumPy array's dtype, and `angle`)."""

from ._namespace import *  # noqa: F403 - the namespace's every public name
from ._namespace import angle, array, asarray, fft, linalg, random  # noqa: F401 - named for type checkers
