"""The composition matrix: every wrapper over every engine, every operator, every kind of argument.

A cell is one engine x one composition (plain, `SecondOrder(e, e)`, `AutoSparse(e)`,
`AutoSparse(SecondOrder(e, e))`, `AutoSparse(MixedMode(e, e))` where the engine has both modes) x one
operator x NumPy or native input x one kind of data: flat arrays, a dict tree with a `Constant` context,
`has_aux`, or complex arrays (docs/complex.md: a holomorphic map, a real loss of complex x,
whose `hessian` must be refused). The cells are generated from these factors, never listed by hand.
Each cell prepares at one point and calls at another (the prepared call twice, the prep's method, the
unprepared operator and the full variant), and compares every result with an analytic reference. Its
outcome is "pass", or "refused" (a `NotSupportedError`, the documented refusal, with its message), or a
defect: "wrong" (a number off the reference) or "crash" (any other exception).

    >>> from diface.testing import composition_cells
    >>> cells = composition_cells(["tape"])
    >>> len(cells), cells[0]
    (195, Cell(engine='tape', composition='plain', operator='pushforward', arrays='numpy', data='flat'))
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _operators as ops
from .._arrays import NUMPY
from .._backend import Backend
from .._contexts import Constant
from .._engines import engines, namespace_of
from .._errors import ArgumentError, NotSupportedError
from .._mixed_mode import MixedMode
from .._optable import OPERATORS
from .._second_order import SecondOrder
from .._sparse._autosparse import AutoSparse
from ._check import tolerances

__all__ = ["COMPOSITIONS", "Cell", "Outcome", "check_cell", "composition_cells", "run_compositions"]

#: how an engine is wrapped; None where the composition does not apply to it
COMPOSITIONS: dict[str, Callable[[Backend], Backend | None]] = {
    "plain": lambda e: e,
    "SecondOrder": lambda e: SecondOrder(e, e),
    "AutoSparse": lambda e: AutoSparse(e),
    "AutoSparse(SecondOrder)": lambda e: AutoSparse(SecondOrder(e, e)),
    "AutoSparse(MixedMode)": lambda e: AutoSparse(MixedMode(e, e)) if len(e.native_modes) == 2 else None,
}
DATA = ("flat", "tree+Constant", "has_aux", "complex")
_FIRST_ORDER = ("pushforward", "pullback", "derivative", "gradient", "jacobian")
_SCALAR_X = ("derivative", "second_derivative")


@dataclass(frozen=True)
class Cell:
    engine: str
    composition: str
    operator: str
    arrays: str
    data: str

    def label(self) -> str:
        return f"{self.composition} of {self.engine}, {self.operator}, {self.arrays} input, {self.data}"


@dataclass(frozen=True)
class Outcome:
    cell: Cell
    status: str
    detail: str = ""


def _operators(data: str) -> tuple[str, ...]:
    if data == "has_aux":
        return _FIRST_ORDER
    names = tuple(OPERATORS)
    return names if data in ("flat", "complex") else tuple(op for op in names if op not in _SCALAR_X)


def _holds_complex128(engine: Backend) -> bool:
    """Whether the engine's own arrays can hold a complex128 array (its conversion refuses it otherwise)."""
    try:
        engine.array_ops(np.zeros(1)).asarray(np.zeros(1, np.complex128))
    except (NotSupportedError, ArgumentError):
        return False
    return True


