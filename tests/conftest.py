"""Backends the suite runs on. Later engines add themselves here when their package is importable."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from toy_backends import ReverseOnly

import diface as di

FD = di.AutoFiniteDiff
HAS_AUTOGRAD = importlib.util.find_spec("autograd") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None


def first_order_backends() -> list:
    engines = [di.AutoAutograd()] if HAS_AUTOGRAD else []
    engines += [di.AutoTorch(), di.AutoTorch("forward")] if HAS_TORCH else []
    return [FD(), FD("forward"), FD("backward"), FD("complex"), ReverseOnly(), *engines]


def second_order_backends() -> list:
    return [
        FD(),
        FD("complex"),
        di.SecondOrder(FD(), FD()),
        di.SecondOrder(FD("complex"), FD()),
        di.SecondOrder(FD(), ReverseOnly()),  # forward over reverse
        di.SecondOrder(ReverseOnly(), FD()),  # reverse over forward
        ReverseOnly(),  # reverse over reverse
        *([di.AutoAutograd()] if HAS_AUTOGRAD else []),  # forward over reverse
        *([di.AutoTorch()] if HAS_TORCH else []),  # reverse over reverse (tests/test_torch.py has the others)
    ]


def engine_backends() -> list:
    """One backend per engine, the most accurate first: the cross-engine tests compare them."""
    exact = [di.AutoAutograd()] if HAS_AUTOGRAD else []
    exact += [di.AutoTorch()] if HAS_TORCH else []
    return [*exact, FD("complex"), FD()]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
