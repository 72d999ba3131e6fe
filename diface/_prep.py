"""Preparation objects and the one call path every operator goes through.

`prepare(op, ...)` validates the arguments, converts them to the backend's arrays, builds a `Problem`
and asks the backend for a kernel; it returns a `Prep`. Every operator call, prepared or not, then
runs `Prep.run`: check the arguments against the preparation (strict mode), convert, validate `out=`
buffers, run the kernel, convert the results back and write them out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._arrays import NUMPY, ArrayOps
from ._backend import Backend, _require_backend
from ._contexts import Constant, Context, check_contexts
from ._errors import ArgumentError, NotSupportedError, PreparationMismatchError, ShapeError
from ._problem import Kernel, Problem, TreeOutput, dtype_of, shape_of, size_of
from ._signature import Signature, describe
from ._trees import is_tree

__all__ = ["OPERATORS", "OpSpec", "Prep", "call", "prepare"]


@dataclass(frozen=True)
class OpSpec:
    """What distinguishes one operator from another in the shared call path."""

    name: str
    #: the tangent argument: "tx" (shaped like x), "ty" (shaped like y) or None
    extra: str | None
    #: `y=` (in-place functions) allowed
    inplace: bool
    scalar_x: bool
    scalar_y: bool
    #: the full variant returns the primal value first (all but hvp, whose full variant is
    #: gradient_and_hvp)
    value_first: bool
    #: name of the full variant
    full_name: str
    #: shapes of the derivative results of the full variant, from (x.shape, y.shape); the plain
    #: operator returns the last one
    result_shapes: Callable[[tuple, tuple], tuple[tuple, ...]]
    #: J must be square (y.size == x.size): the Jacobian-inverse products
    square: bool = False


OPERATORS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("pushforward", "tx", True, False, False, True, "value_and_pushforward", lambda xs, ys: (ys,)),
        OpSpec("pullback", "ty", True, False, False, True, "value_and_pullback", lambda xs, ys: (xs,)),
        OpSpec("derivative", None, True, True, False, True, "value_and_derivative", lambda xs, ys: (ys,)),
        OpSpec("gradient", None, False, False, True, True, "value_and_gradient", lambda xs, ys: (xs,)),
        OpSpec("jacobian", None, True, False, False, True, "value_and_jacobian", lambda xs, ys: (ys + xs,)),
        OpSpec(
            "second_derivative",
            None,
            False,
            True,
            False,
            True,
            "value_derivative_and_second_derivative",
            lambda xs, ys: (ys, ys),
        ),
        OpSpec("hessian", None, False, False, True, True, "value_gradient_and_hessian", lambda xs, ys: (xs, xs + xs)),
        OpSpec("hvp", "tx", False, False, True, False, "gradient_and_hvp", lambda xs, ys: (xs, xs)),
        OpSpec(
            "inverse_pushforward",
            "ty",
            True,
            False,
            False,
            True,
            "value_and_inverse_pushforward",
            lambda xs, ys: (xs,),
            square=True,
        ),
        OpSpec(
            "inverse_pullback",
            "tx",
            True,
            False,
            False,
            True,
            "value_and_inverse_pullback",
            lambda xs, ys: (ys,),
            square=True,
        ),
    )
}


class Prep:
    """The result of a `prepare_*` call: reusable state for one operator and all its variants.

    Call the operator with `prep=prep`, or use the methods of the prep itself (`prep.gradient(x)`,
    `prep.value_and_gradient(x, out=g)`; `prep(x)` runs the plain operator). With `strict=True`
    every call checks its arguments against the preparation.
    """

    op: ClassVar[OpSpec]
    #: f returns (y, aux) (a tree preparation says True)
    has_aux: ClassVar[bool] = False
    #: the layout of Jacobians and Hessians on trees ("tree" or "matrix")
    output: ClassVar[str] = "tree"

    def __init__(
        self,
        problem: Problem,
        backend: Backend,
        kernel: Kernel,
        signature: Signature,
        *,
        strict: bool,
        same_point: bool,
        batch: int | None,
        to_user: bool,
        point: tuple[Any, tuple],
        structure: tuple,
        tangents: tuple | None = None,
        options: Any = None,
    ) -> None:
        ops = problem.ops
        # what `copy()` needs to prepare again: the problem, the native tangents, the settings
        self._problem, self._tangents = problem, tangents
        self._settings = dict(
            signature=signature,
            strict=strict,
            same_point=same_point,
            batch=batch,
            to_user=to_user,
            point=point,
            structure=structure,
            tangents=tangents,
            options=options,
        )
        self._options = options
        self.f = problem.f
        self.backend = backend
        self.strict = strict
        self.same_point = same_point
        self.kernel = kernel
        self.ops = ops
        self.signature = signature
        self.batch = batch
        self.to_user = to_user
        self.user_numpy = to_user or ops is NUMPY
        self.x_shape = problem.x_shape
        self.x_dtype = problem.x_dtype
        self.y_shape, self.y_dtype = problem.y_spec
        self.dtype = ops.result_type(self.x_dtype, self.y_dtype)
        self.user_dtype = ops.to_numpy(ops.zeros((), self.dtype)).dtype if to_user else self.dtype
        self._only_x = len(signature.labels) == 1
        self._structure = _structure(*structure)
        self._x_spec = signature.specs[0][:3]  # the device, where there is one, is the kernel's to check
        self._x_type, self._x_dtype, self._x_shape = self._x_spec
        self._native_type = type(problem.x)
        # results need a cast to the result dtype unless the kernel says they have it already
        # (compared with `is None` first: NumPy finds np.dtype("float64") == None true)
        declared = getattr(kernel, "result_dtype", None)
        self._cast = declared is None or declared != self.dtype
        # calls with nothing but x, of an operator without tangents, that need no conversion take a
        # shorter path through run(); a 0-d NumPy result still becomes a NumPy scalar there
        # a sparse Jacobian or Hessian (AutoSparse): the kernel returns the nonzeros, the layout makes
        # the matrix; the preparation shows the pattern and the coloring
        self._sparse = getattr(kernel, "sparse", None)
        #: what one call costs in evaluations of f, where the backend counts them (`AutoFiniteDiff`:
        #: an `EvaluationCount` with `points` and `f_calls`), else None
        self.evaluations = getattr(kernel, "evaluations", None)
        if self._sparse is not None:
            self.sparsity_pattern = self._sparse.scipy_pattern()
            self.coloring = self._sparse.coloring
            self.ncolors = self.coloring.ncolors
            self.column_colors, self.row_colors = self.coloring.column_colors, self.coloring.row_colors
        self._fast = self._only_x and not to_user and not same_point and self.op.extra is None and self._sparse is None
        self._scalar_result = self.user_numpy and self.op.result_shapes(self.x_shape, self.y_shape)[-1] == ()
        # a kernel may say it takes NumPy arrays (x, tangents, contexts) as they are, converting them
        # itself on the way in (a compiled JAX program does, for about a microsecond): then the call
        # path passes NumPy input through instead of converting it
        self._takes_numpy = to_user and getattr(kernel, "accepts_numpy", False)
        # a kernel may offer `x_only(x)`: the plain result from x alone (a compiled program, say);
        # then the plain operator's method calls it with nothing but the strict check
        self._x_only = self._direct_program(kernel, same_point)
        # calls with x and one tangent (pushforward, pullback, hvp) of the prepared array type take a
        # shorter path through run() too; NumPy arrays are converted there unless the kernel takes them
        self._t_spec = None
        t_is_array = len(signature.specs) == 2 and signature.specs[1][1] is not None
        if self.op.extra is not None and batch is None and t_is_array and not same_point:
            if (self._x_type is np.ndarray and signature.specs[1][0] is np.ndarray) or not to_user:
                self._t_spec = signature.specs[1][:3]
                self._t_device = signature.specs[1][3]  # where devices matter (torch), else None
        self._convert_x_and_t = to_user and not self._takes_numpy
        if self._x_only is not None:
            self._install_direct_path()
        # same-point preparations remember the point: x and the Constant values, as the user gave them
        self._point, self._constants = point if same_point else (None, ())

    def __repr__(self) -> str:
        name = getattr(self.f, "__qualname__", None) or repr(self.f)
        return (
            f"<{type(self).__name__} of {name} on {self.backend!r}: x {self.x_dtype} {self.x_shape}, "
            f"y {self.y_dtype} {self.y_shape}{', same point' if self.same_point else ''}>"
        )

    def copy(self) -> Prep:
        """An independent preparation for the same f, backend, point and settings, with buffers of its
        own: what `prepare_*` would return again (a kernel that can copy itself shares what is
        immutable, such as a recording or a compiled program, instead of redoing it).

        A preparation may already be shared by any number of threads (see docs/preparation.md,
        "Threads"); `copy()` is for users who prefer one per worker.

        Example:
            >>> import numpy as np, diface as di
            >>> prep = di.prepare_gradient(lambda x: np.sum(x**2), di.AutoFiniteDiff(), np.zeros(2))
            >>> twin = prep.copy()
            >>> twin is not prep, twin.gradient(np.array([1.0, 2.0])).round(6)
            (True, array([2., 4.]))
        """
        copy_kernel = getattr(self.kernel, "copy", None)
        kernel = (
            copy_kernel()
            if copy_kernel is not None
            else prepare_kernel(self.op, self.backend, self._problem, self._tangents, self.same_point, self._options)
        )
        return type(self)(self._problem, self.backend, kernel, **self._settings)

    def _direct_program(self, kernel: Kernel, same_point: bool) -> Callable[[Any], Any] | None:
        """The kernel's `x_only` program as the user gets its result (NumPy in, NumPy out where the
        kernel takes NumPy input), or None where the plain call needs the general path."""
        program = getattr(kernel, "x_only", None)
        if program is None or not self._only_x or same_point or self.op.extra is not None:
            return None
        if self._sparse is not None:  # the program gives the nonzeros: the matrix is made around them
            if self.to_user and (not self._takes_numpy or self._x_type is not np.ndarray):
                return None
            layout, ops, to_user, user_numpy = self._sparse, self.ops, self.to_user, self.user_numpy

            def sparse_program(x: Any) -> Any:
                data = program(x)
                return layout.build(ops, ops.to_numpy(data) if to_user else data, user_numpy)

            return sparse_program
        if not self.to_user:
            return None if self._scalar_result else program
        if not self._takes_numpy or self._x_type is not np.ndarray:
            return None
        to_numpy, scalar = self.ops.to_numpy, self._scalar_result

        def numpy_program(x: Any) -> Any:
            d = to_numpy(program(x))
            return d[()] if scalar else d

        return numpy_program

    def _install_direct_path(self) -> None:
        """Shadow the plain operator's method (`prep.gradient`, ...) with a closure that calls the
        kernel's `x_only` program directly when given nothing but x: one Python call around it."""
        name = self.op.name
        general = getattr(type(self), name)
        x_only, x_type, x_dtype, x_shape = self._x_only, self._x_type, self._x_dtype, self._x_shape
        prep = self

        def direct(x: Any, *contexts: Context, out: Any = None, **y: Any) -> Any:
            if contexts or out is not None or y:
                return general(prep, x, *contexts, out=out, **y)
            if prep.strict and (type(x) is not x_type or x.dtype != x_dtype or x.shape != x_shape):
                prep.check(x, None, (), None)
            return x_only(x)

        direct.__name__, direct.__doc__ = name, general.__doc__
        setattr(self, name, direct)

    # -- checking --------------------------------------------------------------------------------
    def check(self, x: Any, extra: Any, contexts: tuple, y: Any, f: Any = None, backend: Any = None) -> None:
        """Raise `PreparationMismatchError` unless the call matches this preparation."""
        f_ok = f is None or f is self.f or f == self.f
        backend_ok = backend is None or backend is self.backend or backend == self.backend
        if f_ok and backend_ok:
            if self._only_x and extra is None and not contexts and y is None:
                ok = (type(x), getattr(x, "dtype", None), getattr(x, "shape", None)) == self._x_spec
            else:
                ok = self._structure == _structure(extra, contexts, y) and self.signature.matches(
                    _values(x, extra, contexts, y)
                )
            if ok and (not self.same_point or self._same_point_holds(x, contexts)):
                return
        self._mismatch(x, extra, contexts, y, f_ok, backend_ok)

    def _same_point_holds(self, x: Any, contexts: tuple) -> bool:
        constants = tuple(c.value for c in contexts if isinstance(c, Constant))
        return _same_values(self.ops, x, self._point) and all(
            _same_values(self.ops, a, b) for a, b in zip(constants, self._constants)
        )

    def _mismatch(self, x: Any, extra: Any, contexts: tuple, y: Any, f_ok: bool, backend_ok: bool) -> None:
        name = self.op.name
        lines = [
            f"{name}: the call does not match its preparation (strict mode checks f, the backend, and the "
            "array type, dtype and shape of every argument):",
            f"  {'f':<22} "
            + (
                "matches"
                if f_ok
                else "differs: another function than at preparation (a preparation is bound to its f; "
                "to vary data between calls, pass it as di.Constant(data) instead of a new closure)"
            ),
            f"  {'backend':<22} " + ("matches" if backend_ok else f"differs: prepared for {self.backend!r}"),
        ]
        labels, values = _labelled(self.op, x, extra, contexts, y)
        lines += self.signature.report(labels, values)
        if self.same_point and f_ok and backend_ok and labels == self.signature.labels:
            lines.append(
                "  same point             differs: a same-point preparation needs the very same x and "
                "Constant values it was prepared with"
            )
        what = f"prepare_{name}_same_point" if self.same_point else f"prepare_{name}"
        lines.append(f"Prepare again for these arguments with di.{what}(...), or pass strict=False to skip the check.")
        raise PreparationMismatchError("\n".join(lines))

    # -- running ---------------------------------------------------------------------------------
    def run(self, full: bool, x: Any, extra: Any, contexts: tuple, out: Any, y: Any, check: bool) -> Any:
        """One operator call: the plain operator (`full=False`) or its full variant."""
        if self._x_only is not None and not full and extra is None and not contexts and out is None and y is None:
            if (
                check
                and self.strict
                and (type(x) is not self._x_type or x.dtype != self._x_dtype or x.shape != self._x_shape)
            ):
                self.check(x, extra, contexts, y)
            return self._x_only(x)
        if extra is None and not contexts and out is None and y is None and self._fast:
            # the hot path: nothing but x, in the backend's own arrays
            if (
                check
                and self.strict
                and (
                    type(x) is not self._x_type
                    or getattr(x, "dtype", None) != self._x_dtype
                    or getattr(x, "shape", None) != self._x_shape
                )
            ):
                self.check(x, extra, contexts, y)
            if type(x) is not self._x_type and not self.ops.is_native(x):
                x = native_x(self.ops, x)
            r = self.kernel(x, None, (), None, full)
            if not full:
                d = r[-1]
                if self._cast and d.dtype != self.dtype:
                    d = self.ops.astype(d, self.dtype)
                return d[()] if self._scalar_result and type(d) is np.ndarray else d
            results = tuple(self._result(d, None) for d in r[1:])
            return (r[0], *results) if self.op.value_first else results
        if self._t_spec is not None and not contexts and out is None and y is None and type(extra) is self._t_spec[0]:
            # the hot path of pushforward, pullback and hvp: x and one tangent, nothing else
            if (
                check
                and self.strict
                and (
                    type(x) is not self._x_type
                    or x.dtype != self._x_dtype
                    or x.shape != self._x_shape
                    or extra.dtype != self._t_spec[1]
                    or extra.shape != self._t_spec[2]
                    or (self._t_device is not None and extra.device != self._t_device)
                )
            ):
                self.check(x, extra, contexts, y)
            if self._convert_x_and_t:
                x = native_x(self.ops, x)
                extra = _native_tangent(self.ops, extra, x, None, self.op.name, self.op.extra)
            r = self.kernel(x, (extra,), (), None, full)
            return self._deliver(r, full, False, None, None)
        if contexts:
            check_contexts(contexts, self.op.name)
        if check and self.strict:
            self.check(x, extra, contexts, y)
        ops = self.ops
        if type(x) is self._native_type or ops.is_native(x):
            xn = x
        elif self._takes_numpy and type(x) is np.ndarray and x.dtype == self._x_dtype:
            xn = x
        else:
            xn = native_x(ops, x)
        tn = None if self.op.extra is None else self._tangents_in(extra, xn)
        cv = self._contexts_in(contexts, xn) if contexts else ()
        yn = None if y is None else (y if ops.is_native(y) else ops.asarray(y, like=xn))
        if out is not None:
            self._check_out(out, full, extra)
        r = self.kernel(xn, tn, cv, yn, full)
        if y is not None and yn is not y:
            np.copyto(y, ops.to_numpy(yn))
        return self._deliver(r, full, type(extra) is tuple, out, y)

    def _tangents_in(self, extra: Any, xn: Any) -> tuple:
        """The call's tangents as a tuple of native arrays."""
        batched = type(extra) is tuple
        if batched != (self.batch is not None):
            raise ArgumentError(
                f"{self.op.name}: prepared for {'a tuple of tangents' if self.batch is not None else 'one tangent'}"
                f", called with {'a tuple' if batched else 'a single tangent'}"
            )
        ops, native_type = self.ops, self._native_type
        tangents = extra if batched else (extra,)
        if all(type(t) is native_type for t in tangents):
            return tangents
        if self._takes_numpy and all(type(t) is np.ndarray for t in tangents):
            return tangents  # the strict check compared their dtypes with the preparation's
        dtype = self.x_dtype if self.op.extra == "tx" else self.y_dtype
        return tuple(
            t if ops.is_native(t) else _native_tangent(ops, t, xn, dtype, self.op.name, self.op.extra) for t in tangents
        )

    def _contexts_in(self, contexts: tuple, xn: Any) -> tuple:
        """The call's context values, NumPy arrays converted to the backend's arrays."""
        values = tuple(c.value for c in contexts)
        if self.ops is NUMPY or self._takes_numpy:
            return values
        return tuple(native_context_value(self.ops, v, xn) for v in values)

    def _check_out(self, out: Any, full: bool, extra: Any) -> None:
        shapes = self.op.result_shapes(self.x_shape, self.y_shape)
        if not full:
            shapes = shapes[-1:]
        name = self.op.full_name if full else self.op.name
        if len(shapes) > 1:
            if not isinstance(out, tuple) or len(out) != len(shapes):
                raise ArgumentError(f"{name}: out= must be a tuple of {len(shapes)} buffers, got {_kind(out)}")
            buffers = out
        else:
            buffers = (out,)
        for level, (buf, shape) in enumerate(zip(buffers, shapes)):
            if level == len(shapes) - 1 and self._sparse is not None:
                self._sparse.check_out(name, buf, self.user_numpy, self.ops, self.user_dtype)
            elif level == len(shapes) - 1 and type(extra) is tuple:
                if not isinstance(buf, tuple) or len(buf) != len(extra):
                    raise ArgumentError(
                        f"{name}: with {len(extra)} tangents, out= needs a tuple of {len(extra)} buffers, "
                        f"got {_kind(buf)}"
                    )
                for b in buf:
                    self._check_buffer(name, b, shape)
            else:
                self._check_buffer(name, buf, shape)

    def _check_buffer(self, name: str, buf: Any, shape: tuple) -> None:
        ops = self.ops
        if self.user_numpy:
            if not isinstance(buf, np.ndarray):
                raise ArgumentError(f"{name}: out= buffers must be NumPy arrays here, got {_kind(buf)}")
        elif not ops.is_native(buf):
            raise ArgumentError(f"{name}: out= buffers must be {ops.name} arrays like x, got {_kind(buf)}")
        elif not ops.mutable:
            raise NotSupportedError(
                f"{name}: {ops.name} arrays are immutable and cannot be out= buffers; drop out= and use the "
                "returned result"
            )
        if isinstance(buf, np.ndarray) and not buf.flags.writeable:
            raise NotSupportedError(f"{name}: the out= buffer is a read-only NumPy array")
        if not self.user_numpy:
            ops.check_writable(buf, "an out= buffer")
        if tuple(buf.shape) != shape:
            raise ShapeError(f"{name}: out= buffer has shape {tuple(buf.shape)}, the result has shape {shape}")
        if buf.dtype != self.user_dtype:
            raise ArgumentError(f"{name}: out= buffer has dtype {buf.dtype}, the result has dtype {self.user_dtype}")

    def _deliver(self, r: tuple, full: bool, batched: bool, out: Any, y: Any) -> Any:
        if not full and out is None:  # the plain operator, returned rather than written
            d = r[-1]
            if self.op.extra is None:
                return self._result(d, None, last=True)
            items = tuple(self._result(v, None) for v in d)
            return items if batched else items[0]
        results = r[1:] if full else r[-1:]
        n = len(results)
        buffers = (out if n > 1 else (out,)) if out is not None else (None,) * n
        delivered = []
        for level, (d, buf) in enumerate(zip(results, buffers)):
            if level == n - 1 and self.op.extra is not None:
                bufs = (None,) * len(d) if buf is None else buf if batched else (buf,)
                items = tuple(self._result(di, bi) for di, bi in zip(d, bufs))
                delivered.append(items if batched else items[0])
            else:
                delivered.append(self._result(d, buf, last=level == n - 1))
        if not full:
            return delivered[0]
        if not self.op.value_first:
            return tuple(delivered)
        return (self._value(r[0], y), *delivered)

    def _result(self, d: Any, buf: Any, last: bool = False) -> Any:
        if self._cast and getattr(d, "dtype", None) != self.dtype:
            d = self.ops.astype(d, self.dtype)
        if self.to_user:
            d = self.ops.to_numpy(d)
        if last and self._sparse is not None:  # the nonzeros of a sparse Jacobian or Hessian
            if buf is not None:
                return self._sparse.write(self.ops, buf, d, self.user_numpy)
            return self._sparse.build(self.ops, d, self.user_numpy)
        if buf is not None:
            (NUMPY if self.user_numpy else self.ops).copyto(buf, d)
            return buf
        if self.user_numpy and isinstance(d, np.ndarray) and d.ndim == 0:
            return d[()]
        return d

    def _value(self, v: Any, y: Any) -> Any:
        if y is not None:
            return y
        if self.to_user:
            v = self.ops.to_numpy(v)
            return v[()] if v.ndim == 0 else v
        return v


