"""`di.scan` and its schedules: the binomial (Revolve) and sqrt schedules simulated (every step reversed
once, in order; never more snapshots than allowed; the binomial's recomputation equal to Griewank and
Walther's bound, itself checked against the optimum by dynamic programming)."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pytest

import diface as di
from diface import ArgumentError, NotSupportedError, ShapeError
from diface._memory import schedule as sch


class Params(NamedTuple):
    w: np.ndarray


def simulate(schedule: list[sch.Action], n: int) -> tuple[int, int]:
    """Run `schedule` on indices: (peak snapshots alive, most advances of one step); asserts it is legal."""
    current: int | None = 0
    snaps: set[int] = set()
    reversed_: list[int] = []
    peak = 0
    advances = [0] * max(n, 1)
    for a in schedule:
        if a.kind == "save":
            assert current == a.step and a.step not in snaps
            snaps.add(a.step)
            peak = max(peak, len(snaps))
        elif a.kind == "restore":
            assert a.step in snaps
            current = a.step
        elif a.kind == "free":
            snaps.remove(a.step)
        elif a.kind == "advance":
            assert current is not None and a.step > current
            for j in range(current, a.step):
                advances[j] += 1
            current = a.step
        else:
            assert a.kind == "reverse" and current == a.step and a.count >= 1
            reversed_.extend(range(a.step + a.count - 1, a.step - 1, -1))
            current = None
    assert reversed_ == list(range(n - 1, -1, -1)) and not snaps
    return peak, max(advances)


@functools.cache
def optimum(n: int, s: int) -> int:
    """The fewest advanced steps, by dynamic programming over the first split."""
    if n <= 1:
        return 0
    if s == 1:
        return n * (n - 1) // 2
    return min(m + optimum(n - m, s - 1) + optimum(m, s) for m in range(1, n))


def test_binomial_schedule_is_legal_bounded_and_optimal():
    for n in range(61):
        for s in range(1, 9):
            schedule = sch.binomial(n, s)
            assert schedule == sch.actions(n, s)
            peak, most = simulate(schedule, n)
            assert peak <= s
            assert all(a.count == 1 for a in schedule if a.kind == "reverse")
            bound = sch.revolve_bound(n, s)
            assert sch.advanced_steps(schedule) == bound == optimum(n, s)
            if n:
                assert schedule[0] == sch.Action("save", 0)
                assert most == sch.repetition_number(n, s)
            if s >= n >= 1:
                assert bound == n - 1


def test_revolve_bound_closed_form():
    # r*n - C(s + r, r - 1); r the smallest with C(s + r, s) >= n; at the edges of the repetition number
    # ranges the bound is continuous (t is piecewise linear in n with slope r)
    assert [sch.revolve_bound(n, 2) for n in range(1, 8)] == [0, 1, 2, 4, 6, 8, 11]
    assert sch.revolve_bound(10, 3) == 15 and sch.repetition_number(10, 3) == 2
    assert sch.revolve_bound(1000, 10) == 4 * 1000 - 364  # C(13, 10) < 1000 <= C(14, 10), C(14, 3) = 364
    for s in (2, 5, 8):
        for n in range(2, 200):
            r = sch.repetition_number(n, s)
            assert sch.revolve_bound(n, s) - sch.revolve_bound(n - 1, s) == r


def test_sqrt_segments():
    for n in range(61):
        schedule = sch.sqrt_segments(n)
        assert schedule == sch.actions(n, "sqrt")
        peak, _ = simulate(schedule, n)
        if n:
            length = next(k for k in range(1, n + 1) if k * k >= n)  # ceil(sqrt(n))
            assert peak == -(-n // length)
            assert [a.count for a in schedule if a.kind == "reverse"][1:] == [length] * (peak - 1)
            assert sch.advanced_steps(schedule) == (peak - 1) * length


def test_schedule_arguments():
    assert sch.binomial(0, 3) == sch.sqrt_segments(0) == []
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ArgumentError, match="non-negative int"):
            sch.actions(bad, 2)  # type: ignore[arg-type]
    for bad in (0, -2, 1.0, "log", None, False):
        with pytest.raises(ArgumentError, match="checkpoints must be"):
            sch.actions(5, bad)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="positive int"):
        sch.revolve_bound(5, 0)


# -- di.scan -------------------------------------------------------------------------------------------
CHECKPOINTS = [None, "sqrt", 1, 3]
N = 7


def _np_step(c: dict, i: int) -> dict:
    u, p = c["u"], c["p"]
    return {"u": u + 0.1 * (np.tanh(u) * p.w - 0.3 * u + 0.1 * np.roll(u, 1)), "p": p}


def test_scan_plain_loop_values_trees_and_outputs():
    p = Params(np.linspace(0.5, 1.5, 4))
    c0 = {"u": np.linspace(-1.0, 1.0, 4), "p": p}
    ref = c0
    for i in range(N):
        ref = _np_step(ref, i)
    for ck in CHECKPOINTS:
        got = di.scan(_np_step, c0, N, checkpoints=ck)
        assert isinstance(got["p"], Params) and got["p"].w is p.w
        np.testing.assert_array_equal(got["u"], ref["u"])
    c, ys = di.scan(lambda c, i: (c * 2.0, {"s": c.sum() + i}), np.ones(3), 4, checkpoints=2, outputs=True)
    np.testing.assert_array_equal(c, 16.0 * np.ones(3))
    np.testing.assert_array_equal(ys["s"], [3.0, 7.0, 14.0, 27.0])
    assert di.scan(_np_step, c0, 0) is c0
    assert "scan" in di.__all__


def test_scan_bad_input():
    def never(c, i):
        raise AssertionError("step ran")

    for n in (-1, 1.5, True):
        with pytest.raises(ArgumentError, match="non-negative int"):
            di.scan(never, np.ones(2), n)
    for ck in (0, "log", 2.0):
        with pytest.raises(ArgumentError, match="checkpoints must be"):
            di.scan(never, np.ones(2), 3, checkpoints=ck)
    with pytest.raises(ArgumentError, match="callable"):
        di.scan(3, np.ones(2), 3)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="n >= 1"):
        di.scan(never, np.ones(2), 0, outputs=True)
    with pytest.raises(ShapeError, match=r"step 0 changed carry\[1\] from shape \(2,\)"):
        di.scan(lambda c, i: (c[0], np.ones(3)), (1.0, np.ones(2)), 3)
    with pytest.raises(ShapeError, match="dtype float64 to shape \\(2,\\) and dtype float32"):
        di.scan(lambda c, i: c.astype(np.float32), np.ones(2), 3)
    with pytest.raises(ShapeError, match="tree structure"):
        di.scan(lambda c, i: [c[0]], [np.ones(2), np.ones(2)], 3)
    with pytest.raises(ArgumentError, match="pair"):
        di.scan(lambda c, i: c, np.ones(2), 3, outputs=True)


def _loss(xp, roll, ck, n=N):
    """sum(u_n^2) of the issue's explicit simulation, p in the carry, with an output per step."""

    def step(c, i):
        u, p = c
        new = u + 0.1 * (xp.tanh(u) * p - 0.3 * u + 0.1 * roll(u))
        return (new, p), (new**2).sum()

    def f(x):
        (u, _), ys = di.scan(step, (x, 0.5 + 0.0 * x), n, checkpoints=ck, outputs=True)
        return (u**2).sum() + 0.5 * ys.sum()

    return f


