"""The sparsity rules of JAX primitives that need more than a table entry, and the tables themselves, for
`diface.backends.jax._sparsity` (which interprets a jaxpr with them; see it for what is covered).

Complex values: an element of a complex array is one element of its `Deps` (its real and imaginary
parts share one index set, the union of theirs). That is exact for the first-order pattern of every
holomorphic operation (both parts of f(z) depend on both parts of z) and conservative for the others
(`real`, `imag`, `conj` keep the element's whole set; `conj(z)`'s Jacobian block is diagonal, its pattern
full), and it keeps every rule written for real arrays valid unchanged: a complex operation is a real
operation on the elements' pairs, linear (+, `real`, `imag`, `conj`, `complex`, products with constants),
bilinear (products) or nonlinear (holomorphic functions, and the modulus and phase: `abs` and `sign`
of a complex number are smooth and nonlinear, unlike their real piecewise-linear or constant selves),
and the same kind on the index sets. FFTs mix every element along their axes (`rfft`/`irfft` change
the length of the last one, which the spreading over the output shape handles).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._sparsity import Deps, Nonlinearity

__all__ = [
    "B",
    "COMPLEX_NONLINEAR",
    "CONSTANT",
    "CUMULATIVE",
    "Const",
    "DENSE_MATRIX",
    "ELEMENTWISE",
    "L",
    "MOVES",
    "N",
    "Q",
    "REDUCTIONS",
    "deps_of",
    "dot_general",
    "elementwise_kind",
    "reduce_axes",
]

L, N, B, Q = Nonlinearity.LINEAR, Nonlinearity.NONLINEAR, Nonlinearity.BILINEAR, Nonlinearity.QUOTIENT
ELEMENTWISE = {
    **dict.fromkeys(
        "add sub neg add_any convert_element_type copy copy_p reduce_precision real imag complex conj max min abs rem "
        "select_n clamp optimization_barrier".split(),
        L,
    ),
    **dict.fromkeys(
        "sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 expm1 log log1p logistic sqrt "
        "rsqrt cbrt erf erfc erf_inv lgamma digamma polygamma zeta igamma igammac igamma_grad_a "
        "regularized_incomplete_beta bessel_i0e bessel_i1e pow atan2 square tan cumlogsumexp".split(),
        N,
    ),
    "mul": B,
    "div": Q,
}
#: of a complex operand: smooth and nonlinear (the modulus, z / |z|), where the real ones are piecewise
#: linear (`abs`) or constant (`sign`)
COMPLEX_NONLINEAR = frozenset({"abs", "sign"})
#: no derivative: the outputs depend on no input (`sign` of a real operand only)
CONSTANT = set(
    "sign floor ceil round is_finite eq ne lt le gt ge and or not xor stop_gradient iota argmax argmin "
    "nextafter population_count clz shift_left shift_right_arithmetic shift_right_logical "
    "random_bits random_seed random_wrap random_unwrap rng_bit_generator rng_uniform reduce_and reduce_or "
    "reduce_xor eq_to lt_to le_to".split()
)
#: pure data movement: each output element is one input element (or a constant); (data operand positions)
MOVES: dict[str, Callable[[int], Sequence[int]]] = {
    "reshape": lambda k: (0,),
    "broadcast_in_dim": lambda k: (0,),
    "transpose": lambda k: (0,),
    "squeeze": lambda k: (0,),
    "expand_dims": lambda k: (0,),
    "rev": lambda k: (0,),
    "slice": lambda k: (0,),
    "concatenate": lambda k: tuple(range(k)),
    "stack": lambda k: tuple(range(k)),
    "pad": lambda k: (0, 1),
    "dynamic_slice": lambda k: (0,),
    "dynamic_update_slice": lambda k: (0, 1),
    "gather": lambda k: (0,),
    "scatter": lambda k: (0, 2),
    "split": lambda k: (0,),
    "tile": lambda k: (0,),
}
REDUCTIONS = {"reduce_sum": L, "reduce_max": L, "reduce_min": L, "reduce_prod": B}
CUMULATIVE = {"cumsum": L, "cummax": L, "cummin": L, "cumprod": B, "cumlogsumexp": N}
DENSE_MATRIX = set("cholesky triangular_solve lu qr eigh eig svd schur hessenberg tridiagonal".split())


def elementwise_kind(eqn: Any, ins: list) -> Nonlinearity | None:
    """How an elementwise equation's output depends on its operands (None: not elementwise, or no
    derivative): the table's kind, except `abs`/`sign` of a complex operand (nonlinear) and a division by
    a constant (linear)."""
    name = eqn.primitive.name
    if name in COMPLEX_NONLINEAR and _is_complex(eqn.invars[0]):
        return N
    kind = ELEMENTWISE.get(name)
    if kind is Q and not isinstance(ins[1], Deps):
        return L  # division by a constant
    return kind


def _is_complex(var: Any) -> bool:
    return bool(np.issubdtype(np.dtype(var.aval.dtype), np.complexfloating))


class Const:
    """A value known while tracing (a literal, or an array f closes over), kept as a NumPy array."""

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)

    @property
    def shape(self) -> tuple:
        return self.value.shape


def deps_of(value: Any, n: int, second: bool) -> Deps:
    return value if isinstance(value, Deps) else Deps.constant(value.shape, n, second)


def reduce_axes(d: Deps, axes: Sequence[int], shape: tuple, kind: Nonlinearity) -> Deps:
    kept = [i for i in range(len(d.shape)) if i not in axes]
    outer = tuple(d.shape[i] if i in kept else 1 for i in range(len(d.shape)))
    groups = np.broadcast_to(np.arange(int(np.prod(outer, dtype=np.int64))).reshape(outer), d.shape)
    return d.reduce(groups, shape, kind)


def dot_general(eqn: Any, ins: list, shape: tuple, n: int, second: bool) -> Deps:
    (contract_a, contract_b), (batch_a, batch_b) = eqn.params["dimension_numbers"]
    a, b = ins
    if isinstance(a, Const) and isinstance(b, Deps):
        return _dot_with_constant(b, a.value, contract_b, batch_b, contract_a, batch_a, shape, lhs_constant=True)
    if isinstance(b, Const) and isinstance(a, Deps):
        return _dot_with_constant(a, b.value, contract_a, batch_a, contract_b, batch_b, shape, lhs_constant=False)
    # both depend on x: out[batch, free_a, free_b] combines a over its contracting axes and b over its
    pooled = []
    for d, contract, batch, first in ((a, contract_a, batch_a, True), (b, contract_b, batch_b, False)):
        d = deps_of(d, n, second)
        free = [i for i in range(len(d.shape)) if i not in contract and i not in batch]
        moved = d.gather(np.transpose(np.arange(d.size).reshape(d.shape), (*batch, *free, *contract)))
        kept = len(batch) + len(free)
        outer = moved.shape[:kept]
        reduced = reduce_axes(moved, tuple(range(kept, len(moved.shape))), outer, L)
        nb = len(batch)
        other_free = len(shape) - kept
        expand = outer + (1,) * other_free if first else outer[:nb] + (1,) * other_free + outer[nb:]
        pooled.append(reduced.gather(np.broadcast_to(np.arange(reduced.size).reshape(expand), shape)))
    return Deps.elementwise(shape, pooled, B)


def _dot_with_constant(
    d: Deps,
    c: np.ndarray,
    contract_d: Sequence[int],
    batch_d: Sequence[int],
    contract_c: Sequence[int],
    batch_c: Sequence[int],
    shape: tuple,
    lhs_constant: bool,
) -> Deps:
    """A product with a constant: out element depends on d's elements met by the constant's nonzeros."""
    import scipy.sparse as sp

    free_d = [i for i in range(len(d.shape)) if i not in contract_d and i not in batch_d]
    free_c = [i for i in range(c.ndim) if i not in contract_c and i not in batch_c]
    d_ids = np.transpose(np.arange(d.size).reshape(d.shape), (*batch_d, *free_d, *contract_d))
    nz = np.transpose(c != 0, (*batch_c, *free_c, *contract_c))
    kb = int(np.prod([d.shape[i] for i in batch_d], dtype=np.int64))
    fd = int(np.prod([d.shape[i] for i in free_d], dtype=np.int64))
    fc = int(np.prod([c.shape[i] for i in free_c], dtype=np.int64))
    k = int(np.prod([d.shape[i] for i in contract_d], dtype=np.int64))
    d_ids = d_ids.reshape(kb, fd, k)
    nz = nz.reshape(kb, fc, k)
    # output (batch, lhs free, rhs free) in JAX's order
    bi, ci, ki = np.nonzero(nz)  # constant's nonzero (batch, free, contracted)
    rows, cols = [], []
    for j in range(fd):
        out_free = (ci, np.full_like(ci, j)) if lhs_constant else (np.full_like(ci, j), ci)
        dims = (kb, fc, fd) if lhs_constant else (kb, fd, fc)
        rows.append(np.ravel_multi_index((bi, *out_free), dims))
        cols.append(d_ids[bi, j, ki])
    rows_a, cols_a = np.concatenate(rows), np.concatenate(cols)
    q = int(np.prod(shape, dtype=np.int64))
    m = sp.csr_array((np.ones(rows_a.size, dtype=np.int8), (rows_a, cols_a)), shape=(q, d.size))
    return d.combine(m, shape, L)
