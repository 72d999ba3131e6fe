"""AutoTape's inverse accumulation (`prepare_inverse_linearize`) against forward products and dense solves.

Problems: a 16-layer RealNVP-style affine coupling flow (halves, a 2-layer tanh MLP of width 64 giving
the log-scale and shift, a fixed permutation after each layer), n = 64 .. 4096, float64.

- "inv/Jv": one prepared `inverse_pushforward` with `method="accumulate"` (a forward replay and the
  reverse-inverse sweep) over one prepared `pushforward` (a forward replay and the tangent sweep);
  "invT/Jv" the same for `inverse_pullback` (J⁻ᵀv);
- "dense/inv" (n <= 1024): the prepared tape Jacobian + `scipy.linalg.lu_factor`/`lu_solve` over one
  J⁻¹v by accumulation;
- on an ill-conditioned flow (n = 512, cond(J) about 4e8): the relative errors of J⁻¹v and J⁻ᵀv by
  accumulation against a solve with the Jacobian, and whether unpreconditioned GMRES (rtol 1e-8)
  converges within 1000 products (it does not).

Times are medians of interleaved rounds (`diface.testing._timing.interleaved`); BLAS runs on one
thread unless `--threads` says otherwise.

    python benchmarks/bench_inverse_tape.py [--rounds 7] [--quick] [--threads N] [--plot FILE.png]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any


def coupling_flow(np: Any, n: int, layers: int = 16, hidden: int = 64, seed: int = 0) -> Callable:
    rng = np.random.default_rng(seed)
    h = n // 2
    ws = [
        (
            rng.normal(size=(hidden, h)) / np.sqrt(h),
            rng.normal(size=(h, hidden)) * 0.3 / np.sqrt(hidden),
            rng.normal(size=(h, hidden)) / np.sqrt(hidden),
        )
        for _ in range(layers)
    ]
    perm = rng.permutation(n)

    def f(x: Any) -> Any:
        z = x
        for w1, w2, w3 in ws:
            z1, z2 = z[:h], z[h:]
            a = np.tanh(w1 @ z1)
            z = np.concatenate([z2 * np.exp(np.tanh(w2 @ a)) + w3 @ a, z1])[perm]
        return z

    return f


def ill_conditioned(np: Any, n: int = 16) -> Callable:
    h = n // 2
    scales = np.linspace(0.0, 10.0, h)

    def f(x: Any) -> Any:
        z = x
        for k in range(4):
            z1, z2 = z[:h], z[h:]
            s = scales * (k == 0) + 0.1 * np.tanh(z1)
            z = np.concatenate([z2 * np.exp(s) + 0.1 * np.sin(z1), z1])
        return z

    return f


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="n = 64 and 256 only")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--plot", metavar="FILE.png", help="also draw cost against n, log-log (needs matplotlib)")
    args = parser.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))

    import numpy as np
    import scipy.linalg

    import diface as di
    from diface.testing._timing import interleaved

    tape = di.AutoTape()
    print(f"{'n':>6} {'Jv us':>9} {'inv us':>9} {'inv/Jv':>7} {'invT/Jv':>8} {'dense us':>10} {'dense/inv':>9}")
    sizes = (64, 256) if args.quick else (64, 256, 1024, 4096)
    rows: list = []
    for n in sizes:
        f = coupling_flow(np, n)
        rng = np.random.default_rng(n)
        x, v = rng.normal(size=n), rng.normal(size=n)
        push_prep = di.prepare_pushforward(f, tape, x, v)
        inv_prep = di.prepare_inverse_pushforward(f, tape, x, v, method="accumulate")
        inv_t_prep = di.prepare_inverse_pullback(f, tape, x, v, method="accumulate")

        def jv(push_prep: Any = push_prep, x: Any = x, v: Any = v) -> Any:
            return push_prep.pushforward(x, v)

        def inv(inv_prep: Any = inv_prep, x: Any = x, v: Any = v) -> Any:
            return inv_prep.inverse_pushforward(x, v)

        def inv_t(inv_t_prep: Any = inv_t_prep, x: Any = x, v: Any = v) -> Any:
            return inv_t_prep.inverse_pullback(x, v)

        candidates = {"jv": jv, "inv": inv, "invT": inv_t}
        if n <= 1024:
            jac_prep = di.prepare_jacobian(f, tape, x)

            def dense(jac_prep: Any = jac_prep, f: Any = f, x: Any = x, v: Any = v) -> Any:
                jac = di.jacobian(f, tape, x, prep=jac_prep)
                return scipy.linalg.lu_solve(scipy.linalg.lu_factor(jac), v)

            candidates["dense"] = dense
        exact = np.linalg.solve(di.jacobian(f, tape, x), v)
        got = inv()
        assert np.linalg.norm(got - exact) <= 1e-8 * np.linalg.norm(exact), "J⁻¹v disagrees with a dense solve"
        times = interleaved(candidates, rounds=args.rounds)
        dense_cols = (
            f"{times['dense'] * 1e6:10.0f} {times['dense'] / times['inv']:9.1f}"
            if "dense" in times
            else f"{'-':>10} {'-':>9}"
        )
        rows.append((n, times))
        print(
            f"{n:6d} {times['jv'] * 1e6:9.0f} {times['inv'] * 1e6:9.0f} {times['inv'] / times['jv']:7.2f} "
            f"{times['invT'] / times['jv']:8.2f} {dense_cols}"
        )

    ill_conditioned_rows(np, di, tape)
    if args.plot:
        plot(rows, args.plot)


def ill_conditioned_rows(np: Any, di: Any, tape: Any) -> None:
    """Accumulation against LU with the Jacobian, and unpreconditioned GMRES, on a flow with cond(J) ~ 1e7."""
    n = 512
    g = ill_conditioned(np, n)
    x, u = np.random.default_rng(7).normal(size=n), np.random.default_rng(8).normal(size=n)
    jac = di.jacobian(g, tape, x)
    exact, exact_t = np.linalg.solve(jac, u), np.linalg.solve(jac.T, u)
    got = di.inverse_pushforward(g, tape, x, u, method="accumulate")
    got_t = di.inverse_pullback(g, tape, x, u, method="accumulate")
    try:
        di.inverse_pushforward(g, tape, x, u, method="krylov", rtol=1e-8, maxiter=1000)
        krylov = "converged"
    except di.ConvergenceError:
        krylov = "did not converge in 1000 products"
    print(
        f"ill-conditioned flow, n = {n}: cond(J) = {np.linalg.cond(jac):.1e}; relative error of J⁻¹v by "
        f"accumulation {np.linalg.norm(got - exact) / np.linalg.norm(exact):.1e}, of J⁻ᵀv "
        f"{np.linalg.norm(got_t - exact_t) / np.linalg.norm(exact_t):.1e} (against LU with the Jacobian); "
        f"GMRES (rtol 1e-8, no preconditioner): {krylov}"
    )


def plot(rows: list, path: str) -> None:
    """Cost against n, log-log: Jv, J⁻¹v and J⁻ᵀv by accumulation, and the dense solve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    labels = {
        "jv": "Jv (pushforward)",
        "inv": "J⁻¹v, accumulation",
        "invT": "J⁻ᵀv, accumulation",
        "dense": "J⁻¹v, Jacobian + LU",
    }
    for key, label in labels.items():
        points = [(n, times[key] * 1e3) for n, times in rows if key in times]
        if points:
            ax.loglog(*zip(*points), marker="o", label=label)
    ax.set_xlabel("n")
    ax.set_ylabel("ms per prepared call")
    ax.set_title("16-layer coupling flow on AutoTape")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot written to {path}")


if __name__ == "__main__":
    main()
