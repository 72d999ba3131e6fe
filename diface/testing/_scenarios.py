"""Scenarios: test functions written once for every engine, with analytic reference derivatives."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._contexts import Cache, Constant, Context
from .._errors import NotSupportedError

__all__ = ["Refusal", "Scenario", "default_scenarios"]


@dataclass(frozen=True)
class Refusal:
    """An operator every backend must refuse on a scenario: each call and preparation raises `error`
    (for `reason`); a number, right or wrong, is a failure."""

    reason: str
    error: type[Exception] = NotSupportedError


@dataclass(frozen=True, eq=False)
class Scenario:
    """One function with its analytic derivatives, a point to differentiate at and another to prepare at.

    `f` is written once against an array namespace `xp` (numpy, torch, jax.numpy, autograd.numpy):
    `f(xp, x, *contexts)`, or `f(xp, y, x, *contexts)` writing into `y` when `inplace`. `bind(xp)` gives
    the plain function a backend differentiates.

    References are NumPy functions of `(x, *context_values)`: `jacobian` (shape `y.shape + x.shape`),
    `hessian` (scalar `y`), `second_derivative` (scalar `x`). Every operator's expected result follows
    from them: a gradient is the Jacobian of a scalar output, a pushforward `J @ t`, and so on.

    `contexts` are used at the call, `prep_contexts` (same kinds and shapes, other values) at the
    preparation, like `x` and `prep_x`.
    """

    name: str
    f: Callable[..., Any]
    x: Any
    prep_x: Any
    jacobian: Callable[..., np.ndarray]
    hessian: Callable[..., np.ndarray] | None = None
    second_derivative: Callable[..., np.ndarray] | None = None
    #: `(x, v, *contexts) -> [d1, ..., d_TAYLOR_ORDER]`: the derivatives of f(x + t·v) at t = 0
    taylor: Callable[..., list] | None = None
    contexts: tuple[Context, ...] = ()
    prep_contexts: tuple[Context, ...] = ()
    inplace: bool = False
    #: the function writes into a Cache or into y: needs mutable arrays
    mutates: bool = False
    #: fixed checks beyond the analytic Jacobian: (operator, tangent, expected result)
    probes: tuple = ()
    #: for structural scenarios: the family (where, cat, narrow, clamp) and the input differentiated
    family: str | None = None
    role: str | None = None
    #: how x, tangents, Constant arrays and (where it can be written) buffers are held in memory
    #: (see `diface.testing.layout_scenarios`); None: plain contiguous arrays
    layout: Any = None
    #: what f uses that some engines cannot differentiate: "complex" (complex values between real x and
    #: real f(x)), "fft" (`xp.fft`); engines known to raise `NotSupportedError` there are registered
    #: with `diface.testing.register_unsupported`
    needs: frozenset[str] = frozenset()
    #: operators every backend must refuse (operator -> `Refusal`): the kit checks that they raise
    refuses: Mapping[str, Refusal] = field(default_factory=dict)
    _bound: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"Scenario({self.name!r})"

    def bind(self, xp: Any) -> Callable[..., Any]:
        """The function of `x` (and contexts) written with `xp`; the same object on every call."""
        fn = self._bound.get(xp)
        if fn is None:
            f = self.f

            def fn(*args: Any) -> Any:
                return f(xp, *args)

            fn.__name__ = fn.__qualname__ = self.name.replace(" ", "_")
            self._bound[xp] = fn
        return fn

    # -- reference results ---------------------------------------------------------------------
    def context_values(self, prep: bool = False) -> tuple:
        return tuple(c.value for c in (self.prep_contexts if prep else self.contexts))

    def value(self, x: Any = None, prep: bool = False) -> np.ndarray:
        x = self.x if x is None else x
        cv = self.context_values(prep)
        if self.inplace:
            y = np.zeros(self.y_shape, self.dtype)
            self.f(np, y, np.asarray(x), *cv)
            return y
        return np.asarray(self.f(np, np.asarray(x), *_fresh(cv)))

    @property
    def x_shape(self) -> tuple:
        return np.shape(self.x)

    @property
    def dtype(self) -> np.dtype:
        """The floating-point dtype of x (the precision results are checked to)."""
        return np.result_type(self.x)

    def arrange(self, a: Any, buffer: bool = False) -> Any:
        """`a` held in the scenario's layout (as it is without one); `buffer`: `a` will be written into."""
        return a if self.layout is None else self.layout.hold(a, buffer)

    def fresh_x(self) -> Any:
        """A new copy of x for one call, in the scenario's layout."""
        if np.ndim(self.x) == 0:
            return self.x
        return self.arrange(np.array(self.x, copy=True))

    @property
    def y_shape(self) -> tuple:
        jac = self.jacobian(self.x, *self.context_values())
        return np.shape(jac)[: np.ndim(jac) - len(self.x_shape)]

    def make_contexts(self, prep: bool = False) -> tuple[Context, ...]:
        """Fresh contexts for one call: Constants as given, Caches as new arrays full of garbage (NaN),
        which a correct backend never lets reach the results."""
        caches = lambda shape: np.full(shape, np.nan) if prep else self.arrange(np.full(shape, np.nan), buffer=True)
        return tuple(
            Cache(caches(np.shape(c.value))) if isinstance(c, Cache) else c
            for c in (self.prep_contexts if prep else self.contexts)
        )

    @property
    def scalar_x(self) -> bool:
        return self.x_shape == ()

    @property
    def scalar_y(self) -> bool:
        return self.y_shape == ()

    def refusals(self) -> dict[str, Refusal]:
        """The operators every backend must refuse here, with why and the error expected."""
        return dict(self.refuses)

    def result_precision(self) -> np.dtype | None:
        """The real dtype whose real or complex counterpart results must have (None: not checked)."""
        return None

    def first_order_operators(self) -> list[str]:
        """The first-order operators that apply to this scenario's shapes."""
        ops = ["pushforward", "pullback", "jacobian"]
        if self.scalar_x:
            ops.append("derivative")
        if self.scalar_y:
            ops.append("gradient")
        return ops

    def operators(self) -> list[str]:
        """The operators that apply to this scenario (those it must refuse included)."""
        ops = self.first_order_operators()
        if not self.inplace:
            if self.scalar_y and self.hessian is not None:
                ops += ["hvp", "hessian"]
            if self.scalar_x and self.second_derivative is not None:
                ops.append("second_derivative")
            if self.taylor is not None:
                ops.append("taylor")
            if self.scalar_y and self.hessian is not None:
                ops.append("laplacian")
        return ops + [op for op in self.refuses if op not in ops]

    def expected(self, op: str, x: Any = None, tangents: tuple = ()) -> tuple:
        """The reference results of `op`'s full variant at `x`, as a tuple (without the value)."""
        x = self.x if x is None else x
        cv = self.context_values()
        jac = self.jacobian(x, *cv)
        xn, yn = len(self.x_shape), len(jac.shape) - len(self.x_shape)
        if op in ("derivative", "gradient", "jacobian"):
            return (jac,)
        if op == "pushforward":
            return (tuple(np.tensordot(jac, t, axes=xn) for t in tangents),)
        if op == "pullback":
            return (tuple(np.tensordot(t, jac, axes=yn) for t in tangents),)
        if op in ("hessian", "hvp"):
            assert self.hessian is not None, "no Hessian reference (`operators` does not list hessian, hvp)"
            hess = self.hessian(x, *cv)
            if op == "hessian":
                return (jac, hess)
            return (jac, tuple(np.tensordot(hess, t, axes=xn) for t in tangents))
        if op == "second_derivative":
            assert self.second_derivative is not None, "no second-derivative reference"
            return (jac, self.second_derivative(x, *cv))
        if op == "taylor":
            taylor = self.taylor
            assert taylor is not None, "no Taylor reference"
            return (tuple(tuple(np.asarray(d) for d in taylor(x, t, *cv)) for t in tangents),)
        if op == "laplacian":
            assert self.hessian is not None, "no Hessian reference"
            n = int(np.prod(self.x_shape))
            return (jac, np.asarray(np.trace(np.reshape(self.hessian(x, *cv), (n, n)))))
        raise KeyError(op)


