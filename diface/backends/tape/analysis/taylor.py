"""Taylor mode on the tape: truncated Taylor polynomials propagated through the recording, one pass per
batch of directions (`AutoTape.prepare_taylor`), and the collapsed second-order pass that carries one
summed second coefficient (`AutoTape.prepare_laplacian`, method "exact").

A prepared call replays the recording at x (the compiled forward replay, keeping every value the rules
read), then runs the plan: one step per node on the path from x to the output. A slot's coefficients
are one array `(R, *shape)`, its rows grouped by order (`Layout`): in Taylor mode K groups of B rows
(the normalized coefficients cₖ = dₖ / k! of each of the B directions), in collapsed mode n rows of
first coefficients (the directions: the basis of x) and one row holding Σᵢ c₂ of all of them. The
value (order 0) is the replay's, without a batch axis.

- linear operations (reshape, indexing, sums, concatenation, where, add, a product with a constant,
  ...) and piecewise-linear ones (abs, maximum, clip, max, remainder, ...) apply their JVP rule, taken
  at the replayed values, to all rows at once;
- bilinear ones (multiply, matmul, einsum, convolve of two traced operands) add the Cauchy cross terms
  Σᵢ P(aᵢ, bₖ₋ᵢ) (0 < i < k) to that;
- `inv` and `solve` of one square matrix: A(t) X(t) = C(t) gives Xₖ = A₀⁻¹ (Cₖ - Σⱼ Aⱼ Xₖ₋ⱼ); the
  banded solve of a constant matrix (a spline's system) is linear;
- elementwise functions (exp, log, sin, tanh, sqrt, power, divide, ...) follow the standard
  recurrences of Taylor arithmetic, written with one product `Algebra.mul`: in collapsed mode the
  product of two first coefficients is summed over the directions, so that the same recurrences give
  s₂ = f'(u) s₂(u) + f''(u)/2 Σᵢ (u₁ᵢ)² (normalized).

Each primitive says which of these it is, next to its JVP and VJP rules (`Prim.taylor`,
`Prim.taylor_step`, `Prim.taylor_cross`; the ufuncs' in `prims.partials`, their series rules written
with `prims.series`): this module holds the propagation (the plan, the coefficient layout, the products
of `Algebra`, the kernels and the fallback). A recording holding an operation without a rule (`prod`,
`det`, decompositions, special functions, complex values, ...) has no plan (`Plan.ok` False):
`AutoTape` then uses the core's derivation for the problem (nested pushforwards). Calls with traced
arrays (AutoTape differentiating what AutoTape computes) go to that derivation too.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...._kernel import Kernel, Result
from ...._problem import Problem, size_of
from ..data.graph import Tape
from ..prims.elementwise import Ufunc, has_nan, quiet, strong_multiply
from ..prims.series import NoSeries, add
from ..recording.record import Recording, record, recording_for, take_recording
from ..recording.replay import Replay, Replays, at_recorded_point, fresh, holds

__all__ = ["Algebra", "Layout", "NoSeries", "Plan", "TapeLaplacian", "TapeTaylor"]

#: coefficient rows times the largest slot a collapsed pass holds at once (the basis is chunked beyond)
CHUNK_BUDGET = 2**22


# -- coefficient layout and products -------------------------------------------------------------------------
class Layout:
    """Rows of a coefficient array by order: `sizes[k - 1]` rows for order k."""

    def __init__(self, sizes: tuple[int, ...]) -> None:
        self.sizes = sizes
        self.order = len(sizes)
        starts = [0]
        for s in sizes:
            starts.append(starts[-1] + s)
        self.rows = [slice(0, 0)] + [slice(starts[k], starts[k + 1]) for k in range(len(sizes))]
        self.total = starts[-1]


class Algebra:
    """Products of coefficients: `mul(i, a, j, b)` is the product of an order-i and an order-j
    coefficient (order 0: a value, no batch axis). In collapsed mode two first coefficients give
    their product summed over the directions (one row). `strong`: products are strong and a zero
    numerator gives a zero quotient (0 * inf := 0, 0 / 0 := 0: a zero series through a function at a
    pole, a branch of `where` not taken), taken when a pass's result holds a NaN (see `has_nan`)."""

    def __init__(self, collapsed: bool, strong: bool = False) -> None:
        self.collapsed = collapsed
        self.strong = strong

    def mul(self, i: int, a: Any, j: int, b: Any) -> Any:
        if a is None or b is None:
            return None
        if self.collapsed and i and j:
            return _pair_sum(a, b, self.strong)
        return strong_multiply(a, b) if self.strong else a * b

    def times(self, c: Any, t: Any) -> Any:
        """t * c (None: zero)."""
        if t is None:
            return None
        return strong_multiply(t, c) if self.strong else t * c

    def over(self, t: Any, d: Any) -> Any:
        """t / d (None: zero)."""
        if t is None:
            return None
        r = t / d
        if self.strong and has_nan(np.asarray(r)):
            r = np.where(np.equal(t, 0), 0.0, r)
        return r


