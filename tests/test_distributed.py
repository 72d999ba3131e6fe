"""`AutoDistributed`: Jacobians, Hessians and batched products spread over an executor's workers, equal
(bit for bit) to the dense backend's serial calls; failures name their chunk; bad arguments say so."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import threading
import time

import numpy as np
import pytest

import diface as di
from diface._distributed import _worker

X = np.linspace(0.1, 1.0, 9)
TANGENTS = tuple(np.random.default_rng(0).standard_normal((7, 9)))


def f(x):  # module level: a process pool pickles it by reference
    return np.sin(x) * x[::-1] + np.sum(x**2)


def g(x):
    return np.sum(np.sin(x) * x[::-1] ** 2)


def stencil(x):
    return x[1:] ** 2 - np.sin(x[:-1])


def fails_far_right(x):
    if x[-1] > 5.0:
        raise ValueError("x[-1] out of range")
    return np.sin(x)


@pytest.fixture(scope="module")
def threads():
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        yield pool


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax.numpy


def _prepared_twice(prep_fn, call, x2):
    """The prepared operator at the preparation point and twice at another one."""
    return [call(prep_fn, x2), call(prep_fn, x2)]


# The tape keeps tangents symbolic in batches of 4 or more (written out below), so a product may differ
# in the last bit between batches of different sizes (and its own Jacobian program seeds fixed identity
# rows). So on the tape the reference is the dense backend's serial calls on the same chunks (the same
# kernels, the same shapes): equal bit for bit; the one-batch serial call agrees to rounding. JAX's and
# torch's Jacobians, Hessians and first-order products do not depend on the batch: there the reference is
# the one serial call.


def _chunked(op, fn, dense, x0, x, tangents, bounds):
    """The dense backend's prepared `op` of each chunk of `tangents`, concatenated."""
    out = []
    for lo, hi in bounds:
        prep = getattr(di, f"prepare_{op}")(fn, dense, x0, tangents[lo:hi])
        out.extend(getattr(prep, op)(x, tangents[lo:hi]))
    return out


def _bounds(n, size):
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("chunk", [None, 2])
def test_tape_jacobian(threads, mode, chunk):
    dense = di.AutoTape(mode=mode)
    prep = di.prepare_jacobian(f, di.AutoDistributed(dense, threads, chunk), X)
    basis, op = tuple(np.eye(9)), "pushforward" if mode == "forward" else "pullback"
    for x in (X, X + 0.3, X + 0.3):
        rows = np.stack(_chunked(op, f, dense, X, x, basis, _bounds(9, chunk or 3)))
        got = prep.jacobian(x)
        assert np.array_equal(got, rows.T if mode == "forward" else rows)
        np.testing.assert_allclose(got, di.jacobian(f, dense, x), rtol=1e-15, atol=1e-15)
    value, jac = prep.value_and_jacobian(X + 1)
    assert np.array_equal(value, f(X + 1)) and np.array_equal(jac, prep.jacobian(X + 1))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_tape_hessian(threads, mode):
    dense = di.AutoTape(mode=mode)
    prep = di.prepare_hessian(g, di.AutoDistributed(dense, threads, chunk=4), X)
    for x in (X, X + 0.3, X + 0.3):
        rows = np.stack(_chunked("hvp", g, dense, X, x, tuple(np.eye(9)), _bounds(9, 4)))
        got = prep.hessian(x)
        assert np.array_equal(got, rows.T if mode == "forward" else rows)
        np.testing.assert_allclose(got, di.hessian(g, dense, x), rtol=1e-15, atol=1e-15)
    value, gradient, hess = prep.value_gradient_and_hessian(X - 0.2)
    assert value == g(X - 0.2) and np.array_equal(hess, prep.hessian(X - 0.2))
    assert np.array_equal(gradient, di.prepare_gradient(g, dense, X).gradient(X - 0.2))


@pytest.mark.parametrize("op", ["pushforward", "pullback", "hvp"])
def test_tape_batched_products(threads, op):
    fn = g if op == "hvp" else f
    b, dense = di.AutoDistributed(di.AutoTape(), threads, chunk=3), di.AutoTape()
    prep = getattr(di, f"prepare_{op}")(fn, b, X, TANGENTS)
    for x in (X, X + 0.3, X + 0.3):
        got = getattr(prep, op)(x, TANGENTS)
        want = _chunked(op, fn, dense, X, x, TANGENTS, _bounds(7, 3))
        assert len(got) == 7 and all(np.array_equal(a, w) for a, w in zip(got, want, strict=True))
        one_batch = getattr(di, op)(fn, dense, x, TANGENTS)
        assert all(np.allclose(a, w, rtol=1e-14, atol=1e-14) for a, w in zip(got, one_batch, strict=True))


