"""`AutoDistributed` against the serial prepared Jacobian, on an f whose every JVP costs 50 ms.

Cases (n = 32 inputs and outputs, forward mode: 32 JVPs per Jacobian):

- jax: `di.AutoJAX(mode="forward")`, f = sin with a custom JVP whose tangent goes through a host
  callback sleeping 50 ms (`jax.pure_callback(..., vmap_method="sequential")`: one sleep per tangent,
  also under `vmap`), so the serial compiled Jacobian costs 32 x 50 ms;
- finitediff: `di.AutoFiniteDiff()` on a NumPy f that sleeps 50 ms per evaluation (n + 1 evaluations
  serially; a task of k tangents evaluates k + 1 points). The tape is left out: a prepared tape call
  replays its recording without calling f, so a sleep in f costs nothing per JVP there.

Each is run serially (prepared `jacobian`), on a `ThreadPoolExecutor(8)` and on a Dask `LocalCluster` of
4 workers (one thread each, in-process: `processes=False`), and the finite differences also on a
`LocalCluster` of 4 worker processes (f cloudpickled to them; JAX is left out there: its workers would
import JAX and need float64 configured), prepared once and timed as the best of `--repeat` calls
(wall clock: the workers sleep). Printed: seconds, speedup over serial, speedup per
worker (target ≥ 0.8) and whether the Jacobian is bit-identical to the serial one (finite differences:
a pushforward steps along each tangent, where the serial Jacobian steps per column, so the two agree to
the accuracy of finite differences only). Sleeping releases
the GIL, so the speedups are reachable on a 2-core machine.

    python benchmarks/bench_distributed.py              # both cases
    python benchmarks/bench_distributed.py --only jax   # one case
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import diface as di

N = 32
COST = 0.05


def jax_case() -> tuple[Callable, di.Backend, Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def sleepy(t: np.ndarray) -> np.ndarray:
        time.sleep(COST)
        return np.asarray(t)

    @jax.custom_jvp
    def f(x: Any) -> Any:
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals: tuple, tangents: tuple) -> tuple:
        (x,), (t,) = primals, tangents
        slow = jax.pure_callback(sleepy, jax.ShapeDtypeStruct(t.shape, t.dtype), t, vmap_method="sequential")
        return jnp.sin(x), jnp.cos(x) * slow

    return f, di.AutoJAX(mode="forward"), jnp.linspace(0.0, 1.0, N)


def fd_f(x: np.ndarray) -> np.ndarray:
    time.sleep(COST)
    return np.sin(x) * x[::-1]


def fd_case() -> tuple[Callable, di.Backend, Any]:
    return fd_f, di.AutoFiniteDiff(), np.linspace(0.0, 1.0, N)


CASES = {"jax": jax_case, "finitediff": fd_case}


def best(call: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CASES))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import distributed

    logging.getLogger("distributed").setLevel(logging.ERROR)

    quiet = {"n_workers": 4, "threads_per_worker": 1, "dashboard_address": ":0", "silence_logs": logging.ERROR}
    cluster = distributed.LocalCluster(processes=False, **quiet)
    client = distributed.Client(cluster)
    process_cluster = distributed.LocalCluster(processes=True, **quiet)
    process_client = distributed.Client(process_cluster)
    threads = concurrent.futures.ThreadPoolExecutor(8)
    print(f"n = {N}, {COST * 1000:.0f} ms per JVP; wall-clock seconds, best of {args.repeat}")
    print(f"{'case':<12}{'executor':<22}{'workers':>8}{'seconds':>10}{'speedup':>9}{'per worker':>12}  identical")
    try:
        for name in [args.only] if args.only else list(CASES):
            f, dense, x = CASES[name]()
            serial = di.prepare_jacobian(f, dense, x)
            t_serial, j_serial = best(lambda serial=serial, x=x: serial.jacobian(x), args.repeat)
            print(f"{name:<12}{'serial':<22}{1:>8}{t_serial:>10.3f}{1.0:>9.2f}{1.0:>12.2f}  -")
            pools = [("ThreadPoolExecutor(8)", threads, 8), ("Dask LocalCluster(4)", client, 4)]
            if name == "finitediff":
                pools.append(("Dask (4 processes)", process_client, 4))
            for label, executor, workers in pools:
                prep = di.prepare_jacobian(f, di.AutoDistributed(dense, executor), x)
                prep.jacobian(x)  # the workers prepare (and compile) on their first task
                t, j = best(lambda prep=prep, x=x: prep.jacobian(x), args.repeat)
                speedup = t_serial / t
                a, b = np.asarray(j), np.asarray(j_serial)
                same = "True" if np.array_equal(a, b) else f"False ({np.max(np.abs(a - b)) / np.max(np.abs(b)):.1e})"
                print(f"{name:<12}{label:<22}{workers:>8}{t:>10.3f}{speedup:>9.2f}{speedup / workers:>12.2f}  {same}")
    finally:
        threads.shutdown()
        for closing in (client, cluster, process_client, process_cluster):
            closing.close()


if __name__ == "__main__":
    main()
