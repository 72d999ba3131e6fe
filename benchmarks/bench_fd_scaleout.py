"""Finite-difference gradients of an expensive f, scaled out: serial vs a thread pool vs a Dask cluster
vs SciPy's `approx_derivative(workers=pool.map)`, and a vectorized f vs the serial loop.

f sleeps 50 ms per call (so two cores suffice), n = 32, central differences (64 evaluations); ratios
are serial time / time, one process. The vectorized comparison uses an f costing 1 ms per call at n = 1000.

    python benchmarks/bench_fd_scaleout.py
"""

from __future__ import annotations

import inspect
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import diface as di
from diface._table import format_table

N, DELAY, WORKERS = 32, 0.05, 16


def slow(x):
    time.sleep(DELAY)
    return np.sum(np.sin(x) * x)


def per_call(x):  # 1 ms per call whatever the batch (a simulator's start-up, a GPU dispatch)
    time.sleep(0.001)
    return np.sum(np.sin(x) * x)


def per_call_batch(X):
    time.sleep(0.001)
    return np.sum(np.sin(X) * X, axis=-1)


def seconds(fn, repeat: int = 1) -> float:
    fn()  # warm
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    x = np.linspace(-1.0, 1.0, N)
    reference = di.gradient(slow, di.AutoFiniteDiff(), x)
    rows = []
    serial = di.prepare_gradient(slow, di.AutoFiniteDiff(), x)
    t_serial = seconds(lambda: serial.gradient(x))
    rows.append(["serial", f"{t_serial:.2f}", "1.0", "yes"])
    for workers in (8, WORKERS):
        with ThreadPoolExecutor(workers) as pool:
            prep = di.prepare_gradient(slow, di.AutoFiniteDiff(executor=pool), x)
            t = seconds(lambda prep=prep: prep.gradient(x), 3)
            same = np.array_equal(prep.gradient(x), reference)
        rows.append([f"thread pool ({workers})", f"{t:.2f}", f"{t_serial / t:.1f}", "yes" if same else "no"])
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        rows.append(["Dask LocalCluster", "-", "-", "dask not installed"])
    else:
        with (
            LocalCluster(n_workers=WORKERS, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
            Client(cluster) as client,
        ):
            prep = di.prepare_gradient(slow, di.AutoFiniteDiff(executor=client), x)
            t = seconds(lambda: prep.gradient(x), 3)
            same = np.array_equal(prep.gradient(x), reference)
        name = f"Dask LocalCluster ({WORKERS} processes)"
        rows.append([name, f"{t:.2f}", f"{t_serial / t:.1f}", "yes" if same else "no"])
    from scipy.optimize._numdiff import approx_derivative

    if "workers" in inspect.signature(approx_derivative).parameters:
        with ThreadPoolExecutor(WORKERS) as pool:
            t = seconds(lambda: approx_derivative(slow, x, method="3-point", workers=pool.map), 3)
        rows.append([f"scipy approx_derivative (workers={WORKERS} threads)", f"{t:.2f}", f"{t_serial / t:.1f}", "-"])
    print(f"gradient, f sleeps {DELAY * 1000:.0f} ms, n = {N}, central differences (64 evaluations)")
    print(format_table(["engine", "seconds", "x serial", "identical"], rows))

    big = np.linspace(-1.0, 1.0, 1000)
    loop = di.prepare_gradient(per_call, di.AutoFiniteDiff(), big)
    vec = di.prepare_gradient(per_call_batch, di.AutoFiniteDiff(vectorized=True), big)
    t_loop, t_vec = seconds(lambda: loop.gradient(big)), seconds(lambda: vec.gradient(big), 5)
    err = np.abs(vec.gradient(big) - loop.gradient(big)).max()
    print(f"\nn = 1000, f costs 1 ms per call: serial loop {t_loop * 1e3:.1f} ms, vectorized {t_vec * 1e3:.1f} ms")
    print(f"({t_loop / t_vec:.0f}x, max difference {err:.1e})")


if __name__ == "__main__":
    main()
