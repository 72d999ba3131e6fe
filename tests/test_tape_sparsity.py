"""Global sparsity of NumPy code from AutoTape's recording: supersets of the nonzeros at random points,
equal to them (and to the analytic patterns) where the structure is plain, and a clear error where no
global pattern exists. AutoFiniteDiff and AutoAutograd use the same tracer."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import diface as di
from diface.backends.tape.analysis.sparsity import recording_sparsity
from diface.backends.tape.recording.record import record

anp = pytest.importorskip("autograd.numpy")

A = np.diag(np.ones(5)) + np.diag(np.ones(4), 1)  # a constant sparse matrix
IDX = np.array([0, 0, 4, 2])


def laplacian(x):
    u = np.pad(x.reshape(4, 4), 1)
    return (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]).ravel()


def brusselator(x):
    u, v = x[:6], x[6:]
    lap = np.roll(u, 1) + np.roll(u, -1) - 2 * u
    return np.concatenate([1 + u**2 * v - 4.4 * u + lap, 3.4 * u - u**2 * v + np.roll(v, 1) - v])


def with_autograd(x):
    return anp.concatenate([anp.sin(x[1:]) * x[:-1], anp.dot(A, x[:5]), anp.stack([x[0], x[-1]]) ** 2])


def branching(x):
    if x[0] > 0:
        return x * 2
    return x


#: name: (f, n, the pattern's nonzeros); the nonzeros of the exact Jacobian too, but for the names in
#: PIECEWISE (max, a traced condition: one branch at a time) and products of more than two factors (the
#: pattern also pairs each factor with itself)
JACOBIANS = {
    "tridiagonal stencil": (lambda x: x[1:-1] * 2 - x[:-2] - x[2:] + np.sin(x[1:-1]), 10, 24),
    "difference": (lambda x: np.diff(x) ** 2, 6, 10),
    "2-D laplacian": (laplacian, 16, 64),
    "brusselator": (brusselator, 12, 42),
    "elementwise chain": (lambda x: np.tanh(np.exp(np.sqrt(x**2 + 1.0)) * 0.1) - np.abs(x), 5, 5),
    "constant sparse matrix": (lambda x: A @ x[:5] + x[5:], 10, 14),
    "einsum with a constant": (lambda x: np.einsum("ij,j->i", A, x[:5]) * x[5:], 10, 14),
    "mask": (lambda x: x * np.array([1.0, 0.0, 2.0, 0.0]), 4, 2),
    "concatenate, stack, pad, roll": (
        lambda x: np.pad(np.concatenate([np.stack([x[3:], x[:3]]).ravel(), np.roll(x, 2)]), 1) * 3.0,
        6,
        12,
    ),
    "fancy indexing": (lambda x: x[IDX] * x[1], 5, 8),
    "setitem": (lambda x: _setitem(x), 5, 4),
    "add.at": (lambda x: _add_at(x), 5, 3),
    "reductions": (lambda x: np.stack([np.sum(x[:3]), np.prod(x[3:]), np.max(x), np.mean(x[:2])]), 6, 14),
    "cumsum": (lambda x: np.cumsum(x) * x, 6, 21),
    "where with a known condition": (lambda x: np.where(np.arange(4) % 2 == 0, x, x[::-1] ** 2), 4, 4),
    "where with a traced condition": (lambda x: np.where(x > 0, x**2, np.exp(x)) + np.max(x), 6, 36),
    "outer product": (lambda x: np.outer(x[:3], x[3:]).ravel(), 6, 18),
    "matmul of traced matrices": (lambda x: (x[:4].reshape(2, 2) @ x[4:].reshape(2, 2)).ravel(), 8, 16),
    "convolve with a constant": (lambda x: np.convolve(x, [1.0, 0.0, -1.0], mode="same"), 6, 10),
    "solve": (lambda x: np.linalg.solve(x[:4].reshape(2, 2) + np.eye(2) * 3, x[4:]), 6, 12),
    "batched inverse": (lambda x: np.linalg.inv(x.reshape(2, 2, 2) + np.eye(2) * 3).ravel(), 8, 32),
    "autograd.numpy": (with_autograd, 6, 21),
}
HESSIANS = {
    "neighbour products": (lambda x: np.sum(x[:-1] * x[1:]), 6, 10),
    "rosenbrock": (lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2), 8, 22),
    "bilinear with a constant": (lambda x: np.sum(x[:5] * (A @ x[5:])), 10, 18),
    "quadratic form": (lambda x: x[:5] @ A @ x[:5], 5, 13),
    "quotient": (lambda x: np.sum(x[:3] / x[3:]), 6, 9),
    "product": (lambda x: np.prod(x[:3]) + np.sum(np.exp(x[3:])), 6, 12),
    "linear pieces": (lambda x: np.sum(np.abs(x) + np.maximum(x, 0.5) * 3 - x[::-1]), 5, 0),
    "autograd.numpy": (lambda x: anp.sum(anp.sin(x[1:]) * x[:-1]) + anp.dot(x, x), 5, 13),
}


PIECEWISE = {"reductions", "where with a traced condition", "product"}


def _setitem(x):
    y = np.zeros(5, like=x)
    y[1:3] = x[:2] ** 2
    y[IDX[2]] = x[4] * x[3]
    return y


def _add_at(x):
    y = np.zeros(4, like=x)
    np.add.at(y, np.array([0, 0, 3]), x[:3])
    return y


def _traced(f, n, second):
    deps = recording_sparsity(record(f, np.linspace(-1.0, 1.0, n) + 0.1, (), (), None), second)
    return (deps.hessian_pattern() if second else deps.jacobian_pattern()).toarray()


def _numeric(operator, f, n):
    rng = np.random.default_rng(0)
    seen = None
    for _ in range(3):
        r = np.asarray(operator(f, di.AutoTape(), rng.standard_normal(n))).reshape(-1, n) != 0
        seen = r if seen is None else seen | r
    return seen


@pytest.mark.parametrize("name", JACOBIANS)
def test_jacobian_patterns_equal_the_nonzeros(name):
    f, n, nnz = JACOBIANS[name]
    pattern = _traced(f, n, False)
    numeric = _numeric(di.jacobian, f, n)
    assert not (numeric & ~pattern).any(), "the pattern misses a nonzero"
    assert pattern.sum() == nnz
    assert name in PIECEWISE or numeric.sum() == nnz


@pytest.mark.parametrize("name", HESSIANS)
def test_hessian_patterns_equal_the_nonzeros(name):
    f, n, nnz = HESSIANS[name]
    pattern = _traced(f, n, True)
    numeric = _numeric(di.hessian, f, n)
    assert not (numeric & ~pattern).any(), "the pattern misses a nonzero"
    assert pattern.sum() == nnz
    assert name in PIECEWISE or numeric.sum() == nnz


def test_analytic_patterns():
    tridiagonal = _traced(JACOBIANS["tridiagonal stencil"][0], 10, False)
    assert (tridiagonal == sp.diags_array([1.0, 1.0, 1.0], offsets=[0, 1, 2], shape=(8, 10)).toarray()).all()
    products = _traced(HESSIANS["neighbour products"][0], 6, True)
    assert (products == sp.diags_array([1.0, 1.0], offsets=[-1, 1], shape=(6, 6)).toarray()).all()
    assert (_traced(lambda x: A @ x, 5, False) == (A != 0)).all()
    assert (_traced(lambda x: x @ A @ x, 5, True) == ((A + A.T) != 0)).all()


def test_contexts_are_not_relied_on():
    """A Constant's values may change between calls: its zeros do not remove dependencies."""

    def f(x, c, k):
        return c[0] * x[:3] + x[3:] * k

    for c in (np.zeros(3), np.ones(3)):
        contexts = (di.Constant(c), di.Constant(0.0))
        rec = record(f, np.ones(6), contexts, (c, 0.0), None)
        assert recording_sparsity(rec, False).jacobian_pattern().nnz == 6


