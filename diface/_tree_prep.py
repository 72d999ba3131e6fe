"""Trees at the API boundary: a preparation on a flat problem, wrapped.

When `x` or what `f` returns is a tree (see `diface._trees`), or `has_aux=True` or `output="matrix"` is
asked for, `prepare` builds the flat problem `f_flat(x_flat) = ravel(f(unravel(x_flat)))` (x_flat: the
raveled leaves, one concatenation; unravel: slices of x_flat reshaped to the leaves' shapes, which every
engine differentiates), prepares the operator on it with the ordinary machinery, and returns a
`TreePrep`: each call ravels x and the tangents, runs the flat preparation and cuts its results back into
trees, laid out as JAX and `torch.func` lay them out. Array problems never come here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._errors import ArgumentError, PreparationMismatchError, ShapeError
from ._problem import TreeOutput
from ._signature import describe, describe_value
from ._trees import TreeInfo, is_tree, ops_for

__all__ = ["prepare_tree"]

#: what each level of an operator's full variant is shaped like (the plain operator: the last level)
_KINDS: dict[str, tuple[str, ...]] = {
    "pushforward": ("y",),
    "pullback": ("x",),
    "derivative": ("y",),
    "gradient": ("x",),
    "jacobian": ("jac",),
    "second_derivative": ("y", "y"),
    "hessian": ("x", "hess"),
    "hvp": ("x", "x"),
    "inverse_pushforward": ("x",),
    "inverse_pullback": ("y",),
}

OUTPUTS = ("tree", "matrix")


def _split_aux(out: Any, where: str) -> tuple[Any, Any]:
    if not isinstance(out, tuple) or len(out) != 2:
        raise ArgumentError(f"{where}: with has_aux=True, f must return a pair (output, aux), got {type(out).__name__}")
    return out


def _concat_traced(parts: list) -> Any:
    """1-D parts (traced by some engine) joined, in the namespace of the first traced part."""
    ref = next((p for p in parts if not isinstance(p, np.ndarray)), parts[0])
    module = type(ref).__module__.split(".")[0]
    if module == "torch":
        import torch

        return torch.cat([p if isinstance(p, torch.Tensor) else torch.as_tensor(p, device=ref.device) for p in parts])
    if module in ("jax", "jaxlib"):
        import jax.numpy as jnp

        return jnp.concatenate(parts)
    if module == "autograd":
        import autograd.numpy as anp

        return anp.concatenate(parts)
    return np.concatenate(parts)


def _ravel_traced(info: TreeInfo, tree: Any, where: str) -> Any:
    leaves, spec = info.flattener.flatten(tree)
    if spec != info.spec:
        raise ArgumentError(f"{where}: f returned {info.describe_structure_difference(tree, 'its output')}")
    parts = [v.reshape(-1) if hasattr(v, "reshape") else np.asarray(v, dtype=np.float64).reshape(-1) for v in leaves]
    return parts[0] if len(parts) == 1 else _concat_traced(parts)


def _as_f_sees_it(backend: Any, xi: Any, xf: Any, cvals: tuple) -> tuple:
    """x and the context values as f receives them from `backend` (NumPy input in its arrays: torch
    tensors, say), for the one evaluation that finds the structure of f's output."""
    ops = backend.array_ops(xf)
    xn = xf if ops.is_native(xf) else ops.asarray(xf)
    cv = tuple(ops.asarray(v, like=xn) if isinstance(v, np.ndarray) else v for v in cvals)
    return (xi.unravel_traced(xn) if xi is not None else xn, *cv)


