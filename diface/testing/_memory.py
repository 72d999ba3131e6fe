"""Memory of a call, as the operating system sees it: the peak resident set size during the call above
what was resident before it (Linux: the high-water mark is reset through /proc/self/clear_refs).

Every engine's allocations count (NumPy, torch's and XLA's allocators alike), which tracemalloc
cannot see. Elsewhere, or where the mark cannot be reset, the measurement is None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MiB", "peak_above", "resident"]

MiB = 2**20


def _status() -> dict[str, int] | None:
    try:
        with open("/proc/self/status") as f:
            fields = (line.split(":", 1) for line in f)
            return {k: int(v.split()[0]) * 1024 for k, v in fields if k in ("VmRSS", "VmHWM")}
    except OSError:
        return None


def resident() -> int | None:
    """Bytes resident now, or None where it cannot be read."""
    status = _status()
    return None if status is None else status["VmRSS"]


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_above(fn: Callable[[], Any]) -> tuple[Any, int | None]:
    """(fn's result, bytes of its peak resident memory above what was resident when it started)."""
    before = resident()
    if before is None or not _reset_peak():
        return fn(), None
    result = fn()
    status = _status()
    return result, None if status is None else max(0, status["VmHWM"] - before)
