"""Random small torch programs that update cloned tensors in place, and a check of every AutoTorch path
on one of them against `torch.func.jvp` / `torch.func.vjp` called directly on f.

A program is a list of steps, each computing a new (4, 3) value from values computed before (x itself
first): elementwise operations, stack/cat and slicing, reductions broadcast back, and in-place updates
of a clone or of a fresh buffer (`v[idx] += b` with repeated and negative indices, `v[idx] = b`,
`index_add_`, `masked_fill_`, in-place arithmetic on slices and views). Its output is a scalar, a
vector, the last value or a stack of it with x. Used by `tests/test_torch_programs.py` (a few dozen
programs) and `scripts/torch_random_programs.py` (hundreds, with counts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import diface as di

SHAPE = (4, 3)
DTYPE = torch.float64
RTOL = ATOL = 1e-10  # exact engines on float64 programs of a dozen steps: only summation order differs

Step = Callable[[list], torch.Tensor]


def _pick(rng: np.random.Generator, n: int) -> int:
    """An earlier value, favouring recent ones (so that programs are deep rather than wide)."""
    return int(max(rng.integers(0, n, size=2)))


def _rows(rng: np.random.Generator, k: int, repeats: bool) -> list[int]:
    """k row indices of a (4, 3) value, some negative, repeated or not."""
    rows = rng.integers(0, SHAPE[0], size=k) if repeats else rng.permutation(SHAPE[0])[:k]
    return [int(r) - SHAPE[0] if rng.random() < 0.3 else int(r) for r in rows]


def _step(rng: np.random.Generator, n: int) -> tuple[str, Step]:
    """One random step over values 0..n-1: (its source text, the step)."""
    a, b = _pick(rng, n), _pick(rng, n)
    kind = int(rng.integers(0, 19))
    if kind == 0:
        return f"sin(v{a})", lambda v: torch.sin(v[a])
    if kind == 1:
        return f"tanh(v{a}) * v{b}", lambda v: torch.tanh(v[a]) * v[b]
    if kind == 2:
        return f"exp(0.3 tanh(v{a})) - v{b}", lambda v: torch.exp(0.3 * torch.tanh(v[a])) - v[b]
    if kind == 3:
        return f"v{a} * v{a} / 4 + v{b}", lambda v: v[a] * v[a] / 4 + v[b]
    if kind == 4:
        dim = int(rng.integers(0, 3))
        return f"stack([v{a}, v{b}], {dim}).cos().sum({dim})", lambda v: torch.stack([v[a], v[b]], dim).cos().sum(dim)
    if kind == 5:
        return f"cat([v{a}, v{b}], 1)[:, 1:4]", lambda v: torch.cat([v[a], v[b]], 1)[:, 1:4]
    if kind == 6:
        return f"cat([v{a}[1:], v{b}[:1]])", lambda v: torch.cat([v[a][1:], v[b][:1]])
    if kind == 7:
        return f"v{a}.flip(0) * v{b}.sum(0, keepdim=True) / 4", lambda v: v[a].flip(0) * v[b].sum(0, keepdim=True) / 4
    if kind == 8:
        return f"v{a} - v{a}.mean(1, keepdim=True)", lambda v: v[a] - v[a].mean(1, keepdim=True)
    if kind == 9:
        return f"v{a}.T.reshape(4, 3) + v{b}", lambda v: v[a].T.reshape(SHAPE) + v[b]
    if kind == 10:
        idx = _rows(rng, SHAPE[0], repeats=rng.random() < 0.5)

        def add_at(v: list) -> torch.Tensor:
            w = v[a].clone()
            w[idx] += v[b]
            return w

        return f"w = v{a}.clone(); w[{idx}] += v{b}", add_at
    if kind == 11:
        k = int(rng.integers(1, SHAPE[0] + 1))
        idx = _rows(rng, k, repeats=False)

        def set_at(v: list) -> torch.Tensor:
            w = v[a].clone()
            w[idx] = v[b][:k]
            return w

        return f"w = v{a}.clone(); w[{idx}] = v{b}[:{k}]", set_at
    if kind == 12:
        k = int(rng.integers(1, 6))
        idx = [int(i) for i in rng.integers(0, SHAPE[0], size=k)]
        rows = [int(i) for i in rng.integers(0, SHAPE[0], size=k)]

        def index_add(v: list) -> torch.Tensor:
            return v[a].clone().index_add_(0, torch.tensor(idx), v[b][rows], alpha=0.5)

        return f"v{a}.clone().index_add_(0, {idx}, v{b}[{rows}], alpha=0.5)", index_add
    if kind == 13:
        mask = torch.from_numpy(rng.random(SHAPE) < 0.4)
        fill = float(np.round(rng.standard_normal(), 2))
        return f"(v{a} * v{b}).masked_fill_(mask, {fill})", lambda v: (v[a] * v[b]).masked_fill_(mask, fill)
    if kind == 14:

        def slice_mul(v: list) -> torch.Tensor:
            w = v[a].clone()
            w[1:3] *= v[b][1:3]
            w[:, 0] = v[b][:, 1]
            return w

        return f"w = v{a}.clone(); w[1:3] *= v{b}[1:3]; w[:, 0] = v{b}[:, 1]", slice_mul
    if kind == 15:
        idx = _rows(rng, SHAPE[0], repeats=True)

        def into_zeros(v: list) -> torch.Tensor:
            w = torch.zeros(SHAPE, dtype=DTYPE)
            w[idx] += v[a]
            return w + v[b]

        return f"w = zeros(); w[{idx}] += v{a}; w + v{b}", into_zeros
    if kind == 16:

        def view_update(v: list) -> torch.Tensor:
            w = v[a].clone()
            tail = w[:, 1:]
            tail.mul_(v[b][:, :2]).sin_()
            return w

        return f"w = v{a}.clone(); w[:, 1:].mul_(v{b}[:, :2]).sin_()", view_update
    if kind == 17:
        idx = _rows(rng, 2, repeats=False)

        def put_then_read(v: list) -> torch.Tensor:
            w = v[a].clone()
            w[idx] = torch.sin(w[idx]) * v[b][idx]
            return w * v[b]

        return f"w = v{a}.clone(); w[{idx}] = sin(w[{idx}]) * v{b}[{idx}]; w * v{b}", put_then_read
    idx = _rows(rng, 3, repeats=False)

    def scatter_into(v: list) -> torch.Tensor:
        w = torch.zeros_like(v[a])
        w[idx] = v[a][: len(idx)]
        w.add_(v[b])
        return w

    return f"w = zeros_like(v{a}); w[{idx}] = v{a}[:3]; w.add_(v{b})", scatter_into


OUTPUTS: list[tuple[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]] = [
    ("sum(sin(last))", lambda last, x: torch.sum(torch.sin(last))),
    ("last.sum(1)", lambda last, x: last.sum(1)),
    ("last", lambda last, x: last),
    ("stack([last, x], 2)", lambda last, x: torch.stack([last, x], dim=2)),
]


@dataclass
class Program:
    """Random steps then an output; `f(x)` runs them, `source` shows them."""

    seed: int
    steps: list[tuple[str, Step]] = field(default_factory=list)
    output: int = 0

    def f(self, x: torch.Tensor) -> torch.Tensor:
        values = [x]
        for _, step in self.steps:
            values.append(step(values))
        return OUTPUTS[self.output][1](values[-1], x)

    @property
    def scalar(self) -> bool:
        return self.output == 0

    @property
    def source(self) -> str:
        lines = [f"v{k + 1} = {text}" for k, (text, _) in enumerate(self.steps)]
        return "; ".join([*lines, f"return {OUTPUTS[self.output][0]}"])


def random_program(seed: int) -> Program:
    """A program of 2 to 7 steps, every other one an in-place update somewhere in it."""
    rng = np.random.default_rng(seed)
    program = Program(seed, output=int(rng.integers(0, len(OUTPUTS))))
    for k in range(int(rng.integers(2, 8))):
        program.steps.append(_step(rng, k + 1))
    return program


@dataclass
class Outcome:
    """Which paths of one program disagreed with torch.func, and which raised (other than
    `NotSupportedError`, which is a clear refusal and counts as neither)."""

    program: Program
    wrong: list[str] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: torch.func.jvp and torch.func.vjp disagree on f (an index assignment repeats an index)
    ambiguous: bool = False

    @property
    def ok(self) -> bool:
        return not self.wrong and not self.crashed

    def __str__(self) -> str:
        parts = [f"seed {self.program.seed}: {self.program.source}"]
        parts += [f"  wrong: {w}" for w in self.wrong] + [f"  crashed: {c}" for c in self.crashed]
        return "\n".join(parts)


def _close(got: Any, want: torch.Tensor) -> bool:
    return isinstance(got, torch.Tensor) and got.shape == want.shape and torch.allclose(got, want, RTOL, ATOL)


def check_program(program: Program, batch: int = 3) -> Outcome:
    """Every AutoTorch path on `program`, prepared at one point and called at another (same-point
    preparations at the point of their calls), each call made twice, against `torch.func.jvp` (forward
    paths) and `torch.func.vjp` (reverse paths) on f at the call's point."""
    f, outcome = program.f, Outcome(program)
    gen = torch.Generator().manual_seed(program.seed)
    normal = lambda shape: torch.randn(shape, generator=gen, dtype=DTYPE)
    x0, x1 = normal(SHAPE), normal(SHAPE)
    value = f(x1)
    ts = tuple(normal(SHAPE) for _ in range(batch))
    cs = tuple(normal(value.shape) for _ in range(batch))
    jvp = [torch.func.jvp(f, (x1,), (t,))[1] for t in ts]
    vjp_fn = torch.func.vjp(f, x1)[1]
    vjp = [vjp_fn(c)[0] for c in cs]
    # torch's two modes disagree where an index assignment repeats an index (which write lands is
    # torch's choice, and reverse mode sends every repeat the cotangent): each mode's paths are then
    # compared with that mode of torch.func, which is what torch computes
    outcome.ambiguous = not all(
        torch.allclose(torch.sum(c * jt), torch.sum(jc * t), RTOL, ATOL)
        for c, jc in zip(cs, vjp)
        for t, jt in zip(ts, jvp)
    )
    x_basis = torch.eye(x1.numel(), dtype=DTYPE).reshape(-1, *SHAPE)
    y_basis = torch.eye(value.numel(), dtype=DTYPE).reshape(-1, *value.shape)
    jac_forward = torch.stack([torch.func.jvp(f, (x1,), (e,))[1] for e in x_basis], dim=-1)
    jac_forward = jac_forward.reshape(*value.shape, *SHAPE)
    jac_reverse = torch.stack([vjp_fn(e)[0] for e in y_basis]).reshape(*value.shape, *SHAPE)

    def run(name: str, call: Callable[[], Any], want: Any) -> None:
        for attempt in ("first", "second"):
            try:
                got = call()
            except di.NotSupportedError as e:
                outcome.refused.append(f"{name}: {e}")
                return
            except Exception as e:  # every other exception is a crash to report
                outcome.crashed.append(f"{name} ({attempt} call): {type(e).__name__}: {str(e)[:200]}")
                return
            if isinstance(want, list):
                good = isinstance(got, tuple) and len(got) == len(want) and all(map(_close, got, want))
            else:
                good = _close(got, want)
            if not good:
                outcome.wrong.append(f"{name} ({attempt} call)")
                return

    auto, forward, reverse = di.AutoTorch(), di.AutoTorch("forward"), di.AutoTorch("reverse")
    t0, c0 = normal(SHAPE), normal(value.shape)

    def prepared(name: str, make: Callable[[], Any], call: Callable[[Any], Any], want: Any) -> None:
        try:
            prep = make()
        except di.NotSupportedError as e:
            outcome.refused.append(f"{name}: {e}")
            return
        except Exception as e:
            outcome.crashed.append(f"{name} (preparation): {type(e).__name__}: {str(e)[:200]}")
            return
        run(name, lambda: call(prep), want)

    run("pushforward", lambda: di.pushforward(f, auto, x1, ts[0]), jvp[0])
    run("pullback", lambda: di.pullback(f, auto, x1, cs[0]), vjp[0])
    prepared(
        "prepared pushforward",
        lambda: di.prepare_pushforward(f, auto, x0, t0),
        lambda p: p.pushforward(x1, ts[0]),
        jvp[0],
    )
    prepared("prepared pullback", lambda: di.prepare_pullback(f, auto, x0, c0), lambda p: p.pullback(x1, cs[0]), vjp[0])
    prepared(
        "prepared batched pushforward",
        lambda: di.prepare_pushforward(f, auto, x0, tuple(normal(SHAPE) for _ in ts)),
        lambda p: p.pushforward(x1, ts),
        jvp,
    )
    prepared(
        "prepared batched pullback",
        lambda: di.prepare_pullback(f, auto, x0, tuple(normal(value.shape) for _ in cs)),
        lambda p: p.pullback(x1, cs),
        vjp,
    )
    prepared(
        "same-point pushforward",
        lambda: di.prepare_pushforward_same_point(f, auto, x1, t0),
        lambda p: p.pushforward(x1, ts[0]),
        jvp[0],
    )
    prepared(
        "same-point pullback",
        lambda: di.prepare_pullback_same_point(f, auto, x1, c0),
        lambda p: p.pullback(x1, cs[0]),
        vjp[0],
    )
    prepared(
        "same-point batched pushforward",
        lambda: di.prepare_pushforward_same_point(f, auto, x1, tuple(normal(SHAPE) for _ in ts)),
        lambda p: p.pushforward(x1, ts),
        jvp,
    )
    prepared(
        "same-point batched pullback",
        lambda: di.prepare_pullback_same_point(f, auto, x1, tuple(normal(value.shape) for _ in cs)),
        lambda p: p.pullback(x1, cs),
        vjp,
    )
    for backend in (forward, reverse):
        mode = backend.mode
        jac = jac_forward if mode == "forward" else jac_reverse
        run(f"jacobian ({mode})", lambda b=backend: di.jacobian(f, b, x1), jac)
        prepared(
            f"prepared jacobian ({mode})",
            lambda b=backend: di.prepare_jacobian(f, b, x0),
            lambda p: p.jacobian(x1),
            jac,
        )
        if program.scalar:
            run(f"gradient ({mode})", lambda b=backend: di.gradient(f, b, x1), jac)
            prepared(
                f"prepared gradient ({mode})",
                lambda b=backend: di.prepare_gradient(f, b, x0),
                lambda p: p.gradient(x1),
                jac,
            )
    return outcome
