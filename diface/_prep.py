"""`Prep`: the result of a `prepare_*` call, and the one path every operator call runs through.

A preparation holds the backend's `Kernel` for one problem and what the call path made around it at
preparation: the strict check (`diface._strict.Guard`), the delivery of results (`diface._deliver`),
for structured calls the codec between trees (or complex arrays, held as real pairs) and the flat
problem (`diface._codec`), and the direct routes of calls that pass nothing but x and contexts (built
once from the kernel's `direct` program, here for arrays and in `diface._prep_routes` for trees and
complex arrays: used by `di.gradient(..., prep=prep)` and by `prep.gradient` alike).

`run(full, x, extra, contexts, out, y)` is every call: check, convert, run the kernel, deliver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ._arrays import ArrayOps
from ._codec import TreeCodec
from ._complex import complex_rows
from ._contexts import check_contexts
from ._convert import native_context_value, native_tangent, native_x
from ._deliver import Delivery
from ._errors import ArgumentError
from ._kernel import Kernel
from ._optable import Operator
from ._prep_routes import complex_array_route, tree_route
from ._problem import Problem
from ._strict import Guard, labelled

__all__ = ["Prep"]


class _NoArgument:
    """A type no argument has: the quick route's x type where the prepared spec cannot be tested quickly."""


