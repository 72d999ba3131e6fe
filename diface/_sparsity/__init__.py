"""Sparsity detection: the patterns of Jacobians and Hessians, from a program (global) or from numbers
at a point (local).

`_deps` holds `Deps`, the index-set algebra the engines' global detectors (`backends/_tape/_sparsity.py`,
`backends/_jax/_sparsity.py`, the torch, TensorFlow and PyTensor ones) interpret f's program with; the
detectors users pass (`TracerSparsityDetector`, `DenseSparsityDetector`, `KnownSparsity`) are in
`diface._sparse._detectors`.
"""

from ._deps import Deps, Nonlinearity

__all__ = ["Deps", "Nonlinearity"]
