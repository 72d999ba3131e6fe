"""Every error of the table in docs/errors.md, with its types, raised before any buffer is touched."""

from __future__ import annotations

import numpy as np
import pytest
from toy_backends import NoInplace, Unavailable

import diface as di

b = di.AutoFiniteDiff()
x = np.array([1.0, 2.0, 3.0])
square_sum = lambda x: np.sum(x**2)
elementwise = lambda x: x**2


def inplace_square(y, x):
    y[...] = x**2


# -- the hierarchy ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (di.PreparationMismatchError, ValueError),
        (di.BackendUnavailableError, ImportError),
        (di.NotSupportedError, TypeError),
        (di.ShapeError, ValueError),
        (di.ArgumentError, TypeError),
        (di.ArgumentError, ValueError),
    ],
)
def test_every_error_is_a_diface_error_and_a_builtin(error, builtin):
    assert issubclass(error, di.DifaceError)
    assert issubclass(error, builtin)


# -- PreparationMismatchError ----------------------------------------------------------------------
def _mismatch(call) -> str:
    with pytest.raises(di.PreparationMismatchError) as info:
        call()
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_mismatch_shape_lists_every_argument():
    prep = di.prepare_gradient(square_sum, b, x)
    msg = _mismatch(lambda: di.gradient(square_sum, b, np.ones(4), prep=prep))
    assert "f                      matches" in msg
    assert "backend                matches" in msg
    assert "x                      differs: shape (3,) at preparation, (4,) now" in msg
    assert "prepare_gradient" in msg and "strict=False" in msg


def test_mismatch_dtype():
    prep = di.prepare_gradient(square_sum, b, x)
    msg = _mismatch(lambda: prep.gradient(x.astype(np.float32)))
    assert "dtype float64 at preparation, float32 now" in msg


def test_mismatch_function_and_backend():
    prep = di.prepare_gradient(square_sum, b, x)
    msg = _mismatch(lambda: di.gradient(lambda x: np.sum(x), b, x, prep=prep))
    assert "differs: another function" in msg
    msg = _mismatch(lambda: di.gradient(square_sum, di.AutoFiniteDiff("forward"), x, prep=prep))
    assert "backend                differs" in msg


def test_mismatch_array_type():
    prep = di.prepare_derivative(np.sin, b, 1.0)
    msg = _mismatch(lambda: di.derivative(np.sin, b, np.float32(1.0), prep=prep))
    assert "array type float at preparation, float32 now" in msg


def test_mismatch_tangent_context_and_y():
    scaled = lambda x, a: a * x**2
    prep = di.prepare_pushforward(scaled, b, x, x, di.Constant(1.0))
    msg = _mismatch(lambda: prep.pushforward(x, np.ones(4), di.Constant(1.0)))
    assert "tx                     differs: shape (3,) at preparation, (4,) now" in msg
    assert "x                      matches" in msg
    msg = _mismatch(lambda: prep.pushforward(x, x, di.Constant(np.ones(2))))
    assert "context 1 (Constant)   differs" in msg
    msg = _mismatch(lambda: prep.pushforward(x, (x, x), di.Constant(1.0)))
    assert "not given at preparation" in msg
    inplace = di.prepare_jacobian(inplace_square, b, x, y=np.zeros(3))
    msg = _mismatch(lambda: inplace.jacobian(x))
    assert "y                      differs: given at preparation" in msg


def test_prep_of_another_operator():
    prep = di.prepare_gradient(square_sum, b, x)
    msg = _mismatch(lambda: di.jacobian(square_sum, b, x, prep=prep))
    assert "made by di.prepare_gradient" in msg


def test_same_point_needs_the_same_point():
    prep = di.prepare_pushforward_same_point(elementwise, b, x, x)
    np.testing.assert_allclose(prep.pushforward(x.copy(), np.ones(3)), 2 * x, rtol=1e-8)
    msg = _mismatch(lambda: prep.pushforward(x + 1, np.ones(3)))
    assert "same-point preparation needs the very same x" in msg


