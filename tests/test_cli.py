"""`python -m diface`, run as a user would."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diface", *args], capture_output=True, text=True, timeout=120)


def test_tour_prints_every_operator_with_small_errors():
    result = run()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for op in (
        "derivative",
        "second_derivative",
        "value_and_gradient",
        "jacobian",
        "pushforward",
        "pullback",
        "hvp",
        "hessian",
    ):
        row = next(line for line in lines if line.startswith(f"di.{op}("))
        error = float(row.split()[-1])
        assert error < 1e-4, row
    assert "prep.gradient(x)" in result.stdout


def test_unknown_arguments_exit_2():
    result = run("--no-such-option")
    assert result.returncode == 2
    assert "usage" in result.stderr
