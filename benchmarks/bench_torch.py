"""Prepared `di.AutoTorch()` calls against the fastest direct PyTorch idiom, interleaved in one process.

Each row times a prepared diface call (strict checks on, through the prep's method) and the direct
torch calls it is measured against, interleaved in rounds (`diface.testing._timing.interleaved`); the
ratio is the median over the rounds of each round's call / fastest direct call. Every case runs with
tensor input (tensors in, tensors out) and with NumPy input (NumPy in, NumPy out; the direct idiom then
shares the arrays with `torch.from_numpy` and returns `.numpy()`, as a user would write it).

| operator | problem | n | direct (the fastest of) | target |
| --- | --- | --- | --- | --- |
| gradient | Rosenbrock | 10 .. 1e5 | `torch.autograd.grad` on a fresh leaf | <= 1.15 |
| hvp | Rosenbrock | 10 .. 1e5 | double backward; `torch.func.jvp(torch.func.grad(f))` | <= 1.2 |
| jacobian | tanh(A x) + x, A dense | 10 .. 3000 | `torch.func.jacfwd`, `torch.func.jacrev` | <= 1.1 |
| hessian | sum(softplus(A x)) + x.x/2 | 10 .. 300 | `torch.func.hessian` | <= 1.1 |
| trust-ncg | Rosenbrock, n = 100 | | `scipy.optimize.minimize` with torch called directly | <= 1.2 |

The dense Jacobian stops at n = 3000: at 1e4, A and J are 800 MB each and the direct `jacrev`/`jacfwd`
(one vmap over all 1e4 basis vectors) needs several GB more, beyond this shared machine.

Memory (jacobian and hessian rows, each case in a subprocess of its own, resident memory as the
operating system sees it, `diface.testing._memory`): what the preparation keeps after it is made, and
the peak of a prepared call above what was resident before it, less the result itself, both as
multiples of the result's size (target: at most 2).

    python benchmarks/bench_torch.py [--rounds 21] [--round-time 0.004] [--quick] [--no-memory]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's diface, not an installed one
import diface as di
from diface._table import format_table
from diface.testing._memory import peak_above, resident
from diface.testing._timing import interleaved

torch.set_num_threads(1)
D = torch.float64

GRADIENT_SIZES = (10, 100, 1000, 10_000, 100_000)
JACOBIAN_SIZES = (10, 100, 1000, 3000)
HESSIAN_SIZES = (10, 100, 300)
TARGETS = {"gradient": 1.15, "hvp": 1.2, "jacobian": 1.1, "hessian": 1.1, "trust-ncg": 1.2}


# -- problems -----------------------------------------------------------------------------------------
def rosenbrock(x):
    return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def matrix(n: int) -> torch.Tensor:
    return torch.randn(n, n, generator=torch.Generator().manual_seed(n), dtype=D) / n**0.5


def dense_map(a: torch.Tensor) -> Callable:
    return lambda x: torch.tanh(a @ x) + x


def softplus_sum(a: torch.Tensor) -> Callable:
    return lambda x: torch.sum(torch.nn.functional.softplus(a @ x)) + 0.5 * torch.sum(x * x)


def point(n: int) -> torch.Tensor:
    return torch.linspace(-1.0, 1.0, n, dtype=D) * 0.9


# -- direct torch idioms ------------------------------------------------------------------------------
def autograd_gradient(f: Callable) -> Callable:
    def gradient(x):
        leaf = x.detach().requires_grad_()
        return torch.autograd.grad(f(leaf), leaf)[0]

    return gradient


def double_backward_hvp(f: Callable) -> Callable:
    def hvp(x, v):
        leaf = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(f(leaf), leaf, create_graph=True)
        return torch.autograd.grad(g, leaf, v)[0]

    return hvp


def jvp_of_grad_hvp(f: Callable) -> Callable:
    gradient = torch.func.grad(f)
    return lambda x, v: torch.func.jvp(gradient, (x,), (v,))[1]


def directs(op: str, f: Callable) -> dict[str, Callable]:
    """The direct idioms of `op` on f, each a function of x (and v for hvp)."""
    if op == "gradient":
        return {"autograd.grad": autograd_gradient(f)}
    if op == "hvp":
        return {"double backward": double_backward_hvp(f), "jvp(grad)": jvp_of_grad_hvp(f)}
    if op == "jacobian":
        return {"jacfwd": torch.func.jacfwd(f), "jacrev": torch.func.jacrev(f)}
    return {"func.hessian": torch.func.hessian(f)}


def with_numpy(direct: Callable) -> Callable:
    """The idiom as a user with NumPy arrays writes it: shared in, `.numpy()` out."""
    return lambda *arrays: direct(*(torch.from_numpy(a) for a in arrays)).numpy()


# -- cases -------------------------------------------------------------------------------------------
@dataclass
class Case:
    op: str
    problem: str
    n: int
    numpy: bool

    @property
    def label(self) -> str:
        return f"{self.op}, {self.problem}, n={self.n}, {'NumPy' if self.numpy else 'tensor'}"

    def function(self) -> Callable:
        if self.problem == "Rosenbrock":
            return rosenbrock
        return (dense_map if self.op == "jacobian" else softplus_sum)(matrix(self.n))

    def arguments(self) -> tuple:
        x = point(self.n)
        args = (x, torch.cos(3 * x)) if self.op == "hvp" else (x,)
        return tuple(a.numpy() for a in args) if self.numpy else args

    def calls(self) -> tuple[Callable, dict[str, Callable]]:
        """(the prepared diface call, the direct calls), each taking no argument."""
        f, args = self.function(), self.arguments()
        prep = getattr(di, f"prepare_{self.op}")(f, di.AutoTorch(), *args)
        method = getattr(prep, self.op)
        wrap = with_numpy if self.numpy else (lambda d: d)
        wrapped = {name: wrap(d) for name, d in directs(self.op, f).items()}
        return (lambda: method(*args)), {name: (lambda d=d: d(*args)) for name, d in wrapped.items()}


def cases(quick: bool) -> list[Case]:
    sizes = {
        "gradient": GRADIENT_SIZES[:3] if quick else GRADIENT_SIZES,
        "hvp": GRADIENT_SIZES[:3] if quick else GRADIENT_SIZES,
        "jacobian": JACOBIAN_SIZES[:2] if quick else JACOBIAN_SIZES,
        "hessian": HESSIAN_SIZES[:2] if quick else HESSIAN_SIZES,
    }
    problems = {"gradient": "Rosenbrock", "hvp": "Rosenbrock", "jacobian": "dense tanh", "hessian": "softplus"}
    return [Case(op, problems[op], n, numpy) for op in sizes for n in sizes[op] for numpy in (False, True)]


def check(case: Case) -> None:
    """The prepared call computes what the direct calls compute."""
    call, direct = case.calls()
    mine = np.asarray(call())
    for name, d in direct.items():
        assert np.allclose(mine, np.asarray(d()), rtol=1e-9, atol=1e-11), f"{case.label}: differs from {name}"


def ratio(call: Callable, direct: dict[str, Callable], rounds: int, round_time: float) -> tuple[float, float, str]:
    """(diface us, fastest direct us, its name): medians over interleaved rounds, the ratio being the
    median of each round's call / fastest direct call."""
    mine, best, ratios, winners = [], [], [], []
    for _ in range(rounds):
        t = interleaved({"diface": call, **direct}, rounds=1, min_time=round_time)
        name = min(direct, key=lambda k: t[k])
        mine.append(t["diface"])
        best.append(t[name])
        winners.append(name)
        ratios.append(t["diface"] / t[name])
    return statistics.median(mine), statistics.median(best), statistics.median(ratios), max(winners, key=winners.count)


