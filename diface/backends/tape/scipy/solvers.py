"""SciPy's solvers, integrators and optimizers inside f: their iterations run in C (or in SciPy code that
converts every value to a plain array), calling back a function of f's that may compute with traced
values, directly or through what it closes over.

While f is recorded, each such SciPy function (reached through `numpy.hooks` on every call) runs with its
callables wrapped: a callback whose result is a traced value that depends on x or a context is stopped
there with a `NotSupportedError` naming the SciPy function and the user's line, raised from the SciPy
call, whatever SciPy's C code makes of an exception inside a callback (a `SystemError`,
`minpack.error`, ...). The tape cannot differentiate through those iterations; a callback of
constants only (data prepared inside f) runs as usual. `scipy.optimize.newton` is pure Python on
the values it is given and is recorded like any other code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...._errors import NotSupportedError
from ..data.graph import Traced
from ..data.sites import user_location
from ..numpy.hooks import hook
from ..prims.objects import holds_traced

__all__: list[str] = []

_SOLVERS = {
    "scipy.optimize": (
        "least_squares", "leastsq", "curve_fit", "fixed_point", "differential_evolution",
        "basinhopping", "dual_annealing", "shgo", "direct", "newton_krylov", "anderson", "broyden1", "broyden2",
    ),
    "scipy.integrate": ("dblquad", "tplquad", "nquad", "odeint", "solve_bvp"),
}  # fmt: skip


def _variable(r: Any) -> bool:
    """Whether a callback's result holds a traced value that a replay would recompute."""
    if isinstance(r, Traced):
        return bool(r._tape.slots[r._read()].variable)
    if isinstance(r, (list, tuple)):
        return any(_variable(v) for v in r)
    return holds_traced(r)  # an object array holding traced values


def _refusal(name: str, where: str) -> NotSupportedError:
    return NotSupportedError(
        f"AutoTape does not differentiate scipy.{name} (called at {where}): the function it solves, "
        "integrates or optimizes computes with traced values, and SciPy runs its iterations on plain "
        "numbers. Differentiate f with di.AutoFiniteDiff(), or write the iteration with NumPy (a fixed "
        "number of Newton steps, an explicit integrator) so that the tape records it; "
        "scipy.optimize.newton is pure Python and is recorded."
    )


def _solver_rule(name: str) -> Callable:
    def rule(original: Callable, *args: Any, **kwargs: Any) -> Any:
        where = user_location()
        stopped: list[NotSupportedError] = []

        def wrap(cb: Any) -> Any:
            if not callable(cb) or isinstance(cb, type):
                return cb

            def callback(*a: Any, **k: Any) -> Any:
                r = cb(*a, **k)
                if _variable(r):
                    stopped.append(_refusal(name, where))
                    raise stopped[-1]
                return r

            return callback

        try:
            return original(*(wrap(a) for a in args), **{k: wrap(v) for k, v in kwargs.items()})
        except BaseException as error:
            if stopped:
                raise stopped[0] from error
            if any(holds_traced(a) for a in (*args, *kwargs.values())):
                raise _refusal(name, where) from error
            raise

    return rule


for _module, _names in _SOLVERS.items():
    for _name in _names:
        hook(_module, _name, always=True)(lambda qualified=f"{_module[6:]}.{_name}": _solver_rule(qualified))
