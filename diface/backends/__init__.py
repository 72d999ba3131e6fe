"""Backends, one module each. Importing this package imports no framework."""

from .finitediff import AutoFiniteDiff
from .tape import AutoTape

__all__ = ["AutoFiniteDiff", "AutoTape"]
