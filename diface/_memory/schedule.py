"""Checkpointing schedules for reversing a loop of `n` steps whose length is known in advance.

A schedule is a list of `Action`s acting on a *current state* (initially the state before step 0,
index 0) and a set of *snapshots*:

- `advance(step=j)`: run steps current..j-1 without keeping their intermediates; current becomes j;
- `save(step=i)`: keep the current state (which is state i) as snapshot i;
- `restore(step=i)`: current := snapshot i;
- `free(step=i)`: drop snapshot i;
- `reverse(step=i, count=k)`: current is state i: run steps i..i+k-1 keeping their intermediates and
  pull the adjoint of state i+k back to state i; afterwards current is undefined (a `restore` follows,
  unless the schedule is finished).

Every schedule starts with `save(0)`, reverses every step exactly once, from the last to the first, and
ends with every snapshot freed. `binomial(n, s)` is Griewank and Walther's Revolve schedule: at most `s`
snapshots alive at any time (snapshot 0 included), `reverse` one step at a time, and the fewest step
evaluations by `advance` any such schedule can have (`revolve_bound(n, s)`). `sqrt_segments(n)` cuts the
loop into segments of `ceil(sqrt(n))` steps, keeps a snapshot at each segment's start and reverses each
segment in one `reverse`.

>>> binomial(3, 2)  # doctest: +NORMALIZE_WHITESPACE
[Action(kind='save', step=0, count=1), Action(kind='advance', step=1, count=1),
 Action(kind='save', step=1, count=1), Action(kind='advance', step=2, count=1),
 Action(kind='reverse', step=2, count=1), Action(kind='restore', step=1, count=1),
 Action(kind='reverse', step=1, count=1), Action(kind='free', step=1, count=1),
 Action(kind='restore', step=0, count=1), Action(kind='reverse', step=0, count=1),
 Action(kind='free', step=0, count=1)]
>>> advanced_steps(binomial(100, 5)) == revolve_bound(100, 5)
True
"""

from __future__ import annotations

import math
from typing import NamedTuple

from diface._errors import ArgumentError

__all__ = [
    "Action",
    "actions",
    "advanced_steps",
    "binomial",
    "check_checkpoints",
    "check_steps",
    "repetition_number",
    "revolve_bound",
    "sqrt_segments",
]


class Action(NamedTuple):
    """One action of a schedule (see the module's docstring for what each kind does)."""

    kind: str  # "advance" | "save" | "restore" | "free" | "reverse"
    step: int
    count: int = 1  # type: ignore[assignment]  # (shadows tuple.count: the name is the API)


