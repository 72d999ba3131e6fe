"""Backends the suite runs on: every engine whose package is importable, plus finite differences and a
reverse-only test double. Keep the lists short: each entry multiplies the suite's run time."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from toy_backends import ReverseOnly

import diface as di
from diface.testing import default_scenarios, known_deviation, known_unsupported
from diface.testing._check import SECOND_ORDER, check_operator
from diface.testing._kit import applicable

FD = di.AutoFiniteDiff
HAS_AUTOGRAD = importlib.util.find_spec("autograd") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None

if HAS_JAX:
    import jax

    # the scenarios are float64: JAX keeps float64 only in its 64-bit mode (without it, diface raises)
    jax.config.update("jax_enable_x64", True)
    # two CPU devices, so that tests/test_device_placement.py can commit arrays to a device that is not
    # the default one (set before JAX's backend starts; every other test uses the default device 0)
    jax.config.update("jax_num_cpu_devices", 2)
    # a compilation cache of this process's own: the suite compiles the same XLA program many times
    # over (each preparation jits its own closure; the layout and edge scenarios of one function lower
    # to one program, as JAX arrays have no strides), and XLA's compile is most of a small case's time.
    # Tracing and lowering still run for every program, so nothing a test checks changes; a hit only
    # skips XLA's compile of an identical program. One directory per process (pytest-xdist's workers
    # would otherwise share entries that JAX writes non-atomically), removed at exit.
    import atexit
    import shutil
    import tempfile

    _jax_cache = tempfile.mkdtemp(prefix="diface-tests-jax-cache-")
    atexit.register(shutil.rmtree, _jax_cache, ignore_errors=True)
    jax.config.update("jax_compilation_cache_dir", _jax_cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def engine_defaults() -> list:
    """Each installed engine's backend with its default settings (its test file runs the others)."""
    engines = [di.AutoAutograd()] if HAS_AUTOGRAD else []
    engines += [di.AutoTorch()] if HAS_TORCH else []
    engines += [di.AutoJAX()] if HAS_JAX else []
    return [*engines, di.AutoTape()]


def first_order_backends() -> list:
    engines = engine_defaults()
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
        *engine_defaults(),  # their own second-order compositions (the engines' test files run the others)
        di.SecondOrder(FD(), di.AutoTape()),  # finite differences of the tape's gradient
    ]


def engine_backends() -> list:
    """One backend per engine, the most accurate first: the cross-engine tests compare them."""
    exact = [di.AutoJAX()] if HAS_JAX else []
    exact += [di.AutoAutograd()] if HAS_AUTOGRAD else []
    exact += [di.AutoTorch()] if HAS_TORCH else []
    return [*exact, di.AutoTape(), FD("complex"), FD()]


def operator_cases(backends: list, second_order: bool, scenarios: list | None = None) -> list:
    """pytest parameters (backend, scenario, operator) for `check_operator`: first- or second-order
    operators of every scenario; scenarios a backend cannot run are skipped with the reason, and known
    engine limits are strict expected failures with theirs."""
    cases = []
    for backend in backends:
        for scenario in default_scenarios() if scenarios is None else scenarios:
            for op in scenario.operators():
                if (op in SECOND_ORDER) != second_order:
                    continue
                marks = []
                reason = applicable(backend, scenario)
                if reason:
                    marks.append(pytest.mark.skip(reason=f"{backend.label()}: {reason}"))
                deviation = known_deviation(backend, scenario)
                if deviation:
                    marks.append(pytest.mark.xfail(reason=deviation, strict=True))
                cases.append(
                    pytest.param(backend, scenario, op, marks=marks, id=f"{backend.label()}-{scenario.name}-{op}")
                )
    return cases


def assert_operator(backend, scenario, op) -> None:
    """`check_operator` finds nothing wrong; where the engine is known not to support the case
    (`known_unsupported`), every call raises `NotSupportedError` instead."""
    failures = check_operator(backend, scenario, op)
    if known_unsupported(backend, scenario, op):
        assert failures and all(isinstance(f.error, di.NotSupportedError) for f in failures), failures
        return
    assert not failures, "\n".join(map(str, failures))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
