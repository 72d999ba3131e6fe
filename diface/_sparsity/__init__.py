"""Sparsity detection: the patterns of Jacobians and Hessians, from a program (global) or from numbers
at a point (local)."""

from ._deps import Deps, Nonlinearity

__all__ = ["Deps", "Nonlinearity"]
