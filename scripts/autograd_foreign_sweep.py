"""Sweep HIPS autograd's own test functions through `di.AutoAutograd`, counting foreign exceptions.

Usage (autograd's tests are not installed with autograd: take them from its repository):

    git clone https://github.com/HIPS/autograd /tmp/autograd
    PYTHONPATH=$PWD python scripts/autograd_foreign_sweep.py /tmp/autograd/tests [-v] [--per-test=N]

Each of autograd's test files is imported with `autograd.test_util.check_grads` and `combo_check`
replaced by recorders, and with its module-level `grad`, `jacobian`, `hessian` and
`hessian_tensor_product` wrapped to record their calls too; every test function is then run, so every
function autograd checks, at autograd's own sample arguments, is recorded once, and with it (as
check_grads checks at order 2) its VJP and JVP as functions of (x, v), autograd's `make_vjp` and
`make_jvp` inside (tests named `...[vjp]`, `...[jvp]`; `--first-order` leaves them out). Each recorded function
of x (the differentiated argument, or the tuple of them) is then differentiated through diface on both of
autograd's modes: `gradient`, `hessian` and `hvp` where f is real and scalar, `jacobian` otherwise.

Every call ends in one of:

- right: agrees at rtol 1e-7 with `di.AutoTape` on the same function (autograd.numpy hands the tape's
  traced arrays to NumPy), or where the tape refuses, with central finite differences at rtol 1e-4;
- refused: a diface error (`di.DifaceError`: NotSupportedError, ShapeError, ArgumentError, ...);
- wrong: a value that agrees with neither;
- foreign: any other exception (the bug this sweep hunts);
- value (with `--no-reference`, which only counts the exceptions): a value, not checked.

Measured (autograd 1.9.1, its tests at bff107b; `--no-reference`): 6551 functions (2534 that autograd
checks, 4017 of their order-2 VJPs and JVPs), 17738 calls. Before the fixes of issue 32: 79 foreign
exceptions, 4558 refusals; after: 24 and 1310, the 24 all f's own `AssertionError` (autograd's
isinstance tests assert that x is a list, where diface hands f a list of numbers as one array, as
docs/trees.md says). With the references, one record per test (`--per-test=1`): 1359 functions, 4514 calls, 4040 right,
462 refused, 0 wrong, the same 12 assertions of f.

The summary prints the counts; `-v` lists every foreign exception and every wrong value;
`--per-test=N` keeps N of each test's recorded calls (the first, the last, evenly spaced between), as
combo_check records hundreds for some tests. Each call's outcome streams to standard error.
"""

from __future__ import annotations

import collections
import importlib
import inspect
import sys
import traceback
import warnings
from typing import Any

import numpy as np

import diface as di

FILES = (
    "test_numpy",
    "test_systematic",
    "test_linalg",
    "test_scipy",
    "test_complex",
    "test_fft",
    "test_builtins",
    "test_tuple",
    "test_list",
    "test_dict",
    "test_binary_ops",
    "test_scalar_ops",
    "test_truediv",
    "test_jacobian",
    "test_direct",
    "test_core",
    "test_wrappers",
    "test_misc",
    "test_logic",
)

Record = tuple[str, str, Any, Any]  # (test, operator hint, f of x, x)
RECORDS: list[Record] = []
CURRENT = ["?"]
COLLECTING = [True]  # off once autograd's tests have run: the sweep's own calls of a wrapped grad record nothing


def _unary(fun: Any, argnum: Any, args: tuple, kwargs: dict) -> tuple[Any, Any]:
    nums = argnum if isinstance(argnum, (tuple, list)) else (argnum,)

    def f(x: Any) -> Any:
        a = list(args)
        if isinstance(argnum, (tuple, list)):
            for i, xi in zip(nums, x):
                a[i] = xi
        else:
            a[argnum] = x
        return fun(*a, **kwargs)

    x = tuple(args[i] for i in nums) if isinstance(argnum, (tuple, list)) else args[argnum]
    return f, x


def check_grads(fun: Any, argnum: Any = 0, modes: Any = None, order: int = 2) -> Any:
    def record(*args: Any, **kwargs: Any) -> None:
        if COLLECTING[0]:
            f, x = _unary(fun, argnum, args, kwargs)
            RECORDS.append((CURRENT[0], "check_grads", f, x))
            if order > 1 and "--first-order" not in sys.argv:
                _second_order(f, x, modes)

    return record