# -- memory, one subprocess per case -------------------------------------------------------------------
def memory_case(op: str, n: int) -> dict[str, float]:
    """In this process (a fresh one): bytes of the result, kept by a preparation, at the peak of making
    it and at the peak of one prepared call (less the result), above what was resident before each;
    the same peak for the direct calls (the smaller). A first preparation of the same size, discarded,
    loads what torch allocates once per process."""
    case = Case(op, "dense tanh" if op == "jacobian" else "softplus", n, False)
    f, (x,) = case.function(), case.arguments()
    getattr(getattr(di, f"prepare_{op}")(f, di.AutoTorch(), x), op)(x)
    for d in directs(op, f).values():
        d(x)
    trim()
    before = resident()
    prep, prep_peak = peak_above(lambda: getattr(di, f"prepare_{op}")(f, di.AutoTorch(), x))
    trim()
    kept = resident() - before
    result, peak = peak_above(lambda: getattr(prep, op)(x))
    size = result.numel() * result.element_size()
    del result
    trim()
    direct = {}
    for name, d in directs(op, f).items():
        r, p = peak_above(lambda d=d: d(x))
        direct[name] = p - size
        del r
        trim()
    return {"result": size, "kept": kept, "prep": prep_peak, "peak": peak - size, "direct": min(direct.values())}


