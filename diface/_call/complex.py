"""Complex numbers: one convention on every engine, by differentiating real functions only.

A complex array is held as real pairs (a trailing axis of 2: real, imaginary parts). With z = a + ib,
∂ = ½(∂ₐ - i∂_b), ∂̄ = ½(∂ₐ + i∂_b) and the real inner product ⟨u, v⟩ = Re Σ conj(u)·v (which is the
dot product of the pairs), the operators are (docs/complex.md):

- pushforward = ∂f·t + ∂̄f·conj(t): the Jacobian of the real function on pairs, applied to t's pairs;
- pullback = its adjoint under ⟨·,·⟩: the transposed real Jacobian applied to the cotangent's pairs
  (PyTorch's convention); the gradient of a real f is the pullback of 1, 2∂̄f;
- hvp of a real f = the pushforward of its gradient map; inverse products invert the real map;
- derivative, jacobian, second_derivative = the complex derivative ∂f/∂z, which describes the map only
  where f is holomorphic: there ∂f/∂z = ∂f/∂a, so these operators differentiate along the real parts of
  the complex inputs (their imaginary parts held fixed, as a constant beside them: "real" mode), after a
  check, at preparation, that J(i·v) = i·J(v) for a random v.

The call path (`diface._call.trees.codec`) prepares every call with a complex input or output as the real problem
on pairs, through the machinery of trees: no engine sees a complex input or output, only complex values
inside f, so each engine's own complex convention (JAX's and autograd's conjugated gradients, torch's)
never reaches the user. `realify(f)` is the same transformation, public.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .._arrays import NUMPY, ops_for
from .._errors import NotSupportedError

__all__ = [
    "HOLOMORPHIC_OPERATORS",
    "complex_rows",
    "from_pairs",
    "has_complex_dtype",
    "holomorphic_residual",
    "holomorphy_error",
    "holomorphy_tolerance",
    "realify",
    "to_pairs",
]

#: the operators whose result is the complex derivative ∂f/∂z (defined for holomorphic f only)
HOLOMORPHIC_OPERATORS = frozenset({"derivative", "jacobian", "second_derivative"})


def has_complex_dtype(a: Any) -> bool:
    """Whether `a` is a complex array or number (of any library)."""
    if isinstance(a, complex):
        return True
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        return False
    ops = ops_for(a)
    try:
        return ops is not None and bool(ops.is_complex(dtype))
    except Exception:  # pragma: no cover - a dtype the namespace cannot classify
        return False


def to_pairs(z: Any) -> Any:
    """A (traced) complex array as real pairs; an array no namespace owns (the tape's) through NumPy's
    functions, which it overrides."""
    ops = ops_for(z)
    if ops is not None:
        return ops.to_pairs(z)
    return np.stack([np.real(z), np.imag(z)], axis=-1)


def from_pairs(v: Any) -> Any:
    """Real pairs `v` (any engine's traced array, or one no namespace owns: the tape's) as complex numbers,
    the inverse of `to_pairs`."""
    ops = ops_for(v)
    return ops.from_pairs(v) if ops is not None else v[..., 0] + 1j * v[..., 1]


def complex_rows(m: Any, complex_leaves: tuple, offsets: tuple) -> Any:
    """A real matrix whose rows are f's outputs as pairs (leaf by leaf, complex leaves interleaved:
    real, imaginary, real, ...; `offsets`: the leaves' row offsets) as the complex matrix with one row an
    output: real parts + i · imaginary parts. NumPy, SciPy sparse or any library's 2-D array."""
    if hasattr(m, "tocsr"):  # SciPy sparse
        import scipy.sparse as sp

        m = m.tocsr()
        parts = [
            m[a:b:2] + 1j * m[a + 1 : b : 2] if c else m[a:b] for a, b, c in zip(offsets, offsets[1:], complex_leaves)
        ]
        return parts[0] if len(parts) == 1 else sp.vstack(parts, format="csr")
    ops = ops_for(m) or NUMPY
    parts = []
    for a, b, c in zip(offsets, offsets[1:], complex_leaves):
        block = m[a:b]
        if c:
            block = ops.from_pairs(ops.moveaxis(ops.reshape(block, ((b - a) // 2, 2, block.shape[1])), 1, 2))
        else:  # a real output among complex ones: one dtype for the whole matrix
            block = ops.astype(block, ops.complex_dtype(block.dtype))
        parts.append(block)
    if len(parts) == 1:
        return parts[0]
    ncols = parts[0].shape[1]
    return ops.reshape(ops.concat([ops.reshape(p, (-1,)) for p in parts]), (-1, ncols))


def holomorphy_error(where: str, op_name: str) -> NotSupportedError:
    return NotSupportedError(
        f"{where}: f is not holomorphic (complex-differentiable) at x: J(i·v) differs from i·J(v), so the "
        f"complex derivative that {op_name} returns does not describe it. Use di.pushforward or di.pullback "
        "(defined for every f of complex numbers), or di.realify(f) for the real Jacobian of the real and "
        "imaginary parts"
    )


def holomorphic_residual(a: np.ndarray, b: np.ndarray) -> float:
    """‖J(iv) - i·J(v)‖ relative to ‖J(v)‖ + ‖J(iv)‖ (0 where both vanish), from a = J(v), b = J(iv)."""
    scale = float(np.linalg.norm(a) + np.linalg.norm(b))
    diff = float(np.linalg.norm(b - 1j * a))
    return 0.0 if scale == 0.0 else diff / scale


def holomorphy_tolerance(real_dtype: Any) -> float:
    """The relative residual a holomorphic f may show: room for finite differences' errors (100·√eps)."""
    return 100.0 * float(np.sqrt(np.finfo(real_dtype).eps))


def realify(f: Callable) -> Callable:
    """`f` on real arrays: every complex input and output held as a real array with a trailing axis of 2
    (real part, imaginary part).

    `realify(f)(v, *ctx)` = the pairs of `f(v[..., 0] + 1j * v[..., 1], *ctx)`: every operator then applies
    to any function of complex numbers through real arithmetic — a Hessian, sparse Jacobians, inverse
    products — and its results map back as follows (z = a + ib):

    - `jacobian(realify(f), b, v)` has shape `y.shape + (2,) + x.shape + (2,)`; its blocks are
      ∂(Re f, Im f)/∂(a, b), and the complex derivative (for holomorphic f) is `J[..., 0, ..., 0] + 1j *
      J[..., 1, ..., 0]`;
    - `gradient(realify(f), b, v)` of a real f is diface's gradient 2∂̄f as pairs (`g[..., 0] + 1j *
      g[..., 1]`);
    - `hessian(realify(f), b, v)` is the real Hessian in (a, b) coordinates, of shape
      `x.shape + (2,) + x.shape + (2,)`.

    Real inputs (an array whose dtype is not complex) pass through unchanged and a real output stays
    real, so `realify(f)` is `f` for real functions. Works for inputs and outputs of every array library
    diface knows; the trailing axis must have length 2.

    Example:
        >>> import numpy as np, diface as di
        >>> f = lambda z: np.sum(np.real(z * np.conj(z)))  # |z|^2: a real f of complex z, no complex Hessian
        >>> v = np.array([[1.0, 2.0], [0.5, -1.0]])        # z = [1 + 2j, 0.5 - 1j] as pairs
        >>> di.realify(f)(v)
        np.float64(6.25)
        >>> di.hessian(di.realify(f), di.AutoTape(), v).reshape(4, 4)
        array([[2., 0., 0., 0.],
               [0., 2., 0., 0.],
               [0., 0., 2., 0.],
               [0., 0., 0., 2.]])
    """

    @functools.wraps(f)
    def on_pairs(v: Any, *args: Any) -> Any:
        out = f(from_pairs(v), *args)
        return to_pairs(out) if has_complex_dtype(out) or _traced_complex(out) else out

    return on_pairs


def _traced_complex(a: Any) -> bool:
    """Whether an array no namespace owns (a tape value) holds complex numbers."""
    return ops_for(a) is None and hasattr(a, "dtype") and np.dtype(a.dtype).kind == "c"
