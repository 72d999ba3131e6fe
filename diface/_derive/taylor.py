"""Taylor coefficients from nested pushforwards: the derivation every engine without a Taylor mode of
its own gets.

The j-th coefficient along v is gⱼ(x) = dʲ/dtʲ f(x + t·v) at t = 0. g₀ = f, and gⱼ₊₁ is the pushforward
of gⱼ along v with v held fixed inside gⱼ (a `Constant` context): the engine differentiates its own
pushforward kernel, `order` levels deep. Level j runs f about 2ʲ times, so this is for small orders and
engines that have nothing better; an engine with a Taylor mode (truncated polynomial arithmetic, JAX's
`jet`) overrides `Backend.prepare_taylor`.
"""

from __future__ import annotations

from typing import Any

from .._contexts import Constant
from .._errors import NotSupportedError
from .._kernel import Kernel, Result
from .._problem import Problem

__all__ = ["derive_taylor", "inexact_nesting"]

#: the highest order nested inexact derivatives (finite differences) keep any accuracy at
INEXACT_MAX_ORDER = 2


def inexact_nesting(backend: Any, order: int) -> bool:
    """Whether `derive_taylor` refuses `order` on `backend`: an inexact engine's pushforward nested more
    than `INEXACT_MAX_ORDER` levels deep (finite differences of finite differences of ...) has lost every
    digit at the default steps."""
    return backend.accuracy_exponent < 1 and order > INEXACT_MAX_ORDER


def derive_taylor(backend: Any, problem: Problem, tangents: tuple, order: int) -> Kernel:
    """`(d₁, ..., d_order)` along each tangent (see the module docstring), one tangent at a time. Levels
    past the first differentiate a derivative: the engine as configured to differentiate itself
    (`Backend.as_outer_of`: wider finite-difference steps)."""
    if inexact_nesting(backend, order):
        raise NotSupportedError(
            f"{backend!r} has no Taylor mode of its own, and its derivatives are inexact: nesting them {order} "
            f"levels deep loses every digit. Use an exact engine (di.AutoTape(), di.AutoJAX(), ...) or "
            f"di.AutoFiniteDiff() (Richardson extrapolation), or order <= {INEXACT_MAX_ORDER}"
        )
    ops = problem.ops
    y_shape, y_dtype = problem.y_spec
    d_spec = (y_shape, ops.result_type(problem.x_dtype, y_dtype))
    v0 = tangents[0]
    contexts = (Constant(v0), *problem.contexts)
    evaluate = problem.evaluate

    def g0(x: Any, v: Any, *cv: Any) -> Any:
        return evaluate(x, cv)

    levels: list[Kernel] = []
    g, spec = g0, problem.y_spec
    for level in range(order):
        engine = backend if level == 0 else backend.as_outer_of(backend)
        kernel = engine.prepare_pushforward(problem.derived(g, spec, contexts), (v0,))
        levels.append(kernel)
        g, spec = _next_level(kernel), d_spec

    def taylor(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        value = None
        series = []
        for v in tangents:
            coefficients = []
            for j, kernel in enumerate(levels):
                r = kernel.run(x, (v,), (v, *cv), None, full and j == 0 and value is None)
                if r.value is not None and value is None:
                    value = r.value
                coefficients.append(r.result[0])
            series.append(tuple(coefficients))
        if full and value is None:
            value = evaluate(x, cv)
        return Result(value=value if full else None, result=tuple(series))

    return Kernel(taylor)


def _next_level(kernel: Kernel) -> Any:
    """gⱼ₊₁(x, v, *cv): the pushforward of gⱼ along v (v also the context gⱼ holds fixed)."""

    def g(x: Any, v: Any, *cv: Any) -> Any:
        return kernel.result_of(x, (v,), (v, *cv))[0]

    return g