def _fresh(values: tuple) -> tuple:
    """Copies of array context values (a reference evaluation must not write into the scenario's caches)."""
    return tuple(np.array(v) if isinstance(v, np.ndarray) else v for v in values)


def _const(xp: Any, a: np.ndarray, like: Any) -> Any:
    """A constant array in the namespace and dtype of `like`."""
    return xp.asarray(a, dtype=like.dtype)


_B = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]])  # (3, 2)

#: the order of the kit's Taylor checks
TAYLOR_ORDER = 3


def _sin_k(a: Any, k: int) -> Any:
    """The k-th derivative of sin at a."""
    return np.sin(a + k * np.pi / 2)


def _tanh_k(a: np.ndarray, k: int) -> np.ndarray:
    """The k-th derivative of tanh at a (k <= 3)."""
    t = np.tanh(a)
    return [t, 1 - t**2, -2 * t * (1 - t**2), -2 * (1 - t**2) * (1 - 3 * t**2)][k]


def _orders() -> range:
    return range(1, TAYLOR_ORDER + 1)


def _taylor_scalar_to_scalar(x: Any, v: Any) -> list:
    return [v**k * 2 ** (k / 2) * np.exp(x) * np.sin(x + k * np.pi / 4) for k in _orders()]


def _taylor_scalar_to_vector(x: Any, v: Any) -> list:
    powers = [3 * x**2, 6 * x, 6.0]
    return [v**k * np.array([_sin_k(x, k), powers[k - 1], (-1) ** k * np.exp(-x)]) for k in _orders()]


