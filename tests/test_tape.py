"""AutoTape: the test kit, NumPy coverage against finite differences, guards, unknown operations,
constant pruning, DAG accumulation, ties, contexts, views and in-place writes, second order."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import diface as di
from diface.backends.tape.recording.record import record
from diface.backends.tape.tracing.tracer import TapeArray
from diface.testing import default_scenarios, engines, structural_scenarios, test_differentiation

TAPE = di.AutoTape()
FD = di.AutoFiniteDiff()


def test_the_whole_test_kit_passes():
    report = test_differentiation([TAPE], default_scenarios() + structural_scenarios())
    assert report.ok and {r.status for r in report.rows} == {"pass"}


def test_backend_basics():
    assert TAPE == di.AutoTape() and hash(TAPE) == hash(di.AutoTape()) and repr(TAPE) == "AutoTape(mode='auto')"
    assert di.check_available(TAPE) and di.check_inplace(TAPE)
    assert TAPE.native_modes == {"forward", "reverse"} and engines()["tape"].backend is di.AutoTape
    assert issubclass(di.TapeMismatchError, di.PreparationMismatchError)
    with pytest.raises(di.ArgumentError, match="NumPy arrays"):
        di.gradient(np.sum, TAPE, "x")


# -- coverage: every NumPy function the tape records, against central differences -------------------
X = np.array([[0.3, -0.7, 1.1, 0.5], [0.9, 0.2, -0.4, 1.3], [-1.2, 0.6, 0.8, -0.1]])
P = np.abs(X) + 0.5
M = np.arange(12.0).reshape(4, 3) / 10


def _copyto(x):
    y = np.zeros_like(x)
    np.copyto(y, x * 2)
    np.copyto(y, x**2, where=x > 0)
    return y


def _zeros_then_set(x):
    y = np.zeros_like(x)
    y[0] = x[1] * 2
    y[1:, 1:3] = np.sin(x[1:, :2])
    y[2, 3] = x[0, 0]
    return y


def _add_at(x):
    y = np.zeros_like(x[0])
    np.add.at(y, [0, 0, 3], x[1, :3])
    return y * x[0]


def _set_fancy(x):
    y = x.copy()
    y[[0, 2], [1, 3]] = x[1, :2] ** 2
    return y


def _set_mask(x):
    y = x * 1.0
    y[x < 0] = 0.0
    return y


def _zeros_like_keyword(x):
    y = np.zeros((3, 4), like=x)
    y[:, 0] = x[:, 1]
    return y


def _in_place(x):
    y = x * 1.0
    y += x
    y *= x
    y -= 1
    y /= 2
    y **= 2
    v = y[0]
    v += 5 * x[0]  # writes through the view into y
    return y


def _spd(x):
    """A well-conditioned 3 x 3 matrix made from x."""
    return x[:, :3] @ x[:, :3].T + 2.0 * np.eye(3) + x[:, 3:] * x[:, 3:].T


COVERAGE = {
    "sum axis keepdims": lambda x: np.sum(x, axis=1, keepdims=True) * x,
    "sum negative axis": lambda x: x.sum(axis=-2),
    "mean over axes": lambda x: np.mean(x, axis=(0, 1)),
    "prod axis": lambda x: np.prod(x, axis=0),
    "prod": lambda x: np.prod(x),
    "max axis": lambda x: np.max(x, axis=1),
    "amin keepdims": lambda x: np.amin(x, axis=0, keepdims=True) + x,
    "max min methods": lambda x: x.max() * x.min(axis=1),
    "initial": lambda x: np.sum(x, initial=1.0) + np.max(x, axis=0, initial=0.5) + np.prod(x, initial=2.0),
    "cumsum": lambda x: np.cumsum(x, axis=1),
    "cumsum flat": lambda x: np.cumsum(x),
    "var std": lambda x: np.var(x, axis=0) + np.std(x, axis=1, ddof=1).sum(),
    "average": lambda x: np.average(x, axis=1, weights=[1.0, 2.0, 3.0, 4.0]),
    "norm": lambda x: np.linalg.norm(x) + np.linalg.norm(x, axis=0).sum() + np.linalg.norm(x[0], 1),
    "ptp": lambda x: np.ptp(x, axis=0),
    "nansum": lambda x: np.nansum(x * x, axis=0),
    "matmul": lambda x: x @ M,
    "matmul 1-d": lambda x: x[0] @ M + M[:3] @ x[:, 0],
    "matmul constant left": lambda x: M.T @ x.T,
    "dot 1-d": lambda x: np.dot(x[0], x[1]),
    "dot 2-d": lambda x: np.dot(x, M),
    "dot 3-d": lambda x: np.dot(x.reshape(3, 2, 2), M[:2]),
    "vdot": lambda x: np.vdot(x, x),
    "inner": lambda x: np.inner(x, x),
    "outer": lambda x: np.outer(x[0], x[1]),
    "tensordot": lambda x: np.tensordot(x, M, axes=([1], [0])),
    "tensordot 2": lambda x: np.tensordot(x, x, axes=2),
    "einsum": lambda x: np.einsum("ij,jk->ik", x, M),
    "einsum implicit": lambda x: np.einsum("ij,kj", x, x),
    "einsum ellipsis": lambda x: np.einsum("...j,jk->...k", x, M),
    "einsum total": lambda x: np.einsum("ij->", x),
    "einsum batch": lambda x: np.einsum("bi,bj->bij", x, x),
    "trace": lambda x: np.trace(x) + np.trace(x, offset=1),
    "diagonal": lambda x: np.diagonal(x, 1),
    "diag": lambda x: np.diag(x[0]) @ x.T + np.diag(x),
    "tril triu": lambda x: np.tril(x) + np.triu(x, 1) * 2,
    "roll": lambda x: np.roll(x, 1, axis=1) * np.roll(x, -2),
    "tile": lambda x: np.tile(x[0], (2, 2)),
    "repeat": lambda x: np.repeat(x, 2, axis=0),
    "take": lambda x: np.take(x, [2, 0, 2], axis=1),
    "take flat": lambda x: np.take(x, [5, 5, 1]),
    "take_along_axis": lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1),
    "sort": lambda x: np.sort(x, axis=0),
    "diff": lambda x: np.diff(x, axis=1),
    "diff twice": lambda x: np.diff(x[0], n=2),
    "pad": lambda x: np.pad(x, ((1, 0), (0, 2))),
    "split": lambda x: np.split(x, 2, axis=1)[1] * np.array_split(x, 3)[0].sum(),
    "hstack vstack": lambda x: np.hstack([x, x]) + np.vstack([x[:, :2], x[:, 2:]]).sum(),
    "column_stack": lambda x: np.column_stack([x[0], x[1]]),
    "append": lambda x: np.append(x, x[0]),
    "flip": lambda x: np.flip(x) + np.fliplr(x) + np.flipud(x),
    "moveaxis": lambda x: np.moveaxis(x.reshape(3, 2, 2), 0, -1),
    "swapaxes": lambda x: np.swapaxes(x, 0, 1),
    "squeeze expand_dims": lambda x: np.squeeze(np.expand_dims(x, (0, 2))),
    "atleast": lambda x: np.atleast_2d(x[0, 0]) * np.atleast_3d(x).sum(),
    "broadcast_to": lambda x: np.broadcast_to(x[0], (3, 4)) * x,
    "broadcast_arrays": lambda x: np.broadcast_arrays(x[:, :1], x[:1])[0] * 2,
    "where": lambda x: np.where(x > 0, x**2, np.sin(x)),
    "where integer condition": lambda x: np.where(np.array([[1, 0, 1, 0]]), x, -x),
    "clip": lambda x: np.clip(x, -0.5, 0.65) + x.clip(min=0.0),
    "clip traced bounds": lambda x: np.clip(x[0], x[1], x[1] + 0.5),
    "copyto": _copyto,
    "full_like": lambda x: np.full_like(x, 2.0) * x + np.full_like(x, x[0, 0]),
    "zeros_like then set": _zeros_then_set,
    "add.at": _add_at,
    "set fancy index": _set_fancy,
    "set mask": _set_mask,
    "zeros(like=)": _zeros_like_keyword,
    "in place": _in_place,
    "power": lambda x: np.power(P, x) + P**1.5 + x**3 + 2.0**x,
    "arctan2 hypot": lambda x: np.arctan2(x, 2.0) + np.hypot(x, 1.0) + np.arctan2(1.5, x + 3),
    "logaddexp": lambda x: np.logaddexp(x, 0.5 * x) + np.logaddexp2(x, 1.0),
    "exp log family": lambda x: (
        np.exp2(x) + np.expm1(x) + np.log(P * (1 + x * x)) + np.log2(P) + np.log10(P + x * x) + np.log1p(P)
        + np.cbrt(P + x) + np.reciprocal(P + x * x)
    ),
    "trigonometric": lambda x: (
        np.tan(x) + np.arcsin(x / 2) + np.arccos(x / 2) + np.arcsinh(x) + np.arccosh(P + x * x + 1)
        + np.arctanh(x / 2) + np.sinh(x) + np.cosh(x)
    ),
    "abs sign": lambda x: np.abs(x) * np.sign(x) + np.fabs(x),
    "degrees": lambda x: np.deg2rad(x) + np.rad2deg(x) + np.radians(x) + np.degrees(x),
    "fmax fmin": lambda x: np.fmax(x, 0.15) + np.fmin(x, 0.25),
    "remainder": lambda x: np.remainder(x, 0.37) + np.fmod(x, 0.37) + x % 0.37,
    "divmod": lambda x: divmod(x, 0.37)[1],
    "copysign": lambda x: np.copysign(x, -1.0) + np.copysign(1.5, x),
    "float_power": lambda x: np.float_power(P, 2.5),
    "ldexp": lambda x: np.ldexp(x, 3),
    "arithmetic ufuncs": lambda x: np.square(x) + np.negative(x) + np.positive(x) + np.conjugate(x),
    "iteration": lambda x: sum(row for row in x),
    "asarray(like=)": lambda x: np.asarray([x[0, 0], x[1, 1]], like=x) * 1.0,
    "mean method": lambda x: x.mean(axis=0) + x.T.mean(),
    "ravel flatten": lambda x: x.ravel() * x.flatten(),
    "reshape -1": lambda x: x.reshape(-1, 2) @ np.ones(2),
    "transpose axes": lambda x: x.reshape(3, 2, 2).transpose(2, 0, 1),
    "newaxis": lambda x: x[:, None, :] * x[None, :, :],
    "ellipsis": lambda x: x[..., 1] + x[1, ...].sum(),
    "negative step": lambda x: x[::-2, 1::2],
    "fancy 2-d": lambda x: x[[0, 2], [1, 3]] + x[[[0], [2]], [1, 3]].sum(),
    "fancy and slice": lambda x: x[1:, [0, 0, 3]],
    "fancy not adjacent": lambda x: x.reshape(3, 2, 2)[[0, 2], :, [1, 0]],
    "literal mask": lambda x: x[np.array([True, False, True])],
    "traced mask": lambda x: np.sum(x[x > 0.25] ** 2),
    "argmax index": lambda x: x[np.arange(3), np.argmax(x, axis=1)],
    "nonzero": lambda x: x[np.nonzero(x > 0)],
    "ufunc reduce": lambda x: (
        np.add.reduce(x, axis=1) + np.multiply.reduce(x).sum() + np.maximum.reduce(x, axis=0).sum()
    ),
    "ufunc accumulate": lambda x: np.add.accumulate(x, axis=1),
    "ufunc outer": lambda x: np.multiply.outer(x[0], x[1]),
    "inv": lambda x: np.linalg.inv(_spd(x)),
    "solve vector": lambda x: np.linalg.solve(_spd(x), x[:, 3]),
    "solve matrix": lambda x: np.linalg.solve(_spd(x), x),
    "solve stacked": lambda x: np.linalg.solve(np.stack([_spd(x), _spd(x) @ _spd(x)]), x[:, :2]),
    "det": lambda x: np.linalg.det(_spd(x)) + np.linalg.det(np.stack([_spd(x), -_spd(x)])).sum(),
    "slogdet": lambda x: np.linalg.slogdet(-_spd(x)).logabsdet * np.linalg.slogdet(_spd(x))[0],
}  # fmt: skip


@pytest.mark.parametrize("name", list(COVERAGE))
def test_numpy_coverage_against_finite_differences(name):
    f = COVERAGE[name]
    want = di.jacobian(f, FD, X)
    np.testing.assert_allclose(di.jacobian(f, TAPE, X), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(di.prepare_jacobian(f, TAPE, X + 0.01).jacobian(X), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(COVERAGE))
def test_numpy_coverage_second_order(name):
    """The recorded reverse sweep of every operation, differentiated again (forward over reverse),
    against finite differences of the tape's gradient."""
    f = COVERAGE[name]
    w = np.cos(np.arange(np.size(f(X))) + 1.0).reshape(np.shape(f(X)))

    def g(x):
        return np.sum(np.sin(f(x)) * w)

    want = di.hessian(g, di.SecondOrder(FD, TAPE), X)
    np.testing.assert_allclose(di.prepare_hessian(g, TAPE, X + 0.01).hessian(X), want, rtol=1e-5, atol=1e-5)


