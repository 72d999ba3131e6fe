"""Does my function agree on every engine? `check_agreement` answers it without analytic derivatives.

Every operator that applies to `f` at `x` (from the shapes: `derivative` for a scalar x, `gradient`,
`hessian` and `hvp` for a scalar output, `jacobian`, `pushforward` and `pullback` always) is computed on
every backend, and the results are compared with a reference backend's or, without one, each with
every other. Two results agree within the looser of the two backends' tolerances (exact engines: 300 ε;
finite differences: 300 ε^a, a their accuracy exponent), so finite differences are never held to an
exact engine's tolerance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from .. import _operators as ops
from .._backend import Backend
from .._call.trees.info import ravel
from .._call.trees.registry import is_tree
from .._contexts import Context
from .._engines import engine_of, namespace_of
from .._errors import ArgumentError, NotSupportedError
from .._table import format_table
from ._check import tolerances

__all__ = ["Agreement", "AgreementRow", "check_agreement"]

#: the operators `check_agreement` computes, in this order
OPERATORS = ("derivative", "second_derivative", "gradient", "jacobian", "hessian", "pushforward", "pullback", "hvp")


@dataclass
class AgreementRow:
    """One backend and operator: "agrees" (with `against`), "differs", "error" (the call raised; `detail`
    says what) or "unsupported" (the backend raised `NotSupportedError`, which it may). `error` is the
    largest absolute difference, `tolerance` what it was allowed (atol + rtol * the largest magnitude)."""

    backend: str
    operator: str
    status: str
    against: str = ""
    error: float = 0.0
    tolerance: float = 0.0
    detail: str = ""


@dataclass
class Agreement:
    """What `check_agreement` found: one row per backend, operator and comparison; `results` holds every
    result by (backend label, operator), as flat NumPy arrays; `notes` what was done on the way (a
    global setting switched on)."""

    rows: list[AgreementRow]
    results: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[AgreementRow]:
        return [r for r in self.rows if r.status in ("differs", "error")]

    @property
    def ok(self) -> bool:
        return not self.failed

    def table(self, rows: Sequence[AgreementRow] | None = None) -> str:
        body = [
            [
                r.backend,
                r.operator,
                r.status,
                r.against,
                f"{r.error:.2e}" if r.status in ("agrees", "differs") else "",
                f"{r.tolerance:.1e}" if r.tolerance else "",
                r.detail,
            ]
            for r in (self.rows if rows is None else rows)
        ]
        return format_table(["backend", "operator", "status", "against", "max error", "tolerance", "detail"], body)

    def __str__(self) -> str:
        notes = "".join(f"note: {n}\n" for n in self.notes)
        return notes + self.table()


def check_agreement(
    f: Callable | dict,
    backends: Sequence[Backend],
    x: Any,
    *contexts: Context,
    operators: Sequence[str] | None = None,
    reference: Backend | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> Agreement:
    """Compute every operator that applies on every backend and compare the results.

    Args:
        f: one function for every backend (plain NumPy code runs on `AutoFiniteDiff` and `AutoTape`;
            code using only arithmetic operators runs anywhere), or a dict giving the function per backend
            (`{di.AutoTorch(): f_torch}`) or per array module (`{numpy: f, torch: f_torch, jax.numpy:
            f_jax}`; `autograd.numpy` for `AutoAutograd`), looked up by backend first.
        backends: the backends to check.
        x: the point (NumPy arrays, or a tree of them); contexts follow as for any operator.
        operators: a subset of the operators that apply (default: all of them).
        reference: compare every backend with this one (computed too); None: every backend with every
            other.
        rtol: overrides the relative tolerance derived from the backends' accuracy.
        atol: overrides the absolute tolerance derived from the backends' accuracy.

    Returns:
        An `Agreement` report (print it for the table).

    Raises:
        AssertionError: with the table of disagreements and errors, where there is any.
        ArgumentError: for an operator name that does not apply, or no backend.

    A float64 `x` on an engine whose 64-bit mode is a global setting (JAX's `jax_enable_x64`) switches it
    on, as `python -m diface compare` does, and the report's notes say so.

    Example:
        >>> import numpy as np, diface as di
        >>> from diface.testing import check_agreement
        >>> f = lambda x: np.sum(np.sin(x) * x**2)
        >>> report = check_agreement(f, [di.AutoTape(), di.AutoFiniteDiff()], np.array([1.0, 2.0]))
        >>> report.ok, sorted({r.operator for r in report.rows})
        (True, ['gradient', 'hessian', 'hvp', 'jacobian', 'pullback', 'pushforward'])
    """
    backends = list(dict.fromkeys(backends))  # a backend named twice (or two equal ones) is checked once
    if reference is not None and reference not in backends:
        backends.append(reference)
    if not backends:
        raise ArgumentError("check_agreement: give at least one backend")
    dtype = _dtype(x)
    notes = _float64(backends, dtype)
    rng = np.random.default_rng(0)
    tx = _random_like(x, rng)
    y = _evaluate(f, backends, x, tx, contexts)
    ty = _random_like(y, rng)
    names = _operators(x, y, operators)
    results: dict[tuple[str, str], Any] = {}
    rows: list[AgreementRow] = []
    labels = {b: b.label() for b in backends}
    for b in backends:
        fb = _function_for(f, b)
        for name in names:
            extra = {"pushforward": (tx,), "hvp": (tx,), "pullback": (ty,)}.get(name, ())
            try:
                r = getattr(ops, name)(fb, b, x, *extra, *contexts)
            except NotSupportedError as e:
                rows.append(AgreementRow(labels[b], name, "unsupported", detail=_short(e)))
                continue
            except Exception as e:  # f or the engine raised: a failure of this backend
                rows.append(AgreementRow(labels[b], name, "error", detail=_short(e, _hint(f, b))))
                continue
            results[(labels[b], name)] = _flat(r)
    pairs = (
        [(b, reference) for b in backends if b != reference]
        if reference is not None
        else [(a, b) for i, a in enumerate(backends) for b in backends[i + 1 :]]
    )
    for name in names:
        for a, b in pairs:
            ra, rb = results.get((labels[a], name)), results.get((labels[b], name))
            if ra is None or rb is None:
                continue
            tol_r, tol_a = (max(t) for t in zip(tolerances(a, name, dtype), tolerances(b, name, dtype)))
            tol_r, tol_a = rtol if rtol is not None else tol_r, atol if atol is not None else tol_a
            error, scale = _difference(ra, rb)
            allowed = tol_a + tol_r * scale
            agrees = ra.shape == rb.shape and error <= allowed
            status = "agrees" if agrees else "differs"
            detail = "" if ra.shape == rb.shape else f"shapes {ra.shape} and {rb.shape}"
            rows.append(AgreementRow(labels[a], name, status, labels[b], error, allowed, detail))
    report = Agreement(rows, results, notes)
    if not report.ok:
        raise AssertionError(
            "check_agreement: the backends disagree\n"
            + "".join(f"note: {n}\n" for n in notes)
            + report.table(report.failed)
        )
    return report


def _float64(backends: list, dtype: np.dtype) -> list[str]:
    """Switch on the 64-bit mode of engines where it is global, for a float64 x; say so."""
    if dtype != np.float64:
        return []
    notes = []
    for b in backends:
        engine = engine_of(b)
        if engine is not None and engine.float64 is not None:
            engine.configure_for_float64()
            notes.append(f"{engine.name}: 64-bit mode switched on for a float64 x (as python -m diface compare does)")
    return list(dict.fromkeys(notes))


def _function_for(f: Callable | dict, backend: Backend) -> Callable:
    if not isinstance(f, dict):
        return f
    if backend in f:
        return f[backend]
    module = namespace_of(backend)
    for key, fn in f.items():
        if isinstance(key, ModuleType) and key.__name__ == module.__name__:
            return fn
    given = ", ".join(k.__name__ if isinstance(k, ModuleType) else repr(k) for k in f)
    raise ArgumentError(
        f"check_agreement: no function for {backend!r} (its arrays are {module.__name__}'s): the dict has {given}; "
        f"add {{{module.__name__}: f}} or {{{backend!r}: f}}"
    )


def _evaluate(f: Callable | dict, backends: list, x: Any, tx: Any, contexts: tuple) -> Any:
    """f's output at x, as the call path gives it for NumPy input (NumPy arrays), from the first backend
    that can run a pushforward of f."""
    error: Exception = ArgumentError("check_agreement: give at least one backend")
    for b in backends:
        try:
            return ops.value_and_pushforward(_function_for(f, b), b, x, tx, *contexts)[0]
        except Exception as e:  # this backend cannot run f: the next may; its own row will say why
            error = e
    raise AssertionError(f"check_agreement: no backend could evaluate f at x: {_short(error)}") from error


def _operators(x: Any, y: Any, asked: Sequence[str] | None) -> list[str]:
    scalar_x = not is_tree(x) and np.ndim(x) == 0
    scalar_y = not is_tree(y) and np.ndim(y) == 0
    applies = [
        name
        for name in OPERATORS
        if (name not in ("derivative", "second_derivative") or scalar_x)
        and (name not in ("gradient", "hessian", "hvp") or scalar_y)
    ]
    if asked is None:
        return applies
    wrong = [name for name in asked if name not in applies]
    if wrong:
        raise ArgumentError(
            f"check_agreement: {', '.join(map(repr, wrong))} does not apply here; the operators that apply to f at "
            f"this x are {', '.join(applies)}"
        )
    return list(asked)


def _random_like(a: Any, rng: np.random.Generator) -> Any:
    if is_tree(a):
        flat, unravel = ravel(a)
        return unravel(rng.standard_normal(np.shape(flat)).astype(np.asarray(flat).dtype))
    a = np.asarray(a)
    t = rng.standard_normal(a.shape).astype(a.dtype)
    return t if a.shape else t[()]


def _flat(result: Any) -> np.ndarray:
    if hasattr(result, "toarray"):  # a sparse matrix
        result = result.toarray()
    if is_tree(result):
        result = ravel(result)[0]
    return np.asarray(result, dtype=np.result_type(np.asarray(result).dtype, np.float64)).reshape(-1)


def _dtype(x: Any) -> np.dtype:
    flat = ravel(x)[0] if is_tree(x) else x
    return np.result_type(np.asarray(flat).dtype, np.float32)


def _difference(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(largest absolute difference, largest magnitude), where the shapes match."""
    if a.shape != b.shape or a.size == 0:
        return (0.0 if a.shape == b.shape else float("inf")), 0.0
    return float(np.max(np.abs(a - b))), float(max(np.max(np.abs(a)), np.max(np.abs(b))))


def _hint(f: Callable | dict, backend: Backend) -> str:
    if isinstance(f, dict):
        return ""
    module = namespace_of(backend).__name__
    if module == "numpy":
        return ""
    short = module.split(".")[0]
    return f" (one f for every backend: {backend!r} runs it on {module}'s arrays; give {{{module}: f_{short}}})"


def _short(e: BaseException, hint: str = "") -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    text = text if len(text) <= 160 else text[:157] + "..."
    return f"{type(e).__name__}: {text}{hint}"
