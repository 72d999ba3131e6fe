"""AutoSparse: sparse Jacobians and Hessians equal the dense ones, on every engine that can run them."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import diface as di
from diface._sparse.examples import arrowhead

pytest.importorskip("scipy")
import scipy.sparse as sp

HAS_JAX = importlib.util.find_spec("jax") is not None


def residual(xp, x):
    """A 1-D reaction-diffusion residual: tridiagonal Jacobian."""
    inner = x[:-2] - 2 * x[1:-1] + x[2:] + xp.sin(x[1:-1]) * x[1:-1]
    return xp.concatenate([x[:1] ** 2, inner, x[-1:] * 3.0])


def couplings(xp, x):
    """A sum of neighbour couplings: tridiagonal Hessian."""
    return xp.sum(xp.cos(x[1:] - x[:-1])) + xp.sum(x**4) / 4


def arrow(xp, x):
    """A dense first row, a dense first column, a diagonal."""
    return xp.concatenate([xp.sum(x**2, keepdims=True), x[0] * x[1:] + xp.exp(x[1:])])


def _known(xp_f, n):
    x = np.linspace(0.1, 0.9, n)
    return sp.csr_array(np.abs(di.jacobian(lambda x: xp_f(np, x), di.AutoFiniteDiff(), x)) > 1e-9)


def _engines():
    engines = [("finitediff", di.AutoFiniteDiff(), np)]
    if HAS_JAX:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        engines.append(("jax", di.AutoJAX(), jnp))
    return engines


@pytest.mark.parametrize(("name", "dense", "xp"), _engines(), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("fn", [residual, arrow], ids=["tridiagonal", "arrowhead"])
def test_sparse_jacobian_equals_the_dense_one(name, dense, xp, fn):
    n = 12
    f = lambda x: fn(xp, x)
    detector = di.KnownSparsity(_known(fn, n)) if name == "finitediff" else di.TracerSparsityDetector()
    b = di.AutoSparse(dense, sparsity_detector=detector)
    prep = di.prepare_jacobian(f, b, np.linspace(-0.5, 0.5, n))
    x = np.linspace(0.2, 1.3, n)
    want = di.jacobian(f, dense, x)
    for _ in range(2):
        J = prep.jacobian(x)
        assert isinstance(J, sp.csr_array) and J.shape == (n, n)
        np.testing.assert_allclose(J.toarray(), want, rtol=1e-6, atol=1e-8)
    y, J2 = prep.value_and_jacobian(x, out=J)
    assert J2 is J and np.allclose(y, np.asarray(f(x)))
    np.testing.assert_allclose(J.toarray(), want, rtol=1e-6, atol=1e-8)
    assert prep.sparsity_pattern.shape == (n, n)
    assert prep.ncolors == (3 if fn is residual else n)  # an arrowhead needs every column one-sided
    np.testing.assert_allclose(di.jacobian(f, b, x).toarray(), want, rtol=1e-6, atol=1e-8)


def test_mixed_mode_colors_an_arrowhead_with_three_products():
    pytest.importorskip("jax")
    import jax.numpy as jnp

    n = 40
    f = lambda x: arrow(jnp, x)
    b = di.AutoSparse(di.MixedMode(di.AutoJAX(), di.AutoJAX()))
    prep = di.prepare_jacobian(f, b, np.zeros(n))
    assert prep.ncolors == 3
    x = np.linspace(0.1, 1.0, n)
    np.testing.assert_allclose(prep.jacobian(x).toarray(), di.jacobian(f, di.AutoJAX(), x), rtol=1e-12)
    one_sided = di.prepare_jacobian(f, di.AutoSparse(di.AutoJAX()), np.zeros(n))
    assert one_sided.ncolors == n


def test_sparse_hessian_equals_the_dense_one():
    pytest.importorskip("jax")
    import jax.numpy as jnp

    n = 30
    f = lambda x: couplings(jnp, x)
    b = di.AutoSparse(di.AutoJAX())
    prep = di.prepare_hessian(f, b, np.zeros(n))
    assert prep.ncolors == 3
    x = np.linspace(-1.0, 1.0, n)
    want = di.hessian(f, di.AutoJAX(), x)
    for _ in range(2):
        np.testing.assert_allclose(prep.hessian(x).toarray(), want, rtol=1e-12, atol=1e-12)
    y, g, H = prep.value_gradient_and_hessian(x)
    np.testing.assert_allclose(g, di.gradient(f, di.AutoJAX(), x), rtol=1e-12)
    assert np.isclose(y, float(f(x))) and H.nnz == prep.sparsity_pattern.nnz


@pytest.mark.parametrize("scale", [None, 2.0, "double"], ids=["no-context", "array-context", "static-context"])
def test_jax_sparse_plain_and_full_variants_on_jax_arrays(scale):
    """The plain calls run the products' program alone, the full variants add f's (and its gradient's):
    both right at a point other than the preparation's, twice; a static context keeps one program."""
    pytest.importorskip("jax")
    import jax
    import jax.numpy as jnp

    def factor(c):
        return 2.0 if c == "double" else c

    f = lambda x, c=1.0: factor(c) * residual(jnp, x)
    g = lambda x, c=1.0: factor(c) * couplings(jnp, x)
    contexts = () if scale is None else (di.Constant(scale),)
    c = 1.0 if scale is None else factor(scale)
    b = di.AutoSparse(di.AutoJAX())
    n = 12
    x = jnp.linspace(-0.7, 1.2, n)
    jac = di.prepare_jacobian(f, b, jnp.zeros(n), *contexts)
    hes = di.prepare_hessian(g, b, jnp.zeros(n), *contexts)
    want_j, want_h = jax.jacfwd(f)(x, c), jax.hessian(g)(x, c)
    for _ in range(2):
        np.testing.assert_allclose(jac.jacobian(x, *contexts).todense(), want_j, rtol=1e-12, atol=1e-12)
        y, J = jac.value_and_jacobian(x, *contexts)
        np.testing.assert_allclose(y, f(x, c), rtol=1e-12)
        np.testing.assert_allclose(J.todense(), want_j, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hes.hessian(x, *contexts).todense(), want_h, rtol=1e-12, atol=1e-12)
        v, grad, H = hes.value_gradient_and_hessian(x, *contexts)
        np.testing.assert_allclose(v, g(x, c), rtol=1e-12)
        np.testing.assert_allclose(grad, jax.grad(g)(x, c), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(H.todense(), want_h, rtol=1e-12, atol=1e-12)


def test_detectors_and_their_errors():
    f = lambda x: x[1:] - x[:-1]
    with pytest.raises(di.ShapeError, match=r"the pattern has shape \(3, 3\)"):
        di.jacobian(f, di.AutoSparse(di.AutoFiniteDiff(), sparsity_detector=di.KnownSparsity(np.eye(3))), np.ones(4))
    with pytest.raises(di.ArgumentError, match="sparsity_detector must be"):
        di.AutoSparse(di.AutoFiniteDiff(), sparsity_detector="tracer")
    with pytest.raises(di.ArgumentError, match="coloring must be"):
        di.AutoSparse(di.AutoFiniteDiff(), coloring="greedy")
    with pytest.raises(di.ArgumentError, match="dense must be a diface backend"):
        di.AutoSparse("jax")
    local = di.AutoSparse(di.AutoFiniteDiff(), sparsity_detector=di.DenseSparsityDetector(di.AutoFiniteDiff(), 1e-9))
    prep = di.prepare_jacobian(f, local, np.arange(4.0))
    assert prep.sparsity_pattern.nnz == 6 and prep.ncolors == 2
    assert di.KnownSparsity(np.eye(3)) == di.KnownSparsity(sp.eye(3)) and hash(di.KnownSparsity(np.eye(3)))


def test_out_must_have_the_prepared_pattern():
    f = lambda x: x[1:] - x[:-1]
    b = di.AutoSparse(di.AutoFiniteDiff(), sparsity_detector=di.KnownSparsity(np.eye(3, 4) + np.eye(3, 4, 1)))
    prep = di.prepare_jacobian(f, b, np.ones(4))
    with pytest.raises(di.ArgumentError, match="another sparsity pattern"):
        prep.jacobian(np.ones(4), out=sp.csr_array(np.eye(3, 4)))
    with pytest.raises(di.ArgumentError, match=r"scipy\.sparse CSR"):
        prep.jacobian(np.ones(4), out=np.zeros((3, 4)))


def test_arrowhead_example_pattern():
    assert arrowhead(5).nnz == 13
