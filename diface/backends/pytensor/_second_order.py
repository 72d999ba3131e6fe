"""Second order in PyTensor: the outer mode applied to the inner derivative's graph, one compiled program
per operator (`hvp`: `Lop` or `Rop` of `pytensor.grad`, batched; `hessian`: the vectorized Jacobian of
the gradient; `second_derivative`: of the derivative)."""

from __future__ import annotations

from typing import Any

from ..._derive import SecondOrderPlan
from ..._kernel import Kernel
from ..._problem import Problem
from ._kernels import gradient_of, graph_kernel, jacobian_graph, pullback_graph, pushforward_graph
from ._trace import Trace

__all__ = ["PyTensorNest"]


class PyTensorNest(SecondOrderPlan):
    """`outer` over `inner`, both AutoPyTensor: each second-order operator is one graph."""

    def __init__(self, outer_mode: str, inner_mode: str, problem: Problem) -> None:
        super().__init__(problem)
        self.outer_mode, self.inner_mode = outer_mode, inner_mode

    def hvp(self, tangents: tuple) -> Kernel:
        outer = self.outer_mode

        def build(tr: Trace, V: Any) -> dict:
            g = gradient_of(tr)
            inner = Trace(tr.x, tr.contexts, g)
            # H is symmetric: a pullback of the gradient is a Hessian-vector product too
            hv = pushforward_graph(inner, V) if outer == "forward" else pullback_graph(inner, V)
            return {"value": tr.y, "lower": g, "result": hv}

        return graph_kernel(self.problem, f"hvp:{outer}", build, tangents, tangent_like=self.problem.x)

    def hvp_same_point(self, tangents: tuple) -> Kernel:
        return self.hvp(tangents)

    def hessian(self) -> Kernel:
        outer = self.outer_mode

        def build(tr: Trace, _: Any) -> dict:
            g = gradient_of(tr)
            return {"value": tr.y, "lower": g, "result": jacobian_graph(tr, outer, y=g)}

        return graph_kernel(self.problem, f"hessian:{outer}", build)

    def second_derivative(self) -> Kernel:
        outer, inner = self.outer_mode, self.inner_mode

        def build(tr: Trace, _: Any) -> dict:
            d = jacobian_graph(tr, inner)
            return {"value": tr.y, "lower": d, "result": jacobian_graph(tr, outer, y=d)}

        return graph_kernel(self.problem, f"second_derivative:{outer}:{inner}", build)
