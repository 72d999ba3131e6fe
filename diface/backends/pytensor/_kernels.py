"""AutoPyTensor's kernels: each operator one compiled `pytensor.function` of (x, context arrays[, tangents]).

A kernel traces f once (`_trace.trace`), builds the operator's graph on the trace (`pytensor.grad`,
`Lop`, `Rop`, batched over a stack of tangents with `vectorize_graph`: PyTensor's vmap), and compiles a
plain program (the result alone) and a full one (value, lower-order result, result), through the cache
of `_compile`. Context values that are not arrays are part of the key: a call with another such value
finds (or compiles) the program for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._kernel import Kernel, Result
from ..._problem import Problem
from ._compile import Program, compile_cached
from ._trace import Trace, split_contexts, symbolic_like, trace

__all__ = ["Build", "graph_kernel", "problem_trace", "unwrapped"]

#: build(trace, tangents) -> {"value": y, "lower": ..., "result": ...}: the operator's symbolic outputs,
#: `tangents` the symbolic stack of tangents (B, *shape) or None
Build = Callable[[Trace, Any], dict]


def unwrapped(f: Callable) -> Callable:
    """The user's function behind the evaluator the core calls (`AutoPyTensor.evaluator`)."""
    return getattr(f, "__wrapped__", f)


def problem_trace(problem: Problem, cv: tuple | None = None, key: tuple | None = None) -> Trace:
    """f traced at the problem's spec (contexts `cv`, with key `key`), kept in `problem.memo`."""
    if cv is None:
        cv = problem.context_values
        key = split_contexts(cv).key
    traces = problem.memo.setdefault("pytensor_traces", {})
    tr = traces.get(key)
    if tr is None:
        tr = traces[key] = trace(unwrapped(problem.f), problem.x, cv)
    return tr


def result_dtype(problem: Problem) -> np.dtype:
    return np.result_type(problem.x_dtype, problem.y_spec[1])


def graph_kernel(
    problem: Problem, name: str, build: Build, tangents: tuple | None = None, *, tangent_like: Any = None
) -> Kernel:
    """The kernel of one operator: `build`'s graph compiled (plain and full programs) for the problem's
    spec; `tangents` (B of them, shaped like `tangent_like`) are stacked into one input."""
    dtype = result_dtype(problem).name
    x = problem.x
    x_spec = (np.shape(x), np.result_type(x).str)
    batch = None if tangents is None else len(tangents)
    t_spec = None
    if tangents is not None:
        like = np.asarray(tangent_like if tangent_like is not None else tangents[0])
        t_spec = ((batch, *like.shape), like.dtype.name)
    f = unwrapped(problem.f)
    single_use = problem.single_use

    def programs(cv: tuple, key: tuple) -> tuple[Any, Any]:
        def make(full: bool) -> Callable[[], tuple[list, list]]:
            def build_now() -> tuple[list, list]:
                tr = problem_trace(problem, cv, key)
                T = T_in = None
                if t_spec is not None:
                    import pytensor.tensor as pt

                    # the batch axis is left unknown: a static 1 would make it broadcastable, which some of
                    # PyTensor's rewrites of vectorized graphs mishandle
                    if batch == 1:  # one tangent: an input of its own shape, no stacking at calls
                        T_in = pt.tensor(name="tangent", dtype=t_spec[1], shape=t_spec[0][1:])
                        T = T_in[None]
                    else:
                        T = T_in = pt.tensor(name="tangents", dtype=t_spec[1], shape=(None, *t_spec[0][1:]))
                outs = build_checked(build, tr, T)
                result = outs["result"].astype(dtype)
                inputs = [tr.x, *tr.contexts] + ([T_in] if T_in is not None else [])
                if not full:
                    return inputs, [result]
                lower = outs.get("lower")
                full_outs = [outs["value"]] + ([lower.astype(dtype)] if lower is not None else []) + [result]
                return inputs, full_outs

            return build_now

        spec = (name, x_spec, key, t_spec)
        if single_use:  # an unprepared call runs one of the two: compiled when first called
            return _Lazy(f, (*spec, False), make(False)), _Lazy(f, (*spec, True), make(True))
        return (
            compile_cached(f, (*spec, False), single_use, make(False)),
            compile_cached(f, (*spec, True), single_use, make(True)),
        )

    cv0 = problem.context_values
    split0 = split_contexts(cv0)
    plain0, full0 = programs(cv0, split0.key)
    has_lower = name.split(":")[0] in ("hvp", "hessian", "second_derivative", "laplacian")
    static = any(k[0] != "a" for k in _leaves(split0.key))
    kept: dict = {split0.key: (plain0, full0)}

    def pick(cv: tuple) -> tuple[list, Any, Any]:
        if not cv:
            return [], plain0, full0
        split = split_contexts(cv)
        if not static or split.key == split0.key:
            return split.arrays, plain0, full0
        pair = kept.get(split.key)
        if pair is None:
            pair = kept[split.key] = programs(cv, split.key)
        return split.arrays, pair[0], pair[1]

    def run(x: Any, tangents: Any, cv: tuple, y: Any, full: bool) -> Result:
        arrays, plain, full_program = pick(cv)
        args = [x, *arrays]
        if batch == 1:
            args.append(tangents[0])
        elif batch is not None:
            args.append(np.stack([np.asarray(t) for t in tangents]))
        if not full:
            r = plain(*args)[0]
            return Result(result=tuple(r) if batch is not None else r)
        outs = full_program(*args)
        r = outs[-1]
        return Result(outs[0], outs[1] if has_lower else None, tuple(r) if batch is not None else r)

    direct_tangent = None
    if batch == 1 and not cv0 and isinstance(plain0, Program) and tangents is not None:
        run, direct_tangent = _one_tangent(
            plain0, run, x, np.asarray(tangent_like if tangent_like is not None else tangents[0])
        )
    direct = None
    if batch is None:
        if not cv0:  # the hot path: one compiled call
            direct = _direct_call(plain0, x) if isinstance(plain0, Program) else (lambda x, cv: plain0(x)[0])
        else:
            direct = lambda x, cv: _direct(pick, x, cv)
    return Kernel(run, result_dtype=np.dtype(dtype), accepts_numpy=True, direct=direct, direct_tangent=direct_tangent)