def composition_cells(engine_names: Iterable[str] | None = None, sample: int = 1) -> list[Cell]:
    """Every cell for the registered engines (or `engine_names`), generated from the factors; with
    `sample` k > 1, a deterministic 1-in-k subset (chosen by a hash of the cell, the same on every run)."""
    registered = engines()
    names = list(registered) if engine_names is None else list(engine_names)
    cells = []
    for name in names:
        engine = registered[name].backend()
        # native input differs from NumPy input where the engine works on arrays of its own (native complex
        # input where those arrays hold complex128: MLX's do not)
        native = engine.is_available() and engine.array_ops(np.zeros(1)) is not NUMPY
        if native:
            registered[name].configure_for_float64()  # as check_cell does (JAX's 64-bit mode) before asking
        native_complex = native and _holds_complex128(engine)
        for composition, wrap in COMPOSITIONS.items():
            if wrap(engine) is None:
                continue
            for data in DATA:
                for operator in _operators(data):
                    both = native_complex if data == "complex" else native
                    for arrays in ("numpy", "native") if both else ("numpy",):
                        cells.append(Cell(name, composition, operator, arrays, data))
    if sample > 1:
        cells = [c for c in cells if zlib.crc32(repr(c).encode()) % sample == 0]
    return cells


# -- the functions and their references ---------------------------------------------------------------------
C0, C1 = np.array([1.5, 0.5]), np.array([2.0, -0.75])


def _vector(xp: Any, x: Any) -> Any:
    """R^4 -> R^4, J = diag(x^2 + 2 + 0.1 S) + 0.1 x 1^T (S = sum(x)): square and nonsingular near 0."""
    return x**3 / 3 + 2 * x + 0.1 * x * xp.sum(x)


def _vector_jacobian(x: np.ndarray) -> np.ndarray:
    return np.diag(x**2 + 2 + 0.1 * np.sum(x)) + 0.1 * np.outer(x, np.ones_like(x))


def _scalar(xp: Any, x: Any) -> Any:
    return xp.sum(xp.sin(x) * x**2) + 0.1 * xp.sum(x) ** 2


def _scalar_gradient(x: np.ndarray) -> np.ndarray:
    return np.cos(x) * x**2 + 2 * x * np.sin(x) + 0.2 * np.sum(x)


def _scalar_hessian(x: np.ndarray) -> np.ndarray:
    return np.diag(-np.sin(x) * x**2 + 4 * x * np.cos(x) + 2 * np.sin(x)) + 0.2


def _curve(xp: Any, t: Any) -> Any:
    return xp.stack([xp.sin(t), t**2, xp.exp(t)])


def _tree_vector(xp: Any, p: dict, c: Any) -> dict:
    s = xp.sum(p["a"]) + xp.sum(p["b"])
    part = lambda v: v**3 / 3 + 2 * v + 0.1 * v * s
    return {"u": c[0] * part(p["a"]), "v": c[1] * part(p["b"])}


def _tree_scalar(xp: Any, p: dict, c: Any) -> Any:
    s = xp.sum(p["a"]) + xp.sum(p["b"])
    return c[0] * xp.sum(xp.sin(p["a"]) * p["a"] ** 2) + c[1] * xp.sum(xp.sin(p["b"]) * p["b"] ** 2) + 0.1 * s**2


def _tree_scales(c: np.ndarray) -> np.ndarray:
    return np.repeat(c, 2)


@dataclass(frozen=True)
class _Problem:
    """One function (written with `xp`) and its flat references; x trees are dicts {"a": (2,), "b": (2,)}."""

    f: Callable
    x0: Any
    x1: Any
    scalar_y: bool
    tree: bool = False

    def flat(self, x: Any) -> np.ndarray:
        if self.tree:
            return np.concatenate([x["a"], x["b"]])
        return np.asarray(x, dtype=np.complex128 if np.iscomplexobj(x) else np.float64)


def _complex_loss(xp: Any, z: Any) -> Any:
    """A real loss of complex z: sum |z|^4 / 4 + 0.1 Re(sum z)^2 (gradient |z|^2 z + 0.2 Re(sum z))."""
    a = xp.real(z * xp.conj(z))
    return xp.sum(a * a) / 4 + 0.1 * xp.real(xp.sum(z)) ** 2


