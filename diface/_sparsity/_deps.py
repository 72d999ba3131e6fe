"""Index-set algebra for global sparsity detection: which inputs every element of a value depends on.

A global sparsity tracer runs f's recorded program (a tape, a jaxpr, a torch graph) on `Deps` instead
of numbers: for a value of p elements and an input x of n elements,

- `first` (p x n, boolean, sparse): element e depends on input i (first-order: the Jacobian pattern of
  the value);
- `second` (p x n*n, boolean, sparse; only when detecting Hessians): the pairs (i, j) of inputs that
  interact nonlinearly in element e (stored as column i * n + j, both orders): the Hessian pattern
  of the value.

Every operation of a program is one of a few kinds, each a few sparse-matrix operations:

- `gather`: data movement (reshape, transpose, slicing, indexing, broadcasting, concatenation): each
  output element is a copy of one input element, or a constant;
- `elementwise`: an output element combines the elements at its broadcast position of each operand,
  linearly (+, -), bilinearly (*), or nonlinearly (sin, exp, x / y in y, ...), which decides the new
  pairs it adds (`Nonlinearity`);
- `reduce`: each output element combines a group of input elements (sums, products, max); a product
  is nonlinear among the members of its group;
- `combine`: any other linear map whose structure the caller knows as a sparse 0/1 matrix (a matrix
  product with a constant matrix, a cumulative sum).

Patterns found this way hold at every x: they are supersets of the nonzeros of the Jacobian (Hessian)
at any point. Callers build these from their own programs; nothing here knows an engine.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Deps", "Nonlinearity"]


class Nonlinearity(enum.Enum):
    """How an elementwise operation's output depends on its operands, to second order."""

    #: linear in every operand (+, -, negation, copies, max/min and abs: piecewise linear)
    LINEAR = "linear"
    #: nonlinear jointly in every operand (sin, exp, x ** y, atan2)
    NONLINEAR = "nonlinear"
    #: a product of its operands: each pair of different operands interacts, no operand with itself
    BILINEAR = "bilinear"
    #: a quotient a / b: linear in a, nonlinear in b, and a interacts with b
    QUOTIENT = "quotient"


def _sparse() -> Any:
    import scipy.sparse

    return scipy.sparse


def _rows(matrix: Any, index: np.ndarray) -> Any:
    """Rows `index` of a CSR matrix; -1 gives an empty row."""
    sp = _sparse()
    index = np.asarray(index, dtype=np.int64).ravel()
    missing = index < 0
    if not missing.any():
        return matrix[index]
    safe = np.where(missing, 0, index)
    keep = sp.diags_array((~missing).astype(np.int8), format="csr", dtype=np.int8)
    return (keep @ matrix[safe]).astype(bool)


