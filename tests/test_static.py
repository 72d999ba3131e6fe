"""Static checks as part of the suite: ruff's lint rules and formatting, and mypy over the package (the
settings are pyproject.toml's). Each is skipped where its tool is not installed (pip install
'diface[test]' brings both)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: generous: a cold mypy run takes about 30 s, more on a busy machine
TIMEOUT = 900


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def _check(result: subprocess.CompletedProcess) -> None:
    """Fail with the tool's own report (its findings, not a traceback into this file)."""
    if result.returncode != 0:
        command = " ".join(result.args[2:])
        pytest.fail(f"`{command}` exited with {result.returncode}:\n{result.stdout}{result.stderr}", pytrace=False)


def test_ruff_check() -> None:
    pytest.importorskip("ruff")
    _check(_run("ruff", "check", "--output-format", "concise", "."))


def test_ruff_format() -> None:
    pytest.importorskip("ruff")
    _check(_run("ruff", "format", "--check", "."))  # the Python files ([tool.ruff.format] leaves out *.md)


def test_mypy() -> None:
    pytest.importorskip("mypy")
    _check(_run("mypy"))  # files and settings: [tool.mypy]; its cache: .mypy_cache
