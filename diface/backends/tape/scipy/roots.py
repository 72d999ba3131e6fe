"""SciPy's root finders and minimizers inside f: the solver runs on plain values as usual, and its
result enters the tape as an `ImplicitRoot`, differentiated by the implicit function theorem.

For `brentq`, `brenth`, `ridder`, `bisect`, `toms748`, `newton` (scalar and array), `root_scalar`,
`fsolve` and `root` the equation is the residual g(y, c) = 0; for `minimize_scalar` and `minimize` it
is the stationarity condition grad_y g(y, c) = 0 (unconstrained, or with bounds none of which is
active at the optimum). The residual (and any derivative callback the user passes: `fprime`, `jac`,
`hess`, ...) is recorded as a sub-tape (`scipy.callbacks`), so its partial derivatives are exact; the
solver's iterations are never differentiated. A prepared call runs the same SciPy call again at the
new values, on replays of those recordings (of each path a callback took while recorded). A root the
solver reports as not converged raises `ConvergenceError`; the derivative needs dg/dy invertible at
the root (else `SingularError`) and as many equations as unknowns. A call that reads nothing variable
of f's is SciPy's own, on plain values.

What the solver returns keeps its form: a float (a 0-d traced array), an array, `RootResults` or an
`OptimizeResult` whose `x` (or `root`) is traced, and whose `fun` (minimizers) is the objective at the
traced optimum, recorded on f's tape. Other fields (`nfev`, `jac`, `hess_inv`, ...) are SciPy's plain
values.
"""

from __future__ import annotations

import contextlib
import operator
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...._errors import ConvergenceError, NotSupportedError
from ..data.graph import Tape, Traced, current_tape
from ..data.sites import user_location
from ..numpy.hooks import hook
from ..prims.objects import holds_traced
from ..tracing.tracer import TapeArray
from .callbacks import Callback, SubTape, bound_arguments, call_scipy, gradient_tape, own_slot, replayed
from .implicit import ImplicitRoot, Solve

__all__ = ["ROOT_FINDERS"]


@dataclass(frozen=True)
class _Spec:
    #: the parameter holding the residual (or objective)
    fun: str
    #: parameters that may hold derivative callbacks, replayed like the residual
    derivatives: tuple[str, ...]
    #: "root" (g = 0) or "min" (grad g = 0)
    kind: str
    #: arguments forced on the SciPy call (so that convergence can be read), by name
    force: tuple[tuple[str, Any], ...]
    #: the root and whether it converged, from what SciPy returned (with `force`)
    read: Callable[[Any], tuple[Any, bool, str]]
    #: what the user receives: (SciPy's result, the traced root, the bound arguments the user gave,
    #: the traced objective at the root for minimizers) -> result
    give: Callable[[Any, Any, dict, Callable], Any]


def _scalar_read(r: Any) -> tuple[Any, bool, str]:
    root, info = r
    return root, bool(info.converged), str(info.flag)


def _scalar_give(r: Any, root: Any, user: dict, fun: Callable) -> Any:
    if user.get("full_output"):
        r[1].root = root
        return root, r[1]
    return root


def _newton_read(r: Any) -> tuple[Any, bool, str]:
    if hasattr(r, "zero_der"):  # array newton: (root, converged, zero_der)
        return r.root, bool(np.all(r.converged)), "not all elements converged"
    return _scalar_read(r)


def _newton_give(r: Any, root: Any, user: dict, fun: Callable) -> Any:
    if not user.get("full_output"):
        return root
    if hasattr(r, "zero_der"):
        return type(r)(root, r.converged, r.zero_der)
    r[1].root = root
    return root, r[1]


def _results_read(r: Any) -> tuple[Any, bool, str]:
    return r.root, bool(r.converged), str(r.flag)


def _results_give(r: Any, root: Any, user: dict, fun: Callable) -> Any:
    r.root = root
    return r


def _fsolve_read(r: Any) -> tuple[Any, bool, str]:
    return r[0], r[2] == 1, str(r[3])


def _fsolve_give(r: Any, root: Any, user: dict, fun: Callable) -> Any:
    return (root, r[1], r[2], r[3]) if user.get("full_output") else root


def _optimize_read(r: Any) -> tuple[Any, bool, str]:
    return r.x, bool(r.success), str(r.message)


