"""`test_differentiation` and `benchmark_differentiation`: the test kit's two entry points."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _operators as ops
from .._engines import namespace_of
from .._errors import NotSupportedError
from .._optable import OPERATORS
from .._table import format_table
from ._calls import operator_calls
from ._check import Failure, _tangents, _y_dtype, check_operator, tolerances
from ._deviations import known_deviation, known_unsupported
from ._layouts import edge_scenarios, layout_scenarios
from ._scenarios import Scenario, default_scenarios
from ._structural import structural_scenarios
from ._threads import check_threads
from ._tree_scenarios import TreeScenario, check_tree_operator

__all__ = ["Report", "Row", "all_scenarios", "benchmark_differentiation", "run_checks", "test_differentiation"]

DOT_PRODUCT = "dot product"
THREADS = "threads"


@dataclass
class Row:
    """The outcome of one backend on one scenario and operator.

    `status` is "pass", "fail", "xfail" (a known engine limit, with its `reason`; the failures are
    kept), "refused" (an operator the scenario says every backend must refuse, `Scenario.refusals`:
    every call and the preparation raised the error expected), "unsupported" (a case the engine is
    known to refuse, with the `reason`, where every failing call raised `NotSupportedError`), "xpass"
    (a known limit or refusal that did not show), or "n/a" (the scenario cannot run on the backend,
    with the `reason`).
    """

    backend: str
    scenario: str
    operator: str
    status: str
    failures: list[Failure] = field(default_factory=list)
    reason: str = ""


@dataclass
class Report:
    """All rows of a `test_differentiation` run."""

    rows: list[Row]

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.status == "fail"]

    @property
    def ok(self) -> bool:
        return not self.failed

    def counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """{(backend, operator): {status: count}}."""
        table: dict[tuple[str, str], dict[str, int]] = {}
        for r in self.rows:
            cell = table.setdefault((r.backend, r.operator), {})
            cell[r.status] = cell.get(r.status, 0) + 1
        return table

    def failure_table(self, limit: int = 40) -> str:
        """backend x scenario x operator, what was expected and what came back."""
        lines = []
        for r in self.failed:
            for f in r.failures:
                lines.append([r.backend, r.scenario, r.operator, f.variant, f.message])
        shown = lines[:limit]
        text = format_table(["backend", "scenario", "operator", "variant", "what differs"], shown)
        if len(lines) > limit:
            text += f"\n... and {len(lines) - limit} more"
        return text

    def __str__(self) -> str:
        rows = [
            [backend, op, ", ".join(f"{n} {s}" for s, n in sorted(cell.items()))]
            for (backend, op), cell in self.counts().items()
        ]
        return format_table(["backend", "operator", "results"], rows)


#: why the complex step is not checked on functions with complex intermediates
COMPLEX_STEP = (
    "the complex step needs f analytic in x, and a real function through complex values (np.real, abs, "
    "np.angle, z * conj(z)) is not: it raises NotSupportedError where f returns a real value at a complex "
    "point, but cannot tell when f makes it complex again (a constant of x's dtype), so it is not run here"
)


#: why the complex step is not checked on complex inputs and outputs
COMPLEX_STEP_IO = (
    "the complex step differentiates a real f of real x by stepping into the complex plane: with complex x "
    "or complex f(x) the step's imaginary part mixes with the values' own, so it is not run here"
)


def applicable(backend: Any, scenario: Scenario) -> str | None:
    """Why `scenario` cannot run on `backend` (None if it can)."""
    if scenario.mutates and not backend.supports_inplace:
        return "the engine cannot run functions that write into arrays (in-place output or Cache)"
    if "complex" in scenario.needs and _complex_step(backend):
        return COMPLEX_STEP
    if "complex io" in scenario.needs and _complex_step(backend):
        return COMPLEX_STEP_IO
    return None


def _complex_step(backend: Any) -> bool:
    """Whether `backend` (or the outer backend of a `SecondOrder`) takes complex steps."""
    if type(backend).__name__ == "SecondOrder":
        return _complex_step(backend.outer) or _complex_step(backend.inner)
    return type(backend).__name__ == "AutoFiniteDiff" and getattr(backend, "method", None) == "complex"


def dot_product_check(backend: Any, scenario: Scenario, rtol: float, atol: float) -> list[Failure]:
    """<ty, J tx> = <J^T ty, tx> with the backend's own pushforward and pullback."""
    f = scenario.bind(namespace_of(backend))
    tx, ty = _tangents(scenario, "pushforward", 3, None), _tangents(scenario, "pullback", 4, None)
    kwargs: dict[str, Any] = {"y": np.zeros(scenario.y_shape, _y_dtype(scenario))} if scenario.inplace else {}
    try:
        jtx = ops.pushforward(f, backend, scenario.x, tx, *scenario.make_contexts(), **kwargs)
        jty = ops.pullback(f, backend, scenario.x, ty, *scenario.make_contexts(), **kwargs)
    except Exception as e:
        return [Failure(backend.label(), scenario.name, DOT_PRODUCT, "", f"raised {type(e).__name__}: {e}", e)]
    # the real inner product <u, v> = Re sum conj(u) v (the plain sum of products for real arrays)
    left, right = float(np.real(np.vdot(ty, jtx))), float(np.real(np.vdot(jty, tx)))
    scale = max(abs(left), abs(right), 1.0)
    if abs(left - right) > atol + rtol * scale:
        return [
            Failure(
                backend.label(), scenario.name, DOT_PRODUCT, "", f"<ty, J tx> = {left!r} but <J^T ty, tx> = {right!r}"
            )
        ]
    return []


