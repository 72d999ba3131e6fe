"""The messages of the tape's refusals: what it cannot differentiate, named with the user's line, and
what to do instead (a supported alternative, or another backend)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from .sites import in_rule, user_location

__all__ = ["ALTERNATIVES", "function_name", "rule_limit", "unsupported"]


#: what to do about an operation the tape cannot differentiate
ALTERNATIVES = (
    "Write it with the operations the tape records (see docs/backends/tape.md), or "
    "differentiate f with another backend: di.AutoAutograd() (f written with autograd.numpy), di.AutoJAX() "
    "(f written with jax.numpy), or di.AutoFiniteDiff() (any code)."
)


def unsupported(name: str, why: str = "") -> NotSupportedError:
    """The error for an operation the tape does not record, naming it and the user's line."""
    rule = in_rule()
    if rule is not None:
        return rule_limit(rule, name + why)
    return NotSupportedError(
        f"AutoTape does not know how to differentiate {name}{why} (called with a traced array at "
        f"{user_location()}). {ALTERNATIVES}"
    )


def rule_limit(prim: Any, name: str) -> NotSupportedError:
    """The error for an operation that a derivative rule of the tape needs on traced values (second
    order records the first derivative's rules): a limit of that rule, not of the user's code."""
    label = prim_label(prim)
    return NotSupportedError(
        f"AutoTape's derivative rule for {label} uses {name} on a traced value, which the tape cannot "
        f"differentiate: a second derivative (hessian, hvp, second_derivative) of {label} is a limit of "
        f"AutoTape's rule for {label}, not of your code (reached from {user_location()}). For second order "
        "use di.SecondOrder(di.AutoFiniteDiff(), di.AutoTape()), or another backend such as di.AutoJAX()."
    )


def prim_label(prim: Any) -> str:
    return prim.label()


def function_name(func: Any) -> str:
    """`numpy.linalg.svd`, `numpy.frexp`, `scipy.special.jv`, or the ufunc's name."""
    name = getattr(func, "__name__", repr(func))
    if isinstance(func, np.ufunc):
        if getattr(np, name, None) is func:
            return f"numpy.{name}"
        special = sys.modules.get("scipy.special")
        if special is not None and getattr(special, name, None) is func:
            return f"scipy.special.{name}"
        return f"the ufunc {name} (not NumPy's own)"
    return f"{getattr(func, '__module__', None) or 'numpy'}.{name}"
