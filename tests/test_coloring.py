"""Sparsity patterns, greedy colorings (column, row, star, acyclic, bicoloring), their validation, seeds and
decompression plans (`diface._sparse`): every coloring is valid, every plan recovers J (or H) from the
compressed products, and the color counts reach the targets of issue 10."""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest

from diface._sparse import (
    KINDS,
    Coloring,
    ColoringError,
    DecompressionPlan,
    GreedyColoring,
    Pattern,
    as_pattern,
    check_acyclic_coloring,
    check_bicoloring,
    check_column_coloring,
    check_row_coloring,
    check_star_coloring,
    decompress,
)
from diface._sparse.examples import (
    arrowhead,
    banded,
    block_diagonal,
    brusselator_2d,
    laplacian_2d,
    random_pattern,
    tridiagonal,
)

ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree", "dynamic_largest_first", "random")
ALL_ORDERS = GreedyColoring(order=ORDERS)

# --------------------------------------------------------------------------------------------------
# helpers


def random_values(pattern: Pattern, seed: int = 0, symmetric: bool = False) -> np.ndarray:
    """(m, n) dense matrix with random values exactly on the pattern (symmetric: H = H.T)."""
    rng = np.random.default_rng(seed)
    dense = np.zeros(pattern.shape)
    dense[pattern.rows, pattern.cols] = rng.uniform(0.5, 2.0, pattern.nnz) * rng.choice([-1.0, 1.0], pattern.nnz)
    if symmetric:
        dense = np.triu(dense) + np.triu(dense, 1).T
    return dense


def recovers(coloring: Coloring, seed: int = 0) -> None:
    """Compressed products by matrix multiplication, decompressed, compared with the matrix."""
    pattern = coloring.pattern
    symmetric = coloring.kind in ("star", "acyclic")
    J = random_values(pattern, seed, symmetric)
    B = J @ coloring.forward_seed() if coloring.forward else None
    C = coloring.reverse_seed().T @ J if coloring.reverse else None
    plan = coloring.plan()
    data = decompress(plan, B, C)
    assert data.shape == (pattern.nnz,)
    expected = J[pattern.rows, pattern.cols]
    if plan.is_direct:
        np.testing.assert_array_equal(data, expected)
    else:
        np.testing.assert_allclose(data, expected, rtol=0, atol=1e-14)
    if pattern.nnz and plan.is_direct:
        np.testing.assert_array_equal(pattern.to_scipy(data).toarray(), J)


def symmetric_patterns() -> dict[str, Pattern]:
    return {
        "tridiagonal": tridiagonal(40),
        "banded_2": banded(50, 2, 2),
        "block_diagonal": block_diagonal(6, 4),
        "arrowhead": arrowhead(30),
        "laplacian_2d": laplacian_2d(8, 7),
        "laplacian_periodic": laplacian_2d(6, periodic=True),
        "random_sparse": random_pattern(60, 60, 0.05, 3, symmetric=True),
        "random_denser": random_pattern(40, 40, 0.2, 4, symmetric=True),
        "no_diagonal": Pattern.from_dense(np.triu(np.ones((6, 6)), 1) + np.tril(np.ones((6, 6)), -1)),
        "dense": Pattern.from_dense(np.ones((7, 7))),
        "diagonal": Pattern.from_dense(np.eye(9)),
    }


def general_patterns() -> dict[str, Pattern]:
    patterns = dict(symmetric_patterns())
    patterns.update(
        {
            "brusselator": brusselator_2d(6),
            "rectangular_tall": random_pattern(70, 30, 0.08, 5),
            "rectangular_wide": random_pattern(25, 80, 0.06, 6),
            "random_sparse_1": random_pattern(50, 50, 0.02, 7),
            "random_dense": random_pattern(30, 30, 0.4, 8),
            "block_rectangular": block_diagonal(5, 3, 4),
            "upper_band": banded(30, 0, 3),
            "arrowhead_2": arrowhead(40, 2),
        }
    )
    return patterns


GENERAL = general_patterns()
SYMMETRIC = symmetric_patterns()


# --------------------------------------------------------------------------------------------------
# Pattern


