"""AutoTape's second order replays f's guards as guards (issues 16 and 22): `float(x[0] >= 0)` in f is
accepted by `hessian` as by `gradient`, wherever f comes from, and a prepared Hessian's mismatch names
the branch in f, not the line calling diface."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import diface as di

TAPE = di.AutoTape()
HERE = os.path.basename(__file__)


def _line(marker: str) -> int:
    return next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if marker in text)


def _exec(source: str, filename: str = "<string>") -> dict:
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def guarded(x):
    k = float(x[0] >= 0)
    return k * np.sum(x**3)


GUARDED = "def guarded(x):\n    k = float(x[0] >= 0)\n    return k * np.sum(x**3)\n"


def test_the_hessian_of_a_guard_is_accepted_and_right():
    """`float(x[0] >= 0)` in f is a guard: second order replays it as one (it once went through f's own
    cast check and was refused, naming the caller's `di.hessian(...)` line)."""
    x = np.array([0.5, 1.0, 2.0])
    compiled = _exec("import numpy as np\n" + GUARDED)["guarded"]
    for f in (guarded, compiled):
        np.testing.assert_allclose(di.gradient(f, TAPE, x), 3 * x**2, rtol=1e-14)
        np.testing.assert_allclose(di.hessian(f, TAPE, x), np.diag(6 * x), rtol=1e-14)
        np.testing.assert_allclose(di.hvp(f, TAPE, x, np.ones(3)), 6 * x, rtol=1e-14)
        np.testing.assert_allclose(di.hessian(f, TAPE, -x), np.zeros((3, 3)))
        prep = di.prepare_hessian(f, TAPE, x)
        np.testing.assert_allclose(prep.hessian(2 * x), np.diag(12 * x), rtol=1e-14)
    scalar = lambda s: float(s > 0) * s**3 + int(s < 0) * s**2
    assert di.second_derivative(scalar, TAPE, 0.5) == pytest.approx(3.0, rel=1e-14)
    assert di.second_derivative(scalar, TAPE, -0.5) == pytest.approx(2.0, rel=1e-14)


def branchy(x):
    if x[0] > 0:  # the branch
        return np.sum(x**3)
    return np.sum(x**2)


def test_a_prepared_hessian_names_the_branch_in_f():
    prep = di.prepare_hessian(branchy, TAPE, np.array([1.0, 2.0]))
    np.testing.assert_allclose(prep.hessian(np.array([3.0, 1.0])), np.diag([18.0, 6.0]))
    with pytest.raises(di.TapeMismatchError) as info:
        prep.hessian(np.array([-1.0, 2.0]))
    assert f"{HERE}:{_line('# the branch')}" in str(info.value), str(info.value)
    with pytest.raises(di.TapeMismatchError, match=re.escape(f"{HERE}:{_line('# the branch')}")):
        di.prepare_hvp(branchy, TAPE, np.array([1.0, 2.0]), np.ones(2)).hvp(np.array([-1.0, 2.0]), np.ones(2))
    # f whose source cannot be read: the mismatch is raised all the same, naming f's line number
    compiled = _exec("import numpy as np\ndef f(x):\n    if x[0] > 0:\n        return np.sum(x**3)\n    return 0.0\n")
    prep = di.prepare_hessian(compiled["f"], TAPE, np.array([1.0, 2.0]))
    with pytest.raises(di.TapeMismatchError, match="<string>:3"):
        prep.hessian(np.array([-1.0, 2.0]))
