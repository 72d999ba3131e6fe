"""Tree scenarios: functions of dicts, tuples and nested containers of arrays, with analytic references.

A `TreeScenario` is written once against an array namespace `xp`, like a `Scenario`; its references
are the Jacobian (and, for a scalar output, the Hessian) of the flat problem, `ravel(y)` against
`ravel(x)` (leaves in JAX's order: dict keys sorted), from which every operator's expected result
follows, laid out as JAX and `torch.func` lay it out. `check_tree_operator` runs an operator on one
(unprepared and prepared at the other point, plain and full variant, twice each, with the tree layout
and with `output="matrix"` for the matrices).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._call.trees.info import TreeInfo
from .._call.trees.registry import flattener_for, tree_paths
from .._engines import namespace_of
from ._check import Failure

__all__ = ["TreeScenario", "check_tree_operator", "tree_scenarios"]


@dataclass(frozen=True, eq=False)
class TreeScenario:
    """One function of a tree (or an array) returning a tree (or an array), with the flat Jacobian
    `jacobian(x_flat)` (shape `(ny, nx)`) and, for a scalar output, the flat Hessian `hessian(x_flat)`."""

    name: str
    f: Callable[..., Any]
    x: Any
    prep_x: Any
    jacobian: Callable[[np.ndarray], np.ndarray]
    hessian: Callable[[np.ndarray], np.ndarray] | None = None
    # what the kit's loop reads on every scenario
    mutates: bool = False
    layout: Any = None
    family: str | None = None
    role: str | None = None
    needs: frozenset[str] = frozenset()
    _bound: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"TreeScenario({self.name!r})"

    def bind(self, xp: Any) -> Callable[..., Any]:
        fn = self._bound.get(xp)
        if fn is None:
            f = self.f

            def fn(x: Any) -> Any:
                return f(xp, x)

            fn.__name__ = fn.__qualname__ = self.name.replace(" ", "_")
            self._bound[xp] = fn
        return fn

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float64)

    @property
    def x_info(self) -> TreeInfo:
        return TreeInfo(self.x, "x", self.name)

    def value(self) -> Any:
        return self.f(np, self.x)

    @property
    def y_info(self) -> TreeInfo:
        return TreeInfo(self.value(), "y", self.name)

    @property
    def scalar_y(self) -> bool:
        return self.y_info.shapes == ((),) and not _is_tree(self.value())

    def operators(self) -> list[str]:
        ops = ["pushforward", "pullback", "jacobian"]
        if self.scalar_y:
            ops.append("gradient")
            if self.hessian is not None:
                ops += ["hvp", "hessian"]
        return ops

    def flat_x(self) -> np.ndarray:
        info = self.x_info
        return np.asarray(info.ravel_leaves(info.flattener.flatten(self.x)[0]), dtype=np.float64)


def _is_tree(a: Any) -> bool:
    from .._call.trees.registry import is_tree

    return is_tree(a)


def _blocks(m: np.ndarray, rows: TreeInfo | None, cols: TreeInfo) -> Any:
    """The matrix `m` cut into a tree (rows) of trees (columns), as JAX's jacobian lays it out."""

    def inner(i: int, r_shape: tuple, a: int, b: int) -> Any:
        return cols.unflatten(
            [
                m[a:b, c0:c1].reshape(r_shape + c_shape)
                for c0, c1, c_shape in zip(cols.offsets, cols.offsets[1:], cols.shapes)
            ]
        )

    if rows is None:
        return inner(0, (), 0, m.shape[0])
    return rows.unflatten(
        [inner(i, s, a, b) for i, (a, b, s) in enumerate(zip(rows.offsets, rows.offsets[1:], rows.shapes))]
    )


def expected(scenario: TreeScenario, op: str, tangent: Any = None) -> Any:
    """The reference result of the plain operator `op` (a tree, in the JAX layout)."""
    xi = scenario.x_info
    xf = scenario.flat_x()
    jac = np.atleast_2d(scenario.jacobian(xf))
    y = scenario.value()
    yi = TreeInfo(y, "y", scenario.name) if _is_tree(y) else None
    if op == "gradient":
        return xi.unravel(jac[0])
    if op == "jacobian":
        return _blocks(jac, yi, xi)
    if op == "hessian":
        assert scenario.hessian is not None, "no Hessian reference"
        return _blocks(scenario.hessian(xf), xi, xi)
    t = _ravel_np(tangent)
    if op == "pushforward":
        r = jac @ t
        return yi.unravel(r) if yi is not None else r.reshape(np.shape(y))
    if op == "pullback":
        return xi.unravel(jac.T @ t)
    if op == "hvp":
        assert scenario.hessian is not None, "no Hessian reference"
        return xi.unravel(scenario.hessian(xf) @ t)
    raise KeyError(op)


def _ravel_np(tree: Any) -> np.ndarray:
    if not _is_tree(tree):
        return np.asarray(tree, dtype=np.float64).reshape(-1)
    leaves, _ = flattener_for(tree).flatten(tree)
    return np.concatenate([np.asarray(v, dtype=np.float64).reshape(-1) for v in leaves] or [np.zeros(0)])


