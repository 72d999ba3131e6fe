"""`AutoArrayAPI`: exact forward mode by dual numbers, over `array_api_strict` arrays, in one file.

The proof that an engine is one file (docs/add-a-backend.md walks through it): written against
`diface`, `diface.extend` and `diface.testing` only, over an array library the core has never heard
of (array-api-strict, the reference implementation of the Python array API standard), it passes the
test kit (tests/test_array_api_backend.py).

`f` is written with `xp`, this module's array namespace: array_api_strict's functions, each taking
`Dual`s as well as arrays. A `Dual(p, t)` is a value `p` with a tangent `t` of the same shape, and its
`__array_namespace__()` is `xp`, so code written against the array API standard
(`xp = x.__array_namespace__()`) is differentiated as it is.

- First order: `prepare_linearize` evaluates f once at `Dual(x, t)` per tangent `t`: J t exactly (to
  rounding). Every first-order operator is the core's derivation of it; there is no reverse mode, so a
  pullback is `t @ J` from a Jacobian of `x.size` pushes.
- Second order: `prepare_second_order` evaluates f at nested duals `Dual(Dual(x, v), Dual(e_i, 0))`,
  whose tangent's tangent is `e_i^T H v`, exactly: `x.size` evaluations per Hessian-vector product.
- Limits: a function of `xp` without a rule raises `NotSupportedError` when a dual reaches it.
  array_api_strict arrays raise `TypeError` rather than defer to a dual on their right, so an array
  that f closes over must stand right of a dual (`x * A`, `xp.multiply(A, x)`, not `A * x`);
  `Constant` arrays reach f as duals with a zero tangent and may stand anywhere.
"""

from __future__ import annotations

import math
import operator
import sys
import types
from dataclasses import dataclass
from typing import Any, ClassVar

import diface as di
from diface.extend import NUMPY_OPS, ArrayOps, Backend, Linearization, Problem, SecondOrderPlan, ops_for
from diface.testing import register_engine


def _strict() -> Any:
    import array_api_strict  # on first use, never at import (the backend contract)

    return array_api_strict


