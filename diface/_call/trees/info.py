"""The description of one tree (`TreeInfo`): its structure, leaf paths, shapes and dtypes as a preparation
remembers them, how to ravel a tree of that shape into one 1-D array of its leaves' library and to cut a
flat array back into such a tree; and `ravel`, the public form of it. Flattening is `diface._call.trees.registry`'s.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._arrays import NUMPY, ArrayOps, ops_for, reshaped
from ..._errors import ArgumentError, NotSupportedError, ShapeError
from ..check import describe, specs_test
from ..complex import from_pairs
from .registry import SCALARS, flattener_for, is_tree, tree_paths

__all__ = ["TreeInfo", "ops_floating", "ravel"]


class TreeInfo:
    """A tree's structure and leaves as a preparation remembers them: how to ravel a tree of this shape
    into one 1-D array of the leaves' library, and to cut a flat array back into such a tree."""

    __slots__ = (
        "_ravels",
        "_splits",
        "cast",
        "complex_leaves",
        "dtype",
        "elem_offsets",
        "flattener",
        "label",
        "leaf_specs",
        "leaves_test",
        "mode",
        "n",
        "offsets",
        "ops",
        "scalar_leaves",
        "shapes",
        "single",
        "sizes",
        "spec",
    )

    def __init__(
        self, tree: Any, label: str, where: str, one_library: bool = True, complex_mode: str | None = None
    ) -> None:
        """`complex_mode`: how complex leaves are held in the flat array (see `diface._call.complex`): None
        refuses them, "pairs" holds (real, imaginary) pairs, "real" the real parts alone (the imaginary
        parts travel beside it: `imag_of`)."""
        self.label = label
        self.mode = complex_mode
        #: one complex array, not a tree: its flat form keeps its shape (pairs: a trailing axis of 2)
        self.single = False
        self.flattener = flattener_for(tree)
        raw, self.spec = self.flattener.flatten(tree)
        leaves = _complex_numbers_as_arrays(raw) if complex_mode is not None else raw
        ops: ArrayOps | None = None
        arrays = []
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, (bool, str, bytes)) or leaf is None:
                raise ArgumentError(
                    f"{where}: {self._path(tree, i)} is a {type(leaf).__name__}; tree leaves must be arrays or numbers"
                )
            if isinstance(leaf, SCALARS):
                continue
            leaf_ops = ops_for(leaf)
            if leaf_ops is None:
                raise ArgumentError(
                    f"{where}: {self._path(tree, i)} is a {type(leaf).__name__}; tree leaves must be arrays or numbers"
                )
            if ops is not None and leaf_ops is not ops and one_library:
                raise ArgumentError(
                    f"{where}: {self._path(tree, i)} is a {leaf_ops.name} array, but other leaves of {label} are "
                    f"{ops.name} arrays; a tree's leaves must come from one array library"
                )
            ops = leaf_ops
            if complex_mode is not None and leaf_ops.is_complex(leaf.dtype):
                arrays.append(leaf)
                continue
            if not ops_floating(leaf_ops, leaf.dtype):
                raise ArgumentError(
                    f"{where}: {self._path(tree, i)} has dtype {leaf.dtype}; differentiation needs floating-point "
                    "leaves (e.g. pass x.astype(float))"
                )
            arrays.append(leaf)
        self.ops = ops if ops is not None else NUMPY
        self.scalar_leaves = any(isinstance(v, SCALARS) for v in leaves)
        self.leaf_specs = tuple(_spec(v) for v in raw)
        #: `leaves_test(leaves)`: a tree's leaves have the specs of this one's, one for one
        self.leaves_test = specs_test(tuple(describe(v) for v in raw))
        self.shapes = tuple(() if isinstance(v, SCALARS) else tuple(v.shape) for v in leaves)
        self.complex_leaves = tuple(not isinstance(v, SCALARS) and self.ops.is_complex(v.dtype) for v in leaves)
        elem_sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        pairs = self.mode == "pairs"
        #: the leaves' lengths in the flat array (a complex leaf's pairs take two places an element)
        self.sizes = tuple(n * (2 if c and pairs else 1) for n, c in zip(elem_sizes, self.complex_leaves))
        self.offsets = _offsets(self.sizes)
        #: the leaves' offsets counted in elements (rows and columns of Jacobians, complex ones once)
        self.elem_offsets = _offsets(elem_sizes)
        self.n = self.offsets[-1]
        self.single = complex_mode is not None and not is_tree(tree) and self.complex_leaves == (True,)
        dtypes = [self.ops.real_dtype(v.dtype) if self.ops.is_complex(v.dtype) else v.dtype for v in arrays]
        if not dtypes:
            dtypes = [np.dtype(np.float64)]
        dtype = dtypes[0]
        for d in dtypes[1:]:
            dtype = self.ops.result_type(dtype, d)
        self.dtype = dtype
        self.cast = any(d != dtype for d in dtypes) or self.scalar_leaves
        # ravel and split per array library, compiled where the library compiles (eager slicing of JAX
        # arrays costs ~10 us a leaf)
        self._ravels: dict[ArrayOps, Callable] = {}
        self._splits: dict[ArrayOps, Callable] = {}

    # -- checking ---------------------------------------------------------------------------------------
    def _path(self, tree: Any, i: int) -> str:
        paths = tree_paths(tree, self.label)
        return paths[i][0] if i < len(paths) else f"{self.label} (leaf {i})"

    def leaves_of(self, tree: Any, where: str, what: str = "") -> list:
        """`tree`'s leaves, checked against this structure and its leaf shapes (dtypes too where `what` is
        empty: a strict check); `ShapeError` naming the path otherwise."""
        leaves, spec = self.flattener.flatten(tree)
        if spec != self.spec:
            raise ShapeError(f"{where}: {self.describe_structure_difference(tree, what or self.label)}")
        for i, leaf in enumerate(leaves):
            if _shape(leaf) != self.shapes[i]:
                path = tree_paths(tree, what or self.label)[i][0]
                raise ShapeError(
                    f"{where}: {path} has shape {_shape(leaf)}, it must be shaped like {self.label}: {self.shapes[i]}"
                )
            if (
                isinstance(leaf, (str, bytes, bool))
                or leaf is None
                or not (isinstance(leaf, SCALARS) or hasattr(leaf, "dtype") or (self.mode and type(leaf) is complex))
            ):
                path = tree_paths(tree, what or self.label)[i][0]
                raise ArgumentError(
                    f"{where}: {path} is a {type(leaf).__name__}; tree leaves must be arrays or numbers"
                )
        return leaves

    def describe_structure_difference(self, tree: Any, label: str) -> str:
        then = [p for p, _ in tree_paths(self.unflatten(list(range(len(self.shapes)))), "")]
        try:
            now = [p for p, _ in tree_paths(tree, "")]
        except Exception:  # pragma: no cover - a node the walker cannot read
            now = []
        missing = [p for p in then if p not in now]
        extra = [p for p in now if p not in then]
        parts = []
        if missing:
            parts.append("missing " + ", ".join(label + p for p in missing[:4]))
        if extra:
            parts.append("unexpected " + ", ".join(label + p for p in extra[:4]))
        detail = "; ".join(parts) if parts else "the containers' types or order differ"
        return f"{label} has another tree structure than {self.label} ({detail})"

    def mismatches(self, tree: Any) -> list[str]:
        """Lines `path: shape (3,) at preparation, (4,) now` for each leaf that differs (strict check)."""
        leaves, spec = self.flattener.flatten(tree)
        if spec != self.spec:
            return [self.describe_structure_difference(tree, self.label)]
        lines = []
        paths = None
        for i, leaf in enumerate(leaves):
            then, now = self.leaf_specs[i], _spec(leaf)
            if then != now:
                paths = paths or tree_paths(tree, self.label)
                parts = []
                for what, a, b in zip(("type", "dtype", "shape"), then, now):
                    if a != b:
                        a = a.__qualname__ if isinstance(a, type) else a
                        b = b.__qualname__ if isinstance(b, type) else b
                        parts.append(f"{what} {a} at preparation, {b} now")
                lines.append(f"{paths[i][0]}: " + "; ".join(parts))
        return lines

    def matches(self, leaves: list, spec: Any) -> bool:
        """A flattened tree (`leaves`, `spec`) has this tree's structure and leaf specs."""
        return spec == self.spec and self.leaves_test(leaves)

    # -- raveling ---------------------------------------------------------------------------------------
    def ravel_leaves(self, leaves: list, like: Any = None) -> Any:
        """The leaves as one 1-D array of the leaves' own library (NumPy leaves give a NumPy array
        whatever library the tree was described with), of the tree's dtype."""
        if self.mode is not None:
            leaves = _complex_numbers_as_arrays(leaves)
        ops = next((o for o in map(_array_ops_of, leaves) if o is not None), self.ops)
        if not leaves:
            return ops.zeros((0,), self._dtype_in(ops, self.dtype), like=like)
        if self.scalar_leaves:
            leaves = [
                ops.asarray(np.asarray(v, dtype=np.float64), like=like) if isinstance(v, SCALARS) else v for v in leaves
            ]
        ravel = self._ravels.get(ops)
        if ravel is None:
            ravel = self._ravels[ops] = self._make_ravel(ops)
        return ravel(leaves)

    def _make_ravel(self, ops: ArrayOps) -> Callable:
        dtype = self._dtype_in(ops, self.dtype)
        cast = self.cast

        complex_leaves, pairs = self.complex_leaves, self.mode == "pairs"

        def real_form(v: Any, c: bool) -> Any:
            return v if not c else ops.to_pairs(v) if pairs else ops.real(v)

        if self.single:  # one complex array: its pairs (or real part) as they are, no copy where a view does
            return lambda leaves: real_form(leaves[0], True)

        def ravel(leaves: list) -> Any:
            parts = [ops.reshape(real_form(v, c), (-1,)) for v, c in zip(leaves, complex_leaves)]
            if cast:
                parts = [p if p.dtype == dtype else ops.astype(p, dtype) for p in parts]
            return parts[0] if len(parts) == 1 else ops.concat(parts)

        return ops.compile(ravel) if not self.scalar_leaves and len(self.shapes) > 1 else ravel

    def _dtype_in(self, ops: ArrayOps, dtype: Any) -> Any:
        """`dtype` (of the tree's library) as `ops` spells it (NumPy's dtype of a torch dtype, say)."""
        if ops is self.ops or dtype is None or ops is not NUMPY:
            return dtype
        return self.ops.to_numpy(self.ops.zeros((), dtype)).dtype

    def imag_of(self, leaves: list, like: Any = None) -> Any:
        """The imaginary parts of the complex leaves, raveled into one real 1-D array (the "real" mode's
        companion of `ravel_leaves`)."""
        leaves = _complex_numbers_as_arrays(leaves)
        ops = next((o for o in map(_array_ops_of, leaves) if o is not None), self.ops)
        if self.single:
            return ops.imag(leaves[0])
        parts = [ops.reshape(ops.imag(v), (-1,)) for v, c in zip(leaves, self.complex_leaves) if c]
        return parts[0] if len(parts) == 1 else ops.concat(parts)

    def unravel_traced(self, flat: Any, imag: Any = None, views: bool = False) -> Any:
        """A tree of views of `flat` (any engine's traced array): what f sees inside a flat problem. Complex
        leaves are made of their pairs, or in "real" mode of `flat`'s real parts and `imag`; `views`: they
        must share `flat`'s memory (the output buffers of an in-place f)."""
        if self.single:  # the flat form keeps the array's shape: no reshape (a node in a traced graph)
            if self.mode == "pairs":
                pairs = flat if tuple(flat.shape[:-1]) == self.shapes[0] else reshaped(flat, (*self.shapes[0], 2))
                return _pairs_view(pairs) if views else from_pairs(pairs)
            return (flat if tuple(flat.shape) == self.shapes[0] else reshaped(flat, self.shapes[0])) + 1j * imag
        if getattr(flat, "ndim", 1) == 0:  # the real part of a complex scalar x (derivative)
            flat = reshaped(flat, (1,))
        ops = ops_for(flat)
        parts = ops.split(flat, self.sizes) if ops is not None else _slices(flat, self.offsets)
        if not any(self.complex_leaves):
            return self.flattener.unflatten(self.spec, [reshaped(v, s) for v, s in zip(parts, self.shapes)])
        leaves = []
        imag_parts = iter(self._imag_parts(imag)) if self.mode == "real" else None
        for v, s, c in zip(parts, self.shapes, self.complex_leaves):
            if not c:
                leaves.append(reshaped(v, s))
            elif views:
                leaves.append(_pairs_view(reshaped(v, (*s, 2))))
            elif imag_parts is None:
                leaves.append(from_pairs(reshaped(v, (*s, 2))))
            else:
                leaves.append(reshaped(v, s) + 1j * reshaped(next(imag_parts), s))
        return self.flattener.unflatten(self.spec, leaves)

    def _imag_parts(self, imag: Any) -> list:
        sizes = tuple(n for n, c in zip(self.sizes, self.complex_leaves) if c)
        ops = ops_for(imag)
        return ops.split(imag, sizes) if ops is not None else _slices(imag, _offsets(sizes))

    def split(self, flat: Any) -> list:
        """`flat` (a result, 1-D) cut into leaves of the leaves' shapes (and dtypes)."""
        ops = ops_for(flat) or NUMPY
        if self.single and self.mode == "pairs":
            shape = (*self.shapes[0], 2)
            return [ops.from_pairs(flat if tuple(flat.shape) == shape else reshaped(flat, shape))]
        split = self._splits.get(ops)
        if split is None:
            split = self._splits[ops] = self._make_split(ops)
        return split(flat)

    def _make_split(self, ops: ArrayOps) -> Callable:
        offsets, shapes = self.offsets, self.shapes
        dtypes = [self._dtype_in(ops, spec[1]) for spec in self.leaf_specs] if self.cast else None
        # "real" mode has no x-shaped results (its operators' results are Jacobians and y-shaped)
        pairs = self.complex_leaves if self.mode == "pairs" else (False,) * len(shapes)

        def split(flat: Any) -> list:
            leaves = [
                ops.from_pairs(reshaped(flat[a:b], (*s, 2))) if c else reshaped(flat[a:b], s)
                for a, b, s, c in zip(offsets, offsets[1:], shapes, pairs)
            ]
            if dtypes is not None:
                leaves = [v if d is None or v.dtype == d else ops.astype(v, d) for v, d in zip(leaves, dtypes)]
            return leaves

        return ops.compile(split) if len(shapes) > 1 else split

    def unflatten(self, leaves: list) -> Any:
        return self.flattener.unflatten(self.spec, list(leaves))

    def unravel(self, flat: Any) -> Any:
        return self.unflatten(self.split(flat))


