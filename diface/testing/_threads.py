"""The thread check: one preparation shared by many threads gives what it gives one thread.

Each thread differentiates at a point of its own (the scenario's x, shifted), with tangents, caches,
`y` and `out=` buffers of its own, and calls the shared preparation many times, cycling through the
plain operator with `prep=`, the full variant through the prep's method, and the plain operator
with `out=`. Every result must equal what the same preparation returned for that thread's point
before the threads started; nothing may raise. Python's thread switch interval is shortened while the
threads run, so that calls interleave at fine grain.
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._engines import namespace_of
from .._optable import OPERATORS
from ._calls import buffers_like, operator_calls
from ._check import Failure, _tangents, _y_dtype
from ._scenarios import Scenario

__all__ = ["check_threads"]


def check_threads(
    backend: Any,
    scenario: Scenario,
    operator: str,
    *,
    threads: int = 8,
    calls: int = 50,
    switch_interval: float | None = 1e-5,
) -> list[Failure]:
    """Run `operator` on `scenario` from `threads` threads sharing one preparation, `calls` calls each,
    and report every result that differs from the single-threaded one and every exception.

    Example:
        >>> import diface as di
        >>> from diface.testing import check_threads, default_scenarios
        >>> check_threads(di.AutoFiniteDiff(), default_scenarios()[2], "gradient", threads=4, calls=5)
        []
    """
    spec = OPERATORS[operator]
    f = scenario.bind(namespace_of(backend))
    y_dtype = _y_dtype(scenario)
    calls_of = operator_calls(operator)
    plain = calls_of.plain
    kwargs: dict[str, Any] = {"y": np.zeros(scenario.y_shape, y_dtype)} if scenario.inplace else {}
    prep_extra = () if spec.tangent is None else (_tangents(scenario, operator, 2, None),)
    failures: list[Failure] = []

    def fail(variant: str, message: str, error: BaseException | None = None) -> None:
        failures.append(Failure(backend.label(), scenario.name, operator, variant, message, error))

    try:
        prep = calls_of.prepare(f, backend, scenario.prep_x, *prep_extra, *scenario.make_contexts(prep=True), **kwargs)
    except Exception as e:
        fail("threads: prepare", f"raised {type(e).__name__}: {e}", e)
        return failures

    class Worker:
        """One thread's point, tangent and single-threaded answers."""

        def __init__(self, k: int) -> None:
            x = scenario.fresh_x()
            shifted = np.asarray(x) + np.asarray(0.01 * (k + 1), dtype=scenario.dtype)
            if isinstance(x, np.ndarray):
                self.x = scenario.arrange(np.array(shifted, dtype=x.dtype))
            else:  # a Python or NumPy scalar
                self.x = type(x)(shifted)
            self.extra = () if spec.tangent is None else (_tangents(scenario, operator, 10 + k, None),)
            self.plain = self.call(0, None)
            self.full = self.call(1, None)

        def call(self, i: int, out: Any) -> Any:
            contexts = scenario.make_contexts()
            y = {"y": np.zeros(scenario.y_shape, y_dtype)} if scenario.inplace else {}
            if i % 3 == 1:
                method = getattr(prep, calls_of.full_method)
                return method(self.x, *self.extra, *contexts, **y)
            return plain(f, backend, self.x, *self.extra, *contexts, prep=prep, out=out, **y)

        def run(self) -> list[str]:
            problems = []
            for i in range(calls):
                try:
                    out = None
                    if i % 3 == 2:
                        out = buffers_like(self.plain)
                    got = self.call(i, out)
                except Exception as e:
                    problems.append(f"call {i} raised {type(e).__name__}: {e}")
                    continue
                want = self.full if i % 3 == 1 else self.plain
                if not _equal(got, want, scenario.dtype):
                    problems.append(f"call {i}: a result differs from the single-threaded one")
            return problems

    try:
        workers = [Worker(k) for k in range(threads)]
    except Exception as e:
        fail("threads: single-threaded reference", f"raised {type(e).__name__}: {e}", e)
        return failures
    start = threading.Barrier(threads)

    def work(worker: Worker) -> list[str]:
        start.wait()
        return worker.run()

    old = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        with ThreadPoolExecutor(threads) as pool:
            outcomes = list(pool.map(work, workers))
    finally:
        sys.setswitchinterval(old)
    for k, problems in enumerate(outcomes):
        if problems:
            shown = "; ".join(problems[:2]) + (f"; and {len(problems) - 2} more" if len(problems) > 2 else "")
            fail(f"threads: thread {k} of {threads}, {calls} calls", f"{len(problems)} bad calls: {shown}")
    return failures


def _equal(got: Any, want: Any, dtype: Any) -> bool:
    """Equal up to rounding (the same preparation should give bitwise the same; allow a little)."""
    if isinstance(want, tuple):
        return isinstance(got, tuple) and len(got) == len(want) and all(_equal(g, w, dtype) for g, w in zip(got, want))
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    tol = 1e3 * float(np.finfo(dtype).eps)
    return bool(np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True))