def _tangent(scenario: TreeScenario, op: str, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    like = scenario.value() if op == "pullback" else scenario.x
    if not _is_tree(like):
        return np.asarray(rng.standard_normal(np.shape(like)))
    info = TreeInfo(like, "t", scenario.name)
    return info.unravel(rng.standard_normal(info.n))


def _convert(xp: Any, tree: Any) -> Any:
    """The tree with its leaves as arrays of `xp` (f written with xp is called on them as they are)."""
    if not _is_tree(tree):
        return xp.asarray(np.asarray(tree, dtype=np.float64))
    flattener = flattener_for(tree)
    leaves, spec = flattener.flatten(tree)
    return flattener.unflatten(spec, [xp.asarray(np.asarray(v, dtype=np.float64)) for v in leaves])


def _compare(got: Any, want: Any, rtol: float, atol: float) -> str | None:
    if _is_tree(want):
        if not _is_tree(got):
            return f"a {type(got).__name__}, expected a tree"
        if type(got) is not type(want):
            return f"a {type(got).__name__}, expected a {type(want).__name__}"
        g_paths, w_paths = tree_paths(got, "y"), tree_paths(want, "y")
        if [p for p, _ in g_paths] != [p for p, _ in w_paths]:
            return f"leaves {[p for p, _ in g_paths]}, expected {[p for p, _ in w_paths]}"
        g_leaves, w_leaves = [v for _, v in g_paths], [v for _, v in w_paths]
    else:
        g_leaves, w_leaves = [got], [want]
    for i, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        g = np.asarray(g.detach().cpu() if hasattr(g, "detach") else g)
        if g.shape != np.shape(w):
            return f"leaf {i}: shape {g.shape}, expected {np.shape(w)}"
        if not np.allclose(g, w, rtol=rtol, atol=atol):
            return f"leaf {i}: max abs error {np.max(np.abs(g - w)):.3g}"
    return None


def check_tree_operator(
    backend: Any, scenario: TreeScenario, operator: str, *, rtol: float, atol: float
) -> list[Failure]:
    """Run `operator` on a tree scenario: unprepared, and prepared at the other point (through
    `di.op(..., prep=)` and the prep's method), plain and full variant, each twice; the tree layout
    checked against the references, and `output="matrix"` for jacobian and hessian."""
    from .. import _operators as ops
    from .._optable import OPERATORS

    spec = OPERATORS[operator]
    xp = namespace_of(backend)
    f = scenario.bind(xp)
    failures: list[Failure] = []

    def fail(variant: str, message: str) -> None:
        failures.append(Failure(backend.label(), scenario.name, operator, variant, message))

    x, prep_x = _convert(xp, scenario.x), _convert(xp, scenario.prep_x)
    t_np = _tangent(scenario, operator, 1) if spec.tangent else None
    extra = (_convert(xp, t_np),) if spec.tangent else ()
    prep_extra = (_convert(xp, _tangent(scenario, operator, 2)),) if spec.tangent else ()
    want = expected(scenario, operator, t_np)
    plain, full = getattr(ops, operator), getattr(ops, spec.full_name)
    try:
        prep = getattr(ops, f"prepare_{operator}")(f, backend, prep_x, *prep_extra)
    except Exception as e:
        fail("prepare", f"{type(e).__name__}: {e}")
        prep = None
    for prepared in (False, True):
        if prepared and prep is None:
            continue
        for is_full in (False, True):
            for repeat in (1, 2):
                variant = (
                    f"{spec.full_name if is_full else operator}, {'prepared' if prepared else 'unprepared'}"
                    f"{', via prep method' if prepared and repeat == 2 else ''}, call {repeat}"
                )
                try:
                    if prepared and repeat == 2:
                        result = getattr(prep, spec.full_name if is_full else operator)(x, *extra)
                    else:
                        result = (full if is_full else plain)(f, backend, x, *extra, prep=prep if prepared else None)
                except Exception as e:
                    fail(variant, f"raised {type(e).__name__}: {e}")
                    continue
                got = result[-1] if is_full else result
                problem = _compare(got, want, rtol, atol)
                if problem:
                    fail(variant, problem)
    if operator in ("jacobian", "hessian"):
        xf = scenario.flat_x()
        if operator == "jacobian":
            matrix = np.atleast_2d(scenario.jacobian(xf))
        else:
            assert scenario.hessian is not None, "no Hessian reference"
            matrix = scenario.hessian(xf)
        try:
            got = plain(f, backend, x, output="matrix")
        except Exception as e:
            fail("output='matrix'", f"raised {type(e).__name__}: {e}")
        else:
            g = np.asarray(got.detach().cpu() if hasattr(got, "detach") else got)
            if g.reshape(-1).shape != matrix.reshape(-1).shape or not np.allclose(
                g.reshape(matrix.shape), matrix, rtol=rtol, atol=atol
            ):
                fail("output='matrix'", f"shape {g.shape}, expected {matrix.shape}, or values differ")
    return failures


# -- the scenarios ---------------------------------------------------------------------------------------
def _dict_to_scalar(xp: Any, t: dict) -> Any:
    # sum(w**2 * b) + sum(sin(v)): keys sorted: b (2,), v (3,), w (2,)
    return xp.sum(t["w"] ** 2 * t["b"]) + xp.sum(xp.sin(t["v"]))


def _jac_dict_to_scalar(x: np.ndarray) -> np.ndarray:
    b, v, w = x[0:2], x[2:5], x[5:7]
    return np.concatenate([w**2, np.cos(v), 2 * w * b])[None, :]


def _hess_dict_to_scalar(x: np.ndarray) -> np.ndarray:
    b, v, w = x[0:2], x[2:5], x[5:7]
    h = np.zeros((7, 7))
    for i in range(2):
        h[i, 5 + i] = h[5 + i, i] = 2 * w[i]
        h[5 + i, 5 + i] = 2 * b[i]
    h[2:5, 2:5] = np.diag(-np.sin(v))
    return h


def _tuple_to_dict(xp: Any, t: tuple) -> dict:
    a, m = t  # a (2,), m (2, 2)
    return {"lin": m @ a, "sq": xp.sum(a**2)}


def _jac_tuple_to_dict(x: np.ndarray) -> np.ndarray:
    a, m = x[0:2], x[2:6].reshape(2, 2)
    jac = np.zeros((3, 6))
    jac[0:2, 0:2] = m  # lin = m @ a
    for i in range(2):
        jac[i, 2 + 2 * i : 4 + 2 * i] = a
    jac[2, 0:2] = 2 * a  # sq
    return jac


def _nested(xp: Any, t: dict) -> Any:
    # t = {"enc": {"k": (2,), "s": ()}, "dec": [(2,), ()]}: flat order dec[0], dec[1], enc.k, enc.s
    return xp.sum(t["enc"]["k"] * t["dec"][0]) * t["enc"]["s"] + t["dec"][1] ** 2


def _jac_nested(x: np.ndarray) -> np.ndarray:
    d0, d1, k, s = x[0:2], x[2], x[3:5], x[5]
    return np.concatenate([k * s, [2 * d1], d0 * s, [np.sum(k * d0)]])[None, :]


def _hess_nested(x: np.ndarray) -> np.ndarray:
    d0, k, s = x[0:2], x[3:5], x[5]
    h = np.zeros((6, 6))
    for i in range(2):
        h[i, 3 + i] = h[3 + i, i] = s
        h[i, 5] = h[5, i] = k[i]
        h[3 + i, 5] = h[5, 3 + i] = d0[i]
    h[2, 2] = 2.0
    return h


def _with_empty(xp: Any, t: dict) -> dict:
    # t = {"e": (0,), "u": (3,), "z": None}: an empty leaf and an empty subtree
    return {"cube": t["u"] ** 3, "empty": t["e"] * 2.0, "total": xp.sum(t["u"]) + xp.sum(t["e"])}


def _jac_with_empty(x: np.ndarray) -> np.ndarray:
    u = x  # the empty leaf has no entries: x_flat is u
    jac = np.zeros((4, 3))
    jac[0:3] = np.diag(3 * u**2)
    jac[3] = 1.0
    return jac


def tree_scenarios() -> list[TreeScenario]:
    """Trees in and out: a dict to a scalar, a tuple to a dict, a nested dict of a dict and a list to a
    scalar (with 0-d leaves), and a dict with an empty leaf and a None subtree to a dict (with an empty
    leaf). Each with a second point to prepare at."""
    return [
        TreeScenario(
            "dict to scalar",
            _dict_to_scalar,
            {"w": np.array([0.5, -1.2]), "b": np.array([0.3, 0.8]), "v": np.array([0.1, -0.7, 1.4])},
            {"w": np.array([1.1, 0.4]), "b": np.array([-0.6, 0.2]), "v": np.array([0.9, 0.3, -0.2])},
            jacobian=_jac_dict_to_scalar,
            hessian=_hess_dict_to_scalar,
        ),
        TreeScenario(
            "tuple to dict",
            _tuple_to_dict,
            (np.array([0.7, -0.4]), np.array([[1.0, 0.5], [-0.3, 2.0]])),
            (np.array([-1.1, 0.6]), np.array([[0.2, -0.8], [1.5, 0.4]])),
            jacobian=_jac_tuple_to_dict,
        ),
        TreeScenario(
            "nested to scalar",
            _nested,
            {"enc": {"k": np.array([0.4, -0.9]), "s": np.array(1.3)}, "dec": [np.array([0.6, 0.2]), np.array(-0.5)]},
            {"enc": {"k": np.array([1.0, 0.3]), "s": np.array(-0.7)}, "dec": [np.array([-0.4, 0.8]), np.array(0.9)]},
            jacobian=_jac_nested,
            hessian=_hess_nested,
        ),
        TreeScenario(
            "empty leaves",
            _with_empty,
            {"e": np.zeros(0), "u": np.array([0.5, -1.0, 0.8]), "z": None},
            {"e": np.zeros(0), "u": np.array([1.2, 0.3, -0.6]), "z": None},
            jacobian=_jac_with_empty,
        ),
    ]
