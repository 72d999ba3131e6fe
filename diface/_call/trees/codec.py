"""Trees and auxiliary outputs: the codec between the user's structured arguments and a flat problem.

When `x`, `y`, a tangent or what `f` returns is a tree (see `diface._call.trees.registry`), or `has_aux=True` or
`output="matrix"` is asked for, the call path prepares the flat problem
`f_flat(x_flat) = ravel(f(unravel(x_flat)))` in its place with the ordinary machinery (x_flat: the raveled
leaves, one concatenation; unravel: slices of x_flat reshaped to the leaves' shapes, which every engine
differentiates), and the preparation holds a `TreeCodec`. At each call the codec ravels x, the tangents
and y, each in its own array library (NumPy leaves give a NumPy vector, which the call path then
converts like any NumPy argument), and cuts the flat results back into trees laid out as JAX and
`torch.func` lay them out. Array problems have no codec: nothing here runs for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._arrays import NUMPY, ArrayOps, ops_for, reshaped
from ..._contexts import Constant
from ..._errors import ArgumentError, NotSupportedError, ShapeError
from ..._optable import Operator
from ..check import labelled
from ..complex import HOLOMORPHIC_OPERATORS, complex_rows, has_complex_dtype, to_pairs
from ..convert import native_context_value, native_x
from .info import TreeInfo
from .registry import flattener_for, is_tree, tree_paths

__all__ = ["OUTPUTS", "Flat", "TreeCodec", "make_codec", "structured"]

OUTPUTS = ("tree", "matrix")


def structured(x: Any, y: Any, has_aux: bool, output: str) -> bool:
    """Whether a call needs a codec: a tree x or y, `has_aux`, another layout than the default, or
    complex numbers (held as real pairs, see `diface._complex`)."""
    return (
        has_aux
        or output != "tree"
        or (not hasattr(x, "shape") and is_tree(x))
        or (y is not None and not hasattr(y, "shape") and is_tree(y))
        or has_complex_dtype(x)
        or (y is not None and has_complex_dtype(y))
    )


@dataclass(frozen=True)
class Flat:
    """The flat problem a codec stands for: its function and the flat arguments to prepare it at."""

    f: Callable
    x: Any
    extra: Any
    y: Any
    contexts: tuple


def split_aux(out: Any, where: str) -> tuple[Any, Any]:
    if not isinstance(out, tuple) or len(out) != 2:
        raise ArgumentError(f"{where}: with has_aux=True, f must return a pair (output, aux), got {type(out).__name__}")
    return out


def _concat_traced(parts: list) -> Any:
    """1-D parts (traced by some engine) joined by the library of the first part that is not NumPy
    (NumPy's concatenate for NumPy parts, and for arrays NumPy hands their operations to)."""
    ops = next((o for o in map(ops_for, parts) if o is not None and o is not NUMPY), NUMPY)
    if ops is NUMPY:
        return np.concatenate(parts)
    ref = next(p for p in parts if ops.is_native(p))
    return ops.concat([p if ops.is_native(p) else ops.asarray(p, like=ref) for p in parts])


def _ravel_traced(info: TreeInfo, tree: Any, where: str) -> Any:
    leaves, spec = info.flattener.flatten(tree)
    if spec != info.spec:
        raise ArgumentError(f"{where}: f returned {info.describe_structure_difference(tree, 'its output')}")
    if info.single:
        return to_pairs(leaves[0])  # one complex array: its pairs, shaped like it (as the tangents are)
    if any(info.complex_leaves):
        leaves = [to_pairs(v) if c else v for v, c in zip(leaves, info.complex_leaves)]
    parts = [reshaped(v, (-1,)) if hasattr(v, "shape") else np.asarray(v, dtype=np.float64).reshape(-1) for v in leaves]
    return parts[0] if len(parts) == 1 else _concat_traced(parts)


def _tree_output(out: Any, has_aux: bool) -> str:
    """What f returned instead of a scalar, and what to do about it."""
    what = f"a {type(out).__name__}"
    if isinstance(out, (tuple, list)):
        what += f" of {len(out)}"
    if isinstance(out, tuple) and len(out) == 2 and not has_aux and np.ndim(out[0]) == 0:
        return f"{what}: if f returns (output, aux), pass has_aux=True"
    return f"{what}; use jacobian for tree outputs, or reduce the output to a scalar"


def _same_structure(info: TreeInfo, t: Any) -> bool:
    try:
        return info.flattener.flatten(t)[1] == info.spec
    except Exception:
        return False


def make_codec(
    op: Operator,
    f: Callable,
    backend: Any,
    x: Any,
    extra: Any,
    contexts: tuple,
    y: Any,
    has_aux: bool,
    output: str,
    where: str,
) -> tuple[TreeCodec, Flat]:
    """The codec of a structured call, and the flat problem to prepare in its place."""
    if output not in OUTPUTS:
        raise ArgumentError(f"{where}: output= must be 'tree' or 'matrix', got {output!r}")
    # complex inputs of the operators of the complex derivative are differentiated along their real parts
    f = backend.evaluator(f)  # computes on native arrays, for an engine whose f builds a graph
    x_mode = "real" if op.name in HOLOMORPHIC_OPERATORS else "pairs"
    xi = TreeInfo(x, "x", where, complex_mode=x_mode) if is_tree(x) or has_complex_dtype(x) else None
    xf, imag = x, None
    if xi is not None and not xi.shapes:
        raise ArgumentError(
            f"{where}: x is {x!r}, a tree without leaves: there is nothing to differentiate; x must hold at "
            "least one array or number"
        )
    if xi is not None:
        x_leaves = xi.flattener.flatten(x)[0]
        xf = _scalar_if(op.scalar_x, xi.ravel_leaves(x_leaves))
        if xi.mode == "real" and any(xi.complex_leaves):
            imag = xi.imag_of(x_leaves)
    if y is not None:
        yi = TreeInfo(y, "y", where, complex_mode="pairs") if is_tree(y) or has_complex_dtype(y) else None
        yf = yi.ravel_leaves(yi.flattener.flatten(y)[0]) if yi is not None else y
    else:
        out = f(*_as_f_sees_it(backend, xi, xf, imag, contexts))
        if has_aux:
            out, _ = split_aux(out, where)
        # f's output at the user's x (NumPy leaves, say) may mix libraries: only its structure counts
        tree_out = isinstance(out, (list, tuple, dict)) or is_tree(out)
        if op.scalar_y and tree_out:
            raise ShapeError(f"{where}: needs f to return a scalar, but it returned {_tree_output(out, has_aux)}")
        complex_out = not tree_out and has_complex_dtype(out)
        yi = TreeInfo(out, "y", where, one_library=False, complex_mode="pairs") if tree_out or complex_out else None
        yf = None
    if yi is not None and not yi.shapes:
        what = "y" if y is not None else "f's output"
        raise ArgumentError(
            f"{where}: {what} is {y if y is not None else out!r}, a tree without leaves: there is nothing to "
            "differentiate; f must return at least one array or number"
        )
    _refuse_complex(op, backend, xi, yi, where)
    name = op.name
    codec = TreeCodec(op, f, xi, yi, has_aux, output, extra)
    codec.x_is_array = xi is not None and not is_tree(x)
    args = codec.f_args
    if y is not None:

        def f_flat_inplace(yv: Any, xv: Any, *cv: Any) -> None:
            f(yi.unravel_traced(yv, views=True) if yi is not None else yv, *args(xv, cv))

        f_flat: Callable = f_flat_inplace
    else:

        def f_flat(xv: Any, *cv: Any) -> Any:
            out = f(*args(xv, cv))
            if has_aux:
                out = split_aux(out, name)[0]
            return _ravel_traced(yi, out, name) if yi is not None else out

    flat_extra = codec.tangents_in(extra, where) if op.tangent is not None else extra
    flat_contexts = (Constant(imag), *contexts) if codec.imag else contexts
    return codec, Flat(f_flat, xf, flat_extra, yf, flat_contexts)


def _refuse_complex(op: Operator, backend: Any, xi: TreeInfo | None, yi: TreeInfo | None, where: str) -> None:
    """The operators that complex inputs or outputs leave undefined, refused before anything is prepared."""
    x_complex = xi is not None and any(xi.complex_leaves)
    y_complex = yi is not None and any(yi.complex_leaves)
    if y_complex and op.scalar_y:
        raise ShapeError(
            f"{where}: f returns complex values, and a complex-valued f has no gradient or Hessian; use "
            "di.pullback (the gradient of Re f is the pullback of 1, of Im f the pullback of 1j), di.jacobian, "
            "or reduce f to a real scalar (np.abs(f)**2, np.real(f))"
        )
    if x_complex and op.name == "hessian":
        raise NotSupportedError(
            f"{where}: x is complex, and a real f of complex x has no complex Hessian matrix (its second "
            "derivative is real-linear, not complex-linear). Use di.hvp (the pushforward of the gradient map), "
            "or di.hessian(di.realify(f), backend, pairs) for the real Hessian in (real, imaginary) coordinates"
        )
    if x_complex or y_complex:
        backend.check_complex(where)


def _as_f_sees_it(backend: Any, xi: TreeInfo | None, xf: Any, imag: Any, contexts: tuple) -> tuple:
    """x and the context values as f receives them from `backend` (NumPy input in its arrays: torch
    tensors, say), for the one evaluation that finds the structure of f's output."""
    ops = backend.array_ops(xf)
    xn = xf if ops.is_native(xf) else native_x(ops, xf)
    cv = tuple(native_context_value(ops, c.value, xn) for c in contexts)
    if xi is None:
        return (xn, *cv)
    im = None if imag is None else native_context_value(ops, imag, xn)
    return (xi.unravel_traced(xn, im), *cv)


class TreeCodec:
    """Ravels a structured call's arguments and cuts the flat results back (see the module docstring)."""

    def __init__(
        self,
        op: Operator,
        f: Callable,
        xi: TreeInfo | None,
        yi: TreeInfo | None,
        has_aux: bool,
        output: str,
        extra: Any,
    ) -> None:
        self.op = op
        self.f = f
        self.xi, self.yi = xi, yi
        self.has_aux = has_aux
        self.output = output
        #: a tuple of tangents (rather than one tangent that is a tuple-shaped tree)
        self.batched = op.tangent is not None and self._batched(extra)
        #: x is one (complex) array, not a tree
        self.x_is_array = False
        #: x's complex leaves are differentiated along their real parts: the flat problem's first context
        #: holds their imaginary parts (`diface._complex`, "real" mode)
        self.imag = xi is not None and xi.mode == "real" and any(xi.complex_leaves)

    def f_args(self, xv: Any, cv: tuple) -> tuple:
        """f's arguments (x as a tree or array, then the user's context values) from the flat problem's."""
        xi = self.xi
        if xi is None:
            return (xv, *cv)
        if self.imag:
            return (xi.unravel_traced(xv, cv[0]), *cv[1:])
        return (xi.unravel_traced(xv), *cv)

    def call_contexts(self, x: Any, leaves: list | None, contexts: tuple) -> tuple:
        """The flat problem's contexts at a call: the imaginary parts of x's complex leaves first, in
        "real" mode."""
        xi = self.xi
        if not self.imag or xi is None:
            return contexts
        if leaves is None:
            leaves = xi.flattener.flatten(x)[0]
        return (Constant(xi.imag_of(leaves)), *contexts)

    def _batched(self, extra: Any) -> bool:
        info = self.xi if self.op.tangent == "tx" else self.yi
        return type(extra) is tuple and (info is None or not _same_structure(info, extra))

    def bind(self, ops: ArrayOps, x_shape: tuple, y_shape: tuple) -> None:
        """The flat problem's arrays and sizes (for the blocks of Jacobians and Hessians): set by the
        preparation, before any result is decoded."""
        self.ops = ops
        self.x_shape, self.y_shape = tuple(x_shape), tuple(y_shape)
        self.nx = int(np.prod(x_shape, dtype=np.int64))
        self.ny = int(np.prod(y_shape, dtype=np.int64))

    # -- arguments in -------------------------------------------------------------------------------------
    def x_leaves(self, x: Any) -> tuple[list | None, bool]:
        """(x's leaves, whether they have the prepared specs: the strict check's quick test)."""
        xi = self.xi
        if xi is None:
            return None, True
        leaves, spec = xi.flattener.flatten(x)
        return leaves, xi.matches(leaves, spec)

    def x_in(self, x: Any, leaves: list | None, matched: bool, where: str) -> Any:
        """x raveled (its leaves from `x_leaves`)."""
        xi = self.xi
        if xi is None:
            return x
        if not matched or leaves is None:
            leaves = xi.leaves_of(x, where)  # a clear error where the structure or a shape differs
        return _scalar_if(self.op.scalar_x, xi.ravel_leaves(leaves))

    def tangents_in(self, extra: Any, where: str) -> Any:
        info = self.xi if self.op.tangent == "tx" else self.yi
        if self._batched(extra) != self.batched:
            raise ArgumentError(
                f"{where}: prepared for {'a tuple of tangents' if self.batched else 'one tangent'}, called with "
                f"{'a tuple' if not self.batched else 'one'}"
            )
        if info is None:
            return extra
        label = self.op.tangent or "t"
        if self.batched:
            return tuple(info.ravel_leaves(info.leaves_of(t, where, f"{label}[{i}]")) for i, t in enumerate(extra))
        return info.ravel_leaves(info.leaves_of(extra, where, label))

    def y_in(self, y: Any, where: str) -> Any:
        yi = self.yi
        return yi.ravel_leaves(yi.leaves_of(y, where)) if yi is not None else y

    def y_back(self, y: Any, yf: Any, where: str) -> None:
        """The flat output buffer written back into the leaves of the user's y."""
        yi = self.yi
        if yi is not None and yf is not None:
            for buf, v in zip(yi.leaves_of(y, where), yi.split(yf)):
                (ops_for(buf) or NUMPY).copyto(buf, v)

    def labelled(self, x: Any, extra: Any, contexts: tuple, y: Any) -> tuple[tuple, tuple]:
        """`(labels, values)` for the strict check: every leaf of x, of the tangents and of y by its path."""
        labels, values = labelled(None, x, None, contexts, None)
        pairs = self._leaves("x", x, self.xi)
        tangent = self.op.tangent
        if tangent is not None:
            info = self.xi if tangent == "tx" else self.yi
            if type(extra) is tuple and self.batched:
                for i, t in enumerate(extra):
                    pairs += self._leaves(f"{tangent}[{i}]", t, info)
            else:
                pairs += self._leaves(tangent, extra, info)
        tail = self._leaves("y", y, self.yi) if y is not None else []
        return (
            (*(p for p, _ in pairs), *labels[1:], *(p for p, _ in tail)),
            (*(v for _, v in pairs), *values[1:], *(v for _, v in tail)),
        )

    def structure(self, x: Any, extra: Any, y: Any) -> tuple[str, ...]:
        """How the trees of a call differ from the prepared ones in their containers, if they do."""
        found = []
        pairs = [(self.xi, x, "x"), (self.yi, y, "y")]
        if self.op.tangent is not None:
            info = self.xi if self.op.tangent == "tx" else self.yi
            tangents = extra if type(extra) is tuple and self.batched else (extra,)
            pairs += [(info, t, self.op.tangent) for t in tangents]
        for info, tree, label in pairs:
            if info is not None and tree is not None and not _same_structure(info, tree):
                found.append(info.describe_structure_difference(tree, label))
        return tuple(found)

    @staticmethod
    def _leaves(label: str, tree: Any, info: TreeInfo | None) -> list[tuple[str, Any]]:
        if info is None or not is_tree(tree):
            return [(label, tree)]
        return tree_paths(tree, label)

    # -- results out --------------------------------------------------------------------------------------
    def decode(self, kind: str, d: Any) -> Any:
        """One flat result as the user gets it: a tree like x or y, or blocks of a Jacobian or Hessian."""
        if kind == "x":
            xi = self.xi
            return (xi.unravel(d) if xi.single else xi.unravel(_flat(d))) if xi is not None else d
        if kind == "y":
            yi = self.yi
            return (yi.unravel(d) if yi.single else yi.unravel(_flat(d))) if yi is not None else d
        rows, cols = (self.yi, self.xi) if kind == "jac" else (self.xi, self.xi)
        if kind == "jac" and self.op.name == "laplacian" and cols is not None and any(cols.complex_leaves):
            return self._blocks(self._gradient_columns(d), rows, cols, self.ny, cols.elem_offsets[-1])
        return self._blocks(d, rows, cols, self.ny if kind == "jac" else self.nx, self.nx)

    def _gradient_columns(self, d: Any) -> Any:
        """The Jacobian that `value_gradient_and_laplacian` returns for complex x, from its columns of
        (real, imaginary) pairs: ∂/∂a + i ∂/∂b of each real output, the gradient's convention (2∂̄f).
        A complex output has no such gradient: refused."""
        if self.yi is not None and any(self.yi.complex_leaves):
            raise NotSupportedError(
                f"{self.op.full_name}: f returns complex values of complex x, which have no gradient; use "
                "di.laplacian for the Laplacian and di.jacobian or di.pushforward for first derivatives"
            )
        ops, xi = ops_for(d) or NUMPY, self.xi  # NumPy where the user gets NumPy results
        assert xi is not None  # complex columns
        columns = ops.moveaxis(reshaped(d, (self.ny, self.nx)), 0, 1)
        return ops.moveaxis(complex_rows(columns, xi.complex_leaves, xi.offsets), 0, 1)

    def decode_all(self, results: Any, full: bool) -> Any:
        """The flat results of a call (the plain result, or the full variant's tuple) as trees."""
        op = self.op
        kinds = op.kinds
        if not full:
            return self._decode_level(kinds[-1], results, True)
        levels = results[1:] if op.value_first else results
        decoded = tuple(self._decode_level(k, d, i == len(kinds) - 1) for i, (k, d) in enumerate(zip(kinds, levels)))
        return (self.decode("y", results[0]), *decoded) if op.value_first else decoded

    def _decode_level(self, kind: str, d: Any, last: bool) -> Any:
        if last and self.op.series:  # each tangent's tuple of results
            items = d if self.batched else (d,)
            decoded = tuple(tuple(self.decode(kind, c) for c in item) for item in items)
            return decoded if self.batched else decoded[0]
        if last and self.batched:
            return tuple(self.decode(kind, v) for v in d)
        return self.decode(kind, d)

    def _blocks(self, d: Any, rows: TreeInfo | None, cols: TreeInfo | None, nrows: int, ncols: int) -> Any:
        ops = self.ops
        scipy_sparse = hasattr(d, "tocsr")
        native_sparse = not scipy_sparse and ops.is_sparse(d)
        if rows is not None and rows.single and native_sparse and (cols is None or cols.single):
            combined = ops.sparse_pairs_to_complex(d)  # one complex output: the matrix stays sparse
            if combined is not None:
                return combined
        if rows is not None and any(rows.complex_leaves):  # complex outputs' rows as pairs: combined
            m = d.tocsr() if scipy_sparse else ops.sparse_to_dense(d) if ops.is_sparse(d) else d
            d = complex_rows(reshaped(m, (nrows, ncols)) if not scipy_sparse else m, rows.complex_leaves, rows.offsets)
            nrows = rows.elem_offsets[-1]
        if self.output == "matrix":
            return d if scipy_sparse else reshaped(d, (nrows, ncols))
        if rows is None and cols is None:
            return d
        if scipy_sparse:
            m = d.tocsr()
        elif ops.is_sparse(d):
            m = ops.reshape(ops.sparse_to_dense(d), (nrows, ncols))
        else:
            m = reshaped(d, (nrows, ncols))
        # an array output (rows None) is one block of rows; an array x one block of columns
        r_shapes = rows.shapes if rows is not None else (self.y_shape,)
        c_shapes = cols.shapes if cols is not None else (self.x_shape,)
        r_off = rows.elem_offsets if rows is not None else (0, nrows)
        c_off = cols.elem_offsets if cols is not None else (0, ncols)

        complex_rows_of = rows.complex_leaves if rows is not None and any(rows.complex_leaves) else None
        real_cols = cols.complex_leaves if cols is not None else (False,)

        def block(i: int, j: int) -> Any:
            b = m[r_off[i] : r_off[i + 1], c_off[j] : c_off[j + 1]]
            if complex_rows_of is not None and not complex_rows_of[i] and not real_cols[j]:  # real by real
                b = b.real if scipy_sparse else (ops_for(b) or NUMPY).real(b)
            shape = r_shapes[i] + c_shapes[j]
            if scipy_sparse:
                return b if len(shape) == 2 else b.toarray().reshape(shape)
            return reshaped(b, shape)

        def inner_tree(i: int) -> Any:
            if cols is None:
                return block(i, 0)
            return cols.unflatten([block(i, j) for j in range(len(c_shapes))])

        if rows is None:
            return inner_tree(0)
        return rows.unflatten([inner_tree(i) for i in range(len(r_shapes))])

    # -- out= trees ---------------------------------------------------------------------------------------
    def out_levels(self, out: Any, full: bool, where: str) -> tuple:
        """The out= buffers, one tree per result level (checked leaf by leaf when written)."""
        n_levels = len(self.op.kinds) if full else 1
        levels = out if n_levels > 1 else (out,)
        if not isinstance(levels, tuple) or len(levels) != n_levels:
            raise ArgumentError(f"{where}: out= must be a tuple of {n_levels} buffers")
        return levels

    def write(self, where: str, buffers: tuple, results: tuple) -> tuple:
        """Copy results into the out= trees, after checking every buffer."""
        pairs = []
        batched = self.batched and self.op.tangent is not None
        for buf_tree, res in zip(buffers, results):
            if self.op.series:  # per tangent, a tuple of coefficients: one list of them
                if batched:
                    if not (isinstance(buf_tree, tuple) and all(isinstance(b, tuple) for b in buf_tree)):
                        raise ArgumentError(f"{where}: out= needs a tuple of buffers per tangent")
                    buf_tree, res = sum(buf_tree, ()), sum(res, ())
                if not isinstance(buf_tree, tuple) or len(buf_tree) != len(res):
                    raise ArgumentError(f"{where}: out= needs a tuple of {len(res)} buffers per tangent")
                batched = True
            res_items = res if isinstance(res, tuple) and batched else None
            for b_tree, r_tree in zip(buf_tree, res_items) if res_items is not None else ((buf_tree, res),):
                r_leaves, r_spec = flattener_for(r_tree).flatten(r_tree)
                b_leaves, b_spec = flattener_for(b_tree).flatten(b_tree)
                if r_spec != b_spec or len(r_leaves) != len(b_leaves):
                    raise ShapeError(f"{where}: out= has another tree structure than the result")
                for bl, rl in zip(b_leaves, r_leaves):
                    if tuple(getattr(bl, "shape", ())) != tuple(rl.shape):
                        raise ShapeError(
                            f"{where}: an out= buffer has shape {tuple(bl.shape)}, its result leaf {tuple(rl.shape)}"
                        )
                    dtype = getattr(bl, "dtype", None)
                    if dtype != rl.dtype:
                        raise ArgumentError(f"{where}: an out= buffer has dtype {dtype}, its result leaf {rl.dtype}")
                    pairs.append((bl, rl))
        for bl, rl in pairs:
            (ops_for(bl) or NUMPY).copyto(bl, rl)
        return buffers

    # -- aux --------------------------------------------------------------------------------------------
    def aux(self, xn: Any, cv: tuple, ops: ArrayOps, to_user: bool) -> Any:
        """f's auxiliary output at the native flat x and context values, by one plain evaluation of f with
        its arguments as the kernels give them; native arrays in it as NumPy arrays for NumPy input."""
        aux = split_aux(self.f(*self.f_args(xn, cv)), self.op.name)[1]
        if not to_user:
            return aux
        flattener = flattener_for(aux)
        leaves, spec = flattener.flatten(aux)
        return flattener.unflatten(spec, [ops.to_numpy(v) if ops.is_native(v) else v for v in leaves])


def _scalar_if(scalar: bool, flat: Any) -> Any:
    """The flat x of an operator of scalar x (a complex number's real part) as a 0-d array."""
    return reshaped(flat, ()) if scalar else flat


def _flat(d: Any) -> Any:
    return reshaped(d, (-1,)) if getattr(d, "ndim", 1) != 1 else d
