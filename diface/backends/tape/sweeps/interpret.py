"""Running a tape on arbitrary values: the forward replay, the forward-mode (JVP) and reverse-mode
(VJP) sweeps, one tangent at a time, allocating as they go.

On traced values these record (the sweeps of one tape become the nodes of another: the reverse sweep
recorded and differentiated in forward mode gives Hessian-vector products); on arrays they compute
(unprepared calls, which differentiate the values seen while recording).

Products of tangents with partials are strong (0 * inf := 0, see `prims.elementwise.strong_multiply`) where
they may meet an infinity: on arrays, a sweep whose result holds a NaN runs again with strong products
throughout; on traced values, the products of the nodes `Tape.guarded` names are recorded strong (the
recorded tape is replayed at other points, where the infinities may be elsewhere).
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

import numpy as np

from ..data.graph import GUARD_OUTPUT, Tape, Traced
from ..data.sites import recording_rule
from ..prims.elementwise import Ufunc, has_nan, quiet
from ..prims.prim import HOLOMORPHIC, InputsFrom, conjugated, reduce_to, shape_of

#: every node (a sweep taking strong products throughout)
EVERY = InputsFrom(0)

__all__ = ["EVERY", "jvp", "jvp_from", "pull", "push", "replay", "vjp", "vjp_to"]


def replay(tape: Tape, env: list, live: list[int]) -> list:
    """Fill `env` (inputs and literals set) with the values of the live nodes; guards check."""
    nodes = tape.nodes
    for k in live:
        node = nodes[k]
        ins = [env[s] for s in node.inputs]
        if node.output == GUARD_OUTPUT:
            node.prim.forward(*ins, **node.params)
            continue
        r = node.prim(*ins, **node.params)
        env[node.output] = r if isinstance(r, (Traced, np.ndarray)) else np.asarray(r)
    return env


def _traced(tape: Tape, env: list, seed: Any) -> bool:
    if isinstance(seed, dict):
        return any(isinstance(v, Traced) for v in seed.values()) or _traced(tape, env, None)
    inputs = (tape.x, *(i[0] for i in tape.inputs), *(c[1] for c in tape.captures))
    return isinstance(seed, Traced) or any(isinstance(env[s], Traced) for s in inputs)


def jvp_from(tape: Tape, env: list, seeds: dict[int, Any], order: list[int]) -> Any:
    """`jvp` with tangents given for any slots (`seeds`: slot -> tangent), not only x's."""
    return _strong_where_needed(_jvp, tape, env, seeds, order, reverse=False)


def vjp_to(tape: Tape, env: list, cotangent: Any, order: list[int]) -> dict[int, Any]:
    """`vjp` returning the cotangent of every active slot the sweep reached (slot -> cotangent)."""
    return _strong_where_needed(_adjoints, tape, env, cotangent, order, reverse=True)


def jvp(tape: Tape, env: list, tangent: Any, order: list[int]) -> Any:
    """The output tangent for the tangent of x (None if the output does not depend on x)."""
    return _strong_where_needed(_jvp, tape, env, tangent, order, reverse=False)


def vjp(tape: Tape, env: list, cotangent: Any, order: list[int]) -> Any:
    """The cotangent of x for the output cotangent (None if the output does not depend on x)."""
    return _strong_where_needed(_vjp, tape, env, cotangent, order, reverse=True)


def _strong_where_needed(sweep: Any, tape: Tape, env: list, seed: Any, order: list[int], reverse: bool) -> Any:
    """`sweep` on traced values with the products `Tape.guarded` names strong; on arrays plain, and again
    strong throughout if its result holds a NaN."""
    with quiet():
        if _traced(tape, env, seed):
            return sweep(tape, env, seed, order, tape.guarded(order, reverse=reverse))
        r = sweep(tape, env, seed, order, ())
        values = r.values() if isinstance(r, dict) else () if r is None else (r,)  # every slot's (vjp_to)
        if any(has_nan(np.asarray(v)) for v in values):
            r = sweep(tape, env, seed, order, EVERY)
        return r