def _kind(a: Any) -> str:
    shape = getattr(a, "shape", None)
    return type(a).__name__ + (f" of shape {tuple(shape)}" if shape is not None else "")


def _structure(extra: Any, contexts: tuple, y: Any) -> tuple:
    """What must match between a call and its preparation besides the specs of the values: how many
    tangents (None for a single one), the kinds of the contexts, whether there is a y."""
    return (len(extra) if type(extra) is tuple else None, tuple(type(c) for c in contexts), y is not None)


def _values(x: Any, extra: Any, contexts: tuple, y: Any) -> tuple:
    """The values of a call in the order of `_labelled`: x, tangents, context values, y."""
    tangents = () if extra is None else extra if type(extra) is tuple else (extra,)
    return (x, *tangents, *(getattr(c, "value", c) for c in contexts), *(() if y is None else (y,)))


def _labelled(op: OpSpec, x: Any, extra: Any, contexts: tuple, y: Any) -> tuple[tuple, tuple]:
    labels: list[str] = ["x"]
    values: list[Any] = [x]
    if op.extra is not None:
        if type(extra) is tuple:
            labels += [f"{op.extra}[{i}]" for i in range(len(extra))]
            values += extra
        else:
            labels.append(op.extra)
            values.append(extra)
    for i, c in enumerate(contexts):
        labels.append(f"context {i + 1} ({getattr(c, 'kind', type(c).__name__)})")
        values.append(getattr(c, "value", c))
    if y is not None:
        labels.append("y")
        values.append(y)
    return tuple(labels), tuple(values)


