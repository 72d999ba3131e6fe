"""Global sparsity of NumPy code, by running AutoTape's recording of f on index sets (`diface._sparsity.Deps`).

f is recorded once, exactly as a preparation records it (x and the floating-point context leaves as
inputs of the tape: a Constant's values are never relied on, since a preparation may be reused with
other values); then every node maps the dependencies of its inputs to those of its output. Values
fixed at recording (literals: Python numbers, arrays f closes over, results computed from them) are
kept as numbers, so a product with a constant sparse matrix gets that matrix's pattern and a product
with a constant mask drops its zeros. A slot the tape marks inactive (integers, booleans, comparisons,
anything computed from contexts only) depends on no element of x. The result holds at every x.

Covered, every primitive of the tape:

- elementwise: ufuncs (+, - and the piecewise-linear abs, maximum, minimum, fmod, copysign, ... linear;
  * bilinear; /, xlogy quotient; every other ufunc and scipy.special function nonlinear; the
  piecewise-constant ones, sign, floor, comparisons, depend on nothing), `where` (a condition known at
  recording selects elements exactly; a traced one takes both), `clip`;
- data movement: reshape, transpose, broadcast_to, astype, indexing, assignment (`a[i] = v`, in-place
  f(y, x) included) and concatenation, with index arrays known at recording: each is run on element
  ids, so what NumPy builds from them (stack, pad, roll, flip, tile, repeat, diagonal, take, ...) is
  exact; `index_add` (`np.add.at`);
- reductions: sum, prod (bilinear within a group), max, min, cumsum (and what is built from them:
  mean, std, var, norm, ...);
- contractions: matmul and einsum (each term of the sum, with the constant operands' zeros), full
  convolutions: first order exact, pairs only between operands that meet in a term;
- complex values and Fourier transforms (`_sparsity_spectral`): conj, real, imag linear, abs and
  angle nonlinear elementwise; fft, ifft, rfft, irfft each output on its line along the axes;
- linear algebra (inv, solve, solve_banded, det, slogdet, pinv, eigh, eig, svd, qr, cholesky): every output element
  of a matrix on every input element of that matrix (the matrices of a stack kept apart), nonlinear.

Indices computed from x or from a context (argmax, argsort, a Constant's values) make every position
possible. A decision on a traced value (`if x[0] > 0`, `float(x)`, a traced boolean mask, all recorded
as guards) means the pattern may depend on x: `NotSupportedError` names the user's line and suggests
`DenseSparsityDetector` or `KnownSparsity`, as does a primitive without a rule (named).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ...._sparsity import Deps, Nonlinearity
from ..data.graph import GUARD_OUTPUT, Node, Tape
from ..prims.banded import BANDED_SOLVE
from ..prims.contract import EINSUM, MATMUL
from ..prims.convolve import CONVOLVE
from ..prims.decomp import PINV, _Part
from ..prims.elementwise import CLIP, WHERE, Ufunc
from ..prims.linalg import DET, INV, LOGABSDET, SOLVE
from ..prims.prim import SUM_TO
from ..prims.reduce import AMAX, AMIN, CUMSUM, PROD, PROD_OTHERS, SUM
from ..prims.scan import CUMPROD
from ..prims.structure import ASTYPE, BROADCAST_TO, CONCATENATE, GETITEM, INDEX_ADD, RESHAPE, SETITEM, TRANSPOSE
from ..recording.record import Recording, record, recording_for
from .sparsity_spectral import SPECTRAL_RULES, groups

__all__ = ["recording_sparsity", "tape_sparsity"]

L, N, B, Q = Nonlinearity.LINEAR, Nonlinearity.NONLINEAR, Nonlinearity.BILINEAR, Nonlinearity.QUOTIENT

#: ufuncs by their second-order structure; any other differentiable ufunc is nonlinear
_UFUNC_KINDS = {
    **dict.fromkeys(
        "add subtract negative positive conjugate absolute fabs maximum minimum fmax fmin deg2rad radians "
        "rad2deg degrees copysign remainder fmod ldexp".split(),
        L,
    ),
    "multiply": B,
    "strong_multiply": B,  # a product recorded by a rule (second order)
    **dict.fromkeys("divide true_divide xlogy xlog1py".split(), Q),
}
#: the most elements the index space of one contraction may have before it is taken as dense
_TERMS_LIMIT = 20_000_000
_SUGGESTION = (
    "use di.DenseSparsityDetector(backend) (the pattern at the preparation point) or di.KnownSparsity(pattern)"
)


class _Known:
    """A value fixed at recording (a literal slot), kept as a number."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    @property
    def shape(self) -> tuple:
        return np.shape(self.value)


