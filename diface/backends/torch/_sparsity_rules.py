"""The sparsity rules of ATen operations, for `diface.backends.torch._sparsity`: each maps the index sets
(`Deps`) of an operation's inputs to those of its outputs (see that module for what is covered)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ..._sparsity import Deps, Nonlinearity
from ._modes import torch

__all__ = ["INPLACE_VIEWS", "SUGGESTION", "Const", "Interpreting", "flat", "rule_for"]

L, N, B, Q = Nonlinearity.LINEAR, Nonlinearity.NONLINEAR, Nonlinearity.BILINEAR, Nonlinearity.QUOTIENT
SUGGESTION = (
    "use di.DenseSparsityDetector(backend) for the pattern at the preparation point, or di.KnownSparsity(pattern)"
)


# -- complex operations ------------------------------------------------------------------------------------
# An element of a complex tensor is one element of its `Deps`: its real and imaginary parts share one
# index set (the union of theirs). Elementwise rules written for real tensors then hold unchanged, as a
# complex operation is a real one on the elements' pairs: linear (`complex`, `conj`, `real`, `imag`, +),
# bilinear (products) or nonlinear (holomorphic functions). That is exact for the first-order pattern of
# holomorphic operations (both parts of f(z) depend on both parts of z) and conservative otherwise (the
# pattern of `conj(z)`'s diagonal 2 x 2 block is full). What needs its own rule:
#
# - the views between the two layouts, which change the shape: `view_as_real` adds a trailing axis of 2
#   (both of an element's parts depend on the whole element), `view_as_complex` drops it (an element
#   depends on both of its parts); `real`/`imag` reach the graph as `view_as_real` then `select`;
# - `abs`, `sgn` and `angle` of a complex operand, which are smooth and nonlinear (the modulus, z / |z|,
#   the phase) where their real counterparts are piecewise linear or constant.

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


def complex_layout(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """`view_as_real(z)`: element (..., k) is part k of element ... of z; `view_as_complex(v)`: element
    ... combines (..., 0) and (..., 1) of v, linearly."""
    d = it.deps(args[0])
    ids = np.arange(d.size).reshape(d.shape)
    if name == "view_as_real":
        return d.gather(np.broadcast_to(ids[..., None], tuple(shapes)))
    return d.reduce(ids // 2, tuple(shapes), Nonlinearity.LINEAR)


def sign(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """z / |z| and the phase of a complex z are smooth off 0 and nonlinear; the sign and phase of a real
    number are piecewise constant, with no derivative."""
    if not is_complex(it.node.args[0]):
        return it.constant(shapes)
    return Deps.elementwise(tuple(shapes), [it.deps(args[0])], Nonlinearity.NONLINEAR)


_ELEMENTWISE: dict[str, Nonlinearity] = {
    **dict.fromkeys(
        "add sub neg rsub positive abs maximum minimum fmax fmin clamp clamp_min clamp_max relu hardtanh "
        "leaky_relu fmod remainder copysign frac _to_copy to clone alias lift_fresh contiguous real imag "
        "nan_to_num".split(),
        L,
    ),
    **dict.fromkeys(COMPLEX_LINEAR, L),
    **dict.fromkeys(COMPLEX_NONLINEAR, N),
    **dict.fromkeys(
        "exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh "
        "sigmoid sqrt rsqrt reciprocal square erf erfc erfinv lgamma digamma polygamma mvlgamma i0 sinc "
        "logit gelu silu elu celu selu mish softplus log_sigmoid_forward hardswish hardsigmoid atan2 hypot "
        "logaddexp logaddexp2 xlogy special_xlog1py special_entr special_erfcx special_ndtr special_log_ndtr "
        "special_i0e special_i1 special_i1e pow float_power".split(),
        N,
    ),
    "mul": B,
    "div": Q,
}
#: no derivative (the outputs depend on no input), or a value of no use to a derivative
_NO_DERIVATIVE = set(
    "floor ceil round trunc eq ne lt le gt ge logical_and logical_or logical_not logical_xor "
    "bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift isnan isinf "
    "isfinite isneginf isposinf signbit argmax argmin detach empty_like rand_like randn_like randint_like "
    "bernoulli native_dropout any all count_nonzero heaviside isin searchsorted bucketize new_empty "
    "new_empty_strided empty_strided floor_divide".split()
)
#: a value known from shapes alone: computed on zeros of the operand's shape
_FROM_SHAPE = set("zeros_like ones_like full_like new_zeros new_ones new_full zero fill scalar_tensor".split())
#: data movement: the positional arguments (or lists of them) whose elements the result is made of
_MOVES: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(
        "view reshape _unsafe_view expand permute transpose t slice select squeeze unsqueeze flip roll "
        "diagonal as_strided unfold repeat index _unsafe_index index_select gather split split_with_sizes "
        "unbind narrow tril triu movedim unflatten expand_as view_as diag_embed unsafe_split "
        "unsafe_split_with_sizes chunk tensor_split".split(),
        (0,),
    ),
    **dict.fromkeys("cat stack".split(), (0,)),
    "constant_pad_nd": (0, 2),
    "copy": (0, 1),
    "slice_scatter": (0, 1),
    "select_scatter": (0, 1),
    "diagonal_scatter": (0, 1),
    "as_strided_scatter": (0, 1),
    "index_put": (0, 2),
    "_unsafe_index_put": (0, 2),
    "scatter": (0, 3),
    "index_fill": (0, 3),
    "masked_fill": (0, 2),
    "where": (1, 2),
}
#: (keyword names of the dims argument, nonlinearity) of reductions
_REDUCTIONS: dict[str, Nonlinearity] = {
    **dict.fromkeys("sum mean amax amin max min nansum nanmean aminmax".split(), L),
    "prod": B,
    **dict.fromkeys("var std var_mean std_mean logsumexp linalg_vector_norm norm".split(), N),
}
_CUMULATIVE = {"cumsum": L, "cummax": L, "cummin": L, "cumprod": B, "logcumsumexp": N}
_ALONG_DIM = {"_softmax": N, "_log_softmax": N, "softmax": N, "log_softmax": N, "sort": L, "topk": L}
_FFT = {"_fft_r2c", "_fft_c2r", "_fft_c2c"}
_DENSE_LINALG = set(
    "cholesky cholesky_solve cholesky_inverse triangular_solve lu_solve inverse det logdet slogdet svd qr "
    "geqrf orgqr ormqr matrix_exp lu_unpack _lu_with_info linalg_lu_factor_ex".split()
)
_ACCUMULATE = {"index_add", "scatter_add"}
INPLACE_VIEWS = {"squeeze_", "unsqueeze_", "transpose_", "t_", "as_strided_", "swapdims_", "swapaxes_"}
#: both operands traced: products are expanded elementwise (exact pairs) up to this many terms
_EXACT_PRODUCT_TERMS = 1 << 20


class Const:
    """A value known while tracing (a literal, a tensor f closes over), as a CPU tensor."""

    def __init__(self, value: Any) -> None:
        self.value = value

    @property
    def shape(self) -> tuple:
        return tuple(self.value.shape)


def flat(value: Any) -> list:
    return [w for v in value for w in flat(v)] if isinstance(value, (list, tuple)) else [value]


class Interpreting(Protocol):
    """What a rule sees of the interpreter running the graph (`diface.backends.torch._sparsity.Interpreter`,
    which imports these rules: the rules see it through this protocol, so the two modules form no cycle)."""

    #: the number of x's elements, and whether second-order (interaction) sets are tracked
    n: int
    second: bool
    #: the ATen op (overload) and the graph node being interpreted, for rules that run it on ids or zeros
    target: Any
    node: Any

    def constant(self, shapes: Any) -> Any:
        """`Deps` depending on no input, of `shapes` (a list of them for several outputs)."""
        ...

    def deps(self, v: Any) -> Deps:
        """`v`'s dependencies: itself if `Deps`, else none (a known value)."""
        ...

    def evaluate(self, target: Any, args: tuple, kwargs: dict, shapes: Any) -> Any:
        """`target` run on known values."""
        ...