# -- preparation: recorded once, replayed without calling f --------------------------------------------
class Counted:
    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, *args):
        self.calls += 1
        return self.f(*args)


@pytest.mark.parametrize("op", ["gradient", "jacobian", "hessian", "hvp", "pullback", "pushforward"])
def test_prepared_calls_do_not_call_f(op):
    f = Counted(lambda x: np.sum(np.sin(x) * x**2))
    x = np.array([0.1, 0.5, -0.3])
    extra = () if op in ("gradient", "jacobian", "hessian") else ((np.ones(3),) if op != "pullback" else (1.0,))
    prep = getattr(di, f"prepare_{op}")(f, TAPE, x, *extra)
    before = f.calls
    for k in range(3):
        getattr(prep, op)(x + k, *extra)
    assert f.calls == before


def test_batched_tangents_run_in_one_sweep():
    f = lambda x: np.tanh(x) * x[::-1]
    x = np.array([0.3, -0.2, 0.9, 1.4])
    ts = tuple(np.eye(4))
    prep = di.prepare_pushforward(f, TAPE, x, ts)
    prep.pushforward(x, ts)
    assert list(prep.kernel.run.__self__.replays._local.replay.sweeps) == [("forward", 4, None)]
    np.testing.assert_allclose(np.stack(prep.pushforward(x, ts), axis=1), di.jacobian(f, TAPE, x), rtol=1e-14)
    back = di.prepare_pullback(f, TAPE, x, ts)
    np.testing.assert_allclose(np.stack(back.pullback(x, ts)), di.jacobian(f, TAPE, x), rtol=1e-14)


