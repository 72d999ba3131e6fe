"""`Prepared`: what a preparation made, as data: the flat problem, the backend's kernel, the strict
check, the delivery of results, the codec of a structured call and the settings. The plans
(`diface._call.plan`) and the general path (`diface._call.general`) read it; nothing changes it after
preparation (a copy replaces the kernel: `with_kernel`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._arrays import ArrayOps
from .._kernel import Kernel
from .._optable import Operator
from .._problem import Problem
from .check import Guard
from .deliver import Delivery
from .settings import Settings
from .trees.codec import TreeCodec

__all__ = ["Prepared"]


@dataclass(frozen=True)
class Prepared:
    """One preparation's state (see the module docstring)."""

    op: Operator
    #: the user's f and backend (a structured call's flat problem has an f of its own)
    f: Callable
    backend: Any
    #: the (flat) problem the kernel was prepared for
    problem: Problem
    kernel: Kernel
    #: the strict check; None for a preparation made for one unprepared call (it checks nothing)
    guard: Guard | None
    settings: Settings
    #: the codec between a structured call's trees (or complex arrays, aux, matrix layout) and the flat
    #: problem; None for arrays
    codec: TreeCodec | None
    #: the number of tangents of a tuple of them, None for one tangent or none
    batch: int | None
    #: the tangents the kernel was prepared with (native arrays), for `remake`
    tangents: tuple | None
    #: x came as NumPy (a number, a list): results go back as NumPy
    to_user: bool
    #: prepares the kernel again (`Prep.copy` of a kernel that cannot copy itself)
    remake: Callable[[], Kernel] | None
    delivery: Delivery = field(init=False)
    #: the backend's array operations (the problem's)
    ops: ArrayOps = field(init=False)
    #: the type of the native x the preparation was made with
    native_type: type = field(init=False)
    #: NumPy arguments go to the kernel as they are (it converts them itself)
    takes_numpy: bool = field(init=False)

    def __post_init__(self) -> None:
        problem = self.problem
        y_shape, y_dtype = problem.y_spec
        dtype = problem.ops.result_type(problem.x_dtype, y_dtype)
        order = self.settings.options if self.op.series else 1  # a series operator's options: its order
        delivery = Delivery(self.op, self.kernel, problem.ops, self.to_user, problem.x_shape, y_shape, dtype, order)
        # fields, not properties: the general path reads them on every call
        object.__setattr__(self, "delivery", delivery)
        object.__setattr__(self, "ops", problem.ops)
        object.__setattr__(self, "native_type", type(problem.x))
        object.__setattr__(self, "takes_numpy", self.to_user and self.kernel.accepts_numpy)

    def with_kernel(self, kernel: Kernel) -> Prepared:
        """The same preparation around another kernel (a copy's)."""
        return dataclasses.replace(self, kernel=kernel)
