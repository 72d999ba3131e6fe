"""Batches of products: one at a time, or all together through `torch.func.vmap`.

A batch of products with one linear map (pullbacks through a recorded graph, pushforwards of f at x,
Hessian-vector products) runs either as a loop of single products or as one vmapped call. vmap costs a
fixed overhead (tens of microseconds on a CPU) and then less per product than a single product costs,
so it pays from some batch size on. Preparation finds that size once, at the preparation point
(`vmap_threshold`): it tries vmap on a sample batch (some functions refuse it: an in-place `f(y, x)`,
`.item()` and a branch on it, ...), times one product and vmap over two batch sizes, and solves for the
crossover. Unprepared calls time nothing: batches of `UNTIMED` products or more try vmap, and loop for
good where f refuses it.

Tests force a strategy by monkeypatching `vmap_threshold` (INF: always loop; 2: vmap wherever f allows).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from typing import Any

from ..._errors import NotSupportedError
from ._modes import DUAL_LEVEL, quiet, torch

__all__ = ["INF", "UNTIMED", "Batching", "Trial", "vmap_threshold"]

INF = math.inf
#: unprepared calls try vmap from this many products on
UNTIMED = 16
#: the largest sample batch preparation times vmap on
SAMPLE = 16

#: `one(v) -> product` for a vector, `many(V) -> products` (stacked) for a stack of them
One = Callable[[Any], Any]
Many = Callable[[Any], Any]


class Trial:
    """vmap tried, and timed against single products, on a sample batch at the preparation point (the
    calls run under `context()`, grad mode say)."""

    def __init__(self, one: One, many: Many | None, sample: Any, context: Callable[[], Any]) -> None:
        self.one, self.many, self.sample, self.context = one, many, sample, context
        self.size = len(sample)
        self._works: bool | None = None

    def vmap_works(self) -> bool:
        """Whether vmap batches these products at all (f may refuse it)."""
        if self._works is None:
            self._works = False
            if self.many is not None and self.size >= 2:
                try:
                    with quiet(), self.context():
                        self.many(self.sample[:2])
                    self._works = True
                except Exception:  # no batching rule, data-dependent control flow, writes into a Cache...
                    pass
        return self._works

    def times(self) -> tuple[float, float, float]:
        """Seconds for one product, vmap over 2 and vmap over the whole sample: the best of three
        interleaved runs each (an accelerator synchronised)."""
        t = torch()
        device = getattr(self.sample, "device", None)
        sync = t.cuda.synchronize if device is not None and device.type == "cuda" else (lambda: None)
        first, pair, sample = self.sample[0], self.sample[:2], self.sample
        many = self.many
        assert many is not None  # timed only where vmap works (`vmap_works`)
        calls = (lambda: self.one(first), lambda: many(pair), lambda: many(sample))
        best = [INF] * len(calls)
        with quiet():
            for _ in range(3):
                for k, call in enumerate(calls):
                    with self.context():
                        sync()
                        start = time.perf_counter()
                        call()
                        sync()
                    best[k] = min(best[k], time.perf_counter() - start)
        return best[0], best[1], best[2]


def vmap_threshold(trial: Trial | None) -> float:
    """The smallest batch that runs through vmap: `UNTIMED` without a trial (unprepared calls), INF where
    vmap is refused or never pays, else where vmap's measured cost (a line through its two timings)
    falls below that many single products."""
    if trial is None:
        return UNTIMED
    if trial.size < 2 or not trial.vmap_works():
        return INF
    one, pair, sample = trial.times()
    slope = (sample - pair) / (trial.size - 2) if trial.size > 2 else 0.0
    overhead = pair - 2 * slope
    if one <= slope:
        return INF
    return max(2, math.ceil(overhead / (one - slope)))


class Batching:
    """Runs a batch of products as a loop or through vmap, from the batch size `threshold` on: decided
    at preparation (`decide`), else tried untimed on the first large batch."""

    def __init__(self, threshold: float | None = None) -> None:
        self.threshold = vmap_threshold(None) if threshold is None else threshold
        #: vmap is known to work (a trial ran it), so a call need not silence its warnings
        self.tried = False

    def decide(self, one: One, many: Many | None, sample: Any, context: Callable[[], Any] = contextlib.nullcontext):
        """At preparation: the threshold from a trial on `sample` (a stack of vectors)."""
        self.threshold = vmap_threshold(Trial(one, many, sample, context))
        self.tried = True

    def run(self, one: One, many: Many | None, items: Any, dual: bool = False) -> Any:
        """The products of the stack `items`, stacked. A vmapped call that fails (f refuses vmap, found
        untimed or at another point than the trial's) loops, and so does every later batch; threads
        sharing the batching find the same, so which one writes that down does not matter."""
        if many is not None and len(items) >= self.threshold:
            try:
                if self.tried:
                    return many(items)
                with quiet():
                    results = many(items)
                self.tried = True
                return results
            except NotSupportedError:  # forward AD in use elsewhere: not vmap's fault
                raise
            except Exception:
                self.threshold = INF
        if len(items) == 1:
            return one(items[0]).unsqueeze(0)
        with DUAL_LEVEL if dual else contextlib.nullcontext():  # one forward-AD level for the whole loop
            return torch().stack([one(v) for v in items])
