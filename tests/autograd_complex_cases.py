"""The complex cases of HIPS autograd's own test suite, rewritten in diface's terms.

autograd checks its derivatives of complex code with `check_grads` and `combo_check` (every combination
of a list of sample arguments). This module generates the same coverage as a flat list of `Case`s: the
same functions, argument shapes, value ranges and combinations, with our own random values. Each case is
one function `fn(xp, x)` written once for an array namespace `xp` (NumPy for the tape, autograd.numpy for
AutoAutograd, jax.numpy for the reference), of one input `x`: an array, or a tuple of arrays for
functions of several arguments (autograd differentiates every argument in `combo_check(fun, [0, 1])`).

`source` names the autograd test a case mirrors; cases marked `extra` extend that coverage to complex
values where autograd tests the function on real values only (the issue asks for them: square,
reciprocal, divide, power, products, structural ops, inv/solve/det).
"""

from __future__ import annotations

import itertools
import operator
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Case:
    name: str  # unique: "<group>/<function>/<arguments>"
    source: str  # the autograd test it mirrors ("extra": complex coverage autograd has for real values only)
    fn: Callable  # fn(xp, x)
    x: Any  # a NumPy array (0-d for scalars) or a tuple of them
    jax_fn: Callable | None = None  # fn for jax.numpy where JAX spells it differently
    kind: str = "first"  # "first": pushforward and pullback; "hvp": hvp of a real-valued f

    def for_jax(self) -> Callable:
        return self.jax_fn or self.fn


