"""Speed against the engines called directly: the prepared diface call and the engine's own fastest
call on the same problem, timed interleaved in one process (medians of repeated rounds), with NumPy
input and with the engine's own arrays, and the memory of the call.

`CASES` is the quick default; `full_cases()` the whole grid (gradient and hvp up to n = 1e5, Jacobians
up to 1000, Hessians up to 300).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _operators as ops
from .._engines import engine_of, namespace_of
from ._memory import peak_above, resident
from ._references import direct_call
from ._timing import interleaved

__all__ = ["CASES", "Case", "SpeedRow", "compare_speed", "full_cases"]


def rosenbrock(xp: Any, x: Any) -> Any:
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _matrix(n: int) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((n, n)) / np.sqrt(n)


@dataclass(frozen=True)
class Case:
    """One operator of one problem at size n: Rosenbrock (gradient, hvp), the dense map tanh(A x) + x
    (jacobian) or the softplus sum of A x plus |x|^2 / 2 (hessian); A a fixed n x n matrix."""

    operator: str
    n: int

    @property
    def problem(self) -> str:
        return {"gradient": "rosenbrock", "hvp": "rosenbrock", "jacobian": "dense map", "hessian": "softplus"}[
            self.operator
        ]

    def function(self) -> Callable[[Any, Any], Any]:
        """`f(xp, x)`, written once for every array namespace (A converted to it once)."""
        if self.problem == "rosenbrock":
            return rosenbrock
        a = _matrix(self.n)
        tensors: dict = {}

        def matrix(xp: Any, x: Any) -> Any:
            """A for `xp`: NumPy's array serves NumPy, autograd and JAX (whose operations take it as a
            constant); torch gets a tensor on x's device, any other namespace `xp.asarray(A)`, made once."""
            name = getattr(xp, "__name__", "")
            if name in ("numpy", "autograd.numpy", "jax.numpy"):
                return a
            key = (name, getattr(x, "device", None)) if name == "torch" else (name, None)
            if key not in tensors:
                tensors[key] = xp.from_numpy(a).to(x.device) if name == "torch" else xp.asarray(a)
            return tensors[key]

        if self.problem == "dense map":
            return lambda xp, x: xp.tanh(xp.matmul(matrix(xp, x), x)) + x
        return lambda xp, x: xp.sum(xp.log(1.0 + xp.exp(xp.matmul(matrix(xp, x), x)))) + 0.5 * xp.sum(x * x)

    def point(self) -> np.ndarray:
        return np.linspace(-1.0, 1.0, self.n) * 0.9

    def tangent(self) -> np.ndarray:
        return np.cos(np.arange(self.n, dtype=float))

    def result_bytes(self) -> int:
        return 8 * {"gradient": self.n, "hvp": self.n, "jacobian": self.n**2, "hessian": self.n**2}[self.operator]


CASES = (Case("gradient", 10), Case("gradient", 1000), Case("hvp", 100), Case("jacobian", 100), Case("hessian", 100))


def full_cases() -> tuple[Case, ...]:
    sizes = (10, 100, 1000, 10_000, 100_000)
    return (
        *(Case("gradient", n) for n in sizes),
        *(Case("hvp", n) for n in sizes),
        *(Case("jacobian", n) for n in (10, 100, 1000)),
        *(Case("hessian", n) for n in (10, 100, 300)),
    )


@dataclass
class SpeedRow:
    backend: str
    operator: str
    problem: str
    n: int
    input: str  # "numpy" or the engine's own arrays ("native")
    reference: str
    diface_seconds: float
    direct_seconds: float
    result_mib: float
    prep_mib: float | None  # resident memory the preparation kept
    peak_mib: float | None  # peak resident memory of one prepared call above what was resident before

    @property
    def ratio(self) -> float:
        return self.diface_seconds / self.direct_seconds


def _engine(backend: Any) -> str | None:
    engine = engine_of(backend)
    return engine.name if engine is not None else None


