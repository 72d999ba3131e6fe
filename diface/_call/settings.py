"""`Settings`: how an operator was asked for, beside its arguments: `has_aux`, `output`, the operator's
options (an inverse product's solver, a Taylor expansion's order, a Laplacian's method), strictness and
whether the preparation is for one point. A prepared call is compared with them once (`require`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import PreparationMismatchError

__all__ = ["Settings"]


@dataclass(frozen=True)
class Settings:
    """The settings of one preparation (see the module docstring)."""

    has_aux: bool = False
    output: str = "tree"
    #: the operator's options, where it has any (`InverseSolver`, a Taylor order, `LaplacianOptions`)
    options: Any = None
    strict: bool = True
    same_point: bool = False

    def require(self, name: str, has_aux: bool, output: str) -> None:
        """Raise `PreparationMismatchError` unless a call of operator `name` asks for these settings."""
        if bool(has_aux) != self.has_aux or output != self.output:
            raise PreparationMismatchError(
                f"{name}: prepared with has_aux={self.has_aux}, output={self.output!r}; called with "
                f"has_aux={has_aux}, output={output!r}"
            )
