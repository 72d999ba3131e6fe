"""Index-set algebra for global sparsity detection: which inputs every element of a value depends on.

A global sparsity tracer runs f's recorded program (a tape, a jaxpr, a torch graph) on `Deps` instead
of numbers: for a value of p elements and an input x of n elements,

- `first` (p x n, boolean, sparse): element e depends on input i (first-order: the Jacobian pattern of
  the value);
- `second` (p x n*n, boolean, sparse; only when detecting Hessians): the pairs (i, j) of inputs that
  interact nonlinearly in element e, each stored once as column i * n + j with i <= j (the pattern is
  symmetric; `hessian_pattern` mirrors it once, at the end): the Hessian pattern of the value.

Every row of both is kept canonical (sorted, without duplicates), and nothing here takes a workspace as
wide as the n² columns of `second` (SciPy's products and its additions of non-canonical matrices do):
memory and time stay linear in the entries an operation reads and writes, with one sort where pairs of
several rows are pooled.

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
        second = None if self.second is None else _take_rows(self.second, index)
        return self._like(index.shape, _take_rows(self.first, index), second)

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
            terms = [d.second for d in parts]
            if kind is Nonlinearity.NONLINEAR:
                terms.append(_pairs_within(result.first, n))
            elif kind is Nonlinearity.BILINEAR:
                for i, a in enumerate(parts):
                    for b in parts[i + 1 :]:
                        terms.append(_pairs_across(a.first, b.first, n))
            elif kind is Nonlinearity.QUOTIENT:
                a, b = parts[0], parts[1]
                terms += [_pairs_within(b.first, n), _pairs_across(a.first, b.first, n)]
            result.second = _union(terms)
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
        members = members.tocsr().astype(bool)  # a copy: its structure, explicit zeros left out
        members.sum_duplicates()
        members.eliminate_zeros()
        first = _union_of_rows(members, self.first)
        second = None
        if self.second is not None:
            second = _union_of_rows(members, self.second)
            if kind is not Nonlinearity.LINEAR:
                second = _union([second, _pairs_within(first, self.n)])
        return self._like(shape, first, second)

    def union(self, other: Deps) -> Deps:
        """Either value (a branch taken at run time): the union of their dependencies."""
        return Deps.elementwise(self.shape, [self, other], Nonlinearity.LINEAR)

    # -- results --------------------------------------------------------------------------------------
    def jacobian_pattern(self) -> Any:
        """The (size x n) CSR pattern of the value's Jacobian."""
        return self.first.astype(bool).tocsr()

    def hessian_pattern(self) -> Any:
        """The (n x n) CSR pattern of the Hessian of the sum of the value's elements: the pairs of every
        element, pooled and mirrored (symmetric), built once."""
        sp = _sparse()
        if self.second is None:
            raise ValueError("second-order dependencies were not tracked")
        keys = self.second.indices.astype(np.int64, copy=False)
        if self.second.shape[0] > 1 or not self.second.has_canonical_format:
            keys = _unique(keys)
        n = self.n
        # the upper triangle straight from its sorted keys (i major), then mirrored by one transpose and
        # one merge, both linear (SciPy's workspace here is n wide)
        indptr = np.searchsorted(keys, np.arange(n + 1, dtype=np.int64) * n)
        columns = keys - np.repeat(np.arange(n, dtype=np.int64) * n, np.diff(indptr))
        index = np.int32 if n < 2**31 else np.int64
        upper = sp.csr_array(
            (np.ones(keys.size, dtype=bool), columns.astype(index), indptr.astype(index)), shape=(n, n)
        )
        upper.has_canonical_format = True
        return (upper + upper.T.tocsr()).tocsr()


# -- the pieces: CSR rows as sorted key arrays, merged by NumPy ---------------------------------------------
def _unique(keys: np.ndarray) -> np.ndarray:
    """The sorted distinct entries of `keys`: a sort and a mask (NumPy's `unique` hashes, and is many
    times slower on the millions of pair keys pooled here)."""
    keys = np.sort(keys)
    if keys.size < 2:
        return keys
    distinct = np.empty(keys.size, dtype=bool)
    distinct[0] = True
    np.not_equal(keys[1:], keys[:-1], out=distinct[1:])
    return keys[distinct]


