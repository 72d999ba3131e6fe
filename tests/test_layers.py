"""diface is layered: every module imports only modules of its own layer or of layers below it, and the
imports (function-level ones and those for type checkers included) form no cycle.

Layers, from the bottom: leaf libraries (errors, tables, coloring algorithms) -> values (arrays,
contexts, trees, signatures, patterns, registries) -> the contract's types (problem, kernel,
linearization, the operator table) -> derivations -> the backend base classes -> engines -> the call
path -> the public API and wrappers -> entry points (the package, the command line, the tour, the test
kit). Capability attributes (`Backend.sparse_results`, `colors_both_ways`, `ArrayOps` hooks) and
registries filled from above (array libraries, tree libraries, engines, boundaries) let lower layers
ask without importing upward.
"""

from __future__ import annotations

import ast
import pathlib

import diface

ROOT = pathlib.Path(diface.__file__).parent

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "leaf",
        (
            "diface._errors",
            "diface._table",
            "diface._sparse._graph",
            "diface._sparse._compiled",
            "diface._sparse._orders",
            "diface._sparse._distance1",
            "diface._sparse._star",
            "diface._sparse._acyclic",
            "diface._sparse._bicolor",
            "diface._sparse._forest",
            "diface._sparse._pattern",
        ),
    ),
    (
        "values",
        (
            "diface._arrays",
            "diface._contexts",
            "diface._call.check",
            "diface._call.convert",
            "diface._call.complex",
            "diface._call.trees",
            "diface._user_code",
            "diface._boundary",
            "diface._memory",
            "diface._gmres",
            "diface._executors",
            "diface._sparse._coloring",
            "diface._sparse._plans",
            "diface._sparse._layout",
            "diface._sparse._validate",
            "diface._sparse",
            "diface._sparsity",
            "diface._sparsity._deps",
        ),
    ),
    ("contract", ("diface._problem", "diface._kernel", "diface._linearization", "diface._optable")),
    ("derivations", ("diface._derive",)),
    ("backend", ("diface._backend", "diface._wrapper", "diface._engines", "diface._memory")),
    ("engines", ("diface.backends",)),
    (
        "call path",
        (
            "diface._call",
            "diface._call.trees.codec",
        ),
    ),
    (
        "public API and wrappers",
        (
            "diface._operators",
            "diface._memory.scan",
            "diface._second_order",
            "diface._mixed_mode",
            "diface._sparse._autosparse",
            "diface._distributed",
            "diface._sparse._detectors",
            "diface._sparse._spy",
            "diface._jacobian_operator",
            "diface._differentiate_with",
            "diface.extend",
        ),
    ),
    (
        "entry points",
        ("diface", "diface.__main__", "diface._cli", "diface._tour", "diface.testing", "diface._sparse.examples"),
    ),
]


def module_names() -> list[str]:
    names = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def layer_of(module: str) -> int:
    """The layer of `module`: the longest prefix listed (a package's modules share its layer)."""
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank is not None, f"{module} is in no layer: add it to LAYERS"
    return rank


def imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported diface module, line, function-level) for every import of a diface module in `module`."""
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT.parent / module.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top = set(map(id, tree.body))
    # imports under `if TYPE_CHECKING:` count too: a cycle among annotations is a cycle of the design
    for block in tree.body:
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test):
            top |= set(map(id, block.body))
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            if not stem.startswith("diface"):
                continue
            # `from . import x` imports the submodule x where it is one
            targets = [f"{stem}.{a.name}" if _is_module(f"{stem}.{a.name}") else stem for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("diface")]
        for target in targets:
            found.append((target, node.lineno, id(node) not in top))
    return found


def _is_module(name: str) -> bool:
    base = ROOT.parent / name.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def test_every_module_has_a_layer():
    for module in module_names():
        layer_of(module)


def test_imports_only_look_down():
    upward = []
    for module in module_names():
        own = layer_of(module)
        for target, line, lazy in imports(module):
            if layer_of(target) > own:
                where = "function-level " if lazy else ""
                upward.append(
                    f"{module}:{line} {where}imports {target} ({LAYERS[layer_of(target)][0]} above {LAYERS[own][0]})"
                )
    assert upward == [], "\n".join(upward)


def test_no_import_cycle_lazy_imports_included():
    graph = {m: {t for t, _, _ in imports(m)} for m in module_names()}
    state: dict[str, int] = {}

    def visit(name: str, path: tuple) -> None:
        if state.get(name) == 1:
            cycle = (*path[path.index(name) :], name)
            raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
        if state.get(name) == 2 or name not in graph:
            return
        state[name] = 1
        for dep in sorted(graph[name]):
            # a package's __init__ importing its own modules is not a cycle with them importing siblings
            visit(dep, (*path, name))
        state[name] = 2

    for name in graph:
        visit(name, ())


def test_the_core_never_names_an_engine():
    """Modules outside `diface.backends` (and the entry points) import no framework and name no engine."""
    frameworks = ("torch", "jax", "autograd", "jaxlib")
    core = [m for m in module_names() if layer_of(m) not in (5, 8)]  # engines and entry points may
    named = []
    for module in core:
        path = ROOT.parent / (module.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT.parent / module.replace(".", "/") / "__init__.py"
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name.split(".")[0] in frameworks:
                    named.append(f"{module}:{node.lineno} imports {name}")
        for engine in ("AutoTorch", "AutoJAX", "AutoAutograd", "AutoTape", "AutoFiniteDiff"):
            if engine in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
                n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }:
                named.append(f"{module} names {engine}")
    assert named == [], "\n".join(named)
