"""Test doubles written against the backend contract, the way a new engine would be.

`ReverseOnly` has nothing but a pullback (computed as `ty @ J` from finite differences), so every other
operator on it goes through the core's reverse-mode derivations: Jacobians by pullbacks of the output
basis, pushforwards through the Jacobian, reverse-over-reverse and reverse-over-forward Hessians.
`Unavailable` needs a package that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

import diface as di
from diface._backend import Backend
from diface.extend import Kernel, Result


@dataclass(frozen=True)
class ReverseOnly(Backend):
    fd: di.AutoFiniteDiff = field(default_factory=di.AutoFiniteDiff)

    native_modes: ClassVar[frozenset[str]] = frozenset({"reverse"})
    mode: ClassVar[str] = "reverse"
    supports_inplace: ClassVar[bool] = True

    @property
    def accuracy_exponent(self) -> float:  # type: ignore[override]
        return self.fd.accuracy_exponent

    def array_ops(self, x: Any) -> Any:
        return self.fd.array_ops(x)

    def as_outer_of(self, inner: Backend) -> Backend:
        return ReverseOnly(self.fd.as_outer_of(inner))

    def prepare_pullback(self, problem: Any, cotangents: tuple) -> Any:
        jacobian = self.fd.prepare_jacobian(problem)
        y_ndim = len(problem.y_spec[0])

        def pullback(x: Any, cotangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
            value, _, jac = jacobian.run(x, None, cv, y, full)
            return Result(value, result=tuple(np.tensordot(t, jac, axes=y_ndim) for t in cotangents))

        return Kernel(pullback)


@dataclass(frozen=True)
class Unavailable(Backend):
    package: ClassVar[str] = "diface_test_no_such_package"
    extra: ClassVar[str] = "nosuch"
    native_modes: ClassVar[frozenset[str]] = frozenset({"forward"})

    def array_ops(self, x: Any) -> Any:
        raise AssertionError("never reached: availability is checked first")


@dataclass(frozen=True)
class NoInplace(di.AutoFiniteDiff):
    """Finite differences that refuse in-place functions, like an engine without mutation."""

    supports_inplace: ClassVar[bool] = False