@dataclass
class Deps:
    """The dependencies of one value (see the module docstring): `shape` of the value, `n` inputs."""

    shape: tuple
    n: int
    first: Any
    second: Any = None

    # -- making ---------------------------------------------------------------------------------------
    @classmethod
    def constant(cls, shape: tuple, n: int, second: bool = False) -> Deps:
        """A value that depends on no input."""
        sp = _sparse()
        p = int(np.prod(shape, dtype=np.int64))
        return cls(
            tuple(shape),
            n,
            sp.csr_array((p, n), dtype=bool),
            sp.csr_array((p, n * n), dtype=bool) if second else None,
        )

    @classmethod
    def input(cls, shape: tuple, second: bool = False) -> Deps:
        """The input itself: element i depends on input i."""
        sp = _sparse()
        n = int(np.prod(shape, dtype=np.int64))
        return cls(
            tuple(shape),
            n,
            sp.eye_array(n, dtype=bool, format="csr"),
            sp.csr_array((n, n * n), dtype=bool) if second else None,
        )

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def tracks_second(self) -> bool:
        return self.second is not None

    def _like(self, shape: tuple, first: Any, second: Any) -> Deps:
        return Deps(tuple(shape), self.n, first.tocsr(), None if second is None else second.tocsr())

    # -- operations -----------------------------------------------------------------------------------
    def gather(self, index: np.ndarray) -> Deps:
        """Each element of the result (shape `index.shape`) is element `index[...]` of this value (flat
        index), or a constant where `index` is -1."""
        index = np.asarray(index)
        second = None if self.second is None else _rows(self.second, index)
        return self._like(index.shape, _rows(self.first, index), second)

    def broadcast_to(self, shape: tuple) -> Deps:
        """This value broadcast to `shape` (NumPy rules)."""
        if tuple(shape) == self.shape:
            return self
        ids = np.broadcast_to(np.arange(self.size).reshape(self.shape), shape)
        return self.gather(ids)

    @staticmethod
    def elementwise(shape: tuple, operands: list[Deps], kind: Nonlinearity) -> Deps:
        """An elementwise operation of `operands` (broadcast to `shape`)."""
        parts = [d.broadcast_to(shape) for d in operands]
        n, second = parts[0].n, parts[0].tracks_second
        first = parts[0].first
        for d in parts[1:]:
            first = first + d.first
        result = Deps(tuple(shape), n, first.astype(bool))
        if second:
            pairs = parts[0].second
            for d in parts[1:]:
                pairs = pairs + d.second
            if kind is Nonlinearity.NONLINEAR:
                pairs = pairs + _outer(first, first, n)
            elif kind is Nonlinearity.BILINEAR:
                for i, a in enumerate(parts):
                    for b in parts[i + 1 :]:
                        pairs = pairs + _outer(a.first, b.first, n) + _outer(b.first, a.first, n)
            elif kind is Nonlinearity.QUOTIENT:
                a, b = parts[0], parts[1]
                pairs = pairs + _outer(b.first, b.first, n) + _outer(a.first, b.first, n) + _outer(b.first, a.first, n)
            result.second = pairs.astype(bool).tocsr()
        return result

    def reduce(self, groups: np.ndarray, shape: tuple, kind: Nonlinearity = Nonlinearity.LINEAR) -> Deps:
        """Element e of the result (shape `shape`) combines the elements of this value whose `groups`
        entry is e (-1: none). `kind` NONLINEAR or BILINEAR (a product of the group's members) adds
        their pairs."""
        sp = _sparse()
        groups = np.asarray(groups, dtype=np.int64).ravel()
        q = int(np.prod(shape, dtype=np.int64))
        keep = groups >= 0
        members = sp.csr_array(
            (np.ones(int(keep.sum()), dtype=np.int8), (groups[keep], np.flatnonzero(keep))), shape=(q, self.size)
        )
        return self.combine(members, shape, kind)

    def combine(self, members: Any, shape: tuple, kind: Nonlinearity = Nonlinearity.LINEAR) -> Deps:
        """Element e of the result depends on the elements of this value in row e of the sparse 0/1
        matrix `members` (q x p): any linear map with that structure (or, for `kind` other than
        LINEAR, a product of the members)."""
        # counts in int32: a sum of many ones in int8 can wrap around to 0 and lose a dependency
        members = members.astype(np.int32).tocsr()
        first = (members @ self.first.astype(np.int32)).astype(bool)
        second = None
        if self.second is not None:
            second = _union_of_rows(members, self.second)
            if kind is not Nonlinearity.LINEAR:
                second = second + _outer(first, first, self.n)
        return self._like(shape, first, second)

    def union(self, other: Deps) -> Deps:
        """Either value (a branch taken at run time): the union of their dependencies."""
        return Deps.elementwise(self.shape, [self, other], Nonlinearity.LINEAR)

    # -- results --------------------------------------------------------------------------------------
    def jacobian_pattern(self) -> Any:
        """The (size x n) CSR pattern of the value's Jacobian."""
        return self.first.astype(bool).tocsr()

    def hessian_pattern(self) -> Any:
        """The (n x n) CSR pattern of the Hessian of the sum of the value's elements."""
        sp = _sparse()
        if self.second is None:
            raise ValueError("second-order dependencies were not tracked")
        pairs = np.unique(self.second.tocoo().col)
        rows, cols = np.divmod(pairs, self.n)
        return sp.csr_array((np.ones(pairs.size, dtype=bool), (rows, cols)), shape=(self.n, self.n))


def _union_of_rows(members: Any, m: Any) -> Any:
    """Row e: the union of the rows of `m` that row e of `members` names (the pattern of `members @ m`),
    in time and memory linear in the entries gathered. SciPy's product takes a workspace as wide as `m`
    has columns, and the Hessian pairs have n² of them: 7 s at n = 2·10⁴, out of memory near 10⁵."""
    sp = _sparse()
    members, m = members.tocsr(), m.tocsr()
    q, ncols = members.shape[0], m.shape[1]
    owners = np.repeat(np.arange(q, dtype=np.int64), np.diff(members.indptr))
    lengths = np.diff(m.indptr)[members.indices]
    total = int(lengths.sum())
    if total == 0:
        return sp.csr_array((q, ncols), dtype=bool)
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    gather = np.repeat(m.indptr[members.indices].astype(np.int64), lengths) + np.arange(total) - offsets
    rows = np.repeat(owners, lengths)
    cols = m.indices[gather].astype(np.int64)
    keys = np.unique(rows * ncols + cols)  # row-major order: rows sorted, columns sorted within a row
    rows, cols = keys // ncols, keys % ncols
    indptr = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=q), out=indptr[1:])
    return sp.csr_array((np.ones(len(keys), dtype=bool), cols, indptr), shape=(q, ncols))


def _outer(a: Any, b: Any, n: int) -> Any:
    """Row e: all pairs (i, j) with i in row e of `a` and j in row e of `b`, as columns i * n + j."""
    sp = _sparse()
    a, b = a.tocsr(), b.tocsr()
    a_counts, b_counts = np.diff(a.indptr), np.diff(b.indptr)
    per_row = a_counts * b_counts
    total = int(per_row.sum())
    rows = np.repeat(np.arange(a.shape[0]), per_row)
    if total == 0:
        return sp.csr_array((a.shape[0], n * n), dtype=bool)
    # for each row e, every (i, j) with i from a's row and j from b's row
    starts = np.repeat(np.cumsum(per_row) - per_row, per_row)
    k = np.arange(total) - starts  # position within the row's block of pairs
    bc = np.repeat(b_counts, per_row)
    i = a.indices[np.repeat(a.indptr[:-1], per_row) + k // np.maximum(bc, 1)].astype(np.int64)
    j = b.indices[np.repeat(b.indptr[:-1], per_row) + k % np.maximum(bc, 1)].astype(np.int64)
    # i * n + j in int64: n² overflows int32 from n = 46,341
    return sp.csr_array((np.ones(total, dtype=bool), (rows, i * n + j)), shape=(a.shape[0], n * n))
