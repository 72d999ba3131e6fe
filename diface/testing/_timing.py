"""Interleaved timing: median of repeated rounds, every candidate timed in every round."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def interleaved(candidates: dict[str, Callable[[], Any]], rounds: int = 15, min_time: float = 0.02) -> dict[str, float]:
    """Median seconds per call of each candidate; within a round each runs for about `min_time`."""
    numbers = {}
    for name, fn in candidates.items():
        fn()  # warm up (and compile, where there is something to compile)
        n, start = 1, time.perf_counter()
        fn()
        one = max(time.perf_counter() - start, 1e-7)
        numbers[name] = max(1, int(min_time / one))
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            n = numbers[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - start) / n)
    return {name: statistics.median(s) for name, s in samples.items()}
