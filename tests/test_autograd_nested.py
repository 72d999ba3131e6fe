"""AutoAutograd on functions that call autograd themselves (`autograd.grad`, `elementwise_grad`,
`jacobian`, `hessian` inside f, on lists, tuples and dicts): every operator in both modes and every
same-engine SecondOrder composition, prepared at another point, each call made twice, against analytic
results."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("autograd")

import autograd
import autograd.numpy as anp

import diface as di
from diface.testing import Scenario
from diface.testing._check import SECOND_ORDER, check_operator

A = di.AutoAutograd
SO = di.SecondOrder
FIRST_ORDER = [A("reverse"), A("forward")]
SECOND_ORDER_BACKENDS = [
    A("reverse"),
    A("forward"),
    SO(A("forward"), A("reverse")),
    SO(A("reverse"), A("forward")),
    SO(A("reverse"), A("reverse")),
    SO(A("forward"), A("forward")),
]
cos, sin = np.cos, np.sin


def grad_of_a_list(xp, x):
    g = autograd.grad(lambda p: anp.sum(p[0] ** 2 * p[1]))([x, x**2])  # [2 x^3, x^2]
    return anp.sum(g[0]) + anp.sum(g[1] * x)  # 3 sum(x^3)


def grad_of_a_tuple_closing_over_x(xp, x):
    """The inner function reads x itself: boxes of two traces meet in one primitive."""
    g = autograd.grad(lambda p: anp.sum(anp.sin(p[0] * x) * p[1]))((x, x**2))  # (x^3 cos x^2, sin x^2)
    return anp.sum(g[0] + g[1])


def grad_of_a_dict(xp, x):
    g = autograd.grad(lambda d: anp.sum(d["a"] ** 2 * d["b"]))({"a": x, "b": anp.exp(x)})  # a: 2 x e^x, b: x^2
    return anp.sum(g["a"] * g["b"])  # sum(2 x^3 e^x)


def elementwise_grad_of_a_list(xp, x):
    g = autograd.elementwise_grad(lambda p: anp.sin(p[0]) * p[1])([x, x])
    return g[0] + g[1]  # x cos x + sin x


def jacobian_inside(xp, x):
    return anp.sum(autograd.jacobian(lambda a, b: anp.sin(a) * b, 1)(x, 2.0 * x) @ x)  # sum(x sin x)


def hessian_inside(xp, x):
    return anp.sum(autograd.hessian(lambda z: anp.sum(z**3))(x) @ x)  # 6 sum(x^2): a fourth-order trace


def grad_inside_of_a_scalar(xp, s):
    return anp.stack([autograd.grad(lambda t: anp.sin(t) * s)(s), s**2])  # [s cos s, s^2]


V, P = np.array([0.3, -0.5, 0.7]), np.array([-0.4, 0.9, 0.2])
NESTED = [
    Scenario("grad of a list", grad_of_a_list, V, P, jacobian=lambda x: 9 * x**2, hessian=lambda x: np.diag(18 * x)),
    Scenario(
        "grad of a tuple closing over x",
        grad_of_a_tuple_closing_over_x,
        V,
        P,
        jacobian=lambda x: (3 * x**2 + 2 * x) * cos(x**2) - 2 * x**4 * sin(x**2),
        hessian=lambda x: np.diag((6 * x - 4 * x**5 + 2) * cos(x**2) - (14 * x**3 + 4 * x**2) * sin(x**2)),
    ),
    Scenario(
        "grad of a dict",
        grad_of_a_dict,
        V,
        P,
        jacobian=lambda x: 2 * np.exp(x) * (x**3 + 3 * x**2),
        hessian=lambda x: np.diag(2 * np.exp(x) * (x**3 + 6 * x**2 + 6 * x)),
    ),
    Scenario(
        "elementwise_grad of a list",
        elementwise_grad_of_a_list,
        V,
        P,
        jacobian=lambda x: np.diag(2 * cos(x) - x * sin(x)),
    ),
    Scenario(
        "jacobian inside",
        jacobian_inside,
        V,
        P,
        jacobian=lambda x: sin(x) + x * cos(x),
        hessian=lambda x: np.diag(2 * cos(x) - x * sin(x)),
    ),
    Scenario("hessian inside", hessian_inside, V, P, jacobian=lambda x: 12 * x, hessian=lambda x: 12 * np.eye(3)),
    Scenario(
        "grad inside, scalar x",
        grad_inside_of_a_scalar,
        np.float64(0.6),
        np.float64(-0.3),
        jacobian=lambda s: np.array([cos(s) - s * sin(s), 2 * s]),
        second_derivative=lambda s: np.array([-2 * sin(s) - s * cos(s), 2.0]),
    ),
]


def _cases() -> list:
    cases = []
    for scenario in NESTED:
        for op in scenario.operators():
            for backend in SECOND_ORDER_BACKENDS if op in SECOND_ORDER else FIRST_ORDER:
                cases.append(pytest.param(backend, scenario, op, id=f"{backend.label()}-{scenario.name}-{op}"))
    return cases


@pytest.mark.parametrize(("backend", "scenario", "op"), _cases())
def test_autograd_inside_f(backend, scenario, op):
    failures = check_operator(backend, scenario, op)
    assert not failures, "\n".join(map(str, failures))


def test_the_issue_reproducer():
    """The Hessian of a function that calls autograd.grad on a list raised TypeError in size_of."""

    def f(x):
        g = autograd.grad(lambda p: anp.sum(p[0] ** 2 * p[1]))([x, x**2])
        return anp.sum(g[0])  # sum(2 x^3)

    x, x_prep = np.array([0.3, 0.5, 0.7]), np.array([1.0, -2.0, 0.1])
    for backend in SECOND_ORDER_BACKENDS:
        prep = di.prepare_hessian(f, backend, x_prep)
        for _ in range(2):
            np.testing.assert_allclose(di.hessian(f, backend, x), np.diag(12 * x), rtol=1e-14, err_msg=repr(backend))
            np.testing.assert_allclose(prep.hessian(x), np.diag(12 * x), rtol=1e-14, err_msg=repr(backend))
