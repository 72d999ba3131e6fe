"""Trees of arrays in and out (issue 12): layouts as JAX / torch.func, strict checks, has_aux, ravel."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import diface as di

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("jax.flatten_util")
torch = pytest.importorskip("torch")
anp = pytest.importorskip("autograd.numpy")

jax.config.update("jax_enable_x64", True)

Point = collections.namedtuple("Point", "u v")

# -- references: JAX on the same trees -----------------------------------------------------------------


def _np_tree(t):
    return jax.tree_util.tree_map(lambda a: np.asarray(a), t)


def assert_tree_close(a, b, rtol=1e-6, atol=1e-8):
    la, sa = jax.tree_util.tree_flatten(_np_tree(a))
    lb, sb = jax.tree_util.tree_flatten(_np_tree(b))
    assert sa == sb, (sa, sb)
    for u, v in zip(la, lb):
        assert np.shape(u) == np.shape(v)
        np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)


def point(seed: int = 0):
    r = np.random.default_rng(seed)
    return {
        "w": r.normal(size=(2, 3)),
        "b": r.normal(size=3),
        "nested": (r.normal(size=()), None, [r.normal(size=2)]),
        "p": Point(r.normal(size=2), np.zeros(0)),
    }


def loss(xp):
    def f(t):
        h = xp.tanh(xp.sum(t["w"], axis=0) + t["b"])
        return xp.sum(h**2) * t["nested"][0] + xp.sum(xp.sin(t["nested"][2][0]) * t["p"].u) + xp.sum(t["p"].v)

    return f


def vec(xp):
    def f(t):
        return {"s": xp.sum(t["w"] ** 2, axis=1) * t["nested"][0], "t": (xp.prod(t["b"]), t["p"].u * t["b"][:2])}

    return f


def x_tuple_to_dict(xp):
    def f(t):
        a, b = t
        return {"ab": a * b[0], "c": xp.sum(a**2) + b[1]}

    return f


ENGINES = {
    "jax": (lambda: di.AutoJAX(), jnp, lambda t: jax.tree_util.tree_map(jnp.asarray, t)),
    "torch": (lambda: di.AutoTorch(), torch, lambda t: jax.tree_util.tree_map(torch.as_tensor, t)),
    "autograd": (lambda: di.AutoAutograd(), anp, lambda t: t),
    "tape": (lambda: di.AutoTape(), np, lambda t: t),
    "finitediff": (lambda: di.AutoFiniteDiff(), np, lambda t: t),
}


@pytest.fixture(params=list(ENGINES))
def engine(request):
    make, xp, convert = ENGINES[request.param]
    tol = 1e-5 if request.param == "finitediff" else 1e-7
    return request.param, make(), xp, convert, tol


def test_gradient_dict_in_scalar_out(engine):
    _name, backend, xp, convert, tol = engine
    x0, x1 = convert(point(0)), convert(point(1))
    ref = jax.grad(loss(jnp))(jax.tree_util.tree_map(jnp.asarray, point(1)))
    f = loss(xp)
    prep = di.prepare_gradient(f, backend, x0)
    for _ in range(2):
        assert_tree_close(prep.gradient(x1), ref, rtol=tol, atol=tol)
        _value, g = di.value_and_gradient(f, backend, x1, prep=prep)
        assert_tree_close(g, ref, rtol=tol, atol=tol)
    assert_tree_close(di.gradient(loss(xp), backend, x1), ref, rtol=tol, atol=tol)


def test_jacobian_tree_in_tree_out(engine):
    _name, backend, xp, convert, tol = engine
    x0, x1 = convert(point(0)), convert(point(1))
    ref = jax.jacobian(vec(jnp))(jax.tree_util.tree_map(jnp.asarray, point(1)))
    prep = di.prepare_jacobian(vec(xp), backend, x0)
    for _ in range(2):
        assert_tree_close(prep.jacobian(x1), ref, rtol=tol, atol=tol)
    matrix = di.jacobian(vec(xp), backend, x1, output="matrix")
    flat, unravel = jax.flatten_util.ravel_pytree(jax.tree_util.tree_map(jnp.asarray, point(1)))
    flat_ref = jax.jacobian(lambda v: jax.flatten_util.ravel_pytree(vec(jnp)(unravel(v)))[0])(flat)
    np.testing.assert_allclose(np.asarray(matrix), np.asarray(flat_ref), rtol=tol, atol=tol)


def test_tuple_in_dict_out_pushforward_pullback(engine):
    _name, backend, xp, convert, tol = engine
    x = convert((np.array([1.0, 2.0]), np.array([0.5, -1.0])))
    tx = convert((np.array([1.0, 0.0]), np.array([0.0, 1.0])))
    jx = jax.tree_util.tree_map(jnp.asarray, (np.array([1.0, 2.0]), np.array([0.5, -1.0])))
    jtx = jax.tree_util.tree_map(jnp.asarray, (np.array([1.0, 0.0]), np.array([0.0, 1.0])))
    _y, ref_push = jax.jvp(x_tuple_to_dict(jnp), (jx,), (jtx,))
    prep = di.prepare_pushforward(x_tuple_to_dict(xp), backend, x, tx)
    for _ in range(2):
        assert_tree_close(prep.pushforward(x, tx), ref_push, rtol=tol, atol=tol)
    ty = {"ab": np.array([1.0, 2.0]), "c": np.array(3.0)}
    _, vjp = jax.vjp(x_tuple_to_dict(jnp), jx)
    (ref_pull,) = vjp(jax.tree_util.tree_map(jnp.asarray, ty))
    got = di.pullback(x_tuple_to_dict(xp), backend, x, convert(ty))
    assert_tree_close(got, ref_pull, rtol=tol, atol=tol)
    batch = di.pullback(x_tuple_to_dict(xp), backend, x, (convert(ty), convert(ty)))
    assert isinstance(batch, tuple) and len(batch) == 2
    assert_tree_close(batch[1], ref_pull, rtol=tol, atol=tol)


def test_hessian_and_hvp(engine):
    name, backend, xp, convert, tol = engine
    if name == "finitediff":
        tol = 1e-3
    x = convert(point(2))
    jx = jax.tree_util.tree_map(jnp.asarray, point(2))
    ref = jax.hessian(loss(jnp))(jx)
    assert_tree_close(di.hessian(loss(xp), backend, x), ref, rtol=tol, atol=tol)
    h = di.hessian(loss(xp), backend, x, output="matrix")
    assert h.shape == (14, 14)
    tx = jax.tree_util.tree_map(np.ones_like, point(2))
    ref_hvp = jax.jvp(jax.grad(loss(jnp)), (jx,), (jax.tree_util.tree_map(jnp.asarray, tx),))[1]
    assert_tree_close(di.hvp(loss(xp), backend, x, convert(tx)), ref_hvp, rtol=tol, atol=tol)


def test_torch_func_reference():
    x = {k: torch.randn(3, dtype=torch.float64) for k in "abc"}

    def f(t):
        return (t["a"] * t["b"]).sum() + torch.sin(t["c"]).sum() * t["a"][0]

    assert_tree_close(di.gradient(f, di.AutoTorch(), x), torch.func.grad(f)(x))
    assert_tree_close(di.hessian(f, di.AutoTorch(), x), torch.func.hessian(f)(x))

    def g(t):
        return {"u": t["a"] * t["b"], "v": t["c"].sum()}

    assert_tree_close(di.jacobian(g, di.AutoTorch(), x), torch.func.jacrev(g)(x))


def test_output_tree_from_array_x():
    x = np.array([1.0, 2.0])
    f = lambda v: {"sq": v**2, "s": jnp.sum(v)}
    got = di.jacobian(f, di.AutoJAX(), x)
    ref = jax.jacobian(f)(jnp.asarray(x))
    assert_tree_close(got, ref)
    d = di.derivative(lambda s: (s**2, [jnp.sin(s)]), di.AutoJAX(), 0.5)
    assert_tree_close(d, (1.0, [np.cos(0.5)]))


def test_registered_jax_pytree():
    equinox = pytest.importorskip("equinox")

    class Lin(equinox.Module):
        w: jax.Array
        b: jax.Array

    m = Lin(jnp.ones((2, 2)), jnp.zeros(2))
    f = lambda m: jnp.sum(jnp.tanh(m.w @ jnp.ones(2) + m.b))
    g = di.gradient(f, di.AutoJAX(), m)
    assert type(g) is Lin
    assert_tree_close(g, jax.grad(f)(m))


def test_scalar_leaves_and_ravel_round_trip():
    t = {"a": 1.0, "b": (np.arange(3.0), None), "c": np.zeros((2, 0))}
    flat, unravel = di.ravel(t)
    assert flat.shape == (4,)
    back = unravel(flat)
    assert_tree_close(back, {"a": np.array(1.0), "b": (np.arange(3.0), None), "c": np.zeros((2, 0))})
    g = di.gradient(lambda t: t["a"] * np.sum(t["b"][0]), di.AutoFiniteDiff(), t)
    assert_tree_close(g, {"a": 3.0, "b": (np.ones(3), None), "c": np.zeros((2, 0))}, atol=1e-6)
    tflat, tun = di.ravel({"w": torch.ones(2, 2), "b": torch.zeros(2)})
    assert isinstance(tflat, torch.Tensor) and tun(tflat)["w"].shape == (2, 2)


def test_mismatch_names_the_leaf_path():
    x = {"layer1": {"w": np.zeros(3), "b": np.zeros(1)}}
    f = lambda t: np.sum(t["layer1"]["w"] ** 2) + t["layer1"]["b"][0]
    prep = di.prepare_gradient(f, di.AutoFiniteDiff(), x)
    with pytest.raises(
        di.PreparationMismatchError, match=r"x\['layer1'\]\['w'\]\s+differs: shape \(3,\) at preparation, \(4,\) now"
    ):
        prep.gradient({"layer1": {"w": np.zeros(4), "b": np.zeros(1)}})
    with pytest.raises(di.PreparationMismatchError, match=r"missing x\['layer1'\]\['b'\]"):
        prep.gradient({"layer1": {"w": np.zeros(3)}})
    with pytest.raises(di.ArgumentError, match=r"x\['layer1'\]\['w'\] is a str"):
        di.gradient(f, di.AutoFiniteDiff(), {"layer1": {"w": "oops", "b": np.zeros(1)}})


def test_bad_tangent_tree_and_out_untouched():
    x = (np.ones(2), np.ones(3))
    f = lambda t: t[0].sum() * t[1]
    with pytest.raises(di.ShapeError, match=r"tx\[1\] has shape \(2,\)"):
        di.pushforward(f, di.AutoFiniteDiff(), x, (np.ones(2), np.ones(2)))
    prep = di.prepare_gradient(lambda t: t[0].sum() * t[1].sum(), di.AutoFiniteDiff(), x)
    out = (np.full(2, 7.0), np.full(2, 7.0))
    with pytest.raises(di.ShapeError):
        prep.gradient(x, out=out)
    assert (out[0] == 7.0).all() and (out[1] == 7.0).all()
    good = (np.zeros(2), np.zeros(3))
    assert prep.gradient(x, out=good) is good
    np.testing.assert_allclose(good[1], [2.0, 2.0, 2.0], rtol=1e-6)


@pytest.mark.parametrize("name", ["jax", "torch", "finitediff"])
def test_has_aux_layouts(name):
    make, xp, convert, _ = *ENGINES[name][:3], None
    backend = make()
    x = convert({"a": np.array([1.0, 2.0])})

    def f(t):
        return xp.sum(t["a"] ** 2), {"norm": t["a"][0]}

    g, aux = di.gradient(f, backend, x, has_aux=True)
    assert_tree_close(g, {"a": np.array([2.0, 4.0])}, rtol=1e-5)
    assert_tree_close(aux, {"norm": 1.0})
    (value, aux2), g2 = di.value_and_gradient(f, backend, x, has_aux=True)
    jv, jref = jax.value_and_grad(lambda t: (jnp.sum(t["a"] ** 2), {"norm": t["a"][0]}), has_aux=True)(
        {"a": jnp.array([1.0, 2.0])}
    )
    assert_tree_close((value, aux2), jv)
    assert_tree_close(g2, jref, rtol=1e-5)
    prep = di.prepare_gradient(f, backend, x, has_aux=True)
    assert_tree_close(prep.gradient(x)[1], {"norm": 1.0})
    with pytest.raises(di.PreparationMismatchError):
        di.gradient(f, backend, x, prep=prep)
    # an array x with aux
    j, aux = di.jacobian(lambda v: (v**2, "log"), backend, convert(np.array([1.0, 3.0])), has_aux=True)
    assert aux == "log"
    np.testing.assert_allclose(np.asarray(j), np.diag([2.0, 6.0]), rtol=1e-5)


def test_jax_trees_with_aux_prepared_at_one_point_used_at_another():
    """On JAX the tree layer, the kernel, the full variant and the aux output are one compiled program per
    variant; aux that JAX cannot return from a compiled program (a string) takes the general path."""
    x0, x1 = {"a": jnp.array([0.5, -1.0]), "b": jnp.array(2.0)}, {"a": jnp.array([1.0, 2.0]), "b": jnp.array(3.0)}
    data = jnp.array([1.0, -2.0])
    f = lambda t, d: (jnp.sum(t["a"] ** 2 * d) * t["b"], {"first": t["a"][0], "data": d})
    g_ref, aux_ref = jax.grad(f, has_aux=True)(x1, data)
    value_ref = f(x1, data)[0]
    prep = di.prepare_gradient(f, di.AutoJAX(), x0, di.Constant(data), has_aux=True)
    for _ in range(2):
        g, aux = prep.gradient(x1, di.Constant(data))
        assert_tree_close(g, g_ref, rtol=1e-6)
        assert_tree_close(aux, aux_ref)
        (value, aux2), g2 = prep.value_and_gradient(x1, di.Constant(data))
        assert_tree_close((value, aux2, g2), (value_ref, aux_ref, g_ref), rtol=1e-6)
    labelled = lambda t, d: (f(t, d)[0], "a label")
    prep = di.prepare_gradient(labelled, di.AutoJAX(), x0, di.Constant(data), has_aux=True)
    for _ in range(2):
        (value, aux), g = prep.value_and_gradient(x1, di.Constant(data))
        assert aux == "a label" and np.isclose(value, value_ref)
        assert_tree_close(g, g_ref, rtol=1e-6)
        assert prep.gradient(x1, di.Constant(data))[1] == "a label"


def test_sparse_and_inverse_on_trees():
    x = {"a": np.array([1.0, 2.0]), "b": np.array([3.0])}
    f = lambda t: {"u": t["a"] ** 2, "v": t["b"] * 2.0}
    j = di.jacobian(f, di.AutoSparse(di.AutoJAX()), x)
    assert_tree_close(_dense(j), jax.jacobian(f)(jax.tree_util.tree_map(jnp.asarray, x)))
    ty = {"u": np.array([2.0, 4.0]), "v": np.array([2.0])}
    w = di.inverse_pushforward(f, di.AutoJAX(), x, ty)
    assert_tree_close(w, {"a": np.array([1.0, 1.0]), "b": np.array([1.0])})


def _dense(t):
    return jax.tree_util.tree_map(lambda a: a.toarray() if hasattr(a, "toarray") else a, t)


def test_jax_fused_tree_program():
    """JAX leaves: ravel, the flat program and the unravel of its result are one compiled program, run
    after a strict check of the leaves; a mismatch still names the leaf path."""
    x0, x1 = (jax.tree_util.tree_map(jnp.asarray, point(s)) for s in (0, 1))
    f = loss(jnp)
    prep = di.prepare_gradient(f, di.AutoJAX(), x0)
    assert prep.route["gradient"].compiled and prep.route["value_and_gradient"].compiled
    ref = jax.grad(f)(x1)
    assert_tree_close(prep.gradient(x1), ref)
    assert_tree_close(prep(x1), ref)
    assert_tree_close(di.gradient(f, di.AutoJAX(), x1, prep=prep), ref)
    twin = prep.copy()
    assert_tree_close(twin.gradient(x1), ref)
    bad = dict(x1, w=jnp.zeros((3, 3)))
    with pytest.raises(
        di.PreparationMismatchError, match=r"x\['w'\]\s+differs: shape \(2, 3\) at preparation, \(3, 3\) now"
    ):
        prep.gradient(bad)
    with pytest.raises(di.PreparationMismatchError, match=r"x\['w'\]\s+differs: array type"):
        prep.gradient(dict(x1, w=np.asarray(x1["w"])))
    with pytest.raises(di.PreparationMismatchError, match=r"missing x\['b'\]"):
        prep.gradient({k: v for k, v in x1.items() if k != "b"})
    for make, f, reference in (
        (di.prepare_jacobian, vec(jnp), jax.jacobian(vec(jnp))),
        (di.prepare_hessian, loss(jnp), jax.hessian(loss(jnp))),
    ):
        p = make(f, di.AutoJAX(), x0)
        assert all(route.compiled for route in p.route.values())
        got = p.jacobian(x1) if make is di.prepare_jacobian else p.hessian(x1)
        assert_tree_close(got, reference(x1))
    matrix = di.prepare_jacobian(vec(jnp), di.AutoJAX(), x0, output="matrix")
    assert matrix.jacobian(x1).shape == (matrix.y_shape[0], matrix.x_shape[0])


def test_kit_tree_scenarios(engine):
    """The test kit's tree scenarios (dict in, tuple in / dict out, nested, empty leaves) on every engine."""
    from diface.testing import test_differentiation, tree_scenarios

    _name, backend, _xp, _convert, _tol = engine
    report = test_differentiation([backend], tree_scenarios())
    assert report.ok and len(report.rows) == 18
    assert {r.scenario for r in report.rows} == {"dict to scalar", "tuple to dict", "nested to scalar", "empty leaves"}


