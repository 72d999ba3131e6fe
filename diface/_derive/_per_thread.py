"""A value made once per thread, or once for all threads where it says it may be shared."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["PerThread"]


class PerThread:
    """A value made by `make()` once per thread, or once for all where it says it is `shareable`."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make
        self.local = threading.local()
        self.shared: Any = None

    def get(self) -> Any:
        if self.shared is not None:
            return self.shared
        value = getattr(self.local, "value", None)
        if value is None:
            value = self.local.value = self.make()
            if getattr(value, "shareable", False):
                self.shared = value
        return value
