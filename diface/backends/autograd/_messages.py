"""What this backend says when f or autograd's rules cannot be differentiated, and what to do."""

from __future__ import annotations

from typing import Any

from ..._errors import DifaceError, NotSupportedError
from ._internals import AG

__all__ = ["HIDDEN_BOXES", "PLAIN_NUMPY", "NoJVPRule", "misused_box", "name", "no_vjp_rule", "rule_failed"]

#: how to get pushforwards where a JVP rule is missing, for `NoJVPRule`
REVERSE_HINT = "use di.AutoAutograd(mode='reverse'), which needs no JVP rules"


def name(fun: Any) -> str:
    return getattr(fun, "__name__", None) or repr(fun)


class NoJVPRule(NotSupportedError):
    """A primitive on the way from x to f(x) has no forward-mode rule in autograd."""

    def __init__(self, fun: Any, hint: str = REVERSE_HINT) -> None:
        if fun not in AG.primitive_vjps:  # reverse mode cannot help either
            hint = "define rules with autograd.extend.defjvp and defvjp, or differentiate with di.AutoFiniteDiff()"
        super().__init__(
            f"autograd has no forward-mode (JVP) rule for {name(fun)!r}, which f calls, so it cannot push "
            f"tangents through f; {hint}"
        )
        self.fun = fun


def rule_failed(fun: Any, kind: str, e: Exception) -> NotSupportedError:
    return NotSupportedError(
        f"autograd's {kind} rule for {name(fun)!r} failed on the arguments f called it with ({type(e).__name__}: "
        f"{e}); if f calls a plain NumPy function there, call autograd.numpy's (import autograd.numpy as np)"
    )


def no_vjp_rule(fun: Any, argnums: tuple | None = None, e: Exception | None = None) -> NotSupportedError:
    if argnums is None:
        return NotSupportedError(
            f"autograd has no reverse-mode (VJP) rule for {name(fun)!r}, which f calls: define one with "
            "autograd.extend.defvjp, or differentiate with di.AutoFiniteDiff()"
        )
    return NotSupportedError(  # a rule for some arguments only (np.clip: x, not its bounds)
        f"autograd has no reverse-mode (VJP) rule for {name(fun)!r} with respect to argument(s) "
        f"{', '.join(map(str, argnums))} (counted from 0), through which x reaches f's output ({e})"
    )


PLAIN_NUMPY = (
    "f returned a NumPy array of autograd boxes (dtype object): it called a plain NumPy function (np.asarray, "
    "np.array, np.dot, np.stack, np.where, ...) on a traced value, which NumPy turns into an array of objects "
    "that autograd cannot differentiate. Write f with autograd.numpy (import autograd.numpy as np)"
)

_INSTEAD = (
    "Build arrays from traced values with np.stack, np.concatenate or np.where instead, or use a backend that "
    "supports mutation (di.AutoFiniteDiff(), di.AutoTorch())"
)


def misused_box(e: Exception) -> str | None:
    """What went wrong and what to do, when `e` (raised while f runs on autograd's boxes) comes from
    passing a box where a plain value is needed; None for any other error."""
    text = str(e)
    if isinstance(e, ValueError) and not isinstance(e, DifaceError):
        if not text.startswith("setting an array element with a sequence"):
            return None
        return (
            "f writes a value that depends on x into a NumPy array (a di.Cache, an array it made, or "
            f"np.array(..., dtype=float) of traced values): autograd cannot trace item assignment. {_INSTEAD}"
        )
    if isinstance(e, DifaceError) or not (any(t.__name__ in text for t in AG.box_types) or "dtype('O')" in text):
        return None
    if "does not support item assignment" in text:
        return (
            "f assigns into an array that depends on x (x itself, or a value computed from it): autograd cannot "
            f"trace item assignment. {_INSTEAD}"
        )
    return (
        "f passes a value that depends on x (an autograd box, what f receives instead of a NumPy array) to code "
        "that needs a plain number or NumPy array: float() or .item(), a plain NumPy function (np.linalg.solve, "
        "np.asarray, ...), or an in-place operation (+=) on a NumPy array. Write f with autograd.numpy "
        "(import autograd.numpy as np), without in-place updates"
    )


HIDDEN_BOXES = (
    "f's output holds traced values inside a NumPy array of objects, hidden from autograd, so their "
    "derivatives would be lost: a Python list of traced values reached an autograd.numpy function that "
    "traces its array arguments only (np.append(a, [[v, w]]) or np.concatenate([a, [v, w]]) with a traced "
    "a, for instance). Make the list an array first, with autograd.numpy.array(...). (A list of numbers "
    "inside a tuple or dict x reaches f as a list of traced numbers.)"
)
