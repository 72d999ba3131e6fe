"""Every operator and variant on every backend and scenario, against analytic results.

Each case runs the plain and full variants, with and without `out=`, unprepared and prepared at the
scenario's other point (through `prep=` and through the prep's methods), with single and batched
tangents, each call twice, and checks that inputs, tangents and Constants stay intact.
"""

from __future__ import annotations

import pytest
from conftest import first_order_backends, second_order_backends

import diface as di
from diface.testing import default_scenarios
from diface.testing._check import SECOND_ORDER, check_operator

SCENARIOS = default_scenarios()


def _cases(backends: list, second_order: bool) -> list:
    cases = []
    for backend in backends:
        for scenario in SCENARIOS:
            for op in scenario.operators():
                if (op in SECOND_ORDER) != second_order:
                    continue
                marks = ()
                if scenario.mutates and not di.check_inplace(backend):
                    marks = pytest.mark.skip(reason=f"{backend!r} cannot run functions that write into their arguments")
                cases.append(pytest.param(backend, scenario, op, id=f"{backend!r}-{scenario.name}-{op}", marks=marks))
    return cases


@pytest.mark.parametrize(("backend", "scenario", "op"), _cases(first_order_backends(), False))
def test_first_order(backend, scenario, op):
    failures = check_operator(backend, scenario, op)
    assert not failures, "\n".join(map(str, failures))


@pytest.mark.parametrize(("backend", "scenario", "op"), _cases(second_order_backends(), True))
def test_second_order(backend, scenario, op):
    failures = check_operator(backend, scenario, op)
    assert not failures, "\n".join(map(str, failures))
