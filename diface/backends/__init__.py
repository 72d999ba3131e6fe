"""Backends, one module each. Importing this package imports no framework."""

from .autograd import AutoAutograd
from .finitediff import AutoFiniteDiff

__all__ = ["AutoAutograd", "AutoFiniteDiff"]
