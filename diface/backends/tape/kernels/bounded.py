"""AutoTape within a memory budget, and what `di.checkpoint` and `di.scan` mark: the first-order kernels'
sweeps on a segmented plan (`sweeps.segments`) instead of the compiled replay that keeps every value.

`AutoTape(memory=...)` records f leanly (a value is let go once no traced array holds it: see
`Tape.lean`) and, where a reverse sweep keeping every value would need more than the budget, cuts the
tape into segments recomputed on a binomial schedule; where it would not, the kernels compile as
usual. Forward-mode kernels of a budgeted tape stream (each value let go after its last reader).
Marks of `di.checkpoint`/`di.scan` make the reverse kernels of any AutoTape segmented as marked.
`MemoryReport` says what was chosen (`prep.report`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..recording.record import Recording
from ..sweeps.segments import Plan, Segmented, budget_plan, mark_plan, stream_plan, unbounded_bytes

__all__ = ["MemoryReport", "bounded_for", "report_of"]


@dataclass(frozen=True)
class MemoryReport:
    """What AutoTape chose for a preparation's sweeps.

    Attributes:
        budget: the bytes `AutoTape(memory=...)` allows (None: no budget; the marks of `di.checkpoint`
            and `di.scan` decide).
        strategy: "all values kept" (the compiled replay: it fits, or nothing asks for less),
            "binomial" (segments on the binomial schedule within the budget), "streamed" (forward
            mode: every value let go after its last reader) or "marked" (as `di.checkpoint`/`di.scan`
            marked f).
        segments: how many stretches of the tape are recomputed apart (1: none).
        snapshots: the most snapshots held at once.
        recomputation: forward runs of the tape per reverse sweep (1.0: none repeated).
        peak_bytes: the most bytes of values, snapshots and cotangents held at once (estimated from the
            recording's shapes).
        unbounded_bytes: what keeping every value would hold (the same estimate).
    """

    budget: int | None
    strategy: str
    segments: int
    snapshots: int
    recomputation: float
    peak_bytes: int
    unbounded_bytes: int

    def __str__(self) -> str:
        budget = "no budget" if self.budget is None else f"budget {self.budget / 1e6:.4g} MB"
        return (
            f"AutoTape sweeps ({budget}): {self.strategy}; {self.segments} segment(s), {self.snapshots} "
            f"snapshot(s) at most, {self.recomputation:.3g} forward run(s) per reverse sweep, peak about "
            f"{self.peak_bytes / 1e6:.4g} MB (every value kept: about {self.unbounded_bytes / 1e6:.4g} MB)"
        )


def report_of(plan: Plan | None, rec: Recording, budget: int | None, reverse: bool) -> MemoryReport:
    full = unbounded_bytes(rec.tape)
    if plan is None:
        return MemoryReport(budget, "all values kept", 1, 0, 1.0, full, full)
    if not reverse:
        return MemoryReport(budget, "streamed", 1, 0, 1.0, plan.peak_bytes, full)
    strategy = "binomial" if plan.budget is not None else "marked"
    return MemoryReport(budget, strategy, plan.segments, plan.snapshots, plan.recomputation, plan.peak_bytes, full)


def bounded_for(rec: Recording, budget: int | None, reverse: bool, single_use: bool) -> Segmented | None:
    """The segmented sweeps a kernel runs for this recording, or None where it compiles its replay (no
    budget and no marks, or a reverse sweep keeping every value fits the budget)."""
    tape = rec.tape
    plan: Plan | None
    if budget is None:
        plan = mark_plan(tape) if reverse else None
    elif not single_use and unbounded_bytes(tape) <= budget and not tape.marks:
        plan = None
    else:  # forward mode streams: no segments to cut, nothing the budget could refuse
        plan = budget_plan(tape, budget) if reverse else stream_plan(tape)
    if plan is None:
        return None
    tape.release_values()  # the segments recompute what they read; the recording keeps inputs and literals
    return Segmented(tape, plan)