def all_scenarios() -> list[Scenario]:
    """What `test_differentiation` checks by default: the default scenarios, the structural ones, every
    layout of the array scenarios, and the edge shapes and dtypes."""
    return default_scenarios() + structural_scenarios() + layout_scenarios() + edge_scenarios()


def test_differentiation(
    backends: Iterable[Any],
    scenarios: list[Scenario] | None = None,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    operators: Iterable[str] | None = None,
    threads: int = 8,
    thread_calls: int = 10,
    known_deviations: Callable[[Any, Scenario], str | None] | None = None,
    unsupported: Callable[[Any, Scenario, str], str | None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Check backends against analytic (or recorded) results.

    For each backend and scenario (default: `all_scenarios()`: the default, structural, layout and
    edge scenarios), every variant of every applicable operator runs unprepared and prepared at the
    scenario's other point, each call twice; inputs must stay intact; the dot-product identity
    `<ty, J tx> = <J^T ty, tx>` is checked wherever pushforward and pullback both apply. With
    `threads` > 1, every operator (but those refused) of every scenario that is not a layout variant
    also runs from that many threads sharing one preparation, `thread_calls` calls each (`check_threads`), reported as
    the check "threads". Tolerances default to each backend's accuracy (see `tolerances`). Known
    engine limits (`known_deviations(backend, scenario)` gives the reason, or None; default: the kit's
    register, `diface.testing.known_deviation`) are reported as expected failures ("xfail") with their
    reason; cases an engine is known to refuse (`unsupported(backend, scenario, operator)`; default:
    `diface.testing.known_unsupported`) as "unsupported" where every failing call raised
    `NotSupportedError`, and as failures where one returned a wrong number or raised anything else;
    scenarios a backend cannot run as "n/a". `progress`, if given, is called with a description before each
    backend-scenario pair.

    Raises `AssertionError` with a table of the failures, else returns the `Report`.

    Example:
        >>> import diface as di
        >>> from diface.testing import default_scenarios, test_differentiation
        >>> report = test_differentiation([di.AutoFiniteDiff()], default_scenarios()[:2])
        >>> report.ok, len(report.rows)
        (True, 20)
    """
    report = run_checks(
        backends,
        scenarios,
        rtol=rtol,
        atol=atol,
        operators=operators,
        threads=threads,
        thread_calls=thread_calls,
        known_deviations=known_deviations,
        unsupported=unsupported,
        progress=progress,
    )
    if not report.ok:
        raise AssertionError(
            f"{len(report.failed)} of {len(report.rows)} checks failed:\n{report.failure_table()}\n\nsummary:\n{report}"
        )
    return report


def run_checks(
    backends: Iterable[Any],
    scenarios: list[Scenario] | None = None,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    operators: Iterable[str] | None = None,
    threads: int = 8,
    thread_calls: int = 10,
    known_deviations: Callable[[Any, Scenario], str | None] | None = None,
    unsupported: Callable[[Any, Scenario, str], str | None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """`test_differentiation` without the raising: the report, failures included."""
    backends = list(backends)
    scenarios = all_scenarios() if scenarios is None else list(scenarios)
    wanted = set(OPERATORS) if operators is None else set(operators)
    rows: list[Row] = []
    for backend in backends:
        name = backend.label()
        for scenario in scenarios:
            if progress is not None:
                progress(f"{name}: {scenario.name}")
            reason = applicable(backend, scenario)
            deviation = (known_deviations or known_deviation)(backend, scenario)
            checks = [op for op in scenario.operators() if op in wanted]
            if isinstance(scenario, TreeScenario):  # trees: the operators alone (see check_tree_operator)
                for op in checks:
                    r_tol, a_tol = tolerances(backend, op, scenario.dtype)
                    r_tol, a_tol = (r_tol if rtol is None else rtol), (a_tol if atol is None else atol)
                    failures = [] if reason else check_tree_operator(backend, scenario, op, rtol=r_tol, atol=a_tol)
                    status = (
                        "n/a"
                        if reason
                        else ("xfail" if failures else "xpass")
                        if deviation
                        else ("fail" if failures else "pass")
                    )
                    rows.append(Row(name, scenario.name, op, status, failures, reason or deviation or ""))
                continue
            refused = scenario.refusals()
            if "pushforward" in checks and "pullback" in checks:
                checks.append(DOT_PRODUCT)
            thread_ops = (
                [op for op in checks if op != DOT_PRODUCT and op not in refused]
                if threads > 1 and scenario.layout is None
                else []
            )
            if thread_ops:
                checks.append(THREADS)
            for op in checks:
                if reason:
                    rows.append(Row(name, scenario.name, op, "n/a", reason=reason))
                    continue
                r_tol, a_tol = tolerances(backend, "gradient" if op in (DOT_PRODUCT, THREADS) else op, scenario.dtype)
                r_tol, a_tol = (r_tol if rtol is None else rtol), (a_tol if atol is None else atol)
                if op == DOT_PRODUCT:
                    failures = dot_product_check(backend, scenario, r_tol, a_tol)
                elif op == THREADS:
                    failures = [
                        failure
                        for thread_op in thread_ops
                        for failure in check_threads(backend, scenario, thread_op, threads=threads, calls=thread_calls)
                    ]
                else:
                    failures = check_operator(backend, scenario, op, rtol=r_tol, atol=a_tol)
                if op in refused:  # every backend must refuse it: checked to raise, never a number
                    status = "fail" if failures else "refused"
                    rows.append(Row(name, scenario.name, op, status, failures, refused[op].reason))
                    continue
                refusal = (unsupported or known_unsupported)(backend, scenario, op)
                if refusal:
                    raised = all(isinstance(f.error, NotSupportedError) for f in failures)
                    status = ("unsupported" if raised else "fail") if failures else "xpass"
                elif deviation:
                    status = "xfail" if failures else "xpass"
                else:
                    status = "fail" if failures else "pass"
                rows.append(Row(name, scenario.name, op, status, failures, refusal or deviation or ""))
    return Report(rows)


def benchmark_differentiation(
    backends: Iterable[Any],
    scenarios: list[Scenario] | None = None,
    *,
    operators: Iterable[str] | None = None,
    repeat: int = 5,
) -> list[dict]:
    """Time every applicable operator of every scenario on every backend, unprepared and prepared.

    Returns rows `{"backend", "scenario", "operator", "prepared", "calls", "seconds"}`: `calls` is
    the number of times `f` ran during one call (counted through a wrapper; a compiled or recorded
    preparation may not call it at all), `seconds` the best of `repeat` calls.

    Example:
        >>> import diface as di
        >>> from diface.testing import benchmark_differentiation, default_scenarios
        >>> rows = benchmark_differentiation([di.AutoFiniteDiff()], default_scenarios()[2:3], operators=["gradient"])
        >>> [(r["operator"], r["prepared"], r["calls"]) for r in rows]
        [('gradient', False, 9), ('gradient', True, 8)]
    """
    scenarios = default_scenarios() if scenarios is None else list(scenarios)
    wanted = set(OPERATORS) if operators is None else set(operators)
    rows = []
    for backend in backends:
        for scenario in scenarios:
            if applicable(backend, scenario):
                continue
            for op in scenario.operators():
                if op in wanted and op not in scenario.refusals():
                    rows += _time_operator(backend, scenario, op, repeat)
    return rows


def _time_operator(backend: Any, scenario: Scenario, op: str, repeat: int) -> list[dict]:
    f = scenario.bind(namespace_of(backend))
    calls = [0]

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return f(*args)

    extra = () if OPERATORS[op].tangent is None else (_tangents(scenario, op, 5, None),)
    kwargs = {"y": np.zeros(scenario.y_shape, _y_dtype(scenario))} if scenario.inplace else {}
    args = (counted, backend, scenario.x, *extra)
    op_calls = operator_calls(op)
    prep = op_calls.prepare(*args, *scenario.make_contexts(), **kwargs)
    operator = op_calls.plain
    rows = []
    for prepared in (False, True):

        def call(use: Any = prep if prepared else None) -> Any:
            return operator(*args, *scenario.make_contexts(), prep=use, **kwargs)

        call()  # warm up
        calls[0] = 0
        call()
        n_calls = calls[0]
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - start)
        rows.append(
            dict(
                backend=backend.label(),
                scenario=scenario.name,
                operator=op,
                prepared=prepared,
                calls=n_calls,
                seconds=best,
            )
        )
    return rows
