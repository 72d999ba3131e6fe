"""Complex inputs and outputs (issue 18): scenarios with hand-written Wirtinger derivatives.

With z = a + ib, ∂ = ½(∂_a - i∂_b) and ∂̄ = ½(∂_a + i∂_b), every scenario gives the Wirtinger pair
`wirtinger(x) -> (D, Dbar)` of f (complex NumPy arrays shaped `y.shape + x.shape`; Dbar = 0 where x is
real), and for a real-valued f of complex x the pair `gradient_wirtinger(x) -> (G, Gbar)` of its gradient
map g = 2∂̄f (shaped `x.shape + x.shape`). Every operator's expected result follows from them by diface's
one convention (`ComplexScenario.expected`): the pushforward `D t + Dbar conj(t)`, the pullback, its
adjoint under ⟨u, v⟩ = Re Σ conj(u) v, `conj(D)ᵀ t + Dbarᵀ conj(t)` (real where x is real), the gradient
of a real f the pullback of 1 (= 2 Dbar), `jacobian`/`derivative` the complex derivative D (refused with
`NotSupportedError` where f is not holomorphic in a complex x), `hvp` the pushforward of g.

The kinds: holomorphic C→C, R→C (a real x, complex values out), C→R (real losses of complex x, with
gradients and Hessian-vector products), non-holomorphic C→C (jacobian refused, pushforward and pullback
defined), and complex64/float32 variants of a few. `tests/test_complex_scenarios.py` checks every hand
derivation against central differences of the NumPy function along the real and imaginary directions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import ShapeError
from ._scenarios import Refusal, Scenario, _const

__all__ = ["ComplexScenario", "complex_scenarios"]

#: why each refusal is expected (the kit checks that the call raises, never that it returns a number)
NOT_HOLOMORPHIC = (
    "f is not holomorphic in its complex x (∂̄f ≠ 0): jacobian/derivative would be ∂f/∂z, which does not "
    "describe f; use pushforward/pullback or di.realify"
)
COMPLEX_HESSIAN = "the Hessian of a real f of complex x is not one complex matrix: use hvp or di.realify"
COMPLEX_GRADIENT = "a complex-valued f has no gradient"


@dataclass(frozen=True, eq=False)
class ComplexScenario(Scenario):
    """A scenario with complex x or complex f(x), whose references are Wirtinger pairs.

    `wirtinger(x, *contexts) -> (D, Dbar)`: ∂f and ∂̄f, complex arrays shaped `y.shape + x.shape` (Dbar = 0
    where x is real). `gradient_wirtinger(x, *contexts) -> (G, Gbar)`: those of g = 2∂̄f, for a real-valued
    f of complex x (where `hvp` applies). `second_derivative`: f''(z) of a holomorphic f of a complex
    scalar, or d²f/dx² of a real scalar x. `holomorphic`: whether ∂̄f = 0 (for complex x; the tests check
    it against Dbar). Build them with `complex_scenario`.
    """

    wirtinger: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None
    gradient_wirtinger: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None
    holomorphic: bool = True

    @property
    def complex_x(self) -> bool:
        return bool(np.iscomplexobj(self.x))

    @property
    def complex_y(self) -> bool:
        return bool(np.iscomplexobj(self.value()))

    def result_precision(self) -> np.dtype | None:
        """Results must have this precision: complex where the reference is complex, real where it is real."""
        return np.finfo(self.dtype).dtype

    def refusals(self) -> dict[str, Refusal]:
        refused: dict[str, Refusal] = {}
        if self.complex_x and not self.holomorphic:
            refused["jacobian"] = Refusal(NOT_HOLOMORPHIC)
            if self.scalar_x:
                refused["derivative"] = Refusal(NOT_HOLOMORPHIC)
                refused["second_derivative"] = Refusal(NOT_HOLOMORPHIC)
        if self.scalar_y and self.complex_y:
            refused["gradient"] = Refusal(COMPLEX_GRADIENT, ShapeError)
        elif self.scalar_y and self.complex_x:
            refused["hessian"] = Refusal(COMPLEX_HESSIAN)
        return {**refused, **self.refuses}

    def operators(self) -> list[str]:
        ops = self.first_order_operators()
        if self.scalar_y:
            if not self.complex_y and self.gradient_wirtinger is not None:
                ops.append("hvp")
            if not self.complex_y and self.complex_x:
                ops.append("hessian")
        if self.scalar_x and (self.second_derivative is not None or "second_derivative" in self.refusals()):
            ops.append("second_derivative")
        return ops

    def expected(self, op: str, x: Any = None, tangents: tuple = ()) -> tuple:
        if op in self.refusals():
            raise ValueError(f"{op} of {self.name!r} is refused ({self.refusals()[op].reason}): no result expected")
        x = self.x if x is None else x
        cv = self.context_values()
        assert self.wirtinger is not None
        d, dbar = self.wirtinger(x, *cv)
        xn, yn = len(self.x_shape), d.ndim - len(self.x_shape)
        real_x, real_y = not self.complex_x, not self.complex_y

        def push(t: Any) -> np.ndarray:
            r = np.tensordot(d, t, axes=xn) + np.tensordot(dbar, np.conj(t), axes=xn)
            return np.real(r) if real_y else r

        def pull(t: Any) -> np.ndarray:
            r = np.tensordot(t, np.conj(d), axes=yn) + np.tensordot(np.conj(t), dbar, axes=yn)
            return np.real(r) if real_x else r

        if op in ("derivative", "jacobian"):
            return (d,)
        if op == "pushforward":
            return (tuple(push(t) for t in tangents),)
        if op == "pullback":
            return (tuple(pull(t) for t in tangents),)
        if op == "gradient":
            return (pull(np.ones(self.y_shape)),)
        if op == "hvp":
            assert self.gradient_wirtinger is not None, "no reference for the gradient's Wirtinger pair"
            g, gbar = self.gradient_wirtinger(x, *cv)
            hvps = tuple(np.tensordot(g, t, axes=xn) + np.tensordot(gbar, np.conj(t), axes=xn) for t in tangents)
            return (pull(np.ones(self.y_shape)), hvps)
        if op == "second_derivative":
            assert self.second_derivative is not None, "no second-derivative reference"
            return (d, self.second_derivative(x, *cv))
        raise KeyError(op)


def complex_scenario(
    name: str,
    f: Callable[..., Any],
    x: Any,
    prep_x: Any,
    wirtinger: Callable[..., tuple[np.ndarray, np.ndarray]],
    **fields: Any,
) -> ComplexScenario:
    """A `ComplexScenario` (its `jacobian` is D, which gives the output's shape)."""
    return ComplexScenario(
        name,
        f,
        x,
        prep_x,
        jacobian=lambda x, *cv: wirtinger(x, *cv)[0],
        wirtinger=wirtinger,
        needs=fields.pop("needs", frozenset()) | {"complex io"},
        **fields,
    )


def _lower_precision(s: ComplexScenario) -> ComplexScenario:
    """The scenario at complex64 (float32 where x is real): results in that precision."""
    low = np.complex64 if s.complex_x else np.float32
    cast = lambda v: np.asarray(v).astype(low) if np.ndim(v) else low(v)
    tag = "complex64" if s.complex_x else "float32 to complex64"
    return dataclasses.replace(s, name=f"{s.name}, {tag}", x=cast(s.x), prep_x=cast(s.prep_x), _bound={})


# -- constants ----------------------------------------------------------------------------------------------------
def _is_complex(a: Any) -> bool:
    dtype = a.dtype
    flag = getattr(dtype, "is_complex", None)  # torch dtypes
    return bool(flag) if flag is not None else np.dtype(dtype).kind == "c"


def _cconst(xp: Any, a: np.ndarray, like: Any) -> Any:
    """A complex constant in the namespace of `like`, in the complex dtype of its precision."""
    if _is_complex(like):
        return _const(xp, a, like)
    return _const(xp, np.real(a), like) + 1j * _const(xp, np.imag(a), like)


def _rmatvec(xp: Any, m: np.ndarray, x: Any) -> Any:
    """A complex matrix times a real vector (torch's matmul needs equal dtypes): re @ x + i im @ x."""
    return _const(xp, m.real, x) @ x + 1j * (_const(xp, m.imag, x) @ x)


#: a complex (3, 3) matrix, complex vectors and constants, a (4, 3) measurement matrix and the magnitudes m
_A = np.array(
    [
        [1.0 + 0.5j, -0.3 + 0.2j, 0.4 - 1.0j],
        [0.2 - 0.7j, 1.2 + 0.1j, -0.5 + 0.3j],
        [-0.6 + 0.4j, 0.3 + 0.9j, 0.8 - 0.2j],
    ]
)
_W = np.array([0.5 - 1.0j, 1.5 + 0.3j, -0.7 + 0.6j])
_W2 = np.array([1.0 + 0.2j, -0.4 + 0.8j, 0.3 - 0.5j])
_C = 0.5 - 0.2j
_B = np.array([[0.4 + 1.1j, -0.9 + 0.2j], [0.6 - 0.3j, 1.0 + 0.5j], [-0.2 + 0.7j, 0.3 - 0.8j]])  # (3, 2)
_PR = np.array(
    [
        [0.8 - 0.3j, 0.1 + 0.6j, -0.5 + 0.2j],
        [0.3 + 0.4j, -0.9 + 0.1j, 0.7 - 0.6j],
        [-0.2 - 0.5j, 0.6 + 0.3j, 0.4 + 0.9j],
        [1.0 + 0.2j, -0.3 - 0.4j, 0.2 + 0.5j],
    ]
)
_M = np.array([1.2, 0.7, 2.0, 0.5])
_LS_B = np.array([0.3 - 0.2j, -1.0 + 0.5j, 0.6 + 0.8j])
#: the FFT filter and target, length 4
_H = np.array([1.0 + 0.0j, 0.5 - 0.5j, 0.2 + 0.1j, 0.5 + 0.5j])
_T = np.array([0.4 + 0.1j, -0.3 + 0.7j, 1.1 - 0.2j, 0.2 + 0.3j])
_F4 = np.exp(-2j * np.pi * np.outer(np.arange(4), np.arange(4)) / 4)
#: a Hermitian matrix; its eigen-decomposition gives the fixed unitary U = exp(-i H) and the evolution in t
_HERM = (_A + _A.conj().T) / 2
_LAM, _V = np.linalg.eigh(_HERM)
_U = _V @ np.diag(np.exp(-1j * _LAM)) @ _V.conj().T
_PHI = np.array([0.6 + 0.0j, 0.0 + 0.8j, 0.0 + 0.0j])  # the target state, |phi| = 1
_PSI0 = np.array([1.0 + 0.0j, 0.0, 0.0])
_EVOLVE = _V * (_V.conj().T @ _PSI0)  # psi(t) = _EVOLVE @ exp(-i lam t)
_RB = np.array([[1.0, -0.5, 0.3], [0.2, 0.8, -1.1]]) + 1j * np.array([[0.4, 0.1, -0.6], [-0.9, 0.5, 0.7]])  # (2, 3)
_DAMP = -0.3 + 2.0j

_z3 = np.array([0.7 + 0.4j, -0.5 + 0.9j, 1.1 - 0.6j])
_z3b = np.array([0.3 - 0.8j, 0.9 + 0.2j, -0.4 + 0.5j])
#: points in the right half plane (log's branch cut is the negative real axis)
_r3 = np.array([0.7 + 0.4j, 1.5 - 0.9j, 0.4 + 1.1j])
_r3b = np.array([1.2 - 0.3j, 0.6 + 0.2j, 0.9 - 1.0j])
_z4 = np.array([0.7 + 0.4j, -0.5 + 0.9j, 1.1 - 0.6j, 0.2 + 0.3j])
_z4b = np.array([-0.3 + 0.6j, 0.8 - 0.1j, 0.4 + 0.7j, -0.9 - 0.2j])
_m23 = np.array([[0.3 - 0.2j, -0.7 + 0.5j, 1.1 + 0.1j], [0.9 + 0.4j, 0.2 - 0.6j, -0.4 + 0.8j]])
_m23b = np.array([[-0.5 + 0.3j, 0.6 - 0.4j, 0.1 + 0.9j], [1.3 - 0.1j, -0.8 + 0.2j, 0.7 - 0.5j]])
_v3 = np.array([0.5, -0.3, 0.8])
_v3b = np.array([-0.2, 0.9, 0.4])


def _diag(d: np.ndarray) -> np.ndarray:
    """The Jacobian of an elementwise map with derivative `d` (any shape)."""
    return np.diag(d.ravel()).reshape(d.shape + d.shape).astype(complex)


def _hol(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pair of a holomorphic map (or of a real x): (D, 0)."""
    d = np.asarray(d, dtype=complex)
    return d, np.zeros_like(d)


def _real_pair(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pair of a real-valued f: (D, conj(D))."""
    d = np.asarray(d, dtype=complex)
    return d, np.conj(d)


def _c(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=complex)


# -- holomorphic C→C ----------------------------------------------------------------------------------------------
def _poly(xp: Any, z: Any) -> Any:
    return z**3 - 2 * z**2 + (0.5 - 1.5j) * z + 0.25j


def _coupled(xp: Any, z: Any) -> Any:
    return z[:-1] * z[1:]


def _jac_coupled(z: np.ndarray) -> np.ndarray:
    d = np.zeros((z.size - 1, z.size), complex)
    for i in range(z.size - 1):
        d[i, i], d[i, i + 1] = z[i + 1], z[i]
    return d


def _mix(xp: Any, z: Any) -> Any:
    return z * xp.exp(z) + xp.sin(z) ** 2 - 1 / (z + 2)


def _tanh_b(xp: Any, z: Any) -> Any:
    return xp.tanh(z) @ _const(xp, _B, z)


def _jac_tanh_b(z: np.ndarray) -> np.ndarray:
    s = 1 / np.cosh(z) ** 2  # (2, 3)
    d = np.zeros((2, 2, 2, 3), complex)
    for i in range(2):
        for k in range(2):
            d[i, k, i, :] = s[i, :] * _B[:, k]
    return d


def _holomorphic() -> list[ComplexScenario]:
    cs = complex_scenario
    return [
        cs(
            "polynomial z^3 - 2z^2 + (0.5-1.5i)z + 0.25i",
            _poly,
            _z3,
            _z3b,
            lambda z: _hol(_diag(3 * z**2 - 4 * z + 0.5 - 1.5j)),
        ),
        cs("exp(z)", lambda xp, z: xp.exp(z), _z3, _z3b, lambda z: _hol(_diag(np.exp(z)))),
        cs("log(z), right half plane", lambda xp, z: xp.log(z), _r3, _r3b, lambda z: _hol(_diag(1 / z))),
        cs("sin(z)", lambda xp, z: xp.sin(z), _z3, _z3b, lambda z: _hol(_diag(np.cos(z)))),
        cs("cos(z)", lambda xp, z: xp.cos(z), _z3, _z3b, lambda z: _hol(_diag(-np.sin(z)))),
        cs("tanh(z)", lambda xp, z: xp.tanh(z), _z3, _z3b, lambda z: _hol(_diag(1 / np.cosh(z) ** 2))),
        cs("rational 1/(z + c)", lambda xp, z: 1 / (z + _C), _z3, _z3b, lambda z: _hol(_diag(-1 / (z + _C) ** 2))),
        cs(
            "z * w, w a complex constant",
            lambda xp, z: z * _const(xp, _W, z),
            _z3,
            _z3b,
            lambda z: _hol(_diag(_W + 0 * z)),
        ),
        cs("A @ z, A complex", lambda xp, z: _const(xp, _A, z) @ z, _z3, _z3b, lambda z: _hol(_A.copy())),
        cs(
            "elementwise mix z e^z + sin(z)^2 - 1/(z+2)",
            _mix,
            _z3,
            _z3b,
            lambda z: _hol(_diag((1 + z) * np.exp(z) + 2 * np.sin(z) * np.cos(z) + 1 / (z + 2) ** 2)),
        ),
        cs("coupled z[:-1] * z[1:]", _coupled, _z4, _z4b, lambda z: _hol(_jac_coupled(z))),
        cs(
            "sum(w z^2), complex vector to complex scalar",
            lambda xp, z: xp.sum(_const(xp, _W, z) * z**2),
            _z3,
            _z3b,
            lambda z: _hol(2 * _W * z),
        ),
        cs("2x3 complex matrix, tanh(Z) @ B", _tanh_b, _m23, _m23b, lambda z: _hol(_jac_tanh_b(z))),
        cs(
            "fft(z)",
            lambda xp, z: xp.fft.fft(z),
            _z4,
            _z4b,
            lambda z: _hol(_F4.copy()),
            needs=frozenset({"fft"}),
        ),
        cs(
            "complex scalar z^2 e^z",
            lambda xp, z: z**2 * xp.exp(z),
            np.complex128(0.6 + 0.8j),
            np.complex128(-0.4 + 0.3j),
            lambda z: _hol((2 * z + z**2) * np.exp(z)),
            second_derivative=lambda z: _c((2 + 4 * z + z**2) * np.exp(z)),
        ),
        cs(
            "complex scalar to vector [z^2, sin z, 1/z]",
            lambda xp, z: xp.stack([z**2, xp.sin(z), 1 / z]),
            np.complex128(0.6 + 0.8j),
            np.complex128(-0.4 + 0.3j),
            lambda z: _hol(np.array([2 * z, np.cos(z), -1 / z**2])),
            second_derivative=lambda z: _c(np.array([2 + 0 * z, -np.sin(z), 2 / z**3])),
        ),
    ]


def _with_context() -> ComplexScenario:
    from .._contexts import Constant

    return complex_scenario(
        "w * exp(z), w a complex Constant context",
        lambda xp, z, w: w * xp.exp(z),
        _z3,
        _z3b,
        lambda z, w: _hol(_diag(w * np.exp(z))),
        contexts=(Constant(_W),),
        prep_contexts=(Constant(_W2),),
    )


# -- R→C --------------------------------------------------------------------------------------------------------
def _curve(xp: Any, t: Any) -> Any:
    return xp.stack([xp.exp(1j * t), t**2 + 1j * t, (1 + 1j * t) ** 3])


def _evolve(xp: Any, t: Any) -> Any:
    phases = xp.exp(-1j * (_const(xp, _LAM, t) * t))
    return _cconst(xp, _EVOLVE, t) @ phases


def _real_to_complex() -> list[ComplexScenario]:
    cs = complex_scenario
    return [
        cs(
            "e^{it}, real scalar to complex scalar",
            lambda xp, t: xp.exp(1j * t),
            0.7,
            -0.4,
            lambda t: _hol(1j * np.exp(1j * t)),
            second_derivative=lambda t: _c(-np.exp(1j * t)),
        ),
        cs(
            "real scalar t to complex vector [e^{it}, t^2 + it, (1+it)^3]",
            _curve,
            0.6,
            -0.9,
            lambda t: _hol(np.array([1j * np.exp(1j * t), 2 * t + 1j, 3j * (1 + 1j * t) ** 2])),
            second_derivative=lambda t: _c(np.array([-np.exp(1j * t), 2 + 0 * t, -6 * (1 + 1j * t)])),
        ),
        cs(
            "(A + iB) x, real vector by a complex matrix",
            lambda xp, x: _rmatvec(xp, _RB, x),
            _v3,
            _v3b,
            lambda x: _hol(_RB.copy()),
        ),
        cs(
            "damped oscillation exp((-0.3+2i) x), real vector",
            lambda xp, x: xp.exp(_DAMP * x),
            _v3,
            _v3b,
            lambda x: _hol(_diag(_DAMP * np.exp(_DAMP * x))),
        ),
        cs(
            "fft(x) of a real vector",
            lambda xp, x: xp.fft.fft(x),
            np.array([0.5, -0.3, 0.8, 1.2]),
            np.array([-0.2, 0.9, 0.4, -1.0]),
            lambda x: _hol(_F4.copy()),
            needs=frozenset({"fft"}),
        ),
        cs(
            "unitary evolution psi(t) = V exp(-i lam t) V^H psi0, real scalar t",
            _evolve,
            0.8,
            -0.5,
            lambda t: _hol(_EVOLVE @ (-1j * _LAM * np.exp(-1j * _LAM * t))),
            second_derivative=lambda t: _c(_EVOLVE @ (-(_LAM**2) * np.exp(-1j * _LAM * t))),
        ),
    ]


# -- C→R: real losses of complex x ------------------------------------------------------------------------------
def _abs2_sum(xp: Any, z: Any) -> Any:
    return xp.sum(xp.real(z * xp.conj(z)))


def _least_squares(xp: Any, z: Any) -> Any:
    r = _const(xp, _A, z) @ z - _const(xp, _LS_B, z)
    return xp.sum(xp.real(r * xp.conj(r)))


def _ls_pair(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = _A @ z - _LS_B
    return _real_pair(_A.T @ np.conj(r))


def _phase_retrieval(xp: Any, z: Any) -> Any:
    u = _const(xp, _PR, z) @ z
    s = xp.real(u * xp.conj(u)) - _const(xp, _M, xp.real(u))
    return xp.sum(s**2)


def _pr_parts(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = _PR @ z
    return u, np.abs(u) ** 2 - _M


def _pr_pair(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, s = _pr_parts(z)
    return _real_pair(_PR.T @ (2 * s * np.conj(u)))


def _pr_gradient_pair(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, s = _pr_parts(z)
    ah = _PR.conj().T
    return 4 * ah @ np.diag(np.abs(u) ** 2 + s) @ _PR, 4 * ah @ np.diag(u**2) @ np.conj(_PR)


def _fft_filter(xp: Any, z: Any) -> Any:
    r = xp.fft.fft(z) * _const(xp, _H, z) - _const(xp, _T, z)
    return xp.sum(xp.real(r * xp.conj(r)))


_FILTER = np.diag(_H) @ _F4


def _unitary_loss(xp: Any, z: Any) -> Any:
    a = xp.sum(xp.conj(_const(xp, _PHI, z)) * (_const(xp, _U, z) @ z))
    return xp.real(a * xp.conj(a))


_OVERLAP = _U.T @ np.conj(_PHI)  # <phi, U z> = _OVERLAP @ z


def _unitary_pair(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = _OVERLAP @ z
    return _real_pair(_OVERLAP * np.conj(a))


def _hermitian_form(xp: Any, z: Any) -> Any:
    return xp.real(xp.sum(xp.conj(z) * (_const(xp, _HERM, z) @ z)))


def _zeros(z: np.ndarray) -> np.ndarray:
    return np.zeros(z.shape + z.shape, complex)


def _complex_to_real() -> list[ComplexScenario]:
    def cs(*args: Any, **kwargs: Any) -> ComplexScenario:  # a real f of complex x: ∂̄f = conj(∂f) ≠ 0
        return complex_scenario(*args, holomorphic=False, **kwargs)

    return [
        cs(
            "sum |z|^2",
            _abs2_sum,
            _z3,
            _z3b,
            lambda z: _real_pair(np.conj(z)),
            gradient_wirtinger=lambda z: (2 * _diag(np.ones(z.shape)), _zeros(z)),
        ),
        cs(
            "sum Re(z)",
            lambda xp, z: xp.sum(xp.real(z)),
            _z3,
            _z3b,
            lambda z: _real_pair(0.5 + 0 * z),
            gradient_wirtinger=lambda z: (_zeros(z), _zeros(z)),
        ),
        cs(
            "sum Im(z)",
            lambda xp, z: xp.sum(xp.imag(z)),
            _z3,
            _z3b,
            lambda z: _real_pair(-0.5j + 0 * z),
            gradient_wirtinger=lambda z: (_zeros(z), _zeros(z)),
        ),
        cs(
            "sum angle(z)",
            lambda xp, z: xp.sum(xp.angle(z)),
            _z3,
            _z3b,
            lambda z: _real_pair(-0.5j / z),
            gradient_wirtinger=lambda z: (_zeros(z), _diag(-1j / np.conj(z) ** 2)),
        ),
        cs(
            "sum |e^z| = sum e^{Re z}",
            lambda xp, z: xp.sum(xp.abs(xp.exp(z))),
            _z3,
            _z3b,
            lambda z: _real_pair(0.5 * np.exp(z.real)),
            gradient_wirtinger=lambda z: (_diag(0.5 * np.exp(z.real)), _diag(0.5 * np.exp(z.real))),
        ),
        cs(
            "sum log(1 + |z|^2)",
            lambda xp, z: xp.sum(xp.log(1 + xp.real(z * xp.conj(z)))),
            _z3,
            _z3b,
            lambda z: _real_pair(np.conj(z) / (1 + np.abs(z) ** 2)),
            gradient_wirtinger=lambda z: (
                _diag(2 / (1 + np.abs(z) ** 2) ** 2),
                _diag(-2 * z**2 / (1 + np.abs(z) ** 2) ** 2),
            ),
        ),
        cs(
            "least squares ||A z - b||^2",
            _least_squares,
            _z3,
            _z3b,
            _ls_pair,
            gradient_wirtinger=lambda z: (2 * _A.conj().T @ _A, _zeros(z)),
        ),
        cs(
            "phase retrieval sum (|A z|^2 - m)^2",
            _phase_retrieval,
            _z3,
            _z3b,
            _pr_pair,
            gradient_wirtinger=_pr_gradient_pair,
        ),
        cs(
            "FFT filter loss sum |fft(z) H - T|^2",
            _fft_filter,
            _z4,
            _z4b,
            lambda z: _real_pair(_FILTER.T @ np.conj(_FILTER @ z - _T)),
            gradient_wirtinger=lambda z: (2 * _FILTER.conj().T @ _FILTER, _zeros(z)),
            needs=frozenset({"fft"}),
        ),
        cs(
            "unitary evolution loss |<phi, U psi>|^2, U = exp(-iH)",
            _unitary_loss,
            _z3,
            _z3b,
            _unitary_pair,
            gradient_wirtinger=lambda z: (2 * np.outer(np.conj(_OVERLAP), _OVERLAP), _zeros(z)),
        ),
        cs(
            "Hermitian form Re(conj(z) . M z)",
            _hermitian_form,
            _z3,
            _z3b,
            lambda z: _real_pair(_HERM.T @ np.conj(z)),
            gradient_wirtinger=lambda z: (2 * _HERM.astype(complex), _zeros(z)),
        ),
        cs(
            "complex scalar |z|^2",
            lambda xp, z: xp.real(z * xp.conj(z)),
            np.complex128(0.6 + 0.8j),
            np.complex128(-0.4 + 0.3j),
            lambda z: _real_pair(np.conj(z)),
            gradient_wirtinger=lambda z: (_c(2.0), _c(0.0)),
        ),
        cs(
            "2x3 complex matrix, sum |Z|^4",
            lambda xp, z: xp.sum(xp.real(z * xp.conj(z)) ** 2),
            _m23,
            _m23b,
            lambda z: _real_pair(2 * np.abs(z) ** 2 * np.conj(z)),
            gradient_wirtinger=lambda z: (_diag(8 * np.abs(z) ** 2), _diag(4 * z**2)),
        ),
    ]


# -- non-holomorphic C→C ----------------------------------------------------------------------------------------
def _abs_times(xp: Any, z: Any) -> Any:
    return xp.abs(z) * z


def _non_holomorphic() -> list[ComplexScenario]:
    def cs(*args: Any, **kwargs: Any) -> ComplexScenario:
        return complex_scenario(*args, holomorphic=False, **kwargs)

    return [
        cs("conj(z)", lambda xp, z: xp.conj(z), _z3, _z3b, lambda z: (_zeros(z), _diag(np.ones(z.shape)))),
        cs(
            "z * conj(z), complex-typed",
            lambda xp, z: z * xp.conj(z),
            _z3,
            _z3b,
            lambda z: (_diag(np.conj(z)), _diag(z)),
        ),
        cs(
            "|z| z",
            _abs_times,
            _z3,
            _z3b,
            lambda z: (_diag(1.5 * np.abs(z)), _diag(z**2 / (2 * np.abs(z)))),
        ),
        cs(
            "Re(z) + 0j",
            lambda xp, z: xp.real(z) + 0j,
            _z3,
            _z3b,
            lambda z: (_diag(0.5 + 0 * z), _diag(0.5 + 0 * z)),
        ),
        cs(
            "A @ conj(z) + z^2",
            lambda xp, z: _const(xp, _A, z) @ xp.conj(z) + z**2,
            _z3,
            _z3b,
            lambda z: (_diag(2 * z), _A.copy()),
        ),
        cs(
            "z exp(conj(z))",
            lambda xp, z: z * xp.exp(xp.conj(z)),
            _z3,
            _z3b,
            lambda z: (_diag(np.exp(np.conj(z))), _diag(z * np.exp(np.conj(z)))),
        ),
        cs(
            "2x3 complex matrix, conj(Z) @ B",
            lambda xp, z: xp.conj(z) @ _const(xp, _B, z),
            _m23,
            _m23b,
            lambda z: (np.zeros((2, 2, 2, 3), complex), _jac_conj_b()),
        ),
        cs(
            "complex scalar conj(z) z^2",
            lambda xp, z: xp.conj(z) * z**2,
            np.complex128(0.6 + 0.8j),
            np.complex128(-0.4 + 0.3j),
            lambda z: (_c(2 * z * np.conj(z)), _c(z**2)),
        ),
    ]


def _jac_conj_b() -> np.ndarray:
    d = np.zeros((2, 2, 2, 3), complex)
    for i in range(2):
        for k in range(2):
            d[i, k, i, :] = _B[:, k]
    return d


#: the scenarios also checked at complex64 (float32 for a real x)
_LOW_PRECISION = (
    "polynomial z^3 - 2z^2 + (0.5-1.5i)z + 0.25i",
    "exp(z)",
    "A @ z, A complex",
    "complex scalar z^2 e^z",
    "e^{it}, real scalar to complex scalar",
    "(A + iB) x, real vector by a complex matrix",
    "sum |z|^2",
    "least squares ||A z - b||^2",
    "phase retrieval sum (|A z|^2 - m)^2",
    "|z| z",
)


def complex_scenarios() -> list[ComplexScenario]:
    """Complex inputs and outputs, with hand-written Wirtinger derivatives (see `ComplexScenario`):
    holomorphic C→C (polynomial, exp, log, sin, cos, tanh, 1/(z+c), products with complex constants,
    A @ z, fft, complex scalars with second derivatives, a 2x3 complex matrix, a complex Constant
    context), R→C (e^{it}, a curve in C^3, a complex matrix times a real vector, an FFT of a real
    vector, a unitary evolution in t), C→R losses (|z|^2, Re, Im, angle, least squares, phase
    retrieval, an FFT filter, a unitary-evolution fidelity, a Hermitian form, ...) with gradients and
    Hessian-vector products, non-holomorphic C→C (conj, z conj z, |z| z, ...) whose jacobian must be
    refused, and complex64 versions of a few.

    Example:
        >>> from diface.testing import complex_scenarios
        >>> s = complex_scenarios()[0]
        >>> s.name, s.operators()
        ('polynomial z^3 - 2z^2 + (0.5-1.5i)z + 0.25i', ['pushforward', 'pullback', 'jacobian'])
    """
    scenarios = [*_holomorphic(), _with_context(), *_real_to_complex(), *_complex_to_real(), *_non_holomorphic()]
    by_name = {s.name: s for s in scenarios}
    return scenarios + [_lower_precision(by_name[name]) for name in _LOW_PRECISION]