class Dual:
    """A value `p` and its tangent `t`, of one shape (each may be a `Dual`: nested duals)."""

    __slots__ = ("p", "t")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, p: Any, t: Any) -> None:
        self.p, self.t = p, t

    shape = property(lambda self: self.p.shape)
    dtype = property(lambda self: self.p.dtype)
    ndim = property(lambda self: self.p.ndim)
    size = property(lambda self: self.p.size)
    device = property(lambda self: self.p.device)
    mT = property(lambda self: xp.matrix_transpose(self))
    T = property(lambda self: xp.permute_dims(self, tuple(reversed(range(self.ndim)))))

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return xp

    def __repr__(self) -> str:
        return f"Dual({self.p!r}, {self.t!r})"

    def __bool__(self) -> bool:
        return bool(self.p)

    def __getitem__(self, key: Any) -> Dual:
        return Dual(self.p[key], self.t[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        self.p[key] = value.p if isinstance(value, Dual) else value
        self.t[key] = value.t if isinstance(value, Dual) else 0

    __add__ = lambda self, o: xp.add(self, o)
    __radd__ = lambda self, o: xp.add(o, self)
    __sub__ = lambda self, o: xp.subtract(self, o)
    __rsub__ = lambda self, o: xp.subtract(o, self)
    __mul__ = lambda self, o: xp.multiply(self, o)
    __rmul__ = lambda self, o: xp.multiply(o, self)
    __truediv__ = lambda self, o: xp.divide(self, o)
    __rtruediv__ = lambda self, o: xp.divide(o, self)
    __pow__ = lambda self, o: xp.pow(self, o)
    __rpow__ = lambda self, o: xp.pow(o, self)
    __matmul__ = lambda self, o: xp.matmul(self, o)
    __rmatmul__ = lambda self, o: xp.matmul(o, self)
    __neg__ = lambda self: xp.negative(self)
    __pos__ = lambda self: self
    __abs__ = lambda self: xp.abs(self)
    __lt__ = lambda self, o: xp.less(self, o)
    __le__ = lambda self, o: xp.less_equal(self, o)
    __gt__ = lambda self, o: xp.greater(self, o)
    __ge__ = lambda self, o: xp.greater_equal(self, o)
    __eq__ = lambda self, o: xp.equal(self, o)  # type: ignore[assignment]
    __ne__ = lambda self, o: xp.not_equal(self, o)  # type: ignore[assignment]


def _primal(a: Any) -> Any:
    """`a` without its tangents (at every level of nesting)."""
    while isinstance(a, Dual):
        a = a.p
    return a


def _tangent(a: Any) -> Any:
    """The tangent of `a`: zero for anything that does not depend on x."""
    return a.t if isinstance(a, Dual) else xp.zeros_like(a)


def _fit(t: Any, like: Any) -> Any:
    """A tangent with the shape and dtype of the value `like` (broadcast, promoted)."""
    t = t if t.dtype == like.dtype else xp.astype(t, like.dtype)
    return t if t.shape == like.shape else xp.broadcast_to(t, like.shape)


# -- the namespace: array_api_strict's functions with derivative rules --------------------------------
# Rules are written with xp, so that their arguments may be duals themselves (nested duals).

#: elementwise f: df/dp from the value p and the result r = f(p)
_UNARY = {
    "sin": lambda p, r: xp.cos(p),
    "cos": lambda p, r: -xp.sin(p),
    "tan": lambda p, r: 1 + r * r,
    "exp": lambda p, r: r,
    "expm1": lambda p, r: r + 1,
    "log": lambda p, r: 1 / p,
    "log1p": lambda p, r: 1 / (1 + p),
    "sqrt": lambda p, r: 0.5 / r,
    "sinh": lambda p, r: xp.cosh(p),
    "cosh": lambda p, r: xp.sinh(p),
    "tanh": lambda p, r: 1 - r * r,
    "atan": lambda p, r: 1 / (1 + p * p),
    "abs": lambda p, r: xp.sign(p),
    "square": lambda p, r: 2 * p,
}
#: f(a, b): its operator (for arrays and numbers), the tangent from a's tangent ta, from b's tangent tb
_BINARY = {
    "add": (operator.add, lambda ta, a, b, r: ta, lambda tb, a, b, r: tb),
    "subtract": (operator.sub, lambda ta, a, b, r: ta, lambda tb, a, b, r: xp.negative(tb)),
    "multiply": (operator.mul, lambda ta, a, b, r: xp.multiply(ta, b), lambda tb, a, b, r: xp.multiply(a, tb)),
    "matmul": (operator.matmul, lambda ta, a, b, r: xp.matmul(ta, b), lambda tb, a, b, r: xp.matmul(a, tb)),
    "divide": (
        operator.truediv,
        lambda ta, a, b, r: xp.divide(ta, b),
        lambda tb, a, b, r: xp.negative(xp.multiply(xp.divide(r, b), tb)),
    ),
    "pow": (
        operator.pow,
        lambda ta, a, b, r: xp.multiply(xp.multiply(b, xp.pow(a, b - 1)), ta),
        lambda tb, a, b, r: xp.multiply(xp.multiply(r, xp.log(a)), tb),
    ),
}
#: linear in their (first) array argument: applied to value and tangent alike
_LINEAR = (
    "astype broadcast_to cumulative_sum expand_dims flip matrix_transpose mean moveaxis negative "
    "permute_dims positive repeat reshape roll squeeze sum take tile"
).split()
#: linear in a sequence of arrays
_JOINED = ("concat", "stack")
#: piecewise constant, or not about values: computed on the values alone, no tangent
_VALUES_ONLY = (
    "argmax argmin argsort ceil empty_like equal floor full_like greater greater_equal isfinite isinf "
    "isnan less less_equal nonzero not_equal ones_like round sign signbit trunc zeros_like"
).split()


def _unary(name: str, rule: Any) -> Any:
    def fn(a: Any, /) -> Any:
        if not isinstance(a, Dual):
            return getattr(_strict(), name)(a)
        r = getattr(xp, name)(a.p)
        return Dual(r, xp.multiply(rule(a.p, r), a.t))

    return fn


def _binary(name: str, plain: Any, da: Any, db: Any) -> Any:
    def fn(a: Any, b: Any, /) -> Any:
        if not (isinstance(a, Dual) or isinstance(b, Dual)):
            return plain(a, b)  # the operator: numbers on either side, whatever the standard's version
        (a, ta), (b, tb) = _parts(a), _parts(b)
        r = getattr(xp, name)(a, b)
        parts = [rule(t, a, b, r) for rule, t in ((da, ta), (db, tb)) if t is not None]
        return Dual(r, _fit(parts[0] if len(parts) == 1 else xp.add(*parts), r))

    return fn


def _parts(a: Any) -> tuple[Any, Any]:
    """(value, tangent) of a dual, (a, None) for anything else."""
    return (a.p, a.t) if isinstance(a, Dual) else (a, None)


def _linear(name: str) -> Any:
    def fn(a: Any, /, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(a, Dual):
            return getattr(_strict(), name)(a, *args, **kwargs)
        f = getattr(xp, name)
        return Dual(f(a.p, *args, **kwargs), f(a.t, *args, **kwargs))

    return fn


def _joined(name: str) -> Any:
    def fn(arrays: Any, /, **kwargs: Any) -> Any:
        if not any(isinstance(a, Dual) for a in arrays):
            return getattr(_strict(), name)(arrays, **kwargs)
        f = getattr(xp, name)
        return Dual(f([_parts(a)[0] for a in arrays], **kwargs), f([_tangent(a) for a in arrays], **kwargs))

    return fn


def _values_only(name: str) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        return getattr(_strict(), name)(*map(_primal, args), **{k: _primal(v) for k, v in kwargs.items()})

    return fn


def where(condition: Any, a: Any, b: Any, /) -> Any:
    if not (isinstance(a, Dual) or isinstance(b, Dual)):
        return _strict().where(_primal(condition), a, b)
    (a, ta), (b, tb) = _parts(a), _parts(b)
    values = xp.where(condition, a, b)
    zero = lambda v: xp.zeros_like(v) if hasattr(v, "shape") else 0.0  # v a number: f relies on 2024.12 anyway
    return Dual(values, _fit(xp.where(condition, zero(a) if ta is None else ta, zero(b) if tb is None else tb), values))


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Any:
    if isinstance(obj, Dual):
        return obj if dtype is None else xp.astype(obj, dtype)
    return _strict().asarray(obj, dtype=dtype, device=device, copy=copy)


def _anything_else(name: str) -> Any:
    """Any other name of array_api_strict; its functions refuse duals (they have no rule)."""
    attr = getattr(_strict(), name)  # AttributeError for a name array_api_strict does not have
    if not callable(attr) or isinstance(attr, type):
        return attr

    def fn(*args: Any, **kwargs: Any) -> Any:
        items = [*args, *kwargs.values(), *(v for a in args if isinstance(a, (list, tuple)) for v in a)]
        if any(isinstance(v, Dual) for v in items):
            raise di.NotSupportedError(f"AutoArrayAPI has no derivative rule for xp.{name}")
        return attr(*args, **kwargs)

    return fn


xp = types.ModuleType(f"{__name__}.xp", "array_api_strict for functions differentiated by AutoArrayAPI")
xp.__getattr__ = _anything_else  # type: ignore[attr-defined]  # PEP 562: names without a rule
for _name, _rule in _UNARY.items():
    setattr(xp, _name, _unary(_name, _rule))
for _name, (_plain, _da, _db) in _BINARY.items():
    setattr(xp, _name, _binary(_name, _plain, _da, _db))
for _name in _LINEAR:
    setattr(xp, _name, _linear(_name))
for _name in _JOINED:
    setattr(xp, _name, _joined(_name))
for _name in _VALUES_ONLY:
    setattr(xp, _name, _values_only(_name))
xp.where, xp.asarray = where, asarray
sys.modules[xp.__name__] = xp  # importable by name: the test kit binds its scenarios to it


# -- the engine -----------------------------------------------------------------------------------------
def _runner(problem: Problem) -> Any:
    """`run(x, cv, depth)`: f at a dual x of `depth` levels, with dual buffers for y and the Cache
    arrays (fresh each call: threads share nothing) and the Constant arrays as duals; f's output."""
    f, ops, y_spec = problem.f, problem.ops, problem.y_spec if problem.inplace else None
    caches = tuple(isinstance(c, di.Cache) for c in problem.contexts)

    def buffer(shape: tuple, dtype: Any, depth: int) -> Any:
        if depth == 0:
            return xp.zeros(shape, dtype=dtype)
        return Dual(buffer(shape, dtype, depth - 1), buffer(shape, dtype, depth - 1))

    def lift(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: lift(u) for k, u in v.items()}
        if isinstance(v, (list, tuple)):
            items = [lift(u) for u in v]
            return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)
        return Dual(v, xp.zeros_like(v)) if ops.is_native(v) and ops.is_floating(v.dtype) else v

    def run(x: Any, cv: tuple, depth: int) -> Any:
        args = [buffer(v.shape, v.dtype, depth) if c and ops.is_native(v) else lift(v) for v, c in zip(cv, caches)]
        if y_spec is None:
            return f(x, *args)
        y = buffer(*y_spec, depth)
        f(y, x, *args)
        return y

    return run


class _Pushes(Linearization):
    """f linearized at x: each push evaluates f once at `Dual(x, t)` per tangent `t`."""

    shareable = True  # keeps nothing between pushes: threads may share it

    def __init__(self, run: Any, x: Any, cv: tuple, value: Any) -> None:
        self.run, self.x, self.cv, self.value = run, x, cv, value

    def push(self, tangents: Any) -> Any:
        return xp.stack([_tangent(self.run(Dual(self.x, t), self.cv, 1)) for t in xp.unstack(tangents)])


class _NestedDuals(SecondOrderPlan):
    """f's first derivative D (its gradient for a scalar y, its derivative for a scalar x) linearized
    at x by nested duals (the core derives hvp, hessian and second_derivative from it)."""

    mode = "forward"

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem)
        self.run = _runner(problem)
        x_shape = problem.x_shape
        n = math.prod(x_shape)
        self.basis = xp.unstack(xp.reshape(xp.eye(n, dtype=problem.x_dtype), (n, *x_shape)))
        self.shape = problem.y_spec[0] + x_shape  # D's shape: one of the two is ()
        self.dtype = problem.ops.result_type(problem.x_dtype, problem.y_spec[1])

    def linearize(self, x: Any, cv: tuple) -> Linearization:
        return _DerivativeMap(self, x, cv)

    def columns(self, outs: list) -> Any:
        """D (or a product with it) from one output per basis vector e_i (its column e_i)."""
        if not outs:
            return xp.zeros(self.shape, dtype=self.dtype)
        return xp.reshape(xp.stack(outs, axis=-1), self.shape)


class _DerivativeMap(Linearization):
    """D at x (`value`) from f at `Dual(x, e_i)`; `push(v)`: H v from f at `Dual(Dual(x, v), Dual(e_i, 0))`."""

    shareable = True

    def __init__(self, plan: _NestedDuals, x: Any, cv: tuple) -> None:
        self.plan, self.x, self.cv = plan, x, cv
        outs = [plan.run(Dual(x, e), cv, 1) for e in plan.basis]
        self.primal = _primal(outs[0]) if outs else plan.problem.evaluate(x, cv)
        self.value = plan.columns([_tangent(out) for out in outs])

    def push(self, tangents: Any) -> Any:
        plan, x, cv = self.plan, self.x, self.cv
        nested = lambda v, e: plan.run(Dual(Dual(x, v), Dual(e, xp.zeros_like(e))), cv, 2)
        return xp.stack(
            [plan.columns([_tangent(_tangent(nested(v, e))) for e in plan.basis]) for v in xp.unstack(tangents)]
        )


@dataclass(frozen=True)
class AutoArrayAPI(Backend):
    """Exact forward mode by dual numbers for functions written with `xp` (this module's namespace),
    on array_api_strict arrays; NumPy input is converted, and results come back as NumPy.

    Example:
        >>> import numpy as np, diface as di
        >>> from array_api_backend import AutoArrayAPI, xp
        >>> di.gradient(lambda x: xp.sum(x**3), AutoArrayAPI(), np.array([1.0, 2.0]))
        array([ 3., 12.])
    """

    native_modes: ClassVar[frozenset[str]] = frozenset({"forward"})
    mode: ClassVar[str] = "forward"
    supports_inplace: ClassVar[bool] = True
    package: ClassVar[str] = "array_api_strict"
    extra: ClassVar[str] = "test"

    def array_ops(self, x: Any) -> ArrayOps:
        ops = ops_for(_strict().asarray(0.0))  # the core's generic namespace for array API arrays
        if ops_for(x) not in (ops, NUMPY_OPS):
            raise di.ArgumentError(
                f"AutoArrayAPI takes array_api_strict arrays, NumPy arrays and numbers, not {type(x).__name__}"
            )
        return ops

    def prepare_linearize(self, problem: Problem, mode: str) -> Any:
        if mode != "forward":
            return None  # no reverse mode: the core pulls back through the Jacobian
        run = _runner(problem)
        return lambda x, cv, y: _Pushes(run, x, cv, problem.evaluate(x, cv, y))

    def prepare_second_order(self, inner: Backend, problem: Problem) -> SecondOrderPlan:
        if not isinstance(inner, AutoArrayAPI):
            raise di.NotSupportedError(f"{self!r} differentiates its own derivatives only, not those of {inner!r}")
        return _NestedDuals(problem)

    def check_complex(self, where: str) -> None:
        # the core holds complex x and y as real pairs, made with xp.real and xp.imag: no dual rules here
        raise di.NotSupportedError(f"{where}: AutoArrayAPI's dual numbers are real: no complex inputs or outputs")


register_engine(AutoArrayAPI, name="arrayapi", namespace=xp.__name__)
