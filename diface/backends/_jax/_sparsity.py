"""Global sparsity of JAX functions, by interpreting their jaxpr on index sets (`diface._sparsity.Deps`).

f is traced once with `jax.make_jaxpr` (x and the context values as inputs: a Constant's zeros are
never relied on, since a preparation may be reused with other values); then every equation maps the
dependencies of its inputs to those of its outputs. Values known at tracing time (literals, arrays f
closes over) are kept as numbers, so a matrix product with a constant sparse matrix gets that
matrix's pattern. The result holds at every x.

Covered: elementwise arithmetic and functions (their second-order structure: linear, bilinear,
quotient, nonlinear), data movement (reshape, broadcast, transpose, slices, indexing and scatters with
indices known at tracing time, concatenate, pad, dynamic slices), reductions and cumulative
reductions, `dot_general`, sorting, FFTs and dense linear algebra (each matrix dense), and the control
flow primitives `jit`, `cond` (both branches), `while_loop` and `scan` (to a fixed point), custom
derivatives. Indices computed from x make every position possible (the pattern covers them all). A
Python branch on x cannot be traced: `NotSupportedError` suggests `DenseSparsityDetector` or
`KnownSparsity`, as does an uncovered primitive, which is named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._sparsity import Deps, Nonlinearity

__all__ = ["jaxpr_sparsity"]

L, N, B, Q = Nonlinearity.LINEAR, Nonlinearity.NONLINEAR, Nonlinearity.BILINEAR, Nonlinearity.QUOTIENT
_ELEMENTWISE = {
    **dict.fromkeys(
        "add sub neg add_any convert_element_type copy copy_p reduce_precision real conj max min abs rem "
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
#: no derivative: the outputs depend on no input
_CONSTANT = set(
    "sign floor ceil round is_finite eq ne lt le gt ge and or not xor stop_gradient iota argmax argmin "
    "nextafter population_count clz shift_left shift_right_arithmetic shift_right_logical "
    "random_bits random_seed random_wrap random_unwrap rng_bit_generator rng_uniform reduce_and reduce_or "
    "reduce_xor eq_to lt_to le_to".split()
)
#: pure data movement: each output element is one input element (or a constant); (data operand positions)
_MOVES: dict[str, Callable[[int], Sequence[int]]] = {
    "reshape": lambda k: (0,),
    "broadcast_in_dim": lambda k: (0,),
    "transpose": lambda k: (0,),
    "squeeze": lambda k: (0,),
    "expand_dims": lambda k: (0,),
    "rev": lambda k: (0,),
    "slice": lambda k: (0,),
    "concatenate": lambda k: tuple(range(k)),
    "pad": lambda k: (0, 1),
    "dynamic_slice": lambda k: (0,),
    "dynamic_update_slice": lambda k: (0, 1),
    "gather": lambda k: (0,),
    "scatter": lambda k: (0, 2),
    "split": lambda k: (0,),
    "tile": lambda k: (0,),
}
_REDUCTIONS = {"reduce_sum": L, "reduce_max": L, "reduce_min": L, "reduce_prod": B}
_CUMULATIVE = {"cumsum": L, "cummax": L, "cummin": L, "cumprod": B, "cumlogsumexp": N}
_DENSE_MATRIX = set("cholesky triangular_solve lu qr eigh eig svd schur hessenberg tridiagonal".split())
_CALLS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


class _Const:
    """A value known while tracing (a literal, or an array f closes over), kept as a NumPy array."""

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)

    @property
    def shape(self) -> tuple:
        return self.value.shape


def jaxpr_sparsity(f: Callable, x: Any, context_values: tuple, second: bool) -> Deps:
    """The dependencies of f's output on x (first order; with `second`, also the pairs of x's elements
    that interact nonlinearly): see the module docstring."""
    import jax

    try:
        closed = jax.make_jaxpr(lambda x, *cv: f(x, *cv))(x, *context_values)
    except jax.errors.ConcretizationTypeError as e:
        raise NotSupportedError(
            "TracerSparsityDetector: f branches on the value of x (or converts it to a number), so its "
            "sparsity pattern may depend on x and no global pattern exists; use "
            "di.DenseSparsityDetector(backend) for the pattern at the preparation point, or "
            f"di.KnownSparsity(pattern) ({type(e).__name__}: {str(e).splitlines()[0]})"
        ) from e
    jaxpr = closed.jaxpr
    x_deps = Deps.input(np.shape(x), second)
    n = x_deps.n
    inputs = [x_deps] + [Deps.constant(np.shape(v), n, second) for v in jax.tree_util.tree_leaves(context_values)]
    (out,) = _run(jaxpr, [_Const(c) for c in closed.consts], inputs, n, second)
    return out if isinstance(out, Deps) else Deps.constant(out.shape, n, second)


def _run(jaxpr: Any, consts: list, inputs: list, n: int, second: bool) -> list:
    env: dict = {}

    def read(var: Any) -> Any:
        if type(var).__name__ == "Literal":
            return _Const(var.val)
        return env[var]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, inputs):
        env[var] = value
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        shapes = [tuple(v.aval.shape) for v in eqn.outvars]
        outs = _equation(eqn, ins, shapes, n, second)
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
    return [read(v) for v in jaxpr.outvars]


def _deps(value: Any, n: int, second: bool) -> Deps:
    return value if isinstance(value, Deps) else Deps.constant(value.shape, n, second)


def _equation(eqn: Any, ins: list, shapes: list, n: int, second: bool) -> list:
    name = eqn.primitive.name
    if not any(isinstance(v, Deps) for v in ins) and name not in ("while", "scan", "cond"):
        try:  # everything known: compute it, to keep exploiting known zeros downstream
            out = eqn.primitive.bind(*[v.value for v in ins], **eqn.params)
            return [_Const(o) for o in (out if eqn.primitive.multiple_results else [out])]
        except Exception:  # a primitive that cannot run eagerly: its outputs still depend on no input
            return [Deps.constant(s, n, second) for s in shapes]
    constant = lambda: [Deps.constant(s, n, second) for s in shapes]
    if name in _CONSTANT:
        return constant()
    if name == "integer_pow":
        y = eqn.params["y"]
        if y == 0:
            return constant()
        return [Deps.elementwise(shapes[0], [_deps(ins[0], n, second)], L if y == 1 else N)]
    if name == "select_n":  # the predicate selects, it is not differentiated
        return [Deps.elementwise(shapes[0], [_deps(v, n, second) for v in ins[1:]], L)]
    if name in _ELEMENTWISE:
        kind = _ELEMENTWISE[name]
        operands = [_deps(v, n, second) for v in ins]
        if kind is Q and not isinstance(ins[1], Deps):
            kind = L  # division by a constant
        return [Deps.elementwise(shapes[0], operands, kind)]
    if name in _MOVES:
        return _move(eqn, ins, shapes, _MOVES[name](len(ins)), n, second)
    if name == "scatter_add" or name == "scatter-add":
        return _scatter_add(eqn, ins, shapes, n, second)
    if name in _REDUCTIONS:
        return [_reduce(_deps(ins[0], n, second), eqn.params["axes"], shapes[0], _REDUCTIONS[name])]
    if name in _CUMULATIVE:
        return [_cumulative(_deps(ins[0], n, second), eqn.params, _CUMULATIVE[name])]
    if name == "dot_general":
        return [_dot_general(eqn, ins, shapes[0], n, second)]
    if name == "sort":
        return _along_axes(ins, shapes, (eqn.params["dimension"],), n, second, L)
    if name == "fft":
        axes = tuple(range(len(shapes[0]) - len(eqn.params["fft_lengths"]), len(shapes[0])))
        return _along_axes(ins, shapes, axes, n, second, L)
    if name in _DENSE_MATRIX:
        return _along_axes(ins, shapes, None, n, second, N)
    if name in ("custom_linear_solve", "linear_solve"):  # every output may depend on every input
        return _anywhere(ins, shapes, range(len(ins)), n, second, N)
    if name in ("pjit", "jit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call", "custom_vjp_call"):
        return _call(eqn, ins, n, second)
    if name == "custom_vjp_call_jaxpr":
        return _call(eqn, ins, n, second)
    if name == "cond":
        return _cond(eqn, ins, n, second)
    if name == "while":
        return _while(eqn, ins, n, second)
    if name == "scan":
        return _scan(eqn, ins, n, second)
    raise NotSupportedError(
        f"TracerSparsityDetector: the JAX primitive {name!r} has no sparsity rule in diface; use "
        "di.DenseSparsityDetector(backend) (the pattern at the preparation point) or di.KnownSparsity(pattern)"
    )


# -- data movement ---------------------------------------------------------------------------------------
def _move(eqn: Any, ins: list, shapes: list, data: Sequence[int], n: int, second: bool) -> list:
    """Run the primitive on element ids (unique across its data operands; -1 for constants) instead of
    values: each output id says which input element the output element is."""
    if any(isinstance(v, Deps) for i, v in enumerate(ins) if i not in data):
        return _anywhere(ins, shapes, data, n, second)  # indices from x: any position is possible
    ids, parts, offset = [], [], 0
    for i, v in enumerate(ins):
        if i in data:
            size = int(np.prod(v.shape, dtype=np.int64))
            if isinstance(v, Deps):
                ids.append(np.arange(offset, offset + size, dtype=np.int64).reshape(v.shape))
                parts.append(v)
                offset += size
            else:
                ids.append(np.full(v.shape, -1, dtype=np.int64))
        else:
            ids.append(v.value)
    out = eqn.primitive.bind(*ids, **eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    stacked = _stack(parts, n, second)
    return [stacked.gather(np.asarray(o, dtype=np.int64)) for o in outs]


def _stack(parts: list[Deps], n: int, second: bool) -> Deps:
    import scipy.sparse as sp

    first = sp.vstack([p.first for p in parts], format="csr")
    pairs = sp.vstack([p.second for p in parts], format="csr") if second else None
    return Deps((first.shape[0],), n, first, pairs)


def _anywhere(
    ins: list, shapes: list, data: Sequence[int], n: int, second: bool, kind: Nonlinearity = Nonlinearity.LINEAR
) -> list:
    """Every output element may be any element of the data operands (combined as `kind`)."""
    parts = [ins[i] for i in data if isinstance(ins[i], Deps)]
    merged = [p.reduce(np.zeros(p.size, dtype=np.int64), (), kind) for p in parts]
    everything = Deps.elementwise((), merged, kind) if merged else Deps.constant((), n, second)
    return [everything.gather(np.zeros(s, dtype=np.int64)) for s in shapes]


def _scatter_add(eqn: Any, ins: list, shapes: list, n: int, second: bool) -> list:
    """operand + updates added at their positions: the updates' positions from the transpose (a gather)
    of the scatter applied to output ids (exact integers in float64)."""
    import jax

    operand, indices, updates = ins[0], ins[1], ins[2]
    if isinstance(indices, Deps):
        return _anywhere(ins, shapes, (0, 2), n, second)
    out_shape = shapes[0]
    size = int(np.prod(out_shape, dtype=np.int64))

    def scatter(u: Any) -> Any:
        return eqn.primitive.bind(jax.numpy.zeros(out_shape), indices.value, u, **eqn.params)

    ids = np.arange(1, size + 1, dtype=np.float64).reshape(out_shape)
    (where,) = jax.linear_transpose(scatter, jax.ShapeDtypeStruct(updates.shape, np.float64))(ids)
    targets = np.asarray(where, dtype=np.int64).ravel() - 1  # -1: dropped (out of bounds)
    result = _deps(operand, n, second)
    if isinstance(updates, Deps):
        added = updates.reduce(targets, out_shape)
        result = Deps.elementwise(out_shape, [result, added], L)
    return [result]


# -- reductions ------------------------------------------------------------------------------------------
def _reduce(d: Deps, axes: Sequence[int], shape: tuple, kind: Nonlinearity) -> Deps:
    kept = [i for i in range(len(d.shape)) if i not in axes]
    outer = tuple(d.shape[i] if i in kept else 1 for i in range(len(d.shape)))
    groups = np.broadcast_to(np.arange(int(np.prod(outer, dtype=np.int64))).reshape(outer), d.shape)
    return d.reduce(groups, shape, kind)


def _cumulative(d: Deps, params: dict, kind: Nonlinearity) -> Deps:
    import scipy.sparse as sp

    axis, reverse = params["axis"], params.get("reverse", False)
    ids = np.arange(d.size).reshape(d.shape)
    moved = np.moveaxis(ids, axis, -1).reshape(-1, d.shape[axis])
    length = d.shape[axis]
    rows, cols = [], []
    for k in range(length):
        members = moved[:, k:] if reverse else moved[:, : k + 1]
        rows.append(np.repeat(moved[:, k], members.shape[1]))
        cols.append(members.ravel())
    rows_a, cols_a = np.concatenate(rows), np.concatenate(cols)
    m = sp.csr_array((np.ones(rows_a.size, dtype=np.int8), (rows_a, cols_a)), shape=(d.size, d.size))
    return d.combine(m, d.shape, kind)


def _along_axes(ins: list, shapes: list, axes: tuple | None, n: int, second: bool, kind: Nonlinearity) -> list:
    """Each output element depends on every element of the operands that shares its position off `axes`
    (sort along an axis, FFTs); with `axes` None, on the whole matrix (the last two axes) it belongs to
    (decompositions, solves), whatever the outputs' shapes."""
    parts = [v for v in ins if isinstance(v, Deps)]
    results = []
    for shape in shapes:
        merged = []
        for p in parts:
            if axes is None:
                batch = p.shape[:-2]
                pooled = _reduce(p, (len(p.shape) - 2, len(p.shape) - 1), batch, kind)
                lead = np.arange(pooled.size).reshape(batch + (1,) * (len(shape) - len(batch)))
                merged.append(pooled.gather(np.broadcast_to(lead, shape)))
            else:
                outer = tuple(1 if i in axes else s for i, s in enumerate(p.shape))
                pooled = _reduce(p, axes, outer, kind)
                merged.append(pooled.gather(np.broadcast_to(np.arange(pooled.size).reshape(outer), shape)))
        results.append(Deps.elementwise(shape, merged, kind) if merged else Deps.constant(shape, n, second))
    return results


