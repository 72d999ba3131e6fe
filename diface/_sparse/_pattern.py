"""`Pattern`: where an (m, n) Jacobian (or (n, n) Hessian) may be nonzero, as CSR index arrays.

The nonzeros are numbered in CSR order (row-major, columns increasing within a row). That numbering is
the order of every `data` array of this package: a decompression plan returns the Jacobian's values in
it, and `Pattern.to_scipy(data)` turns them into a matrix.

    >>> import numpy as np
    >>> p = Pattern.from_dense(np.array([[1, 1, 0], [0, 1, 1]]))
    >>> p
    Pattern(shape=(2, 3), nnz=4)
    >>> p.rows, p.cols
    (array([0, 0, 1, 1]), array([0, 1, 1, 2]))
    >>> p.to_dense().astype(int)
    array([[1, 1, 0],
           [0, 1, 1]])
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["INDEX", "Pattern", "as_pattern"]

#: the integer type of every index array of this package
INDEX = np.intp


def _index_array(a: Any, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got dtype {a.dtype}")
    return a.astype(INDEX, copy=False)


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only copy (never freezes the caller's array)."""
    a = np.array(a, dtype=INDEX)
    a.flags.writeable = False
    return a


def _shape(shape: Any) -> tuple[int, int]:
    try:
        m, n = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise ValueError(f"a sparsity pattern needs a 2-D shape (m, n), got {shape!r}") from None
    if m < 0 or n < 0:
        raise ValueError(f"a sparsity pattern needs a non-negative shape, got {(m, n)}")
    return m, n