def test_pattern_constructors_agree():
    dense = np.array([[1, 0, 2], [0, 0, 0], [3, 4, 0]])
    a = Pattern.from_dense(dense)
    b = Pattern.from_coo([2, 0, 2, 0, 2], [0, 0, 1, 2, 0], (3, 3))  # unsorted, with a repeat
    scipy_sparse = pytest.importorskip("scipy.sparse")
    c = Pattern.from_scipy(scipy_sparse.csc_array(dense))
    d = as_pattern(scipy_sparse.coo_matrix(dense))
    e = as_pattern(dense != 0)
    f = as_pattern((np.array([0, 0, 2, 2]), np.array([0, 2, 0, 1])), shape=(3, 3))
    assert a == b == c == d == e == f
    assert len({a, b, c, d, e, f}) == 1
    assert a.nnz == 4 and a.shape == (3, 3)
    np.testing.assert_array_equal(a.indptr, [0, 2, 2, 4])
    np.testing.assert_array_equal(a.indices, [0, 2, 0, 1])
    np.testing.assert_array_equal(a.rows, [0, 0, 2, 2])
    assert as_pattern(a) is a


def test_pattern_scipy_explicit_zeros_are_left_out():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.csr_array((np.array([1.0, 0.0, 2.0]), np.array([0, 1, 2]), np.array([0, 2, 3])), shape=(2, 3))
    assert m.nnz == 3
    p = Pattern.from_scipy(m)
    assert p.nnz == 2
    np.testing.assert_array_equal(p.to_dense(), [[True, False, False], [False, False, True]])


def test_pattern_transpose_and_symmetry():
    p = random_pattern(7, 5, 0.4, 1)
    t = p.T
    assert t.shape == (5, 7)
    np.testing.assert_array_equal(t.to_dense(), p.to_dense().T)
    # the k-th nonzero of T is nonzero transpose_perm[k] of p
    np.testing.assert_array_equal(t.rows, p.cols[p.transpose_perm])
    np.testing.assert_array_equal(t.cols, p.rows[p.transpose_perm])
    assert t.T is p
    assert not p.is_symmetric()
    assert laplacian_2d(4).is_symmetric()
    assert not Pattern.from_dense(np.triu(np.ones((3, 3)))).is_symmetric()


def test_pattern_to_scipy_and_values():
    pytest.importorskip("scipy.sparse")
    p = random_pattern(6, 4, 0.5, 2)
    J = random_values(p)
    data = p.values_of(J)
    m = p.to_scipy(data)
    assert m.format == "csr" and m.shape == (6, 4)
    np.testing.assert_array_equal(m.toarray(), J)
    np.testing.assert_array_equal(p.to_scipy().toarray(), p.to_dense())
    with pytest.raises(ValueError, match="data must have shape"):
        p.to_scipy(np.ones(p.nnz + 1))


def test_pattern_is_immutable_and_pickles():
    p = tridiagonal(5)
    with pytest.raises(ValueError):
        p.indices[0] = 3
    assert pickle.loads(pickle.dumps(p)) == p
    indices = np.array([0, 1], dtype=np.intp)
    Pattern(np.array([0, 1, 2]), indices, (2, 2))
    indices[0] = 1  # the caller's array is copied, not frozen


@pytest.mark.parametrize(
    "args, message",
    [
        (([0, 1], [0], (2, 2)), "indptr must have shape"),
        (([0, 2, 1], [0, 1], (2, 2)), "never decrease"),
        (([0, 1, 2], [0, 5], (2, 2)), "column indices"),
        (([0, 2, 2], [1, 0], (2, 2)), "increase strictly"),
        (([0, 1], [0.5], (1, 2)), "integers"),
    ],
)
def test_pattern_rejects_bad_csr(args, message):
    with pytest.raises(ValueError, match=message):
        Pattern(*args)


def test_pattern_rejects_bad_inputs():
    with pytest.raises(ValueError, match="2-D"):
        Pattern.from_dense(np.ones(3))
    with pytest.raises(ValueError, match="outside"):
        Pattern.from_coo([0, 3], [0, 0], (3, 3))
    with pytest.raises(ValueError, match="needs its shape"):
        as_pattern(([0], [0]))
    with pytest.raises(ValueError, match="not"):
        as_pattern(np.eye(3), shape=(3, 4))


# --------------------------------------------------------------------------------------------------
# every kind, every pattern: valid, and the plan recovers the matrix