def _same_values(ops: ArrayOps, a: Any, b: Any) -> bool:
    if a is b:
        return True
    if describe(a) != describe(b):
        return False
    if getattr(a, "shape", None) is None:
        return bool(a == b)
    if isinstance(a, (np.ndarray, np.generic)):
        return bool(np.array_equal(a, b))
    return ops.equal(a, b)


def native_x(ops: ArrayOps, x: Any) -> Any:
    """`x` as the backend's native array: NumPy input converted, Python numbers as float64."""
    if isinstance(x, (bool, int)):
        x = float(x)
    if isinstance(x, float):
        x = np.float64(x)
    elif isinstance(x, list):
        x = np.asarray(x)
    elif not isinstance(x, (np.ndarray, np.generic)):
        raise ArgumentError(
            f"x must be an array or a number, got {type(x).__name__}; this backend takes NumPy arrays "
            f"and {ops.name} arrays"
        )
    if ops is NUMPY:
        return x
    if np.result_type(x).kind not in "fc":  # before the framework sees it: its errors say less
        _check_floating(NUMPY, np.result_type(x), "", "x")
    return ops.asarray(x)


def native_context_value(ops: ArrayOps, value: Any, like: Any) -> Any:
    """A context value as f receives it: NumPy arrays (also the leaves of dicts, lists and tuples, a
    namedtuple's fields) converted to the backend's arrays; everything else as it is."""
    if isinstance(value, np.ndarray):
        return ops.asarray(value, like=like)
    kind = type(value)
    if kind is dict:
        return {k: native_context_value(ops, v, like) for k, v in value.items()}
    if kind is list:
        return [native_context_value(ops, v, like) for v in value]
    if isinstance(value, tuple):
        items = [native_context_value(ops, v, like) for v in value]
        return kind(*items) if hasattr(value, "_fields") else kind(items)
    return value


