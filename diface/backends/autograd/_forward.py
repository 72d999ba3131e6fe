"""Forward mode: f recorded once, then any batch of tangents pushed through autograd's JVP rules.

`Recording` traces f with nodes that keep each primitive call (function, arguments, value); tangents
are then pushed through the JVP rules without recomputing the primal, a whole batch at once where the
primitive has a batched rule (`_batching`), else one tangent at a time. Before anything is pushed it
checks that every primitive on the way from x to f(x) has a JVP rule, raising `NoJVPRule` otherwise;
with `partials`, an elementwise primitive without one (erf, gammaln) takes its partial derivatives
from its VJP rule instead. `jvp` is the one-tangent alternative: a single eager trace whose nodes
compute their tangent as the primitive runs (as `make_jvp`), cheaper where one tangent is all.

Complex intermediates (issue 23). A batch goes through an elementwise primitive as its partial
derivative times the tangents, the partial evaluated once as the JVP rule at a tangent of ones. That is
exact only where the rule is complex-linear in the tangent: for a real argument (real tangents), or a
holomorphic primitive. `conj`, `abs` and the like are only real-linear, `J t = J(Re t) + J(i Im t)`:
taking `conj`'s partial as `conj(1) = 1` pushed `t` where `conj(t)` belongs, and forward gradients and
forward-over-reverse Hessians of `Re(z * conj(z))`, `z = x0 + 1j * x1`, came out with the wrong sign on
the imaginary part (`[[2, 0], [0, -2]]` for `2 I`). autograd's own rules are right there (`make_jvp`
gives the answer); the shortcut was this module's. A complex argument now takes two partials, the rule
at 1 and at 1j, combined as `Re(t) * J(1) + Im(t) * J(1j)`; partials from a VJP rule (no JVP rule),
whose complex convention is autograd's, are used for real arguments and values only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._problem import dtype_of, size_of
from ._batching import kind_of, push_batch
from ._internals import AG, node_type
from ._messages import REVERSE_HINT, NoJVPRule, rule_failed
from ._shapes import fit_tangent, tangent_like, value_shape
from ._trace import trace

__all__ = ["Recording", "jvp"]

#: a batch of tangents pushed through a recording together holds at most this many elements per node
BATCH_ELEMENTS = 2**20


@node_type("JVPNode")
class RecordNode:
    """A forward-mode recording node: the primitive call and its value."""

    __slots__ = ("argnums", "args", "fun", "kwargs", "parents", "value")

    def __init__(self, value: Any, fun: Any, args: tuple, kwargs: dict, argnums: tuple, parents: tuple) -> None:
        self.value, self.fun, self.args, self.kwargs = value, fun, args, kwargs
        self.argnums, self.parents = argnums, parents

    @classmethod
    def root(cls) -> RecordNode:
        node = cls.__new__(cls)
        node.parents, node.fun = (), None
        return node


class Recording:
    """`fun` recorded in forward mode at `x`: its `value`, and `push` of any batch of tangents."""

    __slots__ = ("_factors", "batch_cap", "end", "hint", "root", "stackable", "steps", "uses", "value", "x")

    def __init__(self, fun: Callable, x: Any, hint: str = REVERSE_HINT, partials: bool = False) -> None:
        self.x, self.hint = x, hint
        self.root = root = RecordNode.root()
        self.value, self.end = trace(root, fun, x)
        self.steps: list[tuple[RecordNode, str, tuple | None]] = []
        self.uses: dict = {}
        self._factors: dict = {}
        largest = 1
        end = self.end
        if end is not None and end is not root:
            uses = self.uses
            for node in reversed([node for node in AG.toposort(end) if node is not root]):  # parents first
                shape = value_shape(node.value)
                kind = kind_of(node, shape)
                if node.fun not in AG.primitive_jvps:
                    if not (partials and kind == "elementwise" and node.fun in AG.primitive_vjps and _all_real(node)):
                        raise NoJVPRule(node.fun, hint)
                    kind = "partials"
                self.steps.append((node, kind, shape))
                if shape is not None:
                    largest = max(largest, size_of(shape))
                for parent in node.parents:
                    uses[parent] = uses.get(parent, 0) + 1
            uses[end] = uses.get(end, 0) + 1
        # stacked batches are NumPy arrays with a leading tangent axis: not inside an outer trace (x, or
        # a context f's value depends on, an outer trace's box)
        self.stackable = value_shape(self.value) is not None and not AG.isbox(x) and not AG.isbox(self.value)
        self.batch_cap = max(1, BATCH_ELEMENTS // largest)

    def push(self, tangents: Any) -> Any:
        """`J @ t` for each row `t` of `tangents` (shape `(B, *x_shape)`), stacked: `(B, *y_shape)`, an
        array of its own (never a view of `tangents`)."""
        count = len(tangents)
        if self.stackable and type(tangents) is np.ndarray:
            cap = self.batch_cap
            if count <= cap:
                out = self._run(tangents, count, True)
            else:
                parts = [
                    self._run(tangents[lo : lo + cap], len(tangents[lo : lo + cap]), True)
                    for lo in range(0, count, cap)
                ]
                out = (AG.anp.concatenate if any(AG.isbox(p) for p in parts) else np.concatenate)(parts)
            if type(out) is np.ndarray and (not out.flags.writeable or np.may_share_memory(out, tangents)):
                out = out.copy()
            return out
        outs = self._run([tangents[i] for i in range(count)], count, False)
        shape = value_shape(self.value)
        outs = [fit_tangent(t, shape) for t in outs]
        if not outs:
            return np.zeros((0, *np.shape(self.value)), dtype_of(AG.getval(self.value)))
        return (AG.anp.stack if any(AG.isbox(t) for t in outs) else np.stack)(outs)

    def _run(self, root_tangent: Any, count: int, stacked: bool) -> Any:
        end, root = self.end, self.root
        if end is None:
            value = AG.getval(self.value)
            zeros = np.zeros((count, *np.shape(value)), dtype_of(value))
            return zeros if stacked else list(zeros)
        if end is root:
            return root_tangent
        tangents = {root: root_tangent}
        remaining = dict(self.uses)
        for node, kind, shape in self.steps:
            ins = [tangents[p] for p in node.parents]
            if stacked and shape is not None and kind != "loop" and all(type(t) is np.ndarray for t in ins):
                t = push_batch(kind, node, shape, ins, count, self._partial)
            else:
                t = self._looped(node, kind, shape, ins, count, stacked)
            tangents[node] = t
            for parent in node.parents:
                left = remaining[parent] - 1
                if left:
                    remaining[parent] = left
                else:
                    del tangents[parent]
        return tangents[end]

    def _looped(self, node: RecordNode, kind: str, shape: tuple | None, ins: list, count: int, stacked: bool) -> Any:
        rule: Any = AG.primitive_jvps.get(node.fun)  # None only for "partials" (`Recording` checked)
        outs = []
        for b in range(count):
            try:
                if kind == "partials":  # no JVP rule: the partial derivatives times the tangents
                    t = sum(self._partial(node, a, t_in[b]) for a, t_in in zip(node.argnums, ins))
                else:
                    t = rule(node.argnums, [t_in[b] for t_in in ins], node.value, node.args, node.kwargs)
            except NotImplementedError as e:
                raise NoJVPRule(node.fun, self.hint) from e
            except TypeError as e:
                raise rule_failed(node.fun, "forward-mode (JVP)", e) from e
            outs.append(tangent_like(t, node.value))
        if stacked and shape is not None:
            return (AG.anp.stack if any(AG.isbox(t) for t in outs) else np.stack)(outs)
        return outs

    def _partial(self, node: RecordNode, argnum: int, t: Any) -> Any:
        """The JVP of an elementwise primitive in argument `argnum` at the tangent(s) `t` (broadcast
        against its output): the partial derivative times `t`, or for a complex argument, whose JVP
        rule need only be real-linear (`conj`, `abs`), `Re(t) * J(1) + Im(t) * J(1j)`."""
        factor = self._factor(node, argnum)
        if type(factor) is not tuple:
            return factor * t
        one, i = factor
        anp = AG.anp
        return anp.real(t) * one + anp.imag(t) * i

    def _factor(self, node: RecordNode, argnum: int) -> Any:
        """The partial derivative of an elementwise primitive in argument `argnum`, shaped like its
        output: its JVP rule at a tangent of ones, or else its VJP rule at a cotangent of ones with that
        argument broadcast to the output's shape (so that the rule sums over nothing). Both rules are
        linear, and for an elementwise primitive diagonal: this evaluates them, at a point where every
        shortcut a rule may take is exact, and records nothing. For a complex argument, the pair of the
        JVP rule at 1 and at 1j (see `_partial`; the VJP rule is used for real arguments only)."""
        key = (node, argnum)
        factor = self._factors.get(key)
        if factor is None:
            arg, args = node.args[argnum], node.args
            rule = AG.primitive_jvps.get(node.fun)
            if rule is not None:
                ones = np.ones(np.shape(arg), dtype_of(AG.getval(arg)))
                factor = rule((argnum,), [ones], node.value, args, node.kwargs)
                if np.iscomplexobj(ones):
                    factor = (factor, rule((argnum,), [1j * ones], node.value, args, node.kwargs))
            else:
                shape = np.shape(node.value)
                broadcast = (AG.anp if AG.isbox(arg) else np).broadcast_to(arg, shape)
                args = (*args[:argnum], broadcast, *args[argnum + 1 :])
                ones = np.ones(shape, dtype_of(AG.getval(node.value)))
                (factor,) = AG.primitive_vjps[node.fun]((argnum,), node.value, args, node.kwargs)(ones)
            self._factors[key] = factor
        return factor


def _all_real(node: RecordNode) -> bool:
    """Whether the value of `node` and every argument it is traced in are real (not complex)."""
    return not np.iscomplexobj(AG.getval(node.value)) and not any(
        np.iscomplexobj(AG.getval(node.args[a])) for a in node.argnums
    )


# -- one tangent, eagerly ----------------------------------------------------------------------------------
class _MissingRule(Exception):
    """Raised from inside a trace for a primitive without a JVP rule; becomes `NoJVPRule`."""

    def __init__(self, fun: Any) -> None:
        super().__init__(getattr(fun, "__name__", repr(fun)))
        self.fun = fun


@node_type("JVPNode")
class JVPNode:
    """An eager forward-mode node: the tangent of its value, computed as the primitive runs."""

    __slots__ = ("g",)

    def __init__(self, value: Any, fun: Any, args: tuple, kwargs: dict, argnums: tuple, parents: tuple) -> None:
        rule = AG.primitive_jvps.get(fun)
        if rule is None:
            raise _MissingRule(fun)
        try:
            g = rule(argnums, [p.g for p in parents], value, args, kwargs)
        except NotImplementedError as e:
            raise _MissingRule(fun) from e
        except TypeError as e:
            raise rule_failed(fun, "forward-mode (JVP)", e) from e
        self.g = tangent_like(g, value)

    @classmethod
    def root(cls, t: Any) -> JVPNode:
        node = cls.__new__(cls)
        node.g = t
        return node


def jvp(fun: Callable, x: Any, t: Any, hint: str = REVERSE_HINT) -> tuple[Any, Any]:
    """`(fun(x), J @ t)` for one tangent, in one eager forward trace."""
    try:
        value, end = trace(JVPNode.root(t), fun, x)
    except _MissingRule as e:
        raise NoJVPRule(e.fun, hint) from None
    if end is None:
        raw = AG.getval(value)
        return value, np.zeros(np.shape(raw), dtype_of(raw))
    return value, tangent_like(end.g, value)