# -- rules --------------------------------------------------------------------------------------------------
Rule = Callable[["Interpreting", str, tuple, dict, Any], Any]


def rule_for(name: str) -> Rule | None:
    if name in _NO_DERIVATIVE:
        return lambda it, name, args, kwargs, shapes: it.constant(shapes)
    if name in _FROM_SHAPE:
        return _from_shape
    if name in SIGN:
        return sign
    if name in COMPLEX_LAYOUT:
        return complex_layout
    if name in ("where", "masked_fill", "index_fill"):
        return _select
    if name in _MOVES:
        return _move
    if name in _ELEMENTWISE or name in ("addcmul", "addcdiv", "lerp"):
        return _elementwise
    if name in ("index_put", "_unsafe_index_put"):
        return _move
    if name in _ACCUMULATE:
        return _accumulate
    if name in _REDUCTIONS:
        return _reduction
    if name in _CUMULATIVE:
        return _cumulative
    if name in _ALONG_DIM or name in _FFT:
        return _along_dims
    if name in ("mm", "bmm", "addmm", "mv", "dot", "vdot", "baddbmm", "addmv"):
        return _product
    if name == "native_layer_norm":
        return _layer_norm
    if name in _DENSE_LINALG or name.startswith(("linalg_", "_linalg_")):
        return _dense
    return None