def test_inplace():
    def f(y, x):
        y[:] = 0.0
        y[1:] = x[:-1] * x[1:]

    b = di.AutoSparse(di.AutoTape())
    x = np.arange(1.0, 5.0)
    prep = di.prepare_jacobian(f, b, x, y=np.zeros(4))
    assert prep.sparsity_pattern.toarray().astype(int).tolist() == [
        [0, 0, 0, 0],
        [1, 1, 0, 0],
        [0, 1, 1, 0],
        [0, 0, 1, 1],
    ]
    dense = di.jacobian(f, di.AutoTape(), x, y=np.zeros(4))
    assert np.allclose(prep.jacobian(x, y=np.zeros(4)).toarray(), dense)


def test_indices_from_x_make_every_position_possible():
    pattern = _traced(lambda x: x[np.argsort(x)][:2] + x[np.argmax(x)], 4, False)
    assert pattern.all()


def test_a_branch_on_x_is_refused_naming_the_line():
    b = di.AutoSparse(di.AutoTape())
    with pytest.raises(di.NotSupportedError, match=r"test_tape_sparsity.py:\d+.*DenseSparsityDetector"):
        di.jacobian(branching, b, np.ones(3))


def test_a_number_taken_from_x_is_refused():
    with pytest.raises(di.NotSupportedError, match="float"):
        _traced(lambda x: x * float(x[0]), 3, False)