# -- products --------------------------------------------------------------------------------------------
def _dot_general(eqn: Any, ins: list, shape: tuple, n: int, second: bool) -> Deps:
    (contract_a, contract_b), (batch_a, batch_b) = eqn.params["dimension_numbers"]
    a, b = ins
    if isinstance(a, _Const) and isinstance(b, Deps):
        return _dot_with_constant(b, a.value, contract_b, batch_b, contract_a, batch_a, shape, lhs_constant=True)
    if isinstance(b, _Const) and isinstance(a, Deps):
        return _dot_with_constant(a, b.value, contract_a, batch_a, contract_b, batch_b, shape, lhs_constant=False)
    # both depend on x: out[batch, free_a, free_b] combines a over its contracting axes and b over its
    pooled = []
    for d, contract, batch, first in ((a, contract_a, batch_a, True), (b, contract_b, batch_b, False)):
        d = _deps(d, n, second)
        free = [i for i in range(len(d.shape)) if i not in contract and i not in batch]
        moved = d.gather(np.transpose(np.arange(d.size).reshape(d.shape), (*batch, *free, *contract)))
        kept = len(batch) + len(free)
        outer = moved.shape[:kept]
        reduced = _reduce(moved, tuple(range(kept, len(moved.shape))), outer, L)
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


