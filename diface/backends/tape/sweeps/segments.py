"""Sweeps within a memory budget: the tape cut into segments, a few snapshots, and each segment
recomputed from the snapshot before it when the reverse sweep reaches it.

A segment is a stretch of the tape's live nodes; its cut is the set of computed values alive across
its start (written before it, read in it or later, or the output): a snapshot is a cut's values. The
cuts are chosen where few bytes cross (between the steps of a loop, only the carry does), so that no
segment computes more than about a quarter of the budget and the snapshots fill most of the rest. The
order of recomputation is a schedule of `diface._memory.schedule`: binomial (Revolve) where the
snapshots are fewer than the segments, which is the fewest recomputations for that many snapshots.
Where `di.checkpoint` or `di.scan` marked the recording, the marks are the cuts instead (`mark_plan`).

The sweeps run on values as `sweeps.interpret` does (allocating as they go), letting go of every value
after its last reader: the forward-mode sweep (`Segmented.push`) needs no snapshot at all. A reverse
sweep over B cotangents keeps B adjoint states (the cotangents of a cut); one over traced values
(second order) is not segmented (see `kernels.bounded`).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...._errors import ArgumentError
from ...._memory.schedule import Action, actions, advanced_steps
from ..data.graph import GUARD_OUTPUT, Tape
from ..data.sites import recording_rule
from ..prims.elementwise import has_nan, quiet
from .interpret import pull, push

__all__ = ["Plan", "Segmented", "budget_plan", "mark_plan", "recording_bytes", "stream_plan", "unbounded_bytes"]


@dataclass(frozen=True)
class Plan:
    """Where the tape is cut and in which order the segments are recomputed.

    order: the live nodes, in order; bounds: the segments as positions in `order` (0 first, len(order)
    last); cuts: the computed slots alive across each bound; keep: per segment, whether the first
    forward pass keeps its values for the reverse sweep (a stretch `di.checkpoint` did not mark);
    schedule: the actions over the segments (None: every segment's values kept, no recomputation);
    snapshots: the most snapshots alive at once; peak_bytes: the most bytes of values, snapshots and
    cotangents held at once (estimated from the recording's shapes).
    """

    order: tuple[int, ...]
    bounds: tuple[int, ...]
    cuts: tuple[tuple[int, ...], ...]
    keep: tuple[bool, ...]
    schedule: tuple[Action, ...]
    snapshots: int
    peak_bytes: int
    budget: int | None

    @property
    def segments(self) -> int:
        return len(self.bounds) - 1

    @property
    def recomputation(self) -> float:
        """Forward runs of the tape per reverse sweep, counting the one the reverse sweep needs (1: no
        recomputation)."""
        return (advanced_steps(list(self.schedule)) + self.segments) / max(self.segments, 1)


def _nbytes(tape: Tape, s: int) -> int:
    slot = tape.slots[s]
    return 8 if slot.weak else int(np.prod(slot.shape, dtype=np.int64)) * slot.dtype.itemsize


def last_readers(tape: Tape, order: Any) -> list[int]:
    """Per slot, the position in `order` of the last node reading it (-1: none; the output: past the end)."""
    last = [-1] * len(tape.slots)
    nodes = tape.nodes
    for p, k in enumerate(order):
        for s in nodes[k].inputs:
            last[s] = p
    last[tape.output] = len(order)
    return last


class _Liveness:
    """Per live node: the bytes it computes, and per position between nodes the bytes alive across."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        order = tape.live_nodes()
        nodes, slots = tape.nodes, tape.slots
        last = last_readers(tape, order)
        # byte counts as machine integers: a recording of a long loop has millions of nodes
        computed = array("q", bytes(8 * len(order)))
        across = array("q", bytes(8 * (len(order) + 1)))
        alive = 0
        for p, k in enumerate(order):
            across[p] = alive
            out = nodes[k].output
            if out != GUARD_OUTPUT:
                computed[p] = _nbytes(tape, out)
                if last[out] > p:
                    alive += computed[p]
            for s in set(nodes[k].inputs):
                if last[s] == p and slots[s].kind == "node":
                    alive -= _nbytes(tape, s)
        across[len(order)] = alive
        self.order, self.last, self.computed, self.across = order, last, computed, across

    def cuts(self, bounds: list[int]) -> tuple[tuple[int, ...], ...]:
        """The computed slots alive across each of the (increasing) positions `bounds`, in one pass."""
        nodes, slots, last = self.tape.nodes, self.tape.slots, self.last
        alive: dict[int, None] = {}  # in order of production
        cuts = []
        j = 0
        for b in bounds:
            while j < b:
                out = nodes[self.order[j]].output
                if out != GUARD_OUTPUT and slots[out].kind == "node" and last[out] > j:
                    alive[out] = None
                for s in nodes[self.order[j]].inputs:
                    if last[s] == j:
                        alive.pop(s, None)
                j += 1
            cuts.append(tuple(alive))
        return tuple(cuts)


#: bytes per recorded operation of the recording's own structure (its node, slot and indices as Python
#: objects: about 420) and of the segmented sweeps' tables (about 140), measured with tracemalloc on a
#: recorded loop
_PER_NODE = 560


def recording_bytes(tape: Tape) -> int:
    """About what the recording's own structure holds, besides the values (`_PER_NODE`)."""
    return _PER_NODE * len(tape.nodes)


def unbounded_bytes(tape: Tape) -> int:
    """What a reverse sweep keeping every value holds at most: the recording, the values its rules read,
    and about as many cotangents."""
    return recording_bytes(tape) + 2 * sum(_nbytes(tape, s) for s in tape.saved_slots()) + 2 * _nbytes(tape, tape.x)


def budget_plan(tape: Tape, budget: int) -> Plan:
    """Segments of at most about a quarter of `budget` each, cut where the fewest bytes cross, and the
    binomial schedule over as many snapshots as the rest of the budget holds."""
    structure = recording_bytes(tape)
    if 4 * structure >= 3 * budget:
        raise ArgumentError(
            f"AutoTape(memory={budget}): the recording of f alone holds about {_size(structure)} "
            f"({len(tape.nodes)} operations); raise memory= to at least {_size(2 * structure)}, or record fewer "
            "operations (whole-array operations instead of loops over elements)"
        )
    budget -= structure
    live = _Liveness(tape)
    n = len(live.order)
    limit = max(budget // 4, 1)
    prefix = [0]
    for c in live.computed:
        prefix.append(prefix[-1] + c)
    bounds = [0]
    best = -1
    for p in range(n):
        start = bounds[-1]
        q = p + 1  # a cut after node p
        if q < n and prefix[q] - prefix[start] >= limit // 2 and (best < 0 or live.across[q] <= live.across[best]):
            best = q
        if prefix[q] - prefix[start] >= limit and best > start:
            bounds.append(best)
            best = -1
    if bounds[-1] != n or n == 0:
        bounds.append(n)
    m = len(bounds) - 1
    cut_bytes, work = _work(live, bounds)
    largest = max(work, default=0)
    if largest > budget:
        raise ArgumentError(
            f"AutoTape(memory={budget + structure}): one step of f needs about {_size(largest)} at once (its "
            f"values and their cotangents) besides the recording's {_size(structure)}, more than the budget; "
            f"raise memory= to at least {_size(largest + 2 * structure)}"
        )
    snapshot = max(cut_bytes[1:-1], default=0)
    s = m if snapshot == 0 else max(1, min(m, 1 + (budget - largest) // snapshot))
    schedule = tuple(actions(m, s)) if m else ()
    return _plan(live, bounds, (False,) * m, schedule, budget + structure, structure)


def stream_plan(tape: Tape) -> Plan:
    """The forward-mode plan: one segment, streamed (each value and tangent let go after its last reader),
    no schedule; its peak, the recording and the most values (and as many tangents) alive at once."""
    live = _Liveness(tape)
    n = len(live.order)
    peak = recording_bytes(tape) + 2 * max(live.across, default=0)
    return Plan(tuple(live.order), (0, n), ((), live.cuts([n])[0]), (False,), (), 0, peak, None)


def mark_plan(tape: Tape) -> Plan | None:
    """The plan of what `di.checkpoint` and `di.scan` marked (the outermost marks; None if none): a
    checkpointed call is a segment recomputed from its inputs, a scan's steps are segments on the scan's
    schedule, and the stretches between them keep their values."""
    if not tape.marks:
        return None
    live = _Liveness(tape)
    position = {k: p for p, k in enumerate(live.order)}

    def at(node: int) -> int:  # the first live position at or after a node index
        while node < len(tape.nodes) and node not in position:
            node += 1
        return position.get(node, len(live.order))

    outer: list[tuple[str, int, int, Any]] = []
    for mark in sorted(tape.marks, key=lambda m: (m[1], -m[2])):
        if outer and mark[1] < outer[-1][2]:
            continue  # inside a mark already taken
        outer.append(mark)
    bounds = [0]
    keep: list[bool] = []
    groups: list[tuple[int, int, Any]] = []  # (first segment, segments, checkpoints spec) of each scan
    for kind, lo, hi, detail in outer:
        a, b = at(lo), at(hi)
        if a > bounds[-1]:
            bounds.append(a)
            keep.append(True)
        if kind == "checkpoint":
            if b > bounds[-1]:
                bounds.append(b)
                keep.append(False)
            continue
        steps, spec = detail  # a scan: the node index where each step starts
        first = len(keep)
        for start in [*steps[1:], hi]:
            s = at(start)
            if s > bounds[-1]:
                bounds.append(s)
                keep.append(spec is None)
        groups.append((first, len(keep) - first, spec))
    if bounds[-1] < len(live.order):
        bounds.append(len(live.order))
        keep.append(True)
    return _plan(live, bounds, tuple(keep), tuple(_marked_schedule(len(bounds) - 1, tuple(keep), groups)), None)


def _work(live: _Liveness, bounds: list[int]) -> tuple[list[int], list[int]]:
    """The bytes alive across each bound, and what reversing each segment holds at once (its values,
    about as many cotangents, and the cuts at its ends)."""
    cut_bytes = [live.across[b] for b in bounds]
    work = [
        2 * sum(live.computed[bounds[i] : bounds[i + 1]]) + cut_bytes[i] + cut_bytes[i + 1]
        for i in range(len(bounds) - 1)
    ]
    return cut_bytes, work


def _plan(
    live: _Liveness,
    bounds: list[int],
    keep: tuple[bool, ...],
    schedule: tuple[Action, ...],
    budget: int | None,
    structure: int = 0,
) -> Plan:
    """The plan of these segments on this schedule; `structure`: the recording's own bytes, in the peak."""
    cut_bytes, work = _work(live, bounds)
    peak = structure + _peak(schedule, work, cut_bytes, keep, live, bounds)
    return Plan(
        tuple(live.order), tuple(bounds), live.cuts(bounds), keep, schedule, _most_alive(schedule), peak, budget
    )


def _marked_schedule(m: int, keep: tuple[bool, ...], groups: list) -> list[Action]:
    """The first pass forward, then the segments in reverse: a checkpointed segment from a snapshot of its
    start, a kept one from its values; a scan with a checkpoints spec on that scan's schedule over its
    steps (its part up to the first reverse in the first pass, the rest after the segments behind it)."""
    inside = {first: (count, spec) for first, count, spec in groups if spec is not None and count > 1}
    forward: list[Action] = []
    backward: list[list[Action]] = []
    i = 0
    while i < m:
        if i in inside:
            count, spec = inside[i]
            sub = [Action(a.kind, a.step + i, a.count) for a in actions(count, spec)]
            first_reverse = next(j for j, a in enumerate(sub) if a.kind == "reverse")
            alive = _alive_after(sub[:first_reverse])
            end = sub[first_reverse].step  # the state the scan's first reverse starts from
            forward += sub[:first_reverse]
            extra = end not in alive
            if extra:
                forward.append(Action("save", end))
            forward.append(Action("advance", i + count))
            back = [Action("restore", end), *sub[first_reverse:]]
            back += [Action("free", k) for k in sorted(_alive_after(back, alive | {end}))]
            backward.append(back)
            i += count
        elif keep[i]:
            forward.append(Action("advance", i + 1))
            backward.append([Action("reverse", i)])
            i += 1
        else:
            forward += [Action("save", i), Action("advance", i + 1)]
            backward.append([Action("restore", i), Action("reverse", i), Action("free", i)])
            i += 1
    out = forward
    for part in reversed(backward):
        out += part
    return out


def _alive_after(schedule: list[Action], alive: set[int] | None = None) -> set[int]:
    alive = set() if alive is None else set(alive)
    for a in schedule:
        if a.kind == "save":
            alive.add(a.step)
        elif a.kind == "free":
            alive.discard(a.step)
    return alive


def _most_alive(schedule: tuple[Action, ...]) -> int:
    alive = most = 0
    for a in schedule:
        if a.kind == "save":
            alive += 1
            most = max(most, alive)
        elif a.kind == "free":
            alive -= 1
    return most


def _peak(schedule: Any, work: list[int], cut_bytes: list[int], keep: tuple, live: _Liveness, bounds: list) -> int:
    """The most bytes held at once by the schedule: snapshots alive, kept segments' values, and the
    working set of the segment being run."""
    snaps: dict[int, int] = {}
    kept = 0
    peak = 0
    for a in schedule:
        if a.kind == "save":
            snaps[a.step] = cut_bytes[a.step]
        elif a.kind == "free":
            snaps.pop(a.step, None)
        elif a.kind == "advance":
            for i in range(a.step):
                if keep[i]:
                    kept = max(kept, sum(live.computed[bounds[i] : bounds[i + 1]]))
            peak = max(peak, sum(snaps.values()) + kept + max(cut_bytes[: a.step + 1], default=0))
        elif a.kind == "reverse":
            peak = max(peak, sum(snaps.values()) + kept + sum(work[a.step : a.step + a.count]))
    return peak


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


class Segmented:
    """The sweeps of one tape on one plan (stateless between calls: one may serve many threads)."""

    def __init__(self, tape: Tape, plan: Plan) -> None:
        self.tape, self.plan = tape, plan
        nodes, slots = tape.nodes, tape.slots
        order = plan.order
        reverse = set(tape.reverse_nodes())
        self.pulls = tuple(k in reverse for k in order)
        self.computed = tuple(slots[s].kind == "node" for s in range(len(slots)))
        #: computed by a segment whose values the reverse sweep recomputes (the others' are kept)
        volatile = [False] * len(slots)
        for i in range(plan.segments):
            if not plan.keep[i]:
                for p in range(plan.bounds[i], plan.bounds[i + 1]):
                    if nodes[order[p]].output != GUARD_OUTPUT:
                        volatile[nodes[order[p]].output] = True
        self.volatile = tuple(volatile)
        self._volatile_slots = tuple(s for s, v in enumerate(volatile) if v)
        self._stepped: tuple | None = None
        self._streamed: tuple | None = None
        self._steps(False)  # made now: a call only runs them

    # -- the environment -------------------------------------------------------------------------------
    def env(self, x: Any, cv: tuple) -> list:
        """Inputs and literals set, computed slots empty."""
        tape = self.tape
        computed = self.computed
        env = [None if computed[s] else v for s, v in enumerate(tape.values)]
        env[tape.x] = x
        for s, _kind, ci, path in tape.inputs:
            v = cv[ci]
            for key in path:
                v = v[key]
            env[s] = v
        return env

    def _steps(self, streamed: bool) -> tuple:
        """Per live node, the slots to let go after it: the inputs it reads last and a dead output (in
        reverse mode only values the reverse sweep recomputes; `streamed`: every computed value)."""
        cached = self._streamed if streamed else self._stepped
        if cached is not None:
            return cached
        tape = self.tape
        nodes, order = tape.nodes, self.plan.order
        last = last_readers(tape, order)
        let_go = self.computed if streamed else self.volatile
        output = tape.output
        steps = []
        for p, k in enumerate(order):
            node = nodes[k]
            out = node.output
            dies = [s for s in set(node.inputs) if let_go[s] and last[s] == p and s != output]
            if out != GUARD_OUTPUT and let_go[out] and last[out] <= p and out != output:
                dies.append(out)
            steps.append(tuple(dies) if dies else ())  # the empty tuple is shared
        result = tuple(steps)
        if streamed:
            self._streamed = result
        else:
            self._stepped = result
        return result

    def _run(
        self,
        env: list,
        lo: int,
        hi: int,
        keep: bool,
        tangents: dict | None = None,
        strong: Any = False,
        traced: bool = False,
    ) -> None:
        """Run the live nodes at positions lo .. hi - 1 (with tangents: the forward-mode sweep too),
        letting go of each value after its last reader unless `keep` (in reverse mode, of the values the
        reverse sweep recomputes; in forward mode, of every computed value); `traced`: on traced values
        (recording what it runs on another tape)."""
        tape = self.tape
        nodes, order = tape.nodes, self.plan.order
        steps = self._steps(tangents is not None)
        for p in range(lo, hi):
            k = order[p]
            node = nodes[k]
            out = node.output
            prim = node.prim
            r = (prim if traced else prim.forward)(*[env[s] for s in node.inputs], **node.params)
            if out != GUARD_OUTPUT:
                env[out] = r if traced or isinstance(r, np.ndarray) else np.asarray(r)
                if tangents is not None:
                    push(tape, env, k, tangents, strong if isinstance(strong, bool) else k in strong, traced)
            if keep:
                continue
            for s in steps[p]:
                env[s] = None
                if tangents is not None:
                    tangents.pop(s, None)

    # -- forward mode ----------------------------------------------------------------------------------
    def push(self, x: Any, cv: tuple, tangents: list) -> tuple[Any, list]:
        """f's value and the output tangent of each x tangent: one pass per tangent, no snapshots."""
        tape = self.tape
        value = None
        results = []
        with quiet():
            for t in tangents or [None]:
                env = self.env(x, cv)
                ts: dict[int, Any] = {} if t is None else {tape.x: t}
                self._run(env, 0, len(self.plan.order), False, ts)
                value = env[tape.output]
                if t is not None:
                    r = ts.get(tape.output)
                    if r is not None and has_nan(np.asarray(r)) and tape.unbounded():
                        ts = {tape.x: t}
                        self._run(self.env(x, cv), 0, len(self.plan.order), False, ts, strong=True)
                        r = ts.get(tape.output)
                    results.append(r)
        return value, results

    def push_traced(self, env: list, tangent: Any) -> Any:
        """The output tangent for x's `tangent`, run on traced values in `env` (`env`), streaming: what it
        records on the traced values' tape holds each value only until its last reader. Products that
        may meet an infinity are recorded strong (`Tape.guarded`)."""
        ts: dict[int, Any] = {self.tape.x: tangent}
        strong = self.tape.guarded(list(self.plan.order), reverse=False)
        try:
            self._run(env, 0, len(self.plan.order), False, ts, strong, traced=True)
        finally:
            recording_rule(None)
        return ts.get(self.tape.output)

    # -- reverse mode ----------------------------------------------------------------------------------
    def pull(self, x: Any, cv: tuple, seeds: list) -> tuple[Any, list]:
        """f's value and the cotangent of x for each output cotangent in `seeds`, on the plan's schedule;
        again with strong products throughout if a result holds a NaN (where the tape may meet one)."""
        with quiet():
            value, results = self._pull(x, cv, seeds, False)
            if self.tape.unbounded() and any(r is not None and has_nan(np.asarray(r)) for r in results):
                value, results = self._pull(x, cv, seeds, True)
        return value, results

    def _pull(self, x: Any, cv: tuple, seeds: list, strong: bool) -> tuple[Any, list]:
        tape, plan = self.tape, self.plan
        bounds, cuts = plan.bounds, plan.cuts
        env = self.env(x, cv)
        adjoints: list[dict[int, Any]] = [{tape.output: s} for s in seeds]
        snaps: dict[int, dict[int, Any]] = {}
        value = env[tape.output]  # an input or a literal, else computed by a reverse below
        current = 0
        for a in plan.schedule:
            kind = a.kind
            if kind == "save":
                snaps[a.step] = {s: env[s] for s in cuts[a.step]}
            elif kind == "restore":
                self._clear(env)
                for s, v in snaps[a.step].items():
                    env[s] = v
                current = a.step
            elif kind == "free":
                del snaps[a.step]
            elif kind == "advance":
                for i in range(current, a.step):
                    self._run(env, bounds[i], bounds[i + 1], plan.keep[i])
                current = a.step
            else:  # reverse
                lo, hi = bounds[a.step], bounds[a.step + a.count]
                if not all(plan.keep[a.step : a.step + a.count]):
                    self._run(env, lo, hi, True)
                self._reverse(env, lo, hi, adjoints, strong)
                if env[tape.output] is not None:  # before a restore lets go of it
                    value = env[tape.output]
        return value, [adj.get(tape.x) for adj in adjoints]

    def _clear(self, env: list) -> None:
        """Let go of every value the reverse sweep recomputes (before a restore)."""
        for s in self._volatile_slots:
            env[s] = None

    def _reverse(self, env: list, lo: int, hi: int, adjoints: list, strong: bool) -> None:
        """Pull every adjoint state back through positions hi - 1 .. lo, then let go of their values (f's
        output excepted)."""
        tape = self.tape
        nodes, order, pulls = tape.nodes, self.plan.order, self.pulls
        output = tape.output
        for p in range(hi - 1, lo - 1, -1):
            if not pulls[p]:
                continue
            k = order[p]
            for adj in adjoints:
                pull(tape, env, k, adj, strong)
                adj.pop(nodes[k].output, None)
        for p in range(lo, hi):
            out = nodes[order[p]].output
            if out != GUARD_OUTPUT and out != output:
                env[out] = None