def test_kit_tree_scenarios_catch_a_wrong_result():
    import dataclasses

    from diface.testing import test_differentiation, tree_scenarios

    wrong = [dataclasses.replace(s, jacobian=lambda v, j=s.jacobian: 2 * j(v), _bound={}) for s in tree_scenarios()]
    with pytest.raises(AssertionError, match=r"dict to scalar .* pushforward"):
        test_differentiation([di.AutoTape()], wrong)


def test_numpy_leaves_reach_f_in_the_engines_arrays():
    """A tree of NumPy arrays is converted for the engine, at preparation too (where f's output structure
    is found): f written with torch operations receives tensors, and the results come back as NumPy."""
    torch = pytest.importorskip("torch")
    params = {"w": np.arange(6.0).reshape(2, 3) / 10, "b": np.array([0.5, -0.5])}
    ones = torch.ones(3, dtype=torch.float64)

    def loss(p):
        return torch.sum(torch.tanh(p["w"] @ ones + p["b"]))

    def parts(p):
        return {"a": torch.sin(p["w"]), "b": p["b"] * 2}

    for _ in range(2):
        g = di.gradient(loss, di.AutoTorch(), params)
        s = 1 - np.tanh(params["w"] @ np.ones(3) + params["b"]) ** 2
        assert type(g["w"]) is np.ndarray and np.allclose(g["w"], np.outer(s, np.ones(3))) and np.allclose(g["b"], s)
        J = di.jacobian(parts, di.AutoTorch(), params)
        assert J["a"]["w"].shape == (2, 3, 2, 3) and np.allclose(J["b"]["b"], 2 * np.eye(2))
        assert np.allclose(J["a"]["b"], 0) and np.allclose(J["b"]["w"], 0)


