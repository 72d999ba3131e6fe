"""Every operator and variant on every backend and scenario, against analytic results.

Each case runs the plain and full variants, with and without `out=`, unprepared and prepared at the
scenario's other point (through `prep=` and through the prep's methods), with single and batched
tangents, each call twice, and checks that inputs, tangents and Constants stay intact.
"""

from __future__ import annotations

import pytest

from conftest import assert_operator, first_order_backends, operator_cases, second_order_backends


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(first_order_backends(), False))
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(second_order_backends(), True))
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)
