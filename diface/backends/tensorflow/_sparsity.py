"""Global sparsity of TensorFlow functions, by interpreting their traced graph on index sets
(`diface._sparsity.Deps`).

f is traced once into a `tf.function` graph (x and the context values as placeholders: a Constant's
value is never relied on); then the graph's operations, in the order they were created, map the
dependencies of their inputs to those of their outputs. The result holds at every x.

Covered: elementwise arithmetic and functions (with their second-order structure: linear, bilinear,
quotient, nonlinear), `Select`/`where`, clipping, data movement (reshape, transpose, slices, gathers,
concatenation, stacking, tiling, broadcasting, padding, reversal: run on element ids with the graph's own
kernels), reductions, matrix products, and whole-array operations (FFTs, linear algebra: each output
element may depend on every input element). Parameters (shapes, axes, indices) must be known when f is
traced; indices computed from x make every position possible. An operation outside these raises
`NotSupportedError` naming it and suggesting `di.DenseSparsityDetector`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._sparsity import Deps, Nonlinearity
from ._env import tf
from ._kernels import is_traced, spec_of

__all__ = ["graph_sparsity"]

L, N, B, Q = Nonlinearity.LINEAR, Nonlinearity.NONLINEAR, Nonlinearity.BILINEAR, Nonlinearity.QUOTIENT
_ELEMENTWISE = {
    **dict.fromkeys(
        "Identity Snapshot Cast Neg AddV2 Add Sub AddN Real Imag Conj Complex Maximum Minimum Abs ComplexAbs "
        "ClipByValue SelectV2 Select FloorMod Mod".split(),
        L,
    ),
    **dict.fromkeys(
        "Sin Cos Tan Asin Acos Atan Sinh Cosh Tanh Asinh Acosh Atanh Exp Expm1 Log Log1p Sigmoid Sqrt Rsqrt Square "
        "Reciprocal Inv Pow Atan2 Erf Erfc Softplus Relu Elu Selu Lgamma Digamma Xlogy Xlog1py Angle".split(),
        N,
    ),
    "Mul": B,
    "RealDiv": Q,
    "Div": Q,
    "DivNoNan": Q,
}
#: outputs that do not depend on the input's value through a derivative
_CONSTANT = set(
    "Sign Floor Ceil Round Rint StopGradient ZerosLike OnesLike Shape ShapeN Size Rank Equal NotEqual Less LessEqual "
    "Greater GreaterEqual LogicalAnd LogicalOr LogicalNot IsNan IsInf IsFinite ArgMax ArgMin Fill Range "
    "BroadcastGradientArgs".split()
)
#: data movement: (the positions of their data inputs)
_MOVES: dict[str, Callable[[int], Sequence[int]]] = {
    **dict.fromkeys(
        "Reshape Transpose StridedSlice Slice ExpandDims Squeeze Tile BroadcastTo ReverseV2 GatherV2 "
        "MatrixDiagPartV3 MatrixBandPart Roll".split(),
        lambda k: (0,),
    ),
    "ConcatV2": lambda k: tuple(range(k - 1)),
    "SplitV": lambda k: (0,),
    "Split": lambda k: (1,),
    "Unpack": lambda k: (0,),
    "Pack": lambda k: tuple(range(k)),
    "Pad": lambda k: (0,),
    "PadV2": lambda k: (0, 2),
}
_REDUCTIONS = {"Sum": L, "Mean": L, "Max": L, "Min": L, "Prod": N, "EuclideanNorm": N}
_WHOLE = set(
    "FFT IFFT FFT2D IFFT2D RFFT IRFFT MatrixInverse MatrixDeterminant LogMatrixDeterminant MatrixSolve Cholesky "
    "SelfAdjointEigV2 Svd Qr MatrixTriangularSolve Einsum".split()
)
_LINEAR_WHOLE = {"FFT", "IFFT", "FFT2D", "IFFT2D", "RFFT", "IRFFT"}


def graph_sparsity(f: Callable, x: Any, context_values: tuple, second: bool) -> Deps:
    """The dependencies of f's output on x (first order; with `second`, also the pairs of x's elements that
    interact nonlinearly): see the module docstring."""
    tf_ = tf()
    x_dtype = tf_.as_dtype(x.dtype)
    traced = [i for i, v in enumerate(context_values) if is_traced(v)]

    def fn(x: Any, traced_values: tuple) -> Any:
        values = list(context_values)
        for i, v in zip(traced, traced_values, strict=True):
            values[i] = v
        return f(x, *values)

    signature = [tf_.TensorSpec(tuple(x.shape), x_dtype), tuple(spec_of(context_values[i], x_dtype) for i in traced)]
    try:
        concrete = tf_.function(fn, input_signature=signature, autograph=False).get_concrete_function()
    except (TypeError, tf_.errors.OperatorNotAllowedInGraphError) as e:
        raise NotSupportedError(
            "TracerSparsityDetector: f cannot be traced into a TensorFlow graph (a Python branch on x?), so no "
            "global pattern exists; use di.DenseSparsityDetector(backend) for the pattern at the preparation "
            f"point, or di.KnownSparsity(pattern) ({type(e).__name__}: {str(e).splitlines()[0]})"
        ) from e
    graph = concrete.graph
    x_deps = Deps.input(tuple(x.shape), second)
    n = x_deps.n
    env: dict[str, Any] = {}
    placeholders = [t for t in graph.inputs if t.dtype != tf_.resource]
    env[placeholders[0].name] = x_deps
    for t in placeholders[1:]:
        env[t.name] = None  # None: depends on no element of x
    for op in graph.get_operations():
        if op.type == "Placeholder" or any(o.name in env for o in op.outputs):
            continue
        outs = _operation(op, env, n, second)
        for o, v in zip(op.outputs, outs, strict=True):
            env[o.name] = v
    out = env.get(concrete.outputs[0].name) if concrete.outputs else None
    shape = tuple(concrete.outputs[0].shape) if concrete.outputs else ()
    return out if isinstance(out, Deps) else Deps.constant(shape, n, second)


def _shape(t: Any) -> tuple:
    return tuple(int(s) for s in t.shape)


def _operation(op: Any, env: dict, n: int, second: bool) -> list:
    ins = [env.get(t.name) for t in op.inputs]
    shapes = [_shape(o) for o in op.outputs]
    if not any(isinstance(v, Deps) for v in ins) or op.type in _CONSTANT:
        return [None] * len(shapes)  # depends on no element of x
    if op.type == "IdentityN":  # output i is input i (a custom gradient's op: di.checkpoint)
        return [v if isinstance(v, Deps) else None for v in ins]
    kind = _ELEMENTWISE.get(op.type)
    if kind is not None:
        operands = [_deps(v, t, n, second) for v, t in zip(ins, op.inputs, strict=True)]
        if op.type in ("SelectV2", "Select"):
            operands = operands[1:]  # the condition selects, it is not differentiated
        if op.type == "Mul" and sum(isinstance(v, Deps) for v in ins) < 2:
            kind = L
        if op.type in ("RealDiv", "Div", "DivNoNan") and not isinstance(ins[1], Deps):
            kind = L
        if op.type == "Pow" and not isinstance(ins[0], Deps):
            kind = N
        return [Deps.elementwise(shapes[0], operands, kind)]
    if op.type in _MOVES:
        return _move(op, ins, _MOVES[op.type](len(ins)), n, second)
    if op.type in _REDUCTIONS:
        axes = tf().get_static_value(op.inputs[1])
        if axes is None:
            return _anywhere(ins, shapes, (0,), n, second, _REDUCTIONS[op.type])
        d = _deps(ins[0], op.inputs[0], n, second)
        axes = [int(a) % max(len(d.shape), 1) for a in np.atleast_1d(axes)]
        return [_reduce(d, axes, shapes[0], _REDUCTIONS[op.type])]
    if op.type in ("MatMul", "BatchMatMulV2", "BatchMatMulV3", "BatchMatMul"):
        return [_matmul(op, ins, shapes[0], n, second)]
    if op.type in _WHOLE:
        return _anywhere(ins, shapes, range(len(ins)), n, second, L if op.type in _LINEAR_WHOLE else N)
    raise NotSupportedError(
        f"TracerSparsityDetector: AutoTensorFlow has no sparsity rule for the TensorFlow operation {op.type!r} "
        "(in f's traced graph); use di.DenseSparsityDetector(backend) for the pattern at the preparation point, "
        "or di.KnownSparsity(pattern)"
    )


def _deps(value: Any, tensor: Any, n: int, second: bool) -> Deps:
    return value if isinstance(value, Deps) else Deps.constant(_shape(tensor), n, second)


def _move(op: Any, ins: list, data: Sequence[int], n: int, second: bool) -> list:
    """The operation run (eagerly, with the graph's own kernel) on element ids of its data inputs (unique
    across them; -1 for constants): each output id says which input element the output element is."""
    tf_ = tf()
    if any(isinstance(v, Deps) for i, v in enumerate(ins) if i not in data):
        return _anywhere(ins, [_shape(o) for o in op.outputs], data, n, second)  # indices from x
    args, parts, offset = [], [], 0
    for i, (v, t) in enumerate(zip(ins, op.inputs, strict=True)):
        if i in data:
            size = int(np.prod(_shape(t), dtype=np.int64))
            if isinstance(v, Deps):
                args.append(np.arange(offset, offset + size, dtype=np.int64).reshape(_shape(t)))
                parts.append(v)
                offset += size
            else:
                args.append(np.full(_shape(t), -1, dtype=np.int64))
        else:
            value = tf_.get_static_value(t)
            if value is None:
                return _anywhere(ins, [_shape(o) for o in op.outputs], data, n, second)
            args.append(value)
    try:
        outs = _run_like(op, args)
    except TypeError:  # an operation whose Python keywords differ from its definition's input names
        return _anywhere(ins, [_shape(o) for o in op.outputs], data, n, second)
    stacked = _stack(parts, n, second)
    return [stacked.gather(np.asarray(o, dtype=np.int64)) for o in outs]


def _run_like(op: Any, args: list) -> list:
    """`op` run eagerly on other inputs (`tf.raw_ops`, with its non-type attributes)."""
    tf_ = tf()
    if op.type == "SplitV":  # raw_ops names its split_dim input `axis`
        sizes, axis = np.asarray(args[1]), int(args[2])
        return list(np.split(args[0], np.cumsum(sizes)[:-1], axis=axis))
    op_def = op.op_def
    numbers = {a.number_attr for a in op_def.input_arg if a.number_attr}
    attrs = {
        a.name: op.get_attr(a.name)
        for a in op_def.attr
        if a.type not in ("type", "list(type)") and a.name not in numbers
    }
    kwargs: dict[str, Any] = {}
    position = 0
    for arg in op_def.input_arg:
        if arg.number_attr:
            count = op.get_attr(arg.number_attr)
            kwargs[arg.name] = [tf_.constant(a) for a in args[position : position + count]]
            position += count
        else:
            kwargs[arg.name] = tf_.constant(args[position])
            position += 1
    out = getattr(tf_.raw_ops, op.type)(**kwargs, **attrs)
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def _stack(parts: list[Deps], n: int, second: bool) -> Deps:
    import scipy.sparse as sp

    if not parts:
        return Deps.constant((0,), n, second)
    first = sp.vstack([p.first for p in parts], format="csr")
    pairs = sp.vstack([p.second for p in parts], format="csr") if second else None
    return Deps((first.shape[0],), n, first, pairs)


def _anywhere(ins: list, shapes: list, data: Sequence[int], n: int, second: bool, kind: Nonlinearity = L) -> list:
    """Every output element may depend on every element of the data inputs (combined as `kind`)."""
    parts = [ins[i] for i in data if isinstance(ins[i], Deps)]
    merged = [p.reduce(np.zeros(p.size, dtype=np.int64), (), kind) for p in parts]
    everything = Deps.elementwise((), merged, kind) if merged else Deps.constant((), n, second)
    return [everything.gather(np.zeros(s, dtype=np.int64)) for s in shapes]


def _reduce(d: Deps, axes: Sequence[int], shape: tuple, kind: Nonlinearity) -> Deps:
    outer = tuple(1 if i in axes else d.shape[i] for i in range(len(d.shape)))
    groups = np.broadcast_to(np.arange(int(np.prod(outer, dtype=np.int64))).reshape(outer), d.shape)
    return d.reduce(groups, shape, kind)


def _matmul(op: Any, ins: list, shape: tuple, n: int, second: bool) -> Deps:
    """`a @ b` as the sum over k of `a[..., i, k] * b[..., k, j]` on element ids (bilinear where both
    depend on x)."""
    a, b = (_deps(v, t, n, second) for v, t in zip(ins, op.inputs, strict=True))
    ia = np.arange(a.size, dtype=np.int64).reshape(a.shape)
    ib = np.arange(b.size, dtype=np.int64).reshape(b.shape)
    names = {a.name for a in op.op_def.attr}
    flip_a = any(op.get_attr(k) for k in ("transpose_a", "adj_x") if k in names)
    flip_b = any(op.get_attr(k) for k in ("transpose_b", "adj_y") if k in names)
    ia = np.swapaxes(ia, -1, -2) if flip_a else ia
    ib = np.swapaxes(ib, -1, -2) if flip_b else ib
    ga, gb = np.broadcast_arrays(ia[..., :, :, None], ib[..., None, :, :])  # (..., i, k, j)
    kind = B if all(isinstance(v, Deps) for v in ins) else L
    terms = Deps.elementwise(ga.shape, [a.gather(ga), b.gather(gb)], kind)
    return _reduce(terms, (len(ga.shape) - 2,), shape, L)
