"""How the kit calls an operator: its plain and full functions, its preparation and the prep's methods,
with the options the kit fixes (the order of Taylor coefficients), in one place for every check."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _operators as ops
from .._optable import OPERATORS
from ._scenarios import TAYLOR_ORDER

__all__ = ["OperatorCalls", "buffers_like", "operator_calls"]


@dataclass(frozen=True)
class OperatorCalls:
    """`plain(f, backend, x, ...)`, `full(...)`, `prepare(...)`, and the names of the prep's methods."""

    plain: Callable[..., Any]
    full: Callable[..., Any]
    prepare: Callable[..., Any]
    plain_method: str
    full_method: str


def operator_calls(operator: str) -> OperatorCalls:
    """The calls of `operator` as the kit makes them (Taylor coefficients of order `TAYLOR_ORDER`: `taylor`
    is the full variant, `taylor_coefficients` the plain one)."""
    spec = OPERATORS[operator]
    if spec.series:
        return OperatorCalls(
            functools.partial(ops.taylor_coefficients, order=TAYLOR_ORDER),
            functools.partial(ops.taylor, order=TAYLOR_ORDER),
            functools.partial(ops.prepare_taylor, order=TAYLOR_ORDER),
            "taylor_coefficients",
            "taylor",
        )
    return OperatorCalls(
        getattr(ops, operator),
        getattr(ops, spec.full_name),
        getattr(ops, f"prepare_{operator}"),
        operator,
        spec.full_name,
    )


def buffers_like(result: Any) -> Any:
    """NaN-filled NumPy `out=` buffers shaped like `result` (a tuple of them for a tuple)."""
    if isinstance(result, tuple):
        return tuple(buffers_like(r) for r in result)
    return np.full(np.shape(result), np.nan, np.result_type(result))