@pytest.mark.parametrize("name", list(GENERAL))
@pytest.mark.parametrize("kind", ["column", "row", "bicolor"])
def test_jacobian_colorings_recover(name, kind):
    pattern = GENERAL[name]
    coloring = GreedyColoring().color(pattern, kind)
    assert coloring.kind == kind
    recovers(coloring, seed=1)
    recovers(coloring, seed=2)


@pytest.mark.parametrize("name", list(SYMMETRIC))
@pytest.mark.parametrize("kind", ["star", "acyclic"])
def test_hessian_colorings_recover(name, kind):
    pattern = SYMMETRIC[name]
    coloring = GreedyColoring().color(pattern, kind)
    recovers(coloring, seed=1)
    recovers(coloring, seed=2)
    if kind == "star":
        assert coloring.plan().is_direct
    # H[i, j] and H[j, i] come from the same entry: the result is exactly symmetric
    H = random_values(pattern, 5, symmetric=True)
    H = H + 1e-9 * np.random.default_rng(0).standard_normal(H.shape) * (H != 0)  # slightly asymmetric
    data = decompress(coloring.plan(), H @ coloring.forward_seed())
    out = pattern.to_scipy(data).toarray()
    np.testing.assert_array_equal(out, out.T)


@pytest.mark.parametrize("order", [*ORDERS, ("random", 7)])
@pytest.mark.parametrize("kind", KINDS)
def test_every_order(order, kind):
    coloring = GreedyColoring(order=order)
    patterns = SYMMETRIC if kind in ("star", "acyclic") else GENERAL
    for name in ("laplacian_2d", "random_sparse", "arrowhead", "block_diagonal"):
        recovers(coloring.color(patterns[name], kind))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("density", [0.01, 0.05, 0.15])
def test_random_patterns(seed, density):
    rng = np.random.default_rng(seed)
    m, n = rng.integers(1, 60, size=2)
    pattern = random_pattern(int(m), int(n), density, seed)
    for kind in ("column", "row", "bicolor"):
        recovers(GreedyColoring(order=("random", seed), iterations=2).color(pattern, kind), seed)
    square = random_pattern(int(n), int(n), density, seed, symmetric=True)
    for kind in ("star", "acyclic"):
        recovers(GreedyColoring(order="natural").color(square, kind), seed)


def test_acyclic_needs_no_more_colors_than_star():
    for name, pattern in SYMMETRIC.items():
        star = GreedyColoring().color(pattern, "star")
        acyclic = GreedyColoring().color(pattern, "acyclic")
        assert acyclic.ncolors <= star.ncolors, name


def test_substitution_plan_steps():
    # a path is one two-colored tree: 2 colors; rooted at its center, half as many steps as edges
    coloring = GreedyColoring(order="natural").color(tridiagonal(9), "acyclic")
    assert coloring.ncolors == 2
    plan = coloring.plan()
    assert plan.kind == "substitution" and not plan.is_direct
    assert len(plan.steps) == 4
    assert plan.steps[0].children.shape[1] == 0
    recovers(coloring)
    # a long path: as many steps as its radius, and still accurate
    coloring = GreedyColoring(order="natural").color(tridiagonal(2001), "acyclic")
    assert coloring.ncolors == 2 and len(coloring.plan().steps) == 1000
    recovers(coloring)
    # star-shaped trees need one step
    coloring = GreedyColoring().color(arrowhead(20), "acyclic")
    assert len(coloring.plan().steps) == 1
    recovers(coloring)


# --------------------------------------------------------------------------------------------------
# color counts


def test_target_tridiagonal():
    assert ALL_ORDERS.color(tridiagonal(5000), "column").ncolors == 3
    assert GreedyColoring().color(tridiagonal(5000), "column").ncolors == 3


def test_target_laplacian_dirichlet():
    assert ALL_ORDERS.color(laplacian_2d(100), "column").ncolors == 5
    assert GreedyColoring().color(laplacian_2d(100), "column").ncolors == 5


def test_target_brusselator():
    pattern = brusselator_2d(32)
    assert pattern.shape == (2048, 2048)
    assert ALL_ORDERS.color(pattern, "column").ncolors <= 10
    assert GreedyColoring().color(pattern, "column").ncolors <= 10


