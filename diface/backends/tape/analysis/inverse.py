"""AutoTape's inverse accumulation (`Backend.prepare_inverse_linearize`): J⁻¹v and J⁻ᵀv for a square
f, by the steps of its tape, without forming J.

Following Pearlmutter & Siskind ("Automatic Differentiation: Inverse Accumulation Mode"), a
computation of constant width n is a chain of steps x_t = f_t(x_{t-1}), each overwriting k of the n
values of the state with functions of the state, so J = J_T ⋯ J_1 with per-step blocks
[[A, B], [0, I]] (A: k x k, the new values against the overwritten ones; B: against the others),
whose inverses [[A⁻¹, -A⁻¹B], [0, I]] have the same sparsity. Hence

- J⁻¹ dy (`push`, reverse-inverse accumulation): from the output's tangent, walk the steps from
  last to first; each recovers the overwritten values' tangent dD = A⁻¹(dN - B dR) from the new
  values' dN and the passed-through dR (which a backward walk already knows). It needs the primal
  values of every step, so it runs after a forward replay: the tape's role in ordinary reverse mode.
- J⁻ᵀ dx (`pull`, forward-inverse accumulation): from x's cotangent, walk the steps from first to
  last; each makes the new values' cotangent N̄ = A⁻ᵀ D̄ and updates the passed-through ones,
  R̄ ← R̄ - Bᵀ N̄.

How the tape is cut into steps (lumps), which slots each overwrites, and how A is applied
(diagonal, permutation, or dense up to `MAX_DENSE` = 2048 elements) is `analysis.inverse_plan`. B is never
formed: B dR is the JVP of the lump's nodes from dR alone (D carrying no tangent), Bᵀ N̄ their VJP
onto R, both through the primitives' own rules on the replayed values, batched along a leading axis.
A diagonal A is the JVP of the (elementwise) main nodes of a ones seed, which for a diagonal map is
its diagonal; a dense one is formed by JVPs of basis vectors. A zero on A's diagonal or an LU pivot
negligible against the largest (relative 10·k·eps) raises `SingularError` naming the user's line of the
step; so does a structurally singular program (a width below n, or a new value that does not depend
on what it overwrites), at preparation.

Preparation records f, plans once, and compiles the forward replay per thread (`recording.replay.Replays`); a
call replays f into the thread's buffers, and the linearization it returns computes the per-step
factors of A on first use (the diagonals by compiled steps checked in one pass, dense blocks by basis
JVPs and LU), then runs the sweep compiled for the batch size (`analysis.inverse_steps`: fixed buffers of the
thread's replay, one NumPy call per step; a batch of one runs the unbatched sweep). Not covered: traced inputs
(second order through an inverse), and lumps larger than `MAX_DENSE` without structure (no plan:
the core falls back to dense or Krylov solves).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...._errors import NotSupportedError, SingularError
from ...._linearization import Linearization
from ...._problem import Problem
from ..data.graph import Tape
from ..recording.record import Recording, record, take_recording
from ..recording.replay import Replay, Replays, fresh, holds
from .inverse_plan import MAX_DENSE, Lump, Plan, Singular, plan_inverse
from .inverse_sites import singular, site
from .inverse_steps import Bound, Factors, PullSweep, PushSweep, bound, jvp_steps

try:  # LU factors reused by every product of a linearization; without SciPy, one solve per product
    from scipy.linalg import lu_factor
except ImportError:  # pragma: no cover - SciPy is optional
    lu_factor = None

__all__ = ["MAX_DENSE", "InverseLinearization", "TapeInverseLinearizer"]


class TapeInverseLinearizer:
    """`linearizer(x, cv, y) -> InverseLinearization` (see the module docstring). `plan` is None where
    the tape has no plan (then `AutoTape.prepare_inverse_linearize` returns None)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        rec = take_recording(problem)
        self._rec = rec
        try:
            self.plan: Plan | None = plan_inverse(rec.tape)
        except Singular as e:
            raise singular(problem, problem.x, problem.context_values, problem.y, e.node, e.why) from None
        if self.plan is None:
            return
        self.replays = Replays(rec, self._record, self._prime, not problem.single_use, problem.context_values)

    def _record(self, x: Any, cv: tuple, y: Any) -> Recording:
        return record(self.problem.f, x, self.problem.contexts, cv, y)

    def _prime(self, replay: Replay) -> Any:
        """The plan of the replay's recording (planned again for a recording made anew)."""
        if replay.rec is self._rec:
            return self.plan
        try:
            plan = plan_inverse(replay.rec.tape)
        except Singular as e:
            return e
        return plan

    def __call__(self, x: Any, cv: tuple, y: Any) -> InverseLinearization:
        if holds(x) or holds(cv):
            raise NotSupportedError(
                "AutoTape's inverse accumulation works on arrays, not traced values (an inverse product "
                "inside a function AutoTape differentiates); use method='dense' or 'krylov'"
            )
        replay = self.replays.run(x, cv, y)
        plan = replay.main
        if isinstance(plan, Singular):
            raise singular(self.problem, x, cv, y, plan.node, plan.why)
        if plan is None:
            raise NotSupportedError(
                "AutoTape: f recorded again (a static context changed) has no inverse-accumulation plan "
                f"(a step overwrites more than {MAX_DENSE} values at once); use method='dense' or 'krylov'"
            )
        if y is not None:
            np.copyto(y, replay.fwd.output)
        return InverseLinearization(replay, plan, y, lambda k: site(self.problem, x, cv, y, k))


