"""The tape at scale: the gradient of an explicit simulation, every value kept vs `AutoTape(memory=...)`.

    python benchmarks/bench_memory.py                      # 10^3 and 10^4 steps, both, 10^5 bounded
    python benchmarks/bench_memory.py --steps 1000 --memory 1GB 200MB
    python benchmarks/bench_memory.py --ratio 10000 460MB     # time per step against 10^3 unbounded

The simulation (issue 33): u <- u + h * (tanh(u) * p - a * u + 0.1 * roll(u, 1)) with 10^4 unknowns,
loss sum(u^2), differentiated with respect to p. Each configuration runs in a fresh process, which
reports its peak resident memory (`ru_maxrss`), the preparation's time (recording and planning), the
time of a prepared gradient (best of two calls at another point) and `prep.report`; the gradients are
compared with the unbounded one's where both ran. Unbounded runs are skipped where they would need more
than the machine's memory (--max-unbounded-steps).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
import numpy as np
import diface as di

steps, n, memory, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
h, a = 0.01, 0.5
rng = np.random.default_rng(0)
u0 = 0.1 * rng.standard_normal(n)

def f(p):
    u = u0
    for _ in range(steps):
        u = u + h * (np.tanh(u) * p - a * u + 0.1 * np.roll(u, 1))
    return np.sum(u**2)

backend = di.AutoTape() if memory == "none" else di.AutoTape(memory=memory)
t0 = time.perf_counter()
prep = di.prepare_gradient(f, backend, np.zeros(n))
t1 = time.perf_counter()
x = 0.3 + 0.1 * rng.standard_normal(n)
times = []
for _ in range(2):
    s = time.perf_counter()
    g = prep.gradient(x)
    times.append(time.perf_counter() - s)
np.save(out, g)
report = prep.report
print(json.dumps({
    "prepare_s": t1 - t0,
    "gradient_s": min(times),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "report": str(report),
    "segments": getattr(report, "segments", None),
    "snapshots": getattr(report, "snapshots", None),
    "recomputation": getattr(report, "recomputation", None),
}))
"""


def run(steps: int, n: int, memory: str, directory: str) -> dict:
    out = os.path.join(directory, f"g_{steps}_{memory}.npy")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps), str(n), memory, out], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else f"exit {proc.returncode}"}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["gradient_file"] = out
    return result


RATIO = r"""
import sys, time
import numpy as np
import diface as di

n, steps, memory = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
u0 = 0.1 * rng.standard_normal(n)

def simulation(k):
    def f(p):
        u = u0
        for _ in range(k):
            u = u + 0.01 * (np.tanh(u) * p - 0.5 * u + 0.1 * np.roll(u, 1))
        return np.sum(u**2)
    return f

unbounded = di.prepare_gradient(simulation(1000), di.AutoTape(), np.zeros(n))
bounded = di.prepare_gradient(simulation(steps), di.AutoTape(memory=memory), np.zeros(n))
x = 0.3 + 0.1 * rng.standard_normal(n)
a, b = [], []
for _ in range(3):  # interleaved rounds, the best of each
    t = time.perf_counter(); unbounded.gradient(x); a.append((time.perf_counter() - t) / 1000)
    t = time.perf_counter(); bounded.gradient(x); b.append((time.perf_counter() - t) / steps)
print(bounded.report)
print(f"per step: unbounded at 1000 steps {1e3 * min(a):.3f} ms, {memory} at {steps} steps {1e3 * min(b):.3f} ms: "
      f"{min(b) / min(a):.2f} times")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--memory", nargs="+", default=["none", "1GB"], help='"none" or budgets such as 1GB')
    parser.add_argument("--unknowns", type=int, default=10_000)
    parser.add_argument("--max-unbounded-steps", type=int, default=10_000)
    parser.add_argument(
        "--ratio",
        nargs=2,
        metavar=("STEPS", "MEMORY"),
        help="instead: in one process, the time per step of a budgeted gradient of STEPS steps against the "
        "unbounded gradient of 1000 steps (e.g. --ratio 10000 460MB: the segments of the 10^5-step 1GB run)",
    )
    args = parser.parse_args()
    if args.ratio:
        subprocess.run([sys.executable, "-c", RATIO, str(args.unknowns), *args.ratio], check=True)
        return
    import numpy as np

    rows = []
    with tempfile.TemporaryDirectory() as directory:
        reference: dict[int, str] = {}
        for steps in args.steps:
            for memory in args.memory:
                if memory == "none" and steps > args.max_unbounded_steps:
                    rows.append((steps, memory, None))
                    continue
                r = run(steps, args.unknowns, memory, directory)
                if "error" not in r:
                    if memory == "none":
                        reference[steps] = r["gradient_file"]
                    elif steps in reference:
                        g, g0 = np.load(r["gradient_file"]), np.load(reference[steps])
                        r["max_rel_diff"] = float(np.max(np.abs(g - g0)) / np.max(np.abs(g0)))
                rows.append((steps, memory, r))
                print(steps, memory, json.dumps(r), flush=True)
    print()
    print(
        "| steps | memory | peak RSS (MB) | prepare (s) | gradient (s) | per step (ms) | recomputation | vs unbounded |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for steps, memory, r in rows:
        if r is None:
            print(f"| {steps} | {memory} | not run (would need about {steps / 1000 * 0.9:.0f} GB) | | | | | |")
        elif "error" in r:
            print(f"| {steps} | {memory} | error: {r['error']} | | | | | |")
        else:
            diff = r.get("max_rel_diff")
            print(
                f"| {steps} | {memory} | {r['peak_rss_mb']:.0f} | {r['prepare_s']:.2f} | {r['gradient_s']:.2f} | "
                f"{1000 * r['gradient_s'] / steps:.3f} | {r['recomputation'] or 1:.3g} | "
                f"{'' if diff is None else f'{diff:.1e}'} |"
            )


if __name__ == "__main__":
    main()