def trim() -> None:
    """Garbage collected, and freed heap memory handed back to the operating system (glibc), so that
    resident memory counts what is held."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def memory(op: str, n: int) -> dict[str, float]:
    # a fixed mmap threshold: large blocks go back to the system when freed (glibc would raise it)
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    out = subprocess.run(
        [sys.executable, __file__, "--memory-case", op, str(n)], capture_output=True, text=True, check=True, env=env
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def memory_text(m: dict[str, float]) -> str:
    mb = lambda b: f"{b / 2**20:.0f}"
    r = m["result"]
    return (
        f"result {mb(r)} MB; kept {m['kept'] / r:.2f}x, peaks: preparing {m['prep'] / r:.2f}x, "
        f"call {m['peak'] / r:.2f}x (direct {m['direct'] / r:.2f}x)"
    )


# -- scipy.optimize.minimize(method="trust-ncg") ----------------------------------------------------------
def trust_ncg(rounds: int) -> tuple[float, float, float]:
    from scipy.optimize import minimize

    n = 100
    x0 = np.tile([-1.2, 1.0], n // 2)
    fun = lambda x: float(rosenbrock(torch.from_numpy(x)))
    grad, hvp = with_numpy(autograd_gradient(rosenbrock)), with_numpy(double_backward_hvp(rosenbrock))
    g_prep = di.prepare_gradient(rosenbrock, di.AutoTorch(), x0)
    h_prep = di.prepare_hvp(rosenbrock, di.AutoTorch(), x0, x0)
    options = {"gtol": 1e-8}
    mine = lambda: minimize(fun, x0, method="trust-ncg", jac=g_prep.gradient, hessp=h_prep.hvp, options=options)
    direct = lambda: minimize(fun, x0, method="trust-ncg", jac=grad, hessp=hvp, options=options)
    a, b = mine(), direct()
    assert a.nit == b.nit and np.allclose(a.x, b.x) and a.success, (a.nit, b.nit, a.message)
    return ratio(mine, {"direct": direct}, rounds, 0.05)[:3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds per case")
    parser.add_argument("--round-time", type=float, default=0.004, help="seconds each call runs per round")
    parser.add_argument("--quick", action="store_true", help="the small sizes only")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory column")
    parser.add_argument("--only", default=None, help="operators to run, comma-separated")
    parser.add_argument("--memory-case", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_case:
        print(json.dumps(memory_case(args.memory_case[0], int(args.memory_case[1]))))
        return
    only = None if args.only is None else set(args.only.split(","))
    header = ["case", "diface (us)", "direct", "direct (us)", "ratio", "target", "", "memory"]
    lines = []
    for case in cases(args.quick):
        if only is not None and case.op not in only:
            continue
        check(case)
        call, direct = case.calls()
        mine, best, r, winner = ratio(call, direct, args.rounds, args.round_time)
        target = TARGETS[case.op]
        mem = ""
        if case.op in ("jacobian", "hessian") and not case.numpy and not args.no_memory:
            mem = memory_text(memory(case.op, case.n))
        verdict = "ok" if r <= target else "MISSED"
        lines.append(
            [case.label, f"{mine * 1e6:.1f}", winner, f"{best * 1e6:.1f}", f"{r:.3f}", f"<= {target}", verdict, mem]
        )
        print(" | ".join(lines[-1]), flush=True)
    if only is None or "trust-ncg" in only:
        mine, best, r = trust_ncg(max(5, args.rounds // 3))
        target = TARGETS["trust-ncg"]
        verdict = "ok" if r <= target else "MISSED"
        lines.append(
            [
                "trust-ncg, Rosenbrock, n=100, NumPy",
                f"{mine * 1e6:.0f}",
                "torch directly",
                f"{best * 1e6:.0f}",
                f"{r:.3f}",
                f"<= {target}",
                verdict,
                "",
            ]
        )
    print()
    print(format_table(header, lines))


if __name__ == "__main__":
    main()