def _problem(operator: str, data: str) -> _Problem:
    if data == "complex":
        if operator in _SCALAR_X:
            return _Problem(_curve, np.complex128(0.3 + 0.2j), np.complex128(-0.7 + 0.4j), False)
        z0 = np.array([0.2 + 0.1j, -0.4 + 0.3j, 0.1 - 0.2j, 0.3 + 0.05j])
        z1 = np.array([0.5 - 0.2j, 0.1 + 0.4j, -0.3 - 0.1j, -0.2 + 0.3j])
        scalar = _scalar_problem(operator)
        return _Problem(_complex_loss if scalar else _vector, z0, z1, scalar)
    if operator in _SCALAR_X:
        return _Problem(_curve, np.float64(0.3), np.float64(-0.7), False)
    scalar = _scalar_problem(operator)
    x0, x1 = np.array([0.2, -0.4, 0.1, 0.3]), np.array([0.5, 0.1, -0.3, -0.2])
    if data == "tree+Constant":
        return _Problem(
            _tree_scalar if scalar else _tree_vector,
            {"a": x0[:2], "b": x0[2:]},
            {"a": x1[:2], "b": x1[2:]},
            scalar,
            tree=True,
        )
    return _Problem(_scalar if scalar else _vector, x0, x1, scalar)


def _scalar_problem(operator: str) -> bool:
    """Whether the cell's f is scalar: operators that need one, and the Laplacian (whose full variant then
    returns the gradient)."""
    return OPERATORS[operator].scalar_y or operator == "laplacian"


#: the order of the Taylor cells
TAYLOR_ORDER = 3


def _sin_shift(a: np.ndarray, j: int) -> np.ndarray:
    """The j-th derivative of sin at a."""
    return np.sin(a + j * np.pi / 2)


