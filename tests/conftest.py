"""Backends the suite runs on. Later engines add themselves here when their package is importable."""

from __future__ import annotations

import numpy as np
import pytest
from toy_backends import ReverseOnly

import diface as di

FD = di.AutoFiniteDiff


def first_order_backends() -> list:
    return [FD(), FD("forward"), FD("backward"), FD("complex"), ReverseOnly(), di.AutoTape()]


def second_order_backends() -> list:
    return [
        FD(),
        FD("complex"),
        di.SecondOrder(FD(), FD()),
        di.SecondOrder(FD("complex"), FD()),
        di.SecondOrder(FD(), ReverseOnly()),  # forward over reverse
        di.SecondOrder(ReverseOnly(), FD()),  # reverse over forward
        ReverseOnly(),  # reverse over reverse
        di.AutoTape(),  # forward over the recorded reverse sweep
        di.SecondOrder(FD(), di.AutoTape()),  # finite differences of the tape's gradient
    ]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