# -- calls and control flow ------------------------------------------------------------------------------
def _inner(eqn: Any) -> Any:
    for key in _CALLS:
        if key in eqn.params:
            return eqn.params[key]
    raise NotSupportedError(f"TracerSparsityDetector: cannot find the body of {eqn.primitive.name!r}")


def _closed(jaxpr: Any) -> tuple[Any, list]:
    """(jaxpr, its constants as _Const) of a ClosedJaxpr or a Jaxpr."""
    inner = getattr(jaxpr, "jaxpr", None)
    if inner is not None and hasattr(jaxpr, "consts"):
        return inner, [_Const(c) for c in jaxpr.consts]
    return jaxpr, []


def _call(eqn: Any, ins: list, n: int, second: bool) -> list:
    jaxpr, consts = _closed(_inner(eqn))
    return _run(jaxpr, consts, ins, n, second)


def _merge(values: list, n: int, second: bool) -> Any:
    if all(isinstance(v, _Const) for v in values) and all(np.array_equal(v.value, values[0].value) for v in values):
        return values[0]
    deps = [_deps(v, n, second) for v in values]
    return Deps.elementwise(deps[0].shape, deps, L) if len(deps) > 1 else deps[0]


def _cond(eqn: Any, ins: list, n: int, second: bool) -> list:
    """Either branch may run: the union of their outputs (the index is not differentiated)."""
    outputs = []
    for branch in eqn.params["branches"]:
        jaxpr, consts = _closed(branch)
        outputs.append(_run(jaxpr, consts, ins[1:], n, second))
    return [_merge(list(values), n, second) for values in zip(*outputs)]


