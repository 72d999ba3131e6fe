"""Preparing an operator, and calling one: the entry of every public operator.

`prepare(cls, ...)` (`cls`: the operator's `Prep` class, `GradientPrep`, ...) validates the arguments,
converts them to the backend's arrays, builds the `Problem` and asks the backend for its `Kernel`;
structured calls (trees, complex numbers, `has_aux`, `output="matrix"`) first get a codec and prepare
the flat problem it stands for, the same way. `call(op, ...)` prepares for one call (unprepared
operators: no strict check, no plans) or checks and reuses the preparation given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .._arrays import NUMPY, ops_for
from .._backend import Backend, require_backend
from .._contexts import Constant, check_contexts
from .._errors import ArgumentError, NotSupportedError, PreparationMismatchError, ShapeError
from .._kernel import Kernel
from .._optable import OPERATORS, Operator
from .._problem import ComplexOutput, Problem, TreeOutput, dtype_of, shape_of, size_of
from .check import Guard, labelled
from .complex import holomorphic_residual, holomorphy_error, holomorphy_tolerance
from .convert import check_floating, kind, native_context_value, native_tangent, native_x, snapshot
from .general import general_call
from .prep import PREP_CLASSES, Prep
from .prepared import Prepared
from .settings import Settings
from .trees.codec import Flat, TreeCodec, make_codec, structured
from .trees.info import TreeInfo
from .trees.registry import flattener_for

__all__ = ["call", "prepare", "prepare_kernel", "require_holomorphic"]

P = TypeVar("P", bound=Prep)


def prepare_kernel(
    op: Operator, backend: Backend, problem: Problem, tangents: tuple | None, same_point: bool, options: Any = None
) -> Kernel:
    """The backend's kernel for operator `op` on `problem` (with native `tangents` for the operators
    that take them, and the operator's `options`, such as an inverse product's solver, where it has any)."""
    if op.tangent is None:
        prepare_op = getattr(backend, f"prepare_{op.name}")
        return prepare_op(problem) if options is None else prepare_op(problem, options)
    suffix = "_same_point" if same_point else ""
    prepare_op = getattr(backend, f"prepare_{op.name}{suffix}")
    return prepare_op(problem, tangents) if options is None else prepare_op(problem, tangents, options)


def prepare(
    cls: type[P],
    f: Callable,
    backend: Backend,
    x: Any,
    extra: Any,
    contexts: tuple,
    y: Any,
    *,
    strict: bool = True,
    same_point: bool = False,
    single_use: bool = False,
    options: Any = None,
    has_aux: bool = False,
    output: str = "tree",
) -> P:
    """Validate, convert, and ask `backend` for the kernel of the operator `cls` prepares (`cls.op`, with
    `options` for the operators that have some); a structured call prepares the flat problem of its
    codec."""
    op = cls.op
    where = f"prepare_{op.name}" if not single_use else op.name
    if not callable(f):
        raise ArgumentError(f"{where}: f must be callable, got {kind(f)}")
    require_backend(backend)
    check_contexts(contexts, where)
    if y is not None and not op.inplace:
        raise NotSupportedError(
            f"{where}: in-place functions f(y, x) do not apply, {op.name} needs "
            + ("a scalar x" if op.scalar_x else "a scalar output")
        )
    backend.require()

    def flat_prep(codec: TreeCodec | None, flat: Flat) -> P:
        if codec is not None and codec.imag and codec.xi is not None:
            require_holomorphic(codec.xi, f, backend, x, contexts, y, has_aux, where, op.name)
        return _prepare_flat(
            cls,
            flat.f,
            backend,
            flat.x,
            flat.extra,
            flat.contexts,
            flat.y,
            strict,
            same_point,
            single_use,
            options,
            where,
            codec=codec,
            user=(f, x, extra, y, contexts),
            has_aux=has_aux,
            output=output,
        )

    if structured(x, y, has_aux, output):
        codec, flat = make_codec(op, f, backend, x, extra, contexts, y, has_aux, output, where)
    else:
        codec, flat = None, Flat(f, x, extra, y, contexts)
    try:
        return flat_prep(codec, flat)
    except TreeOutput as e:
        if codec is not None:  # f's output changed kind between calls: say so plainly
            raise ArgumentError(str(e)) from None
    # f returns a tree where x is an array: the codec of its output
    codec, flat = make_codec(op, f, backend, x, extra, contexts, y, has_aux, output, where)
    try:
        return flat_prep(codec, flat)
    except TreeOutput as e:
        raise ArgumentError(str(e)) from None


def _prepare_flat(
    cls: type[P],
    f: Callable,
    backend: Backend,
    x: Any,
    extra: Any,
    contexts: tuple,
    y: Any,
    strict: bool,
    same_point: bool,
    single_use: bool,
    options: Any,
    where: str,
    *,
    codec: TreeCodec | None,
    user: tuple,
    has_aux: bool,
    output: str,
) -> P:
    op = cls.op
    if y is not None and not backend.supports_inplace:
        raise NotSupportedError(
            f"{where}: {backend!r} does not support in-place functions f(y, x); write f to return its "
            "output instead, or use a backend where di.check_inplace(backend) is True"
        )
    ops = backend.array_ops(x)
    to_user = not ops.is_native(x)
    xn = native_x(ops, x) if to_user else x
    x_dtype = dtype_of(xn)
    check_floating(ops, x_dtype, where, "x")
    if op.scalar_x and shape_of(xn) != ():
        raise ShapeError(
            f"{where}: needs a scalar x (shape ()), got shape {shape_of(xn)}; use jacobian or pushforward "
            "for array inputs"
        )
    yn = None
    if y is not None:
        if not (ops.is_native(y) or isinstance(y, np.ndarray)) or isinstance(y, np.generic):
            raise ArgumentError(f"{where}: y= must be an array that f writes into, got {kind(y)}")
        if not ops.mutable or (isinstance(y, np.ndarray) and not y.flags.writeable):
            raise NotSupportedError(f"{where}: y= is immutable ({kind(y)}), so f cannot write into it")
        yn = y if ops.is_native(y) else ops.asarray(y, like=xn)
    native_contexts = tuple(c.with_value(native_context_value(ops, c.value, xn)) for c in contexts)
    if same_point:
        # the point is part of a same-point preparation: hold copies, not the user's mutable arrays
        xn = snapshot(ops, xn)
        native_contexts = tuple(
            c.with_value(snapshot(ops, c.value)) if isinstance(c, Constant) else c for c in native_contexts
        )
    problem = Problem(backend.evaluator(f), xn, native_contexts, yn, ops, single_use=single_use)
    y_shape, y_dtype = problem.y_spec if yn is not None else backend.output_spec(problem)
    problem.set_y_spec(y_shape, y_dtype)
    if codec is None and ops.is_complex(y_dtype):
        raise ComplexOutput(f"{where}: f returned complex values")  # prepared again, with a codec of pairs
    check_floating(ops, y_dtype, where, "f's output")
    if op.scalar_y and y_shape != ():
        raise ShapeError(
            f"{where}: needs f to return a scalar (shape ()), but it returned shape {y_shape}; use jacobian "
            "for array outputs, or reduce the output (e.g. with .sum())"
        )
    if op.square and size_of(y_shape) != size_of(problem.x_shape):
        raise ShapeError(
            f"{where}: needs a square Jacobian (as many outputs as inputs), but x has shape {problem.x_shape} "
            f"({size_of(problem.x_shape)} elements) and f's output has shape {y_shape} ({size_of(y_shape)}); "
            "J has no inverse. For least-squares problems, solve with di.jacobian or di.jacobian_operator"
        )
    batch, native = _tangents(op, extra, ops, xn, problem, x_dtype, (y_shape, y_dtype), where)
    kernel = prepare_kernel(op, backend, problem, native, same_point, options)
    user_f, user_x, user_extra, user_y, user_contexts = user
    guard = None
    if not single_use:  # a preparation for one call checks nothing
        if codec is not None:
            labels, values = codec.labelled(user_x, user_extra, user_contexts, user_y)
            what = "tree structure and every leaf's type, dtype and shape"
        else:
            labels, values = labelled(op.tangent, x, extra, contexts, y)
            what = "array type, dtype and shape of every argument"
        guard = Guard(op.name, user_f, backend, labels, values, ops, same_point, user_contexts, what)
    if codec is not None:
        codec.bind(ops, problem.x_shape, y_shape)

    def remake() -> Kernel:
        return prepare_kernel(op, backend, problem, native, same_point, options)

    settings = Settings(has_aux=has_aux, output=output, options=options, strict=strict, same_point=same_point)
    prepared = Prepared(op, user_f, backend, problem, kernel, guard, settings, codec, batch, native, to_user, remake)
    prep = cls(prepared)
    if ops.compiles and not single_use:
        _compile_every_variant(prep, user_x, user_extra, user_contexts, user_y)
    return prep


def require_holomorphic(
    xi: TreeInfo,
    f: Callable,
    backend: Backend,
    x: Any,
    contexts: tuple,
    y: Any,
    has_aux: bool,
    where: str,
    op_name: str,
) -> None:
    """Raise `NotSupportedError` unless f is holomorphic at x in its complex inputs (`xi`: x's tree):
    J(i·v) = i·J(v) for a random v (zero on real leaves), from one batched pushforward of two tangents,
    to a tolerance that leaves room for finite differences (`diface._complex`)."""
    leaves = xi.flattener.flatten(x)[0]
    # not seed 0: an x drawn from default_rng(0) would be its own probe v, along which scale-invariant
    # parts of f (eigenvectors, phases) do not move, and a non-holomorphic f would pass
    rng = np.random.default_rng(0x5EED_D1FACE)
    v_leaves, iv_leaves = [], []
    for leaf, shape, is_complex in zip(leaves, xi.shapes, xi.complex_leaves):
        ops = ops_for(leaf) or NUMPY
        base = np.asarray(leaf) if isinstance(leaf, (complex, float, int, np.generic)) else leaf
        if is_complex:
            v = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
            v_leaves.append(ops.astype(ops.asarray(v, like=base), dtype_of(base)))
            iv_leaves.append(ops.astype(ops.asarray(1j * v, like=base), dtype_of(base)))
        else:
            zero = ops.zeros(shape, dtype_of(base), like=base)
            v_leaves.append(zero)
            iv_leaves.append(zero)
    tangents = (xi.unflatten(v_leaves), xi.unflatten(iv_leaves))
    scratch = None if y is None else _copy_tree(y)
    pushforward = OPERATORS["pushforward"]
    products = call(pushforward, False, f, backend, x, tangents, contexts, None, None, scratch, has_aux=has_aux)
    jv, jiv = products[0] if has_aux else products
    residual = holomorphic_residual(_host_vector(jv), _host_vector(jiv))
    real_dtype = xi.ops.to_numpy(xi.ops.zeros((), xi.dtype)).dtype
    if residual > holomorphy_tolerance(real_dtype):
        raise holomorphy_error(where, op_name)


def _host_vector(tree: Any) -> np.ndarray:
    """A tree's (or an array's) leaves as one NumPy vector."""
    leaves = flattener_for(tree).flatten(tree)[0]
    return np.concatenate([np.ravel((ops_for(v) or NUMPY).to_numpy(v)) for v in leaves])


def _copy_tree(tree: Any) -> Any:
    """Copies of the buffers of an in-place f's y (the holomorphy check writes into them)."""
    flattener = flattener_for(tree)
    leaves, spec = flattener.flatten(tree)
    return flattener.unflatten(spec, [(ops_for(v) or NUMPY).copy(v) for v in leaves])


