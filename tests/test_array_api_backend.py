"""The one-file engine (`tests/array_api_backend.py`) passes the test kit: the default scenarios, every
layout and edge shape, 8 threads sharing preparations, and trees; and it is written against the
extension API alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import diface as di
from diface.testing import (
    check_cell,
    check_threads,
    composition_cells,
    default_scenarios,
    edge_scenarios,
    engine_of,
    layout_scenarios,
    namespace_of,
    test_differentiation,
    tree_scenarios,
)

strict = pytest.importorskip("array_api_strict")

from array_api_backend import AutoArrayAPI, Dual, xp  # noqa: E402 - after the skip

BACKEND = AutoArrayAPI()
FILE = Path(__file__).with_name("array_api_backend.py")


def _statuses(report) -> dict:
    counts: dict = {}
    for row in report.rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    return counts


#: the engine has no Taylor mode, and its dual numbers do not nest: the core's derivation refuses
NO_NESTING = "no Taylor mode of its own, and its pushforward does not nest"


def _passes_but_taylor(report) -> None:
    """Every check passes, but for Taylor coefficients and Laplacians (and the thread check running
    them), which are refused as the core's derivation must refuse them here."""
    refused = [r for r in report.rows if r.status != "pass"]
    assert refused and all(r.status == "unsupported" and r.reason.startswith(NO_NESTING) for r in refused), [
        (r.scenario, r.operator, r.status) for r in refused
    ]
    assert {r.operator for r in refused} <= {"taylor", "laplacian", "threads"}


def test_default_scenarios():
    """Every operator of every default scenario (every variant, unprepared and prepared, twice), the
    dot-product identity, and every operator from 8 threads sharing one preparation ("threads")."""
    report = test_differentiation([BACKEND], default_scenarios())  # raises with a table on any failure
    _passes_but_taylor(report)
    assert {"dot product", "threads", "hessian", "second_derivative"} <= {r.operator for r in report.rows}


def test_layouts_and_edges():
    """x, tangents, Constant arrays, caches, y and out= in every layout; 0-d, empty, 3-d, float32 (the
    edge scenarios from 8 threads too)."""
    report = test_differentiation([BACKEND], layout_scenarios() + edge_scenarios())
    _passes_but_taylor(report)


def test_eight_threads_two_thousand_calls():
    """The acceptance figure: 8 threads x 2,000 calls on one shared preparation, 0 wrong, 0 errors."""
    scenario = next(s for s in default_scenarios() if s.name == "vector to scalar")
    failures = check_threads(BACKEND, scenario, "gradient", threads=8, calls=2000, switch_interval=None)
    assert not failures, "\n".join(map(str, failures))


def test_tree_scenarios():
    report = test_differentiation([BACKEND], tree_scenarios())
    assert report.ok and len(report.rows) == 18


def test_composition_matrix_right_or_refused():
    """SecondOrder, AutoSparse and AutoSparse(SecondOrder) over the engine, NumPy and native input, flat,
    tree and has_aux data: every cell right, or a clear refusal: no sparsity tracer (the default
    detector of AutoSparse), no LU factorization of array_api_strict arrays (inverse products' "auto")."""
    outcomes = [check_cell(cell) for cell in composition_cells(["arrayapi"])]
    bad = [f"{o.cell.label()}: {o.status}: {o.detail}" for o in outcomes if o.status not in ("pass", "refused")]
    assert bad == [], "\n".join(bad)
    refusals = {o.detail.split(";")[0] for o in outcomes if o.status == "refused" and o.cell.data != "complex"}
    assert {r for r in refusals if "no Taylor mode of its own" not in r} == {
        "AutoArrayAPI() cannot trace f for its sparsity pattern",
        "diface has no LU factorization for array_api_strict arrays",
    }
    assert {o.cell.operator for o in outcomes if "no Taylor mode of its own" in o.detail} == {"taylor", "laplacian"}
    # complex data: the engine refuses it (its `check_complex`), the Hessian first, as the core refuses it
    complex_cells = [o for o in outcomes if o.cell.data == "complex"]
    assert all(o.status == "refused" for o in complex_cells)
    assert {o.detail.split(":")[1].strip() for o in complex_cells} == {
        "AutoArrayAPI's dual numbers are real",
        "x is complex, and a real f of complex x has no complex Hessian matrix (its second derivative is real-linear, "
        "not complex-linear). Use di.hvp (the pushforward of the gradient map), or di.hessian(di.realify(f), backend, "
        "pairs) for the real Hessian in (real, imaginary) coordinates",
    }
    assert sum(o.status == "pass" for o in outcomes) > 100


