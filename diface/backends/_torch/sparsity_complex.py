"""The sparsity rules of torch's complex operations, for `diface.backends._torch.sparsity_rules`.

An element of a complex tensor is one element of its `Deps`: its real and imaginary parts share one
index set (the union of theirs). Elementwise rules written for real tensors then hold unchanged, as a
complex operation is a real one on the elements' pairs: linear (`complex`, `conj`, `real`, `imag`, +),
bilinear (products) or nonlinear (holomorphic functions). That is exact for the first-order pattern of
holomorphic operations (both parts of f(z) depend on both parts of z) and conservative otherwise (the
pattern of `conj(z)`'s diagonal 2 x 2 block is full). What needs its own rule:

- the views between the two layouts, which change the shape: `view_as_real` adds a trailing axis of 2
  (both of an element's parts depend on the whole element), `view_as_complex` drops it (an element
  depends on both of its parts); `real`/`imag` reach the graph as `view_as_real` then `select`;
- `abs`, `sgn` and `angle` of a complex operand, which are smooth and nonlinear (the modulus, z / |z|,
  the phase) where their real counterparts are piecewise linear or constant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._sparsity import Deps, Nonlinearity

if TYPE_CHECKING:
    from .sparsity import Interpreter

__all__ = ["COMPLEX_LAYOUT", "COMPLEX_LINEAR", "COMPLEX_NONLINEAR", "SIGN", "complex_layout", "is_complex", "sign"]

#: linear on the pairs, same shape: elementwise rules apply
COMPLEX_LINEAR = frozenset("complex conj _conj conj_physical resolve_conj resolve_neg _neg_view _conj_physical".split())
#: nonlinear, same shape: `polar(r, θ)` = r·exp(iθ)
COMPLEX_NONLINEAR = frozenset({"polar"})
#: between a complex tensor and its real pairs
COMPLEX_LAYOUT = frozenset({"view_as_real", "view_as_complex"})
#: the sign and the phase: constant (no derivative: ±1, 0 or π) of a real operand, smooth and nonlinear of
#: a complex one (z / |z|, atan2(Im z, Re z))
SIGN = frozenset({"sign", "sgn", "angle"})


def is_complex(arg: Any) -> bool:
    """Whether a graph node's value (its example in `meta`) is a complex tensor."""
    val = getattr(arg, "meta", {}).get("val")
    return bool(getattr(getattr(val, "dtype", None), "is_complex", False))


def complex_layout(it: Interpreter, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """`view_as_real(z)`: element (..., k) is part k of element ... of z; `view_as_complex(v)`: element
    ... combines (..., 0) and (..., 1) of v, linearly."""
    d = it.deps(args[0])
    ids = np.arange(d.size).reshape(d.shape)
    if name == "view_as_real":
        return d.gather(np.broadcast_to(ids[..., None], tuple(shapes)))
    return d.reduce(ids // 2, tuple(shapes), Nonlinearity.LINEAR)


def sign(it: Interpreter, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """z / |z| and the phase of a complex z are smooth off 0 and nonlinear; the sign and phase of a real
    number are piecewise constant, with no derivative."""
    if not is_complex(it.node.args[0]):
        return it.constant(shapes)
    return Deps.elementwise(tuple(shapes), [it.deps(args[0])], Nonlinearity.NONLINEAR)
