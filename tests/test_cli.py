"""`python -m diface` and its commands, run as a user would."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diface", *args], capture_output=True, text=True, timeout=timeout)


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
    # preparation shown where it pays: the tape's replay against recording f at every call
    row = next(line for line in lines if "prep.gradient(x)" in line)
    assert float(row.split()[-1].rstrip("x")) > 3, row


def test_unknown_command_or_option_exits_2():
    assert run("frobnicate").returncode == 2
    result = run("--no-such-option")
    assert result.returncode == 2 and "usage" in result.stderr


def test_info_lists_backends_with_versions():
    result = run("info")
    assert result.returncode == 0, result.stderr
    assert "finitediff" in result.stdout and "numpy" in result.stdout
    assert "Python" in result.stdout


def test_compare_reports_agreement():
    result = run("compare", "--backends", "finitediff", "finitediff:complex", "--scenarios", "default")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all" in result.stdout and "checks agree" in result.stdout
    assert "pushforward" in result.stdout and "hessian" in result.stdout and "laplacian" in result.stdout


def test_compare_exits_1_on_disagreement(tmp_path):
    # a backend that is wrong on purpose, registered for the command line like a real one
    plugin = tmp_path / "wrong_backend.py"
    plugin.write_text(
        "from dataclasses import dataclass\n"
        "import diface as di\n"
        "from diface.extend import Kernel, Result\n"
        "from diface.testing import register_engine\n"
        "@dataclass(frozen=True)\n"
        "class Wrong(di.AutoFiniteDiff):\n"
        "    def prepare_pushforward(self, problem, tangents, same_point=False):\n"
        "        k = super().prepare_pushforward(problem, tangents, same_point)\n"
        "        def doubled(x, t, cv, y, full):\n"
        "            value, _, results = k.run(x, t, cv, y, full)\n"
        "            return Result(value, result=tuple(2 * r for r in results))\n"
        "        return Kernel(doubled)\n"
        "register_engine(Wrong, name='wrong', namespace='numpy')\n"
    )
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import wrong_backend; "
        "from diface._cli import main; sys.exit(main(['compare', '--backends', 'wrong', '--scenarios', 'default']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "disagreements" in result.stdout and "max abs error" in result.stdout


def test_compare_unknown_backend_is_a_clear_error():
    result = run("compare", "--backends", "nosuchengine")
    assert result.returncode == 2
    assert "unknown backend 'nosuchengine'" in result.stdout


def test_bench_prints_ratios_and_plots(tmp_path):
    pytest.importorskip("scipy")
    pytest.importorskip("matplotlib")
    png = tmp_path / "bench.png"
    result = run("bench", "--backends", "finitediff:forward", "--plot", str(png))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "approx_fprime" in result.stdout and "ratio" in result.stdout
    assert png.exists() and png.stat().st_size > 1000


_WITHOUT_RICH = (
    "import builtins, sys\n"
    "real = builtins.__import__\n"
    "def blocked(name, *a, **k):\n"
    "    if name == 'rich' or name.startswith('rich.'):\n"
    "        raise ImportError('rich is not installed')\n"
    "    return real(name, *a, **k)\n"
    "builtins.__import__ = blocked\n"
    "from diface._cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.mark.parametrize("args", [[], ["info"], ["compare", "--backends", "nosuchengine"]])
def test_the_command_line_works_without_rich(args):
    """rich is optional: the tour, info and errors print plain text (no markup left) without it."""
    result = subprocess.run([sys.executable, "-c", _WITHOUT_RICH, *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == (2 if args[:1] == ["compare"] else 0), result.stdout + result.stderr
    assert "[/]" not in result.stdout and "[red]" not in result.stdout and "Traceback" not in result.stderr
    if args[:1] == ["compare"]:
        assert "error: unknown backend 'nosuchengine'" in result.stdout


def test_compare_compositions_prints_the_matrix():
    result = run("compare", "--compositions", "--backends", "tape", "finitediff", "--sample", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "AutoSparse(SecondOrder)" in result.stdout and "0 wrong, 0 crashed" in result.stdout


def test_compare_help_shows_the_defaults_and_a_log_shows_progress():
    result = run("compare", "--help")
    assert "(default: default)" in result.stdout and "--full" in result.stdout
    result = run("compare", "--backends", "tape", "--scenarios", "structural")  # output is not a terminal
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checking: 27/27" in result.stderr
