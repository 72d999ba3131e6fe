"""Backends the suite runs on. Later engines add themselves here when their package is importable."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from toy_backends import ReverseOnly

import diface as di

FD = di.AutoFiniteDiff
HAS_JAX = importlib.util.find_spec("jax") is not None

if HAS_JAX:
    import jax

    # the scenarios are float64: JAX keeps float64 only in its 64-bit mode (without it, diface raises)
    jax.config.update("jax_enable_x64", True)


def first_order_backends() -> list:
    backends = [FD(), FD("forward"), FD("backward"), FD("complex"), ReverseOnly()]
    if HAS_JAX:
        backends.append(di.AutoJAX())
    return backends


def second_order_backends() -> list:
    backends = [
        FD(),
        FD("complex"),
        di.SecondOrder(FD(), FD()),
        di.SecondOrder(FD("complex"), FD()),
        di.SecondOrder(FD(), ReverseOnly()),  # forward over reverse
        di.SecondOrder(ReverseOnly(), FD()),  # reverse over forward
        ReverseOnly(),  # reverse over reverse
    ]
    if HAS_JAX:
        backends.append(di.AutoJAX())  # forward over reverse, compiled whole
    return backends


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
