"""The composition matrix on every installed engine: each cell the right answer (or, where one is
documented, the NotSupportedError), never a wrong number or another exception."""

from __future__ import annotations

import collections

import pytest

from diface._optable import OPERATORS
from diface.testing import COMPOSITIONS, check_cell, composition_cells, engines

_SPARSE = ("AutoSparse", "AutoSparse(SecondOrder)", "AutoSparse(MixedMode)")
_TRACED = ("jacobian", "hessian", "inverse_pushforward", "inverse_pullback")

#: refusals the documentation promises, by (engine, composition, operator, data)
DOCUMENTED_REFUSALS: dict[tuple, str] = {
    # docs/backends/mlx.md: MLX exposes no graph to trace a global sparsity pattern from (AutoSparse's default
    # detector; DenseSparsityDetector works), and AutoMLX refuses complex inputs and outputs (no complex128, and
    # MLX's reverse-mode rule of complex powers is conjugated)
    **{
        ("mlx", c, op, d): "no sparsity tracer"
        for c in _SPARSE
        for op in _TRACED
        for d in ("flat", "tree+Constant", "has_aux")
    },
    **{("mlx", c, op, "complex"): "no complex inputs or outputs" for c in COMPOSITIONS for op in OPERATORS},
}


#: the engines diface ships: not a test engine that another test module registered before this one was
#: collected (tests/array_api_backend.py checks its own cells)
SHIPPED = sorted(name for name, e in engines().items() if e.backend.__module__.startswith("diface."))


def _cells() -> list:
    installed = [name for name in SHIPPED if engines()[name].backend().is_available()]
    return composition_cells(installed)


@pytest.mark.parametrize("operator", list(OPERATORS))
@pytest.mark.parametrize("engine", SHIPPED)
def test_every_cell_of_an_engine_is_right(engine, operator):
    if not engines()[engine].backend().is_available():
        pytest.skip(f"{engine} is not installed")
    outcomes = [check_cell(cell) for cell in composition_cells([engine]) if cell.operator == operator]
    bad = []
    for o in outcomes:
        key = (o.cell.engine, o.cell.composition, o.cell.operator, o.cell.data)
        if (o.cell.data, o.cell.operator) == ("complex", "hessian"):  # docs/complex.md: refused, naming hvp and realify
            if o.status != "refused" or "di.hvp" not in o.detail:
                bad.append(f"{o.cell.label()}: {o.status}, where the Hessian must be refused: {o.detail}")
            continue
        if o.status == "pass" or (o.status == "refused" and key in DOCUMENTED_REFUSALS):
            continue
        bad.append(f"{o.cell.label()}: {o.status}: {o.detail}")
    assert bad == [], "\n".join(bad)
    counts = collections.Counter(o.status for o in outcomes)
    assert counts["pass"] + counts["refused"] == len(outcomes)


def test_the_cells_are_generated_from_every_factor():
    cells = composition_cells(["tape", "torch"])
    assert {c.composition for c in cells} == set(COMPOSITIONS)
    assert {c.data for c in cells} == {"flat", "tree+Constant", "has_aux", "complex"}
    assert {c.arrays for c in cells if c.engine == "torch"} == {"numpy", "native"}
    assert {c.arrays for c in cells if c.engine == "tape"} == {"numpy"}
    # has_aux for first-order operators only; scalar-x operators on flat x only
    assert {c.operator for c in cells if c.data == "has_aux"} == {
        "pushforward",
        "pullback",
        "derivative",
        "gradient",
        "jacobian",
    }
    assert not [c for c in cells if c.data == "tree+Constant" and c.operator in ("derivative", "second_derivative")]
    assert {c.operator for c in cells if c.data == "complex"} == {c.operator for c in cells if c.data == "flat"}
    # finite differences have no reverse mode: no MixedMode of them
    assert not [c for c in composition_cells(["finitediff"]) if "MixedMode" in c.composition]
    sample = composition_cells(["tape", "torch"], sample=4)
    assert 0 < len(sample) < len(cells) and sample == composition_cells(["tape", "torch"], sample=4)


def test_a_wrong_engine_shows_in_its_cells():
    """The matrix is not a test that cannot fail: an engine whose pullbacks are off gives wrong cells."""
    from dataclasses import dataclass

    import diface as di
    from diface.extend import Result
    from diface.testing import register_engine

    @dataclass(frozen=True)
    class OffPullbacks(di.AutoTape):
        def prepare_pullback(self, problem, cotangents):
            kernel = super().prepare_pullback(problem, cotangents)

            def run(x, t, cv, y, full):
                value, _, results = kernel.run(x, t, cv, y, full)
                return Result(value, result=tuple(1.01 * r for r in results))

            return kernel.replace(run=run)

    register_engine(OffPullbacks, name="off-pullbacks", namespace="numpy")
    try:
        cells = [c for c in composition_cells(["off-pullbacks"]) if c.operator == "pullback"]
        outcomes = [check_cell(c) for c in cells]
        assert outcomes and all(o.status == "wrong" for o in outcomes)
    finally:
        from diface import _engines

        del _engines._ENGINES["off-pullbacks"]