def rosenbrock(x):
    return anp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)  # autograd.numpy is NumPy for AutoTape


@pytest.mark.parametrize(
    "dense", [di.AutoTape(), di.AutoFiniteDiff(), di.AutoAutograd()], ids=["tape", "finitediff", "autograd"]
)
def test_autosparse_end_to_end(dense):
    b = di.AutoSparse(dense, sparsity_detector=di.TracerSparsityDetector())
    x = np.linspace(0.5, 1.5, 12)
    f = with_autograd if isinstance(dense, di.AutoAutograd) else brusselator
    jac = di.jacobian(f, b, x)
    assert isinstance(jac, sp.csr_array)
    assert np.allclose(jac.toarray(), di.jacobian(f, di.AutoTape(), x), atol=1e-6)
    hess = di.hessian(rosenbrock, b, x[:8])
    assert isinstance(hess, sp.csr_array) and hess.nnz == 22
    assert np.allclose(hess.toarray(), di.hessian(rosenbrock, di.AutoTape(), x[:8]), rtol=1e-5, atol=1e-3)


def test_what_the_tape_cannot_record_is_refused_clearly():
    def f(x):
        return np.asarray(x) * 2  # the tape traces the conversion; autograd itself cannot differentiate it

    with pytest.raises(di.NotSupportedError, match=r"autograd\.numpy"):
        di.jacobian(f, di.AutoSparse(di.AutoAutograd()), np.ones(3))


def test_autograd_numpy_copying_its_input_is_traced():
    """autograd.numpy's array() copies its input with NumPy's np.array: a copy on the tape, as autograd
    differentiates it (the detection accepts what the engine accepts)."""
    jac = di.jacobian(lambda x: anp.array(x) * 2, di.AutoSparse(di.AutoAutograd()), np.ones(3))
    np.testing.assert_array_equal(jac.toarray(), 2 * np.eye(3))


def test_a_primitive_without_a_rule_is_named():
    from diface.backends.tape.prims.prim import Prim

    class Twice(Prim):
        name = "twice"

        def forward(self, a, out=None):
            return np.multiply(a, 2.0, out=out)

    with pytest.raises(di.NotSupportedError, match=r"twice has no sparsity rule.*KnownSparsity"):
        _traced(lambda x: Twice()(x), 3, False)


def test_hessian_pattern_past_the_int32_range_of_pairs():
    """n = 50,000: n² pair columns overflow int32 (the pairs are int64), and a reduction over the pairs
    gathers rows instead of a product with an n²-wide workspace (7.9 s at n = 20,000 before; out of
    memory near 10⁵)."""
    energy = lambda x: np.sum((x[1:] - x[:-1]) ** 2) + np.sum(x**4)
    n = 50_000
    prep = di.prepare_hessian(energy, di.AutoSparse(di.AutoTape()), np.linspace(0.0, 1.0, n))
    pattern = prep.sparsity_pattern.tocsr()
    assert pattern.nnz == 3 * n - 2 and prep.ncolors == 3
    rows, cols = pattern.nonzero()
    assert np.all(np.abs(rows - cols) <= 1)
