"""Checking one backend on one scenario and operator: every variant, each call twice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._contexts import Constant
from .._engines import namespace_of
from .._optable import OPERATORS
from ._calls import operator_calls
from ._scenarios import Scenario

__all__ = ["Failure", "check_operator", "check_refusal", "tolerances"]

#: operators whose results are second derivatives (looser tolerance for finite differences)
SECOND_ORDER = ("hessian", "hvp", "second_derivative", "taylor", "laplacian")


@dataclass
class Failure:
    """One disagreement: where it happened, what was expected and what came back (`error`: the
    exception, where the call raised one instead of returning)."""

    backend: str
    scenario: str
    operator: str
    variant: str
    message: str
    error: BaseException | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return f"{self.backend} | {self.scenario} | {self.operator} [{self.variant}]: {self.message}"


def tolerances(backend: Any, operator: str, dtype: Any = np.float64) -> tuple[float, float]:
    """(rtol, atol) for comparing `backend`'s results with the analytic ones: 300 * eps ** a for
    results accurate to eps ** a (a = 1 for exact engines; see AutoFiniteDiff for differences), eps
    the machine epsilon of `dtype`."""
    accuracy = float(backend.accuracy_exponent)
    if operator in SECOND_ORDER:
        outer, inner = backend.second_order_backends()
        accuracy = float(outer.as_outer_of(inner).accuracy_exponent)
    tol = max(1e-9, 300 * float(np.finfo(dtype).eps) ** accuracy)
    return tol, tol


def _tangents(scenario: Scenario, operator: str, seed: int, batch: int | None) -> Any:
    """Random tangents (like x) or cotangents (like y) of the scenario's dtypes, in its layout."""
    spec = OPERATORS[operator]
    if spec.tangent is None:
        return None
    like_x = spec.tangent == "tx"
    shape = scenario.x_shape if like_x else scenario.y_shape
    dtype = scenario.dtype if like_x else _y_dtype(scenario)
    rng = np.random.default_rng(seed)

    def draw() -> Any:
        # complex tangents of x's or y's complex dtype: independent real and imaginary parts
        t = rng.standard_normal(shape)
        if dtype.kind == "c":
            t = t + 1j * rng.standard_normal(shape)
        return scenario.arrange(np.asarray(t).astype(dtype)) if shape else dtype.type(t)

    ts = tuple(draw() for _ in range(batch or 1))
    return ts if batch else ts[0]


def _y_dtype(scenario: Scenario) -> np.dtype:
    return np.result_type(scenario.value())


def _result_dtype(scenario: Scenario) -> np.dtype:
    return np.result_type(scenario.dtype, _y_dtype(scenario))


