"""Every Python code block of the README and docs/ (every page, in subfolders too) runs (blocks of one page share a
namespace)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: engines a page may use; where one is not installed, the blocks from the first that imports it are skipped
OPTIONAL_ENGINES = ("autograd", "torch", "jax")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_code_blocks_run(page):
    blocks = BLOCK.findall(page.read_text())
    module = types.ModuleType(f"docs_{page.stem.replace('-', '_')}")  # a real module, for dataclasses
    sys.modules[module.__name__] = module
    try:
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"{page.name}[block {i + 1}]", "exec"), module.__dict__)
            except ModuleNotFoundError as e:
                engine = (e.name or "").split(".")[0]
                if engine in OPTIONAL_ENGINES and importlib.util.find_spec(engine) is None:
                    pytest.skip(f"{page.name}, code block {i + 1} needs {engine}, which is not installed")
                raise AssertionError(f"{page.name}, code block {i + 1} failed: {type(e).__name__}: {e}") from e
            except Exception as e:
                raise AssertionError(f"{page.name}, code block {i + 1} failed: {type(e).__name__}: {e}") from e
    finally:
        del sys.modules[module.__name__]


#: pages whose code runs elsewhere: the reference is made from the docstrings (their examples are doctests),
#: the recipes page includes the scripts of docs/recipes/ (tests/test_recipes.py runs them)
CODE_ELSEWHERE = ("docs/reference/", "docs/recipes.md")


def test_every_page_has_code():
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        if name != "README.md" and not name.startswith(CODE_ELSEWHERE):
            assert BLOCK.search(page.read_text()), f"{name} has no runnable example"


def test_ci_runs_the_readme_test_command():
    """.ci/run extracts the README's test command and runs it verbatim."""
    readme = (ROOT / "README.md").read_text()
    commands = [line for line in readme.splitlines() if line.endswith("&& python -m pytest")]
    assert len(commands) == 1
    extracted = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run"), "--print-command"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert extracted == commands[0]


#: packages whose docstring does not list its modules: the top level (the core: too many modules for it) and the
#: tape's folders (its package docstring lists its layers' modules; tests/test_tape_layers.py holds it to them)
UNLISTED_PACKAGES = ("diface", "diface/backends/tape")


def _package_docstrings() -> list[Path]:
    inits = sorted((ROOT / "diface").rglob("__init__.py"))
    unlisted = lambda path: path in UNLISTED_PACKAGES or path.startswith("diface/backends/tape/")
    return [p for p in inits if not unlisted(p.parent.relative_to(ROOT).as_posix())]


@pytest.mark.parametrize("init", _package_docstrings(), ids=lambda p: p.parent.relative_to(ROOT).as_posix())
def test_package_docstring_names_its_modules(init):
    """A package's docstring names (in backticks) each of its modules and subpackages, so that a reader
    finds every module from it (diface.backends: its public engine modules)."""
    import ast

    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    package = init.parent
    modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    if package.relative_to(ROOT).as_posix() == "diface/backends":
        modules = {m for m in modules if not m.startswith("_")}
    missing = sorted(m for m in modules if not re.search(rf"`{re.escape(m)}[`.:(]", doc))
    assert not missing, f"{package.relative_to(ROOT)}/__init__.py's docstring does not name {missing}"