def prepare_kernel(
    op: OpSpec, backend: Backend, problem: Problem, tangents: tuple | None, same_point: bool, options: Any = None
) -> Kernel:
    """The backend's kernel for operator `op` on `problem` (with native `tangents` for the operators
    that take them, and the operator's `options`, such as an inverse product's solver, where it has any)."""
    if op.extra is None:
        return getattr(backend, f"prepare_{op.name}")(problem)
    suffix = "_same_point" if same_point else ""
    prepare_op = getattr(backend, f"prepare_{op.name}{suffix}")
    return prepare_op(problem, tangents) if options is None else prepare_op(problem, tangents, options)


def _snapshot(ops: ArrayOps, value: Any) -> Any:
    """A copy of a mutable array (the user may change theirs later), anything else as it is."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if ops.mutable and ops.is_native(value):
        return ops.copy(value)
    return value


def prepare(
    op: OpSpec,
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
) -> Prep:
    """Validate, convert, and ask `backend` for the kernel of operator `op` (with `options`, for the
    operators that have some). Trees (of x, y, or what f returns), `has_aux` and `output="matrix"` go
    through `diface._tree_prep`, which prepares a flat problem here."""
    where = f"prepare_{op.name}" if not single_use else op.name
    if (
        has_aux
        or output != "tree"
        or (not hasattr(x, "shape") and is_tree(x))
        or (y is not None and not hasattr(y, "shape") and is_tree(y))
    ):
        return _prepare_tree(
            op, f, backend, x, extra, contexts, y, strict, same_point, single_use, options, has_aux, output, where
        )
    if not callable(f):
        raise ArgumentError(f"{where}: f must be callable, got {_kind(f)}")
    _require_backend(backend)
    check_contexts(contexts, where)
    backend.require()
    if y is not None and not backend.supports_inplace:
        raise NotSupportedError(
            f"{where}: {backend!r} does not support in-place functions f(y, x); write f to return its "
            "output instead, or use a backend where di.check_inplace(backend) is True"
        )
    ops = backend.array_ops(x)
    to_user = not ops.is_native(x)
    xn = native_x(ops, x) if to_user else x
    x_dtype = dtype_of(xn)
    _check_floating(ops, x_dtype, where, "x")
    if op.scalar_x and shape_of(xn) != ():
        raise ShapeError(
            f"{where}: needs a scalar x (shape ()), got shape {shape_of(xn)}; use jacobian or pushforward "
            "for array inputs"
        )
    yn = None
    if y is not None:
        if not (ops.is_native(y) or isinstance(y, np.ndarray)) or isinstance(y, np.generic):
            raise ArgumentError(f"{where}: y= must be an array that f writes into, got {_kind(y)}")
        if not ops.mutable or (isinstance(y, np.ndarray) and not y.flags.writeable):
            raise NotSupportedError(f"{where}: y= is immutable ({_kind(y)}), so f cannot write into it")
        yn = y if ops.is_native(y) else ops.asarray(y, like=xn)
    native_contexts = tuple(
        c.with_value(native_context_value(ops, c.value, xn)) if ops is not NUMPY else c for c in contexts
    )
    if same_point:
        # the point is part of a same-point preparation: hold copies, not the user's mutable arrays
        xn = _snapshot(ops, xn)
        native_contexts = tuple(
            c.with_value(_snapshot(ops, c.value)) if isinstance(c, Constant) else c for c in native_contexts
        )
    problem = Problem(f, xn, native_contexts, yn, ops, single_use=single_use)
    try:
        y_shape, y_dtype = problem.y_spec if yn is not None else backend.output_spec(problem)
    except TreeOutput:  # f returns a tree: prepare the flat problem around it
        return _prepare_tree(
            op, f, backend, x, extra, contexts, y, strict, same_point, single_use, options, has_aux, output, where
        )
    problem.set_y_spec(y_shape, y_dtype)
    _check_floating(ops, y_dtype, where, "f's output")
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
    batch = None
    native: tuple | None = None
    if op.extra is not None:
        batch = len(extra) if type(extra) is tuple else None
        tangents = extra if type(extra) is tuple else (extra,)
        if not tangents:
            raise ArgumentError(f"{where}: the tuple of tangents is empty")
        like_x = op.extra == "tx"
        shape, dtype = (problem.x_shape, x_dtype) if like_x else (y_shape, y_dtype)
        converted = []
        for i, t in enumerate(tangents):
            label = op.extra if batch is None else f"{op.extra}[{i}]"
            tn = t if ops.is_native(t) else _native_tangent(ops, t, xn, dtype, where, label)
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
        native = tuple(converted)
    kernel = prepare_kernel(op, backend, problem, native, same_point, options)
    labels, values = _labelled(op, x, extra, contexts, y)
    constants = tuple(c.value for c in contexts if isinstance(c, Constant))
    if same_point:
        constants = tuple(_snapshot(NUMPY, v) for v in constants)
    return PREP_CLASSES[op.name](
        problem,
        backend,
        kernel,
        Signature(labels, values),
        strict=strict,
        same_point=same_point,
        batch=batch,
        to_user=to_user,
        point=(_snapshot(NUMPY, x) if same_point else x, constants),
        structure=(extra, contexts, y),
        tangents=native,
        options=options,
    )


def _prepare_tree(
    op: OpSpec,
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
    has_aux: bool,
    output: str,
    where: str,
) -> Prep:
    from ._tree_prep import prepare_tree

    return prepare_tree(
        op,
        f,
        backend,
        x,
        extra,
        contexts,
        y,
        strict=strict,
        same_point=same_point,
        single_use=single_use,
        options=options,
        has_aux=has_aux,
        output=output,
        where=where,
    )


def _native_tangent(ops: ArrayOps, t: Any, xn: Any, dtype: Any, where: str, label: str) -> Any:
    if isinstance(t, (bool, int, float)):
        return ops.astype(ops.asarray(np.asarray(t), like=xn), dtype)
    if isinstance(t, (np.ndarray, np.generic, list)):
        t = np.asarray(t)
        if t.dtype.kind not in "fc":
            raise ArgumentError(f"{where}: tangent {label} has dtype {t.dtype}; it must be floating point like {dtype}")
        return ops.asarray(t, like=xn)
    raise ArgumentError(f"{where}: tangent {label} must be an array or a number, got {_kind(t)}")


def _check_floating(ops: ArrayOps, dtype: Any, where: str, what: str) -> None:
    if ops.is_floating(dtype):
        return
    prefix = f"{where}: " if where else ""
    if ops.is_complex(dtype):
        raise NotSupportedError(
            f"{prefix}{what} is complex ({dtype}); diface differentiates real floating-point arrays"
        )
    raise ArgumentError(
        f"{prefix}{what} has dtype {dtype}; differentiation needs floating point (e.g. pass x.astype(float))"
    )


def call(
    op: OpSpec,
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
) -> Any:
    """An operator call: prepare for this one call (with `options`), or check and reuse `prep`."""
    if prep is None:
        prep = prepare(
            op,
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
        return prep.run(full, x, extra, contexts, out, y, check=False)
    if not isinstance(prep, Prep):
        raise ArgumentError(f"{op.name}: prep= must be a preparation from di.prepare_{op.name}(...), got {_kind(prep)}")
    if prep.op is not op:
        raise PreparationMismatchError(
            f"{op.name}: prep= must come from di.prepare_{op.name}(...), this one was made by di.prepare_{prep.op.name}"
        )
    if bool(has_aux) != prep.has_aux or output != prep.output:
        raise PreparationMismatchError(
            f"{op.name}: prepared with has_aux={prep.has_aux}, output={prep.output!r}; called with "
            f"has_aux={has_aux}, output={output!r}"
        )
    same_function = (f is prep.f or f == prep.f) and (backend is prep.backend or backend == prep.backend)
    x_only = prep._x_only
    if x_only is not None and not full and extra is None and not contexts and out is None and y is None:
        # the plain operator on nothing but x, with a program for it: check and call, nothing else
        if prep.strict and not (
            same_function and type(x) is prep._x_type and x.dtype == prep._x_dtype and x.shape == prep._x_shape
        ):
            prep.check(x, extra, contexts, y, f, backend)
        return x_only(x)
    if prep.strict and not same_function:
        prep.check(x, extra, contexts, y, f, backend)  # raises, naming f or the backend
    return prep.run(full, x, extra, contexts, out, y, check=True)


# -- one preparation class per operator, with a method per variant ---------------------------------


class PushforwardPrep(Prep):
    """Preparation for `pushforward` and `value_and_pushforward`."""

    op = OPERATORS["pushforward"]

    def pushforward(self, x: Any, tx: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(False, x, tx, contexts, out, y, check=True)

    def value_and_pushforward(self, x: Any, tx: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, tx, contexts, out, y, check=True)

    __call__ = pushforward


class PullbackPrep(Prep):
    """Preparation for `pullback` and `value_and_pullback`."""

    op = OPERATORS["pullback"]

    def pullback(self, x: Any, ty: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(False, x, ty, contexts, out, y, check=True)

    def value_and_pullback(self, x: Any, ty: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, ty, contexts, out, y, check=True)

    __call__ = pullback


class DerivativePrep(Prep):
    """Preparation for `derivative` and `value_and_derivative`."""

    op = OPERATORS["derivative"]

    def derivative(self, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(False, x, None, contexts, out, y, check=True)

    def value_and_derivative(self, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, y, check=True)

    __call__ = derivative


class GradientPrep(Prep):
    """Preparation for `gradient` and `value_and_gradient`."""

    op = OPERATORS["gradient"]

    def gradient(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(False, x, None, contexts, out, None, check=True)

    def value_and_gradient(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, None, check=True)

    __call__ = gradient


class JacobianPrep(Prep):
    """Preparation for `jacobian` and `value_and_jacobian`."""

    op = OPERATORS["jacobian"]

    def jacobian(self, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(False, x, None, contexts, out, y, check=True)

    def value_and_jacobian(self, x: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, y, check=True)

    __call__ = jacobian


class SecondDerivativePrep(Prep):
    """Preparation for `second_derivative` and `value_derivative_and_second_derivative`."""

    op = OPERATORS["second_derivative"]

    def second_derivative(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(False, x, None, contexts, out, None, check=True)

    def value_derivative_and_second_derivative(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, None, check=True)

    __call__ = second_derivative


class HessianPrep(Prep):
    """Preparation for `hessian` and `value_gradient_and_hessian`."""

    op = OPERATORS["hessian"]

    def hessian(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(False, x, None, contexts, out, None, check=True)

    def value_gradient_and_hessian(self, x: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, None, contexts, out, None, check=True)

    __call__ = hessian


class HvpPrep(Prep):
    """Preparation for `hvp` and `gradient_and_hvp`."""

    op = OPERATORS["hvp"]

    def hvp(self, x: Any, tx: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(False, x, tx, contexts, out, None, check=True)

    def gradient_and_hvp(self, x: Any, tx: Any, *contexts: Context, out: Any = None) -> Any:
        return self.run(True, x, tx, contexts, out, None, check=True)

    __call__ = hvp


class _InversePrep(Prep):
    """What the two preparations of Jacobian-inverse products share: the method they solve by."""

    @property
    def method(self) -> str:
        """The method the preparation solves by: "accumulate", "dense" or "krylov" (what "auto" chose)."""
        return self.kernel.method

    @property
    def solver(self) -> Any:
        """The settings asked for at preparation (`method`, `rtol`, `maxiter`; None: the defaults)."""
        return self._options


class InversePushforwardPrep(_InversePrep):
    """Preparation for `inverse_pushforward` and `value_and_inverse_pushforward`; `prep.method` says how
    it solves."""

    op = OPERATORS["inverse_pushforward"]

    def inverse_pushforward(self, x: Any, ty: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(False, x, ty, contexts, out, y, check=True)

    def value_and_inverse_pushforward(self, x: Any, ty: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, ty, contexts, out, y, check=True)

    __call__ = inverse_pushforward


class InversePullbackPrep(_InversePrep):
    """Preparation for `inverse_pullback` and `value_and_inverse_pullback`; `prep.method` says how it
    solves."""

    op = OPERATORS["inverse_pullback"]

    def inverse_pullback(self, x: Any, tx: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(False, x, tx, contexts, out, y, check=True)

    def value_and_inverse_pullback(self, x: Any, tx: Any, *contexts: Context, out: Any = None, y: Any = None) -> Any:
        return self.run(True, x, tx, contexts, out, y, check=True)

    __call__ = inverse_pullback


for _cls in (
    PushforwardPrep,
    PullbackPrep,
    DerivativePrep,
    GradientPrep,
    JacobianPrep,
    SecondDerivativePrep,
    HessianPrep,
    HvpPrep,
    InversePushforwardPrep,
    InversePullbackPrep,
):
    for _name in (_cls.op.name, _cls.op.full_name):
        getattr(
            _cls, _name
        ).__doc__ = f"`di.{_name}` with this preparation: the same arguments, without f, the backend and prep=."

PREP_CLASSES: dict[str, type[Prep]] = {
    cls.op.name: cls
    for cls in (
        PushforwardPrep,
        PullbackPrep,
        DerivativePrep,
        GradientPrep,
        JacobianPrep,
        SecondDerivativePrep,
        HessianPrep,
        HvpPrep,
        InversePushforwardPrep,
        InversePullbackPrep,
    )
}
