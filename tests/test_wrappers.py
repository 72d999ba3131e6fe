"""Wrappers delegate by default: every hook of the backend contract reaches every wrapper, forwarded or
overridden for a stated reason; and the compositions that broke when wrappers forwarded by hand work."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di
from diface._backend import Backend
from diface._wrapper import Wrapper, contract_hooks, forwarded

WRAPPERS = (di.SecondOrder, di.AutoSparse, di.MixedMode, di.AutoDistributed)


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=lambda w: w.__name__)
def test_every_hook_is_forwarded_or_overridden_for_a_reason(wrapper):
    unexplained = []
    for name in contract_hooks():
        if forwarded(wrapper, name):
            assert name not in wrapper.own_hooks, f"{wrapper.__name__}.{name} is forwarded but listed as its own"
        elif not wrapper.own_hooks.get(name):
            unexplained.append(name)
    assert unexplained == [], f"{wrapper.__name__} overrides {unexplained} without saying why in own_hooks"
    for name in wrapper.own_hooks:
        assert name in contract_hooks(), f"{wrapper.__name__}.own_hooks names {name!r}, not a hook of Backend"


def test_a_hook_added_to_the_contract_reaches_every_wrapper():
    assert set(contract_hooks()) >= {"prepare_inverse_linearize", "detect_sparsity", "prepare_linearize"}
    for name in contract_hooks():
        assert name in vars(Wrapper), f"Wrapper has no forwarding for {name}"
    # the facts too: a wrapper answers what its wrapped backend says
    b = di.AutoSparse(di.AutoTape())
    assert (b.native_modes, b.mode, b.supports_inplace) == (di.AutoTape.native_modes, "auto", True)
    assert di.SecondOrder(di.AutoTape(), di.AutoFiniteDiff()).accuracy_exponent == di.AutoFiniteDiff().accuracy_exponent


def test_wrappers_are_backends():
    for wrapper in WRAPPERS:
        assert issubclass(wrapper, Wrapper) and issubclass(wrapper, Backend)


# -- the compositions of issue 16 ------------------------------------------------------------------------

ENGINES = {
    "tape": lambda: di.AutoTape(),
    "finitediff": lambda: di.AutoFiniteDiff(),
    "autograd": lambda: di.AutoAutograd(),
    "torch": lambda: di.AutoTorch(),
    "jax": lambda: di.AutoJAX(),
}


def _available(name: str) -> di.Backend:
    b = ENGINES[name]()
    if not b.is_available():
        pytest.skip(f"{name} is not installed")
    if name == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
    return b


def _chain(xp):
    return lambda x: xp.sum(x[1:] ** 2 * x[:-1]) + xp.sum(xp.sin(x))


def _chain_hessian(x):
    n = x.size
    H = np.diag(-np.sin(x))
    for i in range(n - 1):
        H[i + 1, i + 1] += 2 * x[i]
        H[i, i + 1] += 2 * x[i + 1]
        H[i + 1, i] += 2 * x[i + 1]
    return H


def _namespace(name: str):
    if name == "torch":
        import torch

        return torch
    if name == "jax":
        import jax.numpy as jnp

        return jnp
    if name == "autograd":
        import autograd.numpy as anp

        return anp
    return np


@pytest.mark.parametrize("outer", list(ENGINES))
@pytest.mark.parametrize("inner", list(ENGINES))
def test_sparse_hessian_through_second_order(outer, inner):
    """`AutoSparse(SecondOrder(b, b))`, DifferentiationInterface's sparse-Hessian backend: the pattern is
    traced through the inner engine, the colored products are outer over inner. A pair the dense
    `SecondOrder` refuses (engines that cannot differentiate each other) raises the same error."""
    dense = di.SecondOrder(_available(outer), _available(inner))
    b = di.AutoSparse(dense)
    f = _chain(_namespace(inner))
    x0, x1 = np.linspace(0.1, 1.0, 6), np.linspace(-0.5, 0.7, 6)
    rtol = 1e-10 if "finitediff" not in (outer, inner) else 1e-4
    try:
        di.hessian(f, dense, x0)
    except di.NotSupportedError as refused:
        with pytest.raises(di.NotSupportedError) as e:
            di.prepare_hessian(f, b, x0)
        assert str(e.value) == str(refused)
        return
    prep = di.prepare_hessian(f, b, x0)
    assert prep.ncolors <= 3  # tridiagonal: a star coloring needs 3 colors at most
    for _ in range(2):
        H = prep.hessian(x1)
        np.testing.assert_allclose(H.toarray(), _chain_hessian(x1), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(di.hessian(f, b, x1).toarray(), _chain_hessian(x1), rtol=rtol, atol=rtol)


def test_inverse_products_through_second_order():
    f = lambda x: x**3 + 2 * x
    x, v = np.linspace(0.1, 1.0, 5), np.ones(5)
    for method in ("accumulate", "dense", "krylov"):
        b = di.SecondOrder(di.AutoTape(), di.AutoTape())
        dx = di.inverse_pushforward(f, b, x, v, method=method)
        np.testing.assert_allclose(dx, v / (3 * x**2 + 2), rtol=1e-8)
        prep = di.prepare_inverse_pullback(f, b, np.zeros(5), v, method=method)
        np.testing.assert_allclose(prep.inverse_pullback(x, v), v / (3 * x**2 + 2), rtol=1e-8)
        assert prep.method == method


def test_second_order_forwards_linearize_and_detection():
    b = di.SecondOrder(di.AutoFiniteDiff(), di.AutoTape())
    prep = di.prepare_jacobian(lambda x: x[1:] * x[:-1], di.AutoSparse(b), np.zeros(5))
    assert prep.ncolors == 2  # detected through the inner tape
    np.testing.assert_allclose(
        prep.jacobian(np.arange(5.0)).toarray(), di.jacobian(lambda x: x[1:] * x[:-1], di.AutoTape(), np.arange(5.0))
    )


def test_mixed_mode_second_order_is_forward_over_reverse():
    b = di.MixedMode(di.AutoFiniteDiff(), di.AutoTape())
    f = _chain(np)
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(di.hessian(f, b, x), _chain_hessian(x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(di.hessian(f, di.AutoSparse(b), x).toarray(), _chain_hessian(x), rtol=1e-6, atol=1e-6)


def test_a_sparse_jacobian_is_factored_by_a_sparse_lu_and_says_so():
    pytest.importorskip("scipy")
    f = lambda x: x**3 + 2 * x + 0.1 * np.roll(x, 1)
    x, v = np.linspace(0.1, 1.0, 6), np.ones(6)
    for b in (di.AutoSparse(di.AutoTape()), di.AutoSparse(di.SecondOrder(di.AutoTape(), di.AutoTape()))):
        prep = di.prepare_inverse_pushforward(f, b, np.zeros(6), v, method="dense")
        assert prep.method == "sparse-lu"
        dx = prep.inverse_pushforward(x, v)
        np.testing.assert_allclose(di.pushforward(f, di.AutoTape(), x, dx), v, rtol=1e-10)
        # the method asked for at preparation may be named again at the call
        np.testing.assert_allclose(di.inverse_pushforward(f, b, x, v, prep=prep, method="dense"), dx)