def prepare_tree(
    op: Any,
    f: Callable,
    backend: Any,
    x: Any,
    extra: Any,
    contexts: tuple,
    y: Any,
    *,
    strict: bool,
    same_point: bool,
    single_use: bool,
    options: Any,
    has_aux: bool,
    output: str,
    where: str,
) -> Any:
    """The preparation of operator `op` where x or f's output is a tree (or has_aux / output= ask)."""
    from ._prep import PREP_CLASSES, prepare

    if output not in OUTPUTS:
        raise ArgumentError(f"{where}: output= must be 'tree' or 'matrix', got {output!r}")
    xi = TreeInfo(x, "x", where) if is_tree(x) else None
    xf = xi.ravel_leaves(xi.flattener.flatten(x)[0]) if xi is not None else x
    cvals = tuple(c.value for c in contexts)
    if y is not None:
        yi = TreeInfo(y, "y", where) if is_tree(y) else None
        yf = yi.ravel_leaves(yi.flattener.flatten(y)[0]) if yi is not None else y
    else:
        out = f(*_as_f_sees_it(backend, xi, xf, cvals))
        if has_aux:
            out, _ = _split_aux(out, where)
        # f's output at the user's x (NumPy leaves, say) may mix libraries: only its structure counts
        tree_out = isinstance(out, (list, tuple, dict)) or is_tree(out)
        yi = TreeInfo(out, "y", where, one_library=False) if tree_out else None
        yf = None

    if y is not None:

        def f_flat_inplace(yv: Any, xv: Any, *cv: Any) -> None:
            f(yi.unravel_traced(yv) if yi is not None else yv, xi.unravel_traced(xv) if xi is not None else xv, *cv)

        f_flat: Callable = f_flat_inplace
    else:

        def f_flat(xv: Any, *cv: Any) -> Any:
            out = f(xi.unravel_traced(xv) if xi is not None else xv, *cv)
            if has_aux:
                out = _split_aux(out, op.name)[0]
            return _ravel_traced(yi, out, op.name) if yi is not None else out

    flat_extra = extra
    batch = False
    if op.extra is not None:
        info = xi if op.extra == "tx" else yi
        batch = type(extra) is tuple and (info is None or not _same_structure(info, extra))
        flat_extra = _flat_tangents(info, extra, batch, where, op.extra)
    try:
        inner = _prepare_flat(
            prepare, op, f_flat, backend, xf, flat_extra, contexts, yf, strict, same_point, single_use, options
        )
    except TreeOutput as e:  # f's output changed kind between calls: say so plainly
        raise ArgumentError(str(e)) from None
    cls = _tree_class(PREP_CLASSES[op.name])
    return cls(inner, f, xi, yi, x, has_aux, output, batch, strict, same_point)


def _prepare_flat(prepare, op, f_flat, backend, xf, flat_extra, contexts, yf, strict, same_point, single_use, options):
    return prepare(
        op,
        f_flat,
        backend,
        xf,
        flat_extra,
        contexts,
        yf,
        strict=strict,
        same_point=same_point,
        single_use=single_use,
        options=options,
    )


def _same_structure(info: TreeInfo, t: Any) -> bool:
    try:
        return info.flattener.flatten(t)[1] == info.spec
    except Exception:
        return False


def _flat_tangents(info: TreeInfo | None, extra: Any, batch: bool, where: str, label: str) -> Any:
    if info is None:
        return extra
    if batch:
        return tuple(info.ravel_leaves(info.leaves_of(t, where, f"{label}[{i}]")) for i, t in enumerate(extra))
    return info.ravel_leaves(info.leaves_of(extra, where, label))


_CLASSES: dict[type, type] = {}


def _tree_class(base: type) -> type:
    cls = _CLASSES.get(base)
    if cls is None:
        cls = type(f"Tree{base.__name__}", (TreePrep, base), {"__doc__": base.__doc__})
        _CLASSES[base] = cls
    return cls