def test_float32_stays_float32():
    x = np.array([0.5, 1.5, -0.25], dtype=np.float32)
    f = lambda x: np.sum(np.exp(x) * 2.0)
    for g in (di.gradient(f, TAPE, x), di.prepare_gradient(f, TAPE, x).gradient(x)):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, 2 * np.exp(x), rtol=1e-6)


def test_scalar_input_operators():
    f = lambda x: np.stack([np.sin(x) * x, np.exp(2 * x)])
    x = 0.4
    d, d2 = di.value_derivative_and_second_derivative(f, TAPE, x)[1:]
    np.testing.assert_allclose(d, [np.cos(x) * x + np.sin(x), 2 * np.exp(2 * x)], rtol=1e-14)
    np.testing.assert_allclose(d2, [2 * np.cos(x) - x * np.sin(x), 4 * np.exp(2 * x)], rtol=1e-14)
    prep = di.prepare_second_derivative(f, TAPE, 1.0)
    np.testing.assert_allclose(prep.second_derivative(x), d2, rtol=1e-14)


def test_hessian_forward_over_reverse():
    a = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 3.0]])
    f = lambda x: 0.5 * x @ a @ x + np.sum(x**4)
    x = np.array([0.2, -0.1, 0.7])
    h = a + np.diag(12 * x**2)
    np.testing.assert_allclose(di.hessian(f, TAPE, x), h, rtol=1e-14)
    np.testing.assert_allclose(di.prepare_hessian(f, TAPE, np.zeros(3)).hessian(x), h, rtol=1e-14)
    v = (np.ones(3), x)
    g, hv = di.prepare_hvp(f, TAPE, np.zeros(3), v).gradient_and_hvp(x, v)
    np.testing.assert_allclose(g, a @ x + 4 * x**3, rtol=1e-14)
    np.testing.assert_allclose(hv, (h @ v[0], h @ v[1]), rtol=1e-14)


