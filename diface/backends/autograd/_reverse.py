"""Reverse mode: f traced once, then the backward pass for any number of cotangents.

Each node keeps its primitive's VJP closure, like `make_vjp`; the backward pass visits the nodes in
autograd's topological order (depth first: cotangents are freed as early as in `autograd.grad`), found
once per tape. Every cotangent a rule returns is fitted to the shape of the value it belongs to
(see `_shapes`). The backward pass is written with autograd operations, so an outer trace can
differentiate it (second order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._problem import dtype_of, shape_of
from ._internals import AG, node_type
from ._messages import no_vjp_rule, rule_failed
from ._rule_fixes import rule_arguments
from ._shapes import fit_cotangent, fresh, shape_or_none
from ._trace import trace

__all__ = ["Tape"]


@node_type("VJPNode")
class VJPNode:
    """A reverse-mode node: its parents, the primitive's VJP closure, and the shape of its value."""

    __slots__ = ("argnums", "fun", "parents", "shape", "vjp")

    def __init__(self, value: Any, fun: Any, args: tuple, kwargs: dict, argnums: tuple, parents: tuple) -> None:
        maker = AG.primitive_vjps.get(fun)
        if maker is None:
            raise no_vjp_rule(fun)
        self.parents, self.fun, self.argnums = parents, fun, argnums
        args, kwargs = rule_arguments(fun, args, kwargs)
        try:
            self.vjp = maker(argnums, value, args, kwargs)
        except TypeError as e:
            raise rule_failed(fun, "reverse-mode (VJP)", e) from e
        except NotImplementedError as e:  # a rule for some arguments only (np.clip: x, not its bounds)
            raise no_vjp_rule(fun, argnums, e) from e
        self.shape = shape_or_none(value)

    @classmethod
    def root(cls, x: Any) -> VJPNode:
        node = cls.__new__(cls)
        node.parents, node.vjp, node.shape = (), None, shape_or_none(x)
        node.fun, node.argnums = None, ()
        return node


class Tape:
    """`fun` recorded in reverse mode at `x`: its `value`, and the backward pass for any cotangent."""

    __slots__ = ("_order", "end", "root", "value", "x")

    def __init__(self, fun: Callable, x: Any) -> None:
        self.x = x
        self.root = VJPNode.root(x)
        self.value, self.end = trace(self.root, fun, x)
        self._order: list | None = None

    def pull(self, ct: Any) -> Any:
        """`ct @ J`, shaped like x (possibly `ct` itself, or an array a rule keeps)."""
        root, end = self.root, self.end
        if end is None:
            return np.zeros(shape_of(self.x), dtype_of(AG.getval(self.x)))
        if end is root:
            g = ct
        else:
            order = self._order
            if order is None:
                order = self._order = [node for node in AG.toposort(end) if node is not root]
            add, box_types = AG.add_outgrads, AG.box_types
            grads = {end: (ct, False)}
            pop = grads.pop
            for node in order:
                try:
                    pgs = node.vjp(pop(node)[0])
                except NotImplementedError as e:  # a rule that refuses as it runs (np.diagonal off the last axes)
                    raise no_vjp_rule(node.fun, node.argnums, e) from e
                for parent, pg in zip(node.parents, pgs):
                    shape = parent.shape
                    if shape is not None:
                        raw = pg
                        while type(raw) in box_types:
                            raw = raw._value
                        raw_shape = getattr(raw, "shape", None)
                        if raw_shape is not None and raw_shape != shape:
                            pg = fit_cotangent(pg, shape)
                    grads[parent] = add(grads.get(parent), pg)
            g = grads[root][0]
        if root.shape is not None and shape_or_none(g) != root.shape:
            g = fit_cotangent(g, root.shape)
        return g

    def pull_rows(self, cotangents: Any) -> Any:
        """`c @ J` for each row `c` of `cotangents` (shape `(B, *y_shape)`), stacked: `(B, *x_shape)`, an
        array of its own."""
        if len(cotangents) == 1:  # no copy where the one row is an array of its own already
            row = fresh(self.pull(cotangents[0]), cotangents)
            return row[None] if type(row) is np.ndarray else AG.anp.expand_dims(row, 0)
        rows = [self.pull(cotangents[i]) for i in range(len(cotangents))]
        if not rows:
            return np.zeros((0, *shape_of(self.x)), dtype_of(AG.getval(self.x)))
        return (AG.anp.stack if any(AG.isbox(r) for r in rows) else np.stack)(rows)
