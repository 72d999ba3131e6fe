"""`diface.testing.check_agreement`: a user's own function on every engine, without analytic derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di
from conftest import HAS_AUTOGRAD, HAS_JAX, HAS_TORCH
from diface.testing import check_agreement
from diface.testing._agreement import OPERATORS


def _functions() -> tuple[dict, list]:
    """f(x) = sum(sin(x) * x**2) per array module, and a backend for each module that is installed."""
    fs: dict = {np: lambda x: np.sum(np.sin(x) * x**2)}
    backends: list = [di.AutoTape(), di.AutoFiniteDiff()]
    if HAS_AUTOGRAD:
        import autograd.numpy as anp

        fs[anp] = lambda x: anp.sum(anp.sin(x) * x**2)
        backends.append(di.AutoAutograd())
    if HAS_TORCH:
        import torch

        fs[torch] = lambda x: torch.sum(torch.sin(x) * x**2)
        backends.append(di.AutoTorch())
    if HAS_JAX:
        import jax.numpy as jnp

        fs[jnp] = lambda x: jnp.sum(jnp.sin(x) * x**2)
        backends.append(di.AutoJAX())
    return fs, backends


def test_every_engine_agrees_on_every_operator():
    fs, backends = _functions()
    x = np.array([0.3, -1.2, 2.0])
    report = check_agreement(fs, backends, x)
    assert report.ok
    n = len(backends)
    for op in ("gradient", "jacobian", "hessian", "pushforward", "pullback", "hvp"):
        rows = [r for r in report.rows if r.operator == op]
        assert len(rows) == n * (n - 1) // 2 and {r.status for r in rows} == {"agrees"}
    g = 2 * x * np.sin(x) + x**2 * np.cos(x)
    for b in backends:
        np.testing.assert_allclose(report.results[(b.label(), "gradient")], g, rtol=1e-7)
    if HAS_JAX:
        assert any("64-bit mode switched on" in n for n in report.notes)
    assert "agrees" in str(report)


def test_a_wrong_function_is_a_disagreement_with_its_table():
    fs, backends = _functions()
    wrong = dict(fs)
    wrong[di.AutoTape()] = lambda x: np.sum(np.cos(x) * x**2)  # by backend, before its module's function
    with pytest.raises(AssertionError, match="disagree") as info:
        check_agreement(wrong, backends, np.array([0.3, -1.2, 2.0]), reference=di.AutoFiniteDiff())
    table = str(info.value)
    assert "AutoTape()" in table and "differs" in table and "AutoFiniteDiff()" in table


def test_one_numpy_function_and_a_reference():
    f = lambda x: np.array([x[0] * x[1], np.exp(x[1])])
    report = check_agreement(f, [di.AutoTape()], np.array([1.0, 2.0]), reference=di.AutoFiniteDiff())
    assert {r.operator for r in report.rows} == {"jacobian", "pushforward", "pullback"}
    assert {r.against for r in report.rows} == {"AutoFiniteDiff()"}


def test_scalar_x_trees_contexts_and_a_subset_of_operators():
    report = check_agreement(lambda x, c: np.sin(c * x), [di.AutoTape(), di.AutoFiniteDiff()], 0.5, di.Constant(2.0))
    assert {r.operator for r in report.rows} == set(OPERATORS)  # a scalar x and a scalar y: every one
    p = {"a": np.array([1.0, 2.0]), "b": np.array(0.5)}
    loss = lambda p: np.sum(p["a"] ** 2) * p["b"]
    report = check_agreement(loss, [di.AutoTape(), di.AutoFiniteDiff()], p, operators=["gradient", "hvp"])
    assert {r.operator for r in report.rows} == {"gradient", "hvp"}
    np.testing.assert_allclose(report.results[("AutoTape()", "gradient")], [1.0, 2.0, 5.0])  # raveled: a, b
    with pytest.raises(di.ArgumentError, match="'derivative' does not apply"):
        check_agreement(loss, [di.AutoTape()], p, operators=["derivative"])


@pytest.mark.filterwarnings("ignore:__array_wrap__:DeprecationWarning")  # NumPy's functions meeting tensors
def test_one_numpy_function_on_an_engine_with_other_arrays_says_what_to_give():
    torch = pytest.importorskip("torch")
    f = lambda x: np.sum(np.sin(x))
    with pytest.raises(AssertionError, match=r"give \{torch: f_torch\}"):
        check_agreement(f, [di.AutoTape(), di.AutoTorch()], np.ones(2))
    report = check_agreement(
        {np: f, torch: lambda x: torch.sum(torch.sin(x))}, [di.AutoTape(), di.AutoTorch()], np.ones(2)
    )
    assert report.ok
    with pytest.raises(di.ArgumentError, match=r"no function for AutoTorch"):
        check_agreement({np: f}, [di.AutoTape(), di.AutoTorch()], np.ones(2))


def test_a_reference_equal_to_a_backend_is_not_compared_with_itself():
    f = lambda x: np.sum(np.exp(x))
    report = check_agreement(f, [di.AutoTape(), di.AutoFiniteDiff()], np.ones(2), reference=di.AutoTape())
    assert {(r.backend, r.against) for r in report.rows} == {("AutoFiniteDiff()", "AutoTape()")}
    assert all(r.error <= r.tolerance for r in report.rows)  # the tolerance shown is the one applied