def _compile_every_variant(prep: Prep, x: Any, extra: Any, contexts: tuple, y: Any) -> None:
    """Run the plain operator and its full variant once at the preparation's own arguments, so that a
    library that compiles on first use (JAX: `jax.jit` caches by argument specs) has compiled every
    program those calls reach — the kernel's, the tree layer's and the auxiliary output's — and a prepared
    call with the prepared specs only runs them. Results are discarded; the arguments are the caller's
    (immutable arrays: a compiling library cannot write into them)."""
    for full in (False, True):
        prep.ops.block_until_ready(prep.run(full, x, extra, contexts, None, y, check=False))


def _tangents(
    op: Operator, extra: Any, ops: Any, xn: Any, problem: Problem, x_dtype: Any, y_spec: tuple, where: str
) -> tuple[int | None, tuple | None]:
    """(batch size or None for one tangent, the tangents as native arrays), checked against x or y."""
    if op.tangent is None:
        return None, None
    batch = len(extra) if type(extra) is tuple else None
    tangents = extra if type(extra) is tuple else (extra,)
    if not tangents:
        raise ArgumentError(f"{where}: the tuple of tangents is empty")
    like_x = op.tangent == "tx"
    shape, dtype = (problem.x_shape, x_dtype) if like_x else y_spec
    converted = []
    for i, t in enumerate(tangents):
        label = op.tangent if batch is None else f"{op.tangent}[{i}]"
        tn = t if ops.is_native(t) else native_tangent(ops, t, xn, dtype, where, label)
        if shape_of(tn) != shape:
            raise ShapeError(
                f"{where}: tangent {label} has shape {shape_of(tn)}, it must be shaped like "
                f"{'x' if like_x else 'y'}: {shape}"
            )
        if dtype_of(tn) != dtype:
            raise ArgumentError(
                f"{where}: tangent {label} has dtype {dtype_of(tn)}, it must have the dtype of "
                f"{'x' if like_x else 'y'}: {dtype}"
            )
        converted.append(tn)
    return batch, tuple(converted)