def test_registered_with_the_kit():
    assert engine_of(BACKEND).name == "arrayapi"
    assert namespace_of(BACKEND) is xp
    assert namespace_of(di.SecondOrder(BACKEND, BACKEND)) is xp


def test_numpy_in_numpy_out_and_native_in_native_out():
    f = lambda x: xp.sum(xp.sin(x) * x**2)
    x = np.array([0.3, -1.2, 2.0])
    g = di.gradient(f, BACKEND, x)
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, np.cos(x) * x**2 + 2 * x * np.sin(x), rtol=1e-14)
    h = di.hessian(f, BACKEND, strict.asarray(x))
    assert type(h) is type(strict.asarray(x))
    exact = np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x))
    np.testing.assert_allclose(np.asarray(h), exact, rtol=1e-14, atol=1e-14)
    assert di.check_available(BACKEND) and di.check_inplace(BACKEND)


def test_array_api_code_is_differentiated_as_it_is():
    """f written against the standard (`x.__array_namespace__()`) gets duals and `xp` as namespace."""

    def f(x):
        ns = x.__array_namespace__()
        return ns.sum(ns.exp(x) * ns.tanh(x))

    x = np.array([0.1, -0.4])
    np.testing.assert_allclose(
        di.gradient(f, BACKEND, x), np.exp(x) * np.tanh(x) + np.exp(x) * (1 - np.tanh(x) ** 2), rtol=1e-14
    )


def test_clear_errors():
    with pytest.raises(di.NotSupportedError, match=r"no derivative rule for xp\.asinh"):
        di.gradient(lambda x: xp.sum(xp.asinh(x)), BACKEND, np.ones(2))
    with pytest.raises(di.ArgumentError, match="AutoArrayAPI takes"):
        di.gradient(lambda x: x, BACKEND, "x")
    with pytest.raises(di.NotSupportedError, match="its own derivatives only"):  # duals through another engine
        di.hessian(lambda x: xp.sum(x**3), di.SecondOrder(BACKEND, di.AutoFiniteDiff()), strict.asarray(np.ones(2)))
    # finite differences over it, the other way round, compose as for any engine
    h = di.hessian(lambda x: xp.sum(x**3), di.SecondOrder(di.AutoFiniteDiff(), BACKEND), np.ones(2))
    np.testing.assert_allclose(h, 6 * np.eye(2), rtol=1e-6)


def test_nested_duals_carry_the_second_derivative():
    x = Dual(Dual(strict.asarray(0.5), strict.asarray(1.0)), Dual(strict.asarray(1.0), strict.asarray(0.0)))
    y = xp.sin(x) * x
    assert float(y.t.t) == pytest.approx(2 * np.cos(0.5) - 0.5 * np.sin(0.5), rel=1e-15)


def test_one_file_against_the_extension_api():
    """The backend imports nothing of diface but `diface`, `diface.extend` and `diface.testing`: no
    private module, no built-in backend."""
    tree = ast.parse(FILE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    ours = {name for name in imported if name.split(".")[0] in ("diface", "")}
    assert ours == {"diface", "diface.extend", "diface.testing"}
    assert "diface._" not in FILE.read_text() and "diface.backends" not in FILE.read_text()
    assert {name.split(".")[0] for name in imported} <= {
        *("__future__", "dataclasses", "math", "operator", "sys", "types", "typing"),  # the standard library
        *("array_api_strict", "diface"),
    }


def test_the_docs_page_quotes_the_file():
    """docs/add-a-backend.md walks through the file in excerpts (```py blocks, not run): each is verbatim."""
    page = (FILE.parent.parent / "docs" / "add-a-backend.md").read_text()
    excerpts = re.findall(r"^```py\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    assert len(excerpts) >= 10
    source = FILE.read_text()
    missing = [e for e in excerpts if e not in source]
    assert missing == [], "excerpts not in tests/array_api_backend.py:\n" + "\n---\n".join(missing)
