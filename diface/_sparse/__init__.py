"""Sparse Jacobians and Hessians, engine-agnostic: sparsity patterns, graph colorings, seeds and
decompression plans, in NumPy.

    >>> import numpy as np
    >>> from diface._sparse import GreedyColoring, decompress
    >>> from diface._sparse.examples import tridiagonal
    >>> pattern = tridiagonal(5)
    >>> coloring = GreedyColoring().color(pattern, "column")   # forward mode: J S, 3 products
    >>> J = pattern.to_dense() * np.arange(1.0, 26.0).reshape(5, 5)
    >>> B = J @ coloring.forward_seed()                        # (5, 3): what 3 pushforwards give
    >>> data = decompress(coloring.plan(), B)                  # (nnz,) in CSR order
    >>> bool(np.array_equal(pattern.to_scipy(data).toarray(), J))
    True

Modules, one job each: `_pattern` (the `Pattern` type), `_graph` (intersection and adjacency graphs),
`_orders` (vertex orders), `_distance1` / `_star` / `_acyclic` (greedy colorings), `_bicolor` (mixed
mode), `_forest` (two-colored trees), `_validate` (checks), `_plans` (decompression), `_coloring`
(`GreedyColoring`, `Coloring`), `_compiled` (numba kernels for the sequential passes of large
colorings), `_detectors` (the sparsity detectors), `_autosparse` (the `AutoSparse` wrapper), `_layout`
(sparse results in the input's array type), `_spy` (`di.spy`), `examples` (test patterns) and
`example_functions` (functions with those patterns, for any array namespace).
"""

from ._coloring import KINDS, Coloring, GreedyColoring
from ._pattern import Pattern, as_pattern
from ._plans import DecompressionPlan, SubstitutionStep, decompress
from ._validate import (
    ColoringError,
    check_acyclic_coloring,
    check_bicoloring,
    check_column_coloring,
    check_row_coloring,
    check_star_coloring,
)

__all__ = [
    "KINDS",
    "Coloring",
    "ColoringError",
    "DecompressionPlan",
    "GreedyColoring",
    "Pattern",
    "SubstitutionStep",
    "as_pattern",
    "check_acyclic_coloring",
    "check_bicoloring",
    "check_column_coloring",
    "check_row_coloring",
    "check_star_coloring",
    "decompress",
]