class Pattern:
    """The sparsity structure of an (m, n) matrix, immutable.

    - `indptr`: `(m + 1,)`, `indices`: `(nnz,)`: CSR index arrays (column indices sorted and unique
      within each row; read-only, dtype `np.intp`);
    - `rows`, `cols`: `(nnz,)`: the row and column of each nonzero, in CSR order;
    - `T`: the (n, m) transposed pattern; its k-th nonzero is this pattern's nonzero `transpose_perm[k]`
      (so the CSC order of this pattern is `transpose_perm`).

    Build one with `Pattern.from_dense` (a boolean / 0-1 array), `Pattern.from_scipy` (any scipy.sparse
    matrix or array: stored entries that equal zero are left out), `Pattern.from_coo(rows, cols, shape)`
    (duplicates merged), or `as_pattern` (any of these). Two patterns are equal when their shapes and
    nonzeros are; patterns are hashable.
    """

    __slots__ = ("_cache", "_indices", "_indptr", "_shape")

    def __init__(self, indptr: Any, indices: Any, shape: Any) -> None:
        m, n = _shape(shape)
        indptr = _index_array(indptr, "indptr")
        indices = _index_array(indices, "indices")
        if indptr.shape != (m + 1,):
            raise ValueError(f"indptr must have shape ({m + 1},) for {m} rows, got {indptr.shape}")
        if indptr[0] != 0 or indptr[-1] != indices.size or np.any(np.diff(indptr) < 0):
            raise ValueError("indptr must start at 0, never decrease, and end at len(indices)")
        if indices.size and (indices.min() < 0 or indices.max() >= n):
            raise ValueError(f"column indices must lie in [0, {n})")
        rows = np.repeat(np.arange(m, dtype=INDEX), np.diff(indptr))
        if indices.size > 1:
            step = np.diff(indices)
            new_row = rows[1:] != rows[:-1]
            if np.any((step <= 0) & ~new_row):
                raise ValueError("column indices must increase strictly within each row (use Pattern.from_coo)")
        self._shape = (m, n)
        self._indptr = _readonly(indptr)
        self._indices = _readonly(indices)
        self._cache: dict[str, Any] = {"rows": _readonly(rows)}

    # constructors ---------------------------------------------------------------------------------
    @classmethod
    def from_coo(cls, rows: Any, cols: Any, shape: Any) -> Pattern:
        """The pattern with a nonzero at each `(rows[k], cols[k])` (repeats merged)."""
        m, n = _shape(shape)
        rows, cols = _index_array(rows, "rows"), _index_array(cols, "cols")
        if rows.shape != cols.shape:
            raise ValueError(f"rows and cols must have the same length, got {rows.size} and {cols.size}")
        if rows.size and (rows.min() < 0 or rows.max() >= m or cols.min() < 0 or cols.max() >= n):
            raise ValueError(f"an index lies outside the shape {(m, n)}")
        keys = rows * max(n, 1) + cols
        if keys.size > 1 and not np.all(keys[1:] > keys[:-1]):
            keys = np.sort(keys)
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
        rows, cols = np.divmod(keys, max(n, 1))
        indptr = np.zeros(m + 1, dtype=INDEX)
        np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
        return cls(indptr, cols, (m, n))

    @classmethod
    def from_dense(cls, a: Any) -> Pattern:
        """The nonzeros (True entries) of a 2-D array."""
        a = np.asarray(a)
        if a.ndim != 2:
            raise ValueError(f"a dense sparsity pattern must be 2-D, got shape {a.shape}")
        rows, cols = np.nonzero(a)
        return cls.from_coo(rows, cols, a.shape)

    @classmethod
    def from_scipy(cls, matrix: Any) -> Pattern:
        """The stored entries of a scipy.sparse matrix or array that are not zero."""
        if matrix.format == "csr" and matrix.has_canonical_format and np.all(np.asarray(matrix.data) != 0):
            return cls(matrix.indptr, matrix.indices, matrix.shape)  # CSR order already: no sort
        coo = matrix.tocoo()
        keep = np.asarray(coo.data) != 0
        return cls.from_coo(np.asarray(coo.row)[keep], np.asarray(coo.col)[keep], coo.shape)

    # structure ------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    @property
    def nnz(self) -> int:
        return int(self._indices.size)

    @property
    def indptr(self) -> np.ndarray:
        return self._indptr

    @property
    def indices(self) -> np.ndarray:
        return self._indices

    @property
    def rows(self) -> np.ndarray:
        """`(nnz,)`: the row of each nonzero."""
        return self._cache["rows"]

    @property
    def cols(self) -> np.ndarray:
        """`(nnz,)`: the column of each nonzero (the same array as `indices`)."""
        return self._indices

    def row_counts(self) -> np.ndarray:
        """`(m,)`: nonzeros per row."""
        return np.diff(self._indptr)

    def col_counts(self) -> np.ndarray:
        """`(n,)`: nonzeros per column."""
        return np.bincount(self._indices, minlength=self._shape[1]).astype(INDEX)

    @property
    def transpose_perm(self) -> np.ndarray:
        """`(nnz,)`: this pattern's nonzeros in CSC order (column-major), as positions in CSR order."""
        if "perm" not in self._cache:
            m = self._shape[0]
            keys = self._indices * max(m, 1) + self.rows
            self._cache["perm"] = _readonly(np.argsort(keys, kind="stable"))
        return self._cache["perm"]

    @property
    def T(self) -> Pattern:
        """The transposed (n, m) pattern."""
        if "T" not in self._cache:
            m, n = self._shape
            perm = self.transpose_perm
            indptr = np.zeros(n + 1, dtype=INDEX)
            np.cumsum(self.col_counts(), out=indptr[1:])
            t = Pattern(indptr, self.rows[perm], (n, m))
            t._cache["T"] = self
            self._cache["T"] = t
        return self._cache["T"]

    def mirror_positions(self) -> np.ndarray:
        """`(nnz,)`, for a symmetric pattern: the position (CSR order) of the nonzero (j, i), for each
        nonzero (i, j). The CSC order lists (j, i) where the CSR order lists (i, j), so this inverts
        `transpose_perm` (kept with the pattern)."""
        if "mirror" not in self._cache:
            perm = self.transpose_perm
            mirror = np.empty(perm.size, dtype=INDEX)
            mirror[perm] = np.arange(perm.size, dtype=INDEX)
            self._cache["mirror"] = _readonly(mirror)
        return self._cache["mirror"]

    def memo(self, key: Any, make: Callable[[], Any]) -> Any:
        """`make()`, made once per `key` and kept with this pattern: an array library's copy of the index
        arrays (on a device), say, that every result of one preparation shares."""
        key = ("memo", key)
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def is_symmetric(self) -> bool:
        """Square, and (i, j) is a nonzero exactly when (j, i) is."""
        m, n = self._shape
        return m == n and self == self.T

    def diagonal_positions(self) -> np.ndarray:
        """Positions (in CSR order) of the nonzeros on the diagonal."""
        return np.flatnonzero(self.rows == self._indices)

    def select_rows(self, keep: Any) -> tuple[Pattern, np.ndarray]:
        """The pattern with the rows where the boolean `(m,)` mask `keep` is False emptied (shape kept),
        and the positions of its nonzeros in this pattern."""
        keep = np.asarray(keep, dtype=bool)
        positions = np.flatnonzero(keep[self.rows])
        return Pattern.from_coo(self.rows[positions], self._indices[positions], self._shape), positions

    def select_cols(self, keep: Any) -> tuple[Pattern, np.ndarray]:
        """The pattern with the columns where the boolean `(n,)` mask `keep` is False emptied (shape kept),
        and the positions of its nonzeros in this pattern."""
        keep = np.asarray(keep, dtype=bool)
        positions = np.flatnonzero(keep[self._indices])
        return Pattern.from_coo(self.rows[positions], self._indices[positions], self._shape), positions

    # conversions ----------------------------------------------------------------------------------
    def to_dense(self) -> np.ndarray:
        """`(m, n)` boolean array, True at the nonzeros."""
        out = np.zeros(self._shape, dtype=bool)
        out[self.rows, self._indices] = True
        return out

    def to_scipy(self, data: Any = None) -> Any:
        """A `scipy.sparse.csr_array` with this pattern and values `data` (`(nnz,)`, CSR order; ones when
        omitted). Imports SciPy."""
        from scipy.sparse import csr_array

        if data is None:
            data = np.ones(self.nnz)
        data = np.asarray(data)
        if data.shape != (self.nnz,):
            raise ValueError(f"data must have shape ({self.nnz},), got {data.shape}")
        template = self.memo(
            "scipy", lambda: csr_array((np.ones(self.nnz), self._indices, self._indptr), shape=self._shape)
        )
        # a shallow copy of a checked template, with its own index arrays (scipy may sort or prune them
        # in place) and `data`: csr_array's constructor checks cost more than a small Jacobian
        result = copy.copy(template)
        result.data, result.indices, result.indptr = data, template.indices.copy(), template.indptr.copy()
        return result

    def values_of(self, matrix: Any) -> np.ndarray:
        """`(nnz,)`: the entries of a dense `(m, n)` array at this pattern's nonzeros, in CSR order."""
        matrix = np.asarray(matrix)
        if matrix.shape != self._shape:
            raise ValueError(f"expected shape {self._shape}, got {matrix.shape}")
        return matrix[self.rows, self._indices]

    # identity -------------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Pattern):
            return NotImplemented
        return self is other or (
            self._shape == other._shape
            and np.array_equal(self._indptr, other._indptr)
            and np.array_equal(self._indices, other._indices)
        )

    def __hash__(self) -> int:
        if "hash" not in self._cache:
            self._cache["hash"] = hash((self._shape, self._indptr.tobytes(), self._indices.tobytes()))
        return self._cache["hash"]

    def __repr__(self) -> str:
        return f"Pattern(shape={self._shape}, nnz={self.nnz})"

    def __reduce__(self) -> tuple:
        return (Pattern, (np.array(self._indptr), np.array(self._indices), self._shape))


def _is_scipy_sparse(obj: Any) -> bool:
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(obj)


def as_pattern(obj: Any, shape: Any = None) -> Pattern:
    """A `Pattern` from a `Pattern`, a scipy.sparse matrix or array, a 2-D boolean / 0-1 array (anything
    `np.asarray` takes), or a `(rows, cols)` pair of index arrays (then `shape` is required)."""
    if isinstance(obj, Pattern):
        if shape is not None and _shape(shape) != obj.shape:
            raise ValueError(f"the pattern has shape {obj.shape}, not {tuple(shape)}")
        return obj
    if _is_scipy_sparse(obj):
        pattern = Pattern.from_scipy(obj)
    elif isinstance(obj, tuple) and len(obj) == 2:
        if shape is None:
            raise ValueError("a (rows, cols) pattern needs its shape: as_pattern((rows, cols), shape=(m, n))")
        return Pattern.from_coo(obj[0], obj[1], shape)
    else:
        pattern = Pattern.from_dense(obj)
    if shape is not None and _shape(shape) != pattern.shape:
        raise ValueError(f"the pattern has shape {pattern.shape}, not {tuple(shape)}")
    return pattern
