"""Backends, one module each. Importing this package imports no framework."""

from .finitediff import AutoFiniteDiff
from .torch import AutoTorch

__all__ = ["AutoFiniteDiff", "AutoTorch"]
