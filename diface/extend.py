"""What a new backend is written against: the contract and its types.

A backend subclasses `Backend` (one package under `diface/backends/`, or any module of your own) and
implements `array_ops` and either `prepare_linearize` or `prepare_pushforward`/`prepare_pullback`,
returning `Kernel`s whose `run` returns a `Result`; everything else is derived in the core. Arrays of
a new library become known to the core with `register_array_ops`, its trees with
`register_tree_library`; `diface.testing.register_engine` names it on the command line and tells the
test kit the module its functions are written with. See docs/add-a-backend.md, written from the
one-file backend in `tests/array_api_backend.py`.
"""

from ._arrays import NUMPY as NUMPY_OPS
from ._arrays import ArrayAPIOps, ArrayOps, NumpyOps, ops_for, register_array_ops
from ._backend import Backend
from ._call.trees.registry import TreeLibrary, register_tree_library
from ._derive import SecondOrderPlan
from ._kernel import Kernel, Result, Run
from ._linearization import Linearization, Linearizer
from ._problem import Problem
from ._wrapper import Wrapper

__all__ = [
    "NUMPY_OPS",
    "ArrayAPIOps",
    "ArrayOps",
    "Backend",
    "Kernel",
    "Linearization",
    "Linearizer",
    "NumpyOps",
    "Problem",
    "Result",
    "Run",
    "SecondOrderPlan",
    "TreeLibrary",
    "Wrapper",
    "ops_for",
    "register_array_ops",
    "register_tree_library",
]