class InverseLinearization(Linearization):
    """f linearized at one point, for J⁻¹ (`push`) and J⁻ᵀ (`pull`); reads its thread's replay buffers
    (valid until that thread linearizes the same preparation again)."""

    shareable = False

    def __init__(self, replay: Replay, plan: Plan, y: Any, site: Any) -> None:
        self.replay = replay
        self.plan = plan
        self.tape: Tape = replay.rec.tape
        self.bufs = replay.fwd.bufs
        self._value = y
        self._site = site
        self._dense: list[Any] | None = None  # the dense lumps' LU factors, once the factors are made
        slots = self.tape.slots
        self.dtype = np.result_type(slots[plan.x].dtype, slots[plan.output].dtype)
        key = ("inverse", id(plan))
        steps = replay.sweeps.get(key)
        if steps is None:  # the lumps' nodes bound to this replay's buffers, once per thread
            steps = replay.sweeps[key] = [
                (bound(self.tape, self.bufs, lump.coupled), bound(self.tape, self.bufs, lump.main))
                for lump in plan.lumps
            ]
        self._steps: list[tuple[list[Bound], list[Bound]]] = steps

    @property
    def value(self) -> Any:
        if self._value is None:
            self._value = fresh(self.replay.fwd.output)
        return self._value

    # -- the sweeps ------------------------------------------------------------------------------------
    def push(self, tangents: Any) -> Any:
        """Solve J dx = t for each row t (reverse-inverse accumulation: the steps from last to first)."""
        return self._run(PushSweep, tangents)

    def pull(self, cotangents: Any) -> Any:
        """Solve Jᵀ dy = c for each row c (forward-inverse accumulation: the steps from first to last)."""
        return self._run(PullSweep, cotangents)

    def _run(self, kind: type, v: Any) -> Any:
        """The compiled sweep of `kind` for v's batch (one vector: the unbatched sweep), run on v."""
        v = np.asarray(v, dtype=self.dtype)
        if not self.plan.lumps:
            return np.array(v, copy=True)
        dense = self._factors()
        lead = v.shape[:1]
        one = lead == (1,)
        key = ("inverse-sweep", id(self.plan), kind, () if one else lead)
        sweep = self.replay.sweeps.get(key)
        if sweep is None:
            coupled = [c for c, _m in self._steps]
            sweep = self.replay.sweeps[key] = kind(
                self.tape, self.plan, coupled, () if one else lead, self.dtype, self._diag()
            )
        np.copyto(sweep.seed, v[0] if one else v)
        r = sweep.run(dense)
        return np.array(r[None] if one else r, copy=True)

    # -- A, per lump -------------------------------------------------------------------------------------
    def _diag(self) -> Factors:
        """This thread's compiled diagonals of the "diag" lumps."""
        key = ("inverse-diag", id(self.plan))
        f = self.replay.sweeps.get(key)
        if f is None:
            mains = [m for _c, m in self._steps]
            f = self.replay.sweeps[key] = Factors(self.tape, self.bufs, self.plan, mains, self.dtype)
        return f

    def _factors(self) -> list:
        """A's factors at this point, made on first use: the diagonals (computed into this thread's
        buffers, checked), and the LU factors of the dense lumps (returned, by lump)."""
        if self._dense is not None:
            return self._dense
        bad = self._diag().run()
        if bad is not None:
            j, where, value = bad
            raise self._singular(
                self.plan.lumps[j],
                f"its derivative with respect to what it overwrites is {value} at element {where}",
            )
        dense: list[Any] = [None] * len(self.plan.lumps)
        slots = self.tape.slots
        for j, lump in enumerate(self.plan.lumps):
            if lump.kind != "dense":
                continue
            k = lump.size
            eye = np.eye(k, dtype=self.dtype)
            seeds = _split(eye, lump.dead, slots, (k,))
            cols = self._jvp_main(j, seeds, (k,))
            parts = [np.zeros((k, *slots[s].shape), self.dtype) if cols.get(s) is None else cols[s] for s in lump.new]
            a = _flat(parts, (k,)).T  # column i: the JVP of basis vector i
            f = _factorize(a)
            if f is None:
                raise self._singular(lump, f"its {k}x{k} block (new values against the values overwritten) is singular")
            dense[j] = f
        self._dense = dense
        return dense

    def _singular(self, lump: Lump, why: str) -> SingularError:
        return SingularError(
            f"J is singular at this x: the step at {self._site(lump.anchor)} cannot be inverted ({why}); "
            "inverse products need an invertible Jacobian"
        )

    def _jvp_main(self, j: int, tangents: dict, lead: tuple) -> dict:
        """The JVP of lump j's main nodes, compiled per batch size on first use into steps over buffers
        of this thread's replay (results are those buffers: use them at once)."""
        key = ("inverse-jvp", id(self.plan), j, lead)
        sweep = self.replay.sweeps.get(key)
        if sweep is None:
            lump = self.plan.lumps[j]
            sweep = self.replay.sweeps[key] = _Jvp(self._steps[j][1], tuple(tangents), lump.new, lead)
        return sweep.run(tangents)