def _one_tangent(program: Program, general: Callable, x_like: Any, t_like: Any) -> tuple[Callable, Callable]:
    """The plain call with one tangent and no contexts (an optimizer's Hessian-vector product): the
    compiled function under its lock, nothing between (`_trusting`); the full variant as `general`.
    Returns the kernel's `run` and its `direct_tangent` (the one tangent's result alone)."""
    call = _trusting(program, (x_like, t_like))

    def run(x: Any, tangents: Any, cv: tuple, y: Any, full: bool) -> Result:
        if full:
            return general(x, tangents, cv, y, full)
        r = call(x, tangents[0])[0]
        return Result(result=(r[0],))

    def one(x: Any, t: Any, cv: tuple) -> Any:
        return call(x, t)[0][0]

    return run, one


def _direct_call(program: Any, x_like: Any) -> Callable[[Any, tuple], Any]:
    """`program`'s result at x, with nothing around it (`_trusting`)."""
    call = _trusting(program, (x_like,))
    return lambda x, cv: call(x)[0]


def _trusting(program: Program, like: tuple) -> Callable:
    """`program` called under its lock, without PyTensor's conversion of its inputs (`trust_input`: ~3 us
    of a 4-6 us call, measured) where every argument is a NumPy array of the compiled dtype and shape
    (any strides: the compiled code reads them); anything else goes through the conversion."""
    trusted = program.fn.copy(share_memory=False)
    trusted.trust_input = True
    specs = tuple((np.dtype(a.dtype), tuple(a.shape)) for a in like)
    fn, lock, trusted_lock = program.fn, program.lock, threading.Lock()

    def call(*args: Any) -> Any:
        for a, (dtype, shape) in zip(args, specs):
            if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape:
                with lock:
                    return fn(*args)
        with trusted_lock:
            return trusted(*args)

    return call


def _direct(pick: Callable, x: Any, cv: tuple) -> Any:
    arrays, plain, _ = pick(cv)
    return plain(x, *arrays)[0]


def build_checked(build: Build, tr: Trace, T: Any) -> dict:
    """`build(tr, T)`; PyTensor's failure to differentiate a graph with complex values becomes a clear
    `NotSupportedError`."""
    try:
        return build(tr, T)
    except NotSupportedError:
        raise
    except Exception as e:
        if _has_complex(tr.y):
            raise NotSupportedError(
                "AutoPyTensor: f computes with complex values, which PyTensor does not differentiate "
                f"({type(e).__name__}: {e}); use AutoJAX or AutoTorch for such functions"
            ) from e
        raise