def _optimize_give(r: Any, root: Any, user: dict, fun: Callable) -> Any:
    r.x = root
    return r


def _minimum_give(r: Any, root: Any, user: dict, fun: Callable) -> Any:
    r.x = root
    r.fun = fun(root)
    return r


_BRACKETED = _Spec("f", (), "root", (("full_output", True), ("disp", False)), _scalar_read, _scalar_give)

ROOT_FINDERS: dict[str, _Spec] = {
    **dict.fromkeys(("brentq", "brenth", "ridder", "bisect", "toms748"), _BRACKETED),
    "newton": _Spec(
        "func", ("fprime", "fprime2"), "root", (("full_output", True), ("disp", False)), _newton_read, _newton_give
    ),
    "root_scalar": _Spec("f", ("fprime", "fprime2"), "root", (), _results_read, _results_give),
    "fsolve": _Spec("func", ("fprime",), "root", (("full_output", True),), _fsolve_read, _fsolve_give),
    "root": _Spec("fun", ("jac",), "root", (), _optimize_read, _optimize_give),
    "minimize_scalar": _Spec("fun", (), "min", (), _optimize_read, _minimum_give),
    "minimize": _Spec("fun", ("jac", "hess"), "min", (), _optimize_read, _minimum_give),
}


# -- traced values among the other arguments (a starting point, a bracket, bounds) --------------------------
def _plain(value: Any, slots: list[int], tape: Tape) -> Any:
    """`value` with each traced leaf replaced by its value (its slot appended to `slots`)."""
    if isinstance(value, Traced):
        slots.append(own_slot(tape, value))
        return np.array(tape.values[slots[-1]])
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_plain(v, slots, tape) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.array([_plain(v, slots, tape) for v in value.ravel()], dtype=object).reshape(value.shape)
    return value


def _rebuild(template: Any, values: list) -> Any:
    """`template` (as `_plain` saw it) with its traced leaves taken from `values`, in order."""
    if isinstance(template, Traced):
        return np.array(values.pop(0))
    if isinstance(template, (list, tuple)) and not hasattr(template, "_fields"):
        return type(template)(_rebuild(v, values) for v in template)
    if isinstance(template, np.ndarray) and template.dtype == object:
        flat = [_rebuild(v, values) for v in template.ravel()]
        return np.array(flat, dtype=object).reshape(template.shape)
    return template


#: .solving: the calling thread runs a SciPy solver for f (its own calls of other solvers, root_scalar's
#: of brentq, run as they are; f's callbacks, which may call solvers themselves, run outside)
_STATE = threading.local()


@contextlib.contextmanager
def _solving(on: bool) -> Iterator[None]:
    before = getattr(_STATE, "solving", False)
    _STATE.solving = on
    try:
        yield
    finally:
        _STATE.solving = before


def _outside(fn: Callable) -> Callable:
    """`fn` run as f's code (where solvers it calls are differentiated again)."""

    def call(*args: Any) -> Any:
        with _solving(False):
            return fn(*args)

    return call


def _rule(name: str) -> Callable:
    spec = ROOT_FINDERS[name]
    label = f"scipy.optimize.{name}"

    def rule(original: Callable, *args: Any, **kwargs: Any) -> Any:
        tape = current_tape()
        if tape is None or getattr(_STATE, "solving", False):
            return original(*args, **kwargs)
        return _solve_inside_f(original, spec, label, tape, args, kwargs)

    return rule


