"""HIPS autograd's complex test coverage, run through AutoTape and AutoAutograd under diface's convention.

The cases (tests/autograd_complex_cases.py) mirror the complex checks of autograd's own suite:
test_systematic.py's unary/binary ufunc, statistics, product and einsum combinations, test_linalg.py's
complex norms and eigen-decompositions, test_fft.py, test_complex.py, plus complex versions of the
structural, product and linalg functions autograd tests on real values only. Each case is checked on
four engines (the tape and autograd, forward and reverse mode): `di.pushforward` of a random complex
tangent and `di.pullback` of a random complex cotangent (real where the input or output is real), or
`di.hvp` for the real-valued functions whose gradients autograd differentiates (its `d_fun` checks),
against JAX with 64-bit floats under diface's convention (docs/complex.md):

- pushforward = ∂f·t + ∂̄f·conj(t) = `jax.jvp`;
- pullback = conj(∂f)ᵀ·ty + (∂̄f)ᵀ·conj(ty) = conj(`jax.vjp` of conj(ty));
- hvp of a real f = the pushforward of the gradient map 2∂̄f = conj(`jax.grad`),

at rtol 1e-9. An engine that cannot do a case raises `di.NotSupportedError` ("refused"); the refusals
are the explicit, reasoned list `REFUSALS` below, so a new one fails a test. autograd itself is checked
against the same reference through the conversion (its `make_vjp` is the conjugate of diface's
pullback at conj(ty); `make_jvp` is diface's pushforward).

Counts: 492 cases (336 mirror autograd's complex checks, 156 extend them) on 4 engines, 1968 checks:

    engine             passed  refused  wrong
    tape-forward          462       30      0
    tape-reverse          462       30      0
    autograd-forward      424       68      0
    autograd-reverse      484        8      0

autograd itself, through the conversion: 476 agree, 13 have no rule (vdot; mixed real and complex
arguments to inner, concatenate, where, solve; diagonal; odd-length real FFTs), 3 disagree where
autograd's own rule is wrong (`AUTOGRAD_WRONG`; diface repairs rfft's and refuses cholesky's).
"""

from __future__ import annotations

import functools
import re
import warnings
import zlib
from typing import Any

import numpy as np
import pytest
from autograd_complex_cases import all_cases

import diface as di
from conftest import HAS_AUTOGRAD, HAS_JAX

pytestmark = pytest.mark.skipif(not (HAS_JAX and HAS_AUTOGRAD), reason="needs JAX (reference) and autograd")

CASES = {c.name: c for c in all_cases()}
ENGINES = ("tape-forward", "tape-reverse", "autograd-forward", "autograd-reverse")
RTOL = 1e-9

# Every refusal, with its reason: (case names, as a regular expression matched from the start; the engines
# refusing them; why). A refusal not listed here, or a listed one that no longer happens, fails test_summary.
TAPE, AG_FWD, AG_REV = ("tape-forward", "tape-reverse"), ("autograd-forward",), ("autograd-reverse",)
REFUSALS: list[tuple[str, tuple[str, ...], str]] = [
    # the tape
    (r"unary/real_if_close/", TAPE, "whether the result is real depends on the values: take np.real"),
    (r"stat/(max|min)/c", TAPE, "no ordering of complex numbers to differentiate max/min through"),
    (r"linalg/norm\(ord=nuc", TAPE, "no rule for the SVD of a complex matrix"),
    (r"linalg/eig[(/]", TAPE, "no rule for complex eigenpairs of eig (eigh of Hermitian matrices has one)"),
    (r"linalg/cholesky", TAPE, "no rule for the Cholesky factor of a complex matrix"),
    (r"fft/i?rfft(2|n)", TAPE, "no rules for the multi-axis real FFTs (rfft2, rfftn, irfft2, irfftn)"),
    # autograd, both modes: its rules
    (r"product/vdot/", AG_FWD + AG_REV, "autograd has no rules for vdot"),
    (r"structural/diagonal/", AG_FWD + AG_REV, "autograd's diagonal VJP: offset 0 on the last two axes only"),
    (r"fft/(rfftn\(odd\)|irfft\(n=7\))", AG_REV, "autograd's real-FFT VJPs: even last lengths only"),
    (r"linalg/cholesky", AG_FWD + AG_REV, "autograd's cholesky VJP holds for real matrices only (diface refuses it)"),
    # autograd's forward mode: no JVP rules (its pullbacks are reverse mode, so cases refused there too)
    (r"fft/", AG_FWD, "autograd has no JVP rules for its FFTs and FFT shifts"),
    (r"linalg/(inv|det|solve|eigh?)[(/]", AG_FWD, "autograd has no JVP rules for inv, det, solve, eig, eigh"),
]