def _has_complex(y: Any) -> bool:
    from pytensor.graph.traversal import ancestors

    return any(str(getattr(v.type, "dtype", "")).startswith("complex") for v in ancestors([y]))


class _Lazy:
    """A program of an unprepared call, compiled on first use (such a call wants one of its two)."""

    def __init__(self, f: Any, key: tuple, build: Callable) -> None:
        self.f, self.key, self.build = f, key, build
        self.program: Any = None

    def __call__(self, *args: Any) -> Any:
        if self.program is None:
            self.program = compile_cached(self.f, self.key, True, self.build)
        return self.program(*args)


def _leaves(key: Any) -> list:
    """The leaf keys of a context key (see `_trace.split_contexts`)."""
    out: list = []

    def walk(k: Any) -> None:
        if k[0] in ("a", "v", "id"):
            out.append(k)
        elif k[0] == "d":
            for _, u in k[1]:
                walk(u)
        elif k[0] == "n":
            for u in k[2]:
                walk(u)
        else:
            for u in k[1]:
                walk(u)

    for k in key:
        walk(k)
    return out


# -- the operators' graphs ------------------------------------------------------------------------------
def _flat_basis(n: int, dtype: str) -> Any:
    import pytensor.tensor as pt

    return pt.constant(np.eye(n, dtype=dtype))


def pushforward_graph(tr: Trace, T: Any) -> Any:
    """J t for each t in the stack T, shaped (B, *y_shape): `Rop` vectorized over T."""
    from pytensor.gradient import Rop as _Rop

    Rop_: Any = _Rop
    from pytensor.graph.replace import vectorize_graph

    if T.type.shape[0] == 1:  # one (constant) tangent: no batch axis to vectorize over
        return Rop_(tr.y, tr.x, T[0], disconnected_outputs="ignore", return_disconnected="zero")[None]
    t = symbolic_like(np.zeros(T.type.shape[1:], T.type.dtype), "t")
    jv = Rop_(tr.y, tr.x, t, disconnected_outputs="ignore", return_disconnected="zero")
    return vectorize_graph(jv, {t: T})


def pullback_graph(tr: Trace, U: Any, y: Any = None) -> Any:
    """uᵀ J for each u in the stack U, shaped (B, *x_shape): `Lop` vectorized over U (of `y`, default f's
    output)."""
    from pytensor.gradient import Lop as _Lop

    Lop_: Any = _Lop
    from pytensor.graph.replace import vectorize_graph

    y = tr.y if y is None else y
    if U.type.shape[0] == 1:  # one (constant) cotangent: no batch axis to vectorize over
        return Lop_(y, tr.x, U[0], disconnected_inputs="ignore")[None]
    u = symbolic_like(np.zeros(U.type.shape[1:], U.type.dtype), "u")
    vj = Lop_(y, tr.x, u, disconnected_inputs="ignore")
    return vectorize_graph(vj, {u: U})


def jacobian_graph(tr: Trace, mode: str, y: Any = None) -> Any:
    """J of `y` (default f's output) shaped y_shape + x_shape: pullbacks of the output basis (reverse)
    or pushforwards of the input basis (forward), one vectorized graph."""
    import pytensor.tensor as pt
    from pytensor.gradient import grad

    y = tr.y if y is None else y
    x_shape, y_shape = tr.x.type.shape, y.type.shape
    n, m = int(np.prod(x_shape)), int(np.prod(y_shape))
    dtype = np.result_type(tr.x.type.dtype, y.type.dtype).name
    if y_shape == () and mode == "reverse":
        return grad(y, tr.x, disconnected_inputs="ignore")
    if mode == "reverse":
        U = pt.reshape(_flat_basis(m, y.type.dtype), (m, *y_shape))
        rows = pullback_graph(Trace(tr.x, tr.contexts, y), U)
        return pt.reshape(rows, (*y_shape, *x_shape))
    T = pt.reshape(_flat_basis(n, tr.x.type.dtype), (n, *x_shape))
    cols = pushforward_graph(Trace(tr.x, tr.contexts, y), T)  # (n, *y_shape)
    cols = pt.reshape(cols, (n, m)).T
    return pt.reshape(cols, (*y_shape, *x_shape)).astype(dtype)


def gradient_of(tr: Trace) -> Any:
    from pytensor.gradient import grad

    return grad(tr.y, tr.x, disconnected_inputs="ignore")
