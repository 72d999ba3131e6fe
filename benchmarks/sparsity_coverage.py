"""How much of what autograd differentiates `AutoSparse(AutoAutograd())` can sparsity-trace, for functions
compiled from strings (generated code, notebooks, `python -c`) and for the same functions in a file.

Generates random autograd.numpy programs (seeded): elementwise functions, arithmetic, arrays built with
`stack`, `concatenate` and `array` of a list (with plain numbers among the traced values), sums, means,
products, slicing, reshapes and `where`. For each, the dense Jacobian from `autograd.jacobian` and the
sparsity detection of `AutoSparse(AutoAutograd())` (AutoTape's tracer on the same function); where both
work, the sparse Jacobian must equal autograd's. Detection should accept every program autograd
differentiates, compiled with `exec` exactly as from a file.

    python benchmarks/sparsity_coverage.py [--programs 300] [--seed 0] [--show 5]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import diface as di

SHAPES = [(3,), (4,), (3, 1), (2, 3)]


class Generator:
    """Random expressions of x (an autograd.numpy program), every subexpression shaped like x."""

    def __init__(self, rng: np.random.Generator, shape: tuple) -> None:
        self.rng = rng
        self.shape = shape

    def pick(self, options: list) -> Any:
        return options[int(self.rng.integers(len(options)))]

    def number(self) -> str:
        return f"{self.rng.uniform(0.2, 2.0):.2f}"

    def leaf(self) -> str:
        return self.pick(["x", f"({self.number()} * x)", "anp.sin(x)", "(x + 1.0)"])

    def expr(self, depth: int) -> str:
        if depth <= 0:
            return self.leaf()
        kind = self.pick(["unary", "binary", "binary", "builder", "builder", "reduce", "move", "reshape", "where"])
        return getattr(self, kind)(depth - 1)

    def unary(self, d: int) -> str:
        a = self.expr(d)
        return self.pick(
            [
                f"anp.sin({a})",
                f"anp.cos({a})",
                f"anp.tanh({a})",
                f"anp.exp(0.3 * {a})",
                f"anp.log1p({a} ** 2)",
                f"anp.sqrt({a} ** 2 + 1.0)",
                f"(-{a})",
                f"({a}) ** 2",
            ]
        )

    def binary(self, d: int) -> str:
        a, b = self.expr(d), self.expr(d)
        return self.pick([f"({a} + {b})", f"({a} - {b})", f"({a} * {b})", f"({a} / (1.0 + {b} ** 2))"])

    def builder(self, d: int) -> str:
        a, b = self.expr(d), self.expr(d)
        n0 = self.shape[0]
        s0, s1 = self.expr(0), self.expr(0)
        return self.pick(
            [
                f"anp.sum(anp.stack([{a}, {b}], axis=0), axis=0)",
                f"anp.stack([{a}, {b}], axis=-1)[..., 1]",
                f"anp.concatenate([{a}, {b}], axis=0)[{n0}:]",
                f"anp.concatenate([{a}, {b}], axis=0)[:{n0}]",
                f"anp.array([{a}, {b}])[0]",
                f"anp.mean(anp.array([{a}, {b}, x]), axis=0)",
                f"(anp.sum(anp.array([anp.sum({s0}), {self.number()}, anp.sum({s1} * {s1})])) * {a})",
                f"(anp.array([{self.number()}, anp.sum({s0})])[1] + {a})",
            ]
        )

    def reduce(self, d: int) -> str:
        a, b = self.expr(d), self.expr(d)
        return self.pick(
            [
                f"(anp.sum({a}) * {b})",
                f"(anp.sum({a}, axis=0, keepdims=True) * {b})",
                f"(anp.prod(anp.tanh({a})) + {b})",
                f"(anp.mean({a}) - {b})",
            ]
        )

    def move(self, d: int) -> str:
        a = self.expr(d)
        options = [f"anp.concatenate([{a}[1:], {a}[:1]], axis=0)", f"{a}[::-1]"]
        if len(self.shape) == 2:
            options.append(f"{a}[:, ::-1]")
        return self.pick(options)

    def reshape(self, d: int) -> str:
        a = self.expr(d)
        return self.pick(
            [
                f"anp.reshape(anp.reshape({a}, (-1,)), {self.shape})",
                f"anp.reshape(anp.ravel({a})[::-1], {self.shape})",
                f"anp.transpose(anp.transpose({a}))",
            ]
        )

    def where(self, d: int) -> str:
        a, b = self.expr(d), self.expr(d)
        return f"anp.where({a} > 0.5, {a}, {b})"


def programs(count: int, seed: int) -> list[tuple[str, tuple]]:
    """(the line defining `f_k`, the shape of its x) for k < count."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        body = Generator(rng, shape).expr(int(rng.integers(1, 4)))
        out.append((f"f_{k} = lambda x: {body}", shape))
    return out


