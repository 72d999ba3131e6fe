"""Device placement, checked without a GPU (issue 32): a prepared call on arrays of a device runs there
and returns arrays there, with no copy to the host and no synchronisation.

- JAX: arrays committed to the second CPU device (tests/conftest.py asks for two with
  `jax_num_cpu_devices`) stay there through every prepared operator, called twice under
  `jax.transfer_guard("disallow")`: any implicit host-to-device or device-to-device transfer raises.
  On the CPU platform the guard lets device-to-host reads through (the memory is the host's), so
  `jax_host_reads` records those.
- torch: prepared calls on tensors pass neither through host objects (`.numpy()`, `.item()`,
  `.tolist()`, `.cpu()`, Python numbers from a tensor, tensors made from host data) nor through
  `aten._local_scalar_dense` or copies to another device, as recorded by a `TorchFunctionMode` and a
  `TorchDispatchMode` around the calls (after preparation, which may do what it likes). On the CPU no
  copy to another device can happen; the reads and host data are what a GPU would pay for.

The only reads allowed are the value checks the contract needs (`CONTRACT_READS`); what should not
happen but does is a strict expected failure naming the place (`FINDINGS`). Where a GPU is at hand,
both halves run on it instead (JAX's first non-CPU device, torch's "cuda"), unchanged.

Every operator is prepared at one point and called at another (same-point preparations at their own
point), twice, and the values are checked against analytic results. The same table of cases serves
both engines: `Env` holds the array namespace, how to put a NumPy array where the case wants it, and
the backends."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import diface as di

HAS_JAX = importlib.util.find_spec("jax") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None

X0 = np.array([0.3, -0.2, 0.5])  # the preparation's point
X1 = np.array([0.9, 1.3, -0.7])  # the calls'
V = np.array([0.7, -1.1, 0.4])
W = np.array([-0.5, 0.8, 1.2])
C0, C1 = np.array([1.5, -0.5, 2.0]), np.array([0.5, 3.0, -1.0])  # a Constant's values
T0, T1 = 0.4, -1.1  # scalar points (derivative)


@dataclasses.dataclass(frozen=True)
class Env:
    """What a case needs of an engine: its namespace `xp` (jax.numpy or torch), `put` (a NumPy array or
    number onto the device under test), the dense and sparse backends."""

    xp: Any
    put: Callable[[Any], Any]
    backend: di.Backend
    sparse: di.Backend
    device: Any = None


def jacobian_of_g(x: np.ndarray) -> np.ndarray:
    return np.diag(2 * x) + np.ones((3, 3))  # g(x) = x² + Σx


Calls = list[tuple[str, tuple, Any]]


def cases(e: Env) -> dict[str, Callable[[], tuple[Any, Calls]]]:
    """name -> a function returning a preparation and the calls to make of it: (method name, arguments,
    the expected result in NumPy)."""
    xp, put, b = e.xp, e.put, e.backend

    def f(x):
        return xp.sum(x**3)

    def g(x):
        return x**2 + xp.sum(x)

    def h(t):
        return xp.stack([xp.sin(t), t**3])

    def cube(x):
        return x**3

    def fc(x, c):
        return xp.sum(c * x**2)

    def ft(t):
        return xp.sum(t["a"] ** 2 * t["b"])

    def gt(t):
        return t["a"] * t["b"]

    c = put(C0)

    def quadratic(x):
        return xp.sum(c * x**2)

    x0, x1, v, w, t0, t1 = put(X0), put(X1), put(V), put(W), put(np.float64(T0)), put(np.float64(T1))
    J1, J0 = jacobian_of_g(X1), jacobian_of_g(X0)
    tree0 = {"a": put(X0), "b": put(C0)}
    tree1 = {"a": put(X1), "b": put(C1)}
    tangent = {"a": put(V), "b": put(W)}
    a, bb = X1, C1
    lap_f, grad_f = 6 * X1.sum(), 3 * X1**2
    value_g = X1**2 + X1.sum()
    return {
        "derivative": lambda: (
            di.prepare_derivative(h, b, t0),
            [
                ("derivative", (t1,), [np.cos(T1), 3 * T1**2]),
                ("value_and_derivative", (t1,), ([np.sin(T1), T1**3], [np.cos(T1), 3 * T1**2])),
            ],
        ),
        "second_derivative": lambda: (
            di.prepare_second_derivative(h, b, t0),
            [
                ("second_derivative", (t1,), [-np.sin(T1), 6 * T1]),
                (
                    "value_derivative_and_second_derivative",
                    (t1,),
                    ([np.sin(T1), T1**3], [np.cos(T1), 3 * T1**2], [-np.sin(T1), 6 * T1]),
                ),
            ],
        ),
        "gradient": lambda: (
            di.prepare_gradient(f, b, x0),
            [("gradient", (x1,), grad_f), ("value_and_gradient", (x1,), (np.sum(X1**3), grad_f))],
        ),
        "jacobian": lambda: (
            di.prepare_jacobian(g, b, x0),
            [("jacobian", (x1,), J1), ("value_and_jacobian", (x1,), (value_g, J1))],
        ),
        "hessian": lambda: (
            di.prepare_hessian(f, b, x0),
            [
                ("hessian", (x1,), np.diag(6 * X1)),
                ("value_gradient_and_hessian", (x1,), (np.sum(X1**3), grad_f, np.diag(6 * X1))),
            ],
        ),
        "hvp": lambda: (
            di.prepare_hvp(f, b, x0, v),
            [("hvp", (x1, v), 6 * X1 * V), ("gradient_and_hvp", (x1, v), (grad_f, 6 * X1 * V))],
        ),
        "hvp_same_point": lambda: (di.prepare_hvp_same_point(f, b, x0, v), [("hvp", (x0, w), 6 * X0 * W)]),
        "pushforward": lambda: (
            di.prepare_pushforward(g, b, x0, v),
            [("pushforward", (x1, v), J1 @ V), ("value_and_pushforward", (x1, v), (value_g, J1 @ V))],
        ),
        "pushforward_batch": lambda: (
            di.prepare_pushforward(g, b, x0, (v, w)),
            [("pushforward", (x1, (v, w)), (J1 @ V, J1 @ W))],
        ),
        "pushforward_same_point": lambda: (
            di.prepare_pushforward_same_point(g, b, x0, v),
            [("pushforward", (x0, w), J0 @ W)],
        ),
        "pullback": lambda: (
            di.prepare_pullback(g, b, x0, w),
            [("pullback", (x1, w), J1.T @ W), ("value_and_pullback", (x1, w), (value_g, J1.T @ W))],
        ),
        "pullback_same_point": lambda: (
            di.prepare_pullback_same_point(g, b, x0, w),
            [("pullback", (x0, v), J0.T @ V)],
        ),
        "inverse_pushforward": lambda: (
            di.prepare_inverse_pushforward(g, b, x0, w),
            [
                ("inverse_pushforward", (x1, w), np.linalg.solve(J1, W)),
                ("value_and_inverse_pushforward", (x1, w), (value_g, np.linalg.solve(J1, W))),
            ],
        ),
        "inverse_pushforward_same_point": lambda: (
            di.prepare_inverse_pushforward_same_point(g, b, x0, w),
            [("inverse_pushforward", (x0, v), np.linalg.solve(J0, V))],
        ),
        "inverse_pushforward_krylov": lambda: (
            di.prepare_inverse_pushforward(g, b, x0, w, method="krylov"),
            [("inverse_pushforward", (x1, w), np.linalg.solve(J1, W))],
        ),
        "inverse_pullback": lambda: (
            di.prepare_inverse_pullback(g, b, x0, v),
            [("value_and_inverse_pullback", (x1, v), (value_g, np.linalg.solve(J1.T, V)))],
        ),
        "inverse_pullback_same_point": lambda: (
            di.prepare_inverse_pullback_same_point(g, b, x0, v),
            [("inverse_pullback", (x0, w), np.linalg.solve(J0.T, W))],
        ),
        "taylor": lambda: (
            di.prepare_taylor(xp.sin, b, x0, v, order=3),
            [("taylor", (x1, v), (np.sin(X1), (np.cos(X1) * V, -np.sin(X1) * V**2, -np.cos(X1) * V**3)))],
        ),
        "laplacian": lambda: (
            di.prepare_laplacian(f, b, x0),
            [("laplacian", (x1,), lap_f), ("value_gradient_and_laplacian", (x1,), (np.sum(X1**3), grad_f, lap_f))],
        ),
        # a Laplacian that does not depend on x: the compiled program must still run on x's device
        "laplacian_vector": lambda: (di.prepare_laplacian(g, b, x0), [("laplacian", (x1,), np.full(3, 2.0))]),
        # f's Hessian is diagonal, so every ±1 direction gives the trace exactly
        "laplacian_hutchinson": lambda: (
            di.prepare_laplacian(f, b, x0, method="hutchinson", samples=2, seed=0),
            [("laplacian", (x1,), lap_f)],
        ),
        "constant_gradient": lambda: (
            di.prepare_gradient(fc, b, x0, di.Constant(put(C0))),
            [("gradient", (x1, di.Constant(put(C1))), 2 * C1 * X1)],
        ),
        "constant_hvp": lambda: (
            di.prepare_hvp(fc, b, x0, v, di.Constant(put(C0))),
            [("hvp", (x1, v, di.Constant(put(C1))), 2 * C1 * V)],
        ),
        "tree_gradient": lambda: (
            di.prepare_gradient(ft, b, tree0),
            [("gradient", (tree1,), {"a": 2 * a * bb, "b": a**2})],
        ),
        "tree_hvp": lambda: (
            di.prepare_hvp(ft, b, tree0, tangent),
            [("hvp", (tree1, tangent), {"a": 2 * bb * V + 2 * a * W, "b": 2 * a * V})],
        ),
        "tree_pushforward": lambda: (
            di.prepare_pushforward(gt, b, tree0, tangent),
            [("pushforward", (tree1, tangent), V * bb + a * W)],
        ),
        "tree_pullback": lambda: (
            di.prepare_pullback(gt, b, tree0, w),
            [("pullback", (tree1, w), {"a": W * bb, "b": W * a})],
        ),
        # a constant Hessian, too
        "sparse_jacobian": lambda: (di.prepare_jacobian(cube, e.sparse, x0), [("jacobian", (x1,), np.diag(3 * X1**2))]),
        "sparse_hessian": lambda: (di.prepare_hessian(quadratic, e.sparse, x0), [("hessian", (x1,), np.diag(2 * C0))]),
    }


CASE_NAMES = list(cases(Env(np, np.asarray, di.AutoTape(), di.AutoTape())))


def assert_close(result: Any, expected: Any, to_numpy: Callable[[Any], np.ndarray], where: str = "") -> None:
    """`result` (a native array, a tuple or a dict of them) equals `expected` (NumPy, same structure)."""
    if isinstance(expected, dict):
        assert isinstance(result, dict) and result.keys() == expected.keys(), where
        for k in expected:
            assert_close(result[k], expected[k], to_numpy, f"{where}[{k!r}]")
    elif isinstance(expected, tuple):
        assert isinstance(result, tuple) and len(result) == len(expected), where
        for i, (r, ex) in enumerate(zip(result, expected, strict=True)):
            assert_close(r, ex, to_numpy, f"{where}[{i}]")
    else:
        np.testing.assert_allclose(to_numpy(result), np.asarray(expected, float), rtol=1e-9, atol=1e-12, err_msg=where)


# -- what a call may read on the host ----------------------------------------------------------------


@dataclasses.dataclass
class HostEvent:
    """One host round trip seen during a prepared call: `read` (a value brought to the host, which
    synchronises with the device) or not (host data into a tensor, a copy across devices)."""

    what: str
    read: bool
    stack: str

    def __str__(self) -> str:
        return f"{self.what}\n{self.stack}"


def _record(events: list[HostEvent], what: str, read: bool) -> None:
    events.append(HostEvent(what, read, "".join(traceback.format_stack(limit=16)[:-3])))


def check_events(events: list[HostEvent], name: str, method: str, calls: int) -> None:
    """No round trip, except the value reads a case's contract needs (`CONTRACT_READS`)."""
    allowed = CONTRACT_READS.get(name, (0, ""))[0] * calls
    reads = [e for e in events if e.read]
    others = [e for e in events if not e.read]
    assert not others, f"{method}: {len(others)} host round trips, the first:\n{others[0]}"
    assert len(reads) <= allowed, (
        f"{method}: {len(reads)} host reads in {calls} calls (allowed {allowed}), the first:\n{reads[0]}"
    )


