"""Backends, one module each. Importing this package imports no framework."""

from .finitediff import AutoFiniteDiff
from .jax import AutoJAX

__all__ = ["AutoFiniteDiff", "AutoJAX"]
