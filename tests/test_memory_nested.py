"""`di.scan` on autograd, TensorFlow and PyTensor: nested checkpointed segments built from each engine's
`di.checkpoint` hook (`diface._memory.nested`), against the plain loop (checkpoints=None), and the step
evaluations a gradient makes (more than n: the segments are recomputed)."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di
from diface._memory import nested


def test_plan_and_nested_scan_with_a_plain_hook():
    calls: list[int] = []

    def hook(fn, args, kwargs):
        calls.append(1)
        return fn(*args, **kwargs)

    for n, ck, d, length, carries in [(10, "sqrt", 1, 4, 3), (7, 6, 2, 1, 6), (7, 3, 1, 3, 3), (40, 10, 3, 2, 10)]:
        bs, got = nested.plan(n, ck)
        assert (len(bs), got) == (d, length) and sum(bs) <= carries and np.prod(bs) * length >= n
        calls.clear()
        c, ys = nested.nested_scan(hook, lambda c, i: (c + i, i * c), 0.0, n, ck, True)
        assert c == n * (n - 1) / 2 and list(ys) == [i * (i * (i - 1) / 2) for i in range(n)]
        assert len(calls) <= sum(np.cumprod(bs))  # children past n are not called
    assert nested.plan(1, 1) == ([1], 1) and nested.nested_scan(hook, None, "c", 0, 2, False) == "c"


def _loss(xp, ck, n, counter):
    def step(c, i):
        counter.append(i)
        u, p = c
        new = u + 0.1 * (xp.tanh(u) * p - 0.3 * u + 0.1 * xp.sin(u))
        return (new, p), (new * new)[0]

    def f(x):
        (u, _), ys = di.scan(step, (x, 0.5 + 0.0 * x), n, checkpoints=ck, outputs=True)
        return xp.sum(u * u) + 0.5 * xp.sum(ys)

    return f


def _engine(name):
    if name == "autograd":
        anp = pytest.importorskip("autograd.numpy")
        return di.AutoAutograd(), anp, np.asarray, 7, ["sqrt", 3, 6]
    if name == "tensorflow":
        tf = pytest.importorskip("tensorflow")

        class TF:
            tanh, sin, sum = tf.tanh, tf.sin, tf.reduce_sum

        # eager, so that every step evaluation runs the Python step (and is counted)
        return di.AutoTensorFlow(jit=False), TF, tf.constant, 7, ["sqrt", 6]
    pt = pytest.importorskip("pytensor.tensor")
    return di.AutoPyTensor(), pt, np.asarray, 3, ["sqrt", 3]


@pytest.mark.parametrize("name", ["autograd", "tensorflow", "pytensor"])
def test_nested_scan_gradient_hvp_and_recomputation(name):
    backend, xp, conv, n, checkpoints = _engine(name)
    x, other = conv(np.linspace(-1.0, 1.0, 3)), conv(np.array([0.3, -0.7, 0.2]))
    counter: list[int] = []
    ref = _loss(xp, None, n, counter)
    g_ref = [np.asarray(di.gradient(ref, backend, z)) for z in (x, other)]
    h_ref = np.asarray(di.hvp(ref, backend, other, (x,))[0])
    for ck in checkpoints:
        f = _loss(xp, ck, n, counter)
        prep = di.prepare_gradient(f, backend, x)
        hprep = di.prepare_hvp(f, backend, x, (x,))
        for _ in range(2):
            for k, z in enumerate((x, other)):
                np.testing.assert_allclose(np.asarray(prep.gradient(z)), g_ref[k], rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(np.asarray(hprep.hvp(other, (x,))[0]), h_ref, rtol=1e-11, atol=1e-13)
        if name != "pytensor":  # PyTensor runs a compiled graph: the Python step runs only while it is built
            counter.clear()
            prep.gradient(other)
            bs, _ = nested.plan(n, ck)
            # once forward, once more per checkpointed level (d of them); on TensorFlow once more before, the
            # whole loop on untracked copies (the closure check)
            expected = (len(bs) + 1 + (name == "tensorflow")) * n
            assert len(counter) == expected > n, (ck, len(counter))


def test_a_step_reading_a_traced_value_outside_its_carry_is_refused():
    anp = pytest.importorskip("autograd.numpy")

    def f(x):
        return anp.sum(di.scan(lambda c, i: c * anp.sin(x), x, 4, checkpoints=2))

    with pytest.raises(di.NotSupportedError, match="in the carry"):
        di.gradient(f, di.AutoAutograd(), np.ones(2))
    tf = pytest.importorskip("tensorflow")

    def g(x):
        return tf.reduce_sum(di.scan(lambda c, i: c * tf.sin(x), x, 7, checkpoints=6))

    with pytest.raises(di.NotSupportedError, match=r"di.scan's step.*in the carry"):
        di.gradient(g, di.AutoTensorFlow(jit=False), tf.ones(2))