def test_target_star_periodic_laplacian():
    pattern = laplacian_2d(32, periodic=True)
    assert ALL_ORDERS.color(pattern, "star").ncolors <= 6
    assert GreedyColoring().color(pattern, "star").ncolors <= 6


def test_no_more_colors_than_scipy_grouping():
    numdiff = pytest.importorskip("scipy.optimize._numdiff")
    for pattern in (tridiagonal(500), laplacian_2d(30), brusselator_2d(16), random_pattern(200, 150, 0.03, 1)):
        groups = numdiff.group_columns(pattern.to_scipy())
        assert GreedyColoring().color(pattern, "column").ncolors <= groups.max() + 1


@pytest.mark.parametrize("width", [1, 2, 3])
def test_bicoloring_arrowhead(width):
    pattern = arrowhead(200, width)
    column = GreedyColoring().color(pattern, "column")
    row = GreedyColoring().color(pattern, "row")
    both = GreedyColoring().color(pattern, "bicolor")
    assert column.ncolors == row.ncolors == 200
    assert both.ncolors == 2 * width + 1
    assert both.forward and both.reverse
    recovers(both)


def test_bicoloring_never_worse_than_one_sided():
    for name, pattern in GENERAL.items():
        both = GreedyColoring().color(pattern, "bicolor").ncolors
        one = min(GreedyColoring().color(pattern, k).ncolors for k in ("column", "row"))
        assert both <= one, name


def test_special_patterns():
    g = GreedyColoring()
    for kind in KINDS:
        assert g.color(Pattern.from_dense(np.eye(12)), kind).ncolors == 1, kind
    dense = Pattern.from_dense(np.ones((6, 6)))
    assert g.color(dense, "column").ncolors == 6
    assert g.color(dense, "star").ncolors == 6
    assert g.color(Pattern.from_dense(np.ones((4, 9))), "bicolor").ncolors == 4
    # block diagonal: as many colors as the widest block
    assert g.color(block_diagonal(10, 5), "column").ncolors == 5


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0), (4, 6), (6, 6)])
@pytest.mark.parametrize("kind", KINDS)
def test_empty_patterns(shape, kind):
    pattern = Pattern.from_coo([], [], shape)
    if kind in ("star", "acyclic") and shape[0] != shape[1]:
        with pytest.raises(ColoringError, match="symmetric"):
            GreedyColoring().color(pattern, kind)
        return
    coloring = GreedyColoring().color(pattern, kind)
    assert coloring.ncolors == 0
    assert coloring.forward_seed().shape == (shape[1], 0)
    assert coloring.reverse_seed().shape == (shape[0], 0)
    plan = coloring.plan()
    assert plan.nnz == 0
    B = np.zeros((shape[0], 0)) if plan.forward else None
    assert decompress(plan, B).shape == (0,)


def test_empty_columns_are_left_out_of_the_seeds():
    pattern = Pattern.from_coo([0, 0, 1], [0, 2, 2], (3, 4))  # columns 1 and 3 have no nonzero
    coloring = GreedyColoring().color(pattern, "column")
    np.testing.assert_array_equal(coloring.column_colors, [0, -1, 1, -1])
    assert coloring.forward == 2
    np.testing.assert_array_equal(coloring.forward_seed()[[1, 3]], 0)
    recovers(coloring)


# --------------------------------------------------------------------------------------------------
# validation: broken colorings are refused with a clear message


def test_broken_column_coloring():
    pattern = tridiagonal(6)
    good = GreedyColoring().color(pattern, "column").column_colors
    check_column_coloring(pattern, good)
    bad = good.copy()
    bad[1] = bad[0]
    with pytest.raises(ColoringError, match=r"columns 0 and 1 both have color .* row 0"):
        check_column_coloring(pattern, bad)
    with pytest.raises(ValueError):  # ColoringError is a ValueError
        Coloring(pattern, "column", column_colors=bad)
    with pytest.raises(ColoringError, match="not seeded"):
        check_column_coloring(pattern, np.where(np.arange(6) == 2, -1, good))
    with pytest.raises(ColoringError, match="shape"):
        check_column_coloring(pattern, good[:-1])
    with pytest.raises(ColoringError, match="integers"):
        check_column_coloring(pattern, good.astype(float))