# Value checks the contract makes: an error raised from a value (`SingularError`, `ConvergenceError`)
# needs that value on the host. Per call, at most what the engine's direct idiom reads too
# (`torch.linalg.solve` reads its LU's status once to raise on a singular matrix).
CONTRACT_READS: dict[str, tuple[int, str]] = {
    name: (1, "method='dense' checks the solution is finite (SingularError), as torch.linalg.solve checks its LU")
    for name in ("inverse_pushforward_same_point", "inverse_pullback_same_point")
}

# Findings: what the prepared call does today that it should not (strict: a fix makes them pass).
FINDINGS: dict[str, str] = {
    "inverse_pushforward": (
        "method='dense' at a new point reads twice per call (_derive/inverse_dense.py: the LU's pivots, "
        "then the solution's finiteness); torch.linalg.solve reads once"
    ),
    "inverse_pullback": "as inverse_pushforward: two reads per call where torch.linalg.solve makes one",
    "inverse_pushforward_krylov": (
        "method='krylov' reads norms on the host (_derive/inverse_krylov.py: |b| and the final residual "
        "for ConvergenceError; _gmres.py: every iteration's residual on torch)"
    ),
    "laplacian_hutchinson": (
        "method='hutchinson' draws each call's directions with a NumPy generator on the host and copies "
        "them to x's device (_derive/laplacian.py: _hutchinson); they could be drawn on the device"
    ),
}


