"""Engine limits diface cannot work around, known to the test kit (not to the engines).

A deviation is a scenario on which an engine is known to disagree with the reference for a reason
outside diface's reach; the kit reports it as an expected failure ("xfail") with that reason instead
of a failure, and keeps the evidence. Users testing their own backends pass `known_deviations=` to
`test_differentiation`, or register a rule here with `register_deviation`.

An unsupported case is narrower: a scenario and operator on which an engine is known to raise
`NotSupportedError` (autograd's forward mode through an FFT). The kit reports
it as "unsupported" only where every failing call raised `NotSupportedError`: a number, right or
wrong, or any other exception is a failure or an "xpass". Register rules with `register_unsupported`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._backend import Backend
from .._derive.taylor import inexact_nesting, nesting_failure
from ._scenarios import TAYLOR_ORDER, Scenario

__all__ = ["known_deviation", "known_unsupported", "register_deviation", "register_unsupported"]

#: the operators whose results are first and second derivatives, and the kit's two checks beyond them
FIRST_ORDER = ("pushforward", "pullback", "derivative", "gradient", "jacobian")
SECOND_ORDER = ("hessian", "hvp", "second_derivative")

#: backend class name -> rule(scenario) giving the reason of a known deviation, or None
_RULES: dict[str, Callable[[Scenario], str | None]] = {}


def register_deviation(backend_class: str, rule: Callable[[Scenario], str | None]) -> None:
    """Declare that backends of class `backend_class` (its `__name__`) deviate where `rule(scenario)`
    gives a reason."""
    _RULES[backend_class] = rule


def known_deviation(backend: Any, scenario: Scenario) -> str | None:
    """Why `backend` is known to disagree with `scenario`, or None. A `SecondOrder` deviates where
    its outer or inner backend does."""
    parts = (backend.outer, backend.inner) if type(backend).__name__ == "SecondOrder" else (backend,)
    for part in parts:
        rule = _RULES.get(type(part).__name__)
        reason = rule(scenario) if rule is not None else None
        if reason:
            return reason
    return None


def _core_taylor_refusal(backend: Any, operator: str) -> str | None:
    """Why the core's Taylor derivation (nested pushforwards) refuses `backend`, which has no Taylor mode
    of its own: inexact derivatives nested too deep, or a pushforward that does not nest (its probe)."""
    if operator == "laplacian" and type(backend).prepare_laplacian is not Backend.prepare_laplacian:
        return None
    if operator == "taylor" and inexact_nesting(backend, TAYLOR_ORDER):
        return f"no Taylor mode of its own, and inexact derivatives nested {TAYLOR_ORDER} levels deep"
    ops = backend.array_ops(np.zeros(2))
    reason = nesting_failure(backend, ops, ops.asarray(np.zeros(2)))
    return f"no Taylor mode of its own, and its pushforward does not nest: {reason}" if reason else None


def _autograd_clip(scenario: Scenario) -> str | None:
    if scenario.family == "clamp" and scenario.role in ("lo", "hi"):
        return (
            "autograd's np.clip has derivative rules for x only, none for its bounds: differentiating "
            "with respect to lo or hi raises NotSupportedError"
        )
    return None


register_deviation("AutoAutograd", _autograd_clip)


#: backend class name -> rule(backend, scenario, operator) giving why it raises NotSupportedError, or None
_UNSUPPORTED: dict[str, Callable[[Any, Scenario, str], str | None]] = {}


def register_unsupported(backend_class: str, rule: Callable[[Any, Scenario, str], str | None]) -> None:
    """Declare that backends of class `backend_class` (its `__name__`) raise `NotSupportedError` on
    `operator` of `scenario` where `rule(backend, scenario, operator)` gives a reason (the backend is
    passed for its settings: a mode, a method)."""
    _UNSUPPORTED[backend_class] = rule


def known_unsupported(backend: Any, scenario: Scenario, operator: str) -> str | None:
    """Why `backend` is known to raise `NotSupportedError` on `operator` of `scenario`, or None.

    `operator` may also be the kit's "dot product" (unsupported where the pushforward or the pullback
    is) or "threads" (where any operator is). A `SecondOrder` computes first derivatives with its inner
    backend, and second derivatives where its outer or inner backend cannot do some first-order
    operator on the scenario.
    """
    if operator == "dot product":
        return known_unsupported(backend, scenario, "pushforward") or known_unsupported(backend, scenario, "pullback")
    if operator == "threads":
        return next(filter(None, (known_unsupported(backend, scenario, op) for op in scenario.operators())), None)
    if operator in ("taylor", "laplacian") and type(backend).prepare_taylor is Backend.prepare_taylor:
        if operator == "laplacian" and np.size(scenario.x) == 0:  # no direction to take: 0 on every engine
            return None
        reason = _core_taylor_refusal(backend, operator)
        if reason:
            return reason
    if type(backend).__name__ == "SecondOrder":
        if operator not in SECOND_ORDER:
            return known_unsupported(backend.inner, scenario, operator)
        parts = (backend.outer, backend.inner)
        return next(filter(None, (known_unsupported(p, scenario, op) for p in parts for op in FIRST_ORDER)), None)
    rule = _UNSUPPORTED.get(type(backend).__name__)
    return rule(backend, scenario, operator) if rule is not None else None


def _autograd_forward_fft(backend: Any, scenario: Scenario, operator: str) -> str | None:
    if (
        "fft" in scenario.needs
        and backend.mode == "forward"
        and operator in ("pushforward", "derivative", "gradient", "jacobian", "taylor", "laplacian")
    ):
        return "autograd has no forward-mode (JVP) rule for np.fft.fft: mode='forward' refuses"
    return None


register_unsupported("AutoAutograd", _autograd_forward_fft)