def _from_shape(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """`zeros_like(x)` and the like: computed on zeros of x's shape (the values of x do not matter),
    unless a traced fill value makes it depend on x."""
    t = torch()
    if any(isinstance(v, Deps) for v in args[1:]):
        return Deps.elementwise(shapes, [v for v in args[1:] if isinstance(v, Deps)], L)
    zeros = lambda v: Const(t.zeros(v.shape)) if isinstance(v, Deps) else v
    return it.evaluate(it.target, tuple(zeros(a) for a in args), kwargs, shapes)


def _elementwise(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    operands = [a for a in args if isinstance(a, (Deps, Const))]
    if name == "pow" and isinstance(args[0], Deps) and isinstance(args[1], (int, float)):
        if args[1] == 0:
            return it.constant(shapes)
        return Deps.elementwise(shapes, [args[0]], L if args[1] == 1 else N)
    if name in ("addcmul", "addcdiv"):
        part = Deps.elementwise(shapes, [it.deps(args[1]), it.deps(args[2])], B if name == "addcmul" else Q)
        return Deps.elementwise(shapes, [it.deps(args[0]), part], L)
    if name == "lerp":
        kind = N if isinstance(args[2], Deps) else L
        return Deps.elementwise(shapes, [it.deps(a) for a in args[:3] if not isinstance(a, (int, float))], kind)
    if name in ("clamp", "hardtanh", "clamp_min", "clamp_max"):  # bounds select, they are not scaled
        operands = operands[:1] + [a for a in operands[1:] if isinstance(a, Deps)]
    kind = _ELEMENTWISE[name]
    if name == "abs" and is_complex(it.node.args[0]):
        kind = N  # the modulus of a complex number
    if name == "div" and kwargs.get("rounding_mode") is not None:
        return it.constant(shapes)
    if kind is Q and not isinstance(args[1], Deps):
        kind = L  # division by a constant
    if kind is B and len(operands) == 2 and not all(isinstance(a, Deps) for a in operands):
        return _scaled(it, operands, shapes)
    return Deps.elementwise(shapes, [it.deps(a) for a in operands], kind)


def _scaled(it: Interpreting, operands: list, shapes: tuple) -> Deps:
    """A traced value times a known one: zero (depending on nothing) where the known one is zero."""
    d = next(a for a in operands if isinstance(a, Deps))
    c = next(a for a in operands if isinstance(a, Const)).value.cpu()
    result = Deps.elementwise(shapes, [d], L)
    zero = np.broadcast_to((c == 0).numpy(), shapes)
    if not zero.any():
        return result
    ids = np.where(zero, -1, np.arange(result.size).reshape(shapes))
    return result.gather(ids)


def _select(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """`where(cond, a, b)`, `masked_fill(a, mask, v)`, `index_fill(a, dim, index, v)`: a selection where
    the condition is known, else either operand at every position (the condition is not differentiated)."""
    condition = args[0] if name == "where" else args[1] if name == "masked_fill" else args[2]
    if not isinstance(condition, Deps):
        return _move(it, name, args, kwargs, shapes)
    data = [args[1], args[2]] if name == "where" else [args[0], args[-1]]
    return Deps.elementwise(shapes, [d for d in data if isinstance(d, Deps)], L)


def _move(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """Run the op on element ids instead of values (1 + the element's position among the data operands'
    elements, 0 for a constant): each output id says which element an output element is."""
    t = torch()
    positions = _MOVES[name]
    if name in ("index_put", "_unsafe_index_put") and (args[3] if len(args) > 3 else kwargs.get("accumulate", False)):
        return _accumulate(it, name, args, kwargs, shapes)
    others = [a for i, a in enumerate(args) if i not in positions] + list(kwargs.values())
    if any(isinstance(v, Deps) for v in flat(others)):  # indices from x: any position is possible
        data = [d for i in positions if i < len(args) for d in flat([args[i]]) if isinstance(d, Deps)]
        return _anywhere(it, data, shapes)
    parts: list[Deps] = []

    def ids(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [ids(w) for w in v]
        if isinstance(v, Deps):
            start = 1 + sum(p.size for p in parts)
            parts.append(v)
            return t.arange(start, start + v.size, dtype=t.int64).reshape(v.shape)
        if isinstance(v, Const):
            return t.zeros(v.shape, dtype=t.int64)
        return 0 if isinstance(v, (int, float, bool)) else v

    unwrap = lambda a: a.value if isinstance(a, Const) else a
    call_args = [ids(a) if i in positions else t.fx.node.map_aggregate(a, unwrap) for i, a in enumerate(args)]
    out = it.target(*call_args, **t.fx.node.map_aggregate(kwargs, unwrap))
    stacked = _stack(it, parts)
    gather = lambda o: stacked.gather(o.numpy().astype(np.int64) - 1)
    return [gather(o) for o in out] if isinstance(out, (list, tuple)) else gather(out)


def _stack(it: Interpreting, parts: list[Deps]) -> Deps:
    import scipy.sparse as sp

    if len(parts) == 1:
        return parts[0]
    first = sp.vstack([p.first for p in parts], format="csr")
    pairs = sp.vstack([p.second for p in parts], format="csr") if it.second else None
    return Deps((first.shape[0],), it.n, first, pairs)


def _anywhere(it: Interpreting, data: list[Deps], shapes: Any, kind: Nonlinearity = L) -> Any:
    """Every output element may be any element of `data` (combined as `kind`)."""
    merged = [d.reduce(np.zeros(d.size, dtype=np.int64), (), kind) for d in data]
    everything = Deps.elementwise((), merged, kind) if merged else Deps.constant((), it.n, it.second)
    spread = lambda s: everything.gather(np.zeros(s, dtype=np.int64))
    return [spread(s) for s in shapes] if isinstance(shapes, list) else spread(shapes)


def _accumulate(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """`index_put(..., accumulate=True)`, `index_add`, `scatter_add`: the operand plus each source
    element added at its target (found by running the matching gather on the operand's positions)."""
    t = torch()
    if name in ("index_put", "_unsafe_index_put"):
        operand, index, source = args[0], args[1], args[2]
    else:
        operand, dim, index, source = args[0], args[1], args[2], args[3]
    if any(isinstance(v, Deps) for v in flat([index])):
        return _anywhere(it, [v for v in (operand, source) if isinstance(v, Deps)], shapes)
    positions = t.arange(int(np.prod(shapes, dtype=np.int64)), dtype=t.int64).reshape(shapes)
    unwrap = lambda a: a.value if isinstance(a, Const) else a
    if name == "index_add":
        targets = t.index_select(positions, dim, index.value)
    elif name == "scatter_add":
        targets = t.gather(positions, dim, index.value)
    else:
        targets = positions[tuple(unwrap(i) for i in index)]
    result = it.deps(operand)
    if not isinstance(source, Deps):
        return result
    source_ids = np.arange(source.size).reshape(source.shape)
    if name == "scatter_add":  # the source's elements at the index's positions
        source_ids = source_ids[tuple(slice(0, s) for s in targets.shape)]
    else:
        source_ids = np.broadcast_to(source_ids, tuple(targets.shape))
    added = source.gather(source_ids).reduce(targets.numpy().ravel(), shapes)
    return Deps.elementwise(shapes, [result, added], L)


def _dims(d: Deps, dims: Any) -> tuple[int, ...]:
    """Non-negative dims of `d` (None or empty: all)."""
    rank = len(d.shape)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return tuple(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return tuple(sorted({k % max(rank, 1) for k in dims}))


def _reduce(d: Deps, dims: tuple[int, ...], shape: tuple, kind: Nonlinearity) -> Deps:
    """Elements combined over `dims` into a result of `shape` (as many elements as the kept dims)."""
    outer = tuple(1 if i in dims else s for i, s in enumerate(d.shape))
    groups = np.broadcast_to(np.arange(int(np.prod(outer, dtype=np.int64))).reshape(outer), d.shape)
    return d.reduce(groups, shape, kind)


def _reduction(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    d = it.deps(args[0])
    at = 2 if name in ("linalg_vector_norm", "norm") else 1  # norms take the order first
    dims = args[at] if len(args) > at else None
    if not isinstance(dims, (int, list, tuple)) or isinstance(dims, bool):
        dims = kwargs.get("dim")
    dims = _dims(d, dims)
    kind = _REDUCTIONS[name]
    if isinstance(shapes, list):  # (values, indices), (var, mean), (min, max)
        return [_reduce(d, dims, s, kind) for s in shapes]
    return _reduce(d, dims, shapes, kind)


def _cumulative(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """Element k along the dim combines elements 0..k (a sparse 0/1 lower-triangular map per line)."""
    import scipy.sparse as sp

    d = it.deps(args[0])
    dim = kwargs.get("dim", args[1]) % max(len(d.shape), 1)
    length = d.shape[dim] if d.shape else 1
    lines = np.moveaxis(np.arange(d.size).reshape(d.shape or (1,)), dim if d.shape else 0, -1).reshape(-1, length)
    later, earlier = np.tril_indices(length)
    rows = lines[:, later].ravel()
    cols = lines[:, earlier].ravel()
    members = sp.csr_array((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(d.size, d.size))
    out = d.combine(members, d.shape, _CUMULATIVE[name])
    return [out, it.constant(shapes[1])] if isinstance(shapes, list) else out


def _along_dims(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """Each output element depends on every element sharing its position off the dims (softmax, sort,
    FFTs): pooled over them, then spread over the output."""
    d = it.deps(args[0])
    if name in _FFT:
        dims = _dims(d, args[1])
    elif name in ("sort", "topk"):
        dim = kwargs.get("dim", args[2] if name == "topk" and len(args) > 2 else args[1] if len(args) > 1 else -1)
        dims = _dims(d, dim if not isinstance(dim, bool) else -1)
    else:
        dims = _dims(d, args[1])
    outer = tuple(1 if i in dims else s for i, s in enumerate(d.shape))
    pooled = _reduce(d, dims, outer, _ALONG_DIM.get(name, L))
    spread = lambda s: pooled.gather(np.broadcast_to(np.arange(pooled.size).reshape(outer), s))
    if isinstance(shapes, list):  # (values, indices)
        return [spread(shapes[0]), it.constant(shapes[1])]
    return spread(shapes)


def _layer_norm(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """`native_layer_norm(x, shape, weight, bias, eps)` -> (out, mean, rstd): each element normalized over
    its trailing `shape` (nonlinearly), then scaled and shifted."""
    d = it.deps(args[0])
    dims = tuple(range(len(d.shape) - len(args[1]), len(d.shape)))
    outer = tuple(1 if i in dims else s for i, s in enumerate(d.shape))
    pooled = _reduce(d, dims, outer, N)
    spread = lambda s: pooled.gather(np.broadcast_to(np.arange(pooled.size).reshape(outer), s))
    affine = [a for a in args[2:4] if isinstance(a, Deps)]
    out = Deps.elementwise(shapes[0], [spread(shapes[0]), *affine], N) if affine else spread(shapes[0])
    return [out, spread(shapes[1]), spread(shapes[2])]


def _product(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """Matrix products as `(batch, m, k) @ (batch, k, p)`; `addmm`-like ops add their first operand."""
    bias = None
    if name in ("addmm", "baddbmm", "addmv"):
        bias, args = args[0], args[1:3]
    a, b = args[0], args[1]
    if name in ("mv", "addmv"):
        a, b = _as3(a, a.shape), _as3(b, (b.shape[0], 1))
    elif name in ("dot", "vdot"):
        a, b = _as3(a, (1, a.shape[0])), _as3(b, (b.shape[0], 1))
    else:
        a, b = _as3(a, a.shape), _as3(b, b.shape)
    out = _matmul(it, a, b).gather(np.arange(int(np.prod(shapes, dtype=np.int64))).reshape(shapes))
    if bias is None or not isinstance(bias, Deps):
        return out
    return Deps.elementwise(shapes, [out, bias], L)


def _as3(v: Any, shape: tuple) -> Any:
    """`v` seen as (batch, rows, cols)."""
    shape = tuple(shape) if len(shape) == 3 else (1, *shape)
    if isinstance(v, Const):
        return Const(v.value.reshape(shape))
    return v.gather(np.arange(v.size).reshape(shape))


def _matmul(it: Interpreting, a: Any, b: Any) -> Deps:
    (nb, m, k), p = a.shape, b.shape[2]
    if isinstance(a, Const) or isinstance(b, Const):
        return _matmul_constant(it, a, b)
    if nb * m * k * p <= _EXACT_PRODUCT_TERMS:  # every term a[z, i, h] * b[z, h, j], then summed over h
        ia = np.arange(a.size).reshape(nb, m, k)[:, :, :, None]
        ib = np.arange(b.size).reshape(nb, k, p)[:, None, :, :]
        shape = (nb, m, k, p)
        terms = Deps.elementwise(shape, [a.gather(np.broadcast_to(ia, shape)), b.gather(np.broadcast_to(ib, shape))], B)
        return _reduce(terms, (2,), (nb, m, p), L)
    rows = _reduce(a, (2,), (nb, m, 1), L).gather(np.broadcast_to(np.arange(nb * m).reshape(nb, m, 1), (nb, m, p)))
    cols = _reduce(b, (1,), (nb, 1, p), L).gather(np.broadcast_to(np.arange(nb * p).reshape(nb, 1, p), (nb, m, p)))
    return Deps.elementwise((nb, m, p), [rows, cols], B)


def _matmul_constant(it: Interpreting, a: Any, b: Any) -> Deps:
    """A product with a known matrix: an output element depends on the traced elements its nonzeros meet."""
    import scipy.sparse as sp

    (nb, m, k), p = a.shape, b.shape[2]
    if isinstance(a, Const) and isinstance(b, Const):
        return Deps.constant((nb, m, p), it.n, it.second)
    if isinstance(b, Const):  # out[z, i, j] <- a[z, i, h] where b[z, h, j] != 0
        z, h, j = np.nonzero(b.value.cpu().numpy())
        i = np.arange(m)[:, None]
        rows = ((z * m + i) * p + j).ravel()
        cols = ((z * m + i) * k + h).ravel()
        traced = a
    else:  # out[z, i, j] <- b[z, h, j] where a[z, i, h] != 0
        z, i, h = np.nonzero(a.value.cpu().numpy())
        j = np.arange(p)[:, None]
        rows = ((z * m + i) * p + j).ravel()
        cols = ((z * k + h) * p + j).ravel()
        traced = b
    members = sp.csr_array((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(nb * m * p, traced.size))
    return traced.combine(members, (nb, m, p), L)


def _dense(it: Interpreting, name: str, args: tuple, kwargs: dict, shapes: Any) -> Any:
    """Dense linear algebra: every output element may depend on every input element, nonlinearly."""
    data = [v for v in flat([args, list(kwargs.values())]) if isinstance(v, Deps)]
    return _anywhere(it, data, shapes, N)
