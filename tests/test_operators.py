"""Every operator and variant on every backend and scenario, against analytic results.

Each case runs the plain and full variants, with and without `out=`, unprepared and prepared at the
scenario's other point (through `prep=` and through the prep's methods), with single and batched
tangents, each call twice, and checks that inputs, tangents and Constants stay intact.
"""

from __future__ import annotations

import pytest

from conftest import assert_operator, first_order_backends, operator_cases, second_order_backends
from diface.testing import default_scenarios, known_deviation, structural_scenarios, tolerances
from diface.testing._kit import applicable, dot_product_check


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(first_order_backends(), False))
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


@pytest.mark.parametrize(("backend", "scenario", "op"), operator_cases(second_order_backends(), True))
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


def _dot_cases() -> list:
    cases = []
    for backend in first_order_backends():
        for scenario in default_scenarios() + structural_scenarios():
            if applicable(backend, scenario) or known_deviation(backend, scenario):
                continue  # reported by the operator tests, with their reasons
            cases.append(pytest.param(backend, scenario, id=f"{backend.label()}-{scenario.name}"))
    return cases


@pytest.mark.parametrize(("backend", "scenario"), _dot_cases())
def test_dot_product_identity(backend, scenario):
    """<ty, J tx> = <J^T ty, tx> with each backend's own pushforward and pullback."""
    rtol, atol = tolerances(backend, "gradient")
    failures = dot_product_check(backend, scenario, rtol, atol)
    assert not failures, "\n".join(map(str, failures))