def _snapshot(a: Any) -> Any:
    if isinstance(a, tuple):
        return tuple(_snapshot(v) for v in a)
    return np.array(a, copy=True)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def _compare(got: Any, want: Any, rtol: float, atol: float, precision: Any = None) -> str | None:
    """What differs between `got` and `want` (None: they agree). With `precision` (a real dtype), `got`
    must also have that precision, complex where `want` is complex and real where it is real."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return f"expected a tuple of {len(want)} results, got {type(got).__name__}"
        for i, (g, w) in enumerate(zip(got, want)):
            problem = _compare(g, w, rtol, atol, precision)
            if problem:
                return f"[{i}] {problem}"
        return None
    if not isinstance(got, (np.ndarray, np.generic, float)):
        return f"expected a NumPy result, got {type(got).__name__}"
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if precision is not None and got.dtype != _kind_of(want, precision):
        return f"dtype {got.dtype}, expected {_kind_of(want, precision)}"
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want))
        return (
            f"max abs error {err:.3g} (rtol {rtol:g}, atol {atol:g}); "
            f"got {got.ravel()[:6]}, expected {want.ravel()[:6]}"
        )
    return None


def _kind_of(want: Any, precision: Any) -> np.dtype:
    """The dtype of `precision` (a real dtype), complex where `want` is complex."""
    return np.result_type(precision, np.complex64) if np.iscomplexobj(want) else np.dtype(precision)


def _garbage_like(a: Any, scenario: Scenario, dtype: Any) -> Any:
    """`out=` buffers for results like `a`, full of NaN, in the scenario's layout where it can be written
    (of `dtype`, or where the scenario fixes the results' precision, of the reference's kind in it)."""
    if isinstance(a, tuple):
        return tuple(_garbage_like(v, scenario, dtype) for v in a)
    precision = scenario.result_precision()
    dtype = dtype if precision is None else _kind_of(a, precision)
    return scenario.arrange(np.full(np.shape(a), np.nan, dtype=dtype), buffer=True)


def check_refusal(backend: Any, scenario: Scenario, operator: str) -> list[Failure]:
    """`operator` must be refused on `scenario` (`scenario.refusals()`): the plain and full calls,
    unprepared, and the preparation each raise the refusal's error; a number is a failure."""
    refusal = scenario.refusals()[operator]
    spec = OPERATORS[operator]
    f = scenario.bind(namespace_of(backend))
    extra = () if spec.tangent is None else (_tangents(scenario, operator, 1, None),)
    prep_extra = () if spec.tangent is None else (_tangents(scenario, operator, 2, None),)
    op_calls = operator_calls(operator)
    calls = {
        operator: lambda: op_calls.plain(f, backend, scenario.fresh_x(), *extra, *scenario.make_contexts()),
        spec.full_name: lambda: op_calls.full(f, backend, scenario.fresh_x(), *extra, *scenario.make_contexts()),
        f"prepare_{operator}": lambda: op_calls.prepare(
            f, backend, scenario.prep_x, *prep_extra, *scenario.make_contexts(prep=True)
        ),
    }
    failures = []
    want = refusal.error.__name__
    for variant, call in calls.items():
        try:
            call()
        except refusal.error:
            continue
        except Exception as e:
            message = f"raised {type(e).__name__}: {e}; expected {want} ({refusal.reason})"
            failures.append(Failure(backend.label(), scenario.name, operator, f"{variant}, refusal", message, e))
            continue
        message = f"returned a result; expected {want} ({refusal.reason})"
        failures.append(Failure(backend.label(), scenario.name, operator, f"{variant}, refusal", message))
    return failures