def _sorted_rows(m: Any) -> Any:
    """`m` with canonical rows (a copy, where an engine's matrix is not): what the merges here rely on."""
    m = m.tocsr()
    if m.has_canonical_format:  # SciPy checks the rows once where no operation has said
        return m
    m = m.copy()
    m.sum_duplicates()
    return m


def _csr(indptr: np.ndarray, indices: np.ndarray, shape: tuple) -> Any:
    """A boolean CSR matrix from canonical rows (sorted, distinct), marked so."""
    m = _sparse().csr_array((np.ones(indices.size, dtype=bool), indices, indptr), shape=shape)
    m.has_canonical_format = True
    return m


def _indptr(counts: np.ndarray) -> np.ndarray:
    indptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr


def _canonical(rows: np.ndarray, keys: np.ndarray, shape: tuple) -> Any:
    """The CSR matrix (`shape`) with entries (rows[k], keys[k]) for every k, duplicates merged: one sort
    of row-major keys (`rows` need not be ordered)."""
    q, ncols = int(shape[0]), int(shape[1])
    if q * ncols < np.iinfo(np.int64).max:
        if q == 1:
            keys = _unique(keys)
            return _csr(np.array([0, keys.size], dtype=np.int64), keys, (q, ncols))
        flat = _unique(rows * ncols + keys)
        indptr = np.searchsorted(flat, np.arange(q + 1, dtype=np.int64) * ncols)
        return _csr(indptr, flat - np.repeat(np.arange(q, dtype=np.int64) * ncols, np.diff(indptr)), (q, ncols))
    else:  # row-major keys overflow int64: sort the (row, key) pairs
        order = np.lexsort((keys, rows))
        rows, keys = rows[order], keys[order]
        distinct = np.ones(rows.size, dtype=bool)
        distinct[1:] = (rows[1:] != rows[:-1]) | (keys[1:] != keys[:-1])
        rows, keys = rows[distinct], keys[distinct]
    return _csr(_indptr(np.bincount(rows, minlength=q)), keys, shape)