@pytest.mark.parametrize("engine", ["tape", "finitediff", "autograd", "torch", "jax"])
def test_constant_trees_reach_f_in_the_engines_arrays(engine):
    """A Constant holding a dict with a tuple of NumPy arrays: its leaves reach f as the engine's arrays,
    and a preparation made with one value is right with another."""
    if engine == "tape":
        backend, xp = di.AutoTape(), np
    elif engine == "finitediff":
        backend, xp = di.AutoFiniteDiff(), np
    elif engine == "autograd":
        backend, xp = di.AutoAutograd(), pytest.importorskip("autograd.numpy")
    elif engine == "torch":
        backend, xp = di.AutoTorch(), pytest.importorskip("torch")
    else:
        jax = pytest.importorskip("jax")
        jax.config.update("jax_enable_x64", True)
        backend, xp = di.AutoJAX(), pytest.importorskip("jax.numpy")

    def f(x, d):
        return xp.sum(xp.sin(d["A"] @ x + d["b"][0] * d["b"][1]))

    def exact(x, d):
        return d["A"].T @ np.cos(d["A"] @ x + d["b"][0] * d["b"][1])

    x = np.array([0.1, 0.2, 0.3])
    first = {"A": np.arange(6.0).reshape(2, 3) / 4, "b": (np.ones(2), 2.0)}
    second = {"A": np.arange(6.0).reshape(2, 3) / 2, "b": (np.ones(2) * 3, 1.0)}
    prep = di.prepare_gradient(f, backend, x, di.Constant(first))
    for d in (second, first, second):
        assert np.allclose(prep.gradient(x, di.Constant(d)), exact(x, d), atol=1e-6)


