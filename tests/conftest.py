"""Backends the suite runs on: every engine whose package is importable, plus finite differences and a
reverse-only test double. Keep the lists short: each entry multiplies the suite's run time."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from toy_backends import ReverseOnly

import diface as di

FD = di.AutoFiniteDiff
HAS_AUTOGRAD = importlib.util.find_spec("autograd") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None

if HAS_JAX:
    import jax

    # the scenarios are float64: JAX keeps float64 only in its 64-bit mode (without it, diface raises)
    jax.config.update("jax_enable_x64", True)


def first_order_backends() -> list:
    engines = [di.AutoAutograd()] if HAS_AUTOGRAD else []
    engines += [di.AutoTorch(), di.AutoTorch("forward")] if HAS_TORCH else []
    engines += [di.AutoJAX()] if HAS_JAX else []
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
        *([di.AutoJAX()] if HAS_JAX else []),  # forward over reverse, compiled whole
    ]


def engine_backends() -> list:
    """One backend per engine, the most accurate first: the cross-engine tests compare them."""
    exact = [di.AutoJAX()] if HAS_JAX else []
    exact += [di.AutoAutograd()] if HAS_AUTOGRAD else []
    exact += [di.AutoTorch()] if HAS_TORCH else []
    return [*exact, FD("complex"), FD()]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