def test_tape_autosparse_sends_colors_to_the_workers(threads, monkeypatch):
    chunks = []
    run = _worker.Work._run
    monkeypatch.setattr(
        _worker.Work, "_run", lambda work, chunk: chunks.append((chunk.lo, chunk.hi)) or run(work, chunk)
    )
    x = np.linspace(0.0, 1.0, 40)
    sparse = di.prepare_jacobian(stencil, di.AutoSparse(di.AutoDistributed(di.AutoTape(), threads, chunk=1)), x)
    serial = di.prepare_jacobian(stencil, di.AutoSparse(di.AutoTape()), x)
    for xx in (x, x + 1, x + 1):
        assert np.array_equal(sparse.jacobian(xx).toarray(), serial.jacobian(xx).toarray())
    assert sparse.ncolors == 2 and sorted(set(chunks)) == [(0, 1), (1, 2)]  # one color per task
    hs = di.prepare_hessian(g, di.AutoSparse(di.AutoDistributed(di.AutoTape(), threads)), X)
    hd = di.prepare_hessian(g, di.AutoSparse(di.AutoTape()), X)
    assert np.array_equal(hs.hessian(X + 1).toarray(), hd.hessian(X + 1).toarray())


def test_jax():
    jnp = _jax()
    fj = lambda x: jnp.sin(x) * x[::-1] + jnp.sum(x**2)
    gj = lambda x: jnp.sum(jnp.sin(x) * x[::-1] ** 2)
    x = jnp.asarray(X)
    # two threads: every worker thread compiles its own programs
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        b = di.AutoDistributed(di.AutoJAX(mode="reverse"), pool)
        prep, serial = di.prepare_jacobian(fj, b, x), di.prepare_jacobian(fj, di.AutoJAX(mode="reverse"), x)
        for xx in (x, x + 0.3, x + 0.3):
            got = prep.jacobian(xx)
            assert type(got) is type(xx) and np.array_equal(got, serial.jacobian(xx))
        prep, serial = di.prepare_hessian(gj, b, x), di.prepare_hessian(gj, di.AutoJAX(), x)
        assert np.array_equal(prep.hessian(x + 0.3), serial.hessian(x + 0.3))
        ts = tuple(jnp.asarray(TANGENTS))
        prep, serial = di.prepare_pushforward(fj, b, x, ts), di.prepare_pushforward(fj, di.AutoJAX(), x, ts)
        got, want = prep.pushforward(x + 0.3, ts), serial.pushforward(x + 0.3, ts)
        assert all(np.array_equal(a, w) for a, w in zip(got, want, strict=True))
        sj = lambda x: x[1:] ** 2 - jnp.sin(x[:-1])
        xs = jnp.linspace(0.0, 1.0, 30)
        sparse = di.prepare_jacobian(sj, di.AutoSparse(b), xs)
        serial = di.prepare_jacobian(sj, di.AutoSparse(di.AutoJAX(mode="reverse")), xs)
        assert np.array_equal(sparse.jacobian(xs + 1).todense(), serial.jacobian(xs + 1).todense())


def test_torch(threads):
    torch = pytest.importorskip("torch")
    ft = lambda x: torch.sin(x) * x.flip(0) + torch.sum(x**2)
    gt = lambda x: torch.sum(torch.sin(x) * x.flip(0) ** 2)
    x, ts = torch.tensor(X), tuple(torch.tensor(np.stack(TANGENTS)))
    dense = di.AutoTorch(mode="forward")
    b = di.AutoDistributed(dense, threads)
    got = di.prepare_jacobian(ft, b, x).jacobian(x + 0.3)
    assert isinstance(got, torch.Tensor) and torch.equal(got, di.prepare_jacobian(ft, dense, x).jacobian(x + 0.3))
    assert torch.equal(di.prepare_hessian(gt, b, x).hessian(x + 0.3), di.prepare_hessian(gt, dense, x).hessian(x + 0.3))
    for op, fn in (("pullback", ft), ("hvp", gt)):
        prep, serial = getattr(di, f"prepare_{op}")(fn, b, x, ts), getattr(di, f"prepare_{op}")(fn, dense, x, ts)
        got, want = getattr(prep, op)(x + 0.3, ts), getattr(serial, op)(x + 0.3, ts)
        assert all(torch.equal(a, w) for a, w in zip(got, want, strict=True))


