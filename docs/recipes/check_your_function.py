"""Does my function differentiate the same on every engine? `diface.testing.check_agreement` answers it.

The recipes' functions, the Rosenbrock function (a scalar output: gradient, Hessian, hvp, Jacobian,
pushforward, pullback) and the 2-D Bratu residual (a vector output: Jacobian, pushforward, pullback),
are written once per array module (NumPy for finite differences and the tape, `autograd.numpy`, torch,
`jax.numpy`) and every operator that applies is computed on every installed engine and compared with the
tape's exact result, within each engine's tolerance (finite differences get theirs). No analytic
derivative is written by hand. A version of f that differs on one engine (a typo in the torch version)
is caught, with a table of what differs.

    python docs/recipes/check_your_function.py
"""

import importlib.util

import numpy as np

import diface as di
from diface.testing import check_agreement

#: each engine with the module its f is written with, where the engine is installed
ENGINES = {
    "finitediff": (di.AutoFiniteDiff(), "numpy"),
    "tape": (di.AutoTape(), "numpy"),
    "autograd": (di.AutoAutograd(), "autograd.numpy"),
    "torch": (di.AutoTorch(), "torch"),
    "jax": (di.AutoJAX(), "jax.numpy"),
}
installed = {
    name: (backend, importlib.import_module(module))
    for name, (backend, module) in ENGINES.items()
    if di.check_available(backend) and importlib.util.find_spec(module.split(".")[0]) is not None
}
backends = [backend for backend, _ in installed.values()]
# the reference: exact and always installed; the very object in `backends`, so it is not compared with itself
tape = installed["tape"][0]
modules = {module.__name__: module for _, module in installed.values()}  # numpy once, for two engines
print("engines:", ", ".join(installed))


def rosenbrock(xp, a=100.0):
    """The Rosenbrock function, written with the array module `xp`."""
    return lambda x: xp.sum(a * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


m, lam = 8, 6.0
h = 1.0 / (m + 1)
#: the 1-D second difference on m points, zero outside: the 2-D Laplacian of U is (D @ U + U @ D.T) / h²
D1 = np.diag(-2.0 * np.ones(m)) + np.diag(np.ones(m - 1), 1) + np.diag(np.ones(m - 1), -1)


def bratu(xp):
    """The Bratu residual F(u) = -Δu - λ exp(u) on an m x m grid (as in the sparse Newton recipe)."""
    D = xp.asarray(D1)

    def residual(u):
        U = xp.reshape(u, (m, m))
        return xp.reshape(-(D @ U + U @ D.T) / h**2 - lam * xp.exp(U), (-1,))

    return residual


x = np.where(np.arange(6) % 2 == 0, -1.2, 1.0)
report = check_agreement({module: rosenbrock(module) for module in modules.values()}, backends, x, reference=tape)
print(f"\nRosenbrock, n = {x.size}, every engine against the tape:")
print(report)
assert report.ok and {r.status for r in report.rows} == {"agrees"}

u = np.random.default_rng(0).uniform(0.0, 0.5, m * m)
report = check_agreement({module: bratu(module) for module in modules.values()}, backends, u, reference=tape)
print(f"\nBratu residual, n = {u.size}, every engine against the tape:")
print(report)
assert report.ok and {r.status for r in report.rows} == {"agrees"}

if "torch" in installed:  # one engine's version of f differs: a typo, 10 for 100
    import torch

    functions = {module: rosenbrock(module) for module in modules.values()} | {torch: rosenbrock(torch, a=10.0)}
    try:
        check_agreement(functions, backends, x, reference=tape)
    except AssertionError as e:
        print("\na torch version with 10 for 100:\n" + str(e))
        assert "differs" in str(e) and "AutoTorch" in str(e)
    else:
        raise AssertionError("check_agreement missed a torch version that differs")
