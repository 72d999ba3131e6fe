"""The structural conformance database: its records, their agreement with the notes' rules, and
every backend against both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import diface as di
from conftest import assert_operator, first_order_backends, operator_cases
from diface.testing import structural_scenarios
from diface.testing._structural import FAMILIES, apply, linearize, load_records

ROOT = Path(__file__).resolve().parent.parent
RECORDS = load_records()


def test_families_and_cases_cover_the_notes():
    cases = {(r.family, r.case) for r in RECORDS}
    assert {r.family for r in RECORDS} == set(FAMILIES)
    where = {c for f, c in cases if f == "where"}
    assert any("mixed mask" in c for c in where)
    assert any("scalar x broadcast against tensor y" in c for c in where)
    assert any("tensor x broadcast against scalar y" in c for c in where)
    dims = {r.meta["dim"] for r in RECORDS if r.family == "cat"}
    assert 0 in dims and -1 in dims and any(d > 0 for d in dims)  # leading, negative, interior
    assert {r.meta["dim"] >= 0 for r in RECORDS if r.family == "narrow"} == {True, False}
    bounds = [(r.inputs[1].ndim, r.inputs[1].shape == r.inputs[0].shape) for r in RECORDS if r.family == "clamp"]
    assert (0, False) in bounds and (2, True) in bounds and (1, False) in bounds  # scalar, tensor, broadcast
    assert all(r.torch_version for r in RECORDS)


@pytest.mark.parametrize("record", RECORDS, ids=repr)
def test_records_follow_the_notes(record):
    """The PyTorch-made records agree with an independent NumPy implementation of the notes' rules."""
    np.testing.assert_allclose(apply(np, record.op, record.meta, record.inputs), record.output, rtol=1e-15)
    for i, name in enumerate(record.names):
        tangent, jvp = record.jvp[name]
        tangents = [np.zeros_like(a) for a in record.inputs]
        tangents[i] = tangent
        np.testing.assert_allclose(linearize(record.op, record.meta, record.inputs, tangents), jvp, rtol=1e-13)
        # dot-product identity between the recorded JVP and VJP
        assert np.sum(record.cotangent * jvp) == pytest.approx(np.sum(record.vjp[name] * tangent), rel=1e-12)


def test_clamp_probes_avoid_ties():
    for r in RECORDS:
        if r.family == "clamp":
            x, lo, hi = np.broadcast_arrays(*r.inputs)
            assert np.min(np.abs(x - lo)) >= 0.05 and np.min(np.abs(x - hi)) >= 0.05
            assert (x < lo).any() and (x > hi).any() and ((x > lo) & (x < hi)).any()


def test_metadata_is_not_differentiated():
    """Masks, axes, starts and lengths never appear among the differentiable inputs."""
    for r in RECORDS:
        assert set(r.names).isdisjoint(r.meta)
        assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in r.inputs)


def test_generator_reproduces_the_shipped_file():
    pytest.importorskip("torch")
    script = ROOT / "scripts" / "generate_structural_db.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _sampled(cases: list) -> list:
    """JAX compiles per case (a second or two each): its Jacobians, which every record's check runs
    through the same vmapped pushforwards or pullbacks, on the first record of each family (where, cat,
    narrow, clamp) only; each record's own rule is still met by its pushforward and pullback (the
    database's JVP and VJP) on JAX, and by every case on every other backend. Cases with marks all stay."""
    kept, families = [], set()
    for case in cases:
        backend, scenario, op = case.values
        if isinstance(backend, di.AutoJAX) and op == "jacobian" and not case.marks:
            family = scenario.name.split(":")[0]
            if family in families:
                continue
            families.add(family)
        kept.append(case)
    return kept


@pytest.mark.parametrize(
    ("backend", "scenario", "op"), _sampled(operator_cases(first_order_backends(), False, structural_scenarios()))
)
def test_backend_against_the_database(backend, scenario, op):
    assert_operator(backend, scenario, op)