# -- entry points ----------------------------------------------------------------------------------------
def tape_sparsity(problem: Any, order: int, reuse: bool = False) -> Deps:
    """The dependencies of f's output on x (with `order` 2, also the pairs of x's elements that interact
    nonlinearly), from AutoTape's recording of the problem's f. `reuse`: keep the recording for the
    AutoTape kernel prepared next for this problem (AutoTape's own detection)."""
    if not isinstance(problem.x, (np.ndarray, np.generic, float, int, list)) or isinstance(problem.x, bool):
        raise NotSupportedError(
            f"TracerSparsityDetector traces NumPy code with AutoTape, and x is a {type(problem.x).__name__}; "
            + _SUGGESTION
        )
    try:
        if reuse:
            rec = recording_for(problem)
        else:
            rec = record(problem.f, problem.x, problem.contexts, problem.context_values, problem.y)
    except NotSupportedError as e:
        raise NotSupportedError(
            f"TracerSparsityDetector records f with AutoTape, which could not record it: {e} For the sparsity "
            f"pattern, {_SUGGESTION}"
        ) from e
    return recording_sparsity(rec, order == 2)


def recording_sparsity(rec: Recording, second: bool) -> Deps:
    """The dependencies of a recording's output on its x (see the module docstring)."""
    return _Run(rec.tape, second).output()


# -- the interpreter -------------------------------------------------------------------------------------
class _Run:
    """One pass over a tape: every slot's value as `Deps` (depends on inputs) or `_Known` (a number)."""

    def __init__(self, tape: Tape, second: bool) -> None:
        self.tape = tape
        self.second = second
        x = Deps.input(tape.slots[tape.x].shape, second)
        self.n = x.n
        self.env: dict[int, Any] = {tape.x: x}

    def output(self) -> Deps:
        # each value is dropped after its last use: a program's intermediates are not all held at once
        last = {s: k for k, node in enumerate(self.tape.nodes) for s in node.inputs}
        last.pop(self.tape.output, None)
        for k, node in enumerate(self.tape.nodes):
            if node.output != GUARD_OUTPUT:
                self.env[node.output] = self.step(node)
            elif node.params.get("kind") not in ("equality", "check"):
                # (an equality's branches: where's union holds; a check that raises where it fails decides nothing)
                raise _guard_error(node)
            for s in node.inputs:
                if last.get(s) == k:
                    self.env.pop(s, None)
        return self.deps(self.read(self.tape.output))

    def read(self, s: int) -> Any:
        value = self.env.get(s)
        if value is None:
            slot = self.tape.slots[s]
            if slot.kind == "literal":
                value = _Known(self.tape.values[s])
            else:  # contexts, the output buffer of an in-place f: their values are not relied on
                value = self.constant(slot.shape)
            self.env[s] = value
        return value

    def step(self, node: Node) -> Deps:
        slot = self.tape.slots[node.output]
        if not slot.active:  # no derivative flows: integers, booleans, comparisons, context-only values
            return self.constant(slot.shape)
        rule = _rule(node.prim)
        if rule is None:
            raise NotSupportedError(
                f"TracerSparsityDetector: AutoTape's operation {node.prim.label()} has no sparsity rule in "
                f"diface; {_SUGGESTION}"
            )
        return rule(self, node, [self.read(s) for s in node.inputs], slot.shape)

    # -- helpers --------------------------------------------------------------------------------------
    def constant(self, shape: tuple) -> Deps:
        return Deps.constant(tuple(shape), self.n, self.second)

    def deps(self, v: Any) -> Deps:
        return v if isinstance(v, Deps) else self.constant(v.shape)

    def stack(self, parts: list[Deps]) -> Deps:
        """The flat concatenation of `parts` (one long vector)."""
        import scipy.sparse as sp

        if not parts:
            return self.constant((0,))
        first = sp.vstack([p.first for p in parts], format="csr")
        pairs = sp.vstack([p.second for p in parts], format="csr") if self.second else None
        return Deps((first.shape[0],), self.n, first, pairs)

    def anywhere(self, parts: list[Deps], shape: tuple, kind: Nonlinearity) -> Deps:
        """Every output element on every element of `parts` (combined as `kind`)."""
        pooled = [p.reduce(np.zeros(p.size, dtype=np.int64), (), kind) for p in parts]
        merged = Deps.elementwise((), pooled, kind) if pooled else self.constant(())
        return merged.gather(np.zeros(shape, dtype=np.int64))


