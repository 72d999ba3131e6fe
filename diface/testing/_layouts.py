"""Array layouts and edge shapes: the same scenarios with inputs a user may pass in any form.

A `Layout` rearranges an array in memory: a Fortran-ordered or transposed copy, negative strides, a
strided view into a larger buffer, a broadcast view (stride 0: every row the first one), a read-only
array. `layout_scenarios()` applies each layout that fits to every array scenario: to x, to the
tangents, to the `Constant` arrays and, where the layout can be written into, to the `Cache`s, the
`out=` buffers and the `y` of in-place functions. The preparation is made at the scenario's plain
(contiguous) other point, so a prepared call meets the layout for the first time.

`edge_scenarios()` adds the shapes and dtypes that break naive code: 0-d arrays, empty inputs and
outputs, one-element vectors, 3-d arrays, and float32.

>>> from diface.testing import layout_scenarios
>>> sorted({s.layout.name for s in layout_scenarios()})
['Fortran order', 'broadcast view', 'read-only', 'reversed strides', 'strided slice', 'transposed']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._contexts import Constant
from ._scenarios import Scenario, default_scenarios

__all__ = ["LAYOUTS", "Layout", "edge_scenarios", "layout_scenarios"]


@dataclass(frozen=True)
class Layout:
    """A way to hold an array's values in memory.

    `arrange(a)` returns an array in this layout with `a`'s values (a broadcast view repeats the first
    row instead: its values change, so its scenarios' references are taken at the arranged point).
    `writable`: the arranged array can be written into (`out=` buffers, `y`, caches); `fits(shape)`:
    the layout means something for arrays of that shape.
    """

    name: str
    arrange: Callable[[np.ndarray], np.ndarray]
    writable: bool
    fits: Callable[[tuple], bool]

    def __repr__(self) -> str:
        return f"Layout({self.name!r})"

    def hold(self, a: Any, buffer: bool = False) -> Any:
        """`a` in this layout (unchanged for scalars, and for buffers the layout cannot write)."""
        if not isinstance(a, np.ndarray) or not self.fits(a.shape) or (buffer and not self.writable):
            return a
        return self.arrange(a)


def _transposed(a: np.ndarray) -> np.ndarray:
    """The last two axes swapped in memory: a transposed view of a contiguous array."""
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)


def _fortran(a: np.ndarray) -> np.ndarray:
    return np.asfortranarray(a)


def _reversed(a: np.ndarray) -> np.ndarray:
    """Negative strides along the first axis: a reversed view of a reversed copy."""
    return np.ascontiguousarray(a[::-1])[::-1]


def _strided(a: np.ndarray) -> np.ndarray:
    """Every other element along every axis of a buffer twice as large (filled with NaN elsewhere)."""
    big = np.full(tuple(2 * s for s in a.shape), np.nan, dtype=a.dtype)
    view = big[tuple(slice(None, None, 2) for _ in a.shape)]
    view[...] = a
    return view


def _broadcast(a: np.ndarray) -> np.ndarray:
    """A read-only view with stride 0 along the first axis: every row is the first one."""
    return np.broadcast_to(a[:1], a.shape)


def _read_only(a: np.ndarray) -> np.ndarray:
    b = np.array(a, copy=True)
    b.flags.writeable = False
    return b


LAYOUTS: tuple[Layout, ...] = (
    Layout("transposed", _transposed, True, lambda shape: len(shape) >= 2),
    Layout("Fortran order", _fortran, True, lambda shape: len(shape) >= 3),
    Layout("reversed strides", _reversed, True, lambda shape: len(shape) == 1 and shape[0] > 1),
    Layout("strided slice", _strided, True, lambda shape: len(shape) >= 1),
    Layout("broadcast view", _broadcast, False, lambda shape: len(shape) >= 1 and shape[0] > 1),
    Layout("read-only", _read_only, False, lambda shape: len(shape) >= 1),
)


def arranged(layout: Layout | None, a: Any, buffer: bool = False) -> Any:
    """`a` in `layout` (unchanged without one, for scalars, and for buffers a layout cannot write)."""
    return a if layout is None else layout.hold(a, buffer)


def with_layout(scenario: Scenario, layout: Layout) -> Scenario:
    """`scenario` with x and its Constant arrays held in `layout` (the preparation point stays plain)."""
    contexts = tuple(Constant(arranged(layout, c.value)) if isinstance(c, Constant) else c for c in scenario.contexts)
    return dataclasses.replace(
        scenario,
        name=f"{scenario.name}, {layout.name}",
        x=arranged(layout, np.asarray(scenario.x)),
        contexts=contexts,
        layout=layout,
        _bound={},
    )


def layout_scenarios(scenarios: list[Scenario] | None = None) -> list[Scenario]:
    """Every layout that fits x of every array scenario (default: `default_scenarios()` and the 3-d
    ones of `edge_scenarios()`)."""
    if scenarios is None:
        scenarios = default_scenarios() + [s for s in edge_scenarios() if s.name.startswith("3-d")]
    return [
        with_layout(s, layout)
        for s in scenarios
        if np.ndim(s.x) >= 1
        for layout in LAYOUTS
        if layout.fits(np.shape(s.x))
    ]


# -- edge shapes and dtypes ---------------------------------------------------------------------------


def _sin_exp(xp: Any, x: Any) -> Any:
    return xp.sin(x) * xp.exp(x)


def _three(xp: Any, x: Any) -> Any:
    return xp.stack([xp.sin(x), x**3, xp.exp(-x)])


def _twice_sin(xp: Any, x: Any) -> Any:
    return xp.sin(x) * 2


def _sum_squares_plus(xp: Any, x: Any) -> Any:
    return xp.sum(x**2) + 1.5


def _none_of(xp: Any, x: Any) -> Any:
    return x[:0] * 2


def _exp_times(xp: Any, x: Any) -> Any:
    return xp.sum(xp.exp(x) * x)


def _sin_times(xp: Any, x: Any) -> Any:
    return xp.sum(xp.sin(x) * x)


def _tanh_times_first(xp: Any, x: Any) -> Any:
    return xp.tanh(x) * x[:1, ...]  # the array API standard spells out the trailing axes


def _jac_tanh_times_first(x: np.ndarray) -> np.ndarray:
    jac = np.zeros(x.shape + x.shape)
    t = np.tanh(x)
    for a, b, c in np.ndindex(*x.shape):
        jac[a, b, c, a, b, c] += (1 - t[a, b, c] ** 2) * x[0, b, c]
        jac[a, b, c, 0, b, c] += t[a, b, c]
    return jac


def _float32(scenario: Scenario) -> Scenario:
    cast = lambda v: v.astype(np.float32) if isinstance(v, (np.ndarray, np.floating)) else np.float32(v)
    return dataclasses.replace(
        scenario, name=f"{scenario.name}, float32", x=cast(scenario.x), prep_x=cast(scenario.prep_x), _bound={}
    )


def edge_scenarios() -> list[Scenario]:
    """0-d arrays, empty inputs and outputs, a one-element vector, 3-d arrays, and float32 versions of
    a few default scenarios (results in float32, compared within float32 accuracy)."""
    t3 = np.array([[[0.3, -0.7], [1.1, 0.2], [-0.4, 0.9]], [[0.5, 0.1], [-1.2, 0.6], [0.8, -0.3]]])  # (2, 3, 2)
    t3b = np.array([[[-0.5, 0.6], [0.1, 1.3], [-0.8, 0.7]], [[0.2, -0.9], [0.4, 1.0], [-0.6, 0.3]]])
    u3 = np.arange(1.0, 13.0).reshape(2, 2, 3) / 10 - 0.6
    u3b = np.linspace(-0.5, 0.7, 12).reshape(2, 2, 3)
    by_name = {s.name: s for s in default_scenarios()}
    return [
        Scenario(
            "0-d array to scalar",
            _sin_exp,
            np.array(0.7),
            np.array(1.3),
            jacobian=lambda x: np.asarray(np.exp(x) * (np.sin(x) + np.cos(x))),
            second_derivative=lambda x: np.asarray(2 * np.exp(x) * np.cos(x)),
            hessian=lambda x: np.asarray(2 * np.exp(x) * np.cos(x)),
        ),
        Scenario(
            "0-d array to vector",
            _three,
            np.array(0.6),
            np.array(-0.4),
            jacobian=lambda x: np.array([np.cos(x), 3 * x**2, -np.exp(-x)]),
            second_derivative=lambda x: np.array([-np.sin(x), 6 * x, np.exp(-x)]),
        ),
        Scenario("empty to empty", _twice_sin, np.zeros(0), np.zeros(0), jacobian=lambda x: np.zeros((0, 0))),
        Scenario(
            "empty to scalar",
            _sum_squares_plus,
            np.zeros(0),
            np.zeros(0),
            jacobian=lambda x: np.zeros(0),
            hessian=lambda x: np.zeros((0, 0)),
        ),
        Scenario(
            "vector to empty",
            _none_of,
            np.array([0.4, -1.1, 0.8]),
            np.array([1.2, 0.3, -0.6]),
            jacobian=lambda x: np.zeros((0, 3)),
        ),
        Scenario(
            "one-element vector to scalar",
            _exp_times,
            np.array([0.4]),
            np.array([-0.9]),
            jacobian=lambda x: np.exp(x) * (1 + x),
            hessian=lambda x: np.diag(np.exp(x) * (2 + x)),
        ),
        Scenario(
            "3-d to scalar",
            _sin_times,
            t3,
            t3b,
            jacobian=lambda x: np.sin(x) + x * np.cos(x),
            hessian=lambda x: np.diag((2 * np.cos(x) - x * np.sin(x)).ravel()).reshape(x.shape + x.shape),
        ),
        Scenario("3-d to 3-d", _tanh_times_first, u3, u3b, jacobian=_jac_tanh_times_first),
        *(
            _float32(by_name[name])
            for name in ("scalar to scalar", "vector to scalar", "matrix to matrix", "vector to vector, in place")
        ),
    ]
