"""The measuring instrument: run one case through the tape in every mode, unprepared and prepared at
another point, and classify each run against Richardson-extrapolated central differences.

A *case* is one public function of a library, made a function `f(x)` of one float64 array `x` (its
natural argument: a temperature, a zenith angle, a rate), the other arguments fixed. Each case has a
point `x0` to prepare at, a point `x1` to call at, and optionally *masked* points where the library
masks or clamps (a night-time zenith, a zero input, a value below a transfer function's linear cut).

Runs, for each of `AutoTape(mode="forward")`, `AutoTape(mode="reverse")` and `AutoTape()`:

- `unprepared@x1`: `di.jacobian(f, backend, x1)`;
- `prepared@x0->x1`: `prep = di.prepare_jacobian(f, backend, x0)`, then `prep.jacobian(x1)` twice
  (both results must be right);
- per masked point `m`: `unprepared@m`, and `prepared@x0->m` (the same preparation, twice).

Each run is `exact` (within tolerance of the reference), `refused` (`di.NotSupportedError`, or
`di.TapeMismatchError` from a prepared call: grouped by a short cause), `wrong` (other values, NaN or
inf where the reference is finite, another shape) or `crash` (any other exception). A case is exact only
if all its runs are; otherwise it takes the worst of its runs (crash, then wrong, then refused).

The reference at a point is the central difference `D(h)` per column, extrapolated twice:
`R(h) = (4 D(h/2) - D(h)) / 3` and `R(h/2)`, with `h = 1e-3 * max(|x_j|, 1)` (or `1e-3 * scale`
where the case gives the scale of its x, such as an hour for a Unix time). The point's reference is
*unstable* (and the case excluded, counted apart) if `R(h)` and `R(h/2)` disagree by more than the
tolerance, if f is not finite there, or if the one-sided extrapolations from the left and the right
disagree (a kink: no derivative to compare with).
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import diface as di

#: tolerance of a run against the reference, and of the reference's two extrapolations against each other
RTOL = 1e-5
#: absolute tolerance, relative to the largest entry of the reference's row (one output), then of all of it
ATOL_ROW = 1e-6
ATOL_ALL = 1e-9
ATOL_FLOOR = 1e-12
#: one-sided extrapolations are only second order: a kink differs by O(1), smooth functions by ~h²
KINK_RTOL = 1e-3
#: the step, relative to max(|x_j|, 1)
STEP = 1e-3

OUTCOMES = ("exact", "refused", "wrong", "crash")


@dataclass(frozen=True)
class Case:
    """One public function of a library as a function of one array."""

    library: str
    name: str
    f: Callable[[np.ndarray], Any]
    x0: np.ndarray
    x1: np.ndarray
    masked: tuple[np.ndarray, ...] = ()
    #: what x is (for the report): "temperature [°C]", "zenith [deg]"
    argument: str = ""
    #: the reference's step is STEP * scale where given (x far from zero on its own scale: a Unix time),
    #: else STEP * max(|x_j|, 1)
    scale: float | None = None


@dataclass(frozen=True)
class Run:
    backend: str
    kind: str  # "unprepared@x1", "prepared@x0->x1", "unprepared@m0", "prepared@x0->m0", ...
    outcome: str
    detail: str = ""


@dataclass
class CaseResult:
    library: str
    name: str
    outcome: str  # one of OUTCOMES, or "unstable"
    detail: str = ""
    runs: list[Run] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "name": self.name,
            "outcome": self.outcome,
            "detail": self.detail,
            "seconds": round(self.seconds, 4),
            "runs": [
                {"backend": r.backend, "kind": r.kind, "outcome": r.outcome, "detail": r.detail} for r in self.runs
            ],
        }


# ---------------------------------------------------------------------------------------------------
# the reference


class UnstableReference(Exception):
    """The finite-difference reference at a point cannot be trusted (or f cannot be evaluated there)."""


def _evaluate(f: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    return np.asarray(f(x.copy()), dtype=float)


def tolerance(reference: np.ndarray) -> np.ndarray:
    """Per-entry tolerance for a Jacobian of shape (m, n): rtol, plus atol by row and overall."""
    a = np.abs(reference)
    row = a.max(axis=1, keepdims=True) if a.size else a
    overall = a.max() if a.size else 0.0
    return RTOL * a + ATOL_ROW * row + ATOL_ALL * overall + ATOL_FLOOR


def reference_jacobian(
    f: Callable[[np.ndarray], Any], x: np.ndarray, scale: float | None = None
) -> tuple[np.ndarray, tuple[int, ...]]:
    """Richardson-extrapolated central differences at x: (Jacobian as (m, n), the output's shape)."""
    x = np.asarray(x, dtype=float)
    try:
        y = _evaluate(f, x)
    except Exception as exc:  # the case is broken at this point: say so, do not count it
        raise UnstableReference(f"f fails at the point: {type(exc).__name__}: {exc}") from exc
    if not np.all(np.isfinite(y)):
        raise UnstableReference("f is not finite at the point")
    n = x.size
    central = np.empty((3, y.size, n))
    forward = np.empty((2, y.size, n))
    backward = np.empty((2, y.size, n))
    for j in range(n):
        h = STEP * (scale if scale is not None else max(abs(float(x.flat[j])), 1.0))
        for k, step in enumerate((h, h / 2, h / 4)):
            e = np.zeros_like(x)
            e.flat[j] = step
            try:
                up, down = _evaluate(f, x + e).ravel(), _evaluate(f, x - e).ravel()
            except Exception as exc:
                raise UnstableReference(f"f fails near the point: {type(exc).__name__}: {exc}") from exc
            central[k, :, j] = (up - down) / (2 * step)
            if k:
                forward[k - 1, :, j] = (up - y.ravel()) / step
                backward[k - 1, :, j] = (y.ravel() - down) / step
    coarse = (4 * central[1] - central[0]) / 3
    fine = (4 * central[2] - central[1]) / 3
    if not (np.all(np.isfinite(coarse)) and np.all(np.isfinite(fine))):
        raise UnstableReference("the differences are not finite")
    tol = tolerance(fine)
    if np.any(np.abs(coarse - fine) > tol):
        worst = float(np.max(np.abs(coarse - fine) / tol))
        raise UnstableReference(f"Richardson extrapolations with h and h/2 disagree ({worst:.3g} x tolerance)")
    right = 2 * forward[1] - forward[0]
    left = 2 * backward[1] - backward[0]
    scale = np.abs(fine)
    kink_tol = KINK_RTOL * (scale + scale.max(axis=1, keepdims=True) + 1e-3 * scale.max()) + ATOL_FLOOR
    if np.any(np.abs(right - left) > kink_tol):
        raise UnstableReference("left and right one-sided differences disagree (a kink)")
    return fine, y.shape + x.shape


# ---------------------------------------------------------------------------------------------------
# classification


_PREFIX = re.compile(
    r"^AutoTape(?: does not know how to differentiate| does not differentiate| cannot differentiate|:)\s*"
)
_SITE = re.compile(r"(?:\bat )?[\w<>.-]+\.py:\d+\s*")
_CODE = re.compile(r"\s*\(`[^`]*`\)|`[^`]*`")
_SITE_CODE = re.compile(r"(?P<file>[\w<>.-]+\.py):\d+\s*\(`(?P<code>[^`]*)`\)")
_LOCATION = re.compile(r"\s*\((?:called|reached)[^()]*\)")
_ASIDE = re.compile(r"\s*\([^()]*(?:\([^()]*\)[^()]*)*\)")


def cause_key(exc: BaseException) -> str:
    """A short key for a refusal that groups like causes: what the message names, without the user's
    line and without the advice; where the message quotes the code it stopped at (a library's
    conversion), that code and its file, which say where to look."""
    text = re.sub(r"\s+", " ", str(exc)).strip()
    site = _SITE_CODE.search(text)
    text = _PREFIX.sub("", text)
    text = _CODE.sub("", text)
    text = _SITE.sub("", text)
    text = _LOCATION.sub("", text).strip(" :")
    text = re.sub(r"^this call takes another path through f than the recorded tape:\s*", "", text)
    # the first sentence (a ". " that is not inside a dotted name such as numpy.linalg.svd)
    head = re.split(r"(?<=[^.\s])\.\s+(?=[A-Z(])", text, maxsplit=1)[0]
    head = _ASIDE.sub("", head).split(", which ")[0].strip().rstrip(".")  # no asides, no consequences
    if len(head) > 90:
        head = head[:87] + "..."
    if site is not None:
        code = site.group("code")
        code = code if len(code) <= 40 else code[:37] + "..."
        head += f" [`{code}` in {site.group('file')}]"
    prefix = "mismatch: " if isinstance(exc, di.TapeMismatchError) else ""
    return prefix + head


def _compare(jac: Any, reference: np.ndarray, shape: tuple[int, ...]) -> tuple[str, str]:
    try:
        got = np.array(jac, dtype=float)
    except Exception as exc:
        return "wrong", f"not an array of floats: {type(jac).__name__} ({exc})"
    if got.shape != shape:
        return "wrong", f"shape {got.shape}, expected {shape}"
    got = got.reshape(reference.shape)
    finite = np.isfinite(got)
    if not np.all(finite):
        return "wrong", f"{int((~finite).sum())} non-finite entries where the reference is finite"
    err = np.abs(got - reference)
    tol = tolerance(reference)
    if np.any(err > tol):
        i = np.unravel_index(np.argmax(err / tol), err.shape)
        return "wrong", f"entry {tuple(int(k) for k in i)}: {got[i]:.9g} vs reference {reference[i]:.9g}"
    return "exact", ""


def _classify(
    call: Callable[[], Any], reference: np.ndarray, shape: tuple[int, ...], prepared: bool
) -> tuple[str, str]:
    try:
        jac = call()
    except di.TapeMismatchError as exc:
        if prepared:
            return "refused", cause_key(exc)
        return "crash", f"TapeMismatchError without a preparation: {exc}"
    except di.NotSupportedError as exc:
        return "refused", cause_key(exc)
    except Exception as exc:
        return "crash", _crash(exc)
    return _compare(jac, reference, shape)


def _crash(exc: BaseException) -> str:
    """A crash's type and message; with CORPUS_TRACEBACKS=1 in the environment, its traceback on stderr."""
    if os.environ.get("CORPUS_TRACEBACKS"):
        traceback.print_exception(exc, file=sys.stderr)
    return f"{type(exc).__name__}: {_short(str(exc))}"


def _short(text: str, limit: int = 240) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


BACKENDS: tuple[tuple[str, Callable[[], di.Backend]], ...] = (
    ("forward", lambda: di.AutoTape(mode="forward")),
    ("reverse", lambda: di.AutoTape(mode="reverse")),
    ("auto", lambda: di.AutoTape()),
)


def _worst(runs: Sequence[Run]) -> tuple[str, str]:
    for outcome in ("crash", "wrong", "refused"):
        for run in runs:
            if run.outcome == outcome:
                return outcome, f"{run.backend} {run.kind}: {run.detail}"
    return "exact", ""


def run_case(case: Case) -> CaseResult:
    """Every run of one case, classified (warnings of the library and of the tape silenced)."""
    start = time.perf_counter()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        points = [("x1", case.x1)] + [(f"m{k}", m) for k, m in enumerate(case.masked)]
        references = {}
        for label, point in points:
            try:
                references[label] = reference_jacobian(case.f, point, case.scale)
            except UnstableReference as exc:
                elapsed = time.perf_counter() - start
                return CaseResult(case.library, case.name, "unstable", f"at {label}: {exc}", [], elapsed)
        runs: list[Run] = []
        for backend_name, make in BACKENDS:
            runs += _runs(case, backend_name, make, points, references)
    outcome, detail = _worst(runs)
    return CaseResult(case.library, case.name, outcome, detail, runs, time.perf_counter() - start)


def _runs(
    case: Case,
    backend_name: str,
    make: Callable[[], di.Backend],
    points: Sequence[tuple[str, np.ndarray]],
    references: dict[str, tuple[np.ndarray, tuple[int, ...]]],
) -> list[Run]:
    """The runs of one backend: unprepared at every point, then prepared at x0 and called at every point
    twice (the second call only after a right first one)."""
    runs = []
    for label, point in points:
        outcome, detail = _classify(
            functools.partial(di.jacobian, case.f, make(), point.copy()), *references[label], prepared=False
        )
        runs.append(Run(backend_name, f"unprepared@{label}", outcome, detail))
    try:
        prep = di.prepare_jacobian(case.f, make(), case.x0.copy())
    except di.NotSupportedError as exc:
        return [*runs, Run(backend_name, "prepare@x0", "refused", cause_key(exc))]
    except Exception as exc:
        return [*runs, Run(backend_name, "prepare@x0", "crash", _crash(exc))]
    for label, point in points:
        for attempt in (1, 2):
            outcome, detail = _classify(
                functools.partial(_prepared_call, prep, point), *references[label], prepared=True
            )
            runs.append(Run(backend_name, f"prepared@x0->{label}#{attempt}", outcome, detail))
            if outcome != "exact":
                break
    return runs


def _prepared_call(prep: Any, point: np.ndarray) -> np.ndarray:
    # a copy: a prepared call may hand back a buffer that the next call overwrites
    return np.array(prep.jacobian(point.copy()), dtype=float, copy=True)


def run_cases(cases: Iterable[Case]) -> list[CaseResult]:
    return [run_case(case) for case in cases]


# ---------------------------------------------------------------------------------------------------
# summary


@dataclass
class Summary:
    library: str
    functions: int  # cases counted (reference unstable excluded)
    exact: int
    refused: Counter[str]
    wrong: list[CaseResult]
    crashes: list[CaseResult]
    unstable: list[CaseResult]
    seconds: float

    @property
    def exact_fraction(self) -> float:
        return self.exact / self.functions if self.functions else 1.0


def summarize(library: str, results: Sequence[CaseResult]) -> Summary:
    counted = [r for r in results if r.outcome != "unstable"]
    refused: Counter[str] = Counter()
    for r in counted:
        if r.outcome == "refused":
            refused[_refusal_cause(r)] += 1
    return Summary(
        library=library,
        functions=len(counted),
        exact=sum(r.outcome == "exact" for r in counted),
        refused=refused,
        wrong=[r for r in counted if r.outcome == "wrong"],
        crashes=[r for r in counted if r.outcome == "crash"],
        unstable=[r for r in results if r.outcome == "unstable"],
        seconds=sum(r.seconds for r in results),
    )


def _refusal_cause(result: CaseResult) -> str:
    """The cause of a refused case: that of its first refused run."""
    for run in result.runs:
        if run.outcome == "refused":
            return run.detail
    return result.detail


def format_table(summaries: Sequence[Summary], *, causes: int = 12, verbose: bool = True) -> str:
    """The report: a row per library and overall, the refusals by cause, every wrong and crashed case."""
    lines = [
        f"{'library':<18}{'functions':>10}{'exact':>7}{'refused':>9}{'wrong':>7}{'crash':>7}{'unstable':>10}"
        f"{'exact %':>9}{'time s':>8}"
    ]
    total = Summary("overall", 0, 0, Counter(), [], [], [], 0.0)
    for s in summaries:
        lines.append(_row(s))
        total.functions += s.functions
        total.exact += s.exact
        total.refused.update(s.refused)
        total.wrong += s.wrong
        total.crashes += s.crashes
        total.unstable += s.unstable
        total.seconds += s.seconds
    lines.append(_row(total))
    if len(summaries) > 1:
        mean = sum(s.exact_fraction for s in summaries) / len(summaries)
        lines.append(f"(each library weighted alike: {100 * mean:.1f}% exact)")
    if verbose:
        for s in summaries:
            if s.refused:
                lines.append(f"\n{s.library}: refused by cause")
                lines += [f"  {n:>4}  {cause}" for cause, n in s.refused.most_common(causes)]
                rest = sum(n for _, n in s.refused.most_common()[causes:])
                if rest:
                    lines.append(f"  {rest:>4}  (other causes)")
        for title, group in (("wrong", total.wrong), ("crash", total.crashes), ("reference unstable", total.unstable)):
            if group:
                lines.append(f"\n{title}:")
                lines += [f"  {r.library}.{r.name}: {r.detail}" for r in group]
    return "\n".join(lines)


def _row(s: Summary) -> str:
    refused = sum(s.refused.values())
    return (
        f"{s.library:<18}{s.functions:>10}{s.exact:>7}{refused:>9}{len(s.wrong):>7}{len(s.crashes):>7}"
        f"{len(s.unstable):>10}{100 * s.exact_fraction:>8.1f}%{s.seconds:>8.1f}"
    )


def overall_fraction(summaries: Sequence[Summary]) -> float:
    functions = sum(s.functions for s in summaries)
    return sum(s.exact for s in summaries) / functions if functions else 1.0


# ---------------------------------------------------------------------------------------------------
# building cases from tables

#: where in a range (lo, hi) the entries of x0 and x1 lie: different points, no entry equal
FRACTIONS_X0 = (0.30, 0.55, 0.80, 0.45, 0.70, 0.35)
FRACTIONS_X1 = (0.62, 0.24, 0.53, 0.86, 0.40, 0.74)


def points_in(
    lo: float | Sequence[float], hi: float | Sequence[float], shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """x0 and x1 of the given shape in [lo, hi] (lo and hi broadcast against the shape: per component
    of a last axis, such as X, Y, Z)."""
    size = math.prod(shape)
    lo_a = np.broadcast_to(np.asarray(lo, dtype=float), shape)
    hi_a = np.broadcast_to(np.asarray(hi, dtype=float), shape)
    f0 = np.resize(np.array(FRACTIONS_X0), size).reshape(shape)
    f1 = np.resize(np.array(FRACTIONS_X1), size).reshape(shape)
    return lo_a + (hi_a - lo_a) * f0, lo_a + (hi_a - lo_a) * f1


def as_points(masked: Iterable[Sequence[float] | float], x1: np.ndarray) -> tuple[np.ndarray, ...]:
    """Masked points from a table: a number replaces every other entry of x1 (masked and unmasked
    entries side by side, as a day's series has night and day), a sequence is taken as it is."""
    out = []
    for m in masked:
        if np.ndim(m) == 0:
            point = x1.copy()
            point.flat[1::2] = float(m)  # type: ignore[arg-type]
        else:
            point = np.asarray(m, dtype=float).reshape(x1.shape)
        out.append(point)
    return tuple(out)