def _grow(old: list, new: list, n: int, second: bool) -> tuple[list, bool]:
    merged = [_merge([a, b], n, second) for a, b in zip(old, new)]
    changed = any(
        isinstance(m, Deps) and (not isinstance(o, Deps) or (m.first != o.first).nnz or _pairs_changed(m, o))
        for m, o in zip(merged, old)
    )
    return merged, changed


def _pairs_changed(m: Deps, o: Deps) -> bool:
    return m.second is not None and bool((m.second != o.second).nnz)


def _while(eqn: Any, ins: list, n: int, second: bool) -> list:
    """The carries after any number of iterations: the body applied until nothing new depends."""
    p = eqn.params
    cond_n, body_n = p["cond_nconsts"], p["body_nconsts"]
    body, body_consts = _closed(p["body_jaxpr"])
    consts = body_consts
    body_args = ins[cond_n : cond_n + body_n]
    carries = list(ins[cond_n + body_n :])
    for _ in range(10_000):
        new = _run(body, consts, [*body_args, *carries], n, second)
        carries, changed = _grow(carries, new, n, second)
        if not changed:
            return carries
    raise NotSupportedError("TracerSparsityDetector: a while_loop's dependencies did not settle")


def _scan(eqn: Any, ins: list, n: int, second: bool) -> list:
    """Carries to a fixed point; every slice of xs may meet every iteration (ys: the union)."""
    p = eqn.params
    body, consts = _closed(p["jaxpr"])
    n_consts, n_carry = p["num_consts"], p["num_carry"]
    fixed, carries, xs = ins[:n_consts], list(ins[n_consts : n_consts + n_carry]), ins[n_consts + n_carry :]
    slices = [_slice_union(x, n, second) for x in xs]
    ys = None
    for _ in range(10_000):
        outs = _run(body, consts, [*fixed, *carries, *slices], n, second)
        new_carries, step_ys = outs[:n_carry], outs[n_carry:]
        ys = step_ys if ys is None else [_merge([a, b], n, second) for a, b in zip(ys, step_ys)]
        carries, changed = _grow(carries, new_carries, n, second)
        if not changed:
            break
    length = p["length"]
    stacked = [_stacked_ys(y, length, n, second) for y in ys or []]
    return [*carries, *stacked]


def _slice_union(x: Any, n: int, second: bool) -> Any:
    """One slice of `xs` along the scanned axis, depending on everything any slice depends on."""
    if isinstance(x, _Const):
        return _Const(x.value[0]) if np.all(x.value == x.value[:1]) else Deps.constant(x.shape[1:], n, second)
    return _reduce(x, (0,), x.shape[1:], L)


def _stacked_ys(y: Any, length: int, n: int, second: bool) -> Deps:
    d = _deps(y, n, second)
    ids = np.broadcast_to(np.arange(d.size).reshape(d.shape), (length, *d.shape))
    return d.gather(ids)
