"""`di.scan` and its schedules: the binomial (Revolve) and sqrt schedules simulated (every step reversed
once, in order; never more snapshots than allowed; the binomial's recomputation equal to Griewank and
Walther's bound, itself checked against the optimum by dynamic programming)."""

from __future__ import annotations

import functools

import pytest

from diface import ArgumentError
from diface._memory import schedule as sch


def simulate(schedule: list[sch.Action], n: int) -> tuple[int, int]:
    """Run `schedule` on indices: (peak snapshots alive, most advances of one step); asserts it is legal."""
    current: int | None = 0
    snaps: set[int] = set()
    reversed_: list[int] = []
    peak = 0
    advances = [0] * max(n, 1)
    for a in schedule:
        if a.kind == "save":
            assert current == a.step and a.step not in snaps
            snaps.add(a.step)
            peak = max(peak, len(snaps))
        elif a.kind == "restore":
            assert a.step in snaps
            current = a.step
        elif a.kind == "free":
            snaps.remove(a.step)
        elif a.kind == "advance":
            assert current is not None and a.step > current
            for j in range(current, a.step):
                advances[j] += 1
            current = a.step
        else:
            assert a.kind == "reverse" and current == a.step and a.count >= 1
            reversed_.extend(range(a.step + a.count - 1, a.step - 1, -1))
            current = None
    assert reversed_ == list(range(n - 1, -1, -1)) and not snaps
    return peak, max(advances)


@functools.cache
def optimum(n: int, s: int) -> int:
    """The fewest advanced steps, by dynamic programming over the first split."""
    if n <= 1:
        return 0
    if s == 1:
        return n * (n - 1) // 2
    return min(m + optimum(n - m, s - 1) + optimum(m, s) for m in range(1, n))


def test_binomial_schedule_is_legal_bounded_and_optimal():
    for n in range(61):
        for s in range(1, 9):
            schedule = sch.binomial(n, s)
            assert schedule == sch.actions(n, s)
            peak, most = simulate(schedule, n)
            assert peak <= s
            assert all(a.count == 1 for a in schedule if a.kind == "reverse")
            bound = sch.revolve_bound(n, s)
            assert sch.advanced_steps(schedule) == bound == optimum(n, s)
            if n:
                assert schedule[0] == sch.Action("save", 0)
                assert most == sch.repetition_number(n, s)
            if s >= n >= 1:
                assert bound == n - 1


def test_revolve_bound_closed_form():
    # r*n - C(s + r, r - 1); r the smallest with C(s + r, s) >= n; at the edges of the repetition number
    # ranges the bound is continuous (t is piecewise linear in n with slope r)
    assert [sch.revolve_bound(n, 2) for n in range(1, 8)] == [0, 1, 2, 4, 6, 8, 11]
    assert sch.revolve_bound(10, 3) == 15 and sch.repetition_number(10, 3) == 2
    assert sch.revolve_bound(1000, 10) == 4 * 1000 - 364  # C(13, 10) < 1000 <= C(14, 10), C(14, 3) = 364
    for s in (2, 5, 8):
        for n in range(2, 200):
            r = sch.repetition_number(n, s)
            assert sch.revolve_bound(n, s) - sch.revolve_bound(n - 1, s) == r


def test_sqrt_segments():
    for n in range(61):
        schedule = sch.sqrt_segments(n)
        assert schedule == sch.actions(n, "sqrt")
        peak, _ = simulate(schedule, n)
        if n:
            length = next(k for k in range(1, n + 1) if k * k >= n)  # ceil(sqrt(n))
            assert peak == -(-n // length)
            assert [a.count for a in schedule if a.kind == "reverse"][1:] == [length] * (peak - 1)
            assert sch.advanced_steps(schedule) == (peak - 1) * length


def test_schedule_arguments():
    assert sch.binomial(0, 3) == sch.sqrt_segments(0) == []
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ArgumentError, match="non-negative int"):
            sch.actions(bad, 2)  # type: ignore[arg-type]
    for bad in (0, -2, 1.0, "log", None, False):
        with pytest.raises(ArgumentError, match="checkpoints must be"):
            sch.actions(5, bad)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="positive int"):
        sch.revolve_bound(5, 0)