def _expected_refusals() -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for pattern, engines, why in REFUSALS:
        matched = [n for n in CASES if re.match(pattern, n)]
        assert matched, f"{pattern!r} matches no case"
        for n in matched:
            for e in engines:
                out.setdefault((n, e), why)
    return out


# -- the reference ---------------------------------------------------------------------------------------------------
def _leaves(a: Any) -> list:
    return list(a) if isinstance(a, (tuple, list)) else [a]


def _like(rng: np.random.Generator, a: Any) -> Any:
    """A random array shaped like `a` (a tree of tuples), complex where `a` is complex."""
    if isinstance(a, (tuple, list)):
        return tuple(_like(rng, b) for b in a)
    a = np.asarray(a)
    r = rng.standard_normal(a.shape)
    return np.asarray(r + 1j * rng.standard_normal(a.shape) if np.iscomplexobj(a) else r)


def _tree_map(f: Any, a: Any) -> Any:
    return tuple(_tree_map(f, b) for b in a) if isinstance(a, (tuple, list)) else f(a)


def _tree_map2(f: Any, a: Any, b: Any) -> Any:
    if isinstance(a, (tuple, list)):
        return tuple(_tree_map2(f, p, q) for p, q in zip(a, b))
    return f(a, b)


def _real_where_real(got: Any, want: Any) -> Any:
    return np.real(got) if not np.iscomplexobj(want) else got


def _np(a: Any) -> Any:
    return _tree_map(np.asarray, a)


#: XLA compiles the references unoptimized (the same results at RTOL in a fraction of the time), in blocks of
#: cases: one compilation for many small functions costs little more than for one
_FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
_BLOCK = 48


