"""The forward-mode sweep: tangents of x (a batch, or one) to tangents of the output.

Each node's JVP is one step writing the output's tangent into a buffer planned like the forward
replay's (`data.buffers`); view primitives make views of their input's tangent.

A batch of B tangents costs a pass over B times a slot's size per step, so batched sweeps keep the
tangents of linear combinations symbolic: a tangent is a short sum of terms `sign * coef * base[key]`,
with `base` a batched tangent written out earlier, `coef` an unbatched array (or none) and `key` a
basic index placing the term in a region of the slot (or none: the whole slot). Elementwise operations
multiply the coefficients by their partial derivatives (at the cost of one unbatched pass, not B),
`index_add` with a basic key (the transpose of slicing) and sums just collect terms, and terms with
the same base and key merge. A tangent is written out where something else needs it (a
non-elementwise operation, the output) in one pass per term. Forward over reverse (Hessians) is made
of such chains: the recorded reverse sweep multiplies cotangents by partial derivatives and adds them
into slices of the gradient, node after node; each chain then costs about one batched pass.

A sweep whose result holds a NaN runs again as its strong twin, whose products (the ufuncs' steps, the
coefficients and the terms written out) are strong: 0 * inf := 0 (see `prims.elementwise.strong_multiply`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..data.buffers import Arena, Storage
from ..data.graph import Tape
from ..prims.elementwise import guarded_jvp_step, nan_probe, run_steps, strong_multiply
from ..prims.partials import Arg
from ..prims.structure import INDEX_ADD
from .seeds import identity_scatter, identity_seed

__all__ = ["Tangent"]

#: batches from this size on keep tangents symbolic (below, writing them out costs as much)
SYMBOLIC_BATCH = 4
#: a symbolic tangent with more terms than this is written out
MAX_TERMS = 6


class _Term:
    """`sign * coef * base`, placed at `key` (a basic index; None: the whole slot). `bkey`/`ckey`: the
    storage keys through which the holder keeps the buffers of `base` and `coef` (None: not ours)."""

    __slots__ = ("base", "bkey", "ckey", "coef", "key", "sign")

    def __init__(self, key: Any, base: Any, bkey: Any, coef: Any, ckey: Any, sign: float) -> None:
        self.key, self.base, self.bkey, self.coef, self.ckey, self.sign = key, base, bkey, coef, ckey, sign


def aligned(buf: Any, lead: tuple, ndim: int) -> Any:
    """A batched buffer (leading axis) viewed with size-1 axes up to `ndim` trailing axes."""
    shape = buf.shape[len(lead) :]
    missing = ndim - len(shape)
    return buf if missing <= 0 else buf.reshape(lead + (1,) * missing + shape)


class Tangent:
    """The forward-mode sweep over `batch` tangents (None: one, with no batch axis); `strong`: the twin
    taking strong products (see the module docstring)."""

    def __init__(
        self,
        tape: Tape,
        fwd: Any,
        batch: int | None,
        arena: Arena,
        identity: int | None = None,
        strong: bool = False,
    ) -> None:
        slots, nodes = tape.slots, tape.nodes
        self.strong = strong
        #: products of coefficients and terms: strong ones in the strong twin
        self.multiply: Any = strong_multiply if strong else np.multiply
        lead = () if batch is None else (batch,)
        b = len(lead)
        x_slot = slots[tape.x]
        self.seed = np.zeros(lead + x_slot.shape, x_slot.dtype)
        #: the seed is fixed to identity rows from `identity` on (see `sweeps.seeds`): callers must not write it
        self.identity = identity
        if identity is not None:
            identity_seed(self.seed, identity)
        self.lead, self.slots = lead, slots
        self.steps: list[Callable[[], Any]] = []
        self.store = store = Storage(arena.sweep_pool())
        store.external(tape.x)
        #: storage keys a symbolic tangent holds (by slot; ("new", slot): new coefficients not yet held)
        self.owned: dict[int | tuple[str, int], list] = {}
        self.tan: dict[int, Any] = {tape.x: self.seed}  # an array, or a list of terms
        symbolic = batch is not None and batch >= SYMBOLIC_BATCH
        order = tape.forward_nodes()
        last: dict[int, int] = {}
        for j, k in enumerate(order):
            node = nodes[k]
            for i, s in enumerate(node.inputs):
                if i not in node.prim.nondiff:
                    last[s] = j
        for j, k in enumerate(order):
            node = nodes[k]
            prim = node.prim
            active = [i for i, s in enumerate(node.inputs) if i not in prim.nondiff and s in self.tan]
            if active:
                ins = tuple(fwd.bufs[q] for q in node.inputs)
                y = fwd.bufs[node.output]
                terms = self._symbolic(node, active, ins, y) if symbolic else None
                if terms is not None and len(terms) <= MAX_TERMS:
                    self.tan[node.output] = terms
                else:
                    if terms is not None:
                        self.tan[node.output] = terms
                        self._written(node.output)
                    else:
                        self._step(node, active, ins, y, b)
            for s in set(node.inputs):
                if last.get(s) == j and s != tape.output:
                    self._release(s)
        out_slot = slots[tape.output]
        if tape.output in self.tan:
            self.result = self._written(tape.output)
        else:
            self.result = np.zeros(lead + out_slot.shape, out_slot.dtype)
        del self.tan, self.store, self.owned
        self.quiet = strong or tape.singular()
        #: what the strong twin is compiled from (None: this is one), and the twin once compiled
        self._again: tuple | None = None if strong or not tape.unbounded() else (tape, fwd, batch, arena, identity)
        self._nan = None if self._again is None else nan_probe(self.result)
        self._twin: Tangent | None = None

    def run(self) -> np.ndarray:
        run_steps(self.steps, self.quiet)
        if self._nan is not None and self._nan():
            return self._strong()
        return self.result

    def _strong(self) -> np.ndarray:
        """The result of the strong twin (compiled on first use) for the same seed."""
        if self._twin is None:
            assert self._again is not None
            tape, fwd, batch, arena, identity = self._again
            self._twin = Tangent(tape, fwd, batch, arena, identity, strong=True)
        if self.identity is None:
            np.copyto(self._twin.seed, self.seed)
        return self._twin.run()

    # -- tangents as arrays ----------------------------------------------------------------------------
    def _step(self, node: Any, active: list, ins: tuple, y: Any, b: int) -> None:
        """The node's JVP as one step on written-out tangents."""
        prim, slot, lead = node.prim, self.slots[node.output], self.lead
        ts = tuple(self._written(s) if i in active else None for i, s in enumerate(node.inputs))
        if b and prim.elementwise:
            ts = tuple(None if t is None else aligned(t, lead, len(slot.shape)) for t in ts)
        v = prim.tangent_view(ins, ts, b, node.params) if prim.viewable else None
        if v is not None and v.shape == lead + slot.shape:
            self.tan[node.output] = v
            self.store.view(node.output, node.inputs[0])
        else:
            out = self.tan[node.output] = self.store.new(node.output, lead + slot.shape, slot.dtype)
            if self.strong:
                self.steps.append(guarded_jvp_step(prim, ins, y, ts, b, out, node.params))
            else:
                self.steps.append(prim.jvp_step(ins, y, ts, b, out, node.params))

    def _release(self, s: int) -> None:
        self.store.release(s)
        for key in self.owned.pop(s, ()):
            self.store.release(key)

    def _written(self, s: int) -> np.ndarray:
        """The tangent of slot s as an array, writing out a symbolic one (once)."""
        t = self.tan[s]
        if not isinstance(t, list):
            return t
        slot = self.slots[s]
        out = self.store.new(s, self.lead + slot.shape, slot.dtype)
        self._write(t, out)
        for key in self.owned.pop(s, ()):
            self.store.release(key)
        self.tan[s] = out
        return out

    def _terms(self, s: int) -> list:
        t = self.tan[s]
        return t if isinstance(t, list) else [_Term(None, t, s, None, None, 1.0)]

    # -- symbolic tangents -----------------------------------------------------------------------------
    def _symbolic(self, node: Any, active: list, ins: tuple, y: Any) -> list | None:
        """The node's tangent as terms, where it is a linear combination the sweep keeps symbolic."""
        prim, slots = node.prim, self.slots
        out_shape = slots[node.output].shape
        partials = getattr(prim, "partials", None)
        if partials is not None:  # an elementwise ufunc: sum of partial * input tangent
            factors = []
            for i in active:
                s = node.inputs[i]
                p = partials[i]
                if isinstance(p, Arg) and isinstance(ins[p], (int, float)):
                    p = float(ins[p])  # a Python number operand
                scalar = isinstance(p, (int, float)) and not isinstance(p, Arg)
                if (not scalar or slots[s].shape != out_shape) and any(t.key is not None for t in self._terms(s)):
                    return None  # a term in a region times an array: write the input out first
                factors.append((s, p, scalar))
            terms: list = []
            for s, p, scalar in factors:
                for t in self._terms(s):
                    if scalar:
                        terms.append(_Term(t.key, t.base, t.bkey, t.coef, t.ckey, t.sign * float(p)))
                    else:
                        terms.append(self._times(t, p, ins, y, out_shape, node.output))
        elif prim is INDEX_ADD and len(ins) == 2:  # a + v placed at a basic key
            if 1 in active and any(t.key is not None for t in self._terms(node.inputs[1])):
                return None
            template = node.params["template"]
            terms = self._terms(node.inputs[0]) if 0 in active else []
            if 1 in active:
                terms = terms + [
                    _Term(template, t.base, t.bkey, t.coef, t.ckey, t.sign) for t in self._terms(node.inputs[1])
                ]
        else:
            return None
        return self._hold(node.output, self._merged(terms, node.output))

    def _hold(self, s: int, terms: list) -> list:
        """Register slot s as holding the buffers its terms read (released when s dies)."""
        owned = self.owned.setdefault(s, [])
        held = []
        for t in terms:
            bkey = ckey = None
            if t.bkey is not None:
                bkey = (s, "base", len(owned))
                self.store.view(bkey, t.bkey)
                owned.append(bkey)
            if t.ckey is not None:
                ckey = (s, "coef", len(owned))
                self.store.view(ckey, t.ckey)
                owned.append(ckey)
            held.append(_Term(t.key, t.base, bkey, t.coef, ckey, t.sign))
        for key in self.owned.pop(("new", s), ()):
            self.store.release(key)  # the new coefficients are now held through the slot's own keys
        return held

    def _new_coef(self, s: int, shape: tuple, dtype: Any) -> tuple[np.ndarray, Any]:
        key = (s, "new", len(self.owned.setdefault(("new", s), [])))
        self.owned[("new", s)].append(key)
        return self.store.new(key, shape, dtype), key

    def _times(self, t: _Term, p: Any, ins: tuple, y: Any, shape: tuple, s: int) -> _Term:
        """The term times an elementwise partial derivative (an input's value, or a function of the
        inputs and output), its new coefficient computed by steps added now."""
        dtype = self.slots[s].dtype
        if isinstance(p, Arg):
            a = ins[p]
            if isinstance(a, complex):  # a Python complex operand: a coefficient array of the slot's dtype
                a = np.asarray(a, dtype)
            if t.coef is None:  # the partial itself is the coefficient: a forward buffer, read in place
                return _Term(t.key, t.base, t.bkey, a, None, t.sign)
            buf, key = self._new_coef(s, np.broadcast_shapes(np.shape(a), t.coef.shape), dtype)
            self.steps.append(partial(self.multiply, a, t.coef, buf))
            return _Term(t.key, t.base, t.bkey, buf, key, t.sign)
        buf, key = self._new_coef(s, shape, dtype)
        self.steps.append(partial(_partial_into, p, ins, y, buf))
        if t.coef is not None:
            self.steps.append(partial(self.multiply, buf, t.coef, buf))
        return _Term(t.key, t.base, t.bkey, buf, key, t.sign)

    def _merged(self, terms: list, s: int) -> list:
        """Terms with the same base and key combined into one (their coefficients added)."""
        groups: dict = {}
        for t in terms:
            groups.setdefault((id(t.base), repr(t.key)), []).append(t)
        merged = []
        dtype = self.slots[s].dtype
        for group in groups.values():
            t = group[0]
            if self.strong:  # a term times 0 is 0, whatever its coefficient (inf * 0 := 0)
                group = [u for u in group if u.sign != 0] or [_Term(t.key, t.base, t.bkey, None, None, 0.0)]
                t = group[0]
            if len(group) == 1:
                merged.append(t)
            elif all(u.coef is None for u in group):
                merged.append(_Term(t.key, t.base, t.bkey, None, None, sum(u.sign for u in group)))
            else:
                shape = np.broadcast_shapes(*(u.coef.shape for u in group if u.coef is not None))
                buf, key = self._new_coef(s, shape, dtype)
                for n, u in enumerate(group):
                    self.steps.append(_accumulate_step(buf, u.coef, u.sign, n == 0))
                merged.append(_Term(t.key, t.base, t.bkey, buf, key, 1.0))
        return merged

    def _write(self, terms: list, out: np.ndarray) -> None:
        """Steps writing the sum of the terms into the batched buffer `out`."""
        lead, steps = self.lead, self.steps
        if self.strong:  # a term times 0 is 0, whatever its coefficient (inf * 0 := 0)
            terms = [t for t in terms if t.sign != 0]
            if not terms:
                steps.append(partial(np.copyto, out, 0))
                return
        sparse: list[Any] = []
        if self.identity is not None:  # terms on the identity seed: their ones only, added last
            dense: list[Any] = []
            for t in terms:
                step = None
                if t.coef is None or t.coef.ndim <= out.ndim - len(lead):
                    region = out if t.key is None else out[(*(slice(None),) * len(lead), *t.key, Ellipsis)]
                    step = identity_scatter(self.seed, self.identity, t.base, t.coef, t.sign, region, out)
                (dense if step is None else sparse).append(t if step is None else step)
            if not dense:
                steps.append(partial(np.copyto, out, 0))
                steps += sparse
                return
            terms = dense

        def rank(t: _Term) -> tuple:  # the whole slot first, then terms that need a product
            return (t.key is not None, t.coef is None and t.sign in (1.0, -1.0))

        terms = sorted(terms, key=rank)
        if terms[0].key is not None:
            steps.append(partial(np.copyto, out, 0))
        pair = terms[:2]
        if len(pair) == 2 and all(t.key is None and t.coef is None and t.sign in (1.0, -1.0) for t in pair):
            a, c = (aligned(t.base, lead, out.ndim - len(lead)) for t in pair)
            if pair[0].sign == pair[1].sign:
                steps.append(partial(np.add, a, c, out))
                if pair[0].sign == -1.0:
                    steps.append(partial(np.negative, out, out))
            else:
                steps.append(
                    partial(np.subtract, a, c, out) if pair[0].sign == 1.0 else partial(np.subtract, c, a, out)
                )
            terms = terms[2:]
            first = False
        else:
            first = True
        for t in terms:
            region = out if t.key is None else out[(*(slice(None),) * len(lead), *t.key, Ellipsis)]
            base = aligned(t.base, lead, region.ndim - len(lead))
            coef, sign = t.coef, t.sign
            if coef is not None and sign != 1.0:  # the sign folded into the coefficient: an unbatched pass
                scaled, raw = self.store.temp(coef.shape, np.result_type(coef, out.dtype))
                steps.append(partial(np.multiply, coef, sign, scaled))
                coef, sign = scaled, 1.0
                self.store.done(raw)
            factor = sign if coef is None else coef
            unit = coef is None and sign in (1.0, -1.0)
            if first:
                if not unit:
                    steps.append(partial(self.multiply, base, factor, region))
                elif sign == 1.0:
                    steps.append(partial(np.copyto, region, base))
                else:
                    steps.append(partial(np.negative, base, region))
                first = False
            elif unit:
                steps.append(partial(np.add if sign == 1.0 else np.subtract, region, base, region))
            else:
                tmp, raw = self.store.temp(region.shape, out.dtype)
                steps += [partial(self.multiply, base, factor, tmp), partial(np.add, region, tmp, region)]
                self.store.done(raw)
        steps += sparse


def _accumulate_step(buf: Any, coef: Any, sign: float, first: bool) -> Any:
    """buf (=|+=) sign * coef (coef None: 1)."""
    if coef is None:
        return partial(np.copyto, buf, sign) if first else partial(np.add, buf, sign, buf)
    if first:
        return partial(np.multiply, coef, sign, buf)
    if sign in (1.0, -1.0):
        return partial(np.add if sign == 1.0 else np.subtract, buf, coef, buf)
    return partial(_add_scaled, buf, coef, sign)


def _add_scaled(buf: Any, coef: Any, sign: float) -> None:
    buf += coef * sign


def _partial_into(p: Any, ins: tuple, y: Any, dest: Any) -> None:
    r = p(ins, y, dest)
    if r is not dest:
        np.copyto(dest, r)
