"""The tour printed by `python -m diface`: every operator on the finite-difference backend, checked
against its analytic value, then preparation where it pays: the tape, recorded once and replayed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _operators as op
from ._contexts import Constant
from ._second_order import SecondOrder
from ._table import format_table
from .backends import AutoFiniteDiff, AutoTape

__all__ = ["tour"]


def _fmt(a: Any) -> str:
    if isinstance(a, tuple):
        return "(" + ", ".join(_fmt(v) for v in a) + ")"
    a = np.asarray(a)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return np.array2string(a, precision=4, suppress_small=True, separator=" ", max_line_width=1000).replace("\n", "")


def _error(result: Any, expected: Any) -> float:
    if isinstance(expected, tuple):
        return max(_error(r, e) for r, e in zip(result, expected))
    return float(np.max(np.abs(np.asarray(result) - np.asarray(expected)), initial=0.0))


def tour() -> None:
    b = AutoFiniteDiff()
    x = np.array([1.0, 2.0, 3.0])
    v = np.array([1.0, 0.0, -1.0])

    f = lambda x: np.sum(np.sin(x) * x**2)  # array -> scalar
    grad_f = lambda x: 2 * x * np.sin(x) + x**2 * np.cos(x)
    hess_f = lambda x: np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x))
    g = lambda x: np.array([x[0] * x[1], np.sin(x[2])])  # array -> array
    jac_g = np.array([[x[1], x[0], 0.0], [0.0, 0.0, np.cos(x[2])]])
    h = lambda t: np.array([np.cos(t), t**3])  # scalar -> array
    t = 0.5
    scaled = lambda x, a: a * np.sum(x**2)  # with a Constant context

    rows: list[tuple[str, Callable[[], Any], Any]] = [
        ("derivative(h, b, t)", lambda: op.derivative(h, b, t), np.array([-np.sin(t), 3 * t**2])),
        ("second_derivative(h, b, t)", lambda: op.second_derivative(h, b, t), np.array([-np.cos(t), 6 * t])),
        ("value_and_gradient(f, b, x)", lambda: op.value_and_gradient(f, b, x), (f(x), grad_f(x))),
        ("jacobian(g, b, x)", lambda: op.jacobian(g, b, x), jac_g),
        ("pushforward(g, b, x, v)", lambda: op.pushforward(g, b, x, v), jac_g @ v),
        ("pullback(g, b, x, [1, 1])", lambda: op.pullback(g, b, x, np.ones(2)), np.ones(2) @ jac_g),
        ("hvp(f, b, x, v)", lambda: op.hvp(f, b, x, v), hess_f(x) @ v),
        ("hessian(f, b, x)", lambda: op.hessian(f, b, x), hess_f(x)),
        ("gradient(scaled, b, x, Constant(3.0))", lambda: op.gradient(scaled, b, x, Constant(3.0)), 6 * x),
    ]
    print(f"diface tour on {b!r}: finite differences, NumPy only\n")
    print("  f(x) = sum(sin(x) * x**2)        g(x) = [x0 * x1, sin(x2)]        h(t) = [cos(t), t**3]")
    print(f"  x = {_fmt(x)}   v = {_fmt(v)}   t = {t}\n")
    table = []
    for call, run, expected in rows:
        result = run()
        table.append([f"di.{call}", _fmt(result), f"{_error(result, expected):.1e}"])
    print(format_table(["operator", "result", "max abs error vs analytic"], table))

    n = 100
    xs = np.linspace(-1.0, 1.0, n)
    rosenbrock = lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    tape = AutoTape()
    prep = op.prepare_gradient(rosenbrock, tape, np.zeros(n))
    unprepared = _seconds(lambda: op.gradient(rosenbrock, tape, xs))
    prepared = _seconds(lambda: prep.gradient(xs))
    fd_prep = op.prepare_gradient(rosenbrock, b, np.zeros(n))
    differences = _seconds(lambda: fd_prep.gradient(xs))
    timings = [
        ["di.gradient(f, di.AutoTape(), x): records f, then differentiates", _ms(unprepared), "1.0x"],
        ["prep = di.prepare_gradient(f, di.AutoTape(), x0); prep.gradient(x)", _ms(prepared), _x(unprepared, prepared)],
        [f"prepared finite differences ({2 * n} evaluations of f)", _ms(differences), _x(unprepared, differences)],
    ]
    print(f"\nPrepare once, call many times: exact gradients of the Rosenbrock function, n = {n}\n")
    print(format_table(["call", "time per call", "speed-up"], timings))
    print("The tape records f once at preparation and replays the recording on each call.")
    second = SecondOrder(AutoFiniteDiff(), AutoFiniteDiff())
    print(f"\nSecond-order operators run one backend over another: {second.label()}")
    print(
        "Other engines: di.AutoAutograd(), di.AutoTorch(), di.AutoJAX(), di.AutoTensorFlow(), di.AutoMLX(), "
        "di.AutoPyTensor() (pip install 'diface[all]');"
    )
    print("python -m diface info | compare | bench: what is installed, cross-engine checks, speed.")


def _seconds(fn: Callable[[], Any], repeat: int = 20) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _x(reference: float, seconds: float) -> str:
    return f"{reference / seconds:.1f}x"
