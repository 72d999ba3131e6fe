"""What a preparation remembers of its arguments, and the report when a call differs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import ops_for

__all__ = ["Signature", "describe", "describe_value"]


def describe(a: Any) -> tuple:
    """(array type, dtype, shape, device) of an argument; dtype and shape are None for non-arrays,
    device is None for NumPy arrays and non-arrays."""
    return (type(a), getattr(a, "dtype", None), getattr(a, "shape", None), device_of(a))


def device_of(a: Any) -> Any:
    """The device of an array whose namespace says its device matters to a preparation (torch: seeds
    and buffers live there), else None."""
    if isinstance(a, (np.ndarray, np.generic)):
        return None
    ops = ops_for(a)
    return a.device if ops is not None and ops.devices_matter else None


def describe_value(spec: tuple) -> str:
    kind, dtype, shape, device = spec
    name = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__
    if dtype is None and shape is None:
        return name
    text = f"{name} {dtype} {tuple(shape) if shape is not None else ''}".strip()
    return text if device is None else f"{text} on {device}"


class Signature:
    """The labelled argument specs a preparation was made with."""

    __slots__ = ("labels", "specs")

    def __init__(self, labels: tuple[str, ...], values: tuple) -> None:
        self.labels = labels
        self.specs = tuple(describe(v) for v in values)

    def matches(self, values: tuple) -> bool:
        specs = self.specs
        if len(values) != len(specs):
            return False
        for v, s in zip(values, specs):
            if (type(v), getattr(v, "dtype", None), getattr(v, "shape", None)) != s[:3] or device_of(v) != s[3]:
                return False
        return True

    def report(self, labels: tuple[str, ...], values: tuple) -> list[str]:
        """One line per argument of either the preparation or the call: matching or how it differs."""
        lines = []
        now = dict(zip(labels, (describe(v) for v in values)))
        then = dict(zip(self.labels, self.specs))
        for label in dict.fromkeys((*self.labels, *labels)):
            if label not in now:
                lines.append(
                    f"  {label:<22} differs: given at preparation ({describe_value(then[label])}), missing now"
                )
            elif label not in then:
                lines.append(
                    f"  {label:<22} differs: not given at preparation, given now ({describe_value(now[label])})"
                )
            elif now[label] == then[label]:
                lines.append(f"  {label:<22} matches")
            else:
                lines.append(f"  {label:<22} differs: {_difference(then[label], now[label])}")
        return lines


def _difference(then: tuple, now: tuple) -> str:
    parts = []
    for what, a, b in zip(("array type", "dtype", "shape", "device"), then, now):
        if a != b:
            a_text = a.__qualname__ if isinstance(a, type) else (tuple(a) if what == "shape" and a is not None else a)
            b_text = b.__qualname__ if isinstance(b, type) else (tuple(b) if what == "shape" and b is not None else b)
            parts.append(f"{what} {a_text} at preparation, {b_text} now")
    return "; ".join(parts)