def call(
    op: Operator,
    full: bool,
    f: Callable,
    backend: Backend,
    x: Any,
    extra: Any,
    contexts: tuple,
    prep: Prep | None,
    out: Any,
    y: Any,
    options: Any = None,
    has_aux: bool = False,
    output: str = "tree",
    value: bool = False,
) -> Any:
    """An operator call: prepare for this one call (with `options`), or check and reuse `prep`; `value`:
    the operator's value variant (`value_gradient_and_hvp`) instead of its full variant."""
    if prep is None:
        prep = prepare(
            PREP_CLASSES[op.name],
            f,
            backend,
            x,
            extra,
            contexts,
            y,
            strict=False,
            single_use=True,
            options=options,
            has_aux=has_aux,
            output=output,
        )
        if value:
            return general_call(prep._prepared, True, x, extra, contexts, out, y, False, value=True)
        return prep.run(full, x, extra, contexts, out, y, check=False)
    if not isinstance(prep, Prep):
        raise ArgumentError(f"{op.name}: prep= must be a preparation from di.prepare_{op.name}(...), got {kind(prep)}")
    if prep.op is not op:
        raise PreparationMismatchError(
            f"{op.name}: prep= must come from di.prepare_{op.name}(...), this one was made by di.prepare_{prep.op.name}"
        )
    prep._prepared.settings.require(op.name, has_aux, output)
    if prep.strict and not ((f is prep.f or f == prep.f) and (backend is prep.backend or backend == prep.backend)):
        prep.check(x, extra, contexts, y, f, backend)  # raises, naming f or the backend
    if value:
        return general_call(prep._prepared, True, x, extra, contexts, out, y, True, value=True)
    return prep.run(full, x, extra, contexts, out, y)