def test_torch_takes_numpy_trees_of_tangents_and_contexts_like_flat_arrays():
    """NumPy leaves for torch: x, cotangent trees and Constant contexts reach f as tensors, results come
    back as NumPy trees; with has_aux too (aux evaluated on f's arguments as torch gives them)."""
    torch = pytest.importorskip("torch")
    P = {"w": np.arange(6.0).reshape(2, 3) / 10, "b": np.array([0.1, -0.2])}
    D = np.array([1.0, 2.0, -1.0])

    def g(P):
        return {"a": torch.tanh(P["w"] @ torch.ones(3, dtype=torch.float64) + P["b"]), "c": P["b"] ** 2}

    ty = {"a": np.array([1.0, 2.0]), "c": np.array([3.0, -1.0])}
    sech2 = 1 - np.tanh(P["w"].sum(1) + P["b"]) ** 2
    expected = {"w": np.outer(ty["a"] * sech2, np.ones(3)), "b": ty["a"] * sech2 + 2 * P["b"] * ty["c"]}
    for _ in range(2):
        got = di.pullback(g, di.AutoTorch(), P, ty)
        assert_tree_close(got, expected)
        assert all(isinstance(v, np.ndarray) for v in got.values())

    def f(P, D):
        assert isinstance(D, torch.Tensor) and isinstance(P["w"], torch.Tensor)
        loss = torch.sum(P["w"] @ D) + torch.sum(P["b"])
        return loss, {"loss": loss.detach(), "D": D}

    (value, aux), grad = di.value_and_gradient(f, di.AutoTorch(), P, di.Constant(D), has_aux=True)
    plain_value, plain_grad = di.value_and_gradient(lambda P, D: f(P, D)[0], di.AutoTorch(), P, di.Constant(D))
    assert value == pytest.approx(plain_value) and value == pytest.approx(np.sum(P["w"] @ D) + np.sum(P["b"]))
    assert_tree_close(grad, {"w": np.tile(D, (2, 1)), "b": np.ones(2)})
    assert_tree_close(grad, plain_grad)
    assert isinstance(aux["D"], np.ndarray) and np.array_equal(aux["D"], D)
    prep = di.prepare_gradient(f, di.AutoTorch(), P, di.Constant(D), has_aux=True)
    for _ in range(2):
        g2, aux2 = prep.gradient(P, di.Constant(2 * D))
        assert_tree_close(g2, {"w": np.tile(2 * D, (2, 1)), "b": np.ones(2)})
        assert np.array_equal(aux2["D"], 2 * D)