def test_strict_false_skips_the_check():
    prep = di.prepare_gradient(square_sum, b, x, strict=False)
    # no check of the array type, dtype or shape: a list runs on a preparation made with an array
    np.testing.assert_allclose(di.gradient(square_sum, b, [1.0, 2.0, 3.0], prep=prep), 2 * x, rtol=1e-8)
    with pytest.raises(di.PreparationMismatchError, match="array type ndarray at preparation, list now"):
        di.gradient(square_sum, b, [1.0, 2.0, 3.0], prep=di.prepare_gradient(square_sum, b, x))
    # a preparation is bound to the f it was made for: that f runs, whatever is passed
    np.testing.assert_allclose(di.gradient(lambda x: np.sum(x**3), b, x, prep=prep), 2 * x, rtol=1e-8)


def test_mismatch_on_f_suggests_constant_contexts():
    prep = di.prepare_gradient(square_sum, b, x)
    msg = _mismatch(lambda: prep and di.gradient(lambda x: np.sum(x), b, x, prep=prep))
    assert "di.Constant" in msg


# -- BackendUnavailableError -----------------------------------------------------------------------
def test_unavailable_backend_says_what_to_install():
    assert di.check_available(Unavailable()) is False
    with pytest.raises(di.BackendUnavailableError, match=r"pip install 'diface\[nosuch\]'") as info:
        di.gradient(square_sum, Unavailable(), x)
    assert isinstance(info.value, ImportError)
    with pytest.raises(di.BackendUnavailableError):
        di.hessian(square_sum, di.SecondOrder(Unavailable(), b), x)


# -- NotSupportedError -----------------------------------------------------------------------------
def test_inplace_function_on_a_backend_without_mutation():
    assert di.check_inplace(NoInplace()) is False and di.check_inplace(b) is True
    y = np.full(3, 7.0)
    with pytest.raises(di.NotSupportedError, match="in-place") as info:
        di.jacobian(inplace_square, NoInplace(), x, y=y)
    assert isinstance(info.value, TypeError)
    assert np.all(y == 7.0)


def test_read_only_buffers():
    out = np.zeros(3)
    out.flags.writeable = False
    with pytest.raises(di.NotSupportedError, match="read-only"):
        di.gradient(square_sum, b, x, out=out)
    y = np.zeros(3)
    y.flags.writeable = False
    with pytest.raises(di.NotSupportedError, match="immutable"):
        di.jacobian(inplace_square, b, x, y=y)


def test_complex_input_and_nested_complex_steps():
    # sum(z**2) of complex z is complex: no gradient (docs/complex.md)
    with pytest.raises(di.ShapeError, match="complex-valued f has no gradient"):
        di.gradient(square_sum, b, x + 0j)
    c = di.AutoFiniteDiff("complex")
    with pytest.raises(di.NotSupportedError, match=r"method='complex'.*complex inputs"):
        di.gradient(lambda z: np.sum(np.abs(z) ** 2), c, x + 0j)
    with pytest.raises(di.NotSupportedError, match="complex-step outer"):
        di.hessian(square_sum, di.SecondOrder(c, c), x)
    # a plain complex-step backend nests over central differences instead
    np.testing.assert_allclose(di.hessian(square_sum, c, x), 2 * np.eye(3), atol=1e-8)


# -- ShapeError ------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["gradient", "hessian", "value_and_gradient", "value_gradient_and_hessian"])
def test_scalar_output_required(op):
    with pytest.raises(di.ShapeError, match=r"scalar \(shape \(\)\).*shape \(3,\)"):
        getattr(di, op)(elementwise, b, x)
    with pytest.raises(di.ShapeError):
        di.hvp(elementwise, b, x, x)


@pytest.mark.parametrize("op", ["derivative", "second_derivative"])
def test_scalar_input_required(op):
    with pytest.raises(di.ShapeError, match="scalar x"):
        getattr(di, op)(elementwise, b, x)


