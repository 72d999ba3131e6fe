"""Real functions with complex intermediates: real x, real f(x), complex values on the way.

Each scenario builds complex values from x (`z = x0 + 1j * x1`, an FFT, a complex matrix product) and
comes back to the reals through `real`, `imag`, `abs`, `angle` or `z * conj(z)`. These operations are
real-linear but not complex-linear in their tangents, which is where forward-mode rules go wrong
(issue 23: AutoAutograd's batched forward pushes took `conj`'s partial derivative as 1, and
forward-over-reverse Hessians of `Re(z conj z)` came out as `diag(2, -2)`). The references are the
derivatives of the real functions the scenarios compute, written out by hand.

Each scenario's `needs` holds "complex" (and "fft" where it calls `xp.fft.fft`): engines that cannot
differentiate through complex values, or through an FFT in forward mode, are registered in
`_deviations` as raising `NotSupportedError` there, which the kit checks they do (never a number).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._scenarios import Scenario, _const

__all__ = ["complex_intermediate_scenarios"]

#: the complex constant of Re(z w)
_W = 0.3 - 1.2j
#: the unit complex constant of the phase rotation (|w| = 1)
_U = 0.6 + 0.8j
#: the complex matrix A + iB of the matrix-product scenarios, (3, 2)
_A = np.array([[1.0, -0.5], [0.3, 2.0], [-1.2, 0.7]])
_B = np.array([[0.4, 1.1], [-0.9, 0.2], [0.6, -0.3]])
#: the weights of the FFT power spectrum's scalar variant
_C = np.array([1.0, 0.5, -0.3, 2.0, 0.7, -1.1])
_N_FFT = 6


def _z(xp: Any, x: Any) -> Any:
    """The complex vector `x[:k] + 1j * x[k:]` of a real vector of length 2k."""
    k = x.shape[0] // 2
    return x[:k] + 1j * x[k:]


# -- the functions, written once for every array namespace -------------------------------------------------
def _abs2(xp: Any, x: Any) -> Any:
    z = x[0] + 1j * x[1]
    return xp.real(z * xp.conj(z))  # x0^2 + x1^2


def _abs2_vector(xp: Any, x: Any) -> Any:
    z = _z(xp, x)
    return xp.real(z * xp.conj(z))


def _re_zw(xp: Any, x: Any) -> Any:
    z = (x[0] + 1j * x[1]) ** 2
    return xp.real(z * _W)


def _angles(xp: Any, x: Any) -> Any:
    return xp.sum(xp.angle(_z(xp, x)))


def _power_spectrum(xp: Any, x: Any) -> Any:
    return xp.abs(xp.fft.fft(x)) ** 2


def _power_spectrum_sum(xp: Any, x: Any) -> Any:
    return xp.sum(_const(xp, _C, x) * xp.abs(xp.fft.fft(x)) ** 2)


def _matrix(xp: Any, x: Any) -> Any:
    return _const(xp, _A, x) + 1j * _const(xp, _B, x)


def _matmul_real(xp: Any, x: Any) -> Any:
    return xp.real(_matrix(xp, x) @ _z(xp, x))


def _matmul_abs2(xp: Any, x: Any) -> Any:
    y = _matrix(xp, x) @ _z(xp, x)
    return xp.sum(xp.real(y * xp.conj(y)))


def _rotation(xp: Any, t: Any) -> Any:
    z = xp.exp(1j * t) * _U
    return xp.stack([xp.real(z), xp.imag(z), xp.abs(z + 1.0) ** 2])


# -- their derivatives ----------------------------------------------------------------------------------------
def _jac_abs2_vector(x: np.ndarray) -> np.ndarray:
    k = x.size // 2
    jac = np.zeros((k, x.size))
    for i in range(k):
        jac[i, i], jac[i, i + k] = 2 * x[i], 2 * x[i + k]
    return jac


def _grad_re_zw(x: np.ndarray) -> np.ndarray:
    # z = (u^2 - v^2) + 2iuv, w = a + ib: Re(z w) = a (u^2 - v^2) - 2 b u v
    (u, v), a, b = x, _W.real, _W.imag
    return np.array([2 * a * u - 2 * b * v, -2 * a * v - 2 * b * u])


def _hess_re_zw(x: np.ndarray) -> np.ndarray:
    a, b = _W.real, _W.imag
    return np.array([[2 * a, -2 * b], [-2 * b, -2 * a]])


def _grad_angles(x: np.ndarray) -> np.ndarray:
    k = x.size // 2
    p, q = x[:k], x[k:]
    r2 = p**2 + q**2
    return np.concatenate([-q / r2, p / r2])  # d atan2(q, p)


def _hess_angles(x: np.ndarray) -> np.ndarray:
    k = x.size // 2
    h = np.zeros((x.size, x.size))
    for i in range(k):
        p, q = x[i], x[i + k]
        r4 = (p**2 + q**2) ** 2
        h[i, i], h[i + k, i + k] = 2 * p * q / r4, -2 * p * q / r4
        h[i, i + k] = h[i + k, i] = (q**2 - p**2) / r4
    return h


def _cosines(n: int) -> np.ndarray:
    """C[k, j, l] = cos(2 pi k (j - l) / n): |fft(x)[k]|^2 = x @ C[k] @ x."""
    k, j, m = np.ogrid[:n, :n, :n]
    return np.cos(2 * np.pi * k * (j - m) / n)


def _jac_power_spectrum(x: np.ndarray) -> np.ndarray:
    return 2 * _cosines(x.size) @ x


def _hess_power_spectrum_sum(x: np.ndarray) -> np.ndarray:
    return 2 * np.tensordot(_C, _cosines(x.size), axes=1)


def _real_form() -> np.ndarray:
    """G with (Re y, Im y) = G x for y = (A + iB)(x[:2] + i x[2:])."""
    return np.block([[_A, -_B], [_B, _A]])


def _rotation_parts(t: Any) -> tuple[np.ndarray, np.ndarray]:
    """(Re, Im) of u e^{it} and of its derivative i u e^{it}."""
    z = np.exp(1j * t) * _U
    return np.array([z.real, z.imag]), np.array([(1j * z).real, (1j * z).imag])


def _jac_rotation(t: Any) -> np.ndarray:
    _, (d_re, d_im) = _rotation_parts(t)
    return np.array([d_re, d_im, 2 * d_re])  # |z + 1|^2 = |u|^2 + 2 Re z + 1


def _second_rotation(t: Any) -> np.ndarray:
    (re, im), _ = _rotation_parts(t)
    return np.array([-re, -im, -2 * re])


def complex_intermediate_scenarios() -> list[Scenario]:
    """Real functions of real x through complex values, with hand-written derivatives: |z|^2 as
    `Re(z conj z)` (issue 23) and elementwise, `Re(z w)` for a constant complex w, a sum of phases
    `angle(z)`, the FFT power spectrum `abs(fft(x))**2` and a weighted sum of it, the real part and
    `|.|^2` of a complex matrix product `(A + iB) @ (x[:2] + i x[2:])`, and a phase rotation of a scalar
    `t` (`Re`, `Im` and `|.+1|^2` of `u e^{it}`).

    Example:
        >>> from diface.testing import complex_intermediate_scenarios
        >>> [s.name for s in complex_intermediate_scenarios()][:2]
        ['|z|^2 = Re(z conj z), z = x0 + i x1', '|z|^2 elementwise, z = x[:2] + i x[2:]']
    """
    v4 = np.array([0.8, -0.5, 0.6, 1.1])
    v4b = np.array([1.2, 0.4, -0.7, 0.9])
    v6 = np.array([0.9, -0.4, 1.3, 0.2, -1.1, 0.6])
    v6b = np.array([-0.3, 0.8, 0.5, -1.2, 0.4, 1.0])
    g = _real_form()
    complex_, fft = frozenset({"complex"}), frozenset({"complex", "fft"})
    return [
        Scenario(
            "|z|^2 = Re(z conj z), z = x0 + i x1",
            _abs2,
            np.array([0.7, -1.3]),
            np.array([-0.4, 0.9]),
            jacobian=lambda x: 2 * x,
            hessian=lambda x: 2 * np.eye(2),
            needs=complex_,
        ),
        Scenario("|z|^2 elementwise, z = x[:2] + i x[2:]", _abs2_vector, v4, v4b, _jac_abs2_vector, needs=complex_),
        Scenario(
            "Re(z w), z = (x0 + i x1)^2, w complex",
            _re_zw,
            np.array([0.7, -1.3]),
            np.array([-0.4, 0.9]),
            jacobian=_grad_re_zw,
            hessian=_hess_re_zw,
            needs=complex_,
        ),
        Scenario(
            "sum of phases angle(z), z = x[:2] + i x[2:]",
            _angles,
            v4,
            v4b,
            jacobian=_grad_angles,
            hessian=_hess_angles,
            needs=complex_,
        ),
        Scenario("FFT power spectrum abs(fft(x))**2", _power_spectrum, v6, v6b, _jac_power_spectrum, needs=fft),
        Scenario(
            "FFT power spectrum, weighted sum",
            _power_spectrum_sum,
            v6,
            v6b,
            jacobian=lambda x: _hess_power_spectrum_sum(x) @ x,
            hessian=_hess_power_spectrum_sum,
            needs=fft,
        ),
        Scenario(
            "complex matrix product, Re((A + iB) z)",
            _matmul_real,
            v4,
            v4b,
            jacobian=lambda x: np.hstack([_A, -_B]),
            needs=complex_,
        ),
        Scenario(
            "complex matrix product, |(A + iB) z|^2",
            _matmul_abs2,
            v4,
            v4b,
            jacobian=lambda x: 2 * g.T @ g @ x,
            hessian=lambda x: 2 * g.T @ g,
            needs=complex_,
        ),
        Scenario(
            "phase rotation of a scalar, u e^{it}",
            _rotation,
            0.7,
            -0.4,
            jacobian=_jac_rotation,
            second_derivative=_second_rotation,
            needs=complex_,
        ),
    ]