def check_operator(
    backend: Any, scenario: Scenario, operator: str, *, rtol: float | None = None, atol: float | None = None
) -> list[Failure]:
    """Run every variant of `operator` on `scenario` with `backend`: plain and full, with and without
    `out=`, unprepared and prepared at the scenario's other point (through `di.op(..., prep=)` and
    through the prep's own methods), single and batched tangents; each call made twice. Checks the
    results against the analytic references, that `out=` buffers are the ones returned, that inputs,
    tangents and Constant contexts are left intact, and that an in-place function leaves f(x) in y.
    An operator the scenario must refuse (`Scenario.refusals`) is checked by `check_refusal` instead.
    """
    if operator in scenario.refusals():
        return check_refusal(backend, scenario, operator)
    default_rtol, default_atol = tolerances(backend, operator, scenario.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    spec = OPERATORS[operator]
    f = scenario.bind(namespace_of(backend))
    calls = operator_calls(operator)
    plain, full, prepare = calls.plain, calls.full, calls.prepare
    failures: list[Failure] = []
    value = scenario.value()
    y_dtype, result_dtype = _y_dtype(scenario), _result_dtype(scenario)
    precision = scenario.result_precision()

    def fail(variant: str, message: str, error: BaseException | None = None) -> None:
        failures.append(Failure(backend.label(), scenario.name, operator, variant, message, error))

    for probe_op, tangent, probe_expected in scenario.probes:
        if probe_op != operator:
            continue
        try:
            got = plain(f, backend, scenario.x, tangent, *scenario.make_contexts())
        except Exception as e:
            fail("probe", f"raised {type(e).__name__}: {e}", e)
            continue
        problem = _compare(got, probe_expected, rtol, atol)
        if problem:
            fail("probe", f"the recorded result: {problem}")

    for batch in (None, 2) if spec.tangent else (None,):
        tangents = _tangents(scenario, operator, 1, batch)
        prep_tangents = _tangents(scenario, operator, 2, batch)
        expected = scenario.expected(operator, tangents=tangents if batch else (tangents,) if spec.tangent else ())
        if spec.tangent and not batch:  # single tangent: unwrap the last result
            expected = (*expected[:-1], expected[-1][0])
        extra = () if spec.tangent is None else (tangents,)
        for prepared in (False, True):
            prep = None
            if prepared:
                prep_y = np.zeros(scenario.y_shape, y_dtype) if scenario.inplace else None
                prep_extra = () if spec.tangent is None else (prep_tangents,)
                try:
                    y_kw = {"y": prep_y} if scenario.inplace else {}  # taylor takes no y=
                    prep = prepare(f, backend, scenario.prep_x, *prep_extra, *scenario.make_contexts(prep=True), **y_kw)
                except Exception as e:
                    fail(f"prepare, batch={batch}", f"{type(e).__name__}: {e}", e)
                    continue
            for is_full in (False, True):
                for with_out in (False, True):
                    for repeat in (1, 2):
                        variant = (
                            f"{spec.full_name if is_full else operator}, "
                            f"{'prepared' if prepared else 'unprepared'}"
                            f"{', via prep method' if prepared and repeat == 2 else ''}"
                            f"{', out=' if with_out else ''}{f', {batch} tangents' if batch else ''}, call {repeat}"
                        )
                        want = expected if is_full else expected[-1:]
                        out: Any = None  # the out= buffer(s)
                        if with_out:
                            out = _garbage_like(want if len(want) > 1 else want[0], scenario, result_dtype)
                        contexts = scenario.make_contexts()
                        constants = _snapshot(tuple(c.value for c in contexts if isinstance(c, Constant)))
                        x = scenario.fresh_x()
                        inputs = _snapshot((x, *extra))
                        y = (
                            scenario.arrange(np.full(scenario.y_shape, np.nan, y_dtype), buffer=True)
                            if scenario.inplace
                            else None
                        )
                        kwargs: dict[str, Any] = {"out": out}
                        if scenario.inplace:
                            kwargs["y"] = y
                        try:
                            if prepared and repeat == 2:
                                method = getattr(prep, calls.full_method if is_full else calls.plain_method)
                                result = method(x, *extra, *contexts, **kwargs)
                            else:
                                result = (full if is_full else plain)(
                                    f, backend, x, *extra, *contexts, prep=prep, **kwargs
                                )
                        except Exception as e:
                            fail(variant, f"raised {type(e).__name__}: {e}", e)
                            continue
                        got = result if is_full else (result,)
                        if is_full and spec.value_first:
                            problem = _compare(got[0], value, rtol, atol)
                            if problem:
                                fail(variant, f"value: {problem}")
                            got = got[1:]
                        problem = _compare(tuple(got), tuple(want), rtol, atol, precision)
                        if problem:
                            fail(variant, problem)
                        if with_out:
                            buffers = out if len(want) > 1 else (out,)
                            if not all(_identical(g, b) for g, b in zip(got, buffers)):
                                fail(variant, "the results returned are not the out= buffers")
                        if not _same(_snapshot((x, *extra)), inputs):
                            fail(variant, "x or a tangent was modified")
                        if not _same(_snapshot(tuple(c.value for c in contexts if isinstance(c, Constant))), constants):
                            fail(variant, "a Constant context was modified")
                        if y is not None:
                            problem = _compare(y, value, rtol, atol)
                            if problem:
                                fail(variant, f"y after the call: {problem}")
    return failures


def _identical(got: Any, buf: Any) -> bool:
    if isinstance(buf, tuple):
        return isinstance(got, tuple) and len(got) == len(buf) and all(_identical(g, b) for g, b in zip(got, buf))
    return got is buf