def check_steps(n: object) -> int:
    """`n` as a non-negative int, or `ArgumentError`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ArgumentError(f"n (the number of steps) must be a non-negative int, got {n!r}")
    return int(n)


def check_checkpoints(checkpoints: object, *, allow_none: bool = False) -> int | str | None:
    """`checkpoints` checked: a positive int, `"sqrt"` (or None where `allow_none`), else `ArgumentError`."""
    if checkpoints is None and allow_none:
        return None
    if isinstance(checkpoints, str):
        if checkpoints == "sqrt":
            return checkpoints
    elif isinstance(checkpoints, int) and not isinstance(checkpoints, bool) and checkpoints >= 1:
        return int(checkpoints)
    allowed = 'None (keep every step), a positive int s (at most s snapshots) or "sqrt"'
    if not allow_none:
        allowed = 'a positive int s (at most s snapshots) or "sqrt"'
    raise ArgumentError(f"checkpoints must be {allowed}, got {checkpoints!r}")


def actions(n: int, checkpoints: int | str) -> list[Action]:
    """The schedule for `n` steps: `binomial(n, checkpoints)` for an int, `sqrt_segments(n)` for `"sqrt"`.

    >>> [a.kind for a in actions(2, 1)]
    ['save', 'advance', 'reverse', 'restore', 'reverse', 'free']
    >>> [a.kind for a in actions(2, "sqrt")]
    ['save', 'reverse', 'free']
    """
    n = check_steps(n)
    spec = check_checkpoints(checkpoints)
    if spec == "sqrt":
        return sqrt_segments(n)
    assert isinstance(spec, int)
    return binomial(n, spec)


def repetition_number(n: int, s: int) -> int:
    """Griewank and Walther's repetition number: the smallest r with C(s + r, s) >= n, the most times
    the binomial schedule of `n` steps with `s` snapshots evaluates any one step by `advance`.

    >>> repetition_number(10, 3), repetition_number(1, 1), repetition_number(5, 10)
    (2, 0, 1)
    """
    n = check_steps(n)
    s = _snapshots(s)
    if s == 1:
        return max(n - 1, 0)
    r = 0
    while math.comb(s + r, s) < n:
        r += 1
    return r


def revolve_bound(n: int, s: int) -> int:
    """The fewest step evaluations by `advance` with which `n` steps can be reversed one at a time with
    at most `s` snapshots (snapshot 0 included): r*n - C(s + r, r - 1), r the repetition number
    (Griewank and Walther, *Algorithm 799: revolve*, 2000; in their notation with c = s - 1 free
    checkpoints beyond the initial state, t(n, c) = r*n - C(c + r + 1, r - 1)).

    >>> revolve_bound(10, 1), revolve_bound(10, 10), revolve_bound(10, 3)
    (45, 9, 15)
    """
    n = check_steps(n)
    s = _snapshots(s)
    if n == 0:
        return 0
    if s == 1:
        return n * (n - 1) // 2
    r = repetition_number(n, s)
    return r * n - (math.comb(s + r, r - 1) if r >= 1 else 0)


def advanced_steps(schedule: list[Action]) -> int:
    """The number of step evaluations by `advance` in `schedule` (its `reverse`s evaluate the n steps
    once more each).

    >>> advanced_steps(binomial(10, 1))
    45
    """
    total, current = 0, 0
    for action in schedule:
        if action.kind == "advance":
            total += action.step - current
            current = action.step
        elif action.kind in ("save", "restore", "reverse"):
            current = action.step
    return total


def binomial(n: int, s: int) -> list[Action]:
    """Griewank and Walther's binomial (Revolve) schedule for `n` steps with at most `s` snapshots
    alive (snapshot 0 included): one-step `reverse`s and `revolve_bound(n, s)` steps advanced.

    The range [a, b) (current state a, kept as a snapshot) with s snapshots is reversed by advancing to
    a split m, saving it, reversing [m, b) with s - 1 snapshots, freeing m, restoring a and reversing
    [a, m) with s; with one snapshot, each step is reached from a again. The split minimises
    m + t(b - m, s - 1) + t(m - a, s), a convex function of m (t = `revolve_bound` is convex in n), so
    the minimiser found by bisection gives the optimal cost by induction.

    >>> len([a for a in binomial(1000, 10) if a.kind == "reverse"])
    1000
    """
    n = check_steps(n)
    s = _snapshots(s)
    out: list[Action] = []
    if n == 0:
        return out
    out.append(Action("save", 0))
    # a task: ("rev", a, b, s) reverses [a, b) from current = a (kept); ("back", a, m) frees m, restores a
    tasks: list[tuple[str, int, int, int]] = [("free", 0, 0, 0), ("rev", 0, n, s)]
    while tasks:
        kind, a, b, k = tasks.pop()
        if kind == "free":
            out.append(Action("free", a))
        elif kind == "back":
            out.append(Action("free", b))
            out.append(Action("restore", a))
        elif b - a == 1:
            out.append(Action("reverse", a))
        elif k == 1:
            for j in range(b - 1, a - 1, -1):
                if j < b - 1:
                    out.append(Action("restore", a))
                if j > a:
                    out.append(Action("advance", j))
                out.append(Action("reverse", j))
        else:
            m = a + _split(b - a, k)
            out.append(Action("advance", m))
            out.append(Action("save", m))
            tasks.append(("rev", a, m, k))
            tasks.append(("back", a, m, 0))
            tasks.append(("rev", m, b, k - 1))
    return out


def sqrt_segments(n: int) -> list[Action]:
    """Segments of `ceil(sqrt(n))` steps: a snapshot at each segment's start (about sqrt(n) of them), each
    segment reversed in one `reverse` (which keeps its steps' intermediates).

    >>> [(a.step, a.count) for a in sqrt_segments(5) if a.kind == "reverse"]
    [(3, 2), (0, 3)]
    """
    n = check_steps(n)
    out: list[Action] = []
    if n == 0:
        return out
    length = math.isqrt(n - 1) + 1 if n > 1 else 1  # ceil(sqrt(n))
    starts = list(range(0, n, length))
    for i, start in enumerate(starts):
        if i:
            out.append(Action("advance", start))
        out.append(Action("save", start))
    for i in range(len(starts) - 1, -1, -1):
        start = starts[i]
        if i < len(starts) - 1:
            out.append(Action("restore", start))
        out.append(Action("reverse", start, min(length, n - start)))
        out.append(Action("free", start))
    return out


def _snapshots(s: object) -> int:
    if isinstance(s, bool) or not isinstance(s, int) or s < 1:
        raise ArgumentError(f"s (the number of snapshots) must be a positive int, got {s!r}")
    return int(s)


def _cost(m: int, length: int, s: int) -> int:
    return m + revolve_bound(length - m, s - 1) + revolve_bound(m, s)


def _split(length: int, s: int) -> int:
    """The optimal first split m in [1, length - 1] of `length` steps with `s >= 2` snapshots."""
    lo, hi = 1, length - 1
    # the smallest m whose cost does not decrease at m + 1 (the cost is convex in m)
    while lo < hi:
        mid = (lo + hi) // 2
        if _cost(mid + 1, length, s) >= _cost(mid, length, s):
            hi = mid
        else:
            lo = mid + 1
    return lo