class Prep:
    """The result of a `prepare_*` call: reusable state for one operator and all its variants.

    Call the operator with `prep=prep`, or use the methods of the prep itself (`prep.gradient(x)`,
    `prep.value_and_gradient(x, out=g)`; `prep(x)` runs the plain operator). With `strict=True`
    every call checks its arguments against the preparation.
    """

    op: ClassVar[Operator]

    def __init__(
        self,
        problem: Problem,
        backend: Any,
        kernel: Kernel,
        guard: Guard,
        *,
        f: Callable,
        strict: bool,
        same_point: bool,
        batch: int | None,
        to_user: bool,
        codec: TreeCodec | None = None,
        has_aux: bool = False,
        output: str = "tree",
        tangents: tuple | None = None,
        options: Any = None,
        remake: Callable[[], Kernel] | None = None,
    ) -> None:
        ops = problem.ops
        self._problem, self._tangents, self._remake = problem, tangents, remake
        self.f = f
        self.backend = backend
        self.kernel = kernel
        self.guard = guard
        self.codec = codec
        self.strict = strict
        self.same_point = same_point
        self.batch = batch
        self.to_user = to_user
        self.has_aux = has_aux
        self.output = output
        self.ops: ArrayOps = ops
        self.x_shape, self.x_dtype = problem.x_shape, problem.x_dtype
        self.y_shape, self.y_dtype = problem.y_spec
        self.dtype = ops.result_type(self.x_dtype, self.y_dtype)
        self.delivery = Delivery(self.op, kernel, ops, to_user, self.x_shape, self.y_shape, self.dtype)
        if self.op.series:  # the options of a series operator are its order
            self.delivery.order = options
        self._options = options
        self._native_type = type(problem.x)
        #: NumPy arguments go to the kernel as they are (it converts them itself)
        self._takes_numpy = to_user and kernel.accepts_numpy
        #: what one call costs in evaluations of f, where the backend counts them (`AutoFiniteDiff`: an
        #: `EvaluationCount` with `points` and `f_calls`), else None
        self.evaluations = kernel.evaluations
        if kernel.layout is not None:  # a sparse Jacobian or Hessian: the pattern and the coloring
            self.sparsity_pattern = kernel.layout.scipy_pattern()
            if codec is not None and codec.yi is not None and any(codec.yi.complex_leaves):
                # the pattern of the complex outputs (each row a pair of the flat problem's)
                pairs = complex_rows(
                    self.sparsity_pattern.astype(np.float64), codec.yi.complex_leaves, codec.yi.offsets
                )
                self.sparsity_pattern = pairs != 0
            self.coloring = kernel.layout.coloring
            self.ncolors = self.coloring.ncolors
            self.column_colors, self.row_colors = self.coloring.column_colors, self.coloring.row_colors
        if codec is not None:
            codec.bind(ops, self.x_shape, self.y_shape)
        # x and one tangent take a shorter path: arrays of the prepared type (NumPy ones, for NumPy input)
        x_spec, t_spec = guard.xt_spec, guard.t_spec
        self._tangent_type = (
            t_spec[0]
            if t_spec is not None and (not to_user or (x_spec is not None and x_spec[0] is t_spec[0] is np.ndarray))
            else None
        )
        self._direct = self._direct_route() if codec is None else None
        self._tree_direct = tree_route(self) if codec is not None else None
        self._array_direct = complex_array_route(self)
        self._quick = (self._quick_route(False), self._quick_route(True))

    @property
    def user_numpy(self) -> bool:
        """Results are NumPy arrays (NumPy input, or a NumPy engine)."""
        return self.delivery.user_numpy

    @property
    def user_dtype(self) -> Any:
        """The dtype of the derivatives the user gets."""
        return self.delivery.user_dtype

    def __repr__(self) -> str:
        name = getattr(self.f, "__qualname__", None) or repr(self.f)
        codec = self.codec
        x = f"tree of {len(codec.xi.shapes)} leaves" if codec is not None and codec.xi is not None else self.x_shape
        y = f"tree of {len(codec.yi.shapes)} leaves" if codec is not None and codec.yi is not None else self.y_shape
        return (
            f"<{type(self).__name__} of {name} on {self.backend!r}: x {self.x_dtype} {x}, "
            f"y {self.y_dtype} {y}{', same point' if self.same_point else ''}>"
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
        kernel = self.kernel.copy() if self.kernel.copy is not None else self._remake() if self._remake else self.kernel
        return type(self)(
            self._problem,
            self.backend,
            kernel,
            self.guard,
            f=self.f,
            strict=self.strict,
            same_point=self.same_point,
            batch=self.batch,
            to_user=self.to_user,
            codec=self.codec,
            has_aux=self.has_aux,
            output=self.output,
            tangents=self._tangents,
            options=self._options,
            remake=self._remake,
        )

    # -- the direct route -----------------------------------------------------------------------------
    def _usable_program(self) -> bool:
        """Whether the plain call may use the kernel's direct program: no tangents, not at one point, no
        auxiliary output, and NumPy input only where the program takes it."""
        if self.kernel.direct is None or self.same_point or self.op.tangent is not None or self.has_aux:
            return False
        x_spec = self.guard.x_spec
        return not self.to_user or (self._takes_numpy and x_spec is not None and x_spec[0] is np.ndarray)

    def _values(self, contexts: tuple, like: Any) -> tuple:
        """The contexts' values as the direct program takes them."""
        if self.to_user:  # the program takes NumPy values as they are
            return tuple(c.value for c in contexts)
        return tuple(native_context_value(self.ops, c.value, like) for c in contexts)

    def _direct_route(self) -> Callable[[Any, tuple], Any] | None:
        """`(x, context values) -> result` around the kernel's direct program, as the user gets the
        result, or None where the plain call needs the general path."""
        program = self.kernel.direct
        if program is None or not self._usable_program():
            return None
        delivery, ops, to_user = self.delivery, self.ops, self.to_user
        layout, scalar = delivery.layout, delivery.scalar
        if layout is None and not to_user:
            return program

        def direct(x: Any, cv: tuple) -> Any:
            d = program(x, cv)
            if layout is not None:
                return layout.build(ops, ops.to_numpy(d) if to_user else d, delivery.user_numpy)
            d = ops.to_numpy(d)
            return d[()] if scalar else d

        return direct

    # -- checking -------------------------------------------------------------------------------------
    def check(self, x: Any, extra: Any, contexts: tuple, y: Any, f: Any = None, backend: Any = None) -> None:
        """Raise `PreparationMismatchError` unless the call matches this preparation."""
        codec = self.codec
        if codec is None:
            labels, values = labelled(self.op.tangent, x, extra, contexts, y)
            self.guard.check(labels, values, f, backend)
        else:
            labels, values = codec.labelled(x, extra, contexts, y)
            self.guard.check(labels, values, f, backend, codec.structure(x, extra, y))

    # -- running --------------------------------------------------------------------------------------
    def run(self, full: bool, x: Any, extra: Any, contexts: tuple, out: Any, y: Any, check: bool = True) -> Any:
        """One operator call: the plain operator (`full=False`) or its full variant."""
        if not contexts and out is None and y is None:
            return self._quick[full](x, extra, check)
        return self._dispatch(full, x, extra, contexts, out, y, check)

    def _quick_route(self, full: bool) -> Callable[[Any, Any, bool], Any]:
        """`(x, one tangent or None, check) -> result` of the plain operator (or the full variant) for a
        call with nothing else (no contexts, `out=` or `y=`), the commonest call: arguments of the
        prepared specs (or any, unchecked) go straight to the direct program or the kernel; anything else
        takes the general path, which checks them and names what differs."""
        dispatch, ops = self._dispatch, self.ops

        def general(x: Any, extra: Any, check: bool) -> Any:
            return dispatch(full, x, extra, (), None, None, check)

        guard, strict = self.guard, self.strict
        array_direct = self._array_direct
        if array_direct is not None and not full and not guard.context_specs:
            x_type, x_dtype, x_shape = guard.x_spec or (None, None, None)

            def quick_complex(x: Any, extra: Any, check: bool) -> Any:
                # getattr: x may be a Python complex number (no dtype, no shape; its spec says None)
                if extra is None and type(x) is x_type and getattr(x, "dtype", None) == x_dtype:
                    if getattr(x, "shape", None) == x_shape:
                        return array_direct(x)
                return general(x, extra, check)

            return quick_complex
        if self.codec is not None or guard.context_specs:
            return general
        kernel_run, deliver = self.kernel.run, self.delivery.deliver
        if self.op.tangent is None:
            # x's prepared spec, or (x_spec None, or a Python number) a type no x has: the general path checks
            x_type, x_dtype, x_shape = guard.x_spec or (None, None, None)
            if not hasattr(x_type, "dtype"):
                x_type = _NoArgument
            direct = self._direct
            if direct is not None and not full:

                def quick_direct(x: Any, extra: Any, check: bool) -> Any:
                    if extra is None and (
                        not (check and strict) or (type(x) is x_type and x.dtype == x_dtype and x.shape == x_shape)
                    ):
                        return direct(x, ())
                    return general(x, extra, check)

                return quick_direct
            native_type, is_native = self._native_type, ops.is_native

            def quick(x: Any, extra: Any, check: bool) -> Any:
                if extra is None and (
                    not (check and strict) or (type(x) is x_type and x.dtype == x_dtype and x.shape == x_shape)
                ):
                    xn = x if type(x) is native_type or is_native(x) else native_x(ops, x)
                    return deliver(kernel_run(xn, None, (), None, full), full, False, None, None)
                return general(x, extra, check)

            return quick
        tangent_type, tangent_matches = self._tangent_type, guard.tangent_matches
        if tangent_type is None:
            return general
        convert = self.to_user and not self._takes_numpy
        name, label = self.op.name, self.op.tangent or ""

        def quick_tangent(x: Any, extra: Any, check: bool) -> Any:
            if type(extra) is tangent_type and (not (check and strict) or tangent_matches(x, extra)):
                if convert:
                    x = native_x(ops, x)
                    extra = native_tangent(ops, extra, x, None, name, label)
                return deliver(kernel_run(x, (extra,), (), None, full), full, False, None, None)
            return general(x, extra, check)

        return quick_tangent

    def _dispatch(self, full: bool, x: Any, extra: Any, contexts: tuple, out: Any, y: Any, check: bool) -> Any:
        """A call with contexts, `out=`, `y=`, a batch of tangents or a tree, or one that is not of the
        prepared specs: the direct program with contexts, the tree route, or the general path."""
        if out is None and y is None and self.codec is None:
            direct = self._direct
            if direct is not None and not full and extra is None and contexts:  # the direct program, contexts
                check_contexts(contexts, self.op.name)
                guard = self.guard
                if check and self.strict and not (guard.x_matches(x) and guard.contexts_match(contexts)):
                    self.check(x, None, contexts, None)
                return direct(x, self._values(contexts, x))
        tree_direct = self._tree_direct
        if tree_direct is not None and extra is None and out is None and y is None:
            if contexts:
                check_contexts(contexts, self.op.full_name if full else self.op.name)
            return tree_direct(x, contexts, check, full)
        return self._run(full, x, extra, contexts, out, y, check)

    def _run(self, full: bool, x: Any, extra: Any, contexts: tuple, out: Any, y: Any, check: bool) -> Any:
        """The general path: contexts, `out=`, `y=`, batches of tangents, trees."""
        name = self.op.full_name if full else self.op.name
        if contexts:
            check_contexts(contexts, name)
        codec = self.codec
        xf, tf, yf = x, extra, y
        if codec is not None:
            leaves, matched = codec.x_leaves(x)
            if check and self.strict and (not matched or extra is not None or contexts or y is not None):
                self.check(x, extra, contexts, y)
            xf = codec.x_in(x, leaves, matched, name)
            contexts = codec.call_contexts(x, leaves, contexts)
            if extra is not None:
                tf = codec.tangents_in(extra, name)
            if y is not None:
                yf = codec.y_in(y, name)
        elif check and self.strict:
            self.check(x, extra, contexts, y)
        ops = self.ops
        if type(xf) is self._native_type or ops.is_native(xf):
            xn = xf
        elif self._takes_numpy and type(xf) is np.ndarray and xf.dtype == self.x_dtype:
            xn = xf
        else:
            xn = native_x(ops, xf)
        tn = None if self.op.tangent is None else self._tangents_in(tf, xn)
        cv = self._contexts_in(contexts, xn) if contexts else ()
        yn = None if yf is None else (yf if ops.is_native(yf) else ops.asarray(yf, like=xn))
        out_levels = None
        if out is not None:
            if codec is None:
                self.delivery.check_out(out, full, extra)
            else:
                out_levels = codec.out_levels(out, full, name)
        r = self.kernel.run(xn, tn, cv, yn, full)
        if yf is not None and yn is not yf:
            np.copyto(yf, ops.to_numpy(yn))
        batched = type(tf) is tuple
        if codec is None:
            return self.delivery.deliver(r, full, batched, out, y)
        if y is not None:
            codec.y_back(y, yf, name)
        results = codec.decode_all(self.delivery.deliver(r, full, batched, None, yf), full)
        if out_levels is not None:
            if not full:
                results = codec.write(name, out_levels, (results,))[0]
            elif self.op.value_first:  # out= holds the derivatives, not the value
                results = (results[0], *codec.write(name, out_levels, results[1:]))
            else:
                results = codec.write(name, out_levels, results)
        if full and y is not None and self.op.value_first:
            results = (y, *results[1:])
        if not self.has_aux:
            return results
        # f's arguments as the engine gives them to f (a kernel taking NumPy converts them itself)
        x_native = xn if ops.is_native(xn) else native_x(ops, xn)
        cv_native = tuple(native_context_value(ops, c.value, x_native) for c in contexts)
        aux = codec.aux(x_native, cv_native, ops, self.to_user)
        if not full:
            return results, aux
        return ((results[0], aux), *results[1:])

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
        dtype = self.x_dtype if self.op.tangent == "tx" else self.y_dtype
        label = self.op.tangent or ""
        return tuple(
            t if ops.is_native(t) else native_tangent(ops, t, xn, dtype, self.op.name, label) for t in tangents
        )

    def _contexts_in(self, contexts: tuple, xn: Any) -> tuple:
        """The call's context values, NumPy arrays converted to the backend's arrays."""
        values = tuple(c.value for c in contexts)
        if self._takes_numpy:
            return values
        return tuple(native_context_value(self.ops, v, xn) for v in values)