def test_tape_outer_needs_a_tape_inner():
    with pytest.raises(di.NotSupportedError, match="AutoTape inner backend"):
        di.hessian(lambda x: np.sum(x**3), di.SecondOrder(TAPE, FD), np.ones(2))
    h = di.hessian(lambda x: np.sum(x**3), di.SecondOrder(FD, TAPE), np.ones(2))
    np.testing.assert_allclose(h, 6 * np.eye(2), rtol=1e-6)


# -- guards ------------------------------------------------------------------------------------------------
def _branchy(x):
    if x[0] > 0:
        return np.sum(x**2)
    return np.sum(x**3)


def test_a_branch_is_a_guard():
    prep = di.prepare_gradient(_branchy, TAPE, np.array([1.0, 2.0]))
    np.testing.assert_allclose(prep.gradient(np.array([3.0, 1.0])), [6.0, 2.0])
    with pytest.raises(di.TapeMismatchError) as info:
        prep.gradient(np.array([-1.0, 2.0]))
    message = str(info.value)
    assert "test_tape.py" in message and "recorded" in message and "True" in message and "False" in message
    assert "unprepared call traces f again" in message
    np.testing.assert_allclose(di.gradient(_branchy, TAPE, np.array([-1.0, 2.0])), [3.0, 12.0])


