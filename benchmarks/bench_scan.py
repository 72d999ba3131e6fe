"""`di.scan` beside the engines' own idioms: time and peak memory of the gradient of the issue's explicit
simulation (u <- u + h*(tanh(u)*p1 - a*u + 0.1*roll(u, 1)), loss sum(u^2), `--size` unknowns) against
the number of steps, for checkpoints=None, "sqrt", 10 and 50, on JAX (beside `lax.scan` of a
`jax.checkpoint`ed step), torch (beside `torch.utils.checkpoint.checkpoint_sequential`) and the tape
(beside the plain loop, every value kept), with the step evaluations counted against the Revolve bound
(the tape's: its forward runs of the loop, from `prep.report`, the steps before and after the loop
counted as two).

Each configuration runs in a fresh subprocess: peak memory is its resident-set peak
(`ru_maxrss`) less the resident set before the gradient (the arrays and the framework loaded); on JAX,
also the compiled gradient's temporary bytes (`memory_analysis()`). Time: the best of two gradients
after one (compiling) warm-up call.

    nice python benchmarks/bench_scan.py --steps 1000,3000 --size 10000
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

H, A = 0.01, 0.3
CONFIGS = ["None", "sqrt", "10", "50", "idiom"]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _checkpoints(config: str) -> int | str | None:
    return None if config == "None" else config if config == "sqrt" else int(config)


def run_jax(config: str, n: int, size: int) -> dict:
    import jax
    import jax.numpy as jnp

    import diface as di

    jax.config.update("jax_enable_x64", True)
    p1 = jnp.linspace(0.5, 1.5, size)
    count = [0]

    def step(u, i):
        return u + H * (jnp.tanh(u) * p1 - A * u + 0.1 * jnp.roll(u, 1))

    if config == "idiom":

        def loss(u):
            body = jax.checkpoint(lambda c, i: (step(c, i), None))
            return jnp.sum(jax.lax.scan(body, u, jnp.arange(n))[0] ** 2)
    else:
        ck = _checkpoints(config)

        def loss(u):
            return jnp.sum(di.scan(step, u, n, checkpoints=ck) ** 2)

    u0 = jnp.linspace(-1.0, 1.0, size)
    grad = jax.jit(jax.grad(loss))
    t0 = time.perf_counter()
    compiled = grad.lower(u0).compile()
    compile_s = time.perf_counter() - t0
    temp = compiled.memory_analysis().temp_size_in_bytes
    base = _rss_mb()
    compiled(u0).block_until_ready()
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        compiled(u0).block_until_ready()
        times.append(time.perf_counter() - t0)
    del count
    return {"time_s": min(times), "compile_s": compile_s, "peak_mb": _rss_mb() - base, "temp_mb": temp / 2**20}


def run_torch(config: str, n: int, size: int) -> dict:
    import torch

    import diface as di

    torch.set_num_threads(1)
    dtype = torch.float64
    p1 = torch.linspace(0.5, 1.5, size, dtype=dtype)
    count = [0]

    def step(u, i=0):
        count[0] += 1
        return u + H * (torch.tanh(u) * p1 - A * u + 0.1 * torch.roll(u, 1))

    if config == "idiom":
        from torch.utils.checkpoint import checkpoint_sequential

        segments = max(1, math.isqrt(n))

        def loss(u):
            return (checkpoint_sequential([step] * n, segments, u, use_reentrant=False) ** 2).sum()
    else:
        ck = _checkpoints(config)

        def loss(u):
            return (di.scan(step, u, n, checkpoints=ck) ** 2).sum()

    u0 = torch.linspace(-1.0, 1.0, size, dtype=dtype)

    def gradient():
        u = u0.clone().requires_grad_()
        return torch.autograd.grad(loss(u), u)[0]

    base = _rss_mb()
    count[0] = 0
    gradient()
    evaluations = count[0]
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        gradient()
        times.append(time.perf_counter() - t0)
    return {"time_s": min(times), "peak_mb": _rss_mb() - base, "evaluations": evaluations}


def run_tape(config: str, n: int, size: int) -> dict:
    import numpy as np

    import diface as di

    p1 = np.linspace(0.5, 1.5, size)

    def step(u, i=0):
        return u + H * (np.tanh(u) * p1 - A * u + 0.1 * np.roll(u, 1))

    if config == "idiom":  # the plain loop, every value kept

        def loss(u):
            for i in range(n):
                u = step(u, i)
            return np.sum(u**2)
    else:
        ck = _checkpoints(config)

        def loss(u):
            return np.sum(di.scan(step, u, n, checkpoints=ck) ** 2)

    u0 = np.linspace(-1.0, 1.0, size)
    base = _rss_mb()
    prep = di.prepare_gradient(loss, di.AutoTape(), u0)
    prep.gradient(u0)
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        prep.gradient(u0)
        times.append(time.perf_counter() - t0)
    # the tape replays the recording: step evaluations are its forward runs of the loop
    evaluations = round(prep.report.recomputation * (n + 2)) - 2
    return {"time_s": min(times), "peak_mb": _rss_mb() - base, "evaluations": evaluations}


RUNS = {"jax": run_jax, "torch": run_torch, "tape": run_tape}


def bound(config: str, n: int) -> str:
    from diface._memory.schedule import advanced_steps, revolve_bound, sqrt_segments

    if config in ("None", "idiom"):
        return ""
    if config == "sqrt":
        return str(advanced_steps(sqrt_segments(n)) + n)
    return str(revolve_bound(n, int(config)) + n)


def _error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "Error:" in line]
    return lines[-1].split("Error: ", 1)[-1][:160] if lines else stderr.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="100,300", help="comma-separated numbers of steps")
    parser.add_argument("--size", type=int, default=10_000, help="unknowns")
    parser.add_argument("--engines", default="jax,torch,tape")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per configuration")
    parser.add_argument("--one", nargs=3, metavar=("ENGINE", "CONFIG", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        engine, config, n = args.one
        result = RUNS[engine](config, int(n), args.size)
        print(json.dumps(result))
        return

    def trajectory_mb(n: int) -> float:
        return (n + 1) * args.size * 8 / 2**20

    print(
        "| engine | n | checkpoints | time (s) | peak RSS (MB) | JAX temp (MB) | step evals | bound | trajectory (MB) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for engine in args.engines.split(","):
        for n in (int(s) for s in args.steps.split(",")):
            for config in args.configs.split(","):
                cmd = [sys.executable, __file__, "--size", str(args.size), "--one", engine, config, str(n)]
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=True)
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                except subprocess.TimeoutExpired:
                    r = {"time_s": float("nan"), "peak_mb": float("nan"), "note": f"over {args.timeout:.0f} s"}
                except subprocess.CalledProcessError as e:
                    r = {"time_s": float("nan"), "peak_mb": float("nan"), "note": _error(e.stderr)}
                label = "lax.scan+checkpoint" if config == "idiom" and engine == "jax" else config
                label = "checkpoint_sequential(sqrt n)" if config == "idiom" and engine == "torch" else label
                label = "plain loop" if config == "idiom" and engine == "tape" else label
                time_s = f"{r['time_s']:.3f}" + (f" (+{r['compile_s']:.1f} compile)" if "compile_s" in r else "")
                temp = f"{r['temp_mb']:.1f}" if "temp_mb" in r else ""
                evals = str(r.get("evaluations", ""))
                note = f" {r['note']}" if "note" in r else ""
                print(
                    f"| {engine} | {n} | {label} | {time_s}{note} | {r['peak_mb']:.1f} | {temp} | {evals} | "
                    f"{bound(config, n) if engine != 'jax' else ''} | {trajectory_mb(n):.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
