"""The exception hierarchy.

Every error diface raises derives from `DifaceError` and from the built-in type a Python user would
catch for the same mistake, so `except ValueError` keeps working.
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "BackendUnavailableError",
    "ConvergenceError",
    "DifaceError",
    "EvaluationError",
    "NotSupportedError",
    "PreparationMismatchError",
    "ShapeError",
    "SingularError",
    "TapeMismatchError",
]


class DifaceError(Exception):
    """Base class of every error raised by diface itself (errors raised by `f` propagate unchanged)."""


class PreparationMismatchError(DifaceError, ValueError):
    """A preparation was reused with a different `f`, backend, array type, dtype or shape."""


class TapeMismatchError(PreparationMismatchError):
    """A prepared `AutoTape` call whose control flow would differ from the recorded tape (a branch on a
    traced value came out the other way); an unprepared call traces `f` again."""


class BackendUnavailableError(DifaceError, ImportError):
    """The backend's package is not installed; the message says what to install."""


class NotSupportedError(DifaceError, TypeError):
    """The backend cannot do what was asked (in-place function, `out=` into an immutable array, ...)."""


class ShapeError(DifaceError, ValueError):
    """Shapes that cannot work: a non-scalar output for `gradient`, a tangent of the wrong shape, ..."""


class ArgumentError(DifaceError, TypeError, ValueError):
    """An argument of the wrong kind or value: a bare extra argument, a buffer of the wrong dtype or
    array type, an unknown method name. Catchable as `TypeError` and as `ValueError`."""


class SingularError(DifaceError, ArithmeticError):
    """A Jacobian-inverse product at a point where J is singular: a step of an inverse accumulation that
    cannot be inverted (the message names it, with its file and line), or a singular dense factorization."""


class ConvergenceError(DifaceError, ArithmeticError):
    """An iterative (Krylov) solve did not reach its tolerance within its iterations; the message gives
    the residual reached and what to try."""


class EvaluationError(DifaceError, RuntimeError):
    """`f` raised at one of the points a finite-difference backend evaluated in a batch (`vectorized=`
    or `executor=`): the message names the point (the base point, or which perturbation of which
    column or tangent); the exception `f` raised is its `__cause__`."""