def test_a_guard_fails_before_anything_is_written():
    def f(y, x):
        y[...] = x * 2 if x[0] > 0 else x

    y = np.full(2, 7.0)
    prep = di.prepare_jacobian(f, TAPE, np.ones(2), y=np.zeros(2))
    out = np.full((2, 2), 5.0)
    with pytest.raises(di.TapeMismatchError):
        prep.jacobian(-np.ones(2), y=y, out=out)
    assert np.all(y == 7.0) and np.all(out == 5.0)


def test_a_number_taken_out_keeps_its_derivative_or_raises():
    with pytest.raises(di.NotSupportedError, match=r"float\(\).*test_tape\.py:\d+.*drop its derivative"):
        di.gradient(lambda x: np.sum(x) * float(x[0]), TAPE, np.array([2.0, 1.0]))
    # math's functions, item() and tolist() keep it: the derivative flows
    f = lambda x: math.exp(x[0]) + x[1] * x.item(0) + sum(v**2 for v in x.tolist())
    x, x0 = np.array([0.3, 1.0, 2.0]), np.array([1.0, -1.0, 0.5])
    expected = np.array([math.exp(0.3) + 1.0 + 0.6, 0.3 + 2.0, 4.0])
    prep = di.prepare_gradient(f, TAPE, x0)
    for _ in range(2):
        np.testing.assert_allclose(prep.gradient(x), expected)
        np.testing.assert_allclose(di.gradient(f, TAPE, x), expected)
    # int() is a step function: derivative zero, guarded
    g = lambda x: x[1] * int(x[0])
    prep = di.prepare_gradient(g, TAPE, np.array([2.5, 1.0]))
    np.testing.assert_allclose(prep.gradient(np.array([2.2, 3.0])), [0.0, 2.0])
    with pytest.raises(di.TapeMismatchError, match="int"):
        prep.gradient(np.array([3.5, 1.0]))


def test_a_traced_value_can_be_printed_and_formatted(capsys):
    def f(x):
        loss = np.sum(x**2)
        print("loss %.2f" % loss, f"{loss:.2f}", "{:.1f}".format(loss), loss)  # noqa: UP031, UP032 (every way)
        return loss

    np.testing.assert_allclose(di.gradient(f, TAPE, np.array([1.0, 2.0])), [2.0, 4.0])
    assert "loss 5.00 5.00 5.0" in capsys.readouterr().out


def test_int_of_a_constant_is_a_silent_guard():
    def f(x, n):
        return np.sum(x[: int(n)] ** 2)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prep = di.prepare_gradient(f, TAPE, np.ones(3), di.Constant(np.array(2.0)))
        np.testing.assert_allclose(prep.gradient(np.ones(3), di.Constant(np.array(2.0))), [2.0, 2.0, 0.0])
    with pytest.raises(di.TapeMismatchError):
        prep.gradient(np.ones(3), di.Constant(np.array(1.0)))


def test_a_traced_mask_guards_its_count():
    f = lambda x: np.sum(x[x > 0] ** 2)
    prep = di.prepare_gradient(f, TAPE, np.array([1.0, -1.0, 2.0]))
    np.testing.assert_allclose(prep.gradient(np.array([-1.0, 3.0, 2.0])), [0.0, 6.0, 4.0])  # same count
    with pytest.raises(di.TapeMismatchError, match="mask"):
        prep.gradient(np.array([1.0, 1.0, 1.0]))


