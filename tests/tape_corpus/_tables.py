"""Cases from compact tables: a row names a library function, the argument that is x, its realistic
range, the other arguments (constants), and the points where the library masks or clamps."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._harness import Case, as_points, points_in


@dataclass(frozen=True)
class Row:
    """One function of a library as a case.

    `name` is the attribute path under the library's module ("library.T68conv", "XYZ_to_Lab"); x is passed
    as the keyword `arg` with the `fixed` keywords, or at position `arg` (an int) among the positional
    `args`; x has
    `shape` and lies in [lo, hi] (broadcast against the shape). `call(fn, x)` replaces the plain call
    where the function needs more (an object, a field of its result); `masked` are the points where the
    library masks or clamps (see `as_points`)."""

    name: str
    arg: str | int | None
    lo: float | Sequence[float]
    hi: float | Sequence[float]
    fixed: dict[str, Any] = field(default_factory=dict)
    args: tuple[Any, ...] = ()
    masked: tuple[Any, ...] = ()
    shape: tuple[int, ...] = (3,)
    call: Callable[[Callable[..., Any], np.ndarray], Any] | None = None
    label: str = ""
    #: what `call` is given, where not the function at `name` (a class whose property `name` is)
    target: str = ""
    #: the entry of the result that is f's value (a key of a returned dict, an index of a tuple)
    pick: str | int | None = None
    #: the scale of x for the reference's step (see `Case.scale`)
    scale: float | None = None
    #: for an inverse: the points are this function's values (plain NumPy) at the points of the range
    #: (Lab_to_XYZ at XYZ_to_Lab of XYZ points), so that they are consistent
    via: Callable[[np.ndarray], Any] | None = None


def resolve(module: Any, path: str) -> Callable[..., Any]:
    """The function (or class) at a dotted path in the module."""
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def make_f(fn: Callable[..., Any], row: Row) -> Callable[[np.ndarray], Any]:
    call = _call(fn, row)
    if row.pick is None:
        return call
    pick = row.pick
    return lambda x: call(x)[pick]


def _call(fn: Callable[..., Any], row: Row) -> Callable[[np.ndarray], Any]:
    fixed = dict(row.fixed)
    if row.call is not None:
        call = row.call
        return lambda x: call(fn, x)
    if isinstance(row.arg, int):
        before, after = row.args[: row.arg], row.args[row.arg :]
        return lambda x: fn(*before, x, *after, **fixed)
    keyword = row.arg
    assert keyword is not None
    return lambda x: fn(**{keyword: x}, **fixed)


def build(library: str, module: Any, rows: Sequence[Row]) -> list[Case]:
    cases = []
    for row in rows:
        fn = resolve(module, row.target or row.name)
        x0, x1 = points_in(row.lo, row.hi, row.shape)
        masked = as_points(row.masked, x1)
        if row.via is not None:
            x0, x1 = _through(row.via, x0), _through(row.via, x1)
            masked = tuple(_through(row.via, m) for m in masked)
        cases.append(
            Case(
                library=library,
                name=row.label or row.name,
                f=make_f(fn, row),
                x0=x0,
                x1=x1,
                masked=masked,
                argument=str(row.arg),
                scale=row.scale,
            )
        )
    return cases


def _through(via: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.array(via(x), dtype=float)
