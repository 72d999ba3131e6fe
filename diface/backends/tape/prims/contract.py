"""Contractions: matmul (with NumPy's 1-D promotion and batch broadcasting) and einsum (explicit
subscripts, no ellipsis: the recorder expands it). Both are linear in each operand."""

from __future__ import annotations

import string
from functools import partial
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ...._sparsity import Deps
from ..data.graph import Node
from . import patterns
from .prim import HOLOMORPHIC, TAYLOR_BILINEAR, Prim, expand_to, into, reduce_to, shape_of

__all__ = ["EINSUM", "MATMUL", "explicit_subscripts"]


def _promote(a: Any, nd: int, b: int, first: bool) -> Any:
    """A 1-D operand as NumPy's matmul sees it: (1, k) first, (k, 1) second (b leading batch axes)."""
    if nd >= 2:
        return a
    shape = shape_of(a)
    return np.reshape(a, shape[:b] + ((1, *shape[b:]) if first else (*shape[b:], 1)))


def _promote_output(g: Any, na: int, nb: int) -> Any:
    """The output (cotangent) with the axes removed by 1-D promotion put back."""
    shape = shape_of(g)
    if na == 1 and nb == 1:
        return np.reshape(g, (*shape, 1, 1))
    if na == 1:
        return np.reshape(g, (*shape[:-1], 1, shape[-1]))
    if nb == 1:
        return np.reshape(g, (*shape, 1))
    return g


def _demote(r: Any, shape: tuple) -> Any:
    return r if shape_of(r) == shape else np.reshape(r, shape)


