"""Trees of arrays: flatten, unflatten and ravel dicts, lists, tuples, namedtuples (and JAX's registered
pytrees) whose leaves are arrays or numbers.

The conventions are JAX's (and optree's): dict keys in sorted order (an `OrderedDict` in its own order),
`None` an empty subtree rather than a leaf. Flattening uses `optree` (C++) when it is installed, JAX's
`jax.tree_util` for trees holding JAX arrays or nodes registered with JAX (equinox modules, flax
structs), and a small pure-Python flattener otherwise. Leaf paths read like Python:
`x['layer1']['w']`, `x[0]`, `x.field`.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

__all__ = ["SCALARS", "Flattener", "TreeLibrary", "flattener_for", "is_tree", "register_tree_library", "tree_paths"]

_NUMBERS = (bool, int, float, np.generic)
#: leaves that are numbers rather than arrays: raveled as float64
SCALARS = (int, float, np.generic)

_optree: Any
try:  # the compiled flattener, where installed (the `trees` extra)
    import optree as _optree
except ImportError:  # pragma: no cover - exercised where optree is absent
    _optree = None


# -- what is a tree ----------------------------------------------------------------------------------
def _numeric_list(a: list) -> bool:
    """A list of plain numbers, or of such lists nested as an array's rows are (one array); a ragged one
    (`[[1.0], 2.0]`, which NumPy cannot make an array of) is a tree."""
    return _list_shape(a) is not None


def _list_shape(a: list) -> tuple[int, ...] | None:
    if all(isinstance(v, _NUMBERS) for v in a):
        return (len(a),)
    if not all(isinstance(v, list) for v in a):
        return None
    shapes = {_list_shape(v) for v in a}
    if len(shapes) != 1 or None in shapes:
        return None
    return (len(a), *shapes.pop())  # type: ignore[misc]


def is_tree(a: Any) -> bool:
    """Whether `a` is a container of arrays rather than one array: a dict, tuple, list (a nested list of
    plain numbers stays one array, as before), or a node registered with an array library's own trees
    (JAX's pytrees)."""
    if isinstance(a, (dict, tuple)):
        return True
    if isinstance(a, list):
        return not _numeric_list(a)
    if a is None or hasattr(a, "shape") or isinstance(a, (*_NUMBERS, str, bytes)):
        return False
    return any(library.is_node(a) for library in _libraries())


# -- the tree libraries of array frameworks -----------------------------------------------------------
class TreeLibrary(Protocol):
    """An array framework's own trees (JAX's pytrees), registered by its engine package."""

    #: flattening and unflattening with the framework's registry of nodes
    flattener: Flattener

    def is_node(self, a: Any) -> bool:
        """`a` is a container node registered with the framework (an equinox module, a flax struct)."""
        ...

    def owns(self, tree: Any) -> bool:
        """The tree holds the framework's arrays or nodes registered with it: it flattens with it."""
        ...

    def paths(self, tree: Any, label: str) -> list[tuple[str, Any]]:
        """(path, leaf) pairs in flattening order, paths as the framework writes them after `label`."""
        ...


_TREE_LIBRARIES: dict[str, Callable[[], TreeLibrary]] = {}
_TREE_INSTANCES: dict[str, TreeLibrary] = {}


def register_tree_library(framework: str, factory: Callable[[], TreeLibrary]) -> None:
    """Make the trees of `framework` known: `factory` is called (once) only after `framework` is
    imported, when a tree first needs it."""
    _TREE_LIBRARIES[framework] = factory


def _libraries() -> list[TreeLibrary]:
    found = []
    for framework, factory in _TREE_LIBRARIES.items():
        if framework in sys.modules:
            library = _TREE_INSTANCES.get(framework)
            if library is None:
                library = _TREE_INSTANCES[framework] = factory()
            found.append(library)
    return found


def _owner(tree: Any) -> TreeLibrary | None:
    return next((library for library in _libraries() if library.owns(tree)), None)


# -- paths ---------------------------------------------------------------------------------------------
def _children(node: Any) -> list[tuple[str, Any]] | None:
    """(path suffix, child) pairs of a standard container in flattening order, None for a leaf."""
    if isinstance(node, dict):
        keys = list(node) if isinstance(node, OrderedDict) else _sorted(node)
        return [(f"[{k!r}]", node[k]) for k in keys]
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        return [(f".{name}", getattr(node, name)) for name in node._fields]
    if isinstance(node, (list, tuple)):
        return [(f"[{i}]", v) for i, v in enumerate(node)]
    return None


def _sorted(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def tree_paths(tree: Any, label: str = "x") -> list[tuple[str, Any]]:
    """(path, leaf) pairs in flattening order, e.g. `("x['w']", array)`; `None` contributes nothing."""
    owner = _owner(tree)
    if owner is not None:
        return owner.paths(tree, label)
    out: list[tuple[str, Any]] = []

    def walk(node: Any, path: str) -> None:
        if node is None:
            return
        kids = _children(node)
        if kids is None:
            out.append((path, node))
        else:
            for suffix, child in kids:
                walk(child, path + suffix)

    walk(tree, label)
    return out


# -- flatteners ----------------------------------------------------------------------------------------
def _own_flatten(tree: Any) -> tuple[list, Any]:
    leaves: list = []

    def walk(node: Any) -> Any:
        if node is None:
            return None
        kids = _children(node)
        if kids is None:
            leaves.append(node)
            return "*"
        if isinstance(node, dict):
            keys = tuple(list(node) if isinstance(node, OrderedDict) else _sorted(node))
            return (type(node), keys, tuple(walk(node[k]) for k in keys))
        return (type(node), len(node), tuple(walk(v) for _, v in kids))

    return leaves, ("own", walk(tree))


def _own_unflatten(spec: Any, leaves: list) -> Any:
    it = iter(leaves)

    def build(s: Any) -> Any:
        if s is None:
            return None
        if s == "*":
            return next(it)
        kind, keys, kids = s
        if issubclass(kind, dict):
            values = [build(k) for k in kids]
            d = dict(zip(keys, values))
            if kind is dict:
                return d
            try:
                return kind(d)
            except TypeError:  # a defaultdict: its factory first
                return kind(None, d)
        values = [build(k) for k in kids]
        if hasattr(kind, "_fields"):
            return kind(*values)
        return kind(values)

    return build(spec[1])


def foreign_nodes(tree: Any) -> bool:
    """Whether the tree holds nodes that are not standard containers (what a framework's registry knows)."""
    leaves, _ = _own_flatten(tree)
    return any(not (hasattr(v, "shape") or isinstance(v, (*_NUMBERS, str, bytes))) for v in leaves)


class Flattener:
    """One way to flatten: (flatten, unflatten) with structures that compare with `==`."""

    __slots__ = ("flatten", "name", "unflatten")

    def __init__(self, name: str, flatten: Callable, unflatten: Callable) -> None:
        self.name, self.flatten, self.unflatten = name, flatten, unflatten


OWN = Flattener("own", _own_flatten, _own_unflatten)
OPTREE = (
    Flattener("optree", _optree.tree_flatten, lambda spec, leaves: _optree.tree_unflatten(spec, leaves))
    if _optree is not None
    else None
)


def flattener_for(tree: Any) -> Flattener:
    owner = _owner(tree)
    if owner is not None:
        return owner.flattener
    return OPTREE if OPTREE is not None else OWN