def _pair_sum(a: Any, b: Any, strong: bool = False) -> Any:
    """Σ over the leading axis of a * b, keeping it as one row."""
    if strong:
        return np.sum(strong_multiply(a, b), axis=0, keepdims=True)
    if a.shape == b.shape and a.ndim >= 1:
        flat_a = a.reshape(a.shape[0], -1)
        return np.einsum("ij,ij->j", flat_a, b.reshape(flat_a.shape)).reshape((1, *a.shape[1:]))
    return np.sum(a * b, axis=0, keepdims=True)


# -- cross terms of bilinear operations on two batched operands -------------------------------------------------
def _cross(prim: Any, ins: tuple, pair: tuple[int, int], a: Any, b: Any, params: dict, alg: Algebra) -> Any:
    """P(a, b) of the bilinear `prim` in the operands `pair` (the others at their values), both with a
    leading batch axis; summed over it (one row) where `alg.collapsed`: the primitive's own
    (`Prim.taylor_cross`), else the elementwise product (multiply, aligned to the output's dimensions)."""
    r = prim.taylor_cross(ins, pair, a, b, params, alg.collapsed)
    if r is None:
        return _pair_sum(a, b, alg.strong) if alg.collapsed else alg.times(a, b)
    return r


# -- the plan: one step per node from x to the output ---------------------------------------------------------------
@dataclass(frozen=True)
class _Step:
    node: Any
    kind: str  # "linear", "bilinear", "series", "own" (see `Prim.taylor_step`)
    rule: Any
    #: slots whose coefficients die at this step
    dead: tuple


