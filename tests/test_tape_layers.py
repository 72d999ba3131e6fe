"""AutoTape's package is layered: its folders are the seven layers of the package docstring, each module
imports only modules of its own layer or of layers below it, no module imports one that imports it
back, and no function imports a module of the package (each module's dependencies are its top-level
imports). The package's `__init__` (`AutoTape`, the engine's front door) imports its layers inside its
methods only, so that `import diface` does not load the tape."""

from __future__ import annotations

import ast
import pathlib

import diface.backends.tape as package

ROOT = pathlib.Path(package.__file__).parent
PACKAGE = package.__name__

#: the layers, from the bottom, and the folders that hold them
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("data", ("data",)),
    ("primitives and their rules", ("prims",)),
    ("running a tape: interpreted, compiled, forward mode", ("sweeps",)),
    ("the tracer", ("tracing",)),
    ("what NumPy's and SciPy's functions record", ("numpy", "scipy")),
    ("recording f and replaying the recording", ("recording",)),
    ("what the core calls", ("kernels", "analysis")),
]

#: every module of the layers, dotted from the package ("prims.elementwise"); the folders' __init__ too
MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for p in ROOT.rglob("*.py")
    if p.parent != ROOT
)


def layer_of(module: str) -> int:
    folder = module.split(".")[0]
    for i, (_, folders) in enumerate(LAYERS):
        if folder in folders:
            return i
    raise AssertionError(f"{module}: its folder is in no layer; add it to LAYERS")


def _path(module: str) -> pathlib.Path:
    path = ROOT / (module.replace(".", "/") + ".py")
    return path if path.exists() else ROOT / module.replace(".", "/") / "__init__.py"


def imports(module: str) -> tuple[set[str], list[str]]:
    """(modules of the package imported at top level, function-level imports of the package)."""
    path = _path(module)
    tree = ast.parse(path.read_text())
    here = PACKAGE.split(".") + (module.split(".") if path.name == "__init__.py" else module.split(".")[:-1])
    top: set[str] = set()
    inner: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = here[: len(here) - node.level + 1] if node.level else []
        stem = ".".join(base + ([node.module] if node.module else []))
        if not stem.startswith(PACKAGE + "."):
            continue  # diface's own modules, or a library
        stem = stem[len(PACKAGE) + 1 :]
        # `from . import x` imports the submodule x where it is one
        found = {f"{stem}.{a.name}" if f"{stem}.{a.name}" in MODULES else stem for a in node.names}
        if node in tree.body:
            top |= found
        else:
            inner.append(f"{module}:{node.lineno}")
    return top & set(MODULES), inner


def test_the_layers_cover_the_package():
    assert len(MODULES) > 80
    for module in MODULES:
        layer_of(module)
    assert [p.name for p in ROOT.glob("*.py")] == ["__init__.py"]  # every module is in a layer's folder
    folders = {p.parent for p in ROOT.rglob("*.py")} - {ROOT}
    assert {f.name for f in folders} == {name for _, names in LAYERS for name in names}
    assert [f.name for f in folders if not (f / "__init__.py").exists()] == []  # packages, not namespaces


def test_no_function_level_imports_of_the_package():
    assert [line for name in MODULES for line in imports(name)[1]] == []


def test_imports_only_look_down():
    upward = [
        f"{name} imports {dep} ({LAYERS[layer_of(dep)][0]} above {LAYERS[layer_of(name)][0]})"
        for name in MODULES
        for dep in sorted(imports(name)[0])
        if layer_of(dep) > layer_of(name)
    ]
    assert upward == [], "\n".join(upward)


def test_the_imports_form_no_cycle():
    graph = {name: imports(name)[0] for name in MODULES}
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


def test_the_checks_see_imports():
    """The graph is not empty by accident: the tracer imports the graph, the kernels the replay."""
    assert "data.graph" in imports("tracing.tracer")[0]
    assert "recording.replay" in imports("kernels.first_order")[0]
    assert {"numpy.arrange", "scipy.odes"} <= imports("numpy.protocols")[0]


def test_the_package_docstring_names_every_module_and_folder():
    doc = package.__doc__ or ""
    named = {m: (f"`{m.rsplit('.', 1)[1]}`", f"`{m.rsplit('.', 1)[1]}.", f"`{m}`") for m in MODULES if "." in m}
    missing = [m for m, forms in named.items() if not any(form in doc for form in forms)]
    missing += [f for _, folders in LAYERS for f in folders if f"`{f}/`" not in doc]
    assert missing == [], missing


def test_recording_imports_every_handler():
    """NumPy's and SciPy's handlers register when imported: recording f imports them all (through
    `numpy.protocols`), or a function would be refused for want of its module."""
    graph = {name: imports(name)[0] for name in MODULES}
    seen: set[str] = set()
    todo = ["recording.record"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    handlers = {m for m in MODULES if m.split(".")[0] in ("numpy", "scipy") and "." in m}
    assert sorted(handlers - seen) == []
