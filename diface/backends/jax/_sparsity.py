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
from ._kernels import is_traceable
from ._sparsity_rules import (
    CONSTANT,
    CUMULATIVE,
    DENSE_MATRIX,
    MOVES,
    REDUCTIONS,
    L,
    N,
    dot_general,
    elementwise_kind,
)
from ._sparsity_rules import Const as _Const
from ._sparsity_rules import deps_of as _deps
from ._sparsity_rules import reduce_axes as _reduce

__all__ = ["jaxpr_sparsity"]

_CALLS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


def jaxpr_sparsity(f: Callable, x: Any, context_values: tuple, second: bool) -> Deps:
    """The dependencies of f's output on x (first order; with `second`, also the pairs of x's elements
    that interact nonlinearly): see the module docstring."""
    import jax

    # contexts JAX cannot trace (a string, an object) are closed over, as the compiled kernels hold them
    traced = [v for v in context_values if is_traceable(v)]
    slots = [is_traceable(v) for v in context_values]

    def bound(x: Any, *values: Any) -> Any:
        it = iter(values)
        return f(x, *(next(it) if slot else v for v, slot in zip(context_values, slots)))

    try:
        closed = jax.make_jaxpr(bound)(x, *traced)
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
    inputs = [x_deps] + [Deps.constant(np.shape(v), n, second) for v in jax.tree_util.tree_leaves(traced)]
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
    # each value is dropped after its last use: a program's intermediates are not all held at once
    kept = {id(v) for v in jaxpr.outvars}
    last = {id(v): k for k, eqn in enumerate(jaxpr.eqns) for v in eqn.invars if type(v).__name__ != "Literal"}
    for k, eqn in enumerate(jaxpr.eqns):
        ins = [read(v) for v in eqn.invars]
        shapes = [tuple(v.aval.shape) for v in eqn.outvars]
        outs = _equation(eqn, ins, shapes, n, second)
        del ins
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
        for v in eqn.invars:
            if type(v).__name__ != "Literal" and last.get(id(v)) == k and id(v) not in kept:
                env.pop(v, None)
    return [read(v) for v in jaxpr.outvars]


def _equation(eqn: Any, ins: list, shapes: list, n: int, second: bool) -> list:
    name = eqn.primitive.name
    if not any(isinstance(v, Deps) for v in ins) and name not in ("while", "scan", "cond"):
        try:  # everything known: compute it, to keep exploiting known zeros downstream
            out = eqn.primitive.bind(*[v.value for v in ins], **eqn.params)
            return [_Const(o) for o in (out if eqn.primitive.multiple_results else [out])]
        except Exception:  # a primitive that cannot run eagerly: its outputs still depend on no input
            return [Deps.constant(s, n, second) for s in shapes]
    constant = lambda: [Deps.constant(s, n, second) for s in shapes]
    if name == "integer_pow":
        y = eqn.params["y"]
        if y == 0:
            return constant()
        return [Deps.elementwise(shapes[0], [_deps(ins[0], n, second)], L if y == 1 else N)]
    if name == "select_n":  # the predicate selects, it is not differentiated
        return [Deps.elementwise(shapes[0], [_deps(v, n, second) for v in ins[1:]], L)]
    kind = elementwise_kind(eqn, ins)
    if kind is not None:
        return [Deps.elementwise(shapes[0], [_deps(v, n, second) for v in ins], kind)]
    if name in CONSTANT:
        return constant()
    if name in MOVES:
        return _move(eqn, ins, shapes, MOVES[name](len(ins)), n, second)
    if name == "scatter_add" or name == "scatter-add":
        return _scatter_add(eqn, ins, shapes, n, second)
    if name in REDUCTIONS:
        return [_reduce(_deps(ins[0], n, second), eqn.params["axes"], shapes[0], REDUCTIONS[name])]
    if name in CUMULATIVE:
        return [_cumulative(_deps(ins[0], n, second), eqn.params, CUMULATIVE[name])]
    if name == "dot_general":
        return [dot_general(eqn, ins, shapes[0], n, second)]
    if name == "sort":
        return _along_axes(ins, shapes, (eqn.params["dimension"],), n, second, L)
    if name == "fft":
        axes = tuple(range(len(shapes[0]) - len(eqn.params["fft_lengths"]), len(shapes[0])))
        return _along_axes(ins, shapes, axes, n, second, L)
    if name in DENSE_MATRIX:
        return _along_axes(ins, shapes, None, n, second, N)
    if name in ("custom_linear_solve", "linear_solve"):  # every output may depend on every input
        return _anywhere(ins, shapes, range(len(ins)), n, second, N)
    calls = ("pjit", "jit", "closed_call", "core_call", "remat", "remat2", "checkpoint")  # remat2: jax.checkpoint
    if name in (*calls, "custom_jvp_call", "custom_vjp_call"):
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