def _check_engine(backend, xp, roll, x, other, to_np, checkpoints, prepared=True):
    """gradient and hvp of each checkpointing against checkpoints=None (where prepared: prepared at `x`,
    used at `other`, each call twice)."""
    ref = _loss(xp, roll, None)
    g_ref = [to_np(di.gradient(ref, backend, z)) for z in (x, other)]
    h_ref = to_np(di.hvp(ref, backend, other, x))
    for ck in checkpoints:
        f = _loss(xp, roll, ck)
        if prepared:
            prep = di.prepare_gradient(f, backend, x)
            hprep = di.prepare_hvp(f, backend, x, x)
            grads = [prep.gradient(z) for z in (x, other, x, other)]
            hvps = [hprep.hvp(other, x), hprep.hvp(other, x)]
        else:
            grads = [di.gradient(f, backend, z) for z in (x, other)]
            hvps = [di.hvp(f, backend, other, x)]
        for k, g in enumerate(grads):
            np.testing.assert_allclose(to_np(g), g_ref[k % 2], rtol=1e-12, atol=1e-14)
        for h in hvps:
            np.testing.assert_allclose(to_np(h), h_ref, rtol=1e-11, atol=1e-13)


def test_scan_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    if True:  # tests/conftest.py enables float64
        x, other = jnp.linspace(-1.0, 1.0, 5), jnp.linspace(0.3, -0.7, 5)
        _check_engine(di.AutoJAX(), jnp, lambda u: jnp.roll(u, 1), x, other, np.asarray, ["sqrt", 6, 3], prepared=False)
        # the carry a tree, i a traced integer, outputs stacked leafwise
        c, ys = di.scan(lambda c, i: ({"a": c["a"] * 2}, (c["a"][0], i)), {"a": x}, 5, checkpoints=5, outputs=True)
        np.testing.assert_allclose(np.asarray(c["a"]), 32 * np.asarray(x))
        np.testing.assert_allclose(np.asarray(ys[0]), np.asarray(x[0]) * 2.0 ** np.arange(5))
        np.testing.assert_array_equal(np.asarray(ys[1]), np.arange(5))
        with pytest.raises(ShapeError, match="dtype"):
            di.scan(lambda c, i: c.astype(jnp.float32), x, 4, checkpoints="sqrt")
        # 7 steps fit nested checkpointed scans of 3 * 3 in 6 carries; in 3 they take the binomial schedule
        # (a custom_vjp): first order and forward over reverse (checked above), not forward mode
        with pytest.raises(TypeError, match="forward-mode"):
            jax.jvp(lambda z: di.scan(lambda c, i: c * jnp.sin(c), z, 7, checkpoints=3), (x,), (x,))
        with pytest.raises(NotSupportedError, match="checkpoints=6 or more"):
            di.scan(lambda c, i: c + 1, jnp.arange(3), 7, checkpoints=3)