def test_where_needs_no_guard():
    f = lambda x: np.sum(np.where(x > 0, x**2, -x))
    prep = di.prepare_gradient(f, TAPE, np.array([1.0, -1.0]))
    np.testing.assert_allclose(prep.gradient(np.array([-2.0, 3.0])), [-1.0, 6.0])


# -- what the tape refuses -----------------------------------------------------------------------------------
def test_an_unknown_function_is_named():
    with pytest.raises(di.NotSupportedError, match=r"numpy\.linalg\.matrix_rank.*test_tape\.py:\d+"):
        di.gradient(lambda x: np.sum(np.linalg.matrix_rank(np.outer(x, x))), TAPE, np.ones(2))
    with pytest.raises(di.NotSupportedError, match=r"numpy\.frexp"):
        di.gradient(lambda x: np.sum(np.frexp(x)[0]), TAPE, np.ones(2))
    with pytest.raises(di.NotSupportedError, match=r"numpy\.add\.reduceat"):
        di.gradient(lambda x: np.sum(np.add.reduceat(x, [0, 1])), TAPE, np.ones(2))
    with pytest.raises(di.NotSupportedError, match=r"numpy\.exp with where= and no out=.*test_tape\.py:\d+"):
        di.gradient(lambda x: np.sum(np.exp(x, where=x > 0)), TAPE, np.ones(2))


def test_values_never_leave_the_tape_silently():
    # conversions of traced values stay traced, a dtype= cast included
    for convert in (np.asarray, np.array, np.asanyarray, np.ascontiguousarray, np.asfortranarray):
        np.testing.assert_allclose(di.gradient(lambda x, c=convert: np.sum(c(x) ** 2), TAPE, X[0]), 2 * X[0])
    np.testing.assert_allclose(di.gradient(lambda x: np.sum(np.asarray(x, dtype=float)), TAPE, np.ones(2)), [1, 1])
    # an integer cast is a constant: no derivative
    truncated = X[0].astype(int)
    np.testing.assert_allclose(di.gradient(lambda x: np.sum(x * np.asarray(x, dtype=int)), TAPE, X[0]), truncated)
    # a list holding traced values is stacked on the tape, a dtype= included: its derivative flows
    np.testing.assert_allclose(
        di.gradient(lambda x: np.sum(np.array([x[0], 2 * x[1]], dtype=float)), TAPE, X[0]), [1, 2, 0, 0]
    )

    outside = np.zeros(2)  # not made by f: it cannot hold traced values

    def store(x):
        out = outside.copy()
        out[0] = x[0] ** 2  # NumPy would call float(): refused
        return out.sum()

    with pytest.raises(ValueError) as info:
        di.gradient(store, TAPE, np.ones(2))
    assert isinstance(info.value.__cause__, di.NotSupportedError)

    def into_numpy(x):
        out = outside * 1.0
        np.multiply(x, 2.0, out=out)
        return out.sum()

    with pytest.raises(di.NotSupportedError, match="plain NumPy array"):
        di.gradient(into_numpy, TAPE, np.ones(2))


def test_a_traced_value_used_after_f_returned():
    kept = []
    di.gradient(lambda x: kept.append(x) or np.sum(x), TAPE, np.ones(2))
    with pytest.raises(di.NotSupportedError, match="after f returned"):
        kept[-1] + 1


# -- the tape as data ----------------------------------------------------------------------------------------
def test_nodes_are_explicit_and_constants_are_pruned():
    data = np.arange(3.0)

    def f(x, c):
        scale = np.exp(data).sum()  # literals only: folded into a constant, no node
        w = np.sin(c) * 2.0  # depends on a Constant only: replayed, not differentiated
        return np.sum(x * w) * scale

    rec = record(f, np.ones(3), (di.Constant(None),), (np.array([0.1, 0.2, 0.3]),), None)
    tape = rec.tape
    ops = [n.op for n in tape.nodes]
    assert ops == ["sin", "multiply", "multiply", "sum", "multiply"]
    sin = tape.nodes[0]
    assert sin.inputs == (tape.inputs[0][0],) and sin.params == {} and not tape.slots[sin.output].active
    assert tape.slots[tape.nodes[2].output].active
    reverse = [tape.nodes[k].op for k in tape.reverse_nodes()]
    assert reverse == ["multiply", "sum", "multiply"]  # sin and w's multiply are pruned
    scale = tape.nodes[4].inputs[1]
    assert tape.slots[scale].kind == "literal" and tape.values[scale] == pytest.approx(np.exp(data).sum())
    assert "sum" in tape.describe() and all(hasattr(n.prim, "jvp") and hasattr(n.prim, "vjp") for n in tape.nodes)