def _second_order(f: Any, x: Any, modes: Any) -> None:
    """What check_grads checks at order 2: the VJP (and JVP) of f as functions of (x, v), with autograd's
    own `make_vjp`/`make_jvp` inside them (so diface differentiates autograd differentiating f)."""
    from autograd.core import make_jvp, make_vjp, vspace

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = f(x)
            v_out, v_in = vspace(y).randn(), vspace(x).randn()
    except Exception:
        return
    modes = modes or ["fwd", "rev"]
    if "rev" in modes:
        RECORDS.append((CURRENT[0] + "[vjp]", "check_grads", lambda xv: make_vjp(f, xv[0])[0](xv[1]), (x, v_out)))
    if "fwd" in modes:
        RECORDS.append((CURRENT[0] + "[jvp]", "check_grads", lambda xv: make_jvp(f, xv[0])(xv[1])[1], (x, v_in)))


def combo_check(fun: Any, *cargs: Any, **ckwargs: Any) -> Any:
    import itertools

    def run(*args: Any, **kwargs: Any) -> None:
        kv = [[(k, v) for v in vs] for k, vs in kwargs.items()]
        for a in itertools.product(*args):
            for k in itertools.product(*kv):
                check_grads(fun, *cargs, **ckwargs)(*a, **dict(k))

    return run


def _wrap(name: str, original: Any) -> Any:
    def wrapper(fun: Any, argnum: Any = 0, *wa: Any, **wk: Any) -> Any:
        inner = original(fun, argnum, *wa, **wk)

        def call(*args: Any, **kwargs: Any) -> Any:
            if COLLECTING[0] and not wa and not wk:
                f, x = _unary(fun, argnum, args, kwargs)
                RECORDS.append((CURRENT[0], name, f, x))
            return inner(*args, **kwargs)

        return call

    return wrapper


def collect(folder: str) -> None:
    import autograd.test_util as tu

    tu.check_grads, tu.combo_check = check_grads, combo_check
    sys.path.insert(0, folder)
    for name in FILES:
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # a test file that needs what is not installed
            print(f"skip {name}: {type(e).__name__}: {e}")
            continue
        for g in ("grad", "jacobian", "hessian", "hessian_tensor_product"):
            if callable(getattr(mod, g, None)) and getattr(getattr(mod, g), "__module__", "").startswith("autograd"):
                setattr(mod, g, _wrap(g, getattr(mod, g)))
        for tname, t in sorted(vars(mod).items()):
            if not (tname.startswith("test_") and inspect.isfunction(t)):
                continue
            if inspect.signature(t).parameters:
                continue  # parametrised by pytest: not run here
            CURRENT[0] = f"{name}::{tname}"
            np.random.seed(42)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t()
            except (Exception, BaseException) as e:  # pytest's Failed is a BaseException
                if isinstance(e, KeyboardInterrupt):
                    raise
                pass  # autograd's own checks: not ours to judge
    COLLECTING[0] = False


# -- the checks ---------------------------------------------------------------------------------------------------
def _leaves(a: Any) -> list[np.ndarray]:
    if isinstance(a, dict):
        return [leaf for k in sorted(a) for leaf in _leaves(a[k])]
    if isinstance(a, (tuple, list)):
        return [leaf for b in a for leaf in _leaves(b)]
    return [np.asarray(a)]


def _like(rng: np.random.Generator, a: Any) -> Any:
    if isinstance(a, dict):
        return {k: _like(rng, v) for k, v in a.items()}
    if isinstance(a, (tuple, list)):
        return type(a)(_like(rng, b) for b in a)
    a_ = np.asarray(a)
    r = rng.standard_normal(a_.shape)
    if np.iscomplexobj(a_):
        r = r + 1j * rng.standard_normal(a_.shape)
    if a_.dtype.kind in "fc":
        r = r.astype(a_.dtype)
    return r if a_.shape or isinstance(a, np.ndarray) else (complex(r) if np.iscomplexobj(r) else float(r))