def compare_speed(
    backends: list[Any],
    cases: Iterable[Case] = CASES,
    *,
    inputs: tuple[str, ...] = ("numpy", "native"),
    rounds: int = 15,
    progress: Callable[[str], None] | None = None,
) -> list[SpeedRow]:
    """Prepared diface calls against each engine's direct call, per backend, case and kind of input
    (NumPy arrays, or the engine's own where it has its own)."""
    rows = []
    for backend in backends:
        engine = _engine(backend)
        xp = namespace_of(backend)
        for case in cases:
            for kind in inputs:
                own = backend.array_ops(np.zeros(1)).name
                if kind == "native" and own in ("numpy", "autograd"):
                    continue  # NumPy is the engine's own array type
                if progress is not None:
                    progress(f"{backend.label()}: {case.operator} of {case.problem}, n = {case.n}, {kind} input")
                row = _measure(backend, engine, xp, case, kind, rounds)
                if row is not None:
                    rows.append(row)
    return rows


def _measure(backend: Any, engine: str | None, xp: Any, case: Case, kind: str, rounds: int) -> SpeedRow | None:
    f_xp = case.function()
    x, v = case.point(), case.tangent()
    direct = direct_call(engine, case.operator, f_xp, x, v, kind == "numpy") if engine is not None else None
    if direct is None:
        return None
    reference, direct_thunk = direct
    array_ops = backend.array_ops(x)
    if kind == "native":
        x = array_ops.asarray(x)
        v = array_ops.asarray(v, like=x)

    def f(x: Any) -> Any:
        return f_xp(xp, x)

    before = resident()
    extra = (v,) if case.operator == "hvp" else ()
    prep = getattr(ops, f"prepare_{case.operator}")(f, backend, x, *extra)
    after = resident()
    method = getattr(prep, case.operator)
    ours = _blocking(lambda: method(x, *extra))
    ours()
    _, peak = peak_above(ours)
    times = interleaved({"diface": ours, "direct": direct_thunk}, rounds=rounds)
    if engine == "finitediff" and getattr(backend, "method", "forward") != "forward":
        reference += " (forward differences)"  # fewer evaluations than central or complex steps
    return SpeedRow(
        backend.label(),
        case.operator,
        case.problem,
        case.n,
        kind,
        reference,
        times["diface"],
        times["direct"],
        case.result_bytes() / 2**20,
        None if before is None or after is None else max(0, after - before) / 2**20,
        None if peak is None else peak / 2**20,
    )


def _blocking(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Wait for asynchronous results (JAX) so that the timing covers the computation."""

    def run() -> Any:
        r = fn()
        wait = getattr(r, "block_until_ready", None)
        return wait() if wait is not None else r

    return run


@dataclass
class MinimizeRow:
    backend: str
    n: int
    reference: str
    iterations: int
    diface_seconds: float
    direct_seconds: float

    @property
    def ratio(self) -> float:
        return self.diface_seconds / self.direct_seconds


def compare_minimize(backends: list[Any], n: int = 100, rounds: int = 5) -> list[MinimizeRow]:
    """`scipy.optimize.minimize(method="trust-ncg")` of Rosenbrock from (-1.2, 1, -1.2, ...), with
    `jac=prep.gradient` and `hessp=prep.hvp` from diface preparations against the same loop with the
    engine called directly (NumPy in and out in both, as an optimizer calls them)."""
    from scipy.optimize import minimize

    from ._references import direct_functions

    x0 = np.tile([-1.2, 1.0], n // 2 + 1)[:n]
    value = lambda x: rosenbrock(np, x)
    rows = []
    for backend in backends:
        engine = _engine(backend)
        direct = direct_functions(engine, rosenbrock) if engine is not None else None
        if direct is None:
            continue
        reference, gradient, hvp = direct
        xp = namespace_of(backend)
        f = lambda x, xp=xp: rosenbrock(xp, x)
        grad_prep = ops.prepare_gradient(f, backend, x0)
        hvp_prep = ops.prepare_hvp(f, backend, x0, x0)
        run_ours = lambda g=grad_prep, h=hvp_prep: minimize(value, x0, method="trust-ncg", jac=g.gradient, hessp=h.hvp)
        run_direct = lambda g=gradient, h=hvp: minimize(value, x0, method="trust-ncg", jac=g, hessp=h)
        ours, theirs = run_ours(), run_direct()
        if not (ours.success and np.allclose(ours.x, theirs.x, rtol=1e-6, atol=1e-8)):
            raise AssertionError(f"{backend.label()}: trust-ncg with diface ended elsewhere than with the engine")
        times = interleaved({"diface": run_ours, "direct": run_direct}, rounds=rounds, min_time=0.0)
        rows.append(MinimizeRow(backend.label(), n, reference, int(ours.nit), times["diface"], times["direct"]))
    return rows