def _taylor_vector_to_scalar(x: np.ndarray, v: np.ndarray) -> list:
    square = [x**2, 2 * x * v, 2 * v**2, 0 * x]  # the derivatives of (x + t v)²
    product = [v[0] * x[1] + x[0] * v[1], 2 * v[0] * v[1], 0.0]
    return [
        np.sum([math.comb(k, j) * _sin_k(x, j) * v**j * square[k - j] for j in range(k + 1)]) + product[k - 1]
        for k in _orders()
    ]


def _taylor_vector_to_vector(x: np.ndarray, v: np.ndarray) -> list:
    a, b, c, d = x[:3], v[:3], x[1:], v[1:]
    return [_sin_k(a, k) * b**k * c + k * _sin_k(a, k - 1) * b ** (k - 1) * d for k in _orders()]


def _taylor_matrix_to_matrix(x: np.ndarray, v: np.ndarray) -> list:
    return [(_tanh_k(x, k) * v**k) @ _B for k in _orders()]


def _taylor_with_constants(x: np.ndarray, v: np.ndarray, a: Any, w: Any) -> list:
    return [np.asarray(a * np.sum(w * _sin_k(x, k) * v**k)) for k in _orders()]


def _scalar_to_scalar(xp: Any, x: Any) -> Any:
    return xp.sin(x) * xp.exp(x)


def _scalar_to_vector(xp: Any, x: Any) -> Any:
    return xp.stack([xp.sin(x), x**3, xp.exp(-x)])


def _scalar_to_vector_inplace(xp: Any, y: Any, x: Any) -> None:
    y[...] = _scalar_to_vector(xp, x)


def _vector_to_scalar(xp: Any, x: Any) -> Any:
    return xp.sum(xp.sin(x) * x**2) + x[0] * x[1]


def _vector_to_vector(xp: Any, x: Any) -> Any:
    return xp.sin(x[:3]) * x[1:]


def _vector_to_vector_inplace(xp: Any, y: Any, x: Any) -> None:
    y[...] = _vector_to_vector(xp, x)


def _vector_to_matrix(xp: Any, x: Any) -> Any:
    return x[:, None] * xp.exp(x)[None, :]


def _matrix_to_scalar(xp: Any, x: Any) -> Any:
    return xp.sum(x**3) / 3 + xp.sum(x[0, ...] * x[1, ...])  # x[0, ...]: the array API has no x[0] of a matrix


def _matrix_to_matrix(xp: Any, x: Any) -> Any:
    return xp.tanh(x) @ _const(xp, _B, x)


def _matrix_to_matrix_inplace(xp: Any, y: Any, x: Any) -> None:
    y[...] = _matrix_to_matrix(xp, x)


def _with_constants(xp: Any, x: Any, a: Any, w: Any) -> Any:
    return a * xp.sum(w * xp.sin(x))


def _with_cache(xp: Any, x: Any, buf: Any) -> Any:
    buf[...] = x**2  # overwritten before it is read: its initial contents must not matter
    return xp.sum(xp.sin(buf))


def _vector_with_cache(xp: Any, x: Any, buf: Any) -> Any:
    buf[...] = xp.sin(x)
    return buf * x


def _jac_vector_to_vector(x: np.ndarray) -> np.ndarray:
    jac = np.zeros((3, 4))
    for i in range(3):
        jac[i, i] = np.cos(x[i]) * x[i + 1]
        jac[i, i + 1] = np.sin(x[i])
    return jac


def _jac_vector_to_matrix(x: np.ndarray) -> np.ndarray:
    n = x.size
    e = np.exp(x)
    jac = np.zeros((n, n, n))
    for i in range(n):
        for j in range(n):
            jac[i, j, i] += e[j]
            jac[i, j, j] += x[i] * e[j]
    return jac


def _jac_matrix_to_matrix(x: np.ndarray) -> np.ndarray:
    d = 1 - np.tanh(x) ** 2  # (2, 3)
    jac = np.zeros((2, 2, 2, 3))
    for i in range(2):
        for k in range(2):
            jac[i, k, i, :] = d[i, :] * _B[:, k]
    return jac


def _hess_vector_to_scalar(x: np.ndarray) -> np.ndarray:
    h = np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x))
    h[0, 1] += 1.0
    h[1, 0] += 1.0
    return h


def _hess_matrix_to_scalar(x: np.ndarray) -> np.ndarray:
    h = np.diag(2 * x.ravel()).reshape(2, 3, 2, 3)
    for j in range(3):
        h[0, j, 1, j] += 1.0
        h[1, j, 0, j] += 1.0
    return h