def test_tangent_of_the_wrong_shape():
    with pytest.raises(di.ShapeError, match=r"tangent tx has shape \(2,\).*shaped like x: \(3,\)"):
        di.pushforward(elementwise, b, x, np.ones(2))
    with pytest.raises(di.ShapeError, match=r"tangent ty\[1\]"):
        di.pullback(elementwise, b, x, (np.ones(3), np.ones(4)))


def test_out_of_the_wrong_shape_stays_untouched():
    out = np.full(4, 7.0)
    with pytest.raises(di.ShapeError, match=r"out= buffer has shape \(4,\), the result has shape \(3,\)"):
        di.gradient(square_sum, b, x, out=out)
    assert np.all(out == 7.0)
    prep = di.prepare_hessian(square_sum, b, x)
    g, bad_h = np.full(3, 7.0), np.full((3, 4), 7.0)
    with pytest.raises(di.ShapeError):
        prep.value_gradient_and_hessian(x, out=(g, bad_h))
    assert np.all(g == 7.0) and np.all(bad_h == 7.0)


# -- ArgumentError ---------------------------------------------------------------------------------
def test_bare_context():
    with pytest.raises(di.ArgumentError, match=r"wrap it as di.Constant\(value\).*or di.Cache\(value\)") as info:
        di.gradient(lambda x, a: a * np.sum(x), b, x, 2.0)
    assert isinstance(info.value, TypeError)


def test_out_of_the_wrong_dtype_or_type():
    out = np.zeros(3, dtype=np.float32)
    with pytest.raises(di.ArgumentError, match="dtype float32, the result has dtype float64"):
        di.gradient(square_sum, b, x, out=out)
    with pytest.raises(di.ArgumentError, match="NumPy arrays"):
        di.gradient(square_sum, b, x, out=[0.0, 0.0, 0.0])
    with pytest.raises(di.ArgumentError, match="tuple of 2 buffers"):
        di.value_gradient_and_hessian(square_sum, b, x, out=np.zeros(3))
    with pytest.raises(di.ArgumentError, match="tuple of 2 buffers"):
        di.pushforward(elementwise, b, x, (x, x), out=np.zeros(3))


def test_bad_arguments():
    with pytest.raises(di.ArgumentError, match="floating point"):
        di.gradient(square_sum, b, np.array([1, 2, 3]))
    with pytest.raises(di.ArgumentError, match="callable"):
        di.gradient(3.0, b, x)
    with pytest.raises(di.ArgumentError, match="diface backend"):
        di.gradient(square_sum, "fd", x)
    with pytest.raises(di.ArgumentError, match="empty"):
        di.pushforward(elementwise, b, x, ())
    with pytest.raises(di.ArgumentError, match="method must be one of"):
        di.AutoFiniteDiff("centered")
    with pytest.raises(di.ArgumentError, match="positive"):
        di.AutoFiniteDiff(step=-1e-3)
    with pytest.raises(di.ArgumentError, match="needs x to be a NumPy array, a number"):
        di.gradient(square_sum, b, "abc")
    with pytest.raises(di.NotSupportedError, match="in-place functions f"):
        di.prepare_gradient(square_sum, b, x, y=np.zeros(3))


# -- errors of f -------------------------------------------------------------------------------------
class Boom(Exception):
    pass


def test_errors_of_f_propagate_unchanged():
    def f(x):
        raise Boom("from f")

    with pytest.raises(Boom, match="from f"):
        di.gradient(f, b, x)


def test_failed_call_leaves_nothing_a_later_call_sees():
    fail = {"now": False}

    def f(x):
        if fail["now"]:
            raise Boom
        return np.sum(x**3)

    prep = di.prepare_gradient(f, b, x)
    out = np.zeros(3)
    fail["now"] = True
    with pytest.raises(Boom):
        prep.gradient(x, out=out)
    fail["now"] = False
    np.testing.assert_allclose(prep.gradient(x, out=out), 3 * x**2, rtol=1e-8)