def _close(got: Any, want: Any, rtol: float, atol: float) -> bool:
    g, w = _leaves(got), _leaves(want)
    if len(g) != len(w):
        return False
    for p, q in zip(g, w):
        if p.shape != q.shape:
            return False
        if not np.allclose(p, q, rtol=rtol, atol=atol, equal_nan=True):
            return False
    return True


def _call(op: str, f: Any, backend: Any, x: Any, t: Any) -> Any:
    if op == "hvp":
        return di.hvp(f, backend, x, t)
    return getattr(di, op)(f, backend, x)


def _in_child(compute: Any) -> Any:
    """compute() in a forked child (a crash there, e.g. the tape's segmentation fault on
    `np.random.randn` inside f, costs the reference only), or None where it raised or crashed."""
    import os
    import pickle

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                data = pickle.dumps(compute())
        except BaseException:
            data = pickle.dumps(None)
        with os.fdopen(w, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    return pickle.loads(data) if data else None


def classify(op: str, f: Any, x: Any, t: Any, backend: Any, refs: dict) -> tuple[str, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _call(op, f, backend, x, t)
    except di.DifaceError as e:
        return "refused", f"{type(e).__name__}: {str(e)[:200]}"
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = next((fr for fr in reversed(tb) if "diface" in fr.filename), tb[-1])
        return "foreign", f"{type(e).__name__}: {str(e)[:160]} [{where.filename.split('/')[-1]}:{where.lineno}]"
    if "--no-reference" in sys.argv:
        return "value", ""
    for ref, rtol, atol in ((di.AutoTape(), 1e-7, 1e-9), (di.AutoFiniteDiff(), 1e-4, 1e-5)):
        key = (op, type(ref).__name__)
        if key not in refs:  # once per function and operator, for both of autograd's modes
            refs[key] = _in_child(lambda ref=ref: _call(op, f, ref, x, t))
        want = refs[key]
        if want is None:
            continue
        return ("right", "") if _close(got, want, rtol, atol) else ("wrong", f"vs {ref!r}")
    return "unchecked", "no reference"


def main() -> None:
    folder = sys.argv[1]
    verbose = "-v" in sys.argv
    collect(folder)
    counts: collections.Counter[str] = collections.Counter()
    details: list[str] = []
    rng = np.random.default_rng(0)
    functions = 0
    per_test = int(next((a.split("=")[1] for a in sys.argv if a.startswith("--per-test=")), "0"))
    records = RECORDS
    if per_test:  # the first, last and evenly spaced ones of each test's records (combo_check makes many)
        by_test: dict[str, list[Record]] = {}
        for r in RECORDS:
            by_test.setdefault(r[0], []).append(r)
        records = []
        for rs in by_test.values():
            k = min(per_test, len(rs))
            records += [rs[round(i * (len(rs) - 1) / max(k - 1, 1))] for i in range(k)]
    for test, _, f, x in records:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                y = f(x)
        except Exception:
            continue
        functions += 1
        ys = _leaves(y)
        scalar_real = not isinstance(y, (tuple, list, dict)) and np.ndim(y) == 0 and not np.iscomplexobj(y)
        ops = ("gradient", "hessian", "hvp") if scalar_real else ("jacobian",)
        del ys
        t = _like(rng, x)
        refs: dict = {}
        for mode in ("reverse", "forward"):
            for op in ops:
                kind, why = classify(op, f, x, t, di.AutoAutograd(mode), refs)
                print(f"{kind:9} {test} {op} {mode} {why}", file=sys.stderr, flush=True)
                counts[kind] += 1
                counts[f"{op}/{kind}"] += 1
                if kind in ("foreign", "wrong", "unchecked") or (verbose and kind == "refused" and "-vv" in sys.argv):
                    details.append(f"{kind:8} {test} {op} {mode}: {why}")
    kinds = ("right", "value", "refused", "wrong", "foreign", "unchecked")
    print(f"functions tried: {functions} (recorded {len(RECORDS)}); calls: {sum(counts[k] for k in kinds)}")
    for k in kinds:
        print(f"  {k:9} {counts[k]}")
    for op in ("gradient", "jacobian", "hessian", "hvp"):
        print(f"  {op:9}", {k: counts[f"{op}/{k}"] for k in kinds if counts[f"{op}/{k}"]})
    if verbose:
        for d in details:
            print(d)


if __name__ == "__main__":
    main()
