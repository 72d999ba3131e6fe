"""AutoTape's private package is layered: no module imports one that imports it back, and no function
imports a module of the package (each module's dependencies are its top-level imports)."""

from __future__ import annotations

import ast
import pathlib

import diface.backends._tape as package

ROOT = pathlib.Path(package.__file__).parent
MODULES = sorted(p.stem for p in ROOT.glob("*.py") if p.stem != "__init__")


def imports(name: str) -> tuple[set[str], list[str]]:
    """(modules of the package imported at top level, function-level imports of the package)."""
    tree = ast.parse((ROOT / f"{name}.py").read_text())
    top: set[str] = set()
    inner: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found = {node.module} if node.module else {a.name for a in node.names}
            if node in tree.body:
                top |= found
            else:
                inner.append(f"{name}:{node.lineno}")
    return top, inner


def test_no_function_level_imports_of_the_package():
    assert [line for name in MODULES for line in imports(name)[1]] == []


def test_the_imports_form_no_cycle():
    graph = {name: imports(name)[0] & set(MODULES) for name in MODULES}
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str, path: tuple) -> None:
        if state.get(name) == 1:
            raise AssertionError(f"import cycle: {' -> '.join((*path, name))}")
        if state.get(name) == 2:
            return
        state[name] = 1
        for dep in sorted(graph[name]):
            visit(dep, (*path, name))
        state[name] = 2
        order.append(name)

    for name in MODULES:
        visit(name, ())
    assert len(order) == len(MODULES)