# -- what f returns, on every backend ------------------------------------------------------------------
def _engines() -> list:
    from conftest import engine_defaults

    return [b, di.AutoFiniteDiff("complex"), *engine_defaults()]


@pytest.mark.parametrize("backend", _engines(), ids=lambda b: b.label())
@pytest.mark.parametrize(
    ("returned", "what"),
    [(None, "f returned None"), ("a", "f returned a str")],
    ids=["None", "str"],
)
def test_f_returning_something_else_than_an_array(backend, returned, what):
    for call in (
        lambda: di.gradient(lambda x: returned, backend, x),
        lambda: di.jacobian(lambda x: returned, backend, x),
        lambda: di.pushforward(lambda x: returned, backend, x, x),
    ):
        with pytest.raises(di.ArgumentError, match=what):
            call()


@pytest.mark.parametrize("backend", _engines(), ids=lambda b: b.label())
def test_f_returning_a_tuple(backend):
    # a tuple is a tree of outputs (docs/trees.md): the Jacobian is a tuple of Jacobians
    j = di.jacobian(lambda x: (x, 2.0 * x), backend, x)
    assert isinstance(j, tuple) and len(j) == 2
    np.testing.assert_allclose(np.asarray(j[1]), 2.0 * np.eye(x.size), rtol=1e-5, atol=1e-6)


def test_prep_that_is_not_a_preparation():
    with pytest.raises(di.ArgumentError, match=r"prep= must be a preparation from di.prepare_gradient"):
        di.gradient(square_sum, b, x, prep=object())


def test_bare_context_given_to_a_preparation():
    scaled = lambda x, a: a * np.sum(x**2)
    for strict in (True, False):
        prep = di.prepare_gradient(scaled, b, x, di.Constant(2.0), strict=strict)
        with pytest.raises(di.ArgumentError, match=r"bare float; wrap it as di.Constant"):
            prep.gradient(x, 2.0)
        with pytest.raises(di.ArgumentError, match=r"bare float"):
            di.gradient(scaled, b, x, 2.0, prep=prep)


def test_object_and_integer_arrays_on_every_backend():
    for backend in _engines():
        for bad in (np.array([1.0, "a"], dtype=object), np.array([1, 2, 3])):
            with pytest.raises(di.ArgumentError, match="floating point"):
                di.gradient(square_sum, backend, bad)
        with pytest.raises(di.ArgumentError, match="tangent tx has dtype object"):
            di.pushforward(elementwise, backend, x, np.array([1.0, "a", 2.0], dtype=object))


def test_second_order_across_engines_is_not_supported():
    pytest.importorskip("jax")
    pytest.importorskip("torch")
    with pytest.raises(di.NotSupportedError, match="use one engine for both"):
        di.hessian(lambda x: (x**2).sum(), di.SecondOrder(di.AutoJAX(), di.AutoTorch()), x)


@pytest.mark.parametrize("x", [np.ones(4), {"a": np.ones(2), "b": np.ones(3)}], ids=["array", "tree"])
def test_a_pair_returned_without_has_aux_is_named(x):
    """f returning (loss, aux) without has_aux=True: the message says so, not "returned shape (n,)"."""

    def f(x):
        leaves = list(x.values()) if isinstance(x, dict) else [x]
        return sum(np.sum(v**2) for v in leaves), leaves[0] * 2

    for backend in (di.AutoTape(), di.AutoFiniteDiff()):
        with pytest.raises(di.ShapeError, match=r"a tuple of 2: if f returns \(output, aux\), pass has_aux=True"):
            di.gradient(f, backend, x)
        with pytest.raises(di.ShapeError, match="returned a tuple of 2"):
            di.prepare_hessian(f, backend, x)
        _, aux = di.gradient(f, backend, x, has_aux=True)  # the fix it names works
        assert np.allclose(aux, 2.0)