def _guard_error(node: Node) -> NotSupportedError:
    what = node.params.get("what") or "a decision on a traced value"
    where = node.params.get("where") or "?"
    return NotSupportedError(
        f"TracerSparsityDetector: f makes a decision on a traced value ({what} at {where}), so its sparsity "
        f"pattern may depend on x (or on a context's values) and no global pattern exists; {_SUGGESTION}"
    )


# -- elementwise -----------------------------------------------------------------------------------------
def _elementwise(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    prim = node.prim
    operands = [v for i, v in enumerate(ins) if i not in prim.nondiff]
    kind = _UFUNC_KINDS.get(prim.name, N)
    if kind is B:
        return _product(run, operands, shape)
    if kind is Q and not isinstance(operands[1], Deps):
        kind = L  # divided by a number
    return Deps.elementwise(shape, [run.deps(v) for v in operands], kind)


def _product(run: _Run, operands: list, shape: tuple) -> Deps:
    """A product: bilinear among its traced factors, and zero wherever a known factor is."""
    traced = [v for v in operands if isinstance(v, Deps)]
    result = Deps.elementwise(shape, traced, B if len(traced) > 1 else L)
    mask = np.ones(shape, dtype=bool)
    for v in operands:
        if not isinstance(v, Deps):
            mask &= np.broadcast_to(np.asarray(v.value) != 0, shape)
    if mask.all():
        return result
    return result.gather(np.where(mask, np.arange(mask.size).reshape(shape), -1))


def _where(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    if isinstance(ins[0], Deps):  # a condition computed from inputs: either branch
        return Deps.elementwise(shape, [run.deps(v) for v in ins[1:]], L)
    return _move(run, node, ins, shape)


def _linear(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    return Deps.elementwise(shape, [run.deps(v) for v in ins], L)


# -- data movement ---------------------------------------------------------------------------------------
def _move(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    """Run the primitive on element ids (float64 id + 1, 0 for a number) instead of values: each output
    id says which input element the output element is. Index arrays computed from inputs: anywhere."""
    prim = node.prim
    data = [i for i in range(len(ins)) if i not in prim.nondiff]
    if any(isinstance(v, Deps) for i, v in enumerate(ins) if i not in data):
        return run.anywhere([v for i, v in enumerate(ins) if i in data and isinstance(v, Deps)], shape, L)
    args, parts, offset = [], [], 0
    for i, v in enumerate(ins):
        if i not in data:
            args.append(v.value)
        elif isinstance(v, Deps):
            args.append(np.arange(offset + 1, offset + 1 + v.size, dtype=np.float64).reshape(v.shape))
            parts.append(v)
            offset += v.size
        else:
            args.append(np.zeros(v.shape))
    ids = np.asarray(prim.forward(*args, **node.params))
    return run.stack(parts).gather(ids.astype(np.int64).reshape(shape) - 1)


def _astype(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    return run.deps(ins[0])


def _index_add(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    """a with v added at a key (repeated positions accumulate): v's elements reduced into the positions
    the key selects."""
    a, v, arrays = run.deps(ins[0]), ins[1], ins[2:]
    if any(isinstance(k, Deps) for k in arrays):
        return run.anywhere([a, run.deps(v)], shape, L)
    if not isinstance(v, Deps):
        return a
    ids = np.arange(a.size).reshape(a.shape)
    targets = np.asarray(GETITEM.forward(ids, *(k.value for k in arrays), **node.params))
    added = v.broadcast_to(targets.shape).reduce(targets.ravel(), shape)
    return Deps.elementwise(shape, [a, added], L)


# -- reductions ------------------------------------------------------------------------------------------
def _reduction(kind: Nonlinearity) -> Callable:
    def rule(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
        d = run.deps(ins[0])
        return d.reduce(groups(d.shape, tuple(node.params["axis"])), shape, kind)

    return rule


def _sum_to(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    d = run.deps(ins[0])
    groups = np.broadcast_to(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape), d.shape)
    return d.reduce(groups, shape)


def _prod_others(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    """Each element: the product of the others of its group (taken as all of its group)."""
    d = run.deps(ins[0])
    ids = groups(d.shape, tuple(node.params["axis"]))
    pooled = d.reduce(ids, (int(ids.max(initial=-1)) + 1,), B)
    return pooled.gather(ids)


def _cumsum(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    import scipy.sparse as sp

    d = run.deps(ins[0])
    axis = node.params["axis"]
    lines = np.moveaxis(np.arange(d.size).reshape(d.shape), axis, -1).reshape(-1, d.shape[axis])
    length = d.shape[axis]
    rows: np.ndarray | list[int] = (
        np.concatenate([np.repeat(lines[:, k], k + 1) for k in range(length)]) if length else []
    )
    cols: np.ndarray | list[int] = np.concatenate([lines[:, : k + 1].ravel() for k in range(length)]) if length else []
    members = sp.csr_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(d.size, d.size))
    return d.combine(members, shape, B if node.prim is CUMPROD else L)


# -- contractions ----------------------------------------------------------------------------------------
def _multilinear(run: _Run, ins: list, shape: tuple, terms: tuple | None) -> Deps:
    """A sum of products of one element of each operand: `terms` = (output index, (index into operand
    k, ...)) of every product whose known factors are nonzero (None: too many, taken as dense). Linear
    in each operand; pairs between the factors of a product."""
    import scipy.sparse as sp

    parts = [(k, v) for k, v in enumerate(ins) if isinstance(v, Deps)]
    if terms is None:
        return run.anywhere([v for _, v in parts], shape, N)
    out, index = terms
    q = int(np.prod(shape, dtype=np.int64))
    results = []
    for k, d in parts:
        members = sp.csr_array((np.ones(out.size, dtype=bool), (out, index[k])), shape=(q, d.size))
        results.append(d.combine(members, shape))
    if run.second:
        for i, (k, a) in enumerate(parts):
            for m, b in parts[i + 1 :]:
                both = Deps.elementwise((out.size,), [a.gather(index[k]), b.gather(index[m])], B)
                results.append(both.reduce(out, shape))
    return Deps.elementwise(shape, results, L) if results else run.constant(shape)


def _letter_terms(subscripts: str, ins: list, shape: tuple) -> tuple | None:
    """The terms (see `_multilinear`) of an einsum with explicit subscripts, from its index space."""
    lhs, rhs = subscripts.split("->")
    operands = lhs.split(",")
    sizes: dict[str, int] = {}
    for term, v in zip(operands, ins):
        for ch, s in zip(term, v.shape):
            sizes[ch] = s if sizes.get(ch, 1) == 1 else sizes[ch]  # 1 broadcasts, 0 gives no terms
    letters = "".join(sorted(sizes))
    space = tuple(sizes[ch] for ch in letters)
    if int(np.prod(space, dtype=np.int64)) > _TERMS_LIMIT:
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


def _einsum(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    return _multilinear(run, ins, shape, _letter_terms(node.params["subscripts"], ins, shape))


def _matmul(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    """matmul as an einsum (NumPy's 1-D promotion and batch broadcasting)."""
    na, nc = (len(v.shape) for v in ins)
    batch = "abcdefghijklmnopqrstuvw"[: max(na, nc, 2) - 2]
    a = "y" if na == 1 else batch[len(batch) - (na - 2) :] + "xy"
    c = "y" if nc == 1 else batch[len(batch) - (nc - 2) :] + "yz"
    out = batch + ("x" if na > 1 else "") + ("z" if nc > 1 else "")
    return _multilinear(run, ins, shape, _letter_terms(f"{a},{c}->{out}", ins, shape))


def _convolve(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    """The full convolution: out[p + q] sums a[p] c[q]."""
    where = [np.nonzero(np.ones(v.shape, dtype=bool) if isinstance(v, Deps) else np.asarray(v.value) != 0) for v in ins]
    pa, pc = where
    count_a, count_c = (p[0].size if p else 1 for p in where)
    if count_a * count_c > _TERMS_LIMIT:
        return _multilinear(run, ins, shape, None)
    ia = np.repeat(np.ravel_multi_index(pa, ins[0].shape), count_c) if pa else np.zeros(count_c, dtype=np.int64)
    ic = np.tile(np.ravel_multi_index(pc, ins[1].shape), count_a) if pc else np.zeros(count_a, dtype=np.int64)
    axes = [np.repeat(x, count_c) + np.tile(y, count_a) for x, y in zip(pa, pc)]
    out = np.ravel_multi_index(axes, shape).astype(np.int64) if axes else np.zeros(ia.size, dtype=np.int64)
    return _multilinear(run, ins, shape, (out, [ia.astype(np.int64), ic.astype(np.int64)]))


# -- linear algebra --------------------------------------------------------------------------------------
def _per_matrix(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    """Every output element of a matrix on every element of that matrix (and of the other operands'
    matching entries), nonlinearly; a stack of matrices kept apart where the batch axes line up."""
    parts = [v for v in ins if isinstance(v, Deps)]
    kind = N if isinstance(ins[0], Deps) else L  # solve with a known matrix: linear in the right-hand side
    rank = max(len(ins[0].shape) - 2, 0)
    batch = ins[0].shape[:rank]
    if not rank or tuple(shape[:rank]) != batch or any(p.shape[:rank] != batch for p in parts):
        return run.anywhere(parts, shape, kind)
    pooled = [p.reduce(groups(p.shape, tuple(range(rank, len(p.shape)))), batch, kind) for p in parts]
    merged = Deps.elementwise(batch, pooled, kind)
    lead = np.arange(merged.size).reshape(batch + (1,) * (len(shape) - rank))
    return merged.gather(np.broadcast_to(lead, shape))


_RULES: dict[Any, Callable] = {
    WHERE: _where,
    CLIP: _linear,
    RESHAPE: _move,
    TRANSPOSE: _move,
    BROADCAST_TO: _move,
    GETITEM: _move,
    SETITEM: _move,
    CONCATENATE: _move,
    ASTYPE: _astype,
    INDEX_ADD: _index_add,
    SUM: _reduction(L),
    AMAX: _reduction(L),
    AMIN: _reduction(L),
    PROD: _reduction(B),
    PROD_OTHERS: _prod_others,
    SUM_TO: _sum_to,
    CUMSUM: _cumsum,
    CUMPROD: _cumsum,
    MATMUL: _matmul,
    EINSUM: _einsum,
    CONVOLVE: _convolve,
    INV: _per_matrix,
    SOLVE: _per_matrix,
    BANDED_SOLVE: _per_matrix,
    DET: _per_matrix,
    LOGABSDET: _per_matrix,
    PINV: _per_matrix,
    **SPECTRAL_RULES,
}


def _rule(prim: Any) -> Callable | None:
    rule = _RULES.get(prim)
    if rule is None and isinstance(prim, Ufunc):
        return _elementwise
    if rule is None and isinstance(prim, _Part):
        return _per_matrix
    if rule is None and prim.dense_pattern:
        return _dense
    return rule


def _dense(run: _Run, node: Node, ins: list, shape: tuple) -> Deps:
    """Every output element on every element of the differentiated inputs (`Prim.dense_pattern`)."""
    nondiff = node.prim.nondiff
    parts = [v for i, v in enumerate(ins) if isinstance(v, Deps) and i not in nondiff]
    return run.anywhere(parts, shape, N)
