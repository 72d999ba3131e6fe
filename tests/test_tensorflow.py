"""AutoTensorFlow: every operator and variant in each mode and SecondOrder combination, then what is
specific to TensorFlow: native tensors in and out, dtypes, tracing at preparation (no retracing),
contexts as traced or static inputs, immutability, sparsity from the traced graph, threads,
availability."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_operator, operator_cases

tf = pytest.importorskip("tensorflow")

import diface as di  # noqa: E402

AUTO, FORWARD, REVERSE = di.AutoTensorFlow(), di.AutoTensorFlow("forward"), di.AutoTensorFlow("reverse")
FIRST_ORDER = [AUTO, FORWARD, REVERSE, di.AutoTensorFlow(jit=False)]
SECOND_ORDER_BACKENDS = {
    "plain (forward over reverse)": AUTO,
    "reverse over forward": di.SecondOrder(REVERSE, FORWARD),
    "reverse over reverse": di.SecondOrder(REVERSE, REVERSE),
    "forward over forward": di.SecondOrder(FORWARD, FORWARD),
    "finite differences over reverse": di.SecondOrder(di.AutoFiniteDiff(), REVERSE),
    "plain, no jit": di.AutoTensorFlow(jit=False),
}


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(FIRST_ORDER, False))
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(list(SECOND_ORDER_BACKENDS.values()), True))
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)