def _reference(name: str) -> dict:
    """The case's tangents and JAX's results under diface's convention."""
    names = list(CASES)
    return _reference_block(names.index(name) // _BLOCK)[name]


@functools.cache
def _reference_block(block: int) -> dict[str, dict]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    conj = lambda a: jax.tree_util.tree_map(jnp.conj, a)
    names = list(CASES)[block * _BLOCK : (block + 1) * _BLOCK]
    programs, inputs, tangents = [], [], {}
    for name in names:
        case = CASES[name]
        f = lambda x, case=case: case.for_jax()(jnp, x)
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        tx = _like(rng, case.x)
        if case.kind == "hvp":
            grad_map = lambda x, f=f: jnp.conj(jax.grad(f)(x))
            programs.append(lambda x, tx, ty, g=grad_map: {"hvp": jax.jvp(g, (x,), (tx,))[1]})
            tangents[name], ty = {"tx": tx}, None
        else:
            shapes = jax.eval_shape(f, case.x)
            ty = _like(rng, _tree_map(lambda s: np.zeros(s.shape, s.dtype), shapes))
            programs.append(
                lambda x, tx, ty, f=f: {
                    "push": jax.jvp(f, (x,), (tx,))[1],
                    "pull": conj(jax.vjp(f, x)[1](conj(ty))[0]),
                }
            )
            tangents[name] = {"tx": tx, "ty": ty}
        inputs.append((case.x, tx, ty))

    def run(inputs: list) -> list:
        return [program(*args) for program, args in zip(programs, inputs)]

    results = jax.jit(run, compiler_options=_FAST_COMPILE)(inputs)
    return {n: {**tangents[n], **{k: _np(v) for k, v in r.items()}} for n, r in zip(names, results)}


def _mismatch(got: Any, want: Any, kinds: bool = True) -> str | None:
    """None where `got` is `want` (values at RTOL, shapes and, with `kinds`, real/complex dtypes), else what
    differs."""
    g_leaves, w_leaves = _leaves(got), _leaves(want)
    if len(g_leaves) != len(w_leaves):
        return f"{len(g_leaves)} results, want {len(w_leaves)}"
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"shape {g.shape}, want {w.shape}"
        if kinds and np.iscomplexobj(g) != np.iscomplexobj(w):
            return f"dtype {g.dtype}, want {w.dtype}"
        atol = 1e-12 * (1.0 + float(np.max(np.abs(w), initial=0.0)))
        if not np.allclose(g, w, rtol=RTOL, atol=atol):
            err = float(np.max(np.abs(g - w)))
            return f"max |got - want| = {err:.3g} (|want| ≤ {float(np.max(np.abs(w), initial=0.0)):.3g})"
    return None


# -- the engines ------------------------------------------------------------------------------------------------
def _engine(engine: str) -> tuple[Any, Any]:
    kind, mode = engine.split("-")
    if kind == "tape":
        return di.AutoTape(mode), np
    import autograd.numpy as anp

    return di.AutoAutograd(mode), anp


def _outcome(run: Any, want: Any) -> tuple[str, str]:
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # autograd's ComplexWarning where a real argument's cotangent is real
            got = run()
    except di.NotSupportedError as e:
        return "refused", str(e).splitlines()[0][:200]
    except Exception as e:  # any other failure is a wrong answer, not a refusal
        return "wrong", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    why = _mismatch(got, want)
    return ("wrong", why) if why else ("passed", "")


@functools.cache
def outcome(name: str, engine: str) -> tuple[str, str]:
    """("passed" | "refused" | "wrong", detail) of the case on the engine: every operator checked must pass;
    a refusal of any is a refusal, a wrong number or an error other than NotSupportedError is wrong."""
    case, ref = CASES[name], _reference(name)
    backend, xp = _engine(engine)
    f = lambda x: case.fn(xp, x)
    if case.kind == "hvp":
        runs = [("hvp", lambda: di.hvp(f, backend, case.x, ref["tx"]), ref["hvp"])]
    else:
        runs = [
            ("pushforward", lambda: di.pushforward(f, backend, case.x, ref["tx"]), ref["push"]),
            ("pullback", lambda: di.pullback(f, backend, case.x, ref["ty"]), ref["pull"]),
        ]
    results = [(op, *_outcome(run, want)) for op, run, want in runs]
    for status in ("wrong", "refused"):
        hits = [f"{op}: {why}" for op, s, why in results if s == status]
        if hits:
            return status, "; ".join(hits)
    return "passed", ""


@functools.cache
def native(name: str) -> tuple[str, str]:
    """autograd's own derivatives against the reference, through the conversion: "agrees", "disagrees" or
    "unavailable" (autograd has no rule: forward-mode FFTs, for one)."""
    import autograd
    import autograd.builtins
    import autograd.numpy as anp

    case, ref = CASES[name], _reference(name)

    def f(x: Any) -> Any:  # autograd traces a tuple of outputs in its own container only
        y = case.fn(anp, x)
        return autograd.builtins.tuple(y) if isinstance(y, (tuple, list)) else y

    conj = lambda a: _tree_map(np.conj, a)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Output seems independent of input" (repeat 0 times), ComplexWarning
            if case.kind == "hvp":
                grad_map = lambda x: anp.conj(autograd.grad(f)(x))
                checks = [(autograd.make_jvp(grad_map)(case.x)(ref["tx"])[1], ref["hvp"])]
            else:
                vjp, _ = autograd.make_vjp(f)(case.x)
                checks = [(conj(vjp(conj(ref["ty"]))), ref["pull"])]
                try:  # autograd's tangent of a real output of complex x may hold an imaginary part: not its own
                    push = autograd.make_jvp(f)(case.x)(ref["tx"])[1]
                    checks.append((_tree_map2(_real_where_real, push, ref["push"]), ref["push"]))
                except NotImplementedError:  # no forward-mode rule (FFTs, linalg): the VJP alone
                    pass
    except Exception as e:
        return "unavailable", f"{type(e).__name__}: {e}"[:200]
    whys = [w for w in (_mismatch(got, want, kinds=False) for got, want in checks) if w]
    return ("disagrees", "; ".join(whys)) if whys else ("agrees", "")


# -- the tests ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_case(name):
    expected = _expected_refusals()
    for engine in ENGINES:
        status, why = outcome(name, engine)
        assert status != "wrong", f"{name} on {engine}: {why}"
        assert (status == "refused") == ((name, engine) in expected), f"{name} on {engine}: {status} {why}"


def counts() -> dict[str, dict[str, int]]:
    table = {e: {"passed": 0, "refused": 0, "wrong": 0} for e in ENGINES}
    for name in CASES:
        for e in ENGINES:
            table[e][outcome(name, e)[0]] += 1
    return table


def test_summary():
    """0 wrong on every engine, the refusals exactly the reasoned list, and at least 250 cases."""
    assert len(CASES) >= 250
    table = counts()
    assert all(row["wrong"] == 0 for row in table.values()), table
    refused = {(n, e) for n in CASES for e in ENGINES if outcome(n, e)[0] == "refused"}
    assert refused == set(_expected_refusals())


#: where autograd's own rules are wrong (its rule against JAX, by hand): diface repairs or refuses these
AUTOGRAD_WRONG = {
    "fft/rfft(n=2)/r4x4": "rfft's VJP reads n only from a positional argument: wrong factors for n=2 by keyword",
    "fft/rfft(n=6)/r4x4": "rfft's VJP reads n only from a positional argument: wrong factors for n=6 by keyword",
    "linalg/cholesky(x x^H + 3I)/c3x3": "cholesky's VJP transposes where a complex matrix needs conj transposes",
}


def test_autograd_itself_agrees_under_the_conversion():
    """autograd's make_jvp is diface's pushforward and conj(make_vjp(conj(ty))) its pullback, wherever
    autograd has the rules (it has no forward-mode FFT rules, for one) and they are right."""
    results = {n: native(n) for n in CASES}
    wrong = {n for n, (s, _) in results.items() if s == "disagrees"}
    assert wrong == set(AUTOGRAD_WRONG), {n: results[n][1] for n in wrong ^ set(AUTOGRAD_WRONG)}
    assert sum(s == "agrees" for s, _ in results.values()) >= 0.9 * len(CASES)


# -- test_complex.py's and test_direct.py's checks of types and refusals, in diface's terms -----------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_gradient_dtype_follows_the_input(engine):
    """test_real_type: the gradient of Σ Re x is real at real x and complex at complex x (and 1 either way)."""
    backend, xp = _engine(engine)
    f = lambda x: xp.sum(xp.real(x))
    for x in (np.array(2.0), np.array(1.0j), np.array([1.0, 2.0]), np.array([1.0j, 2.0])):
        g = di.gradient(f, backend, x)
        assert np.iscomplexobj(g) == np.iscomplexobj(x)
        np.testing.assert_array_equal(g, np.ones_like(x))


@pytest.mark.parametrize("engine", ENGINES)
def test_complex_output_gradient_is_refused_and_holomorphic_derivative_given(engine):
    """test_direct: autograd's grad refuses a complex output (TypeError), diface's gradient too (ShapeError);
    holomorphic_grad of x·(1 + 0.2j) is 1 + 0.2j, diface's derivative."""
    backend = _engine(engine)[0]
    f = lambda x: x * (1.0 + 0.2j)
    with pytest.raises(di.ShapeError):
        di.gradient(f, backend, np.array(1.0))
    np.testing.assert_allclose(di.derivative(f, backend, np.array(1.0 + 0.0j)), 1.0 + 0.2j, rtol=1e-12)
    np.testing.assert_allclose(di.derivative(f, backend, 1.0), 1.0 + 0.2j, rtol=1e-12)