def compile_with_exec(lines: list[str]) -> list[Callable]:
    """Each program compiled from its string (no source file behind it)."""
    import autograd.numpy as anp

    fs = []
    for k, line in enumerate(lines):
        ns: dict = {"anp": anp}
        exec(compile(line, f"<generated {k}>", "exec"), ns)
        fs.append(ns[f"f_{k}"])
    return fs


def compile_in_a_file(lines: list[str], folder: str) -> list[Callable]:
    """The same programs written into a module and imported."""
    path = os.path.join(folder, "generated_programs.py")
    with open(path, "w") as fh:
        fh.write("import autograd.numpy as anp\n\n" + "\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("generated_programs", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return [getattr(module, f"f_{k}") for k in range(len(lines))]


def check(f: Callable, x: np.ndarray) -> tuple[bool, str | None, bool]:
    """(autograd differentiates f, why detection refused it (None: accepted), sparse result right)."""
    import autograd

    try:
        dense = np.asarray(autograd.jacobian(f)(x)).reshape(-1, x.size)
        ok = bool(np.all(np.isfinite(dense)))
    except Exception:
        ok, dense = False, None
    try:
        backend = di.AutoSparse(di.AutoAutograd())
        prep = di.prepare_jacobian(f, backend, x)
        sparse = di.jacobian(f, backend, x, prep=prep).toarray()
    except Exception as e:  # the detection's refusal, reported by reason
        where = re.sub(r"(<generated \d+>|generated_programs\.py):\d+", "<f>", str(e))
        return ok, f"{type(e).__name__}: {where[:160]}", False
    right = dense is not None and np.allclose(sparse, dense, rtol=1e-10, atol=1e-12)
    return ok, None, right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="how many refusal reasons to list")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    generated = programs(args.programs, args.seed)
    lines = [line for line, _ in generated]
    rng = np.random.default_rng(args.seed + 1)
    points = [rng.uniform(0.2, 1.0, shape) for _, shape in generated]
    with tempfile.TemporaryDirectory() as folder:
        ways = {"exec": compile_with_exec(lines), "file": compile_in_a_file(lines, folder)}
        n = len(lines)
        for way, fs in ways.items():
            autograd_ok = accepted = accepted_of_ok = right = 0
            reasons: collections.Counter = collections.Counter()
            for f, x in zip(fs, points):
                ok, refused, good = check(f, x)
                autograd_ok += ok
                accepted += refused is None
                accepted_of_ok += ok and refused is None
                right += ok and good
                if refused is not None and ok:
                    reasons[refused] += 1
            print(
                f"{way:>5}: autograd differentiates {autograd_ok}/{n} ({autograd_ok / n:.0%}); detection accepts "
                f"{accepted}/{n} ({accepted / n:.0%}), {accepted_of_ok} of autograd's {autograd_ok}; sparse "
                f"Jacobian equal to autograd's in {right}/{autograd_ok}"
            )
            for reason, count in reasons.most_common(args.show):
                print(f"       {count:4d} x {reason}")
    sys.exit(0)


if __name__ == "__main__":
    main()
