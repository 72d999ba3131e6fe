"""Every recipe of docs/recipes/ runs to the end (each asserts its own results), in a process of its own."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECIPES = sorted((ROOT / "docs" / "recipes").glob("*.py"))
#: the packages a recipe may need beyond NumPy: a recipe importing one at top level that is not installed is skipped
#: (an import inside a block is the recipe's own business: check_your_function.py looks first)
OPTIONAL = ("scipy", "torch", "jax", "autograd")
IMPORT = re.compile(r"^(?:import|from)\s+([A-Za-z_]\w*)", re.MULTILINE)  # top-level imports only


def test_there_are_recipes():
    assert len(RECIPES) >= 6, [p.name for p in RECIPES]


def test_the_recipes_page_includes_every_recipe():
    page = (ROOT / "docs" / "recipes.md").read_text()
    for recipe in RECIPES:
        assert f'--8<-- "docs/recipes/{recipe.name}"' in page, f"docs/recipes.md does not include {recipe.name}"


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name)
def test_recipe_runs(recipe):
    missing = [
        name
        for name in dict.fromkeys(IMPORT.findall(recipe.read_text()))
        if name in OPTIONAL and importlib.util.find_spec(name) is None
    ]
    if missing:
        pytest.skip(f"{recipe.name} needs {', '.join(missing)}, not installed")
    # the worktree's diface first, whatever is installed; the recipe's own folder is sys.path[0] as usual
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    done = subprocess.run([sys.executable, str(recipe)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{recipe.name} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
