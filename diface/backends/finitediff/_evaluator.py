"""The serial evaluator of `AutoFiniteDiff`: f at one perturbed point at a time, with per-thread scratch."""

from __future__ import annotations

import threading
from typing import Any

from ..._contexts import Cache
from ..._errors import NotSupportedError
from ..._problem import Problem, dtype_of, shape_of

__all__ = ["Evaluator", "Scratch", "check_analytic"]


def check_analytic(ops: Any, point: Any, value: Any) -> None:
    """Raise `NotSupportedError` where f, evaluated at a complex point (a complex step, or central
    differences inside one), returned a real value: f left the complex plane on the way (`np.real`,
    `abs`, `np.angle`, comparisons, a complex intermediate such as `z * conj(z)`). A function that stays
    real for complex x near a real point is not analytic there (unless constant), and the imaginary
    part the complex step reads, zero, is no derivative. This sees the dtype only: where f makes its
    value complex again (a constant of x's dtype times a real result) or writes into a (complex) `y`,
    the complex step relies on f being analytic, as documented."""
    if ops.is_complex(dtype_of(point)) and not ops.is_complex(dtype_of(value)):
        raise NotSupportedError(
            f"AutoFiniteDiff: f returned a real {dtype_of(value)} value at a complex point, so it is not "
            "complex-analytic in x (np.real, abs, np.angle, .real, comparisons, or a complex intermediate such "
            "as z * conj(z)) and the complex step would give 0 for its derivative; use AutoFiniteDiff() "
            "(central differences, also as the outer backend of SecondOrder) or an AD backend"
        )


class Evaluator:
    """Evaluates f at perturbed points for one kernel and forms the difference quotients.

    The scratch an evaluation writes (output buffers of an in-place f, complex caches) belongs to the
    calling thread (`scratch()`), so one preparation serves any number of threads at once.
    """

    def __init__(self, backend: Any, problem: Problem, same_point: bool = False) -> None:
        self.problem = problem
        self.ops = ops = problem.ops
        self.method = backend.method
        # one-sided differences need f(x); the complex step needs it too, to return NaN where f is not
        # finite (the complex extension of f may be finite where f itself is NaN: log(-1 + ih) = i pi)
        self.needs_fx = backend.method in ("forward", "backward", "complex")
        self.fx = None  # f at the point of a same-point preparation
        if same_point and self.needs_fx:
            y = None if problem.y is None else ops.copy(problem.y)
            self.fx = ops.copy(problem.evaluate(problem.x, problem.context_values, y))
        self.y_spec = None
        if problem.inplace:
            y_shape, y_dtype = problem.y_spec
            self.y_spec = (y_shape, ops.complex_dtype(y_dtype) if backend.method == "complex" else y_dtype)
        # complex steps need complex scratch: Cache contents do not matter, so the evaluations at
        # complex points get complex caches of our own instead of the (real) ones passed in
        self.cache_specs = {}
        if backend.method == "complex":
            for i, c in enumerate(problem.contexts):
                if isinstance(c, Cache) and ops.is_native(c.value) and ops.is_floating(dtype_of(c.value)):
                    self.cache_specs[i] = (shape_of(c.value), ops.complex_dtype(dtype_of(c.value)), c.value)
        self._local = threading.local()

    def scratch(self) -> Scratch:
        """The calling thread's scratch buffers (made on its first call)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = Scratch(self)
        return scratch

    def at_point(self, x: Any, cv: tuple, y: Any, full: bool) -> Any:
        """f(x) when the method or the caller needs it (written into y for an in-place f)."""
        if self.fx is not None:  # same point: a fresh copy of the value computed at preparation
            if y is None:
                return self.ops.copy(self.fx)
            self.ops.copyto(y, self.fx)
            return y
        if self.needs_fx or full:
            return self.problem.evaluate(x, cv, y)
        return None

    def finish(self, x: Any, cv: tuple, y: Any, fx: Any) -> None:
        """An in-place f must leave f(x) in y after every call."""
        if y is not None and fx is None:
            self.problem.evaluate(x, cv, y)

    def _value(self, point: Any, cv: tuple, side: int, scratch: Scratch, restore: tuple | None) -> Any:
        buf = scratch.outputs[0 if side > 0 else 1]
        value = self.problem.evaluate(point, cv, buf)
        if buf is None:
            check_analytic(self.ops, point, value)
        if restore is not None:
            flat, i, original = restore
            if buf is None and self.ops.shares_memory(value, point):
                value = self.ops.copy(value)  # f returned a view of the work array we keep mutating
            flat[i] = original
        return value

    def quotient(
        self, method: str, at: Any, fx: Any, step: Any, cv: tuple, scratch: Scratch, restore: tuple | None = None
    ) -> Any:
        """The difference quotient of `method`, where `at(s)` is the point perturbed by `s` steps."""
        if method == "complex":
            # + 0 * f(x): NaN wherever f(x) is not finite, exactly +0 elsewhere
            return self.ops.imag(self._value(at(1), cv, 1, scratch, restore)) / step + 0 * fx
        if method == "central":
            up = self._value(at(1), cv, 1, scratch, restore)
            return (up - self._value(at(-1), cv, -1, scratch, restore)) / step
        if method == "forward":
            return (self._value(at(1), cv, 1, scratch, restore) - fx) / step
        return (fx - self._value(at(-1), cv, -1, scratch, restore)) / step


class Scratch:
    """One thread's buffers: two outputs for an in-place f (a central difference needs both sides at
    once) and the complex caches of complex steps."""

    def __init__(self, evaluator: Evaluator) -> None:
        ops = evaluator.ops
        spec = evaluator.y_spec
        like = evaluator.problem.y
        self.outputs = (None, None) if spec is None else (ops.zeros(*spec, like), ops.zeros(*spec, like))
        self.caches = {i: ops.zeros(shape, dtype, like) for i, (shape, dtype, like) in evaluator.cache_specs.items()}

    def contexts(self, cv: tuple) -> tuple:
        """The context values to evaluate f with at perturbed points."""
        if not self.caches:
            return cv
        return tuple(self.caches.get(i, v) for i, v in enumerate(cv))


def perturbations(ops: Any, flat_x: Any, factor: Any, method: str) -> tuple[Any, Any, Any]:
    """`(up, down, steps)` for the components of `flat_x`: the perturbed values on each side (`up` is
    imaginary for the complex step) and the steps to divide by, the differences actually taken (exactly
    representable), for `method` ("central", "forward", "backward" or "complex")."""
    h = factor * ops.maximum(ops.abs(flat_x), 1.0)
    up = flat_x + 1j * h if method == "complex" else flat_x + h
    down = flat_x - h
    if method == "central":
        steps = up - down
    elif method == "forward":
        steps = up - flat_x
    elif method == "backward":
        steps = flat_x - down
    else:
        steps = h
    return up, down, steps