def test_broken_row_coloring():
    pattern = random_pattern(20, 10, 0.2, 3)
    good = GreedyColoring().color(pattern, "row").row_colors
    check_row_coloring(pattern, good)
    with pytest.raises(ColoringError, match=r"invalid row coloring: rows \d+ and \d+ both have color 0"):
        check_row_coloring(pattern, np.zeros(20, dtype=int))


def test_broken_star_coloring():
    pattern = tridiagonal(5)
    check_star_coloring(pattern, [0, 1, 2, 0, 1])
    with pytest.raises(ColoringError, match="adjacent vertices 0 and 1"):
        check_star_coloring(pattern, [0, 0, 1, 2, 0])
    # a distance-1 coloring with a two-colored path on four vertices
    with pytest.raises(ColoringError, match=r"path 0 - 1 - 2 - 3 has only colors"):
        check_star_coloring(pattern, [0, 1, 0, 1, 2])
    with pytest.raises(ColoringError, match="symmetric"):
        check_star_coloring(Pattern.from_dense(np.triu(np.ones((3, 3)))), [0, 1, 2])
    with pytest.raises(ColoringError):
        Coloring(pattern, "star", column_colors=[0, 1, 0, 1, 0])


def test_broken_acyclic_coloring():
    cycle = Pattern.from_coo([0, 1, 1, 2, 2, 3, 3, 0], [1, 0, 2, 1, 3, 2, 0, 3], (4, 4))  # a 4-cycle
    with pytest.raises(ColoringError, match=r"colors 0 and 1 form a cycle among vertices 0, 1, 2, 3"):
        check_acyclic_coloring(cycle, [0, 1, 0, 1])
    check_acyclic_coloring(cycle, [0, 1, 0, 2])
    with pytest.raises(ColoringError, match="adjacent"):
        check_acyclic_coloring(cycle, [0, 0, 1, 2])
    pattern = laplacian_2d(6)
    with pytest.raises(ColoringError, match="cycle"):
        Coloring(pattern, "acyclic", column_colors=(np.arange(36) // 6 + np.arange(36) % 6) % 2)


def test_broken_bicoloring():
    pattern = arrowhead(8)
    good = GreedyColoring().color(pattern, "bicolor")
    cc, rc = good.column_colors.copy(), good.row_colors.copy()
    check_bicoloring(pattern, cc, rc)
    with pytest.raises(ColoringError, match=r"J\[0, \d+\] cannot be read"):
        check_bicoloring(pattern, cc, np.full(8, -1))
    with pytest.raises(ColoringError, match="not seeded"):
        check_bicoloring(pattern, np.full(8, -1), rc)
    with pytest.raises(ColoringError, match="-1"):
        check_bicoloring(pattern, cc, np.full(8, -2))


def test_coloring_rejects_wrong_sides_and_kinds():
    pattern = tridiagonal(4)
    with pytest.raises(ValueError, match="needs row_colors"):
        Coloring(pattern, "row")
    with pytest.raises(ValueError, match="has no row_colors"):
        Coloring(pattern, "column", column_colors=[0, 1, 2, 0], row_colors=[0, 1, 2, 0])
    with pytest.raises(ValueError, match="unknown coloring kind"):
        Coloring(pattern, "diagonal", column_colors=[0, 1, 2, 0])
    with pytest.raises(ValueError, match="unknown coloring kind"):
        GreedyColoring().color(pattern, "diagonal")


def test_user_colorings_are_accepted_and_frozen():
    pattern = laplacian_2d(10)
    i, j = np.divmod(np.arange(100), 10)
    coloring = Coloring(pattern, "column", column_colors=(i + 2 * j) % 5)  # the optimal 5-coloring
    assert coloring.ncolors == 5
    recovers(coloring)
    with pytest.raises(ValueError):
        coloring.column_colors[0] = 1
    with pytest.raises(AttributeError):
        _ = Coloring(pattern, "bicolor", column_colors=(i + 2 * j) % 5, row_colors=np.full(100, -1)).colors


# --------------------------------------------------------------------------------------------------
# GreedyColoring settings


def test_greedy_coloring_settings():
    assert repr(GreedyColoring()) == "GreedyColoring()"
    assert repr(GreedyColoring(order="natural")) == "GreedyColoring(order='natural')"
    assert repr(GreedyColoring(order="random", seed=3)) == "GreedyColoring(order='random', seed=3)"
    assert repr(GreedyColoring(order=["natural", ("random", 1)])) == "GreedyColoring(order=('natural', ('random', 1)))"
    assert GreedyColoring(order=["natural", "smallest_last"]) == GreedyColoring(order=("natural", "smallest_last"))
    assert len({GreedyColoring(), GreedyColoring(), GreedyColoring(order="natural")}) == 2
    with pytest.raises(ValueError, match="unknown coloring order 'best'"):
        GreedyColoring(order="best")
    with pytest.raises(ValueError, match="name or"):
        GreedyColoring(order=("random", "x"))
    with pytest.raises(ValueError, match="non-empty"):
        GreedyColoring(order=())
    with pytest.raises(ValueError, match="iterations"):
        GreedyColoring(iterations=-1)
    with pytest.raises(Exception, match="cannot assign"):
        GreedyColoring().order = "natural"  # type: ignore[misc]


def test_random_orders_are_reproducible():
    pattern = random_pattern(80, 80, 0.05, 1)
    a = GreedyColoring(order="random", seed=4).color(pattern, "column").column_colors
    b = GreedyColoring(order=("random", 4)).color(pattern, "column").column_colors
    np.testing.assert_array_equal(a, b)
    c = GreedyColoring(order=("random", 5)).color(pattern, "column").column_colors
    assert not np.array_equal(a, c)


def test_tuple_of_orders_keeps_the_fewest():
    pattern = laplacian_2d(30)
    counts = {o: GreedyColoring(order=o, iterations=0).color(pattern, "column").ncolors for o in ORDERS}
    best = GreedyColoring(order=ORDERS, iterations=0).color(pattern, "column")
    assert best.ncolors == min(counts.values())
    assert counts[best.order.split("(")[0]] == best.ncolors


def test_iterations_never_add_colors():
    for pattern in (brusselator_2d(12), random_pattern(100, 80, 0.05, 2), laplacian_2d(12, periodic=True)):
        for order in ORDERS:
            plain = GreedyColoring(order=order, iterations=0).color(pattern, "column").ncolors
            assert GreedyColoring(order=order).color(pattern, "column").ncolors <= plain


# --------------------------------------------------------------------------------------------------
# seeds and plans


def test_seeds():
    pattern = random_pattern(9, 7, 0.3, 3)
    both = GreedyColoring().color(pattern, "bicolor")
    col = GreedyColoring().color(pattern, "column")
    S = col.forward_seed(dtype=np.float32)
    assert S.dtype == np.float32 and S.shape == (7, col.forward)
    np.testing.assert_array_equal(S.sum(1), 1)  # each column in exactly one color
    np.testing.assert_array_equal(np.argmax(S, 1), col.column_colors)
    row = GreedyColoring().color(pattern, "row")
    assert row.reverse_seed().shape == (9, row.reverse) and row.forward_seed().shape == (7, 0)
    assert both.forward_seed().shape == (7, both.forward)


def test_plan_index_formats():
    pattern = laplacian_2d(5)
    col = GreedyColoring().color(pattern, "column")
    plan = col.plan()
    assert isinstance(plan, DecompressionPlan) and plan.is_direct and plan.kind == "direct"
    assert col.plan() is plan  # built once
    # the flat index reads B[rows, colors[cols]] of B (m, c) flattened row-major
    np.testing.assert_array_equal(plan.index, pattern.rows * col.forward + col.column_colors[pattern.cols])
    assert plan.index.dtype == np.intp
    row = GreedyColoring().color(pattern, "row")
    np.testing.assert_array_equal(row.plan().index, row.row_colors[pattern.rows] * 25 + pattern.cols)


def test_decompress_checks_shapes():
    col = GreedyColoring().color(tridiagonal(5), "column")
    with pytest.raises(ValueError, match="B must have shape"):
        decompress(col.plan(), np.zeros((5, 4)))
    with pytest.raises(ValueError, match="pass B"):
        decompress(col.plan())
    row = GreedyColoring().color(tridiagonal(5), "row")
    with pytest.raises(ValueError, match="pass C"):
        decompress(row.plan(), np.zeros((5, 3)))


class _Minimal:
    """A 1-D/2-D array offering only what `decompress` documents: reshape(-1), integer-array indexing,
    subtraction, sum(1), slicing and reshape(1). (A wrapper, so that nothing else of NumPy is used.)"""

    def __init__(self, a):
        self.a = np.asarray(a)

    shape = property(lambda self: self.a.shape)

    def reshape(self, *shape):
        assert shape in ((-1,), (1,))
        return _Minimal(self.a.reshape(shape))

    def __getitem__(self, idx):
        assert isinstance(idx, slice) or (isinstance(idx, np.ndarray) and idx.dtype.kind == "i")
        return _Minimal(self.a[idx])

    def __sub__(self, other):
        return _Minimal(self.a - other.a)

    def sum(self, *axis):
        assert axis in ((), (1,))
        return _Minimal(self.a.sum(*axis))


def _concat(parts):
    return _Minimal(np.concatenate([p.a for p in parts]))


@pytest.mark.parametrize("kind", KINDS)
def test_decompress_uses_the_minimal_interface(kind):
    pattern = laplacian_2d(6) if kind != "bicolor" else arrowhead(15)
    coloring = GreedyColoring().color(pattern, kind)
    J = random_values(pattern, 3, symmetric=kind in ("star", "acyclic"))
    B = _Minimal(J @ coloring.forward_seed()) if coloring.forward else None
    C = _Minimal(coloring.reverse_seed().T @ J) if coloring.reverse else None
    data = decompress(coloring.plan(), B, C, concat=_concat)
    np.testing.assert_allclose(data.a, J[pattern.rows, pattern.cols], rtol=0, atol=1e-14)


def test_decompress_in_torch():
    torch = pytest.importorskip("torch")
    pattern = laplacian_2d(6)
    for kind in ("column", "acyclic"):
        coloring = GreedyColoring().color(pattern, kind)
        plan = coloring.plan().map(torch.as_tensor)
        J = random_values(pattern, 1, symmetric=True)
        B = torch.as_tensor(J @ coloring.forward_seed())
        data = decompress(plan, B, concat=torch.cat)
        assert isinstance(data, torch.Tensor)
        np.testing.assert_allclose(data.numpy(), J[pattern.rows, pattern.cols], rtol=0, atol=1e-14)


# --------------------------------------------------------------------------------------------------
# speed (generous bounds: the measured times are in benchmarks/bench_coloring.py)


def _best_time(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def test_speed_tridiagonal_and_laplacian():
    tri, lap = tridiagonal(5000), laplacian_2d(100)
    assert _best_time(lambda: GreedyColoring().color(tri, "column")) < 2.0
    assert _best_time(lambda: GreedyColoring().color(lap, "column")) < 2.0


# --------------------------------------------------------------------------------------------------
# the dynamic orders do what they say (against direct definitions, on small graphs)


def _graph_sets(pattern: Pattern) -> tuple:
    from diface._sparse._graph import column_graph

    ptr, idx = column_graph(pattern)
    return [set(idx[ptr[v] : ptr[v + 1]].tolist()) for v in range(ptr.size - 1)], ptr, idx


@pytest.mark.parametrize("seed", range(4))
def test_orders_follow_their_definitions(seed):
    from diface._sparse._orders import ORDERS as FUNCTIONS

    pattern = random_pattern(40, 30, 0.08, seed)
    adj, ptr, idx = _graph_sets(pattern)
    n = len(adj)
    # smallest last: each vertex has the smallest degree among those before it (and itself)
    order = FUNCTIONS["smallest_last"](ptr, idx).tolist()
    for k in range(n):
        alive = set(order[: k + 1])
        degrees = {v: len(adj[v] & alive) for v in alive}
        assert degrees[order[k]] == min(degrees.values())
    # dynamic largest first: each vertex has the most neighbours among those not yet ordered
    order = FUNCTIONS["dynamic_largest_first"](ptr, idx).tolist()
    for k in range(n):
        left = set(order[k:])
        degrees = {v: len(adj[v] & left) for v in left}
        assert degrees[order[k]] == max(degrees.values())
    # incidence degree: each vertex has the most neighbours already ordered
    order = FUNCTIONS["incidence_degree"](ptr, idx).tolist()
    for k in range(n):
        done = set(order[:k])
        counts = {v: len(adj[v] & done) for v in set(order[k:])}
        assert counts[order[k]] == max(counts.values())
    order = FUNCTIONS["largest_first"](ptr, idx).tolist()
    assert [len(adj[v]) for v in order] == sorted((len(a) for a in adj), reverse=True)


@pytest.mark.parametrize("kind", KINDS)
def test_batch_first_plans(kind):
    pattern = laplacian_2d(7) if kind != "bicolor" else arrowhead(20, 2)
    coloring = GreedyColoring().color(pattern, kind)
    J = random_values(pattern, 4, symmetric=kind in ("star", "acyclic"))
    plan = coloring.plan().batch_first()
    assert plan.forward_batch_first and plan.batch_first().index is plan.index
    Bt = (J @ coloring.forward_seed()).T if coloring.forward else None  # (forward, m): one JVP per row
    C = coloring.reverse_seed().T @ J if coloring.reverse else None
    np.testing.assert_allclose(decompress(plan, Bt, C), J[pattern.rows, pattern.cols], rtol=0, atol=1e-14)
    if coloring.forward and coloring.forward != pattern.shape[0]:
        with pytest.raises(ValueError, match="B must have shape"):
            decompress(plan, Bt.T, C)


# --------------------------------------------------------------------------------------------------
# the checks agree with the definitions, on random (mostly invalid) colorings of small patterns


def _two_colored_path_on_four(adj: list[set[int]], c: np.ndarray) -> bool:
    for a in range(len(adj)):
        for b in adj[a]:
            for d in adj[b] - {a}:
                for e in adj[d] - {a, b}:
                    if c[a] == c[d] and c[b] == c[e]:
                        return True
    return False


def _two_colored_cycle(adj: list[set[int]], c: np.ndarray) -> bool:
    for x, y in {(min(c[a], c[b]), max(c[a], c[b])) for a in range(len(adj)) for b in adj[a]}:
        parent = list(range(len(adj)))

        def find(u: int, parent: list[int] = parent) -> int:
            while parent[u] != u:
                u = parent[u]
            return u

        for a in range(len(adj)):
            for b in adj[a]:
                if a < b and {c[a], c[b]} == {x, y}:
                    ra, rb = find(a), find(b)
                    if ra == rb:
                        return True
                    parent[ra] = rb
    return False


def _valid(check, *args) -> bool:
    try:
        check(*args)
    except ColoringError:
        return False
    return True


@pytest.mark.parametrize("seed", range(5))
def test_checks_agree_with_definitions(seed):
    rng = np.random.default_rng(seed)
    seen = set()
    for trial in range(40):
        n = int(rng.integers(2, 10))
        p = random_pattern(n, n, float(rng.uniform(0.15, 0.6)), 100 * seed + trial, symmetric=True)
        adj = [set(p.cols[p.rows == i].tolist()) - {i} for i in range(n)]
        c = rng.integers(0, int(rng.integers(1, n + 1)), n)
        distance1 = all(c[a] != c[b] for a in range(n) for b in adj[a])
        star = distance1 and not _two_colored_path_on_four(adj, c)
        acyclic = distance1 and not _two_colored_cycle(adj, c)
        assert _valid(check_star_coloring, p, c) == star
        assert _valid(check_acyclic_coloring, p, c) == acyclic
        seen.add((star, acyclic))
        if acyclic:  # any valid coloring, however numbered, decompresses
            recovers(Coloring(p, "acyclic", column_colors=c), trial)
        m = int(rng.integers(1, 9))
        q = random_pattern(m, n, float(rng.uniform(0.1, 0.5)), 100 * seed + trial)
        lines = [q.cols[q.rows == i] for i in range(m)]
        assert _valid(check_column_coloring, q, c) == all(len(set(c[j])) == len(j) for j in lines)
        cc, rc = rng.integers(-1, 3, n), rng.integers(-1, 3, m)
        readable = all(
            (cc[j] >= 0 and np.sum(cc[q.cols[q.rows == i]] == cc[j]) == 1)
            or (rc[i] >= 0 and np.sum(rc[q.rows[q.cols == j]] == rc[i]) == 1)
            for i, j in zip(q.rows, q.cols)
        )
        assert _valid(check_bicoloring, q, cc, rc) == readable
        if readable:
            recovers(Coloring(q, "bicolor", column_colors=cc, row_colors=rc), trial)
    assert len(seen) >= 2  # valid and invalid cases both occurred