def _solve_inside_f(original: Callable, spec: _Spec, label: str, tape: Tape, args: tuple, kwargs: dict) -> Any:
    where = user_location()
    try:
        user, extra = bound_arguments(original, args, kwargs)
    except TypeError:
        return original(*args, **kwargs)  # SciPy's own message for a wrong call
    fun = user.get(spec.fun)
    if not callable(fun):
        return original(*args, **kwargs)
    fun = _outside(fun)
    for p in spec.derivatives:
        if callable(user.get(p)):
            user[p] = _outside(user[p])
    if spec.kind == "min" and user.get("constraints"):
        raise NotSupportedError(
            f"AutoTape does not differentiate {label} with constraints (called at {where}): the optimum "
            "is not a stationary point of the objective; differentiate f with di.AutoFiniteDiff(), or write "
            "the constraint into the objective (a penalty or a change of variables)"
        )
    if callable(user.get("hessp")):
        raise NotSupportedError(
            f"AutoTape does not differentiate {label} with hessp (called at {where}); pass hess=, or let "
            "SciPy approximate it"
        )
    errors: list[BaseException] = []
    picks = _returned_with_value(spec, user)
    residual = Callback(tape, fun, extra, label, errors, operator.itemgetter(0) if picks else None)
    derivatives = {
        p: Callback(tape, fun if p in picks else user[p], extra, label, errors,
                    operator.itemgetter(picks[p]) if p in picks else None)
        for p in spec.derivatives
        if callable(user.get(p)) or p in picks
    }  # fmt: skip
    value = (lambda y: fun(y, *extra)[0]) if picks else (lambda y: fun(y, *extra))
    traced_slots: list[int] = []
    templates = {p: v for p, v in user.items() if p not in (spec.fun, "args", *derivatives) and holds_traced(v)}
    call = {p: v for p, v in user.items() if p not in ("args", "callback")}
    for p, v in templates.items():
        call[p] = _plain(v, traced_slots, tape)
    if "callback" in user:
        call["callback"] = user["callback"]
    call.update(spec.force)
    call[spec.fun] = residual
    call.update(derivatives)
    with _solving(True):
        result = call_scipy(original, errors, **call)
    root, converged, why = spec.read(result)
    objective = residual.at(root)
    paths = {spec.fun: residual.others(objective)}
    paths.update((p, cb.others(cb.at(root))) for p, cb in derivatives.items())
    inputs = list(objective.outer)
    for sub in (s for recorded in paths.values() for s in recorded):
        inputs.extend(s for s in sub.outer if s not in inputs)
    first_template = len(inputs)
    inputs.extend(traced_slots)
    if not any(tape.slots[s].variable for s in inputs):  # nothing variable of f's is read (an array f
        # made of constants may be traced): SciPy's own call on plain values, its own result and errors
        with _solving(True):
            return original(**{p: _plain(v, [], tape) if p in templates else v for p, v in user.items()})
    if spec.kind == "root":
        _check_converged(converged, label, where, why)
    equation = gradient_tape(tape, objective, root) if spec.kind == "min" else objective
    if spec.kind == "min":
        captured = [tape.values[s] for s in objective.outer]
        _check_stationary(converged, equation, objective, root, captured, label, where, why)
        _check_bounds(call.get("bounds"), root, equation, captured, label, where)
    equations, unknowns = int(np.prod(equation.shape)), int(np.size(root))
    if equations != unknowns:  # root(method="lm") with more equations: a least-squares fit, not a root
        raise NotSupportedError(
            f"AutoTape differentiates {label} (called at {where}) for as many equations as unknowns; this "
            f"residual has {equations} equations in {unknowns} unknowns, and its least-squares solution is "
            "not a root of it; differentiate f with di.AutoFiniteDiff()"
        )
    solve = _resolver(original, spec, label, where, call, templates, objective, equation, paths, inputs, first_template)
    prim = ImplicitRoot(Solve(label, where, equation, solve))
    slot = tape.add_node(prim, tuple(inputs), {}, np.array(root, dtype=np.float64))
    traced = TapeArray(tape, slot)
    return spec.give(result, traced, user, value)


def _returned_with_value(spec: _Spec, user: dict) -> dict[str, int]:
    """The derivatives the user's function returns with its value (`jac=True`, `fprime=True`; with
    root_scalar's `fprime2=True` it returns value, first and second derivative), by their position."""
    if "fprime2" in spec.derivatives and user.get("fprime2") is True:
        return {"fprime": 1, "fprime2": 2}
    first = next((p for p in ("fprime", "jac") if p in spec.derivatives), None)
    return {first: 1} if first is not None and user.get(first) is True else {}


