"""Backends, one module each. Importing this package imports no framework."""

from .finitediff import AutoFiniteDiff

__all__ = ["AutoFiniteDiff"]
