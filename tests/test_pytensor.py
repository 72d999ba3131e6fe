"""AutoPyTensor: every operator and variant in each mode and SecondOrder combination, then what is
specific to PyTensor: symbolic tracing, NumPy in and out, dtypes, compiled-function caching, contexts as
inputs or keyed constants, threads, errors, availability."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_operator, operator_cases

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt  # noqa: E402

import diface as di  # noqa: E402
from diface.testing import default_scenarios  # noqa: E402

REVERSE, FORWARD = di.AutoPyTensor(), di.AutoPyTensor("forward")
FIRST_ORDER = [REVERSE, FORWARD]
SECOND_ORDER_BACKENDS = {
    "reverse over reverse": REVERSE,
    "forward over reverse": di.SecondOrder(FORWARD, REVERSE),
    "reverse over forward": di.SecondOrder(REVERSE, FORWARD),
    "forward over forward": di.SecondOrder(FORWARD, FORWARD),
}


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(FIRST_ORDER, False))
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(list(SECOND_ORDER_BACKENDS.values()), True))
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)