def _complex_numbers_as_arrays(leaves: list) -> list:
    """Complex numbers (Python's, NumPy's scalars) among `leaves` as 0-d NumPy arrays."""
    return [np.asarray(v) if isinstance(v, (complex, np.complexfloating)) else v for v in leaves]


def _offsets(sizes: Any) -> tuple[int, ...]:
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + n)
    return tuple(offsets)


def _pairs_view(v: Any) -> Any:
    ops = ops_for(v)
    if ops is None:
        raise NotSupportedError(
            f"an in-place f cannot write complex values into a {type(v).__name__}: write f to return its output"
        )
    return ops.pairs_view(v)


def _slices(flat: Any, offsets: tuple) -> list:
    return [flat[a:b] for a, b in itertools.pairwise(offsets)]


def _array_ops_of(leaf: Any) -> ArrayOps | None:
    return None if isinstance(leaf, SCALARS) else ops_for(leaf)


def ops_floating(ops: ArrayOps, dtype: Any) -> bool:
    try:
        return bool(ops.is_floating(dtype))
    except Exception:  # pragma: no cover
        return False


def _shape(a: Any) -> tuple:
    s = getattr(a, "shape", None)
    return () if s is None else tuple(s)


def _spec(a: Any) -> tuple:
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return (type(a), None, ())
    if isinstance(a, np.generic):
        return (type(a), a.dtype, ())
    return (type(a), getattr(a, "dtype", None), getattr(a, "shape", None))


def ravel(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """`(flat, unravel)`: the tree's leaves raveled into one 1-D array of their array library, and the
    function that cuts a flat array of that length back into a tree of the same structure, shapes and
    dtypes (as `jax.flatten_util.ravel_pytree`). An array is its own one-leaf tree.

    Example:
        >>> import numpy as np, diface as di
        >>> flat, unravel = di.ravel({"w": np.ones((2, 2)), "b": np.zeros(2)})
        >>> flat
        array([0., 0., 1., 1., 1., 1.])
        >>> unravel(np.arange(6.0))["w"]
        array([[2., 3.],
               [4., 5.]])
    """
    info = TreeInfo(tree, "tree", "ravel")
    leaves, _ = info.flattener.flatten(tree)
    flat = info.ravel_leaves(leaves, like=next((v for v in leaves if hasattr(v, "shape")), None))
    return flat, info.unravel