class Plan:
    """The Taylor steps of a tape (see the module docstring); `ok` False where some node on the path
    from x to the output has no rule (`reason` names it)."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        slots, nodes = tape.slots, tape.nodes
        order = tape.forward_nodes()
        self.ok = True
        self.reason = ""
        self.largest = max([size_of(slots[tape.x].shape)] + [size_of(slots[nodes[k].output].shape) for k in order])
        kinds: list[tuple[Any, str, Any]] = []
        active: set[int] = {tape.x}
        for k in order:
            node = nodes[k]
            prim = node.prim
            traced = [i for i, s in enumerate(node.inputs) if i not in prim.nondiff and s in active]
            active.add(node.output)
            kind = _kind(prim, traced, node, slots)
            if any(slots[s].dtype.kind == "c" for s in (node.output, *node.inputs) if s in active):
                kind = None
            if kind is None:
                self.ok, self.reason = False, prim.label()
                break
            kinds.append((node, *kind))
        last: dict[int, int] = {}
        for j, (node, _, _) in enumerate(kinds):
            for s in node.inputs:
                last[s] = j
        self.steps = [
            _Step(node, kind, rule, tuple(s for s in set(node.inputs) if last[s] == j and s != tape.output))
            for j, (node, kind, rule) in enumerate(kinds)
        ]
        #: the slots whose values the steps read (a replay keeps them)
        self.keep = tuple(sorted({s for st in self.steps for s in (*st.node.inputs, st.node.output)} | {tape.output}))

    def run(self, vals: list, seed: np.ndarray, layout: Layout, alg: Algebra, basis: tuple | None = None) -> Any:
        """The output's coefficients `(layout.total, *y_shape)` for x's `seed` (None: f does not depend
        on x), given every slot's value in `vals`. `basis` (lo, hi): the seed is e_lo .. e_{hi-1} and
        then zero rows (a product of a vector x with a matrix then takes the matrix's rows). A result
        holding a NaN is computed again with strong products (`Algebra.strong`)."""
        with quiet():  # the rules' factors at poles (1 / u₀ at u₀ = 0), multiplied by 0
            out = self._run(vals, seed, layout, alg, basis)
            if out is not None and not alg.strong and has_nan(out):
                out = self._run(vals, seed, layout, Algebra(alg.collapsed, strong=True), basis)
        return out

    def _run(self, vals: list, seed: np.ndarray, layout: Layout, alg: Algebra, basis: tuple | None) -> Any:
        tape = self.tape
        env: dict[int, Any] = {tape.x: seed}
        for step in self.steps:
            node = step.node
            r = _on_basis(step, vals, tape, layout, basis) if basis is not None else None
            env[node.output] = _apply(step, vals, env, layout, alg, self.tape.slots) if r is None else r
            for s in step.dead:
                env.pop(s, None)
        return env.get(tape.output)


def _kind(prim: Any, traced: list, node: Any, slots: list) -> tuple[str, Any] | None:
    return prim.taylor_step(traced, [slots[s].shape for s in node.inputs])


def _aligned(t: Any, ndim: int) -> Any:
    """A coefficient array (leading rows axis) with size-1 axes up to `ndim` trailing axes."""
    missing = ndim - (t.ndim - 1)
    return t if missing <= 0 else t.reshape((t.shape[0],) + (1,) * missing + t.shape[1:])


def _on_basis(step: _Step, vals: list, tape: Tape, layout: Layout, basis: tuple) -> Any:
    """The step's coefficients where x's are basis vectors then zeros, by the primitive's shortcut
    (`Prim.taylor_on_basis`: matmul takes rows of its other operand), or None (the step as usual)."""
    node = step.node
    if tape.x not in node.inputs:
        return None
    ins = tuple(vals[s] for s in node.inputs)
    return node.prim.taylor_on_basis(ins, tuple(s == tape.x for s in node.inputs), layout.total, basis)


def _apply(step: _Step, vals: list, env: dict, layout: Layout, alg: Algebra, slots: list) -> Any:
    node = step.node
    prim = node.prim
    out_slot = slots[node.output]
    full = (layout.total, *out_slot.shape)
    ins = tuple(vals[s] for s in node.inputs)
    y = vals[node.output]
    nondiff = prim.nondiff
    ts = tuple(None if i in nondiff else env.get(s) for i, s in enumerate(node.inputs))
    nd = len(out_slot.shape)
    if prim.elementwise:
        ts = tuple(None if t is None else _aligned(t, nd) for t in ts)
    if step.kind == "series":
        return _series(step.rule, ins, y, ts, layout, alg, full, out_slot.dtype, nd)
    if step.kind == "own":  # a rule over the coefficient arrays (inv, solve)
        return step.rule(ins, y, ts, layout, alg, full, out_slot.dtype)
    r = prim.taylor_linear(ins, ts) if step.kind == "linear" else None
    if r is None:
        if alg.strong and isinstance(prim, Ufunc):
            r = prim.jvp(ins, y, ts, 1, None, guard=True)
        else:
            r = prim.jvp(ins, y, ts, 1, None, **node.params)
    if step.kind == "bilinear":
        i, j = step.rule
        r = np.array(np.broadcast_to(r, full), dtype=np.result_type(r, out_slot.dtype))
        rows = layout.rows
        for k in range(2, layout.order + 1):
            for m in range(1, k):
                c = _cross(prim, ins, (i, j), ts[i][rows[m]], ts[j][rows[k - m]], node.params, alg)
                r[rows[k]] += c
        return r
    if np.shape(r) != full:
        r = np.broadcast_to(r, full)
    return r


def _series(
    rule: Callable, ins: tuple, y: Any, ts: tuple, layout: Layout, alg: Algebra, full: tuple, dtype: Any, nd: int
) -> Any:
    order, rows = layout.order, layout.rows
    us = []
    for v, t in zip(ins, ts):
        if t is None:
            us.append([v] + [None] * order)
        else:
            us.append([v] + [t[rows[k]] for k in range(1, order + 1)])
    traced = [i for i, t in enumerate(ts) if t is not None]
    if alg.collapsed and len(traced) == 1:
        ys = _collapsed_unary(rule, us, traced[0], y, alg)
    else:
        ys = rule(alg, us, y, order)
    out = np.empty(full, dtype)
    for k in range(1, order + 1):
        c = ys[k]
        if c is None:
            out[rows[k]] = 0
        else:
            out[rows[k]] = c
    return out


def _collapsed_unary(rule: Callable, us: list, i: int, y: Any, alg: Algebra) -> list:
    """The collapsed pass through a function of one traced input u: y₁ = f'(u) u₁ and
    y₂ = f'(u) s₂ + f''(u)/2 Σ u₁², f' and f''/2 being the rule's coefficients along a unit direction
    (computed without the batch)."""
    unit: list[list] = [[u[0], None, None] for u in us]
    unit[i][1] = 1.0
    d = rule(Algebra(False, alg.strong), unit, y, 2)
    u1, u2 = us[i][1], us[i][2]
    y1 = alg.times(d[1], u1)
    squares = _pair_sum(u1, u1)
    y2 = add((alg.times(d[1], u2), alg.times(d[2], squares)))
    return [y, y1, y2]


# -- kernels ----------------------------------------------------------------------------------------------------
@dataclass
class TaylorRecording(Recording):
    """A recording with its plan (the replay keeps the values the plan reads: `keep`)."""

    plan: Any = None


def _with_plan(rec: Recording, plan: Plan | None = None) -> TaylorRecording:
    if plan is None or plan.tape is not rec.tape:
        plan = Plan(rec.tape)
    return TaylorRecording(rec.tape, rec.statics, plan.keep if plan.ok else rec.keep, plan)


def plan_for(problem: Problem) -> Plan:
    """The plan of the problem's recording (made once, and kept with it for the kernel prepared next)."""
    plan = problem.memo.get(_MEMO)
    if plan is None:
        plan = problem.memo[_MEMO] = Plan(recording_for(problem).tape)
    return plan


_MEMO = "AutoTape Taylor plan"


class _TaylorKernel:
    """Records f at preparation (the recording `plan_for` made), replays it per call and runs its plan;
    calls with traced arrays, and recordings without a plan (made again for changed static contexts),
    go to `fallback()`, the core's derivation, made when first needed."""

    def __init__(self, problem: Problem, fallback: Callable[[], Kernel]) -> None:
        self.problem = problem
        self._fallback_factory = fallback
        self._fallback: Kernel | None = None
        self._lock = threading.Lock()
        self.compiled = not problem.single_use
        rec = _with_plan(take_recording(problem), problem.memo.pop(_MEMO, None))
        self.replays = Replays(rec, self._record, self._prime, self.compiled, problem.context_values)

    def _record(self, x: Any, cv: tuple, y: Any) -> Recording:
        return _with_plan(record(self.problem.f, x, self.problem.contexts, cv, y))

    def _prime(self, replay: Replay) -> Any:
        return None

    def copy(self) -> Any:
        """An independent kernel: the same recording and plan, buffers of its own."""
        twin = copy.copy(self)
        twin._lock = threading.Lock()
        twin._fallback = None
        twin.replays = self.replays.copy(self.compiled, twin._record, twin._prime)
        return twin

    def kernel(self) -> Kernel:
        """This kernel as the core takes it (copied with `copy`)."""
        return Kernel(self.run, copy=lambda: self.copy().kernel())

    def run(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        raise NotImplementedError

    def fallback(self) -> Kernel:
        with self._lock:
            if self._fallback is None:
                self._fallback = self._fallback_factory()
            return self._fallback

    def values(self, x: Any, cv: tuple, y: Any) -> tuple[Any, list, Any] | None:
        """(plan, every slot's value at x, f(x)'s buffer), or None where the recording has no plan."""
        if self.compiled:
            replay = self.replays.run(x, cv, y)
            rec = replay.rec
            vals = replay.fwd.bufs
        else:
            rec = self.replays.rec
            if not at_recorded_point(rec, x, cv):
                rec = self._record(x, cv, y)
            vals = rec.tape.values
        assert isinstance(rec, TaylorRecording)
        plan = rec.plan
        if not plan.ok:
            return None
        return plan, vals, vals[rec.tape.output]

    def value_of(self, output: Any, y: Any, full: bool) -> Any:
        if y is not None:
            np.copyto(y, output)
            return y
        return fresh(output) if full else None


class TapeTaylor(_TaylorKernel):
    """Taylor coefficients of `order` along a batch of directions (one pass per call)."""

    def __init__(self, problem: Problem, order: int, fallback: Callable[[], Kernel]) -> None:
        self.order = order
        y_shape, y_dtype = problem.y_spec
        self.y_shape = y_shape
        self.dtype = np.result_type(problem.x_dtype, y_dtype)
        super().__init__(problem, fallback)

    def run(self, x: Any, tangents: Any, cv: tuple, y: Any, full: bool) -> Result:
        if holds(x) or holds(tangents) or holds(cv):
            return self.fallback().run(x, tangents, cv, y, full)
        got = self.values(x, cv, y)
        if got is None:
            return self.fallback().run(x, tangents, cv, y, full)
        plan, vals, output = got
        b, order = len(tangents), self.order
        layout = Layout((b,) * order)
        x_slot = plan.tape.slots[plan.tape.x]
        seed = np.zeros((layout.total, *x_slot.shape), x_slot.dtype)
        for i, t in enumerate(tangents):
            seed[i] = t
        try:
            out = plan.run(vals, seed, layout, Algebra(False))
        except NoSeries:
            return self.fallback().run(x, tangents, cv, y, full)
        series = []
        for i in range(b):
            coefficients = []
            for k in range(1, order + 1):
                if out is None:
                    coefficients.append(np.zeros(self.y_shape, self.dtype))
                else:
                    c = out[layout.rows[k].start + i] * float(math.factorial(k))
                    coefficients.append(np.array(c, dtype=self.dtype, copy=True))
            series.append(tuple(coefficients))
        return Result(self.value_of(output, y, full), result=tuple(series))


class TapeLaplacian(_TaylorKernel):
    """The exact Laplacian by the collapsed pass: the basis of x as the first coefficients (in chunks),
    one summed second coefficient; the Jacobian from the first coefficients."""

    def __init__(self, problem: Problem, fallback: Callable[[], Kernel]) -> None:
        y_shape, y_dtype = problem.y_spec
        self.y_shape = y_shape
        self.x_shape = problem.x_shape
        self.dtype = np.result_type(problem.x_dtype, y_dtype)
        super().__init__(problem, fallback)

    def run(self, x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if holds(x) or holds(cv):
            return self.fallback().run(x, extra, cv, y, full)
        got = self.values(x, cv, y)
        if got is None:
            return self.fallback().run(x, extra, cv, y, full)
        plan, vals, output = got
        x_shape, y_shape = self.x_shape, self.y_shape
        n, m = size_of(x_shape), size_of(y_shape)
        lap = np.zeros(y_shape, self.dtype)
        jac = np.zeros((m, n), self.dtype) if full else None
        step = max(1, min(n, CHUNK_BUDGET // max(1, plan.largest)))
        x_dtype = plan.tape.slots[plan.tape.x].dtype
        alg = Algebra(True)
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            c = hi - lo
            layout = Layout((c, 1))
            seed = np.zeros((c + 1, n), x_dtype)
            seed[np.arange(c), np.arange(lo, hi)] = 1
            try:
                out = plan.run(vals, seed.reshape((c + 1, *x_shape)), layout, alg, (lo, hi))
            except NoSeries:
                return self.fallback().run(x, extra, cv, y, full)
            if out is None:
                continue
            lap += 2 * out[c]
            if jac is not None:
                jac[:, lo:hi] = np.reshape(out[:c], (c, m)).T
        if not full:
            return Result(result=lap)
        value = self.value_of(output, y, True)
        assert jac is not None
        return Result(value, jac.reshape(y_shape + x_shape), lap)
