"""Engine limits diface cannot work around, known to the test kit (not to the engines).

A deviation is a scenario on which an engine is known to disagree with the reference for a reason
outside diface's reach; the kit reports it as an expected failure ("xfail") with that reason instead
of a failure, and keeps the evidence. Users testing their own backends pass `known_deviations=` to
`test_differentiation`, or register a rule here with `register_deviation`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._scenarios import Scenario

__all__ = ["known_deviation", "register_deviation"]

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


def _autograd_clip(scenario: Scenario) -> str | None:
    if scenario.family == "clamp" and scenario.role in ("lo", "hi"):
        return (
            "autograd's np.clip has derivative rules for x only, none for its bounds: differentiating "
            "with respect to lo or hi raises NotSupportedError"
        )
    return None


register_deviation("AutoAutograd", _autograd_clip)
