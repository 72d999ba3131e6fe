"""Global sparsity of PyTensor functions, by interpreting f's graph on index sets (`diface._sparsity.Deps`).

f's trace (the graph as f built it, before PyTensor's rewrites) is walked in topological order from x
and the context arrays to f's output; every Apply node maps the dependencies of its inputs to those of
its outputs. The result holds at every x. Context arrays are inputs whose values are never relied on (a
preparation may be reused with other values); values computable from the graph's constants alone
(shapes, indices, constant matrices) are computed with the ops' own `perform`, so that indexing with
constant indices moves exactly the elements it moves.

Rules: `Elemwise` by its scalar op (linear: +, -, negation, casts, max/min, abs, clip, switch's
branches; bilinear: *; quotient: /; no derivative: comparisons, sign, rounding; nonlinear: the rest,
fused composites included); data movement (`DimShuffle`, `Reshape`, `Subtensor` and advanced indexing
with constant indices, `Join`, `Split`, `Alloc`, `SpecifyShape`, ...) by running the op on element
numbers; set/inc subtensors likewise; reductions (`CAReduce`: sum, max and min linear, product
nonlinear) by their axes; `Dot` and batched matmul (`Blockwise` of `Dot`) as sums of products. Any other
op, or an index computed from x, is taken conservatively: each output element depends on every input
element, nonlinearly (a superset: colorings stay right, only less compressed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._problem import Problem
from ..._sparsity import Deps, Nonlinearity

__all__ = ["graph_sparsity"]

L, N = Nonlinearity.LINEAR, Nonlinearity.NONLINEAR
_LINEAR = {"Add", "Sub", "Neg", "Identity", "Cast", "Maximum", "Minimum", "Abs", "Clip", "Switch", "Second", "Real"}
_ZERO = {
    "LT", "GT", "LE", "GE", "EQ", "NEQ", "Sign", "Floor", "Ceil", "RoundHalfToEven", "RoundHalfAwayFromZero",
    "Trunc", "IsNan", "IsInf", "AND", "OR", "XOR", "Invert",
}  # fmt: skip
_MOVES = {
    "DimShuffle", "Reshape", "Subtensor", "AdvancedSubtensor1", "AdvancedSubtensor", "Join", "Split", "Alloc",
    "SpecifyShape", "ExtractDiag", "Repeat", "Unbroadcast", "TensorFromScalar", "ScalarFromTensor", "MakeVector",
    "Transpose", "Squeeze", "ExpandDims",
}  # fmt: skip
_INCS = {"IncSubtensor", "AdvancedIncSubtensor1", "AdvancedIncSubtensor"}


def graph_sparsity(problem: Problem, second: bool) -> Deps:
    """The dependencies of f's output on x (with `second`, also the pairs of x's elements that interact
    nonlinearly): see the module docstring."""
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import io_toposort

    from ._kernels import problem_trace

    tr = problem_trace(problem)
    n = int(np.prod(tr.x.type.shape))
    deps: dict = {tr.x: Deps.input(tuple(tr.x.type.shape), second)}
    values: dict = {}

    def shape(v: Any) -> tuple:
        s = getattr(v.type, "shape", ())
        if any(d is None for d in s):
            raise NotSupportedError(
                "TracerSparsityDetector: f's graph has a value of unknown shape, which PyTensor's tracer cannot "
                "follow; use di.DenseSparsityDetector(backend) or di.KnownSparsity(pattern)"
            )
        return tuple(int(d) for d in s)

    def d(v: Any) -> Deps:
        got = deps.get(v)
        return got if got is not None else Deps.constant(shape(v), n, second)

    def value(v: Any) -> Any:
        if isinstance(v, Constant):
            return v.data
        return values.get(v)

    for node in io_toposort([tr.x, *tr.contexts], [tr.y]):
        ins = node.inputs
        known = [value(v) for v in ins]
        name = type(node.op).__name__
        if not any(v in deps for v in ins):
            if name in ("Shape", "Shape_i"):
                s = shape(ins[0])
                values[node.outputs[0]] = np.asarray(s if name == "Shape" else s[node.op.i], dtype=np.int64)
            elif all(k is not None for k in known):
                out = _perform(node, known)
                if out is not None:
                    values.update(zip(node.outputs, out))
            continue
        try:
            results = _rule(node, name, [d(v) for v in ins], known, shape, n, second)
        except _Unknown:
            results = None
        if results is None:
            results = [_everything([d(v) for v in ins], shape(o), n, second) for o in node.outputs]
        deps.update(zip(node.outputs, results))
    return d(tr.y)


class _Unknown(Exception):
    """A value the rule needs (an index) is not known at tracing time: the conservative rule applies."""


def _perform(node: Any, inputs: list) -> list | None:
    storage: list = [[None] for _ in node.outputs]
    try:
        node.op.perform(node, [np.asarray(v) for v in inputs], storage)
    except Exception:
        return None
    return [s[0] for s in storage]


def _everything(parts: list, shape: tuple, n: int, second: bool) -> Deps:
    """Every element depends on every element of every input, nonlinearly."""
    total = None
    for p in parts:
        one = p.reduce(np.zeros(p.size, dtype=np.int64), (), N)
        total = one if total is None else Deps.elementwise((), [total, one], N)
    if total is None:
        return Deps.constant(shape, n, second)
    return total.broadcast_to(shape)


def _rule(node: Any, name: str, parts: list, known: list, shape: Any, n: int, second: bool) -> list | None:
    out_shapes = [shape(o) for o in node.outputs]
    if name == "Elemwise":
        scalar = type(node.op.scalar_op).__name__
        if scalar in _ZERO:
            return [Deps.constant(out_shapes[0], n, second)]
        if scalar == "Switch":
            return [Deps.elementwise(out_shapes[0], parts[1:], L)]
        if scalar == "Second":
            return [parts[1].broadcast_to(out_shapes[0])]
        kind = (
            L if scalar in _LINEAR else {"Mul": Nonlinearity.BILINEAR, "TrueDiv": Nonlinearity.QUOTIENT}.get(scalar, N)
        )
        return [Deps.elementwise(out_shapes[0], parts, kind)]
    if name in _MOVES:
        return _moved(node, node.op, parts, known, out_shapes)
    if name in _INCS:
        return _incremented(node, parts, known, out_shapes)
    if name in ("Sum", "Prod", "Max", "Min", "CAReduce", "Any", "All"):
        return [_reduced(node, parts[0], out_shapes[0], n, second)]
    if name == "Dot" or (name == "Blockwise" and type(getattr(node.op, "core_op", None)).__name__ == "Dot"):
        return [_dot(parts[0], parts[1], out_shapes[0], known[0], known[1])]
    return None


def _ids(parts: list, known: list, node: Any) -> tuple[list, list]:
    """Element numbers for the inputs that depend on x (offset per input, from 1), the known values for
    the others; (arrays, offsets)."""
    arrays: list = []
    offsets: list = []
    start = 1
    for v, p, k in zip(node.inputs, parts, known):
        if p.first.nnz or (p.second is not None and p.second.nnz) or (k is None and _is_float(v)):
            arrays.append(np.arange(start, start + p.size, dtype=np.float64).reshape(p.shape))
            offsets.append(start)
            start += p.size
        elif k is not None:
            arrays.append(np.asarray(k))
            offsets.append(None)
        else:
            raise _Unknown
    return arrays, offsets


def _is_float(v: Any) -> bool:
    return str(getattr(v.type, "dtype", "")).startswith("float")


def _gather_ids(ids: np.ndarray, parts: list, offsets: list, shape: tuple) -> Deps:
    ids = np.asarray(ids).reshape(shape).astype(np.int64)
    result = None
    for p, off in zip(parts, offsets):
        if off is None:
            continue
        local = ids - off
        index = np.where((local >= 0) & (local < p.size), local, -1)
        g = p.gather(index)
        result = g if result is None else Deps.elementwise(shape, [result, g], L)
    assert result is not None
    return result


def _moved(node: Any, op: Any, parts: list, known: list, out_shapes: list) -> list:
    arrays, offsets = _ids(parts, known, node)
    out = _perform(node, arrays) if op is node.op else None
    if op is not node.op:
        storage: list = [[None] for _ in node.outputs]
        op.perform(node, arrays, storage)
        out = [s[0] for s in storage]
    if out is None:
        raise _Unknown
    return [_gather_ids(o, parts, offsets, s) for o, s in zip(out, out_shapes)]


def _incremented(node: Any, parts: list, known: list, out_shapes: list) -> list:
    op = node.op
    props = {p: getattr(op, p) for p in getattr(op, "__props__", ())}
    if "set_instead_of_inc" not in props:
        raise _Unknown
    setting = type(op)(**{**props, "set_instead_of_inc": True})
    placed = _moved(node, setting, parts, known, out_shapes)[0]
    if op.set_instead_of_inc:
        return [placed]
    return [Deps.elementwise(out_shapes[0], [placed, parts[0]], L)]  # x's elements stay in every position


def _reduced(node: Any, part: Deps, out_shape: tuple, n: int, second: bool) -> Deps:
    scalar = type(getattr(node.op, "scalar_op", None)).__name__
    if scalar in _ZERO or type(node.op).__name__ in ("Any", "All"):
        return Deps.constant(out_shape, n, second)
    axis = node.op.axis
    ndim = len(part.shape)
    axes = tuple(range(ndim)) if axis is None else tuple(a % ndim for a in axis)
    kept = [i for i in range(ndim) if i not in axes]
    grid = np.indices(part.shape).reshape(ndim, -1)
    kept_shape = tuple(part.shape[i] for i in kept)
    groups = np.ravel_multi_index(tuple(grid[i] for i in kept), kept_shape) if kept else np.zeros(part.size, np.int64)
    kind = L if scalar in ("Add", "Maximum", "Minimum") else N
    return part.reduce(groups, out_shape, kind)


def _dot(a: Deps, b: Deps, out_shape: tuple, a_value: Any = None, b_value: Any = None) -> Deps:
    """a @ b (1-D or 2-D, or batched over leading axes) as a sum over k of products a[..., i, k] b[..., k, j];
    a product with a known zero (a constant sparse matrix) depends on nothing."""
    a_shape = (1, *a.shape) if len(a.shape) == 1 else a.shape
    b_shape = (*b.shape, 1) if len(b.shape) == 1 else b.shape
    ai = np.arange(a.size).reshape(a_shape)
    bi = np.arange(b.size).reshape(b_shape)
    batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    m, k, p = a_shape[-2], a_shape[-1], b_shape[-1]
    full = (*batch, m, k, p)
    a_index = np.broadcast_to(ai[..., :, :, None], full)
    b_index = np.broadcast_to(bi[..., None, :, :], full)
    if a_value is not None:  # a known: b's element matters only where a's is not zero
        b_index = np.where(
            np.broadcast_to(np.asarray(a_value).reshape(a_shape)[..., :, :, None], full) != 0, b_index, -1
        )
    if b_value is not None:
        a_index = np.where(
            np.broadcast_to(np.asarray(b_value).reshape(b_shape)[..., None, :, :], full) != 0, a_index, -1
        )
    ga, gb = a.gather(a_index), b.gather(b_index)
    products = Deps.elementwise(full, [ga, gb], Nonlinearity.BILINEAR)
    grid = np.indices(full).reshape(len(full), -1)
    kept = [i for i in range(len(full)) if i != len(full) - 2]
    groups = np.ravel_multi_index(tuple(grid[i] for i in kept), tuple(full[i] for i in kept))
    summed = products.reduce(groups, tuple(full[i] for i in kept), L)
    return summed.gather(np.arange(summed.size).reshape(out_shape))
