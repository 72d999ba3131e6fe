"""Memory budgets as users write them: a number of bytes, or a string such as "1GB"."""

from __future__ import annotations

from typing import Any

__all__ = ["parse_memory"]

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "kib": 2**10, "mib": 2**20}
_UNITS |= {"gib": 2**30, "tib": 2**40, "k": 10**3, "m": 10**6, "g": 10**9}


def parse_memory(memory: Any) -> int | None:
    """Bytes from `AutoTape(memory=...)`: None, a positive number of bytes, or a string such as "1GB",
    "512 MB" or "2GiB"; anything else raises ValueError saying what is accepted."""
    if memory is None:
        return None
    if isinstance(memory, bool):
        raise ValueError(f"got {memory!r}")
    if isinstance(memory, (int, float)):
        value, unit = float(memory), ""
    elif isinstance(memory, str):
        text = memory.strip().lower().replace(" ", "").replace("_", "")
        digits = len(text) - len(text.lstrip("0123456789.e+"))
        number, unit = text[:digits], text[digits:]
        while number and number[-1] in "e+":  # "1e" of "1eb" is not an exponent
            unit = number[-1] + unit
            number = number[:-1]
        try:
            value = float(number)
        except ValueError:
            raise ValueError(f"got {memory!r}") from None
    else:
        raise ValueError(f"got a {type(memory).__name__}")
    if unit not in _UNITS or not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"got {memory!r}")
    return int(value * _UNITS[unit])
