"""Doctests of an engine's backend need the engine: where it is not installed they are skipped (the
`numpy` tox environment runs the suite with NumPy alone)."""

from __future__ import annotations

import importlib.util
import re

import pytest

OPTIONAL_ENGINES = ("autograd", "torch", "jax")


def pytest_collection_modifyitems(items: list) -> None:
    for item in items:
        docstring = getattr(getattr(item, "dtest", None), "docstring", None)
        if not docstring:
            continue
        for engine in OPTIONAL_ENGINES:
            uses = re.search(rf"^\s*>>> (?:import|from) [^\n]*\b{engine}\b", docstring, re.MULTILINE)
            if uses and importlib.util.find_spec(engine) is None:
                item.add_marker(pytest.mark.skip(reason=f"the example needs {engine}, which is not installed"))