def test_gradients_of_a_dag_accumulate():
    def f(x):
        a = np.sin(x)
        b = a * x  # a and x each feed several nodes
        return np.sum(a * b + x * x + a)

    x = np.array([0.3, -1.1])
    want = np.cos(x) * (2 * np.sin(x) * x + 1) + np.sin(x) ** 2 + 2 * x
    np.testing.assert_allclose(di.gradient(f, TAPE, x), want, rtol=1e-14)
    np.testing.assert_allclose(di.prepare_gradient(f, TAPE, x).gradient(x), want, rtol=1e-14)
    np.testing.assert_allclose(di.gradient(lambda x: np.sum(x[[0, 0, 1, 0]]), TAPE, x), [3.0, 1.0])


def test_ties():
    """Documented choices at points where the derivative does not exist."""
    grad = lambda f, x: di.gradient(f, TAPE, np.array(x))
    np.testing.assert_allclose(grad(np.max, [1.0, 3.0, 3.0]), [0.0, 0.5, 0.5])  # split among the maxima
    np.testing.assert_allclose(grad(lambda x: np.min(x, axis=0).sum(), [[1.0, 2.0], [1.0, 0.0]]), [[0.5, 0], [0.5, 1]])
    np.testing.assert_allclose(grad(lambda x: np.maximum(x[0], x[1]), [2.0, 2.0]), [0.5, 0.5])
    np.testing.assert_allclose(grad(lambda x: np.sum(np.abs(x)), [0.0, -2.0]), [0.0, -1.0])
    np.testing.assert_allclose(grad(lambda x: np.sum(np.clip(x, 0.0, 1.0)), [0.0, 1.0, 2.0]), [1.0, 1.0, 0.0])
    np.testing.assert_allclose(grad(lambda x: np.sum(np.where(x > 0, x, 2 * x)), [0.0]), [2.0])


# -- contexts ----------------------------------------------------------------------------------------------------
def test_constants_are_inputs_of_the_tape():
    f = lambda x, a, w: a * np.sum(w * np.sin(x))
    x = np.array([0.2, 0.4])
    prep = di.prepare_gradient(f, TAPE, x, di.Constant(1.0), di.Constant(np.ones(2)))
    w = np.array([3.0, -1.0])
    np.testing.assert_allclose(prep.gradient(x, di.Constant(2.5), di.Constant(w)), 2.5 * w * np.cos(x))
    assert prep.kernel.run.__self__.rec.statics == []


def test_a_changed_static_constant_records_again():
    f = Counted(lambda x, n, mode: np.sum(x[:n] ** 2) if mode == "square" else np.sum(x[:n]))
    prep = di.prepare_gradient(f, TAPE, np.ones(3), di.Constant(2), di.Constant("square"))
    calls = f.calls
    np.testing.assert_allclose(prep.gradient(np.ones(3), di.Constant(2), di.Constant("square")), [2, 2, 0])
    assert f.calls == calls
    np.testing.assert_allclose(prep.gradient(np.ones(3), di.Constant(3), di.Constant("sum")), [1, 1, 1])
    assert f.calls == calls + 1


def test_a_constant_of_another_shape_records_again():
    f = lambda x, w: np.sum(x * np.sum(w))
    prep = di.prepare_gradient(f, TAPE, np.ones(2), di.Constant(np.ones(3)), strict=False)
    np.testing.assert_allclose(prep.gradient(np.ones(2), di.Constant(np.ones(5))), [5.0, 5.0])


def test_nested_constants():
    def f(x, params):
        w, (b, scale) = params["w"], params["rest"]
        return scale * np.sum(np.tanh(w @ x + b))

    params = {"w": np.eye(2), "rest": (np.zeros(2), 2.0)}
    prep = di.prepare_gradient(f, TAPE, np.zeros(2), di.Constant(params))
    other = {"w": 2 * np.eye(2), "rest": (np.ones(2), 3.0)}
    x = np.array([0.1, 0.2])
    np.testing.assert_allclose(prep.gradient(x, di.Constant(other)), di.gradient(f, FD, x, di.Constant(other)))


