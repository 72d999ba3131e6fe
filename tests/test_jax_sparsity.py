"""Global sparsity of JAX functions from their jaxpr: supersets of the nonzeros at random points, exact
where the structure is plain, and a clear error where no global pattern exists."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

from diface.backends.jax._sparsity import jaxpr_sparsity  # noqa: E402

A = np.diag(np.ones(5)) + np.diag(np.ones(4), 1)

JACOBIANS = {
    "tridiagonal residual": (lambda x: x[1:-1] * 2 - x[:-2] - x[2:] + jnp.sin(x[1:-1]), 10, 24),
    "constant sparse matrix": (lambda x: jnp.asarray(A) @ x[:5] + x[5:], 10, 14),
    "cumsum": (lambda x: jnp.cumsum(x) * x, 6, 21),
    "where and max": (lambda x: jnp.where(x > 0, x**2, jnp.exp(x)) + jnp.max(x), 6, 36),
    "concatenate and pad": (lambda x: jnp.pad(jnp.concatenate([x[3:], x[:3]]), 1) * 3.0, 6, 6),
    "outer product": (lambda x: jnp.outer(x[:3], x[3:]).ravel(), 6, 18),
    "sort": (lambda x: jnp.sort(x.reshape(2, 3), axis=1).ravel(), 6, 18),
    "gather": (lambda x: x[jnp.array([0, 0, 4, 2])] * x[1], 5, 8),
    "scatter-add": (lambda x: jnp.zeros(4).at[jnp.array([0, 0, 3])].add(x[:3]), 5, 3),
    "scan": (lambda x: jax.lax.scan(lambda c, xi: (c * 0.5 + xi, c * xi), 0.0, x)[1], 5, 25),
    "while loop": (lambda x: jax.lax.fori_loop(0, 3, lambda i, v: v + jnp.roll(v, 1) * 0.1, x), 6, 36),
    "cond": (lambda x: jax.lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: v[::-1], x), 4, 8),
    "linear solve": (lambda x: jnp.linalg.solve(x[:4].reshape(2, 2) + jnp.eye(2) * 3, x[4:]), 6, 12),
}
HESSIANS = {
    "rosenbrock": (lambda x: jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2), 8, 22),
    "bilinear with a constant": (lambda x: jnp.sum(x[:5] * (jnp.asarray(A) @ x[5:])), 10, 18),
    "quotient": (lambda x: jnp.sum(x[:3] / x[3:]), 6, 9),
    "product": (lambda x: jnp.prod(x[:3]) + jnp.sum(jnp.exp(x[3:])), 6, 12),
}


def _numeric(operator, f, n):
    rng = np.random.default_rng(0)
    seen = None
    for _ in range(3):
        r = np.asarray(operator(f)(jnp.asarray(rng.standard_normal(n)))).reshape(-1, n) != 0
        seen = r if seen is None else seen | r
    return seen


@pytest.mark.parametrize("name", JACOBIANS)
def test_jacobian_patterns_cover_every_nonzero(name):
    f, n, nnz = JACOBIANS[name]
    pattern = jaxpr_sparsity(f, jnp.linspace(-1.0, 1.0, n), (), False).jacobian_pattern().toarray().reshape(-1, n)
    numeric = _numeric(jax.jacfwd, f, n)
    assert not (numeric & ~pattern).any(), "the pattern misses a nonzero"
    assert pattern.sum() == nnz


@pytest.mark.parametrize("name", HESSIANS)
def test_hessian_patterns_cover_every_nonzero(name):
    f, n, nnz = HESSIANS[name]
    pattern = jaxpr_sparsity(f, jnp.linspace(-1.0, 1.0, n), (), True).hessian_pattern().toarray()
    assert not (_numeric(jax.hessian, f, n) & ~pattern).any()
    assert pattern.sum() == nnz


def test_a_branch_on_x_has_no_global_pattern():
    def f(x):
        return x**2 if x[0] > 0 else x**3

    with pytest.raises(di.NotSupportedError, match="DenseSparsityDetector"):
        jaxpr_sparsity(f, jnp.ones(3), (), False)


def test_contexts_are_inputs_whose_zeros_are_not_relied_on():
    f = lambda x, m: m @ x
    pattern = jaxpr_sparsity(f, jnp.ones(3), (jnp.eye(3),), False).jacobian_pattern().toarray()
    assert pattern.all()  # another Constant value may have no zeros
