"""Taylor coefficients and exact Laplacians on torch: nested `torch.func.jvp`, batched by `torch.func.vmap`.

The j-th coefficient along v, dⱼ = dʲ/dtʲ f(x + t·v) at t = 0, is the tangent of the (j-1)-th along v:
level 0 is `(f(x),)`, and level j pushes level j-1 forward along v with `torch.func.jvp`, keeping what it
had and adding the tangent of its last entry, so that `order` nested jvps give `(f(x), d₁, ..., d_order)`
in one evaluation of the nest. Each level doubles the work (a jvp carries a primal and a tangent, and
the nested ones carry 2^order parts), which is what nested forward mode costs without truncated
polynomial arithmetic; torch has no Taylor arithmetic of its own.

A batch of directions runs through `torch.func.vmap` over the nest (the parts that depend on x alone are
computed once, unbatched), where f allows it and it pays: decided once per preparation by timing it
from two directions on wherever f allows it (measured on CPU, orders 2 and 4, 2 and 4 directions: vmap
0.6-0.9 of a loop at 2 directions, 0.2-0.4 at 4), so preparation only tries it once, on two directions
(`threshold`); an in-place f, random numbers, a branch on a value... loop over the directions instead.

Why not the core's derivation (nested pushforward kernels): a torch pushforward kernel runs on dual
tensors of torch's one forward-AD level, which cannot nest (`Function.dual` now refuses a dual x rather
than drop its tangent); `torch.func.jvp` nests, by levels of its own.

The exact Laplacian (`laplacian_kernel`) is the sum over the basis of x of the second coefficients, the
basis vmapped in chunks (its full variant takes the Jacobian from the first coefficients, which come with
the second at no extra cost), or for a scalar f the Hessian's diagonal by reverse over reverse, whichever
ran faster at preparation: on a CPU torch's vmapped nested jvp costs 3-7x its vmapped backward passes
(tanh MLP of width 256: 11 against 1.7 ms at n = 100, 110 against 35 ms at n = 1000), so the diagonal
wins there. Neither is the collapsed forward Laplacian (the second coefficients summed at every
operation), which needs Taylor rules per operation that torch does not have.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from ..._contexts import Cache
from ..._derive._sweep import _assemble
from ..._errors import NotSupportedError
from ..._kernel import Kernel, Result
from ..._problem import Problem, size_of
from ._batching import INF, Trial
from ._linearize import basis_sample
from ._modes import FORWARD_AD, grad_mode, quiet, torch
from ._second_order import ReverseOverReverse
from ._trace import NOT_TORCH, Function

__all__ = ["Series", "laplacian_kernel", "taylor_kernel"]

STORAGE = "Cannot access data pointer of Tensor that doesn't have storage"
#: elements a chunk of basis vectors (and its coefficients) may hold in an exact Laplacian
BASIS_BUDGET = 2**22


class Series:
    """`(f(x), [d₁, ..., d_order])` along a stack of directions (each dⱼ stacked, shape `(k, *y_shape)`),
    through vmap over the nested jvps or a loop over the directions."""

    def __init__(self, problem: Problem, order: int) -> None:
        t = torch()
        self.order = order
        self.fn = Function(problem)
        self.y_shape = tuple(problem.y_spec[0])
        self.caches = tuple(isinstance(c, Cache) for c in problem.contexts)
        self.no_grad, self.jvp, self.vmap, self.stack = t.no_grad, t.func.jvp, t.func.vmap, t.stack
        self.out_dims = (None,) + (0,) * order
        #: stacks of this many directions or more run through vmap (`decide`; INF: always loop)
        self.threshold: float = 2
        self.tried = False

    def pure(self, cv: tuple) -> Callable[[Any], Any]:
        """x -> f(x) for torch.func (an in-place f writes into a fresh tensor made inside)."""
        pure = self.fn.pure(cv)
        if pure is not None:
            return pure
        t, fn, caches, y_shape = torch(), self.fn, self.caches, self.y_shape
        cv = fn.context_values(cv, caches) if cv else cv

        def inplace(x: Any) -> Any:
            args = tuple(t.empty_like(v) if c and isinstance(v, t.Tensor) else v for v, c in zip(cv, caches))
            y = t.empty(y_shape, dtype=fn.y_dtype, device=x.device)
            fn.f(y, x, *args)
            return y

        return inplace

    def nest(self, pure: Callable[[Any], Any], x: Any) -> Callable[[Any], tuple]:
        """v -> (f(x), d₁, ..., d_order) along v: `order` nested jvps."""
        jvp, order = self.jvp, self.order

        def series(v: Any) -> tuple:
            level: Callable[[Any], tuple] = lambda p: (pure(p),)
            for _ in range(order):
                level = _pushed(jvp, level, v)
            return level(x)

        return series

    def one(self, pure: Callable[[Any], Any], x: Any) -> Callable[[Any], tuple]:
        return self.nest(pure, x)

    def many(self, pure: Callable[[Any], Any], x: Any) -> Callable[[Any], tuple]:
        return self.vmap(self.nest(pure, x), out_dims=self.out_dims)

    def decide(self, x: Any, cv: tuple, directions: Any) -> None:
        """At preparation: whether vmap runs f (`threshold`), tried on two of the directions at the
        preparation point."""
        pure = self.pure(cv)
        with self.no_grad(), FORWARD_AD:
            trial = Trial(self.one(pure, x), self.many(pure, x), directions[:2], contextlib.nullcontext)
            self.threshold = threshold(trial)
        self.tried = True

    def __call__(self, x: Any, directions: Any, cv: tuple) -> tuple[Any, list]:
        pure = self.pure(cv)
        k = len(directions)
        with self.no_grad(), FORWARD_AD:  # no_grad: keeps tensors f closes over out (torch.func ignores it)
            if k >= 2 and k >= self.threshold:
                try:
                    if self.tried:
                        out = self.many(pure, x)(directions)
                    else:
                        with quiet():
                            out = self.many(pure, x)(directions)
                        self.tried = True
                    return _real(out[0]), [_real(d) for d in out[1:]]
                except NotSupportedError:
                    raise
                except Exception:  # f refuses vmap (in-place, random, a branch on a value): loop for good
                    self.threshold = INF
            try:
                rows = [self.one(pure, x)(v) for v in directions]
            except RuntimeError as e:
                if STORAGE in str(e):
                    raise NotSupportedError(NOT_TORCH) from e
                raise
        stacked = [self.stack([_real(r[j]) for r in rows]) for j in range(1, self.order + 1)]
        return _real(rows[0][0]), stacked


def threshold(trial: Trial) -> float:
    """The smallest stack of directions that runs through vmap: 2 where vmap runs f, else INF (never)."""
    return 2 if trial.vmap_works() else INF


def _pushed(jvp: Any, level: Callable[[Any], tuple], v: Any) -> Callable[[Any], tuple]:
    """The next level: what `level` gives, and the tangent of its last entry along v."""

    def pushed(p: Any) -> tuple:
        primals, tangents = jvp(level, (p,), (v,))
        return (*primals, tangents[-1])

    return pushed


def _real(d: Any) -> Any:
    """`d`, or zeros of its own memory where torch.func.jvp gave a ZeroTensor (a coefficient it knows to
    vanish, x**3's fourth say): those convert to nothing, NumPy included."""
    if d._is_zerotensor():
        return torch().zeros(d.shape, dtype=d.dtype, device=d.device)
    return d


def _directions(tangents: tuple, dtype: Any) -> Any:
    t = torch()
    stacked = t.stack(tangents)
    return stacked if stacked.dtype == dtype else stacked.to(dtype)


def _fresh(d: Any) -> Any:
    """A result of its own memory: vmap expands a coefficient that does not depend on the direction."""
    return d if d.is_contiguous() else d.contiguous()


def taylor_kernel(problem: Problem, tangents: tuple, order: int) -> Kernel:
    """`(d₁, ..., d_order)` along each tangent (the module docstring): a `Series` over the stacked
    tangents, its vmap threshold timed at the preparation point for a reusable batch."""
    series = Series(problem, order)
    x_dtype = problem.x.dtype
    if not problem.single_use and len(tangents) >= 2:
        series.decide(problem.x, problem.context_values, _directions(tangents, x_dtype))

    def taylor(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        value, ds = series(x, _directions(tangents, x_dtype), cv)
        if y is not None:
            y.copy_(value)
        result = tuple(tuple(_fresh(d[i]) for d in ds) for i in range(len(tangents)))
        return Result(value=value if full else None, result=result)

    return Kernel(taylor)


def laplacian_kernel(problem: Problem) -> Kernel:
    """The exact Laplacian: for a scalar f (not in-place), the faster at the preparation point of the
    Taylor sum (`taylor_laplacian`) and the Hessian's diagonal by reverse over reverse
    (`hessian_diagonal_laplacian`), timed (unprepared calls take the diagonal, which was the faster in
    every case measured on a CPU: torch's forward mode under vmap costs 2-4x its reverse mode); for a
    vector f, the Taylor sum."""
    taylor = taylor_laplacian(problem)
    if problem.inplace or problem.y_spec[0] != () or size_of(problem.x_shape) == 0:
        return taylor
    diagonal = hessian_diagonal_laplacian(problem)
    if problem.single_use:
        return diagonal
    times = [_best_time(k, problem) for k in (taylor, diagonal)]
    return taylor if times[0] < times[1] else diagonal


def _best_time(kernel: Kernel, problem: Problem) -> float:
    """The better of two runs of `kernel` at the preparation point after a first (which tries vmap), in
    seconds."""
    best = INF
    for k in range(3):
        start = time.perf_counter()
        kernel.run(problem.x, None, problem.context_values, None, False)
        if k:
            best = min(best, time.perf_counter() - start)
    return best


def _chunks(n: int, m: int) -> list[tuple[int, int]]:
    """Bounds of the chunks of the basis of x (n elements, products of m): `BASIS_BUDGET` elements each."""
    batch = max(1, min(n, max(BASIS_BUDGET, n * m) // max(1, n + 2 * m)))
    return [(lo, min(lo + batch, n)) for lo in range(0, n, batch)]


def _basis(problem: Problem, bounds: list) -> Callable[[int, Any], Any]:
    """k, like -> the k-th chunk of the basis of x (kept from preparation where the whole fits)."""
    ops, x_shape, x0 = problem.ops, tuple(problem.x_shape), problem.x
    n = size_of(x_shape)
    chunk = lambda lo, hi, like: ops.basis_rows(n, lo, hi, x0.dtype, like, x_shape)
    if n * n <= BASIS_BUDGET:
        kept = [chunk(lo, hi, x0) for lo, hi in bounds]
        return lambda k, like: kept[k]
    return lambda k, like: chunk(bounds[k][0], bounds[k][1], like)


def taylor_laplacian(problem: Problem) -> Kernel:
    """Σᵢ ∂²f/∂xᵢ² as the sum of the second coefficients along the basis vectors eᵢ of x (vmapped in
    chunks of `BASIS_BUDGET` elements); the full variant's Jacobian is the first coefficients, stacked
    as its columns."""
    t = torch()
    ops, x_shape = problem.ops, tuple(problem.x_shape)
    y_shape = tuple(problem.y_spec[0])
    n, m = size_of(x_shape), size_of(y_shape)
    dtype = ops.result_type(problem.x_dtype, problem.y_spec[1])
    series = Series(problem, 2)
    bounds = _chunks(n, m)
    basis = _basis(problem, bounds)
    if not problem.single_use and n >= 2:
        x0 = problem.x
        series.decide(x0, problem.context_values, basis_sample(n, x_shape, x0.dtype, x0))

    def laplacian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if n == 0:
            value = series.pure(cv)(x)
            if y is not None:
                y.copy_(value)
            zeros = t.zeros(y_shape, dtype=dtype, device=x.device)
            return Result(value if full else None, t.zeros(y_shape + x_shape, dtype=dtype, device=x.device), zeros)
        value, total, firsts = None, None, []
        for k in range(len(bounds)):
            value, (d1, d2) = series(x, basis(k, x), cv)
            part = d2.sum(0)
            total = part if total is None else total + part
            if full:
                firsts.append(d1)
        if y is not None:
            y.copy_(value)
        if not full:
            return Result(result=total)
        stacked = firsts[0] if len(firsts) == 1 else t.cat(firsts)
        return Result(value, _fresh(_assemble(ops, stacked, True, n, y_shape + x_shape, dtype)), total)

    return Kernel(laplacian)


def hessian_diagonal_laplacian(problem: Problem) -> Kernel:
    """Σᵢ (H eᵢ)ᵢ for a scalar f: the products of the gradient's recorded graph with the basis of x
    (reverse over reverse, a chunk at a time, vmapped where that pays), only their diagonal kept; the
    full variant's gradient and value come with the graph."""
    t = torch()
    x_shape = tuple(problem.x_shape)
    n = size_of(x_shape)
    plan = ReverseOverReverse(problem, None)
    plan.decide(x_shape, problem.x_dtype)
    bounds = _chunks(n, 1)
    basis = _basis(problem, bounds)
    index = [t.arange(hi - lo, device=problem.x.device) for lo, hi in bounds]

    def laplacian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        lin = plan.linearize(x, cv)
        total = None
        with grad_mode():
            for k, (lo, _) in enumerate(bounds):
                rows = lin.pull(basis(k, x)).reshape(len(index[k]), n)
                part = rows[index[k], index[k] + lo].sum()
                total = part if total is None else total + part
        if not full:
            return Result(result=total)
        return Result(lin.primal, lin.value.reshape(x_shape), total)

    return Kernel(laplacian)
