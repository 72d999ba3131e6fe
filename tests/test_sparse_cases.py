"""The PDE residuals and energies the sparse machinery is measured on at a million unknowns
(`diface._sparse.example_functions`, run by `benchmarks/bench_sparse_scale.py`), at small sizes on every
tracer (the tape, the jaxpr, the torch graph): the detected pattern is the known one exactly, the colors
are the figures the benchmark reports, and the sparse result equals the dense one, prepared at one point
and called at another, twice."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import diface as di
from diface._sparse import GreedyColoring, Pattern, examples
from diface._sparse import example_functions as ef

pytest.importorskip("scipy")


def _engines() -> list:
    engines = [pytest.param("tape", id="tape")]
    for name in ("jax", "torch"):
        missing = pytest.mark.skipif(not importlib.util.find_spec(name), reason=f"no {name}")
        engines.append(pytest.param(name, id=name, marks=missing))
    return engines


def _setup(engine: str) -> tuple:
    """(array namespace, dense backend, NumPy -> native, native -> NumPy dense)."""
    if engine == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        return jnp, di.AutoJAX(), jnp.asarray, lambda a: np.asarray(a.todense() if hasattr(a, "todense") else a)
    if engine == "torch":
        import torch

        def dense(a):
            return (a.to_dense() if a.layout != torch.strided else a).numpy()

        return torch, di.AutoTorch(), torch.as_tensor, dense
    return np, di.AutoTape(), np.asarray, lambda a: a.toarray() if hasattr(a, "toarray") else np.asarray(a)


def _stencil_pattern(n: int) -> Pattern:
    """Row i: x[i], x[i+1], x[i+2] (the tridiagonal pattern less its first and last rows)."""
    rows = np.repeat(np.arange(n - 2), 3)
    return Pattern.from_coo(rows, rows + np.tile(np.arange(3), n - 2), (n - 2, n))


#: (maker, size argument, the known pattern, the colors: exactly, or at most (a tuple))
JACOBIANS = {
    "stencil": (ef.stencil_1d, 40, _stencil_pattern, 3),
    "laplacian": (ef.laplacian_2d, 9, examples.laplacian_2d, 5),
    "brusselator": (ef.brusselator_2d, 8, examples.brusselator_2d, (10,)),
    "arrowhead": (ef.arrowhead, 30, examples.arrowhead, 3),
}


@pytest.mark.parametrize("engine", _engines())
@pytest.mark.parametrize("case", list(JACOBIANS))
def test_sparse_jacobian_of_each_case(engine, case):
    xp, dense, native, to_dense = _setup(engine)
    maker, size, known, colors = JACOBIANS[case]
    f, n = maker(xp, size)
    inner = di.MixedMode(dense, dense) if case == "arrowhead" else dense  # a bicoloring: 3 products
    prep = di.prepare_jacobian(f, di.AutoSparse(inner), native(np.linspace(0.1, 1.0, n)))
    assert Pattern.from_scipy(prep.sparsity_pattern) == known(size)
    assert prep.ncolors == colors if isinstance(colors, int) else prep.ncolors <= colors[0]
    x = native(np.linspace(-0.7, 0.4, n))
    want = np.asarray(di.jacobian(f, dense, x))
    for _ in range(2):
        np.testing.assert_allclose(to_dense(prep.jacobian(x)), want, rtol=1e-12, atol=1e-12)


def _tv_pattern(m: int) -> Pattern:
    """Each cell couples (i, j), (i+1, j) and (i, j+1) pairwise and each with itself (the last corner is
    in no cell)."""
    idx = np.arange(m * m).reshape(m, m)
    a, b, c = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[:-1, 1:].ravel()
    rows = np.concatenate([a, b, c, a, b, c, a, b, c])
    cols = np.concatenate([a, b, c, b, c, a, c, a, b])
    diagonal = np.unique(np.concatenate([a, b, c]))
    return Pattern.from_coo(np.concatenate([rows, diagonal]), np.concatenate([cols, diagonal]), (m * m, m * m))


@pytest.mark.parametrize("engine", _engines())
def test_sparse_hessian_of_a_total_variation_energy(engine):
    xp, dense, native, to_dense = _setup(engine)
    m = 9
    f, n = ef.total_variation_2d(xp, m)
    prep = di.prepare_hessian(f, di.AutoSparse(dense), native(np.linspace(0.1, 1.0, n) ** 2))
    assert Pattern.from_scipy(prep.sparsity_pattern) == _tv_pattern(m)
    x = native(np.cos(np.arange(n, dtype=float)))
    want = np.asarray(di.hessian(f, dense, x))
    for _ in range(2):
        np.testing.assert_allclose(to_dense(prep.hessian(x)), want, rtol=1e-10, atol=1e-12)


def test_total_variation_colors():
    """The figures the closing note of issue 21 reports: a star coloring of the triangulated-grid pattern
    takes 8 colors (asdex's greedy takes 8 too), an acyclic one 4."""
    pattern = _tv_pattern(30)
    assert GreedyColoring().color(pattern, "star").ncolors <= 8
    assert GreedyColoring().color(pattern, "acyclic").ncolors <= 5
