"""AutoTape's rules for guards and conversions as a suite of small functions written as source text, and
a runner giving what each operator makes of each: `tests/test_tape_source_free.py` defines the functions
three ways (in a file, with `exec`, with `python -c`) and checks that the outcomes are identical.

Each case defines `f` in its source; `x` is the point, `x2` the other point a preparation is reused at.
The runner is this file's code for every way: only where `f` comes from differs.
"""

from __future__ import annotations

import json
import textwrap
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import diface as di

X = np.array([0.8, -0.3, 1.2])
X2 = np.array([-0.5, 0.4, 0.9])

#: name -> source defining f (scalar output unless the name says vector)
CASES = {
    "float of a comparison": """
        def f(x):
            k = float(x[0] >= 0)
            return k * np.sum(x**3)
    """,
    "int of a comparison": """
        def f(x):
            n = int(x[0] > 0)
            return np.sum(x**2) * (n + 1)
    """,
    "float of x": """
        def f(x):
            return np.sum(x) * float(x[0])
    """,
    "int of x as a slice bound": """
        def f(x):
            return np.sum(x[: int(x[2] * 2)] ** 2)
    """,
    "math.sin of x": """
        def f(x):
            return math.sin(x[0]) * np.sum(x)
    """,
    "np.float64 of a comparison": """
        def f(x):
            return np.float64(x[0] > 0) * np.sum(x**2)
    """,
    "item": """
        def f(x):
            return np.sum(x**2) * (x[1] > 0).item() + x[2].item()
    """,
    "int of argmax as an index": """
        def f(x):
            return x[int(np.argmax(x))] ** 2 + np.sum(x)
    """,
    "if": """
        def f(x):
            if x[0] > 0:
                return np.sum(x**3)
            return np.sum(x**2)
    """,
    "while": """
        def f(x):
            y = x
            while np.sum(y**2) > 1.0:
                y = y / 2
            return np.sum(y**3)
    """,
    "bool()": """
        def f(x):
            return np.sum(x**2) * (2.0 if bool(x[1] < 0) else 1.0)
    """,
    "traced mask": """
        def f(x):
            return np.sum(x[x > 0] ** 2)
    """,
    "np.array of a list": """
        def f(x):  # vector
            return np.array([x[0] ** 2, x[1], 1.0])
    """,
    "np.asarray of a list mixing numbers (Cola)": """
        def f(x):
            return np.sum(np.sqrt(np.asarray([0.5, x[0] ** 2] + list(x[1:] ** 2))))
    """,
    "np.array of arrays": """
        def f(x):  # vector
            return np.sum(np.array([x, 2 * x]), axis=0)
    """,
    "np.array of a list, dtype=float": """
        def f(x):
            return np.sum(np.array([x[0], x[1] ** 2], dtype=float))
    """,
    "np.asarray of a 0-d value": """
        def f(x):
            return np.asarray(x[0]) * x[1]
    """,
    "a ufunc on a list of arrays": """
        def f(x):  # vector
            return np.sum(np.sin([x, 2 * x]), axis=0)
    """,
    "np.asarray of x": """
        def f(x):
            return np.sum(np.asarray(x))
    """,
    "np.array of x": """
        def f(x):
            return np.sum(np.array(x) ** 2)
    """,
    "np.asarray of x, dtype=float": """
        def f(x):
            return np.sum(np.asarray(x, dtype=float))
    """,
    "a cast of an object array": """
        def f(x):
            return np.array([x[:2], x[1:]], dtype=object).astype(float).sum()
    """,
    "a store into a NumPy array": """
        def f(x):
            out = np.zeros(3)
            out[:] = x
            return np.sum(out)
    """,
    "anp.stack": """
        def f(x):  # vector
            return anp.sum(anp.stack([x, anp.sin(x)], axis=0), axis=0) * x
    """,
    "anp.array of a list": """
        def f(x):  # vector
            return anp.array([x[0] ** 2, 1.0, x[1] * x[2]])
    """,
    "anp.concatenate": """
        def f(x):  # vector
            return anp.concatenate([x, anp.sin(x[:2])])
    """,
    "anp.array of x": """
        def f(x):
            return anp.sum(anp.array(x) ** 2)
    """,
}

PRELUDE = "import math\n\nimport autograd.numpy as anp\nimport numpy as np\n"


def program(names: list[str] | None = None) -> str:
    """The source of a module defining `f_0`, `f_1`, ... for the cases (in the order of `CASES`)."""
    parts = [PRELUDE]
    for k, name in enumerate(names or list(CASES)):
        parts.append(textwrap.dedent(CASES[name]).replace("def f(", f"def f_{k}("))
    return "\n".join(parts)


def functions(namespace: dict) -> dict[str, Callable]:
    """The cases' functions defined by `program()` in `namespace`, by case name."""
    return {name: namespace[f"f_{k}"] for k, name in enumerate(CASES)}


def _operators(vector: bool) -> dict[str, Callable[[Callable], Any]]:
    tape = di.AutoTape()
    if vector:
        return {
            "jacobian": lambda f: di.jacobian(f, tape, X),
            "prepared jacobian": lambda f: di.prepare_jacobian(f, tape, X).jacobian(X2),
            "sparse jacobian": lambda f: di.jacobian(f, di.AutoSparse(tape), X).toarray(),
        }
    return {
        "gradient": lambda f: di.gradient(f, tape, X),
        "prepared gradient": lambda f: di.prepare_gradient(f, tape, X).gradient(X2),
        "hessian": lambda f: di.hessian(f, tape, X),
        "prepared hessian": lambda f: di.prepare_hessian(f, tape, X).hessian(X2),
        "hvp": lambda f: di.hvp(f, tape, X, np.array([1.0, -2.0, 0.5])),
        "sparse hessian": lambda f: di.hessian(f, di.AutoSparse(tape), X).toarray(),
    }


def _outcome(op: Callable[[Callable], Any], f: Callable) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = op(f)
        except Exception as e:  # what the tape refuses, by type
            return {"raised": type(e).__name__, "warned": _warned(caught)}
    return {"value": np.asarray(value, dtype=float).tolist(), "warned": _warned(caught)}


def _warned(caught: list) -> list[str]:
    return sorted({w.category.__name__ for w in caught})


def outcomes(fs: dict[str, Callable]) -> dict:
    """{case: {operator: {"value": ... or "raised": error type, "warned": warning types}}}, as JSON."""
    result = {}
    for name, f in fs.items():
        ops = _operators("# vector" in CASES[name])
        result[name] = {op: _outcome(run, f) for op, run in ops.items()}
    return json.loads(json.dumps(result))