def _jvp(tape: Tape, env: list, tangent: Any, order: list[int], strong: Container[int]) -> Any:
    """`jvp`, the products of the nodes in `strong` strong."""
    tangents: dict[int, Any] = dict(tangent) if isinstance(tangent, dict) else {tape.x: tangent}
    watch = isinstance(env[tape.x], Traced)  # recording the rules (second order): name them in errors
    try:
        for k in order:
            push(tape, env, k, tangents, k in strong, watch)
    finally:
        if watch:
            recording_rule(None)
    return tangents.get(tape.output)


def push(tape: Tape, env: list, k: int, tangents: dict[int, Any], strong: bool, watch: bool = False) -> None:
    """Set the tangent of node k's output in `tangents` (slot -> tangent) from its inputs' there (nothing
    if none has one); `strong`: strong products (a ufunc's)."""
    node = tape.nodes[k]
    prim = node.prim
    nondiff = prim.nondiff
    ts = tuple(None if i in nondiff else tangents.get(s) for i, s in enumerate(node.inputs))
    if all(t is None for t in ts):
        return
    ins = tuple(env[s] for s in node.inputs)
    if watch:
        recording_rule(prim)
    if strong and isinstance(prim, Ufunc):
        t = prim.jvp(ins, env[node.output], ts, 0, guard=True)
    else:
        t = prim.jvp(ins, env[node.output], ts, 0, **node.params)
    shape = tape.slots[node.output].shape
    if shape_of(t) != shape:
        t = np.broadcast_to(t, shape)
    tangents[node.output] = t


def _vjp(tape: Tape, env: list, cotangent: Any, order: list[int], strong: Container[int]) -> Any:
    """`vjp`, the products of the nodes in `strong` strong."""
    return _adjoints(tape, env, cotangent, order, strong).get(tape.x)


def _adjoints(tape: Tape, env: list, cotangent: Any, order: list[int], strong: Container[int]) -> dict[int, Any]:
    adjoints: dict[int, Any] = {tape.output: cotangent}
    watch = isinstance(env[tape.x], Traced)  # recording the rules (second order): name them in errors
    try:
        for k in order:
            pull(tape, env, k, adjoints, k in strong, watch)
    finally:
        if watch:
            recording_rule(None)
    return adjoints


def pull(tape: Tape, env: list, k: int, adjoints: dict[int, Any], strong: bool, watch: bool = False) -> None:
    """Add node k's contributions to the cotangents of its inputs in `adjoints` (slot -> cotangent), from
    its output's cotangent there (nothing if it has none); `strong`: strong products (a ufunc's)."""
    node = tape.nodes[k]
    g = adjoints.get(node.output)
    if g is None:
        return
    slots = tape.slots
    prim = node.prim
    nondiff = prim.nondiff
    ins = tuple(env[s] for s in node.inputs)
    y = env[node.output]
    if watch:
        recording_rule(prim)
    if prim.complex == HOLOMORPHIC and slots[node.output].dtype.kind == "c":
        # the adjoint of a complex derivative: the rule at the conjugated values (`Prim.complex`)
        ins, y = tuple(conjugated(v) for v in ins), conjugated(y)
    guard = strong and isinstance(prim, Ufunc)
    for i, s in enumerate(node.inputs):
        if i in nondiff or not slots[s].active:
            continue
        previous = adjoints.get(s)
        if previous is not None:
            both = prim.vjp_accumulate(i, ins, y, g, previous, **node.params)
            if both is not None:
                adjoints[s] = both
                continue
        c = prim.vjp(i, ins, y, g, 0, guard=True) if guard else prim.vjp(i, ins, y, g, 0, **node.params)
        if prim.elementwise:
            c = reduce_to(c, slots[s].shape)
        adjoints[s] = c if previous is None else np.add(previous, c)