def test_failure_names_the_chunk_and_carries_the_traceback(threads):
    prep = di.prepare_jacobian(fails_far_right, di.AutoDistributed(di.AutoTape(mode="forward"), threads, 3), X)
    with pytest.raises(di.EvaluationError, match=r"chunk 1 of 3 \(pushforward along tangents 0 to 2 of 9\)") as info:
        prep.jacobian(X + 10)
    assert isinstance(info.value.__cause__, ValueError)
    assert "fails_far_right" in info.value.worker_traceback


def test_process_pool():
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        b = di.AutoDistributed(di.AutoTape(mode="reverse"), pool)
        prep = di.prepare_jacobian(f, b, X)
        serial = di.prepare_jacobian(f, di.AutoTape(mode="reverse"), X)
        for x in (X, X + 0.3, X + 0.3):
            assert np.array_equal(prep.jacobian(x), serial.jacobian(x))
        prep = di.prepare_jacobian(fails_far_right, di.AutoDistributed(di.AutoTape(mode="forward"), pool, 5), X)
        with pytest.raises(di.EvaluationError, match=r"chunk 1 of 2 .* raised ValueError") as info:
            prep.jacobian(X + 10)
        assert "traceback in the worker" in "".join(getattr(info.value.__cause__, "__notes__", []))
        with pytest.raises(di.ArgumentError, match=r"picklable.*module level"):
            di.jacobian(lambda x: np.sin(x), b, X)


def test_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    start = time.perf_counter()
    try:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    except Exception as e:  # pragma: no cover - a machine without sockets
        pytest.skip(f"no Dask LocalCluster here: {e}")
    with cluster, distributed.Client(cluster) as client:
        if time.perf_counter() - start > 10:  # pragma: no cover
            pytest.skip("the Dask cluster took too long to start")
        b = di.AutoDistributed(di.AutoTape(mode="forward"), client)
        closure = lambda x: np.cos(x) * X  # Dask pickles closures (cloudpickle)
        prep = di.prepare_jacobian(closure, b, X)
        serial = di.prepare_jacobian(closure, di.AutoTape(mode="forward"), X)
        for x in (X, X + 0.3, X + 0.3):
            assert np.array_equal(prep.jacobian(x), serial.jacobian(x))
        prep = di.prepare_jacobian(fails_far_right, b, X)
        with pytest.raises(di.EvaluationError, match="chunk 1 of 2"):
            prep.jacobian(X + 10)
        lock = threading.Lock()
        with pytest.raises(di.ArgumentError, match="picklable"):
            di.jacobian(lambda x: np.sin(x) if lock else x, b, X)


def test_bad_arguments():
    with pytest.raises(di.ArgumentError, match="executor must be"):
        di.AutoDistributed(di.AutoTape(), object())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        for chunk in (0, -1, 2.5, True):
            with pytest.raises(di.ArgumentError, match="chunk must be a positive integer"):
                di.AutoDistributed(di.AutoTape(), pool, chunk)
        with pytest.raises(di.ArgumentError, match="dense must be"):
            di.AutoDistributed("tape", pool)
        with pytest.raises(di.ArgumentError, match=r"AutoSparse\(di.AutoDistributed"):
            di.AutoDistributed(di.AutoSparse(di.AutoTape()), pool)
        with pytest.raises(di.NotSupportedError, match="in-place"):
            di.jacobian(lambda y, x: None, di.AutoDistributed(di.AutoTape(), pool), X, y=np.zeros(9))


def test_other_operators_are_the_dense_backends(threads):
    b = di.AutoDistributed(di.AutoTape(), threads)
    assert np.array_equal(di.gradient(g, b, X), di.gradient(g, di.AutoTape(), X))
    assert b.native_modes == di.AutoTape.native_modes and b.label().startswith("AutoDistributed(AutoTape()")


def test_composition_matrix_on_the_tape(threads, monkeypatch):
    """Every operator, trees with a Constant context, has_aux and complex data, through AutoDistributed and
    AutoSparse(AutoDistributed) (the matrix of diface.testing with these compositions in place of its own)."""
    from diface.testing import _compositions

    compositions = {
        "AutoDistributed": lambda e: di.AutoDistributed(e, threads),
        "AutoSparse(AutoDistributed)": lambda e: di.AutoSparse(di.AutoDistributed(e, threads)),
    }
    monkeypatch.setattr(_compositions, "COMPOSITIONS", compositions)
    outcomes = [_compositions.check_cell(cell) for cell in _compositions.composition_cells(["tape"])]
    assert len(outcomes) == 78
    defects = [(o.cell.label(), o.detail[:200]) for o in outcomes if o.status not in ("pass", "refused")]
    assert defects == []
    refused = [o.cell for o in outcomes if o.status == "refused"]
    assert all(c.operator == "hessian" and c.data == "complex" for c in refused)  # the documented refusal
