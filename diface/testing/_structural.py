"""The structural conformance database: where, cat, narrow and clamp, as the structural AD notes
define their linearizations, and scenarios built from its records.

Each record holds an operator, its metadata (masks, axes, starts, lengths: never differentiated),
exact float64 inputs, the output, and for each differentiable input a JVP for a given tangent and a
VJP for a given output cotangent, as PyTorch computed them (`scripts/generate_structural_db.py`).
The NumPy rules below are an independent implementation of the notes' linearizations; the tests check
the records against them, and every backend against both.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from .._contexts import Constant
from ._scenarios import Scenario

__all__ = ["FAMILIES", "Record", "apply", "linearize", "load_records", "structural_scenarios"]

FAMILIES = ("where", "cat", "narrow", "clamp")


# -- the operators, written once for every array namespace -------------------------------------------
def apply(xp: Any, op: str, meta: dict, inputs: list) -> Any:
    """The structural operator `op` with its metadata on the differentiable `inputs` (in the
    record's order), in namespace `xp`."""
    if op == "where":
        return xp.where(xp.asarray(np.asarray(meta["condition"], dtype=bool)), inputs[0], inputs[1])
    if op == "cat":
        return xp.concatenate(inputs, axis=meta["dim"])
    if op == "narrow":
        a = inputs[0]
        dim = meta["dim"] % a.ndim  # not len(a.shape): a symbolic shape (PyTensor) has no length
        index = (slice(None),) * dim + (slice(meta["start"], meta["start"] + meta["length"]),)
        return a[index]
    if op == "clamp":
        return xp.clip(inputs[0], inputs[1], inputs[2])
    raise KeyError(op)


def linearize(op: str, meta: dict, inputs: list[np.ndarray], tangents: list[np.ndarray]) -> np.ndarray:
    """The notes' linearization: the output tangent for the given input tangents, in NumPy."""
    if op == "where":
        mask = np.asarray(meta["condition"], dtype=bool)
        return np.where(mask, tangents[0], tangents[1])
    if op in ("cat", "narrow"):
        return np.asarray(apply(np, op, meta, tangents))
    if op == "clamp":
        x, lo, hi = np.broadcast_arrays(*inputs)
        dx, dlo, dhi = np.broadcast_arrays(*tangents)
        return np.where(x < lo, dlo, np.where(x > hi, dhi, dx))
    raise KeyError(op)


def _jacobian(op: str, meta: dict, inputs: list[np.ndarray], i: int) -> np.ndarray:
    """d output / d inputs[i], shape output.shape + inputs[i].shape, from the linearization."""
    x = np.asarray(inputs[i])
    zeros = [np.zeros_like(np.asarray(a)) for a in inputs]
    columns = []
    for k in range(x.size):
        seed = np.zeros(x.size)
        seed[k] = 1.0
        tangents = list(zeros)
        tangents[i] = seed.reshape(x.shape)
        columns.append(linearize(op, meta, inputs, tangents))
    out_shape = np.shape(apply(np, op, meta, [np.asarray(a) for a in inputs]))
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape) if columns else np.zeros(out_shape + x.shape)


# -- records ------------------------------------------------------------------------------------------
class Record:
    """One case of the database."""

    def __init__(self, data: dict) -> None:
        self.family: str = data["family"]
        self.case: str = data["case"]
        self.op: str = data["op"]
        self.meta: dict = data["metadata"]
        self.names: list[str] = data["differentiable"]
        self.inputs: list[np.ndarray] = [np.asarray(data["inputs"][n], dtype=np.float64) for n in self.names]
        self.output = np.asarray(data["output"], dtype=np.float64)
        self.jvp = {n: (np.asarray(v["tangent"]), np.asarray(v["jvp"])) for n, v in data["jvp"].items()}
        self.cotangent = np.asarray(data["vjp"]["cotangent"])
        self.vjp = {n: np.asarray(v) for n, v in data["vjp"]["cotangents"].items()}
        self.torch_version: str = data["torch_version"]

    def __repr__(self) -> str:
        return f"Record({self.family}: {self.case})"

    def scenario(self, name: str) -> Scenario:
        """The scenario differentiating the record's operator with respect to input `name`, the other
        inputs passed as Constant contexts; its probes are the record's JVP and VJP."""
        i = self.names.index(name)
        op, meta = self.op, self.meta

        def f(xp: Any, x: Any, *others: Any) -> Any:
            inputs = list(others)
            inputs.insert(i, x)
            return apply(xp, op, meta, inputs)

        def jacobian(x: Any, *others: Any) -> np.ndarray:
            inputs = [np.asarray(a) for a in others]
            inputs.insert(i, np.asarray(x))
            return _jacobian(op, meta, inputs, i)

        others = tuple(Constant(a) for j, a in enumerate(self.inputs) if j != i)
        tangent, jvp = self.jvp[name]
        x = self.inputs[i]
        return Scenario(
            f"{self.family}: {self.case}, d/d{name}",
            f,
            x,
            np.asarray(x + 0.01),  # prepared nearby: no tie is closer than 0.05 (see the generator)
            jacobian=jacobian,
            contexts=others,
            prep_contexts=others,
            probes=(("pushforward", tangent, jvp), ("pullback", self.cotangent, self.vjp[name])),
            family=self.family,
            role=name,
        )


@lru_cache(maxsize=1)
def _database() -> dict:
    text = resources.files("diface.testing").joinpath("data/structural.json").read_text()
    return json.loads(text)


def load_records() -> list[Record]:
    """The records of the database shipped with diface."""
    return [Record(r) for r in _database()["records"]]


def structural_scenarios(families: tuple[str, ...] = FAMILIES) -> list[Scenario]:
    """One scenario per record and differentiable input of the structural conformance database
    (where, cat, narrow and clamp, as the structural notes define them).

    Example:
        >>> from diface.testing import structural_scenarios
        >>> sorted({s.family for s in structural_scenarios()})
        ['cat', 'clamp', 'narrow', 'where']
    """
    return [r.scenario(n) for r in load_records() if r.family in families for n in r.names]