def test_scan_torch():
    torch = pytest.importorskip("torch")
    from diface.backends.torch import _memory

    dtype = torch.float64
    x, other = torch.linspace(-1.0, 1.0, 5, dtype=dtype), torch.linspace(0.3, -0.7, 5, dtype=dtype)
    _check_engine(di.AutoTorch(), torch, lambda u: torch.roll(u, 1), x, other, lambda t: t.numpy(), CHECKPOINTS[1:])
    # step evaluations: n forward, the schedule's advances after its first reverse, n reverses
    for ck in ("sqrt", 1, 3):
        counts: list[int] = []
        original = _memory._Runner.call

        def counting(self, leaves, i, original=original, counts=counts):
            counts.append(i)
            return original(self, leaves, i)

        def f(z, ck=ck):
            return di.scan(lambda c, i: torch.sin(c) * 1.1, z, 10, checkpoints=ck).sum()

        _memory._Runner.call = counting  # type: ignore[method-assign]
        try:
            di.gradient(f, di.AutoTorch(), x)
        finally:
            _memory._Runner.call = original  # type: ignore[method-assign]
        schedule = sch.actions(10, ck)
        first = next(k for k, a in enumerate(schedule) if a.kind == "reverse")
        after = sch.advanced_steps(schedule) - sch.advanced_steps(schedule[:first])
        assert len(counts) == 10 + after + 10
        if ck != "sqrt":
            assert len(counts) == sch.revolve_bound(10, ck) + 10 + 1  # the forward's last step, besides
    # a tensor requiring grad read from outside the carry is refused, not given a zero gradient
    w = torch.ones(5, dtype=dtype, requires_grad=True)
    with pytest.raises(NotSupportedError, match="in the carry"):
        di.scan(lambda c, i: c * w, x.clone().requires_grad_(), 3, checkpoints=2)
