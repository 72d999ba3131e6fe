"""autograd's modules and the internals this backend drives, bound on first use (importing diface
imports no framework), and the node types of this backend's traces, registered with autograd's
tracer as they are bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

__all__ = ["AG", "load", "node_type"]


class AG:
    """autograd's modules and internals; filled by `load`."""

    loaded: ClassVar[bool] = False
    anp: Any
    isbox: Callable
    getval: Callable
    new_box: Callable
    trace_stack: Any
    box_types: set
    toposort: Callable
    add_outgrads: Callable
    sparse_add: Callable
    vspace: Callable
    primitive_vjps: dict
    primitive_jvps: dict
    SparseObject: type[Any]
    ArrayVSpace: type[Any]
    getitem: Callable
    untake: Callable
    accumulations: frozenset


# (node class, the autograd node type whose untraced primitives it shares)
_NODE_TYPES: list[tuple[type, str]] = []


def node_type(like: str) -> Callable[[type], type]:
    """Class decorator: a node type of this backend's traces. autograd does not record some
    primitives (shape queries, comparisons, ...), registered per node type: the class shares the
    sets of autograd's `like` ("VJPNode" or "JVPNode"), including what later imports
    (autograd.scipy, ...) add to them."""

    def register(cls: type) -> type:
        _NODE_TYPES.append((cls, like))
        if AG.loaded:
            _register(cls, like)
        return cls

    return register


def _register(cls: type, like: str) -> None:
    from autograd import core, tracer

    tracer.notrace_primitives[cls] = tracer.notrace_primitives[getattr(core, like)]


def load() -> None:
    """Import autograd and bind the internals used here (once)."""
    if AG.loaded:
        return
    import autograd.numpy as anp
    from autograd import core, tracer, util
    from autograd.numpy.numpy_boxes import ArrayBox
    from autograd.numpy.numpy_vjps import untake
    from autograd.numpy.numpy_vspaces import ArrayVSpace

    AG.anp = anp
    AG.isbox, AG.getval, AG.new_box = tracer.isbox, tracer.getval, tracer.new_box
    AG.trace_stack, AG.box_types, AG.toposort = tracer.trace_stack, tracer.box_types, util.toposort
    AG.add_outgrads, AG.sparse_add, AG.vspace = core.add_outgrads, core.sparse_add, core.vspace
    AG.primitive_vjps, AG.primitive_jvps = core.primitive_vjps, core.primitive_jvps
    AG.SparseObject, AG.ArrayVSpace = core.SparseObject, ArrayVSpace
    AG.getitem, AG.untake = ArrayBox.__getitem__, untake
    AG.accumulations = frozenset({core.VSpace.add, core.VSpace.mut_add, core.sparse_add})
    for cls, like in _NODE_TYPES:
        _register(cls, like)
    AG.loaded = True