def _resolver(
    original: Callable,
    spec: _Spec,
    label: str,
    where: str,
    call: dict,
    templates: dict,
    objective: SubTape,
    equation: SubTape,
    paths: dict[str, list[SubTape]],
    inputs: list[int],
    first_template: int,
) -> Callable[[tuple], np.ndarray]:
    """The SciPy call at the node's input values (a prepared call: the callbacks are replays)."""
    fixed = {p: v for p, v in call.items() if p != "callback"}
    if "callback" in call:
        fixed["callback"] = None  # f's own progress callback: f is not run by a replay

    def solve(values: tuple) -> np.ndarray:
        by_slot = dict(zip(inputs, values))
        arguments = dict(fixed)
        rest = list(values[first_template:])
        for p, template in templates.items():
            arguments[p] = _rebuild(template, rest)
        for p, recorded in paths.items():
            arguments[p] = replayed([(sub, [by_slot[s] for s in sub.outer]) for sub in recorded])
        captured = [by_slot[s] for s in objective.outer]
        with _solving(True):
            result = original(**arguments)
        root, converged, why = spec.read(result)
        if spec.kind == "root":
            _check_converged(converged, label, where, why)
        else:
            _check_stationary(converged, equation, objective, root, captured, label, where, why)
            _check_bounds(arguments.get("bounds"), root, equation, captured, label, where)
        return np.asarray(root, dtype=np.float64)

    return solve


def _check_converged(converged: bool, label: str, where: str, why: str) -> None:
    if not converged:
        raise ConvergenceError(
            f"{label} did not converge (called at {where}): {why.rstrip('.')}. AutoTape differentiates the root a "
            "solver found, not an unconverged iterate; give a better starting point or bracket, more "
            "iterations or a looser tolerance"
        )


def _check_stationary(
    converged: bool, equation: SubTape, objective: SubTape, root: Any, captured: list, label: str, where: str, why: str
) -> None:
    """A minimizer's result is differentiated where it converged, or where it stopped short of its
    tolerance on rounding (BFGS's "precision loss") at a point whose gradient is negligible."""
    if converged:
        return
    gradient = np.max(np.abs(equation.evaluate(root, captured)), initial=0.0)
    value = np.max(np.abs(objective.evaluate(root, captured)), initial=0.0)
    if not gradient <= 1e-6 * (1.0 + value):
        _check_converged(False, label, where, f"{why} (the gradient there is {gradient:.1e})")


def _check_bounds(bounds: Any, root: Any, equation: SubTape, captured: list, label: str, where: str) -> None:
    """An optimum on an active bound is not a stationary point: refused. So is one a bounded method
    stopped short of a bound it approached (`fminbound` comes within its tolerance of it): the stationary
    point one Newton step on the gradient predicts lies beyond the bound. `bounds`: SciPy's plain values."""
    if bounds is None:
        return
    y = np.ravel(np.asarray(root, dtype=np.float64))
    if hasattr(bounds, "lb"):  # scipy.optimize.Bounds
        lo = np.broadcast_to(np.asarray(bounds.lb, dtype=np.float64), y.shape)
        hi = np.broadcast_to(np.asarray(bounds.ub, dtype=np.float64), y.shape)
    else:
        pairs = [bounds] if np.ndim(bounds) == 1 and len(bounds) == 2 and y.size == 1 else list(bounds)
        lo = np.array([-np.inf if p[0] is None else float(p[0]) for p in pairs])
        hi = np.array([np.inf if p[1] is None else float(p[1]) for p in pairs])
    span = np.where(np.isfinite(hi - lo), hi - lo, 1.0 + np.abs(y))
    near = (np.abs(y - lo) <= 1e-6 * span) | (np.abs(hi - y) <= 1e-6 * span)
    if not np.any(near) and np.any(np.isfinite(lo) | np.isfinite(hi)):
        x = equation.tape.slots[equation.tape.x]
        env = equation.env(np.reshape(y, x.shape).astype(x.dtype), captured)
        gradient = np.ravel(np.asarray(equation.run(env), dtype=np.float64))
        hessian = np.asarray(equation.jacobian_y(env), dtype=np.float64)
        with np.errstate(all="ignore"):
            try:
                predicted = y - np.linalg.solve(hessian, gradient)
            except np.linalg.LinAlgError:  # singular: the derivative raises SingularError
                predicted = y
        near = (predicted < lo) | (predicted > hi)
    if np.any(near):
        raise NotSupportedError(
            f"AutoTape does not differentiate {label} at an optimum on a bound (called at {where}): the "
            "optimum is not a stationary point there; widen the bounds, or differentiate f with "
            "di.AutoFiniteDiff()"
        )


for _name in ROOT_FINDERS:
    hook("scipy.optimize", _name, always=True)(lambda name=_name: _rule(name))