class _Jvp:
    """A lump's JVP as zero-argument steps over fixed buffers: the seeds are copied in, the tangents of
    `wanted` slots come out."""

    def __init__(self, order: list[Bound], seeded: tuple, wanted: tuple, lead: tuple) -> None:
        tan: dict[int, Any] = {}
        self.seeds = []
        for s in seeded:
            shape = next(
                (sh for _p, _i, _y, _q, ins, _d, _o, _s, shapes in order for t, sh in zip(ins, shapes) if t == s), None
            )
            if shape is None:
                continue
            buf = tan[s] = np.empty(lead + shape, _dtype_of(order, s))
            self.seeds.append((s, buf))
        self.steps = jvp_steps(order, tan, lead, views=False)
        self.results = tuple((s, tan.get(s)) for s in wanted)

    def run(self, tangents: dict) -> dict:
        for s, buf in self.seeds:
            np.copyto(buf, tangents[s])
        for step in self.steps:
            step()
        return {s: r for s, r in self.results if r is not None}


def _dtype_of(order: list[Bound], s: int) -> Any:
    for _p, ins, _y, _q, inputs, _d, _o, _s, _shapes in order:
        for buf, t in zip(ins, inputs):
            if t == s:
                return buf.dtype
    return np.float64


def _flat(parts: list, lead: tuple) -> np.ndarray:
    """Batched slot values flattened and concatenated: shape (*lead, total)."""
    if len(parts) == 1:
        return np.reshape(parts[0], (*lead, -1))
    return np.concatenate([np.reshape(p, (*lead, -1)) for p in parts], axis=-1)


def _split(flat: np.ndarray, which: tuple, slots: list, lead: tuple) -> dict:
    """The inverse of `_flat`: {slot: its part, in its shape}."""
    out = {}
    offset = 0
    for s in which:
        shape = slots[s].shape
        m = int(np.prod(shape, dtype=np.int64)) if shape else 1
        out[s] = flat[..., offset : offset + m].reshape(*lead, *shape)
        offset += m
    return out


def _factorize(a: np.ndarray) -> Any:
    """LU factors of a (or a itself without SciPy); None when a is numerically singular."""
    k = a.shape[0]
    if not np.all(np.isfinite(a)):
        return None
    if lu_factor is None:
        u = np.linalg.qr(a, mode="r")
        d = np.abs(np.diag(u))
        return None if k and d.min() <= 10 * k * np.finfo(a.dtype).eps * d.max() else ("a", np.array(a, copy=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lu, piv = lu_factor(a, check_finite=False)
    d = np.abs(np.diag(lu))
    if k and (d.max() == 0 or d.min() <= 10 * k * np.finfo(a.dtype).eps * d.max()):
        return None
    return ("lu", (lu, piv))
