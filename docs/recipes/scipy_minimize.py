"""Minimize with SciPy, derivatives from diface: `jac=prep.gradient`, `hessp=prep.hvp`.

Prepared once, the tape's exact gradient and Hessian-vector product serve every iteration of
`scipy.optimize.minimize`; the same code with `di.AutoFiniteDiff()` shows what differences cost.

    python docs/recipes/scipy_minimize.py
"""

import time

import numpy as np
from scipy.optimize import minimize

import diface as di


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


n = 100
x0 = np.where(np.arange(n) % 2 == 0, -1.2, 1.0)  # the classic start
seconds = {}
#: tight enough that every method reaches the minimum to 1e-4
TOLERANCES = {"trust-ncg": {"gtol": 1e-8}, "Newton-CG": {"xtol": 1e-12}, "L-BFGS-B": {"gtol": 1e-10, "maxiter": 5000}}
print(f"Rosenbrock, n = {n}: minimize from the classic start, derivatives from diface")
print(f"{'backend':<18} {'method':<10} {'iterations':>10} {'f evals':>8} {'time':>10}  distance to the minimum")
for backend in (di.AutoTape(), di.AutoFiniteDiff()):
    grad = di.prepare_gradient(rosenbrock, backend, x0)  # prepared once ...
    hvp = di.prepare_hvp(rosenbrock, backend, x0)
    for method, tolerance in TOLERANCES.items():
        derivatives = {"jac": grad.gradient}  # ... called at every iterate
        if method != "L-BFGS-B":
            derivatives["hessp"] = hvp.hvp
        start = time.perf_counter()
        result = minimize(rosenbrock, x0, method=method, options=tolerance, **derivatives)
        seconds[backend.label(), method] = elapsed = time.perf_counter() - start
        error = np.max(np.abs(result.x - 1.0))
        counts = f"{result.nit:>10} {result.nfev:>8}"
        print(f"{backend.label():<18} {method:<10} {counts} {elapsed * 1e3:>8.1f} ms  {error:.1e}")
        assert error < 1e-4, (backend, method, result.message)

print("\nspeed-up of the tape over finite differences:")
for method in TOLERANCES:
    ratio = seconds["AutoFiniteDiff()", method] / seconds["AutoTape()", method]
    print(f"  {method:<10} {ratio:5.1f}x")