def marked(names: list[str], findings: dict[str, str]) -> list:
    return [
        pytest.param(n, marks=pytest.mark.xfail(reason=findings[n], strict=True)) if n in findings else n for n in names
    ]


# -- JAX: arrays on the second CPU device -------------------------------------------------------------


@pytest.fixture(scope="module")
def jax_env() -> Env:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    devices = jax.devices()
    accelerators = [d for d in devices if d.platform != "cpu"]
    assert accelerators or len(devices) >= 2, "tests/conftest.py sets jax_num_cpu_devices to 2 before JAX starts"
    device = accelerators[0] if accelerators else devices[1]  # not the default device, on the CPU
    put = lambda a: jax.device_put(np.asarray(a), device)
    return Env(jnp, put, di.AutoJAX(), di.AutoSparse(di.AutoJAX()), device)


@contextlib.contextmanager
def jax_host_reads() -> Iterator[list[HostEvent]]:
    """Record each read of a JAX array's value on the host. On the CPU platform `jax.transfer_guard`
    lets these through (the memory is the host's), so they are caught here: Python numbers, `.item()`
    and `.tolist()` go through `ArrayImpl._value`; NumPy reads a CPU array through the buffer protocol,
    which no Python hook sees, so `np.asarray`, `np.array` and `jax.device_get` of a JAX array are
    wrapped (diface's code and JAX's look them up on the module at each call)."""
    import jax
    from jax._src.array import ArrayImpl

    events: list[HostEvent] = []
    value, dlpack = ArrayImpl._value, ArrayImpl.__dlpack__
    asarray, array, device_get = np.asarray, np.array, jax.device_get

    def read_value(self: Any) -> Any:
        _record(events, "jax.Array._value (device to host)", True)
        return value.fget(self)

    def read_dlpack(self: Any, *args: Any, **kwargs: Any) -> Any:
        _record(events, "jax.Array.__dlpack__", True)
        return dlpack(self, *args, **kwargs)

    def wrap(fn: Callable, name: str) -> Callable:
        def reading(a: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(a, jax.Array) or (name == "jax.device_get" and jax.tree_util.tree_leaves(a)):
                _record(events, f"{name} of a jax.Array (device to host)", True)
            return fn(a, *args, **kwargs)

        return reading

    ArrayImpl._value, ArrayImpl.__dlpack__ = property(read_value), read_dlpack
    np.asarray, np.array, jax.device_get = (
        wrap(asarray, "np.asarray"),
        wrap(array, "np.array"),
        wrap(device_get, "jax.device_get"),
    )
    try:
        yield events
    finally:
        ArrayImpl._value, ArrayImpl.__dlpack__ = value, dlpack
        np.asarray, np.array, jax.device_get = asarray, array, device_get


def reads_allowed(name: str) -> contextlib.AbstractContextManager:
    """Where the contract reads a value (`CONTRACT_READS`, counted by `jax_host_reads`), the guard lets
    that device-to-host copy through (`np.asarray` of an array on a GPU is an implicit transfer)."""
    import jax

    return jax.transfer_guard_device_to_host("allow") if name in CONTRACT_READS else contextlib.nullcontext()


def jax_dense(a: Any) -> np.ndarray:
    return np.asarray(a.todense() if hasattr(a, "todense") else a)


@pytest.mark.skipif(not HAS_JAX, reason="jax is not installed")
@pytest.mark.parametrize("name", marked(CASE_NAMES, FINDINGS))
def test_jax_second_device(jax_env: Env, name: str) -> None:
    """Every result on the second device, no implicit transfer, no read on the host."""
    import jax

    device = jax_env.device
    prep, calls = cases(jax_env)[name]()
    for method, args, expected in calls:
        call = getattr(prep, method)
        with jax.transfer_guard("disallow"), reads_allowed(name), jax_host_reads() as events:
            results = [call(*args), call(*args)]
        check_events(events, name, method, len(results))
        for result in results:
            leaves = jax.tree_util.tree_leaves(result)
            assert leaves
            for leaf in leaves:
                assert isinstance(leaf, jax.Array), (method, type(leaf))
                assert leaf.devices() == {device}, (method, leaf.devices())
            assert_close(result, expected, jax_dense, method)


# -- torch: no host objects, no synchronisation -------------------------------------------------------


@contextlib.contextmanager
def torch_host_round_trips() -> Iterator[list[HostEvent]]:
    """Record, with the Python stack, each host round trip of torch tensors: a `TorchFunctionMode` sees
    the methods that bring a value to the host (`.numpy()`, `.item()`, `.tolist()`, `.cpu()`, Python
    numbers from a tensor) and tensors made from host data (`torch.tensor`, `as_tensor`, `asarray` of a
    non-tensor; `torch.from_numpy`, which no mode sees, is wrapped); a `TorchDispatchMode` sees
    `aten._local_scalar_dense` (outside those methods: a read made in torch's own Python code) and
    copies to another device. On the CPU a device copy cannot happen; the rest are what a GPU would
    pay for, seen here on the CPU."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    events: list[HostEvent] = []
    reads = {
        torch.Tensor.numpy,
        torch.Tensor.item,
        torch.Tensor.tolist,
        torch.Tensor.cpu,
        torch.Tensor.__array__,
        torch.Tensor.__float__,
        torch.Tensor.__int__,
        torch.Tensor.__bool__,
        torch.Tensor.__index__,
        torch.Tensor.__complex__,
    }
    from_host = {torch.tensor, torch.as_tensor, torch.asarray}
    inside_read = [0]

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in reads:
                _record(events, f"Tensor.{func.__name__}", True)
                inside_read[0] += 1
                try:
                    return func(*args, **(kwargs or {}))
                finally:
                    inside_read[0] -= 1
            if func in from_host and args and not isinstance(args[0], torch.Tensor):
                _record(events, f"torch.{func.__name__} of a {type(args[0]).__name__} (host data)", False)
            return func(*args, **(kwargs or {}))

    aten = torch.ops.aten

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is aten._local_scalar_dense.default and not inside_read[0]:
                _record(events, "aten._local_scalar_dense", True)
            elif func is aten._to_copy.default and kwargs.get("device", args[0].device) != args[0].device:
                _record(events, f"aten._to_copy {args[0].device} -> {kwargs['device']}", False)
            elif func is aten.copy_.default and args[0].device != args[1].device:
                _record(events, f"aten.copy_ {args[1].device} -> {args[0].device}", False)
            return func(*args, **kwargs)

    from_numpy = torch.from_numpy

    def wrapped_from_numpy(a: np.ndarray) -> Any:
        _record(events, "torch.from_numpy (host data)", False)
        return from_numpy(a)

    torch.from_numpy = wrapped_from_numpy
    try:
        with Functions(), Dispatch():
            yield events
    finally:
        torch.from_numpy = from_numpy


@pytest.fixture(scope="module")
def torch_env() -> Env:
    torch = pytest.importorskip("torch")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    put = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64), device=device)
    return Env(torch, put, di.AutoTorch(), di.AutoSparse(di.AutoTorch()), device)


def torch_dense(a: Any) -> np.ndarray:
    import torch

    if a.layout != torch.strided:
        a = a.to_dense()
    return a.detach().cpu().numpy()


def torch_leaves(result: Any) -> list:
    if isinstance(result, dict):
        return [leaf for v in result.values() for leaf in torch_leaves(v)]
    if isinstance(result, tuple | list):
        return [leaf for v in result for leaf in torch_leaves(v)]
    return [result]


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
@pytest.mark.parametrize("name", marked(CASE_NAMES, FINDINGS))
def test_torch_no_host_round_trip(torch_env: Env, name: str) -> None:
    """Every result a tensor on x's device, no host round trip."""
    import torch

    prep, calls = cases(torch_env)[name]()
    for method, args, expected in calls:
        call = getattr(prep, method)
        with torch_host_round_trips() as events:
            results = [call(*args), call(*args)]
        check_events(events, name, method, len(results))
        for result in results:
            for leaf in torch_leaves(result):
                assert isinstance(leaf, torch.Tensor) and leaf.device == torch_env.device, (method, type(leaf))
            assert_close(result, expected, torch_dense, method)