class _Matmul(Prim):
    complex = HOLOMORPHIC
    name = "matmul"
    linear = True
    taylor = TAYLOR_BILINEAR

    def taylor_linear(self, ins: tuple, ts: tuple) -> Any:
        """One traced operand of 1 or 2 dimensions: its rows of coefficients as one matrix product (None:
        other shapes, left to the JVP rule)."""
        a, c = ins
        na, nc = len(shape_of(a)), len(shape_of(c))
        if na not in (1, 2) or nc not in (1, 2):
            return None
        if ts[0] is not None:
            t = ts[0]
            if na == 1:  # (R, n) @ c
                return np.matmul(t, c)
            r = np.matmul(t.reshape(-1, t.shape[-1]), c)  # (R m, n) @ c
            return r.reshape(t.shape[:2] + r.shape[1:])
        t = ts[1]
        rows = t.shape[0]
        if nc == 1:  # a @ t for each row t (R, n): t @ a^T
            return np.matmul(t, a.T if na == 2 else a)
        if na == 1:  # a (n,) @ t (R, n, p)
            return np.matmul(a, t)
        r = np.matmul(a, np.moveaxis(t, 0, 1).reshape(t.shape[1], -1))  # (m, n) @ (n, R p)
        return np.moveaxis(r.reshape(r.shape[0], rows, t.shape[2]), 1, 0)

    def taylor_on_basis(self, ins: tuple, is_x: tuple[bool, ...], rows: int, basis: tuple[int, int]) -> Any:
        """x @ c or c @ x for a vector x: c's rows (or columns) lo .. hi - 1, then zeros."""
        if is_x[0] == is_x[1]:
            return None
        first = is_x[0]
        a, c = ins
        x, m = (a, c) if first else (c, a)
        if x.ndim != 1 or np.ndim(m) != 2:
            return None
        lo, hi = basis
        out = np.zeros((rows, m.shape[1] if first else m.shape[0]), np.result_type(a, c))
        out[: hi - lo] = m[lo:hi] if first else m[:, lo:hi].T
        return out

    def taylor_cross(self, ins: tuple, pair: tuple[int, int], a: Any, b: Any, params: dict, collapsed: bool) -> Any:
        r = _batched_matmul(a, b, len(shape_of(ins[0])), len(shape_of(ins[1])))
        return np.sum(r, axis=0, keepdims=True) if collapsed else r

    @staticmethod
    def sparsity(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
        """matmul as an einsum (NumPy's 1-D promotion and batch broadcasting)."""
        na, nc = (len(v.shape) for v in ins)
        batch = "abcdefghijklmnopqrstuvw"[: max(na, nc, 2) - 2]
        a = "y" if na == 1 else batch[len(batch) - (na - 2) :] + "xy"
        c = "y" if nc == 1 else batch[len(batch) - (nc - 2) :] + "yz"
        out = batch + ("x" if na > 1 else "") + ("z" if nc > 1 else "")
        return patterns.multilinear(run, ins, shape, _letter_terms(f"{a},{c}->{out}", ins, shape))

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return {1 - i for i in active}, False  # each operand's rule reads the other one

    def forward(self, a: Any, c: Any, out: Any = None) -> Any:
        return np.matmul(a, c, out=out)

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        return partial(np.matmul, ins[0], ins[1], out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        a, c = ins
        na, nc = len(shape_of(a)), len(shape_of(c))
        ny = len(shape_of(y))
        full = max(na, 2), max(nc, 2)
        r = None
        lead: tuple | None = None
        for k, t in enumerate(ts):
            if t is None:
                continue
            lead = shape_of(t)[:b]
            if k == 0:
                ta = _promote(t, na, b, True)
                if b:
                    ta = expand_to(ta, (0,) * max(full[0], ny + (na == 1) + (nc == 1)), b)
                term = np.matmul(ta, _promote(c, nc, 0, False))
            else:
                tc = _promote(t, nc, b, False)
                if b:
                    tc = expand_to(tc, (0,) * max(full[1], ny + (na == 1) + (nc == 1)), b)
                term = np.matmul(_promote(a, na, 0, True), tc)
            r = term if r is None else np.add(r, term)
        assert lead is not None  # the sweeps give at least one tangent
        return into(out, _demote(r, lead + shape_of(y)))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        a, c = ins
        na, nc = len(shape_of(a)), len(shape_of(c))
        g2 = _promote_output(g, na, nc)
        lead = shape_of(g)[:b]
        if i == 0:
            r = np.matmul(g2, np.swapaxes(_promote(c, nc, 0, False), -1, -2))
            target = shape_of(_promote(a, na, 0, True))
        else:
            r = np.matmul(np.swapaxes(_promote(a, na, 0, True), -1, -2), g2)
            target = shape_of(_promote(c, nc, 0, False))
        r = reduce_to(r, target, b)
        return into(out, _demote(r, lead + shape_of(ins[i])))

    # prepared sweeps: matrices and vectors (at most one batch axis) in one NumPy call into the buffer
    def vjp_step(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any, params: dict) -> Any:
        a, c = ins
        na, nc = a.ndim, c.ndim
        if na == 2 and nc == 2:  # (B,) m x n: g c^T, a^T g
            return partial(np.matmul, g, c.T, out) if i == 0 else partial(np.matmul, a.T, g, out)
        if na == 2 and nc == 1:  # y = a c, a vector: outer(g, c), g a
            return partial(np.multiply, g[..., :, None], c, out) if i == 0 else _vector_step(g, a, out, b)
        if na == 1 and nc == 2:  # y = a c, a row vector: c g, outer(a, g)
            return _vector_step(g, c.T, out, b) if i == 0 else partial(np.multiply, a[:, None], g[..., None, :], out)
        if na == 1 and nc == 1:  # y = a . c, a number: g c, g a
            return partial(np.multiply, g[..., None], c if i == 0 else a, out)
        return super().vjp_step(i, ins, y, g, b, out, params)

    def jvp_step(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> Any:
        a, c = ins
        if a.ndim in (1, 2) and c.ndim in (1, 2) and (ts[0] is None or ts[1] is None):
            if ts[0] is not None:  # t_a c (a batch axis of t_a leads in matmul's broadcasting)
                return partial(np.matmul, ts[0], c, out)
            t = ts[1]  # a t_c
            if c.ndim == 2 or not b:
                return partial(np.matmul, a, t, out)
            return partial(np.matmul, t, a.T, out)  # a batch of vectors t_c: t_c a^T
        return super().jvp_step(ins, y, ts, b, out, params)


MATMUL = _Matmul()


def _vector_step(g: Any, m: Any, out: Any, b: int) -> Any:
    """m^T g for one vector g, or for each row of a batch (b = 1): g m."""
    return partial(np.matmul, g, m, out) if b else partial(np.matmul, m.T, g, out)


def explicit_subscripts(subscripts: str, shapes: list[tuple]) -> str:
    """`subscripts` with the ellipsis expanded to letters and the output written out."""
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, rhs = subscripts.split("->")
        explicit_out = True
    else:
        lhs, rhs, explicit_out = subscripts, "", False
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError("einsum: the number of subscript terms does not match the number of operands")
    used = set(subscripts) - set(".,->")
    free = [ch for ch in string.ascii_letters if ch not in used]
    ell_nd = max((len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(free[:ell_nd])
    out_terms = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            k = len(s) - (len(t) - 3)
            t = t.replace("...", ell[ell_nd - k :] if k else "")
        out_terms.append(t)
    if explicit_out:
        rhs = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for t in out_terms:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        rhs = ell + "".join(sorted(ch for ch, n in counts.items() if n == 1 and ch not in ell))
    return ",".join(out_terms) + "->" + rhs


def _free_letter(subscripts: str) -> str:
    return next(ch for ch in string.ascii_letters if ch not in subscripts)


class _Einsum(Prim):
    """`einsum(*operands, subscripts)` with explicit subscripts (see `explicit_subscripts`)."""

    complex = HOLOMORPHIC
    name = "einsum"
    linear = True
    taylor = TAYLOR_BILINEAR

    def taylor_cross(self, ins: tuple, pair: tuple[int, int], a: Any, b: Any, params: dict, collapsed: bool) -> Any:
        i, j = pair
        lhs, rhs = params["subscripts"].split("->")
        terms = lhs.split(",")
        z = _free_letter(params["subscripts"])
        subs = ",".join(z + s if k in pair else s for k, s in enumerate(terms)) + "->" + ("" if collapsed else z) + rhs
        operands = [a if k == i else b if k == j else v for k, v in enumerate(ins)]
        r = np.einsum(subs, *operands, optimize=params.get("optimize", False))
        return r[None] if collapsed else r

    @staticmethod
    def sparsity(run: Any, node: Node, ins: list, shape: tuple) -> Deps:
        return patterns.multilinear(run, ins, shape, _letter_terms(node.params["subscripts"], ins, shape))

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        n = params["subscripts"].split("->")[0].count(",") + 1
        return {j for j in range(n) for i in active if j != i}, False  # each operand's rule reads the others

    def forward(self, *ops: Any, out: Any = None, subscripts: str = "", optimize: Any = False) -> Any:
        return np.einsum(subscripts, *ops, out=out, optimize=optimize)

    def jvp(
        self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, subscripts: str = "", optimize: Any = False
    ) -> Any:
        lhs, rhs = subscripts.split("->")
        terms = lhs.split(",")
        z = _free_letter(subscripts) if b else ""
        r = None
        for k, t in enumerate(ts):
            if t is None:
                continue
            subs = ",".join(z + s if j == k else s for j, s in enumerate(terms)) + "->" + z + rhs
            operands = [t if j == k else a for j, a in enumerate(ins)]
            term = np.einsum(subs, *operands, optimize=optimize)
            r = term if r is None else np.add(r, term)
        return into(out, r)

    def vjp(
        self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, subscripts: str = "", optimize: Any = False
    ) -> Any:
        lhs, rhs = subscripts.split("->")
        terms = lhs.split(",")
        target = terms[i]
        if len(set(target)) != len(target):
            raise NotSupportedError(
                f"AutoTape: einsum '{subscripts}' repeats an index within operand {i} (a diagonal); its "
                "reverse rule is not implemented: use np.diagonal or np.trace instead"
            )
        z = _free_letter(subscripts) if b else ""
        others = [s for j, s in enumerate(terms) if j != i]
        present = set(rhs).union(*others) if others else set(rhs)
        kept = "".join(ch for ch in target if ch in present)
        subs = ",".join([z + rhs, *others]) + "->" + z + kept
        r = np.einsum(subs, g, *(a for j, a in enumerate(ins) if j != i), optimize=optimize)
        if kept != target:  # letters summed only within this operand: the cotangent is constant along them
            shape = shape_of(ins[i])
            lead = shape_of(r)[:b]
            r = np.reshape(r, lead + tuple(n if ch in present else 1 for ch, n in zip(target, shape)))
            r = np.broadcast_to(r, lead + shape)
        return into(out, r)


EINSUM = _Einsum()


# -- Taylor mode and sparsity: helpers ----------------------------------------------------------------------
def _batched_matmul(a: Any, b: Any, na: int, nb: int) -> Any:
    """matmul of each batch row of a with the same row of b (NumPy's 1-D promotion)."""
    n = a.shape[0]
    pa = a.reshape(n, 1, *a.shape[1:]) if na == 1 else a
    pb = b.reshape(*b.shape, 1) if nb == 1 else b
    nd = max(pa.ndim, pb.ndim) - 1
    pa, pb = expand_to(pa, (0,) * nd, 1), expand_to(pb, (0,) * nd, 1)
    r = np.matmul(pa, pb)
    if na == 1:
        r = r[..., 0, :]
    if nb == 1:
        r = r[..., 0]
    return r


def _letter_terms(subscripts: str, ins: list, shape: tuple) -> tuple | None:
    """The terms (see `patterns.multilinear`) of an einsum with explicit subscripts, from its index space."""
    lhs, rhs = subscripts.split("->")
    operands = lhs.split(",")
    sizes: dict[str, int] = {}
    for term, v in zip(operands, ins):
        for ch, s in zip(term, v.shape):
            sizes[ch] = s if sizes.get(ch, 1) == 1 else sizes[ch]  # 1 broadcasts, 0 gives no terms
    letters = "".join(sorted(sizes))
    space = tuple(sizes[ch] for ch in letters)
    if int(np.prod(space, dtype=np.int64)) > patterns.TERMS_LIMIT:
        return None
    nonzero = np.ones((1,) * len(letters), dtype=bool)
    for term, v in zip(operands, ins):
        if isinstance(v, Deps):
            continue
        present = "".join(ch for ch in letters if ch in term)
        hits = np.einsum(f"{term}->{present}", (np.asarray(v.value) != 0).astype(np.int64)) != 0
        nonzero = nonzero & hits.reshape([hits.shape[present.index(ch)] if ch in term else 1 for ch in letters])
    full = np.broadcast_to(nonzero, space)
    coords = np.nonzero(full) if letters else ()
    count = coords[0].size if letters else int(full.all())
    where = {ch: coords[i] for i, ch in enumerate(letters)}
    return _flat(rhs, shape, where, count), [_flat(t, v.shape, where, count) for t, v in zip(operands, ins)]


def _flat(term: str, shape: tuple, where: dict, count: int) -> np.ndarray:
    """Flat indices into an array of `shape` with subscripts `term` at the given letter values (axes of
    size 1 broadcast: always index 0)."""
    if not term:
        return np.zeros(count, dtype=np.int64)
    axes = [where[ch] if s > 1 else np.zeros(count, dtype=np.int64) for ch, s in zip(term, shape)]
    return np.ravel_multi_index(axes, shape).astype(np.int64)