class _Values:
    """Seeded sample values: R(*shape) real normal, C(*shape) complex normal, U(*shape) uniform [0, 1)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def R(self, *shape: int) -> np.ndarray:
        return np.asarray(self.rng.standard_normal(shape))

    def C(self, *shape: int) -> np.ndarray:
        return np.asarray(self.rng.standard_normal(shape) + 1j * self.rng.standard_normal(shape))

    def U(self, *shape: int) -> np.ndarray:
        return np.asarray(self.rng.random(shape))


def _label(a: Any) -> str:
    a = np.asarray(a)
    kind = "c" if np.iscomplexobj(a) else "r"
    return kind + ("x".join(map(str, a.shape)) if a.shape else "0")


def _args_label(args: tuple) -> str:
    return ",".join(_label(a) for a in args)


def _is_complex(args: Any) -> bool:
    leaves = args if isinstance(args, tuple) else (args,)
    return any(np.iscomplexobj(a) for a in leaves)


def _valid(fn: Callable, x: Any) -> bool:
    """Whether NumPy evaluates fn at x (combo_check's lists hold some shape combinations that do not fit)."""
    try:
        with np.errstate(all="ignore"):
            fn(np, x)
    except (ValueError, IndexError, TypeError):
        return False
    return True


def _transform(lims: tuple[float, float], v: Any) -> np.ndarray:
    return np.asarray(v * (lims[1] - lims[0]) + lims[0])


# -- unary ufuncs: unary_ufunc_check(fun, lims) checks a complex scalar and a complex (3, 2) matrix ---------------
_UNARY = [  # name, lims, in autograd's complex checks
    ("sin", (-2, 2), True),
    ("abs", (0.1, 4.0), True),
    ("absolute", (0.1, 4.0), True),
    ("arccosh", (1.1, 4.0), True),
    ("arcsinh", (-0.9, 0.9), True),
    ("arctanh", (-0.9, 0.9), True),
    ("cos", (-2, 2), True),
    ("cosh", (-2, 2), True),
    ("exp", (-2, 2), True),
    ("exp2", (-2, 2), True),
    ("expm1", (-2, 2), True),
    ("log", (0.2, 2.0), True),
    ("log10", (0.2, 2.0), True),
    ("log1p", (0.2, 2.0), True),
    ("log2", (0.2, 2.0), True),
    ("sinh", (-2, 2), True),
    ("sqrt", (1.0, 3.0), True),
    ("tan", (-1.1, 1.1), True),
    ("tanh", (-2, 2), True),
    ("real", (-2, 2), True),
    ("real_if_close", (-2, 2), True),
    ("imag", (-2, 2), True),
    ("conj", (-2, 2), True),
    ("conjugate", (-2, 2), True),
    ("angle", (-2, 2), True),
    ("square", (-2, 2), False),  # autograd: test_complex=False
    ("reciprocal", (0.5, 2.0), False),
    ("negative", (-2, 2), False),
]


def _unary_fn(name: str) -> Callable:
    return lambda xp, x: getattr(xp, name)(x)


def _unary_jax_fn(name: str) -> Callable | None:
    if name == "real_if_close":  # not in jax.numpy; the samples' imaginary parts are far from 0: the identity
        return lambda xp, x: x
    return None


def unary_cases(v: _Values) -> list[Case]:
    out = []
    for name, lims, ours in _UNARY:
        comp = _transform(lims, 0.4) + 0.1j * _transform(lims, 0.3)
        matc = _transform(lims, v.U(3, 2)) + 0.1j * v.U(3, 2)
        source = f"test_systematic.py::test_{name}" if ours else "extra"
        for x in (comp, matc):
            out.append(Case(f"unary/{name}/{_label(x)}", source, _unary_fn(name), x, _unary_jax_fn(name)))
    return out


# -- binary ufuncs: binary_ufunc_check over [scalar, complex scalar, vector, complex (3, 2), (1, 2)]^2 -------------
_BINARY: list[tuple[str, Callable, tuple, tuple, str]] = [
    ("add", lambda xp, x: xp.add(x[0], x[1]), (-2, 2), (-2, 2), "test_systematic.py::test_add"),
    ("op.mul", lambda xp, x: x[0] * x[1], (-2, 2), (-2, 2), "test_systematic.py::test_op_mul"),
    ("op.add", lambda xp, x: x[0] + x[1], (-2, 2), (-2, 2), "test_systematic.py::test_op_add"),
    ("op.sub", lambda xp, x: x[0] - x[1], (-2, 2), (-2, 2), "test_systematic.py::test_op_sub"),
    ("subtract", lambda xp, x: xp.subtract(x[0], x[1]), (-2, 2), (-2, 2), "extra"),
    ("multiply", lambda xp, x: xp.multiply(x[0], x[1]), (-2, 2), (-2, 2), "extra"),
    ("divide", lambda xp, x: xp.divide(x[0], x[1]), (-2, 2), (0.8, 1.2), "extra"),
    ("true_divide", lambda xp, x: xp.true_divide(x[0], x[1]), (-2, 2), (-0.3, -2.0), "extra"),
    ("op.truediv", lambda xp, x: operator.truediv(x[0], x[1]), (-2, 2), (0.8, 1.2), "extra"),
]


def _binary_samples(v: _Values, lims: tuple) -> list[np.ndarray]:
    return [
        _transform(lims, 0.6),
        _transform(lims, 0.6 + 0.3j),
        _transform(lims, v.U(2)),
        _transform(lims, v.U(3, 2) + 0.1j * v.U(3, 2)),
        _transform(lims, v.U(1, 2)),
    ]


def binary_cases(v: _Values) -> list[Case]:
    out = []
    for name, fn, lims_a, lims_b, source in _BINARY:
        for a, b in itertools.product(_binary_samples(v, lims_a), _binary_samples(v, lims_b)):
            if _is_complex((a, b)):
                out.append(Case(f"binary/{name}/{_args_label((a, b))}", source, fn, (a, b)))
    # power: a complex base off the branch cut with real and complex exponents, a positive base with complex ones
    bases = [_transform((0.5, 2.0), 0.6 + 0.3j), _transform((0.5, 2.0), v.U(3, 2) + 0.1j * v.U(3, 2)), 0.5 + v.U(2)]
    exponents = [np.asarray(1.3), np.asarray(0.7 - 0.4j), 0.5 + v.U(2), v.U(3, 2) + 0.5j * v.U(3, 2)]
    for a, b in itertools.product(bases, exponents):
        if _is_complex((a, b)):
            out.append(Case(f"binary/power/{_args_label((a, b))}", "extra", lambda xp, x: xp.power(x[0], x[1]), (a, b)))
            out.append(Case(f"binary/op.pow/{_args_label((a, b))}", "extra", lambda xp, x: x[0] ** x[1], (a, b)))
    return out


# -- statistics: stat_check(fun) with a complex scalar and a complex (2, 3) matrix, axis [None, 0], keepdims ----
_STATS = ["max", "min", "mean", "sum", "prod", "var", "std"]


def stat_cases(v: _Values) -> list[Case]:
    out = []
    for name in _STATS:
        source = f"test_systematic.py::test_{name}"
        c = np.asarray(v.R() + 0.1j * v.R())
        if name != "std":  # the deviation of one number is 0, where the square root has no derivative (NaN)
            out.append(Case(f"stat/{name}/{_label(c)}", source, lambda xp, x, n=name: getattr(xp, n)(x), c))
        e = v.R(2, 3) + 0.1j * v.R(2, 3)
        for axis, keepdims in itertools.product([None, 0], [True, False]):
            fn = lambda xp, x, n=name, a=axis, k=keepdims: getattr(xp, n)(x, axis=a, keepdims=k)
            out.append(Case(f"stat/{name}/{_label(e)}/axis={axis},keepdims={keepdims}", source, fn, e))
    # test_numpy.py's cumsum tests and reductions along the other axis, on complex values
    m = v.C(2, 3)
    for axis in (0, 1, None):
        source = "test_numpy.py::test_cumsum_" + {0: "axis0", 1: "axis1", None: "no_axis"}[axis]
        out.append(Case(f"stat/cumsum/{_label(m)}/axis={axis}", source, lambda xp, x, a=axis: xp.cumsum(x, axis=a), m))
    out.append(Case("stat/cumsum/c5", "test_numpy.py::test_cumsum_1d", lambda xp, x: xp.cumsum(x), v.C(5)))
    for name in ("sum", "mean", "prod"):
        fn = lambda xp, x, n=name: getattr(xp, n)(x, axis=1)
        out.append(Case(f"stat/{name}/{_label(m)}/axis=1", "extra", fn, m))
    out.append(
        Case(
            "stat/sum/c3x4x2/axis=(0,2)",
            "test_numpy.py::test_sum_with_axis_tuple",
            lambda xp, x: xp.sum(x, axis=(0, 2)),
            v.C(3, 4, 2),
        )
    )
    return out


# -- products: test_systematic's dot, outer, matmul, kron, tensordot and einsum lists hold complex samples --------
def _combos(name: str, source: str, fn: Callable, firsts: list, seconds: list) -> list[Case]:
    out = []
    for a, b in itertools.product(firsts, seconds):
        if _is_complex((a, b)) and _valid(fn, (a, b)):
            out.append(Case(f"product/{name}/{_args_label((a, b))}", source, fn, (a, b)))
    return out


def product_cases(v: _Values) -> list[Case]:
    R, C = v.R, v.C
    s = "test_systematic.py::test_"
    out = []
    out += _combos(
        "dot",
        s + "dot",
        lambda xp, x: xp.dot(x[0], x[1]),
        [np.asarray(1.5), R(3), R(2, 3), R(2, 2, 3), C(3), C(2, 3)],
        [np.asarray(0.3), R(3), R(3, 4), R(2, 3, 4), C(3)],
    )
    out += _combos("outer", s + "outer", lambda xp, x: xp.outer(x[0], x[1]), [R(3), C(3)], [R(3), C(3)])
    out += _combos(
        "matmul",
        s + "matmul",
        lambda xp, x: xp.matmul(x[0], x[1]),
        [R(3), R(2, 3), R(2, 2, 3), C(3), C(2, 3)],
        [R(3), R(3, 4), R(2, 3, 4), C(3), C(3, 4)],
    )
    out += _combos("op.matmul", "extra", lambda xp, x: x[0] @ x[1], [C(2, 3), R(1, 2, 3)], [C(3, 2), C(2, 3, 1)])
    out += _combos(
        "kron",
        s + "kron",
        lambda xp, x: xp.kron(x[0], x[1]),
        [R(5, 5), R(4, 4), R(5), R(5, 1), R(1, 5), R(), C(5, 5)],
        [R(3, 3), R(2, 2), R(3), R(1, 3), R(3, 1), R(), C(3, 3)],
    )
    out += _combos(
        "tensordot(1,0)",
        s + "tensordot_1",
        lambda xp, x: xp.tensordot(x[0], x[1], axes=((1,), (0,))),
        [R(1, 3), R(2, 3, 2), C(1, 3)],
        [R(3), R(3, 1), R(3, 4, 2), C(3)],
    )
    out += _combos(
        "tensordot(2)",
        "extra",
        lambda xp, x: xp.tensordot(x[0], x[1], axes=2),
        [C(2, 2), R(4, 2, 2)],
        [C(2, 2), C(2, 2, 4)],
    )
    out += _combos(
        "tensordot((0,1),(1,2))",
        "extra",
        lambda xp, x: xp.tensordot(x[0], x[1], axes=((0, 1), (1, 2))),
        [C(2, 3)],
        [C(1, 2, 3), R(2, 2, 3, 4)],
    )
    out += _combos(
        "einsum(ij,jk->ik)",
        s + "einsum_matmult",
        lambda xp, x: xp.einsum("ij,jk->ik", x[0], x[1]),
        [R(2, 3), C(2, 3)],
        [R(3, 4), C(3, 4)],
    )
    out += _combos(
        "einsum(...ij,...jk->...ik)",
        "extra",
        lambda xp, x: xp.einsum("...ij,...jk->...ik", x[0], x[1]),
        [C(2, 3), C(2, 2, 3)],
        [C(3, 4), R(2, 3, 4)],
    )
    out += _combos(
        "einsum(ijk,lji->lki)", "extra", lambda xp, x: xp.einsum("ijk,lji->lki", x[0], x[1]), [C(3, 4, 4)], [C(4, 4, 3)]
    )
    out += _combos("einsum(k,nk->)", "extra", lambda xp, x: xp.einsum("k,nk->", x[0], x[1]), [C(5)], [R(4, 5), C(4, 5)])
    out.append(Case("product/einsum(ij->ji)/c3x4", "extra", lambda xp, x: xp.einsum("ij->ji", x), C(3, 4)))
    out.append(
        Case("product/einsum(abcd->bd)/c3x2x3x2", "extra", lambda xp, x: xp.einsum("abcd->bd", x), C(3, 2, 3, 2))
    )
    out += _combos("inner", "extra", lambda xp, x: xp.inner(x[0], x[1]), [C(3), C(2, 3)], [R(3), C(3), C(4, 3)])
    out += _combos("vdot", "extra", lambda xp, x: xp.vdot(x[0], x[1]), [C(3), R(3), C(2, 3)], [C(3), R(3), C(2, 3)])
    return out


# -- structural ops: test_systematic's and test_numpy's (real) tests, on complex arrays ---------------------------
def structural_cases(v: _Values) -> list[Case]:
    C = v.C
    c234, c44, c55 = C(2, 3, 4), C(4, 4), C(5, 5)

    def case(name: str, source: str, fn: Callable, x: Any) -> Case:
        return Case(f"structural/{name}/{_label(x) if not isinstance(x, tuple) else _args_label(x)}", source, fn, x)

    s, n = "test_systematic.py::test_", "test_numpy.py::test_"
    out = []
    for axes in (None, (0, 2, 1), (2, 0, 1), (1, 2, 0)):
        out.append(case(f"transpose{axes}", s + "transpose", lambda xp, x, a=axes: xp.transpose(x, a), c234))
    out.append(case(".T", n + "transpose", lambda xp, x: x.T, c44))
    for src, dst in ((0, 2), (2, 0), (1, 1)):
        out.append(
            case(f"moveaxis({src},{dst})", s + "moveaxis", lambda xp, x, a=src, b=dst: xp.moveaxis(x, a, b), c234)
        )
    for reps, axis in ((2, None), (2, 0), (1, 1), (0, 1)):
        fn = lambda xp, x, r=reps, a=axis: xp.repeat(x, r, axis=a)
        out.append(case(f"repeat({reps},axis={axis})", s + "repeat", fn, C(3, 1)))
    for k, axis in ((1, 0), (2, 1)):
        out.append(
            case(f"diff(n={k},axis={axis})", s + "diff", lambda xp, x, k=k, a=axis: xp.diff(x, n=k, axis=a), c55)
        )
    out.append(case("tile((1,2))", s + "tile", lambda xp, x: xp.tile(x, (1, 2)), C(1, 2)))
    out.append(case("tile((3,2,1))", s + "tile", lambda xp, x: xp.tile(x, (3, 2, 1)), C(1, 2)))
    for off in (-1, 0, 1):
        out.append(case(f"trace(offset={off})", s + "trace", lambda xp, x, o=off: xp.trace(x, offset=o), C(4, 5)))
        out.append(case(f"diag(k={off})", s + "diag", lambda xp, x, o=off: xp.diag(x, k=o), c55))
        out.append(case(f"diag(k={off})", s + "diag_flat", lambda xp, x, o=off: xp.diag(x, k=o), C(5)))
        out.append(case(f"tril(k={off})", s + "tril", lambda xp, x, o=off: xp.tril(x, k=o), c55))
        out.append(case(f"triu(k={off})", s + "triu", lambda xp, x, o=off: xp.triu(x, k=o), c55))
    out.append(case("trace", n + "trace_extradims", lambda xp, x: xp.trace(x), C(3, 4, 5)))
    out.append(case("diagonal", n + "diagonal", lambda xp, x: xp.diagonal(x, 1, 1, 2), C(3, 4, 5)))
    out.append(case("swapaxes(0,2)", s + "swapaxes", lambda xp, x: xp.swapaxes(x, 0, 2), C(3, 4, 5)))
    out.append(
        case("concatenate(axis=0)", s + "concatenate_1ist", lambda xp, x: xp.concatenate(x, axis=0), (C(1), C(3)))
    )
    out.append(
        case("concatenate(axis=1)", s + "concatenate_2d", lambda xp, x: xp.concatenate(x, axis=1), (C(2, 2), v.R(2, 2)))
    )
    out.append(case("vstack", s + "vstack_2d", lambda xp, x: xp.vstack(x), (C(2, 4), C(1, 4))))
    out.append(case("hstack", s + "hstack_2d", lambda xp, x: xp.hstack(x), (C(3, 4), C(3, 5))))
    out.append(case("stack(axis=1)", "extra", lambda xp, x: xp.stack(x, axis=1), (C(2, 3), C(2, 3))))
    out.append(case("split(2,axis=0)", s + "split_2d", lambda xp, x: tuple(xp.split(x, 2, axis=0)), C(4, 8)))
    out.append(case("reshape", n + "reshape_call", lambda xp, x: xp.reshape(x, (4, 3)), C(2, 6)))
    out.append(case(".reshape", n + "reshape_method", lambda xp, x: x.reshape((3, -1)), C(2, 6)))
    out.append(case("ravel", n + "ravel_call", lambda xp, x: xp.ravel(x), C(2, 3)))
    out.append(case("flipud", n + "flipud", lambda xp, x: xp.flipud(x), C(3, 4)))
    out.append(case("fliplr", n + "fliplr", lambda xp, x: xp.fliplr(x), C(3, 4)))
    out.append(case("rot90", n + "rot90", lambda xp, x: xp.rot90(x), C(3, 4)))
    out.append(case("roll(2,axis=1)", n + "roll", lambda xp, x: xp.roll(x, 2, axis=1), C(3, 4)))
    out.append(case("roll(3)", n + "roll_no_axis", lambda xp, x: xp.roll(x, 3), C(3, 4)))
    out.append(case("squeeze", n + "squeeze_func", lambda xp, x: xp.squeeze(x), C(3, 1, 4)))
    out.append(case("expand_dims", n + "expand_dims", lambda xp, x: xp.expand_dims(x, 1), C(3, 4)))
    out.append(case("index[1]", n + "index_ints", lambda xp, x: x[1], C(3, 4)))
    out.append(case("index[1:,::2]", n + "index_slice", lambda xp, x: x[1:, ::2], C(3, 4)))
    out.append(case("index[[0,2,2]]", n + "index_lists", lambda xp, x: x[xp.array([0, 2, 2])], C(3, 4)))
    out.append(case("index[1,[0,3]]", n + "index_mixed", lambda xp, x: x[1, xp.array([0, 3])], C(3, 4)))
    out.append(case("index fanout", n + "index_slice_fanout", lambda xp, x: x[1:] * x[:-1] + x[0], C(5)))
    mask = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
    out.append(case("where", n + "where", lambda xp, x: xp.where(xp.array(mask), x, 2.0 * x * x), C(3, 4)))
    out.append(case("where(c,r)", "extra", lambda xp, x: xp.where(xp.array(mask), x[0], x[1]), (C(3, 4), v.R(3, 4))))
    out.append(case("atleast_2d", s + "atleast_2d", lambda xp, x: xp.atleast_2d(x), C(3)))
    return out


# -- linalg: test_linalg.py's complex norms and eigen-decompositions; inv, solve, det, cholesky on complex ----------
def _hermitian(xp: Any, x: Any) -> Any:
    return (x + xp.conj(xp.swapaxes(x, -1, -2))) / 2


def _eigh_fn(uplo: str) -> Callable:
    def fn(xp: Any, x: Any) -> Any:
        w, vec = xp.linalg.eigh(_hermitian(xp, x), uplo)
        return (w, xp.abs(vec))

    return fn


def _eig(xp: Any, a: Any) -> Any:
    if xp.__name__.startswith("jax"):  # JAX differentiates eigenvectors only when asked to
        import jax

        w, vec = jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
        return w, vec
    return xp.linalg.eig(a)


def linalg_cases(v: _Values) -> list[Case]:
    C = v.C
    t = "test_linalg.py::test_"
    out = [
        Case("linalg/norm/c6", t + "vector_2norm_complex", lambda xp, x: xp.linalg.norm(x), C(6)),
        Case("linalg/norm/c6x5", t + "frobenius_norm_complex", lambda xp, x: xp.linalg.norm(x), C(6, 5)),
        Case(
            "linalg/norm(axis=(0,1))/c6x5x4",
            t + "frobenius_norm_axis_complex",
            lambda xp, x: xp.linalg.norm(x, axis=(0, 1)),
            C(6, 5, 4),
        ),
        Case(
            "linalg/norm(ord=nuc)/c6x5", t + "norm_nuclear_complex", lambda xp, x: xp.linalg.norm(x, ord="nuc"), C(6, 5)
        ),
        Case(
            "linalg/norm(ord=nuc,axis=(0,1))/c6x5x4",
            t + "norm_nuclear_axis_complex",
            lambda xp, x: xp.linalg.norm(x, ord="nuc", axis=(0, 1)),
            C(6, 5, 4),
        ),
    ]
    for order in (2, 3, 4):
        fn = lambda xp, x, o=order: xp.linalg.norm(x, ord=o)
        out.append(Case(f"linalg/norm(ord={order})/c6", t + "vector_norm_ord_complex", fn, C(6)))
    for axis in (0, 1, 2):
        fn = lambda xp, x, a=axis: xp.linalg.norm(x, axis=a)
        out.append(Case(f"linalg/norm(axis={axis})/c6x5x4", t + "norm_axis_complex", fn, C(6, 5, 4)))
    out.append(Case("linalg/eigh(L)/c6x6", t + "eigvalh_lower_complex", _eigh_fn("L"), C(6, 6)))
    out.append(Case("linalg/eigh(U)/c6x6", t + "eigvalh_upper_complex", _eigh_fn("U"), C(6, 6)))

    def eig_real(xp: Any, x: Any) -> Any:
        w, vec = _eig(xp, x)
        return (xp.abs(w), xp.abs(vec))

    def eig_complex(xp: Any, x: Any) -> Any:
        w, vec = _eig(xp, x)
        return (w, xp.abs(vec))

    out.append(Case("linalg/eig/r8x8", t + "eig_real", eig_real, v.R(8, 8)))
    out.append(Case("linalg/eig/c8x8", t + "eig_complex", eig_complex, C(8, 8)))
    out.append(Case("linalg/eig/c5x8x8", t + "eig_batched", eig_complex, C(5, 8, 8)))
    well = C(3, 3) + 3 * np.eye(3)
    out.append(Case("linalg/inv/c3x3", "extra", lambda xp, x: xp.linalg.inv(x), well))
    out.append(Case("linalg/det/c3x3", "extra", lambda xp, x: xp.linalg.det(x), well))
    out.append(Case("linalg/solve/c3x3,c3", "extra", lambda xp, x: xp.linalg.solve(x[0], x[1]), (well, C(3))))
    out.append(Case("linalg/solve/c3x3,r3x2", "extra", lambda xp, x: xp.linalg.solve(x[0], x[1]), (well, v.R(3, 2))))
    out.append(
        Case(
            "linalg/solve/r3x3,c3x2",
            "extra",
            lambda xp, x: xp.linalg.solve(x[0], x[1]),
            (v.R(3, 3) + 3 * np.eye(3), C(3, 2)),
        )
    )
    psd = lambda xp, x: xp.linalg.cholesky(x @ xp.conj(x.T) + 3 * xp.eye(3))
    out.append(Case("linalg/cholesky(x x^H + 3I)/c3x3", "extra", psd, C(3, 3)))
    return out


# -- FFTs: test_fft.py, on real inputs (complex outputs) and, for the inverse real transforms, complex inputs -------
def _fft(name: str, **kw: Any) -> Callable:
    return lambda xp, x: getattr(xp.fft, name)(x, **kw)


def fft_cases(v: _Values) -> list[Case]:
    f = "test_fft.py::test_"
    R = v.R
    out = []

    def add(name: str, source: str, fn: Callable, x: Any) -> None:
        out.append(Case(f"fft/{name}/{_label(x)}", source, fn, x))

    add("fft", f + "fft", _fft("fft"), R(5, 5))
    add("fft(ortho)", f + "fft_ortho", _fft("fft", norm="ortho"), R(5, 5))
    add("fft(axis=0)", f + "fft_axis", _fft("fft", axis=0), R(5, 5))
    add("ifft", f + "ifft", _fft("ifft"), R(5, 5))
    add("fft2", f + "fft2", _fft("fft2"), R(5, 5) / 10)
    add("ifft2", f + "ifft2", _fft("ifft2"), R(5, 5))
    add("fftn", f + "fftn", _fft("fftn"), R(5, 5) / 10)
    add("ifftn", f + "ifftn", _fft("ifftn"), R(5, 5))
    add("rfft", f + "rfft", _fft("rfft"), R(4, 4) / 10)
    add("rfft(ortho)", f + "rfft_ortho", _fft("rfft", norm="ortho"), R(4, 4) / 10)
    add("rfft(axis=0)", f + "rfft_axes", _fft("rfft", axis=0), R(4, 4) / 10)
    add("rfft2", f + "rfft2", _fft("rfft2"), R(4, 4) / 10)
    add("rfftn", f + "rfftn", _fft("rfftn"), R(4, 4, 4) / 10)
    add("rfftn(odd)", f + "rfftn_odd_not_implemented", _fft("rfftn"), R(5, 5, 5) / 10)
    add("rfftn(axes=(0,2))", f + "rfftn_axes", _fft("rfftn", axes=(0, 2)), R(4, 4, 4) / 10)
    add("rfftn[subset]", f + "rfftn_subset", lambda xp, x: xp.fft.rfftn(x)[(0, 1, 0), (3, 3, 2)], R(4, 4, 4) / 10)
    for name, d in (("fft", 5), ("ifft", 5), ("rfft", 4), ("irfft", 4)):
        for k in (-2, 2):
            x = R(d, d) if name != "irfft" else np.fft.rfft(R(d, d))
            add(f"{name}(n={d + k})", f + f"{name}_n_{'smaller' if k < 0 else 'bigger'}", _fft(name, n=d + k), x)
    for name, d in (
        ("fft2", 5),
        ("ifft2", 5),
        ("fftn", 5),
        ("ifftn", 5),
        ("rfft2", 4),
        ("irfft2", 4),
        ("rfftn", 4),
        ("irfftn", 4),
    ):
        x = R(d, d, d) / 10
        if name.startswith("ir"):
            x = getattr(np.fft, name[1:])(x)
        add(f"{name}(s,axes=(0,2))", f + f"{name}_s", _fft(name, s=[d + 2, d - 2], axes=[0, 2]), x)
    add("irfft", f + "irfft", _fft("irfft"), np.fft.rfft(R(4, 4) / 10))
    add("irfft(ortho)", f + "irfft_ortho", _fft("irfft", norm="ortho"), np.fft.rfft(R(4, 4) / 10))
    add("irfft2", f + "irfft2", _fft("irfft2"), np.fft.rfft2(R(4, 4) / 10))
    add("irfftn", f + "irfftn", _fft("irfftn"), np.fft.rfftn(R(4, 4, 4) / 10))
    add(
        "irfftn[subset]",
        f + "irfftn_subset",
        lambda xp, x: xp.fft.irfftn(x)[(0, 1, 0), (3, 3, 2)],
        np.fft.rfftn(R(4, 4, 4) / 10),
    )
    for name in ("fftshift", "ifftshift"):
        for d in (5, 4):
            add(f"{name}", f + f"{name}{'_even' if d == 4 else ''}", _fft(name), v.C(d, d) / 10)
        add(f"{name}(axes=1)", f + f"{name}_axes", _fft(name, axes=1), v.C(5, 5))
    # complex inputs to the complex transforms
    for name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"):
        add(f"{name}", "extra", _fft(name), v.C(4, 3))
    add("fft(n=6,norm=forward)", "extra", _fft("fft", n=6, norm="forward"), v.C(4))
    add("irfft(general complex)", "extra", _fft("irfft"), v.C(3, 4))
    add("irfft(n=7)", "extra", _fft("irfft", n=7), v.C(5))
    return out


# -- test_complex.py: angle, abs and real of real and complex scalars, and the derivatives of their gradients ------
def complex_module_cases(v: _Values) -> list[Case]:
    t = "test_complex.py::test_"
    out = []
    real_x, complex_x = np.asarray(0.3 + 0.5 * v.U()), np.asarray(0.3 + 0.5 * v.U() + 1j * (0.3 + 0.5 * v.U()))
    funcs: list[tuple[str, Callable, str]] = [
        ("angle", lambda xp, x: xp.angle(x), "angle"),
        ("abs", lambda xp, x: xp.abs(x), "abs"),
        ("sum(real)", lambda xp, x: xp.sum(xp.real(x)), "real_type"),
    ]
    for name, fn, test in funcs:
        for x, kind in ((real_x, "real"), (complex_x, "complex")):
            source = t + (f"{test}_{kind}" if test != "real_type" else test)
            out.append(Case(f"complex/{name}/{_label(x)}", source, fn, x))
            out.append(Case(f"complex/hvp {name}/{_label(x)}", source + " (d_fun)", fn, x, kind="hvp"))
    vec = v.C(3)
    out.append(Case("complex/sum(real)/c3", t + "real_if_close_type", lambda xp, x: xp.sum(xp.real(x)), vec))
    out.append(
        Case(
            "complex/hvp abs^2 sum/c3", "extra", lambda xp, x: xp.sum(xp.abs(x) ** 2 * xp.angle(x + 2)), vec, kind="hvp"
        )
    )
    return out


def all_cases() -> list[Case]:
    groups = [unary_cases, binary_cases, stat_cases, product_cases, structural_cases, linalg_cases, fft_cases]
    groups.append(complex_module_cases)
    cases = []
    for g in groups:
        cases += g(_Values(zlib.crc32(g.__name__.encode())))
    names = [c.name for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, f"case names must be unique: {sorted(dupes)}"
    return cases
