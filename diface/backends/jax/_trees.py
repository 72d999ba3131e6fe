"""JAX's pytrees as diface's trees: trees holding JAX arrays, or nodes registered with JAX (equinox
modules, flax structs), flatten with `jax.tree_util` and name their leaves as JAX does."""

from __future__ import annotations

from typing import Any

from ..._call.trees.registry import Flattener, foreign_nodes, register_tree_library

__all__ = ["JaxTrees"]


class JaxTrees:
    """The `TreeLibrary` of JAX (made once jax is imported)."""

    def __init__(self) -> None:
        import jax

        self.tree_util = jax.tree_util
        self.array = jax.Array
        self.flattener = Flattener("jax", jax.tree_util.tree_flatten, jax.tree_util.tree_unflatten)

    def is_node(self, a: Any) -> bool:
        tree_util = self.tree_util
        return not tree_util.treedef_is_leaf(tree_util.tree_structure(a))

    def owns(self, tree: Any) -> bool:
        if any(isinstance(leaf, self.array) for leaf in self.tree_util.tree_leaves(tree)):
            return True
        return foreign_nodes(tree)

    def paths(self, tree: Any, label: str) -> list[tuple[str, Any]]:
        pairs, _ = self.tree_util.tree_flatten_with_path(tree)
        return [(label + self.tree_util.keystr(p), v) for p, v in pairs]


register_tree_library("jax", JaxTrees)
