"""Hessian sparsity detection at n ~ 10⁵ (issue 21): the index-set algebra (`diface._sparsity._deps`) keeps
pairs as canonical CSR rows merged by NumPy, so nothing takes memory or time in the n² pair columns.
Before, a value gathered with constants (padding, concatenation) went through a SciPy product whose
workspace is as wide as those columns: 1.6 GB at n = 2·10⁴, some 40 GB at the n = 10⁵ below. The
pieces are checked against brute-force sets at small sizes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import diface as di
from diface._sparse._pattern import Pattern
from diface._sparsity import Deps, Nonlinearity, _deps

N = 100_000


def padded_chain(xp):
    """A 1-D chain energy with zero ends (the padding is a gather with constants): tridiagonal Hessian."""

    def f(x):
        z = xp.zeros(1, dtype=x.dtype)
        u = xp.concatenate([z, x, z])
        return xp.sum((u[1:] - u[:-1]) ** 4) + xp.sum(x**2)

    return f


def tridiagonal(n: int) -> Pattern:
    i = np.arange(n)
    rows = np.concatenate([i, i[1:], i[:-1]])
    cols = np.concatenate([i, i[:-1], i[1:]])
    return Pattern.from_coo(rows, cols, (n, n))


def test_chain_energy_at_a_hundred_thousand_unknowns_on_the_tape():
    backend = di.AutoSparse(di.AutoTape(), coloring=di.GreedyColoring(order="natural"))
    prep = di.prepare_hessian(padded_chain(np), backend, np.linspace(-1.0, 1.0, N))
    assert Pattern.from_scipy(prep.sparsity_pattern) == tridiagonal(N)
    assert prep.ncolors == 3


def test_chain_energy_at_a_hundred_thousand_unknowns_on_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    pattern = di.TracerSparsityDetector().detect(
        di.AutoJAX(), _problem(padded_chain(jnp), jnp.linspace(-1.0, 1.0, N)), 2
    )
    assert pattern == tridiagonal(N)
    assert di.GreedyColoring(order="natural").color(pattern, "star").ncolors == 3


def test_chain_energy_at_a_hundred_thousand_unknowns_on_torch():
    torch = pytest.importorskip("torch")
    x = torch.linspace(-1.0, 1.0, N, dtype=torch.float64)
    pattern = di.TracerSparsityDetector().detect(di.AutoTorch(), _problem(padded_chain(torch), x, "torch"), 2)
    assert pattern == tridiagonal(N)


def _problem(f, x, framework="jax"):
    from diface._arrays._registry import framework_ops
    from diface._problem import Problem

    return Problem(f, x, (), None, framework_ops(framework))


# -- the pieces, against brute force -------------------------------------------------------------------------
def _random_rows(rng, p: int, n: int) -> sp.csr_array:
    dense = rng.random((p, n)) < rng.uniform(0.0, 1.0)
    return sp.csr_array(dense)


def _pairs(m, n: int) -> set:
    """(row, i, j) of every stored key i * n + j of a pair matrix, mirrored."""
    coo = m.tocoo()
    out = set()
    for r, key in zip(coo.row.tolist(), coo.col.tolist()):
        i, j = divmod(key, n)
        assert i <= j, "pairs are kept once, i <= j"
        out |= {(r, i, j), (r, j, i)}
    return out


def _entries(m) -> list[list[int]]:
    m = m.tocsr()
    return [m.indices[m.indptr[r] : m.indptr[r + 1]].tolist() for r in range(m.shape[0])]


def _canonical(m) -> bool:
    rows = _entries(m)
    return all(all(a < b for a, b in itertools.pairwise(row)) for row in rows)


@pytest.mark.parametrize("seed", range(40))
def test_pair_pieces_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(1, 12)), int(rng.integers(0, 9))
    a, b = _random_rows(rng, p, n), _random_rows(rng, p, n)
    rows_a, rows_b = _entries(a), _entries(b)

    within = _deps._pairs_within(a, n)
    assert _canonical(within)
    assert _pairs(within, n) == {(r, i, j) for r in range(p) for i in rows_a[r] for j in rows_a[r]}

    across = _deps._pairs_across(a, b, n)
    assert _canonical(across)
    want = {(r, i, j) for r in range(p) for i in rows_a[r] for j in rows_b[r]}
    assert _pairs(across, n) == want | {(r, j, i) for r, i, j in want}

    if p:
        index = rng.integers(-1, p, size=int(rng.integers(0, 12)))
        taken = _deps._take_rows(a, index)
        assert _entries(taken) == [rows_a[k] if k >= 0 else [] for k in index.tolist()]

    q = int(rng.integers(1, 5))
    members = _random_rows(rng, q, p)
    union = _deps._union_of_rows(members, within)
    assert _canonical(union)
    member_rows = _entries(members)
    assert _pairs(union, n) == {
        (e, i, j) for e in range(q) for r in member_rows[e] for (s, i, j) in _pairs(within, n) if s == r
    }


def test_long_rows_and_wide_keys():
    """Rows longer than the blocked lengths take the pass over all pairs; row-major keys that overflow
    int64 take a lexicographic sort."""
    n = 50
    a = sp.csr_array(np.ones((2, n), dtype=bool))
    a[1, :7] = False
    a.eliminate_zeros()
    within = _deps._pairs_within(a.tocsr(), n)
    assert _canonical(within)
    assert _pairs(within, n) == {(r, i, j) for r in range(2) for i in range(7 * r, n) for j in range(7 * r, n)}

    rows, keys = np.array([2, 0, 2, 0, 1]), np.array([5, 2**61, 5, 3, 0])
    wide = _deps._canonical(rows, keys, (3, 2**62))
    assert _entries(wide) == [[3, 2**61], [0], [5]]


def test_rows_out_of_order_are_sorted_first():
    """An engine's matrix whose rows are not sorted (or repeat an entry) is made canonical before the
    pieces that rely on it."""
    n = 6
    a = sp.csr_array((np.ones(4, dtype=bool), np.array([4, 1, 1, 0]), np.array([0, 3, 4])), shape=(2, n))
    within = _deps._pairs_within(a, n)
    assert _canonical(within)
    assert _pairs(within, n) == {(0, i, j) for i in (1, 4) for j in (1, 4)} | {(1, 0, 0)}
    both = _deps._union([within, _deps._pairs_across(a, a, n)])
    assert _canonical(both) and _pairs(both, n) == _pairs(within, n)


def test_a_product_of_many_inputs_and_a_vector_value():
    """`prod` of a group pairs all its members (one long row); a vector value's Hessian pattern is that of
    the sum of its elements."""
    n = 40
    x = Deps.input((n,), second=True)
    whole = x.gather(np.arange(36)).reduce(np.zeros(36, dtype=np.int64), (), Nonlinearity.BILINEAR)
    pattern = whole.hessian_pattern().toarray()
    want = np.zeros((n, n), dtype=bool)
    want[:36, :36] = True  # the diagonal too, as before (a product's group is taken as nonlinear in each)
    assert (pattern == want).all()

    squares = Deps.elementwise((n,), [x], Nonlinearity.NONLINEAR)
    assert (squares.hessian_pattern().toarray() == np.eye(n, dtype=bool)).all()
    padded = squares.gather(np.array([-1, 3, -1, 3, 5]))
    assert sorted(zip(*padded.hessian_pattern().nonzero())) == [(3, 3), (5, 5)]
