"""Every engine has the same shape: a package `diface/backends/<name>/` whose class is its `__init__`'s and
whose modules are private and named by their job from one list (`JOBS`), the same job under the same
name in every engine, so that a reader who knows one engine finds the same piece in another (see
docs/add-a-backend.md, "The engine's package"). A new engine, or a new module of one, follows the list
or adds its job to it here and in the docs."""

from __future__ import annotations

import pathlib

import pytest

import diface
from diface._engines import engines

BACKENDS = pathlib.Path(diface.__file__).parent / "backends"

#: module name -> its job, in every engine that has one (no engine needs every job)
JOBS = {
    "_ops": "the engine's arrays as the core sees them: an `ArrayOps`, registered with `register_array_ops`",
    "_kernels": "first-order kernels: one (compiled) program per operator and variant",
    "_compile": "the compiler's own settings and caches, where compiling is a job apart (PyTensor)",
    "_transforms": "traceable building blocks of every kernel: products with J and Jᵀ, batched",
    "_linearize": "f linearized at a point (`prepare_linearize`) and the products afterwards",
    "_batching": "a batch of products or of points: one at a time, vmapped, or stacked",
    "_second_order": "second order: two modes nested, as `SecondOrderPlan`s or whole programs",
    "_taylor": "Taylor coefficients and exact Laplacians",
    "_sparsity": "the sparsity tracer: f's graph interpreted on index sets",
    "_sparsity_rules": "the tracer's rules per primitive, where they fill a module of their own",
    "_sparse": "sparse Jacobians and Hessians of `AutoSparse(engine)` as one compiled program",
    "_boundary": "the engine outside `DifferentiateWith`: f as one of the engine's primitives",
    "_memory": "reverse mode at bounded memory: `di.checkpoint` and `di.scan` by the engine's own mechanism",
    "_namespace": "the module f is written with (`register_engine(namespace=...)`) where diface adds to the library's",
    "_direct": "the library's own fastest call of each operator, what `python -m diface bench` measures against",
    "_trace": "f run on the engine's traced values (a recorded leaf, boxes, a symbolic graph)",
    "_trees": "the library's pytrees as diface's trees",
    "_inputs": "what users pass in (tensors as they hold them) and the guard around every kernel",
    "_shapes": "(co)tangents fitted to their values' shapes, results made the caller's",
    "_lock": "the lock (and thread) every computation of the engine holds (runs on)",
    "_modes": "the framework's process-wide and per-thread modes the engine sets or shares",
    "_env": "the framework imported on first use, quietly",
    "_internals": "the framework's internals the engine drives, bound on first use",
    "_messages": "what goes wrong and what to do, in words",
    "_forward": "forward mode of an engine that pushes tangents itself",
    "_reverse": "reverse mode of an engine that pulls cotangents itself",
    "_rule_fixes": "the framework's derivative rules that are wrong for some calls, repaired or refused",
    "_eager": "f on NumPy arrays, for a library without eager arrays",
    "_realify": "complex intermediates as real pairs, for a library that differentiates real graphs only",
    "_evaluator": "f evaluated at one point at a time (finite differences)",
    "_mappers": "executors: one task per point (finite differences)",
}
#: public modules kept for import paths users and the docs name, each `_namespace`'s contents (the
#: engine registers its namespace under that name, as before)
ALIASES = {"mlx": {"numpy"}, "pytensor": {"xp"}}
#: engines whose package holds folders, one per layer, checked by their own test (the tape's seven
#: layers: tests/test_tape_layers.py)
SHAPED_APART = {"tape"}


def _shipped() -> set[str]:
    """The engines diface ships (a test may register one of its own, such as the array-API toy)."""
    return {name for name, e in engines().items() if e.backend.__module__.startswith("diface.backends.")}


def _engines() -> list[str]:
    return sorted(name for name in _shipped() if name not in SHAPED_APART)


@pytest.mark.parametrize("name", _engines())
def test_every_engine_is_a_package_of_modules_named_by_job(name):
    engine = engines()[name]
    package = BACKENDS / name
    assert (package / "__init__.py").is_file(), f"{name}: an engine is a package diface/backends/{name}/"
    assert engine.backend.__module__ == f"diface.backends.{name}", "the backend class lives in the package"
    assert getattr(diface, engine.backend.__name__) is engine.backend
    modules = {p.stem for p in package.glob("*.py")} - {"__init__"}
    folders = {p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert not folders, f"{name}: modules lie flat in the package ({sorted(folders)})"
    unknown = sorted(modules - set(JOBS) - ALIASES.get(name, set()))
    assert not unknown, f"{name}: modules not named by a job in JOBS: {unknown} (rename, or add the job)"
    if engine.namespace.startswith("diface."):  # diface's own addition to the library's module
        shown = {"_namespace"} | ALIASES.get(name, set())
        assert engine.namespace in {f"diface.backends.{name}.{m}" for m in shown}


def test_nothing_else_in_backends():
    """Each entry of `diface/backends/` is an engine's package, its class its `__init__`'s."""
    entries = {p.name for p in BACKENDS.iterdir() if p.name not in ("__pycache__", "__init__.py")}
    assert entries == _shipped()
    for name in SHAPED_APART:
        assert (BACKENDS / name / "__init__.py").is_file()
        assert engines()[name].backend.__module__ == f"diface.backends.{name}"
