"""Speed against the engines called directly: the prepared diface call and the engine's own fastest
call on the same problem, timed interleaved in one process (medians of repeated rounds)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _operators as ops
from ._timing import interleaved

__all__ = ["PROBLEMS", "Problem", "SpeedRow", "compare_speed", "direct_call"]


@dataclass(frozen=True)
class Problem:
    """A benchmark problem: `f(xp, x, A)` for an operator at size n (A: a fixed n x n matrix)."""

    name: str
    operator: str
    n: int
    f: Callable[..., Any]

    def point(self) -> np.ndarray:
        return np.linspace(-1.0, 1.0, self.n) * 0.9

    def matrix(self) -> np.ndarray:
        return np.random.default_rng(self.n).standard_normal((self.n, self.n)) / np.sqrt(self.n)


def rosenbrock(xp: Any, x: Any, a: Any) -> Any:
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def dense_map(xp: Any, x: Any, a: Any) -> Any:
    return xp.tanh(a @ x) + x


def softplus_sum(xp: Any, x: Any, a: Any) -> Any:
    return xp.sum(xp.log(1.0 + xp.exp(a @ x))) + 0.5 * xp.sum(x * x)


PROBLEMS = (
    Problem("rosenbrock", "gradient", 10, rosenbrock),
    Problem("rosenbrock", "gradient", 1000, rosenbrock),
    Problem("dense map", "jacobian", 100, dense_map),
    Problem("softplus", "hessian", 30, softplus_sum),
    Problem("softplus", "hessian", 100, softplus_sum),
)


def direct_call(engine: str, operator: str, f: Callable, x: Any) -> tuple[str, Callable[[], Any]] | None:
    """(description, thunk) of the engine's own fastest call of `operator` on `f(xp, x)` at `x`, or
    None where the engine has no such call. `f` takes the array namespace first. Imports the engine.
    The tape, diface's own engine, is compared with autograd, the alternative for NumPy-style code."""
    if engine == "finitediff":
        from scipy.optimize import approx_fprime

        eps = float(np.sqrt(np.finfo(np.asarray(x).dtype).eps))
        if operator in ("gradient", "jacobian"):
            return "scipy.optimize.approx_fprime", lambda: approx_fprime(x, lambda x: f(np, x), eps)
        return None
    if engine in ("autograd", "tape"):
        import autograd
        import autograd.numpy as anp

        maker = {"gradient": autograd.grad, "jacobian": autograd.jacobian, "hessian": autograd.hessian}[operator]
        fn = maker(lambda x: f(anp, x))
        return f"autograd.{maker.__name__}", lambda: fn(x)
    if engine == "torch":
        import torch

        if operator == "gradient":

            def torch_gradient() -> Any:
                leaf = x.detach().requires_grad_(True)
                return torch.autograd.grad(f(torch, leaf), leaf)[0]

            return "torch.autograd.grad", torch_gradient
        maker = {"jacobian": torch.func.jacrev, "hessian": torch.func.hessian}[operator]
        fn = maker(lambda x: f(torch, x))
        return f"torch.func.{maker.__name__}", lambda: fn(x)
    if engine == "jax":
        import jax
        import jax.numpy as jnp

        maker = {"gradient": jax.grad, "jacobian": jax.jacrev, "hessian": jax.hessian}[operator]
        fn = jax.jit(maker(lambda x: f(jnp, x)))
        return f"jax.jit(jax.{maker.__name__})", lambda: fn(x).block_until_ready()
    return None


def _blocking(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Wait for asynchronous results (JAX) so that the timing covers the computation."""

    def run() -> Any:
        r = fn()
        wait = getattr(r, "block_until_ready", None)
        return wait() if wait is not None else r

    return run


@dataclass
class SpeedRow:
    backend: str
    problem: str
    operator: str
    n: int
    reference: str
    diface_seconds: float
    direct_seconds: float

    @property
    def ratio(self) -> float:
        return self.diface_seconds / self.direct_seconds


def compare_speed(
    backends: list[Any],
    problems: tuple[Problem, ...] = PROBLEMS,
    *,
    rounds: int = 15,
    progress: Callable[[str], None] | None = None,
) -> list[SpeedRow]:
    """Prepared diface calls against each engine's direct call, per backend and problem."""
    rows = []
    for backend in backends:
        engine = type(backend).cli_name
        xp = backend.array_namespace()
        for problem in problems:
            if progress is not None:
                progress(f"{backend!r}: {problem.operator} of {problem.name}, n = {problem.n}")
            array_ops = backend.array_ops(problem.point())
            x = array_ops.asarray(problem.point())
            a = array_ops.asarray(problem.matrix(), like=x)

            def f(x: Any, a: Any = a, problem: Problem = problem, xp: Any = xp) -> Any:
                return problem.f(xp, x, a)

            def in_namespace(xp: Any, x: Any, a: Any = a, problem: Problem = problem) -> Any:
                return problem.f(xp, x, a)

            direct = direct_call(engine, problem.operator, in_namespace, x)
            if direct is None:
                continue
            reference, direct_thunk = direct
            if engine == "finitediff" and getattr(backend, "method", "forward") != "forward":
                reference += " (forward differences)"  # fewer evaluations than central or complex steps
            prep = getattr(ops, f"prepare_{problem.operator}")(f, backend, x)
            ours = _blocking(lambda prep=prep, x=x, op=problem.operator: getattr(prep, op)(x))
            t = interleaved({"diface": ours, "direct": direct_thunk}, rounds=rounds)
            label = backend.label()
            rows.append(SpeedRow(label, problem.name, problem.operator, problem.n, reference, t["diface"], t["direct"]))
    return rows