def test_caches_are_scratch():
    def f(x, buf):
        buf[:] = x**2
        buf[0] += x[1]
        return np.sum(np.sin(buf))

    x = np.array([0.5, 0.25])
    want = di.gradient(f, FD, x, di.Cache(np.zeros(2)))
    cache = np.full(2, np.nan)
    prep = di.prepare_gradient(f, TAPE, x, di.Cache(np.full(2, np.nan)))
    np.testing.assert_allclose(prep.gradient(x, di.Cache(cache)), want, rtol=1e-8)
    assert np.all(np.isnan(cache))  # replays never touch the caches passed in


# -- writes, views, in-place functions --------------------------------------------------------------------------------
def test_writes_follow_numpy_view_semantics():
    def f(x):
        y = x * 1.0
        v = y[1:]  # a view: writing into it writes into y
        v *= 2
        y[0] = y[0] ** 2
        r = y.reshape(3, 1)  # a view too
        r[2, 0] = 5.0
        c = y.copy()  # not a view
        c[1] = 0.0
        w = y[0]  # an element, not a view
        w += 100.0
        return y

    x = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(di.jacobian(f, TAPE, x), np.diag([1.0, 2.0, 0.0]))
    np.testing.assert_allclose(di.prepare_jacobian(f, TAPE, x).jacobian(x), np.diag([1.0, 2.0, 0.0]))
    with pytest.raises(ValueError, match="read-only"):
        di.gradient(lambda x: np.broadcast_to(x, (2, 2)).__setitem__(0, 1.0), TAPE, np.ones(2))


def test_in_place_function_with_partial_writes():
    def f(y, x):
        y[0] = np.sin(x[0])
        y[1:] = x[1:] * x[0]

    x = np.array([0.3, 2.0, -1.0])
    y = np.full(3, np.nan)
    prep = di.prepare_jacobian(f, TAPE, x, y=np.zeros(3))
    jac = prep.jacobian(x, y=y)
    np.testing.assert_allclose(y, [np.sin(0.3), 0.6, -0.3])
    np.testing.assert_allclose(jac, [[np.cos(0.3), 0, 0], [2.0, 0.3, 0], [-1.0, 0, 0.3]])


def test_tracer_looks_like_an_array():
    seen = {}

    def f(x):
        if isinstance(x, TapeArray):  # (the core also calls f once with x itself, for y's shape)
            seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype, len=len(x), T=x.T.shape)
            seen["repr"] = repr(x)
            seen["format"] = f"{x[0, 0]:.2f}"
        return np.sum(x)

    di.gradient(f, TAPE, np.ones((2, 3)))
    assert seen["shape"] == (2, 3) and seen["ndim"] == 2 and seen["size"] == 6 and seen["len"] == 2
    assert seen["T"] == (3, 2) and seen["dtype"] == np.float64 and "TapeArray" in seen["repr"]
    assert seen["format"] == "1.00"


def test_scipy_special_ufuncs():
    sp = pytest.importorskip("scipy.special")
    x = np.array([0.3, -0.7, 1.1, 0.5])
    p = np.abs(x) + 0.5

    def f(x):
        return (
            sp.expit(x) + sp.logit(sp.expit(x) * 0.5 + 0.2) + sp.erf(x) + sp.erfc(x) + sp.erfinv(x / 2)
            + sp.ndtr(x) + sp.log_ndtr(x) + sp.gammaln(p + x * x) + sp.xlogy(x, p) + sp.xlog1py(p, x * x)
        )  # fmt: skip

    np.testing.assert_allclose(di.jacobian(f, TAPE, x), di.jacobian(f, FD, x), rtol=1e-7, atol=1e-8)
    g = lambda x: np.sum(np.sin(f(x)))
    want = di.hessian(g, di.SecondOrder(FD, TAPE), x)
    np.testing.assert_allclose(di.hessian(g, TAPE, x), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        di.gradient(lambda x: np.sum(sp.digamma(p + x * x)), TAPE, x)[0], 0.6 * sp.polygamma(1, 0.89)
    )
    with pytest.raises(di.NotSupportedError, match=r"scipy\.special\.hyp2f1 .*test_tape\.py"):
        di.gradient(lambda x: np.sum(sp.hyp2f1(1.0, 2.0, 3.0, x)), TAPE, x)