def default_scenarios() -> list[Scenario]:
    """Scalar and array inputs and outputs (vectors and matrices), in-place functions, `Constant` and
    `Cache` contexts; each with a second point to prepare at."""
    v4 = np.array([0.4, -1.1, 0.8, 1.7])
    v4b = np.array([1.2, 0.3, -0.6, 0.9])
    m23 = np.array([[0.3, -0.7, 1.1], [0.9, 0.2, -0.4]])
    m23b = np.array([[-0.5, 0.6, 0.1], [1.3, -0.8, 0.7]])
    v3 = np.array([0.5, -0.3, 0.8])
    v3b = np.array([-0.2, 0.9, 0.4])
    w = np.array([0.5, -1.0, 2.0, 1.5])
    return [
        Scenario(
            "scalar to scalar",
            _scalar_to_scalar,
            0.7,
            1.3,
            jacobian=lambda x: np.asarray(np.exp(x) * (np.sin(x) + np.cos(x))),
            second_derivative=lambda x: np.asarray(2 * np.exp(x) * np.cos(x)),
            hessian=lambda x: np.asarray(2 * np.exp(x) * np.cos(x)),
            taylor=_taylor_scalar_to_scalar,
        ),
        Scenario(
            "scalar to vector",
            _scalar_to_vector,
            0.6,
            -0.4,
            jacobian=lambda x: np.array([np.cos(x), 3 * x**2, -np.exp(-x)]),
            second_derivative=lambda x: np.array([-np.sin(x), 6 * x, np.exp(-x)]),
            taylor=_taylor_scalar_to_vector,
        ),
        Scenario(
            "vector to scalar",
            _vector_to_scalar,
            v4,
            v4b,
            jacobian=lambda x: 2 * x * np.sin(x) + x**2 * np.cos(x) + np.array([x[1], x[0], 0.0, 0.0]),
            hessian=_hess_vector_to_scalar,
            taylor=_taylor_vector_to_scalar,
        ),
        Scenario(
            "vector to vector",
            _vector_to_vector,
            v4,
            v4b,
            jacobian=_jac_vector_to_vector,
            taylor=_taylor_vector_to_vector,
        ),
        Scenario("vector to matrix", _vector_to_matrix, v3, v3b, jacobian=_jac_vector_to_matrix),
        Scenario(
            "matrix to scalar",
            _matrix_to_scalar,
            m23,
            m23b,
            jacobian=lambda x: x**2 + np.stack([x[1], x[0]]),
            hessian=_hess_matrix_to_scalar,
        ),
        Scenario(
            "matrix to matrix",
            _matrix_to_matrix,
            m23,
            m23b,
            jacobian=_jac_matrix_to_matrix,
            taylor=_taylor_matrix_to_matrix,
        ),
        Scenario(
            "scalar to vector, in place",
            _scalar_to_vector_inplace,
            0.6,
            -0.4,
            jacobian=lambda x: np.array([np.cos(x), 3 * x**2, -np.exp(-x)]),
            inplace=True,
            mutates=True,
        ),
        Scenario(
            "vector to vector, in place",
            _vector_to_vector_inplace,
            v4,
            v4b,
            jacobian=_jac_vector_to_vector,
            inplace=True,
            mutates=True,
        ),
        Scenario(
            "matrix to matrix, in place",
            _matrix_to_matrix_inplace,
            m23,
            m23b,
            jacobian=_jac_matrix_to_matrix,
            inplace=True,
            mutates=True,
        ),
        Scenario(
            "vector to scalar, Constant contexts",
            _with_constants,
            v4,
            v4b,
            jacobian=lambda x, a, w: a * w * np.cos(x),
            hessian=lambda x, a, w: np.diag(-a * w * np.sin(x)),
            taylor=_taylor_with_constants,
            contexts=(Constant(2.5), Constant(w)),
            prep_contexts=(Constant(1.0), Constant(np.ones(4))),
        ),
        Scenario(
            "vector to scalar, Cache context",
            _with_cache,
            v4,
            v4b,
            jacobian=lambda x, buf: 2 * x * np.cos(x**2),
            hessian=lambda x, buf: np.diag(2 * np.cos(x**2) - 4 * x**2 * np.sin(x**2)),
            contexts=(Cache(np.full(4, np.nan)),),
            prep_contexts=(Cache(np.full(4, np.nan)),),
            mutates=True,
        ),
        Scenario(
            "vector to vector, Cache context",
            _vector_with_cache,
            v4,
            v4b,
            jacobian=lambda x, buf: np.diag(np.cos(x) * x + np.sin(x)),
            contexts=(Cache(np.full(4, np.nan)),),
            prep_contexts=(Cache(np.full(4, np.nan)),),
            mutates=True,
        ),
    ]