def _segments(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of `arange(s, s + l)` over the pairs (s, l) of `starts` and `lengths`."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shift = starts.astype(np.int64) - (np.cumsum(lengths) - lengths)
    return np.repeat(shift, lengths) + np.arange(total, dtype=np.int64)


def _take_rows(m: Any, index: np.ndarray) -> Any:
    """Rows `index` of the CSR matrix `m` (-1: an empty row), copied by NumPy (no product: SciPy's takes
    a workspace as wide as `m` has columns)."""
    index = np.asarray(index, dtype=np.int64).ravel()
    indptr = m.indptr.astype(np.int64, copy=False)
    lengths = indptr[1:] - indptr[:-1]
    missing = index < 0
    if missing.all():  # also where `m` has no rows
        return _sparse().csr_array((index.size, m.shape[1]), dtype=bool)
    safe = np.where(missing, 0, index) if missing.any() else index
    counts = np.where(missing, 0, lengths[safe])
    indices = m.indices[_segments(indptr[safe], counts)]
    return _csr(_indptr(counts), indices, (index.size, m.shape[1]))


def _union_of_rows(members: Any, m: Any) -> Any:
    """Row e: the union of the rows of `m` that row e of `members` names (the pattern of `members @ m`),
    in time and memory linear in the entries gathered (and a sort of them). SciPy's product takes a
    workspace as wide as `m` has columns, and the Hessian pairs have n² of them."""
    q = members.shape[0]
    indptr = m.indptr.astype(np.int64, copy=False)
    member_counts = np.diff(members.indptr)
    if q == members.indices.size and (member_counts == 1).all():  # one member each: a gather
        return _take_rows(m, members.indices)
    sources = members.indices
    lengths = indptr[1:][sources] - indptr[:-1][sources]
    keys = m.indices[_segments(indptr[:-1][sources], lengths)].astype(np.int64, copy=False)
    owners = np.repeat(np.arange(q, dtype=np.int64), member_counts)
    return _canonical(np.repeat(owners, lengths), keys, (q, m.shape[1]))


def _union(terms: list) -> Any:
    """The elementwise union of boolean CSR matrices of one shape: SciPy's merge of sorted rows (linear;
    it needs both operands canonical, else it takes a workspace as wide as the columns: made so here)."""
    terms = [_sorted_rows(t) for t in terms if t.nnz] or terms[:1]
    result = terms[0]
    for t in terms[1:]:
        result = result + t
    return result


_SMALL = 32  # rows with at most this many entries are expanded together, a block per row length


def _pairs_within(a: Any, n: int) -> Any:
    """Row e: every pair (i, j), i <= j, of entries of row e of `a` (p x n, canonical), as columns
    i * n + j: in order already (i major, j minor), so each pair is written where it belongs, no sort.
    The rows of each length c up to `_SMALL` are one (rows, c) block whose upper-triangle pairs are
    formed at once; longer rows (say, a product over many inputs) take one pass over their pairs."""
    a = _sorted_rows(a)
    p = a.shape[0]
    starts = a.indptr[:-1].astype(np.int64)
    counts = np.diff(a.indptr).astype(np.int64)
    per_row = counts * (counts + 1) // 2
    indptr = _indptr(per_row)
    if indptr[-1] == 0:
        return _sparse().csr_array((p, n * n), dtype=bool)
    out = np.empty(int(indptr[-1]), dtype=np.int64)
    present = np.flatnonzero(np.bincount(np.minimum(counts, _SMALL + 1), minlength=_SMALL + 2)[1 : _SMALL + 1]) + 1
    for c in present.tolist():
        ks, hs = np.triu_indices(c)
        if present.size == 1 and int(counts.min()) == c:  # every row has c entries: one block
            entries = a.indices[a.indptr[0] : a.indptr[-1]].reshape(p, c)
            block = out.reshape(p, ks.size)
            np.multiply(entries[:, ks], n, out=block, dtype=np.int64)
            block += entries[:, hs]
            continue
        rows = np.flatnonzero(counts == c)
        entries = a.indices[starts[rows][:, None] + np.arange(c)].astype(np.int64)
        keys = entries[:, ks]
        keys *= n
        keys += entries[:, hs]
        out[indptr[rows][:, None] + np.arange(ks.size)] = keys
    big = np.flatnonzero(counts > _SMALL)
    if big.size:  # every (k, h) of each long row, the upper ones kept: in row order
        c, square = counts[big], counts[big] ** 2
        within = np.arange(int(square.sum()), dtype=np.int64) - np.repeat(np.cumsum(square) - square, square)
        ks, hs = np.divmod(within, np.repeat(c, square))
        upper = ks <= hs
        base = np.repeat(starts[big], square)
        columns = a.indices[(base + ks)[upper]].astype(np.int64) * n
        out[_segments(indptr[big], per_row[big])] = columns + a.indices[(base + hs)[upper]]
    return _csr(indptr, out, (p, n * n))


def _pairs_across(a: Any, b: Any, n: int) -> Any:
    """Row e: every pair {i, j} with i in row e of `a` and j in row e of `b`, as columns
    min * n + max (i * n + j overflows int32 from n = 46,341: int64)."""
    a, b = _sorted_rows(a), _sorted_rows(b)
    a_counts, b_counts = np.diff(a.indptr).astype(np.int64), np.diff(b.indptr).astype(np.int64)
    per_row = a_counts * b_counts
    total = int(per_row.sum())
    p = a.shape[0]
    if total == 0:
        return _sparse().csr_array((p, n * n), dtype=bool)
    rows = np.repeat(np.arange(p, dtype=np.int64), per_row)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    k, h = np.divmod(within, np.repeat(b_counts, per_row))
    i = a.indices[np.repeat(a.indptr[:-1].astype(np.int64), per_row) + k].astype(np.int64)
    j = b.indices[np.repeat(b.indptr[:-1].astype(np.int64), per_row) + h].astype(np.int64)
    low, high = np.minimum(i, j), np.maximum(i, j)
    return _canonical(rows, low * n + high, (p, n * n))
