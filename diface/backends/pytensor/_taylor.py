"""Taylor coefficients and exact Laplacians in PyTensor: `Rop` nested `order` levels on f's symbolic
graph, vectorized over the stacked directions (`vectorize_graph`), one compiled `pytensor.function`
per operator (`graph_kernel`).

d₁ = Rop(y, x, v), dⱼ₊₁ = Rop(dⱼ, x, v): v is an input of the graph, constant to x. Like any nesting of
first-order forward mode the graph grows about 2ᵏ-fold before PyTensor's rewrites merge what repeats.

The core's derivation (nested pushforward kernels) cannot work here: it calls a compiled kernel on the
symbolic tensors of the next level's trace, which a compiled PyTensor function refuses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._kernel import Kernel, Result
from ..._problem import Problem, size_of
from ._kernels import graph_kernel
from ._trace import Trace, symbolic_like

__all__ = ["laplacian_kernel", "series_graph", "taylor_kernel"]


def _series(tr: Trace, v: Any, order: int) -> Any:
    """`(d₁, ..., d_order)` along the symbolic direction `v`, stacked: `(order, *y_shape)`."""
    import pytensor.tensor as pt
    from pytensor.gradient import Rop as _Rop

    Rop_: Any = _Rop
    d = tr.y
    coefficients = []
    for _ in range(order):
        d = Rop_(d, tr.x, v, disconnected_outputs="ignore", return_disconnected="zero")
        coefficients.append(d)
    return pt.stack(coefficients)


def series_graph(tr: Trace, T: Any, order: int) -> Any:
    """The series along each row of the stack `T`: `(B, order, *y_shape)`."""
    from pytensor.graph.replace import vectorize_graph

    if T.type.shape[0] == 1:  # one tangent: no batch axis to vectorize over
        return _series(tr, T[0], order)[None]
    v = symbolic_like(np.zeros(T.type.shape[1:], T.type.dtype), "v")
    return vectorize_graph(_series(tr, v, order), {v: T})


def taylor_kernel(problem: Problem, tangents: tuple, order: int) -> Kernel:
    """The series of every tangent, one compiled program; each tangent's coefficients are the rows of its
    `(order, *y_shape)` block."""

    def build(tr: Trace, T: Any) -> dict:
        return {"value": tr.y, "result": series_graph(tr, T, order)}

    kernel = graph_kernel(problem, f"taylor:{order}", build, tangents, tangent_like=tangents[0])
    stacked = kernel.run

    def run(x: Any, tangents: Any, cv: tuple, y: Any, full: bool) -> Result:
        r = stacked(x, tangents, cv, y, full)
        return Result(r.value, None, tuple(tuple(block) for block in r.result))

    return kernel.replace(run=run, direct_tangent=None)  # the series of a tangent is a tuple of blocks


def laplacian_kernel(problem: Problem) -> Kernel:
    """Σᵢ d²/dt² f(x + t·eᵢ) over the basis of x (one vectorized graph), summed; the full variant also
    returns the Jacobian from the first coefficients."""
    import pytensor.tensor as pt

    x_shape = problem.x_shape
    n, m = size_of(x_shape), size_of(problem.y_spec[0])

    def build(tr: Trace, _: Any) -> dict:
        y_shape = tuple(tr.y.type.shape)
        dtype = tr.x.type.dtype
        basis = pt.reshape(pt.constant(np.eye(n, dtype=dtype)), (n, *x_shape))
        both = series_graph(tr, basis, 2)  # (n, 2, *y_shape)
        jac = pt.reshape(pt.reshape(both[:, 0], (n, m)).T, (*y_shape, *x_shape))
        return {"value": tr.y, "lower": jac, "result": pt.sum(both[:, 1], axis=0)}

    return graph_kernel(problem, "laplacian", build)
