"""What AutoTape refuses, and how it says so: every unsupported NumPy or SciPy call raises
`di.NotSupportedError` naming the function and the user's file and line, saying what to do; a limit of
one of the tape's own derivative rules (reached by second order) is named as such; complex values and
conversions of traced values to plain arrays are refused the same way; and what works inside f instead
of `isinstance(x, np.ndarray)`."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np
import pytest

import diface as di
from diface.backends.tape.prims.prim import Prim
from diface.backends.tape.tracing.tracer import TapeArray

TAPE = di.AutoTape()
HERE = os.path.basename(__file__)
X = np.array([0.3, -0.7, 1.1])


def refusal(f: Any, op: str = "gradient", x: np.ndarray = X) -> str:
    """The message of the NotSupportedError f raises, unprepared and prepared (both the same)."""
    messages = []
    for call in (lambda: getattr(di, op)(f, TAPE, x), lambda: getattr(di, f"prepare_{op}")(f, TAPE, x)):
        with pytest.raises(di.NotSupportedError) as info:
            call()
        messages.append(str(info.value))
    assert isinstance(info.value, di.DifaceError) and isinstance(info.value, TypeError)
    assert messages[0] == messages[1]
    return messages[0]


def assert_names(message: str, function: str, line_of: str) -> None:
    """The message names the function and the line of this file where f calls it, and says what to do."""
    assert function in message, message
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if line_of in text)
    assert f"{HERE}:{line}" in message, message
    assert re.search(r"AutoAutograd|AutoJAX|AutoFiniteDiff", message), message


def test_unsupported_numpy_functions_are_named_with_the_users_line():
    def f(x):
        return np.sum(np.resize(x, 5))  # resize here

    assert_names(refusal(f), "numpy.resize", "# resize here")

    def g(x):
        return np.sum(np.frexp(x)[0])  # frexp here

    assert_names(refusal(g), "numpy.frexp", "# frexp here")

    def h(x):
        return np.sum(np.polynomial.polynomial.polyder(x))  # polyder here (NumPy converts its input)

    assert_names(refusal(h), "numpy.polynomial.polynomial.polyder", "# polyder here")

    def k(x):
        return np.sum(np.add.reduceat(x, [0, 1]))  # reduceat here

    assert_names(refusal(k), "numpy.add.reduceat", "# reduceat here")


def test_unsupported_scipy_functions_are_named_with_the_users_line():
    sp = pytest.importorskip("scipy.special")
    linalg = pytest.importorskip("scipy.linalg")

    def f(x):
        return np.sum(sp.hyp2f1(1.0, 2.0, 3.0, x / 2))  # hyp2f1 here (a ufunc)

    assert_names(refusal(f), "scipy.special.hyp2f1", "# hyp2f1 here")

    def g(x):
        return np.sum(linalg.schur(np.outer(x, x))[0])  # schur here (Python code converting its input)

    assert_names(refusal(g), "scipy.linalg.schur", "# schur here")

    def h(x):
        return np.sum(sp.jv(x, 1.5))  # jv order here

    message = refusal(h)
    assert_names(message, "scipy.special.jv", "# jv order here")
    assert "argument 1" in message


class _NoSecondOrder(Prim):
    """A primitive whose reverse rule calls a NumPy function the tape does not record."""

    name = "needs_frexp"

    def forward(self, a: Any, out: Any = None) -> Any:
        return np.multiply(a, 2.0, out=out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        mantissa, exponent = np.frexp(np.ones_like(ins[0]) * 2.0)
        return np.multiply(g, np.ldexp(mantissa, exponent), out=out)


NO_SECOND_ORDER = _NoSecondOrder()


def test_a_limit_of_the_tapes_own_rule_is_named_as_such():
    f = lambda x: np.sum(NO_SECOND_ORDER(x) ** 2)
    np.testing.assert_allclose(di.gradient(f, TAPE, X), 8 * X)  # first order: the rule runs on arrays
    message = refusal(f, "hessian")
    assert "derivative rule for needs_frexp" in message and "not of your code" in message
    assert "numpy.frexp" in message and "SecondOrder(di.AutoFiniteDiff(), di.AutoTape())" in message


def test_scipy_digamma_has_second_derivatives_now():
    sp = pytest.importorskip("scipy.special")
    f = lambda x: np.sum(sp.digamma(x + 2.0))
    h = di.hessian(f, TAPE, X)
    np.testing.assert_allclose(np.diag(h), sp.polygamma(2, X + 2.0), rtol=1e-12)


def test_conversions_to_plain_arrays_are_refused_with_the_call():
    outside = np.zeros(3)

    def g(x):
        out = outside.copy()
        out[:] = x  # store here
        return np.sum(out)

    with pytest.raises(di.NotSupportedError) as info:
        di.gradient(g, TAPE, X)
    assert_names(str(info.value), "`out[:]`", "# store here")

    def h(x):
        return np.array([x[:2], x[1:]], dtype=object).astype(float).sum()  # cast here

    with pytest.raises(di.NotSupportedError) as info:
        di.gradient(h, TAPE, X)
    assert_names(str(info.value), "`np.array([x[:2], x[1:]], dtype=object).astype(float)`", "# cast here")
    # without dtype=object, np.array stacks the list on the tape: the cast keeps the derivative
    np.testing.assert_allclose(di.gradient(lambda x: np.array([x[0], x[1]]).astype(float).sum(), TAPE, X), [1, 1, 0])


def test_complex_values_without_a_rule_are_refused():
    """Complex intermediates are differentiated (tests/test_tape_complex.py); an operation with no
    complex rule, or a complex value taken to a real one implicitly, raises."""

    def f(x):
        return np.sum(np.real(np.maximum(x * 1j, 0.5j)))  # maximum of complex values

    message = refusal(f)
    assert "numpy.maximum" in message and "complex" in message

    def g(x):
        return np.sum(np.linalg.slogdet(np.diag(x * 1j))[1])  # log|det| of a complex matrix

    assert "complex" in refusal(g)


def test_what_a_traced_array_says_of_itself():
    seen: dict = {}

    def f(x):
        if isinstance(x, TapeArray):  # (the core may also call f with x itself)
            seen.update(
                isinstance=isinstance(x, np.ndarray),
                ndim=np.ndim(x),
                shape=np.shape(x),
                size=np.size(x),
                has_shape=hasattr(x, "shape"),
                dtype=x.dtype,
                result_type=np.result_type(x, 1.0),
                floating=np.issubdtype(x.dtype, np.floating),
                iscomplexobj=np.iscomplexobj(x),
                isscalar=np.isscalar(x),
                length=len(x),
            )
        return np.sum(x**2)

    di.gradient(f, TAPE, X)
    assert seen == {
        "isinstance": True,  # the user's code takes its NumPy path (type(x) is TapeArray)
        "ndim": 1,
        "shape": (3,),
        "size": 3,
        "has_shape": True,
        "dtype": np.float64,
        "result_type": np.float64,
        "floating": True,
        "iscomplexobj": False,
        "isscalar": False,
        "length": 3,
    }


def test_arrays_built_from_lists_of_traced_values():
    cases = {
        "np.array of scalars": lambda x: np.array([x[0] ** 2, x[1]]),
        "np.asarray of arrays": lambda x: np.asarray([x, 2 * x]).sum(axis=0),
        "np.mean of a list of arrays": lambda x: np.mean([x, x**2], axis=0),
        "nested lists with numbers": lambda x: np.array([[x[0], 1.0], [x[1], x[2]]]) @ x[:2],
        "ufuncs on the object array": lambda x: np.exp(np.array([x[0], x[1]])) * x[:2],
    }
    want = {
        "np.array of scalars": np.array([[2 * X[0], 0, 0], [0, 1, 0]]),
        "np.asarray of arrays": 3 * np.eye(3),
        "np.mean of a list of arrays": np.diag(0.5 + X),
        "nested lists with numbers": np.array([[2 * X[0], 1, 0], [X[1], X[0] + X[2], X[1]]]),
        "ufuncs on the object array": np.diag(np.exp(X[:2]) * (1 + X[:2]))[:, :] @ np.eye(2, 3),
    }
    for name, f in cases.items():
        for _ in range(2):
            np.testing.assert_allclose(di.jacobian(f, TAPE, X), want[name], rtol=1e-14, err_msg=name)
            np.testing.assert_allclose(di.prepare_jacobian(f, TAPE, X + 1).jacobian(X), want[name], rtol=1e-14)


def test_the_mean_of_a_list_of_traced_scalars_is_refused_clearly():
    """NumPy's mean turns its full reduction into a NumPy float (`dtype.type(...)`): a list of traced
    scalars cannot keep its derivative there; np.stack first."""
    with pytest.raises(di.NotSupportedError, match=r"numpy\.mean .*np\.stack"):
        di.gradient(lambda x: np.mean([x[0], x[1]]), TAPE, X)
    with pytest.raises(di.NotSupportedError, match=r"numpy\.std"):
        di.gradient(lambda x: np.std([x[0], x[1]]), TAPE, X)
    np.testing.assert_allclose(di.gradient(lambda x: np.mean(np.stack([x[0], x[1]])), TAPE, X), [0.5, 0.5, 0.0])
