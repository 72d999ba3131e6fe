"""The compiled coloring kernels (`diface._sparse._compiled`) give exactly the colors and orders of the pure
Python functions they replace on large graphs: checked on small graphs of every shape the colorings see,
run as plain Python (always, so CI covers the kernels' logic without numba) and compiled with numba
(where it can be imported); and the pure path is what runs when the kernels are switched off."""

from __future__ import annotations

import numpy as np
import pytest

from diface._sparse import GreedyColoring, _acyclic, _compiled, _distance1, _orders, _star
from diface._sparse._graph import adjacency_graph, column_graph
from diface._sparse.examples import (
    arrowhead,
    banded,
    brusselator_2d,
    laplacian_2d,
    random_pattern,
    total_variation_2d,
    tridiagonal,
)

try:
    import numba  # noqa: F401

    HAS_NUMBA = True
except ImportError:  # CI: the kernels run as plain Python only
    HAS_NUMBA = False
ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree", "dynamic_largest_first", "random")
KERNELS = (
    "smallest_last",
    "dynamic_largest_first",
    "incidence_degree",
    "greedy_distance1",
    "greedy_star",
    "greedy_acyclic",
    "column_graph",
)


JACOBIANS = {
    "tridiagonal": tridiagonal(60),
    "banded": banded(50, 2, 3),
    "laplacian": laplacian_2d(9),
    "brusselator": brusselator_2d(5),
    "arrowhead": arrowhead(40, 2),
    "random": random_pattern(70, 50, 0.06, 1),
}
HESSIANS = {
    "tv": total_variation_2d(9),
    "laplacian": laplacian_2d(8, periodic=True),
    "arrowhead": arrowhead(30, 3),
    "random": random_pattern(60, 60, 0.08, 2, symmetric=True),
}
GRAPHS = {f"columns of {k}": column_graph(p) for k, p in JACOBIANS.items()}
GRAPHS.update({f"adjacency of {k}": adjacency_graph(p) for k, p in HESSIANS.items()})


@pytest.fixture
def pure(monkeypatch):
    monkeypatch.setattr(_compiled, "ENABLED", False)


@pytest.fixture(params=["python", "numba"])
def kernels(request, monkeypatch):
    """The kernels used for every graph: as plain Python, or compiled (skipped without numba)."""
    if request.param == "numba" and not HAS_NUMBA:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(_compiled, "MIN_SIZE", 0)
    if request.param == "python":
        monkeypatch.setattr(_compiled, "_jitted", {name: getattr(_compiled, name) for name in KERNELS})
    return request.param


def reference(name: str, ptr: np.ndarray, idx: np.ndarray) -> dict:
    """Every order of the graph and every greedy coloring in every order, by the pure functions."""
    previous = _compiled.ENABLED
    _compiled.ENABLED = False
    try:
        out = {}
        for order in ORDERS:
            visit = _orders.compute_order(order, ptr, idx, 3)
            out[order] = visit
            out[order, "distance1"] = _distance1.greedy_distance1(ptr, idx, visit)
            if name.startswith("adjacency"):
                out[order, "star"] = _star.greedy_star(ptr, idx, visit)
                out[order, "acyclic"] = _acyclic.greedy_acyclic(ptr, idx, visit)
        return out
    finally:
        _compiled.ENABLED = previous


@pytest.mark.parametrize("name", list(GRAPHS))
def test_kernels_equal_the_pure_functions(name, kernels):
    ptr, idx = GRAPHS[name]
    expected = reference(name, ptr, idx)
    for order in ORDERS:
        visit = _orders.compute_order(order, ptr, idx, 3)
        np.testing.assert_array_equal(visit, expected[order], err_msg=f"order {order}")
        np.testing.assert_array_equal(_distance1.greedy_distance1(ptr, idx, visit), expected[order, "distance1"])
        if name.startswith("adjacency"):
            np.testing.assert_array_equal(_star.greedy_star(ptr, idx, visit), expected[order, "star"])
            np.testing.assert_array_equal(_acyclic.greedy_acyclic(ptr, idx, visit), expected[order, "acyclic"])


@pytest.mark.parametrize("kind", ["column", "row", "bicolor", "star", "acyclic"])
def test_colorings_equal_with_and_without_kernels(kind, kernels, monkeypatch):
    patterns = HESSIANS if kind in ("star", "acyclic") else JACOBIANS
    setting = GreedyColoring(order=ORDERS)
    for name, pattern in patterns.items():
        fast = setting.color(pattern, kind)
        monkeypatch.setattr(_compiled, "ENABLED", False)
        slow = setting.color(pattern, kind)
        monkeypatch.setattr(_compiled, "ENABLED", True)
        for side in ("column_colors", "row_colors"):
            a, b = getattr(fast, side), getattr(slow, side)
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b, err_msg=f"{name} {side}")
        assert fast.order == slow.order


@pytest.mark.parametrize("name", list(JACOBIANS))
def test_column_graph_kernel_equals_numpy(name, kernels, monkeypatch):
    pattern = JACOBIANS[name]
    for target in (pattern, pattern.T):
        ptr, idx = column_graph(target)
        monkeypatch.setattr(_compiled, "ENABLED", False)
        expected = column_graph(target)
        monkeypatch.setattr(_compiled, "ENABLED", True)
        np.testing.assert_array_equal(ptr, expected[0])
        np.testing.assert_array_equal(idx, expected[1])


def test_kernels_off_run_the_pure_functions(pure, monkeypatch):
    monkeypatch.setattr(_compiled, "MIN_SIZE", 0)
    assert all(_compiled.kernel(name, 10**9) is None for name in KERNELS)


def test_small_graphs_run_the_pure_functions(monkeypatch):
    monkeypatch.setattr(_compiled, "ENABLED", True)
    assert _compiled.kernel("greedy_distance1", _compiled.MIN_SIZE - 1) is None


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
def test_kernels_compile_where_numba_is_installed(monkeypatch):
    monkeypatch.setattr(_compiled, "ENABLED", True)
    fast = _compiled.kernel("greedy_distance1", _compiled.MIN_SIZE)
    assert fast is not None and fast is not _compiled.greedy_distance1


def test_targets_at_kernel_sizes():
    """Large enough for the kernels (where numba is installed; the pure path otherwise): the small-n
    color counts."""
    assert GreedyColoring().color(tridiagonal(80_000), "column").ncolors == 3
    assert GreedyColoring().color(laplacian_2d(200), "column").ncolors == 5
    assert GreedyColoring().color(arrowhead(80_000, 1), "bicolor").ncolors == 3


@pytest.mark.parametrize("name", list(HESSIANS))
def test_mirror_and_reverse_positions(name):
    """The position of (j, i) for each (i, j), in the pattern and in its adjacency graph."""
    from diface._sparse._graph import reverse_positions

    pattern = HESSIANS[name]
    mirror = pattern.mirror_positions()
    np.testing.assert_array_equal(pattern.rows[mirror], pattern.cols)
    np.testing.assert_array_equal(pattern.cols[mirror], pattern.rows)
    ptr, idx = adjacency_graph(pattern)
    reverse = reverse_positions(ptr, idx)
    src = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    np.testing.assert_array_equal(src[reverse], idx)
    np.testing.assert_array_equal(idx[reverse], src)