class TreePrep:
    """A preparation on trees: the flat preparation inside (`prep.flat`), and the trees' structures."""

    op: Any

    def __init__(
        self,
        inner: Any,
        f: Callable,
        xi: TreeInfo | None,
        yi: TreeInfo | None,
        x: Any,
        has_aux: bool,
        output: str,
        batch: bool,
        strict: bool,
        same_point: bool,
    ) -> None:
        self.flat = inner
        self.f = f
        self.backend = inner.backend
        self.kernel = inner.kernel
        self.strict = strict
        self.same_point = same_point
        self.has_aux = has_aux
        self.output = output
        self.batch = inner.batch
        self._batched = batch
        self._xi, self._yi = xi, yi
        self._x_spec = describe(x) if xi is None else None
        self._x_only = None
        self._kinds = _KINDS[self.op.name]
        self._nx = int(np.prod(inner.x_shape, dtype=np.int64))
        self._ny = int(np.prod(inner.y_shape, dtype=np.int64))
        self._tree_program = None
        self._install_jax_path(x)

    # -- the fused JAX path ------------------------------------------------------------------------------
    def _install_jax_path(self, x: Any) -> None:
        """Where x's leaves are JAX arrays and the flat preparation's plain call is one compiled program
        of x alone, compile ravel -> that program -> the result cut into trees as ONE `jax.jit` of the
        leaves (JAX traces through the nested program), and shadow the plain operator's method with a
        closure that runs it after a strict check of the leaves (structure, type, dtype, shape)."""
        xi, yi, inner = self._xi, self._yi, self.flat
        program = getattr(inner.kernel, "x_only", None)
        if (
            program is None
            or inner._x_only is not program  # wrapped (sparse, NumPy out): the general path
            or self.has_aux
            or xi is None
            or xi.jit_ravel is None  # JAX leaves, no Python numbers among them
            or (yi is not None and yi.jit_split is None and len(yi.shapes) > 1)
        ):
            return
        import jax
        import jax.numpy as jnp

        dtype, kind = xi.dtype, self._kinds[-1]
        convert = self._convert_one

        def tree_program(leaves: list) -> Any:
            flat = jnp.concatenate([jnp.reshape(v, (-1,)).astype(dtype) for v in leaves])
            return convert(kind, program(flat))

        fused = jax.jit(tree_program)
        try:
            fused.lower(xi.flattener.flatten(x)[0]).compile()
        except Exception:  # pragma: no cover - a result the tree layer cannot trace: the general path
            return
        self._tree_program = fused
        name = self.op.name
        general = getattr(type(self), name)
        flatten, matches, prep = xi.flattener.flatten, xi.matches, self

        def direct(x: Any, *contexts: Any, out: Any = None, **y: Any) -> Any:
            if contexts or out is not None or y:
                return general(prep, x, *contexts, out=out, **y)
            leaves, spec = flatten(x)
            if not matches(leaves, spec):
                return general(prep, x)  # the strict check names the leaf path, or strict=False copes
            return fused(leaves)

        direct.__name__, direct.__doc__ = name, general.__doc__
        setattr(self, name, direct)

    def __getattr__(self, name: str) -> Any:  # what the flat preparation shows (sparsity, method, ...)
        if name.startswith("__") or name == "flat":
            raise AttributeError(name)
        return getattr(self.flat, name)

    def __repr__(self) -> str:
        name = getattr(self.f, "__qualname__", None) or repr(self.f)
        parts = [f"x {'tree of ' + str(len(self._xi.shapes)) + ' leaves' if self._xi else self.flat.x_shape}"]
        parts.append(f"y {'tree of ' + str(len(self._yi.shapes)) + ' leaves' if self._yi else self.flat.y_shape}")
        return f"<{type(self).__name__} of {name} on {self.backend!r}: {', '.join(parts)}>"

    def copy(self) -> Any:
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin.flat = self.flat.copy()
        twin.kernel = twin.flat.kernel
        if self._tree_program is not None:  # the shadowed method calls back into its own preparation
            del twin.__dict__[self.op.name]
            twin._tree_program = None
            twin._install_jax_path(self._xi.unflatten(_example_leaves(self._xi)))
        return twin

    # -- checking ------------------------------------------------------------------------------------
    def check(self, x: Any, extra: Any, contexts: tuple, y: Any, f: Any = None, backend: Any = None) -> None:
        f_ok = f is None or f is self.f or f == self.f
        backend_ok = backend is None or backend is self.backend or backend == self.backend
        lines = self._x_lines(x)
        if f_ok and backend_ok and not lines:
            return
        self._mismatch(lines, f_ok, backend_ok)

    def _x_lines(self, x: Any) -> list[str]:
        if self._xi is not None:
            if not is_tree(x):
                return [f"x: a tree at preparation, {type(x).__name__} now"]
            return self._xi.mismatches(x)
        now = describe(x)
        if now != self._x_spec:
            return [f"x: {describe_value(self._x_spec)} at preparation, {describe_value(now)} now"]
        return []

    def _mismatch(self, lines: list[str], f_ok: bool = True, backend_ok: bool = True) -> None:
        name = self.op.name
        head = [
            f"{name}: the call does not match its preparation (strict mode checks f, the backend, the tree "
            "structure and every leaf's type, dtype and shape):"
        ]
        if not f_ok:
            head.append("  f: another function than at preparation")
        if not backend_ok:
            head.append(f"  backend: prepared for {self.backend!r}")
        head += ["  " + line for line in lines]
        head.append(f"Prepare again for these arguments with di.prepare_{name}(...), or pass strict=False.")
        raise PreparationMismatchError("\n".join(head))

    # -- running -------------------------------------------------------------------------------------
    def run(self, full: bool, x: Any, extra: Any, contexts: tuple, out: Any, y: Any, check: bool) -> Any:
        name = self.op.full_name if full else self.op.name
        xi, yi = self._xi, self._yi
        if xi is not None:
            leaves, spec = xi.flattener.flatten(x)
            fused = self._tree_program
            if fused is not None and not full and extra is None and not contexts and out is None and y is None:
                if xi.matches(leaves, spec):
                    return fused(leaves)
            if not xi.matches(leaves, spec):
                if check and self.strict:
                    self._mismatch(self._x_lines(x))
                leaves = xi.leaves_of(x, name)
            xf = xi.ravel_leaves(leaves)
        else:
            if check and self.strict and describe(x) != self._x_spec:
                self._mismatch(self._x_lines(x))
            xf = x
        tf = extra
        if self.op.extra is not None:
            info = xi if self.op.extra == "tx" else yi
            batch = type(extra) is tuple and (info is None or not _same_structure(info, extra))
            if batch != self._batched:
                raise ArgumentError(
                    f"{name}: prepared for {'a tuple of tangents' if self._batched else 'one tangent'}, called with "
                    f"{'a tuple' if batch else 'one'}"
                )
            tf = _flat_tangents(info, extra, batch, name, self.op.extra)
        yf = None
        if y is not None:
            yf = yi.ravel_leaves(yi.leaves_of(y, name)) if yi is not None else y
        out_levels = None
        if out is not None:
            n_levels = len(self._kinds) if full else 1
            out_levels = out if n_levels > 1 else (out,)
            if not isinstance(out_levels, tuple) or len(out_levels) != n_levels:
                raise ArgumentError(f"{name}: out= must be a tuple of {n_levels} buffers")
        inner_check = check and self.strict and (self.same_point or bool(contexts) or extra is not None)
        r = self.flat.run(full, xf, tf, contexts, None, yf, check=inner_check)
        if yi is not None and yf is not None:
            for buf, v in zip(yi.leaves_of(y, name), yi.split(yf)):
                ops_for(buf).copyto(buf, v)
        kinds = self._kinds
        if not full:
            result = self._convert(kinds[-1], r)
            if out_levels is not None:
                result = self._write(name, (out_levels[0],), (result,))[0]
            return (result, self._aux(x, contexts)) if self.has_aux else result
        if self.op.value_first:
            value, levels = r[0], r[1:]
        else:
            value, levels = None, r
        results = tuple(self._convert(k, d, last=i == len(kinds) - 1) for i, (k, d) in enumerate(zip(kinds, levels)))
        if out_levels is not None:
            results = self._write(name, out_levels, results)
        if not self.op.value_first:
            return results
        value = y if y is not None else self._convert("y", value, last=False)
        if self.has_aux:
            value = (value, self._aux(x, contexts))
        return (value, *results)

    def _aux(self, x: Any, contexts: tuple) -> Any:
        """aux: one plain evaluation of f at x."""
        return _split_aux(self.f(x, *(c.value for c in contexts)), self.op.name)[1]

    def _convert(self, kind: str, d: Any, last: bool = True) -> Any:
        if last and self.op.extra is not None and self._batched:
            return tuple(self._convert_one(kind, v) for v in d)
        return self._convert_one(kind, d)

    def _convert_one(self, kind: str, d: Any) -> Any:
        if kind == "x":
            return self._xi.unravel(_flat(d)) if self._xi is not None else d
        if kind == "y":
            return self._yi.unravel(_flat(d)) if self._yi is not None else d
        rows, cols = (self._yi, self._xi) if kind == "jac" else (self._xi, self._xi)
        nrows = self._ny if kind == "jac" else self._nx
        return self._blocks(d, rows, cols, nrows, self._nx)

    def _blocks(self, d: Any, rows: TreeInfo | None, cols: TreeInfo | None, nrows: int, ncols: int) -> Any:
        sparse = hasattr(d, "tocsr")
        if self.output == "matrix":
            return d if sparse else d.reshape(nrows, ncols)
        if rows is None and cols is None:
            return d
        if sparse:
            m = d.tocsr()
        elif hasattr(d, "to_dense") and getattr(d, "layout", None) is not None and "sparse" in str(d.layout):
            m = d.to_dense().reshape(nrows, ncols)
        else:
            m = d.reshape(nrows, ncols)
        # an array output (rows None) is one block of rows; an array x one block of columns
        r_shapes = rows.shapes if rows is not None else (tuple(self.flat.y_shape),)
        c_shapes = cols.shapes if cols is not None else (tuple(self.flat.x_shape),)
        r_off = rows.offsets if rows is not None else (0, nrows)
        c_off = cols.offsets if cols is not None else (0, ncols)

        def block(i: int, j: int) -> Any:
            b = m[r_off[i] : r_off[i + 1], c_off[j] : c_off[j + 1]]
            shape = r_shapes[i] + c_shapes[j]
            if sparse:
                return b if len(shape) == 2 else b.toarray().reshape(shape)
            return b.reshape(shape)

        def inner_tree(i: int) -> Any:
            if cols is None:
                return block(i, 0)
            return cols.unflatten([block(i, j) for j in range(len(c_shapes))])

        if rows is None:
            return inner_tree(0)
        return rows.unflatten([inner_tree(i) for i in range(len(r_shapes))])

    def _write(self, name: str, buffers: tuple, results: tuple) -> tuple:
        """Copy results into the out= trees, after checking every buffer."""
        pairs = []
        for buf_tree, res in zip(buffers, results):
            res_items = res if isinstance(res, tuple) and self._batched and self.op.extra is not None else None
            for b_tree, r_tree in zip(buf_tree, res_items) if res_items is not None else ((buf_tree, res),):
                r_leaves, r_spec = _flatten_like(r_tree)
                b_leaves, b_spec = _flatten_like(b_tree)
                if r_spec != b_spec or len(r_leaves) != len(b_leaves):
                    raise ShapeError(f"{name}: out= has another tree structure than the result")
                for bl, rl in zip(b_leaves, r_leaves):
                    if tuple(getattr(bl, "shape", ())) != tuple(rl.shape):
                        raise ShapeError(
                            f"{name}: an out= buffer has shape {tuple(bl.shape)}, its result leaf {tuple(rl.shape)}"
                        )
                    if getattr(bl, "dtype", None) != rl.dtype:
                        raise ArgumentError(
                            f"{name}: an out= buffer has dtype {getattr(bl, 'dtype', None)}, its result leaf {rl.dtype}"
                        )
                    pairs.append((bl, rl))
        for bl, rl in pairs:
            ops_for(bl).copyto(bl, rl)
        return buffers if len(buffers) > 1 else (buffers[0],)


def _example_leaves(info: TreeInfo) -> list:
    import jax.numpy as jnp

    return [jnp.zeros(shape, spec[1]) for shape, spec in zip(info.shapes, info.leaf_specs)]


def _flat(d: Any) -> Any:
    return d.reshape(-1) if getattr(d, "ndim", 1) != 1 else d


def _flatten_like(tree: Any) -> tuple[list, Any]:
    from ._trees import flattener_for

    return flattener_for(tree).flatten(tree)
