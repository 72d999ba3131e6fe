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

import numpy as np

from .._contexts import Constant
from .._errors import NotSupportedError
from .._kernel import Kernel, Result
from .._problem import Problem

__all__ = ["derive_taylor", "inexact_nesting", "nesting_failure"]

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
    reason = nesting_failure(backend, problem.ops, problem.x) if order > 1 else None
    if reason is not None:
        raise NotSupportedError(
            f"{backend!r} has no Taylor mode of its own, and the core's (its pushforward differentiated by itself, "
            f"level by level) does not work on it: {reason}. An engine author implements Backend.prepare_taylor; "
            "a user takes another engine (di.AutoTape(), di.AutoJAX(), di.AutoFiniteDiff() up to order 4)"
        )
    evaluate = problem.evaluate
    levels = _nested_levels(backend, problem, tangents[0], order)

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


def _nested_levels(backend: Any, problem: Problem, v0: Any, order: int) -> list[Kernel]:
    """The kernels of g₁ .. g_order (see the module docstring), prepared along `v0`."""
    ops = problem.ops
    y_shape, y_dtype = problem.y_spec
    d_spec = (y_shape, ops.result_type(problem.x_dtype, y_dtype))
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
    return levels


#: (backend, array library) -> why the nested derivation fails there, or None: probed once
_PROBED: dict[tuple, str | None] = {}


def nesting_failure(backend: Any, ops: Any, like: Any) -> str | None:
    """Why the engine's pushforward cannot be differentiated by itself (None: it can), from a probe made
    once per backend and array library: the second coefficient of x³ along v must be 6 x v². An engine
    whose kernels cannot take its own traced values fails there (an exception), or gives wrong numbers
    (a kernel that drops the outer tangent gives zeros), instead of in a user's call."""
    try:
        key: tuple | None = (backend, ops.name)
        hash(key)
    except TypeError:  # a backend holding an unhashable setting: probed every time
        key = None
    if key is not None and key in _PROBED:
        return _PROBED[key]
    reason = _probe(backend, ops, like)
    if key is not None:
        _PROBED[key] = reason
    return reason


def _probe(backend: Any, ops: Any, like: Any) -> str | None:
    dtype = getattr(like, "dtype", None)
    x_np, v_np = np.array([0.5, -1.5]), np.array([1.0, 2.0])

    def native(a: np.ndarray) -> Any:
        b = ops.asarray(a, like=like)
        return b if dtype is None else ops.astype(b, dtype)

    x, v = native(x_np), native(v_np)
    problem = Problem(lambda x: x * x * x, x, (), None, ops, y_spec=((2,), dtype if dtype is not None else x.dtype))
    try:
        kernel = _nested_levels(backend, problem, v, 2)[1]
        d2 = np.asarray(ops.to_numpy(kernel.result_of(x, (v,), (v,))[0]), dtype=np.float64)
    except Exception as e:  # any failure of the probe is the answer
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    want = 6 * x_np * v_np**2
    if not np.allclose(d2, want, rtol=1e-4, atol=1e-6):
        return f"the probe's second coefficient of x³ came out {d2.tolist()}, not {want.tolist()}"
    return None


def _next_level(kernel: Kernel) -> Any:
    """gⱼ₊₁(x, v, *cv): the pushforward of gⱼ along v (v also the context gⱼ holds fixed)."""

    def g(x: Any, v: Any, *cv: Any) -> Any:
        return kernel.result_of(x, (v,), (v, *cv))[0]

    return g
