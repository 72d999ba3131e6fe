"""AutoSparse(AutoTorch()): global patterns from f's ATen graph (supersets of the nonzeros at random
points, exact where the structure is plain), sparse CSR results on the input's device, out= buffers."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di

torch = pytest.importorskip("torch")

from diface.backends.torch._sparsity import graph_sparsity  # noqa: E402

A = torch.eye(5, dtype=torch.float64) + torch.diag(torch.ones(4, dtype=torch.float64), 1)
F = torch.nn.functional


def _laplacian(x):
    u = x.reshape(4, 4)
    inner = 4 * u[1:-1, 1:-1] - u[:-2, 1:-1] - u[2:, 1:-1] - u[1:-1, :-2] - u[1:-1, 2:]
    return inner.reshape(-1)


def _brusselator(x):
    u, v = x[:6], x[6:]
    lap = lambda w: torch.roll(w, 1) + torch.roll(w, -1) - 2 * w
    return torch.cat([1 + u**2 * v - 4.4 * u + lap(u), 3.4 * u - u**2 * v + lap(v)])


JACOBIANS = {
    "tridiagonal stencil": (lambda x: x[1:-1] * 2 - x[:-2] - x[2:] + torch.sin(x[1:-1]), 10, 24),
    "2-D Laplacian by slicing": (_laplacian, 16, 20),
    "brusselator": (_brusselator, 12, 48),
    "constant sparse matrix": (lambda x: A @ x[:5] + x[5:], 10, 14),
    "cat, pad and roll": (lambda x: torch.cat([torch.roll(x, 2), F.pad(x[:3], (1, 1)) * 3.0]), 6, 9),
    "flip, stack and transpose": (lambda x: torch.stack([x, torch.flip(x, [0])]).T.reshape(-1), 4, 8),
    "cumsum": (lambda x: torch.cumsum(x, 0) * x, 6, 21),
    "reductions": (lambda x: torch.stack([x.sum(), x[:2].mean(), x[2:].amax(), x.prod()]), 5, 15),
    "constant gather and where": (lambda x: torch.where(x[[0, 0, 4]] > 0, x[[1, 2, 3]], 2.0 * x[1]), 5, 5),
    "index_select and tril": (lambda x: torch.tril(x.reshape(3, 3)).index_select(0, torch.tensor([2, 0])), 9, 4),
    "outer product": (lambda x: torch.outer(x[:3], x[3:]).reshape(-1), 6, 18),
    "matmul of two traced": (lambda x: (x[:4].reshape(2, 2) @ x[4:].reshape(2, 2)).reshape(-1), 8, 16),
    "softmax rows": (lambda x: torch.softmax(x.reshape(2, 3), dim=1).reshape(-1), 6, 18),
    "linear solve is dense": (lambda x: torch.linalg.solve(x[:4].reshape(2, 2) + 3 * torch.eye(2), x[4:]), 6, 12),
}
HESSIANS = {
    "rosenbrock": (lambda x: torch.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2), 8, 22),
    "bilinear with a constant": (lambda x: torch.sum(x[:5] * (A @ x[5:])), 10, 18),
    "quotient": (lambda x: torch.sum(x[:3] / x[3:]), 6, 9),
    "product and exp": (lambda x: torch.prod(x[:3]) + torch.sum(torch.exp(x[3:])), 6, 12),
    "dot of shifted": (lambda x: torch.dot(x[1:], x[:-1]), 5, 8),
}


def _numeric(make, f, n):
    seen = None
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        x = torch.randn(n, dtype=torch.float64, generator=gen)
        r = (make(f)(x).reshape(-1, n) != 0).numpy()
        seen = r if seen is None else seen | r
    return seen


def _pattern(f, n, second, y=None, contexts=()):
    deps = graph_sparsity(f, torch.linspace(-1.0, 1.0, n, dtype=torch.float64), contexts, y, second)
    pattern = deps.hessian_pattern() if second else deps.jacobian_pattern()
    return pattern.toarray().reshape(-1, n)


@pytest.mark.parametrize("name", JACOBIANS)
def test_jacobian_patterns_cover_every_nonzero(name):
    f, n, nnz = JACOBIANS[name]
    pattern = _pattern(f, n, False)
    assert not (_numeric(torch.func.jacfwd, f, n) & ~pattern).any(), "the pattern misses a nonzero"
    assert pattern.sum() == nnz


@pytest.mark.parametrize("name", HESSIANS)
def test_hessian_patterns_cover_every_nonzero(name):
    f, n, nnz = HESSIANS[name]
    pattern = _pattern(f, n, True)
    assert not (_numeric(torch.func.hessian, f, n) & ~pattern).any()
    assert pattern.sum() == nnz


def test_the_tridiagonal_pattern_is_exact():
    expected = np.zeros((8, 10), dtype=bool)
    for i in range(8):
        expected[i, i : i + 3] = True
    assert (_pattern(JACOBIANS["tridiagonal stencil"][0], 10, False) == expected).all()


def test_an_in_place_function_writes_its_pattern_into_y():
    def f(y, x):
        y[0] = x[0] ** 2
        y[1:] = x[1:] * x[:-1]
        y.mul_(2)

    pattern = _pattern(f, 4, False, y=torch.zeros(4, dtype=torch.float64))
    assert (pattern == np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]], dtype=bool)).all()


def test_constant_contexts_are_inputs_whose_values_are_not_relied_on():
    pattern = _pattern(lambda x, m: m @ x, 3, False, contexts=(torch.eye(3, dtype=torch.float64),))
    assert pattern.all()  # another Constant value may have no zeros


def test_a_branch_on_x_has_no_global_pattern():
    def f(x):
        return x**2 if x[0] > 0 else x**3

    with pytest.raises(di.NotSupportedError, match="DenseSparsityDetector"):
        graph_sparsity(f, torch.ones(3), (), None, False)


def test_a_python_number_from_x_has_no_global_pattern():
    with pytest.raises(di.NotSupportedError, match=r"Python number.*KnownSparsity"):
        graph_sparsity(lambda x: x * x.sum().item(), torch.ones(3), (), None, False)


def test_an_uncovered_op_is_named():
    f = lambda x: F.conv1d(x.reshape(1, 1, -1), torch.ones(1, 1, 3)).reshape(-1)
    with pytest.raises(di.NotSupportedError, match=r"convolution.*DenseSparsityDetector"):
        graph_sparsity(f, torch.ones(5), (), None, False)


# -- end to end ---------------------------------------------------------------------------------------------
SPARSE = di.AutoSparse(di.AutoTorch())


def _stencil(x):
    return x[1:-1] * 2 - x[:-2] - x[2:] + torch.sin(x[1:-1]) * x[2:]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_sparse_jacobian_on_tensors_equals_dense(dtype):
    x = torch.linspace(-1.0, 1.0, 12, dtype=dtype)
    prep = di.prepare_jacobian(_stencil, SPARSE, x)
    assert prep.ncolors == 3
    for point in (x, x * 2):  # prepared calls made twice
        J = prep.jacobian(point)
        assert J.layout == torch.sparse_csr and J.dtype == dtype and J.device == x.device
        dense = torch.autograd.functional.jacobian(_stencil, point)
        torch.testing.assert_close(J.to_dense(), dense)


def test_sparse_hessian_on_tensors_equals_dense():
    f = HESSIANS["rosenbrock"][0]
    x = torch.linspace(-1.0, 1.0, 8, dtype=torch.float64)
    prep = di.prepare_hessian(f, SPARSE, x)
    H = prep.hessian(x)
    assert H.layout == torch.sparse_csr and H._nnz() == 22
    torch.testing.assert_close(H.to_dense(), torch.autograd.functional.hessian(f, x))
    value, _, H2 = prep.value_gradient_and_hessian(x)
    torch.testing.assert_close(H2.to_dense(), H.to_dense())
    torch.testing.assert_close(value, f(x))


def test_value_and_jacobian_and_out():
    x = torch.linspace(-1.0, 1.0, 10, dtype=torch.float64)
    prep = di.prepare_jacobian(_stencil, SPARSE, x)
    value, J = prep.value_and_jacobian(x)
    torch.testing.assert_close(value, _stencil(x))
    out = prep.jacobian(x)
    returned = prep.jacobian(x * 3, out=out)
    assert returned is out
    torch.testing.assert_close(out.to_dense(), torch.autograd.functional.jacobian(_stencil, x * 3))
    _, again = prep.value_and_jacobian(x, out=out)  # the value is returned, the Jacobian written
    assert again is out
    torch.testing.assert_close(again.to_dense(), J.to_dense())


@pytest.mark.parametrize(
    "wrong",
    [
        lambda J: J.to_dense(),
        lambda J: torch.eye(10, dtype=torch.float64)[:8].to_sparse_csr(),
        lambda J: J.to(torch.float32),
    ],
    ids=["dense", "another pattern", "another dtype"],
)
def test_a_wrong_out_is_refused(wrong):
    x = torch.linspace(-1.0, 1.0, 10, dtype=torch.float64)
    prep = di.prepare_jacobian(_stencil, SPARSE, x)
    with pytest.raises(di.DifaceError, match="out="):
        prep.jacobian(x, out=wrong(prep.jacobian(x)))


def test_in_place_function_end_to_end():
    def f(y, x):
        y[:] = x[1:] ** 2 - x[:-1]

    x = torch.linspace(0.0, 1.0, 7, dtype=torch.float64)
    y = torch.zeros(6, dtype=torch.float64)
    J = di.jacobian(f, SPARSE, x, y=y)
    assert J.layout == torch.sparse_csr and J._nnz() == 12
    torch.testing.assert_close(J.to_dense(), torch.autograd.functional.jacobian(lambda v: v[1:] ** 2 - v[:-1], x))


def test_constant_context_end_to_end():
    m = torch.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], dtype=torch.float64)
    x = torch.ones(3, dtype=torch.float64)
    J = di.jacobian(lambda x, m: m @ torch.sin(x), SPARSE, x, di.Constant(m))
    assert J._nnz() == 6  # a Constant's zeros are not relied on
    torch.testing.assert_close(J.to_dense(), m * torch.cos(x))


def test_numpy_input_gives_a_scipy_csr_array():
    J = di.jacobian(_stencil, SPARSE, np.linspace(-1.0, 1.0, 10))
    assert type(J).__name__ == "csr_array" and J.nnz == 24


def test_a_branch_suggests_the_other_detectors_end_to_end():
    f = lambda x: x**2 if x[0] > 0 else x**3
    with pytest.raises(di.NotSupportedError, match="KnownSparsity"):
        di.jacobian(f, SPARSE, torch.ones(3))
    dense = di.AutoSparse(di.AutoTorch(), sparsity_detector=di.DenseSparsityDetector(di.AutoTorch()))
    assert di.jacobian(f, dense, torch.ones(3)).layout == torch.sparse_csr


def test_a_cache_f_writes_into_is_scratch():
    def f(x, scratch):
        scratch[:] = x**2
        return scratch[1:] - scratch[:-1]

    x = torch.linspace(0.0, 1.0, 5, dtype=torch.float64)
    J = di.jacobian(f, SPARSE, x, di.Cache(torch.zeros(5, dtype=torch.float64)))
    assert J._nnz() == 8
    torch.testing.assert_close(J.to_dense(), torch.autograd.functional.jacobian(lambda v: v[1:] ** 2 - v[:-1] ** 2, x))


def test_results_share_index_tensors_made_once():
    x = torch.linspace(-1.0, 1.0, 10, dtype=torch.float64)
    prep = di.prepare_jacobian(_stencil, SPARSE, x)
    first, second = prep.jacobian(x), prep.jacobian(x)
    assert first.crow_indices().data_ptr() == second.crow_indices().data_ptr()
    assert first.values().data_ptr() != second.values().data_ptr()


def test_an_out_of_another_shape_is_a_shape_error():
    x = torch.linspace(-1.0, 1.0, 10, dtype=torch.float64)
    prep = di.prepare_jacobian(_stencil, SPARSE, x)
    with pytest.raises(di.ShapeError, match="shape"):
        prep.jacobian(x, out=torch.eye(10, dtype=torch.float64).to_sparse_csr())