def _taylor_scalar_terms(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """dʲ/dtʲ of sin(a + t b)(a + t b)² at t = 0, j = 1..3, elementwise (Leibniz)."""
    p = [a**2, 2 * a * b, 2 * b**2, 0 * a]
    return [sum(math.comb(k, j) * _sin_shift(a, j) * b**j * p[k - j] for j in range(k + 1)) for k in (1, 2, 3)]


def _taylor_vector_terms(x: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    """dʲ/dtʲ of `_vector` at x + t v, j = 1..3 (x³/3 + 2x + 0.1 x S, S = sum(x))."""
    s, w = np.sum(x), np.sum(v)
    return [x**2 * v + 2 * v + 0.1 * (v * s + x * w), 2 * x * v**2 + 0.2 * v * w, 2 * v**3]


def _taylor_complex_loss(z: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    """dʲ/dtʲ of `_complex_loss` at z + t v (t real), j = 1..3: with |z + t v|² = A + B t + C t², the
    quartic term's coefficients, and the real-part square's."""
    a, b, c = np.abs(z) ** 2, 2 * np.real(np.conj(z) * v), np.abs(v) ** 2
    r, w = np.real(np.sum(z)), np.real(np.sum(v))
    return [
        np.sum(a * b / 2) + 0.2 * r * w,
        np.sum((b**2 + 2 * a * c) / 2) + 0.2 * w**2,
        np.sum(3 * b * c) + 0 * w,
    ]


def _references(problem: _Problem, x: Any, c: np.ndarray | None) -> dict:
    """value, derivative (or gradient), Jacobian, Hessian / second derivative, flat, at x."""
    if problem.f is _curve:
        t = complex(x) if np.iscomplexobj(x) else float(x)
        value = np.array([np.sin(t), t**2, np.exp(t)])
        jac = np.array([[np.cos(t)], [2 * t], [np.exp(t)]])
        return {"value": value, "jac": jac, "second": np.array([-np.sin(t), 2.0, np.exp(t)])}
    if problem.f is _complex_loss:  # the gradient 2∂̄f; the hvp is the pushforward of the gradient map
        z = np.asarray(x)
        grad = np.abs(z) ** 2 * z + 0.2 * np.real(np.sum(z))
        value = _complex_loss(np, z)
        return {
            "value": np.asarray(value),
            "jac": grad[None, :],
            "hvp": lambda t: _complex_hvp(z, t),
            "taylor": lambda t: np.stack(_taylor_complex_loss(z, t)),
            "lap": np.sum(4 * np.abs(z) ** 2) + 0.2 * z.size,  # over real and imaginary parts
        }
    xf = problem.flat(x)
    if problem.tree:
        assert c is not None  # a tree problem has its Constant
        scales = _tree_scales(c)
    else:
        scales = np.ones(4)
    if problem.scalar_y:
        s = np.sum(xf)
        if problem.tree:
            value = np.sum(scales * np.sin(xf) * xf**2) + 0.1 * s**2
            grad = scales * (np.cos(xf) * xf**2 + 2 * xf * np.sin(xf)) + 0.2 * s
            hess = np.diag(scales * (-np.sin(xf) * xf**2 + 4 * xf * np.cos(xf) + 2 * np.sin(xf))) + 0.2
        else:
            value, grad, hess = _scalar(np, xf), _scalar_gradient(xf), _scalar_hessian(xf)

        def taylor_scalar(t: np.ndarray) -> np.ndarray:
            terms = _taylor_scalar_terms(xf, t)
            w = np.sum(t)
            square = [0.2 * s * w, 0.2 * w**2, 0.0]
            return np.array([np.sum(scales * term) + sq for term, sq in zip(terms, square)])

        return {
            "value": np.asarray(value),
            "jac": grad[None, :],
            "hess": hess,
            "taylor": taylor_scalar,
            "lap": np.trace(hess),
        }
    value = scales * _vector(np, xf)
    jac = scales[:, None] * _vector_jacobian(xf)
    if np.iscomplexobj(xf):  # a holomorphic f: its Laplacian over real and imaginary parts is 0
        lap = np.zeros(4, complex)
    else:
        lap = scales * (2 * xf + 0.2)
    taylor = lambda t: np.concatenate([scales * term for term in _taylor_vector_terms(xf, t)])
    return {"value": value, "jac": jac, "taylor": taylor, "lap": lap}


def _complex_hvp(z: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The pushforward of g(z) = |z|^2 z + 0.2 Re(sum z): 2|z|^2 t + z^2 conj(t) + 0.2 Re(sum t)."""
    return 2 * np.abs(z) ** 2 * t + z**2 * np.conj(t) + 0.2 * np.real(np.sum(t))


# -- running a cell ---------------------------------------------------------------------------------------
def _dense(a: Any) -> Any:
    if hasattr(a, "toarray"):
        return a.toarray()
    if hasattr(a, "to_dense") and getattr(a, "layout", None) is not None and "sparse" in str(a.layout):
        return a.to_dense()
    if hasattr(a, "todense") and not hasattr(a, "__array__"):
        return a.todense()
    return _registered_sparse_to_dense(a)


def _registered_sparse_to_dense(a: Any) -> Any:
    """A sparse matrix of a registered array library without the methods above (TensorFlow's
    `tf.sparse.SparseTensor`) made dense by that library's `ArrayOps`; anything else as it is."""
    import sys

    from .._arrays._registry import _REGISTERED, framework_ops

    for framework in list(_REGISTERED):
        if framework in sys.modules:
            ops = framework_ops(framework)
            if ops.is_sparse(a):
                return ops.sparse_to_dense(a)
    return a


def _flat_result(r: Any) -> np.ndarray:
    """A result (array, number, dict tree of arrays, sparse matrix, or a Jacobian or Hessian as a dict of
    dicts of blocks) as one 1-D float64 array: leaves in sorted-key order, matrices row by row."""
    if isinstance(r, dict) and r and all(isinstance(v, dict) for v in r.values()):
        rows = [[_flat_result(r[i][j]).reshape(-1, 2) for j in sorted(r[i])] for i in sorted(r)]
        return np.block(rows).reshape(-1)
    if isinstance(r, dict):
        return np.concatenate([_flat_result(r[k]) for k in sorted(r)]) if r else np.zeros(0)
    if isinstance(r, tuple):  # Taylor coefficients, in order
        return np.concatenate([_flat_result(v) for v in r])
    r = _dense(r)
    if hasattr(r, "detach"):
        r = r.detach().cpu().resolve_conj()
    r = np.asarray(r)
    return r.reshape(-1) if np.iscomplexobj(r) else np.asarray(r, dtype=np.float64).reshape(-1)


def _expected(
    operator: str, problem: _Problem, refs: dict, tangent: np.ndarray | None
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray]:
    """(value, lower or None, result), flat, of the full variant."""
    jac = refs["jac"]
    if operator == "pushforward":
        return refs["value"], None, jac @ tangent
    if operator == "pullback":  # the adjoint: Jᴴ t (Jᵀ t for real J)
        return refs["value"], None, tangent @ np.conj(jac)
    if operator in ("derivative", "jacobian"):
        return refs["value"], None, jac.reshape(-1) if operator == "jacobian" else jac[:, 0]
    if operator == "gradient":
        return refs["value"], None, jac[0]
    if operator == "second_derivative":
        return refs["value"], jac[:, 0], refs["second"]
    if operator == "hessian":
        return refs["value"], jac[0], refs["hess"].reshape(-1)
    if operator == "hvp":
        return None, jac[0], refs["hvp"](tangent) if "hvp" in refs else refs["hess"] @ tangent
    if operator == "taylor":
        return refs["value"], None, refs["taylor"](tangent)
    if operator == "laplacian":
        return refs["value"], jac[0] if problem.scalar_y else jac.reshape(-1), refs["lap"]
    if operator in ("inverse_pushforward", "inverse_pullback"):
        assert tangent is not None  # an operator with a tangent has one (`_tangent`)
        adjoint = np.conj(jac).T
        return refs["value"], None, np.linalg.solve(jac if operator == "inverse_pushforward" else adjoint, tangent)
    raise AssertionError(operator)


def _tangent(operator: str, problem: _Problem, seed: int) -> tuple[np.ndarray | None, Any]:
    """(flat tangent, tangent as the call takes it: a tree for tree problems) for operators with one."""
    spec = OPERATORS[operator]
    if spec.tangent is None:
        return None, None
    rng = np.random.default_rng(seed)
    t = rng.standard_normal(4)
    if np.iscomplexobj(problem.x0) and not (spec.tangent == "ty" and problem.scalar_y):
        t = t + 1j * rng.standard_normal(4)
    if not problem.tree:
        return t, t
    keys = ("a", "b") if spec.tangent == "tx" else ("u", "v")
    return t, {keys[0]: t[:2], keys[1]: t[2:]}


def check_cell(cell: Cell) -> Outcome:
    """Prepare and call the cell (see the module docstring); its outcome."""
    engine = engines()[cell.engine]
    engine.configure_for_float64()
    base = engine.backend()
    backend = COMPOSITIONS[cell.composition](base)
    assert backend is not None
    xp = namespace_of(base)
    problem = _problem(cell.operator, cell.data)
    operator, spec = cell.operator, OPERATORS[cell.operator]
    array_ops = base.array_ops(np.zeros(1))
    native = (lambda a: array_ops.asarray(a)) if cell.arrays == "native" else (lambda a: a)

    def arg(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: native(np.asarray(v)) for k, v in value.items()}
        return native(np.asarray(value)) if not isinstance(value, (np.float64, np.complex128)) else native(value)

    tree = cell.data == "tree+Constant"
    aux = cell.data == "has_aux"
    f: Callable[..., Any]
    if tree:
        f = lambda x, c: problem.f(xp, x, c)
    elif aux:
        f = lambda x: (problem.f(xp, x), {"twice": 2 * x})
    else:
        f = lambda x: problem.f(xp, x)
    contexts0 = (Constant(arg(C0)),) if tree else ()
    contexts1 = (Constant(arg(C1)),) if tree else ()
    _, t0 = _tangent(operator, problem, 1)
    t1_flat, t1 = _tangent(operator, problem, 2)
    extra0 = () if t0 is None else (arg(t0),)
    extra1 = () if t1 is None else (arg(t1),)
    kw: dict = {"has_aux": True} if aux else {}
    if operator == "taylor":
        kw["order"] = TAYLOR_ORDER
    refs = _references(problem, problem.x1, C1 if tree else None)
    prepare, plain, full = getattr(ops, f"prepare_{operator}"), getattr(ops, operator), getattr(ops, spec.full_name)
    method = operator
    if operator == "taylor":  # `taylor` is the full variant; the plain one has no value
        plain, method = ops.taylor_coefficients, "taylor_coefficients"
    if cell.data == "complex" and operator == "hessian":  # a real f of complex x has no complex Hessian
        try:
            prepare(f, backend, arg(problem.x0))
        except NotSupportedError as e:
            return Outcome(cell, "refused", str(e).splitlines()[0])
        except Exception as e:
            return Outcome(cell, "crash", f"{type(e).__name__}: {e}")
        return Outcome(cell, "wrong", "the Hessian of a real f of complex x must be refused")
    want = _expected(operator, problem, refs, t1_flat)
    rtol, atol = tolerances(backend, operator)
    x1 = arg(problem.x1)

    def compare(what: str, got: Any, expected: Any) -> str | None:
        g = _flat_result(got)
        w = np.asarray(expected).reshape(-1)
        if g.shape != w.shape:
            return f"{what}: {g.size} values, expected {w.size}"
        if not np.allclose(g, w, rtol=rtol, atol=atol):
            return f"{what}: max abs error {np.max(np.abs(g - w)):.3g} (tolerance {atol:.1g})"
        return None

    def check_aux(what: str, got: Any) -> str | None:
        return compare(f"{what} aux", got["twice"], 2 * problem.flat(problem.x1))

    try:
        prep = prepare(f, backend, arg(problem.x0), *extra0, *contexts0, **kw)
        calls = [
            ("prepared", lambda: plain(f, backend, x1, *extra1, *contexts1, prep=prep, **kw)),
            ("prepared, again", lambda: plain(f, backend, x1, *extra1, *contexts1, prep=prep, **kw)),
            ("prep method", lambda: getattr(prep, method)(x1, *extra1, *contexts1)),
            ("unprepared", lambda: plain(f, backend, x1, *extra1, *contexts1, **kw)),
        ]
        for what, call in calls:
            result = call()
            if aux:
                result, got_aux = result
                problem_aux = check_aux(what, got_aux)
                if problem_aux:
                    return Outcome(cell, "wrong", problem_aux)
            wrong = compare(what, result, want[2])
            if wrong:
                return Outcome(cell, "wrong", wrong)
        result = full(f, backend, x1, *extra1, *contexts1, prep=prep, **kw)
        fields = spec.fields
        for name, got in zip(fields, result):
            expected = {"value": want[0], "lower": want[1], "result": want[2]}[name]
            if name == "value" and aux:
                got, got_aux = got
                problem_aux = check_aux("full variant", got_aux)
                if problem_aux:
                    return Outcome(cell, "wrong", problem_aux)
            wrong = compare(f"full variant, {name}", got, expected)
            if wrong:
                return Outcome(cell, "wrong", wrong)
    except NotSupportedError as e:
        return Outcome(cell, "refused", str(e).splitlines()[0])
    except Exception as e:
        return Outcome(cell, "crash", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return Outcome(cell, "pass")


def run_compositions(cells: list[Cell], progress: Callable[[str], None] | None = None) -> list[Outcome]:
    """The outcome of every cell (engines that are not installed are left out)."""
    outcomes = []
    available = {name: e.backend().is_available() for name, e in engines().items()}
    for cell in cells:
        if not available.get(cell.engine, False):
            continue
        outcomes.append(check_cell(cell))
        if progress is not None:
            progress(cell.label())
    return outcomes
