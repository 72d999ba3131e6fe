"""AutoTape's Taylor mode against the derivations it replaces, prepared calls in one process.

1. The exact Laplacian of an MLP (tanh, 3 hidden layers of width 256, scalar output; the weights a
   `Constant` context) at n = 100 and 1000 inputs: `prepare_laplacian` (the collapsed Taylor pass: value,
   the n first coefficients, one summed second coefficient) against `prepare_hessian` and the trace of
   its Hessian (forward over reverse on the tape), and against the Laplacian the core derives from
   Taylor coefficients of order two over the basis (`diface._derive.derive_laplacian`, on the tape's
   own Taylor mode).
2. Taylor coefficients of order 4 (one direction, and a batch of 8) through a 20-step RK4 integration
   of a small nonlinear system (a damped pendulum pair, 4 states): the tape's Taylor mode against the
   core's nested pushforwards (`diface._derive.derive_taylor`, 2^order evaluations' worth of tape).

Times are medians of interleaved rounds (`diface.testing._timing.interleaved`), the whole measurement
repeated `--repeats` times; a ratio is the median over the repeats. BLAS runs on one thread unless
`--threads` says otherwise.

    python benchmarks/bench_taylor_tape.py [--repeats 3] [--rounds 7] [--threads N]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))

    import numpy as np

    version = sys.version.split()[0]
    print(f"diface Taylor mode on AutoTape, numpy {np.__version__}, python {version}, BLAS threads {args.threads}")
    rows = [laplacian_row(n, args.repeats, args.rounds) for n in (100, 1000)]
    table("Laplacian (times: the collapsed pass; ratios: how much slower the others are)", rows, "collapsed")
    rows = [taylor_row(batch, args.repeats, args.rounds) for batch in (1, 8)]
    table("Taylor order 4 (times: the tape's Taylor mode; ratios: how much slower the other is)", rows, "tape taylor")


def engines() -> tuple[Any, Any, Any]:
    """(AutoTape, AutoTape with the core's derivations of both, AutoTape with the Laplacian derived
    from its own Taylor mode over the basis)."""
    import diface as di
    from diface import _derive

    class Derived(di.AutoTape):
        def prepare_taylor(self, problem: Any, tangents: tuple, order: int) -> Any:
            return _derive.derive_taylor(self, problem, tangents, order)

        def prepare_laplacian(self, problem: Any, method: Any) -> Any:
            return _derive.derive_laplacian(self, problem, method)

    class Basis(di.AutoTape):
        def prepare_laplacian(self, problem: Any, method: Any) -> Any:
            return _derive.derive_laplacian(self, problem, method)

    return di.AutoTape(), Derived(), Basis()


def measure(candidates: dict[str, Any], base: str, repeats: int, rounds: int) -> dict[str, float]:
    """The base's median time and the others' median ratios to it, over `repeats` interleaved runs."""
    from diface.testing._timing import interleaved

    runs = [interleaved(candidates, rounds=rounds) for _ in range(repeats)]
    ratios = {base: statistics.median(r[base] for r in runs)}
    for name in candidates:
        if name != base:
            ratios[name] = statistics.median(r[name] / r[base] for r in runs)
    return ratios


def mlp(x: Any, w: Any) -> Any:
    import numpy as np

    h = x
    for a, b in w[:-1]:
        h = np.tanh(h @ a + b)
    a, b = w[-1]
    return np.sum(h @ a) + b


def laplacian_row(n: int, repeats: int, rounds: int) -> tuple[str, dict[str, float]]:
    import numpy as np

    import diface as di

    tape, _, basis_engine = engines()
    rng = np.random.default_rng(0)
    width = 256
    sizes = [n, width, width, width]
    w: list = [(rng.normal(size=(p, q)) / np.sqrt(p), rng.normal(size=q) * 0.1) for p, q in itertools.pairwise(sizes)]
    w.append((rng.normal(size=(width,)) / np.sqrt(width), 0.3))
    ctx = di.Constant(w)
    x = rng.normal(size=n)
    lap = di.prepare_laplacian(mlp, tape, x, ctx)
    hess = di.prepare_hessian(mlp, tape, x, ctx)
    basis = di.prepare_laplacian(mlp, basis_engine, x, ctx)
    a, b, c = lap.laplacian(x, ctx), np.trace(hess.hessian(x, ctx)), basis.laplacian(x, ctx)
    assert np.allclose(a, b, rtol=1e-9, atol=1e-9) and np.allclose(a, c, rtol=1e-9, atol=1e-9), (a, b, c)
    candidates = {
        "collapsed": lambda: lap.laplacian(x, ctx),
        "hessian+trace": lambda: np.trace(hess.hessian(x, ctx)),
        "basis order 2": lambda: basis.laplacian(x, ctx),
    }
    return f"MLP laplacian n={n}", measure(candidates, "collapsed", repeats, rounds)


def pendulums(x: Any) -> Any:
    """20 RK4 steps of two coupled damped pendulums (4 states)."""
    import numpy as np

    dt = 0.05

    def rhs(s: Any) -> Any:
        q1, q2, p1, p2 = s[0], s[1], s[2], s[3]
        c = 0.5 * np.sin(q1 - q2)
        return np.stack([p1, p2, -np.sin(q1) - c - 0.1 * p1, -np.sin(q2) + c - 0.1 * p2 * p2 * np.tanh(p2)])

    s = x
    for _ in range(20):
        k1 = rhs(s)
        k2 = rhs(s + dt / 2 * k1)
        k3 = rhs(s + dt / 2 * k2)
        k4 = rhs(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return s


def taylor_row(batch: int, repeats: int, rounds: int) -> tuple[str, dict[str, float]]:
    import numpy as np

    import diface as di

    tape, derived_engine, _ = engines()
    rng = np.random.default_rng(1)
    x0 = np.array([0.4, -0.2, 0.1, 0.3])
    dirs = tuple(rng.normal(size=4) for _ in range(batch))
    tx = dirs[0] if batch == 1 else dirs
    native = di.prepare_taylor(pendulums, tape, x0, tx, order=4)
    derived = di.prepare_taylor(pendulums, derived_engine, x0, tx, order=4)
    da = native.taylor_coefficients(x0, tx)
    db = derived.taylor_coefficients(x0, tx)
    assert np.allclose(np.asarray(da), np.asarray(db), rtol=1e-9, atol=1e-12)
    candidates = {"tape taylor": lambda: native.taylor(x0, tx), "nested pushforwards": lambda: derived.taylor(x0, tx)}
    label = f"RK4 x20 order 4, {batch} dir{'s' if batch > 1 else ''}"
    return label, measure(candidates, "tape taylor", repeats, rounds)


def table(title: str, rows: list[tuple[str, dict[str, float]]], base: str) -> None:
    print(f"\n{title}")
    for label, ratios in rows:
        cells = "  ".join(f"{name} {value:6.2f}x" for name, value in ratios.items() if name != base)
        print(f"  {label:28s} {base} {ratios[base] * 1e3:9.3f} ms   {cells}")


if __name__ == "__main__":
    main()
