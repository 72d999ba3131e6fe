"""The call plans (`diface._call.plan`): which route a prepared call takes (`prep.route`), how many of
diface's frames it runs through (counted by `sys.setprofile`, held at or below today's counts), and the
value variant of hvp (`value_gradient_and_hvp`) that the operator table adds."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diface as di

ROOT = os.path.dirname(di.__file__)
BACKENDS = os.path.join(ROOT, "backends")


def frames(call: Callable[[], Any]) -> tuple[int, int]:
    """(core frames, all diface frames) of one call, after two warm-up calls: the core is diface outside
    its engines (the call path, the delivery, the trees)."""
    call()
    call()
    counts = [0, 0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(ROOT):
            counts[1] += 1
            if not frame.f_code.co_filename.startswith(BACKENDS):
                counts[0] += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return counts[0], counts[1]


def _square_sum(x: Any) -> Any:
    return (x**2).sum()


def _weighted(x: Any, c: Any) -> Any:
    return (x**2 * c).sum()


def _with_aux(x: Any) -> Any:
    return (x**2).sum(), x[0]


def _tree(d: Any) -> Any:
    return (d["a"] ** 2).sum() + (d["b"] ** 3).sum()


def _abs2(z: Any) -> Any:
    return (abs(z) ** 2).sum()


def _square(x: Any) -> Any:
    return x**2


def _shapes(backend: Any, xs: Callable) -> dict[str, Callable[[], Any]]:
    """One prepared call per call shape, each with its arguments bound."""
    x, t, c = xs(np.linspace(0.1, 0.9, 5)), xs(np.ones(5)), xs(np.arange(5.0))
    tree = {"a": x, "b": xs(np.ones(3))}
    z = xs(np.linspace(0.1, 0.9, 5) + 1j)
    g = di.prepare_gradient(_square_sum, backend, x)
    k = di.prepare_gradient(_weighted, backend, x, di.Constant(c))
    a = di.prepare_gradient(_with_aux, backend, x, has_aux=True)
    r = di.prepare_gradient(_tree, backend, tree)
    zc = di.prepare_gradient(_abs2, backend, z)
    p1 = di.prepare_pushforward(_square, backend, x, t)
    p2 = di.prepare_pushforward(_square, backend, x, (t, t))
    sp = di.prepare_pushforward_same_point(_square, backend, x, t)
    h = di.prepare_hvp(_square_sum, backend, x, t)
    out = xs(np.zeros(5))
    shapes = {
        "gradient": lambda: g.gradient(x),
        "gradient + Constant": lambda: k.gradient(x, di.Constant(c)),
        "value_and_gradient": lambda: g.value_and_gradient(x),
        "has_aux": lambda: a.gradient(x),
        "tree x": lambda: r.gradient(tree),
        "complex x": lambda: zc.gradient(z),
        "pushforward, 1 tangent": lambda: p1.pushforward(x, t),
        "pushforward, 2 tangents": lambda: p2.pushforward(x, (t, t)),
        "same point": lambda: sp.pushforward(x, t),
        "hvp": lambda: h.hvp(x, t),
    }
    if g.ops.mutable:  # out= needs writable arrays
        shapes["out="] = lambda: g.gradient(x, out=out)
    return shapes


#: the most core frames a prepared call of each shape may take, per engine, as measured when the plans
#: came (before them, the tape took 4 / 19 / 6 / 18 / 39 / 9 / 8 / 24 / 30 / 8 / 14 in this order, JAX
#: 2 / 10 / 6 / 18 / 5 / 2 / 8 / 27 / 24 / 8)
CEILINGS = {
    "tape": {
        "gradient": 3,
        "gradient + Constant": 5,  # one of them the Constant's __init__
        "value_and_gradient": 5,
        "has_aux": 16,
        "tree x": 33,
        "complex x": 7,
        "pushforward, 1 tangent": 8,
        "pushforward, 2 tangents": 22,
        "same point": 26,
        "hvp": 8,
        "out=": 12,
    },
    "jax": {
        "gradient": 2,
        "gradient + Constant": 4,
        "value_and_gradient": 2,
        "has_aux": 2,
        "tree x": 6,
        "complex x": 2,
        "pushforward, 1 tangent": 2,
        "pushforward, 2 tangents": 14,
        "same point": 18,
        "hvp": 2,
    },
}


def _engine(name: str) -> tuple[Any, Callable]:
    if name == "tape":
        return di.AutoTape(), np.asarray
    jnp = pytest.importorskip("jax.numpy")
    return di.AutoJAX(), jnp.asarray


@pytest.mark.parametrize("engine", sorted(CEILINGS))
def test_prepared_calls_stay_within_their_frames(engine):
    backend, xs = _engine(engine)
    over = {}
    for shape, call in _shapes(backend, xs).items():
        core, _ = frames(call)
        if core > CEILINGS[engine][shape]:
            over[shape] = (core, CEILINGS[engine][shape])
    assert over == {}, f"{engine}: core frames (now, ceiling) {over}"


def test_routes_say_which_stages_a_call_takes():
    x = np.linspace(0.1, 0.9, 5)
    prep = di.prepare_gradient(_weighted, di.AutoTape(), x, di.Constant(x))
    route = prep.route["gradient"]
    assert (route.accept, route.convert, route.run, route.deliver) == (
        "x, 1 context",
        "identity",
        "kernel.run",
        "delivery",
    )
    assert str(route) == "accept x, 1 context -> convert identity -> kernel.run -> deliver delivery"
    tree = di.prepare_gradient(_tree, di.AutoTape(), {"a": x, "b": x})
    assert tree.route["value_and_gradient"].convert == "tree -> flat"
    inplace = di.prepare_jacobian(lambda y, x: np.copyto(y, x**2), di.AutoTape(), x, y=np.zeros(5))
    assert str(inplace.route["jacobian"]) == "general path"  # its calls pass y=
    unprepared_like = di.prepare_hvp(_square_sum, di.AutoFiniteDiff(), x, (x, x))
    assert unprepared_like.route["hvp"].accept == "x and 2 tangents"


def test_jax_routes_compile_aux_and_tangent_calls():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x, t = jnp.linspace(0.1, 0.9, 5), jnp.ones(5)
    aux = di.prepare_gradient(_with_aux, di.AutoJAX(), x, has_aux=True)
    assert all(route.compiled for route in aux.route.values())
    reference = jax.value_and_grad(_with_aux, has_aux=True)
    for point in (x, x + 1):
        for _ in range(2):
            (value, a), g = aux.value_and_gradient(point)
            (ref_value, ref_a), ref_g = reference(point)
            np.testing.assert_allclose(g, ref_g)
            np.testing.assert_allclose(a, ref_a)
            np.testing.assert_allclose(value, ref_value)
            g, a = aux.gradient(point)
            np.testing.assert_allclose(g, 2 * point)
    hvp = di.prepare_hvp(_square_sum, di.AutoJAX(), x, t)
    assert hvp.route["gradient_and_hvp"].compiled
    for _ in range(2):
        g, tg = hvp.gradient_and_hvp(x + 1, t)
        np.testing.assert_allclose(g, 2 * (x + 1))
        np.testing.assert_allclose(tg, 2 * t)


ENGINES = ["tape", "finitediff", "jax", "torch"]


def _backend(name: str) -> tuple[Any, Callable]:
    if name == "tape":
        return di.AutoTape(), np.asarray
    if name == "finitediff":
        return di.AutoFiniteDiff(), np.asarray
    if name == "jax":
        jnp = pytest.importorskip("jax.numpy")
        return di.AutoJAX(), jnp.asarray
    torch = pytest.importorskip("torch")
    return di.AutoTorch(), torch.as_tensor


def _cubic(x: Any) -> Any:
    return (x**3).sum()


@pytest.mark.parametrize("engine", ENGINES)
def test_value_gradient_and_hvp(engine):
    backend, xs = _backend(engine)
    rtol = 1e-5 if engine == "finitediff" else 1e-12
    x0, x1, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, -0.5]), np.array([1.0, -2.0, 0.5])
    y, g, tg = di.value_gradient_and_hvp(_cubic, backend, xs(x1), xs(v))
    np.testing.assert_allclose(float(y), np.sum(x1**3), rtol=rtol)
    np.testing.assert_allclose(np.asarray(g), 3 * x1**2, rtol=rtol)
    np.testing.assert_allclose(np.asarray(tg), 6 * x1 * v, rtol=rtol)
    prep = di.prepare_hvp(_cubic, backend, xs(x0), xs(v))
    for _ in range(2):
        y, g, tg = prep.value_gradient_and_hvp(xs(x1), xs(v))
        np.testing.assert_allclose(float(y), np.sum(x1**3), rtol=rtol)
        np.testing.assert_allclose(np.asarray(tg), 6 * x1 * v, rtol=rtol)
        y, g, tg = di.value_gradient_and_hvp(_cubic, backend, xs(x1), xs(v), prep=prep)
        np.testing.assert_allclose(np.asarray(g), 3 * x1**2, rtol=rtol)
    g2, tg2 = prep.gradient_and_hvp(xs(x1), xs(v))
    np.testing.assert_allclose(np.asarray(g2), np.asarray(g), rtol=rtol)
    np.testing.assert_allclose(np.asarray(tg2), np.asarray(tg), rtol=rtol)


def test_value_gradient_and_hvp_with_trees_batches_and_out():
    x = {"a": np.array([1.0, 2.0]), "b": np.array(3.0)}
    v = {"a": np.array([1.0, 0.0]), "b": np.array(1.0)}
    f = lambda d: (d["a"] ** 3).sum() + d["b"] ** 2 * d["a"][0]
    prep = di.prepare_hvp(f, di.AutoTape(), x, (v, v))
    y, g, (tg, tg2) = prep.value_gradient_and_hvp(x, (v, v))
    assert float(y) == 1.0 + 8.0 + 9.0
    np.testing.assert_allclose(g["a"], [3 + 9.0, 12.0])
    np.testing.assert_allclose(tg["a"], [6.0 + 6.0, 0.0])  # H_aa v_a + H_ab v_b
    np.testing.assert_allclose(tg["b"], 2 * 3.0 + 2 * 1.0)  # H_ba v_a + H_bb v_b
    np.testing.assert_allclose(tg2["b"], tg["b"])
    arrays = di.prepare_hvp(_cubic, di.AutoTape(), np.zeros(3), np.ones(3))
    g_buf, tg_buf = np.empty(3), np.empty(3)
    y, g, tg = arrays.value_gradient_and_hvp(np.array([1.0, 2.0, 3.0]), np.ones(3), out=(g_buf, tg_buf))
    assert g is g_buf and tg is tg_buf and float(y) == 36.0
    np.testing.assert_allclose(tg_buf, [6.0, 12.0, 18.0])
    with pytest.raises(di.PreparationMismatchError):
        arrays.value_gradient_and_hvp(np.zeros(4), np.ones(4))
