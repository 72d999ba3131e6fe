"""Global sparsity of torch functions, by interpreting their ATen graph on index sets (`diface._sparsity.Deps`).

Capture: `torch.fx.experimental.proxy_tensor.make_fx` with fake tensors (`tracing_mode="fake"`), under
`torch.func.functionalize` and torch's core ATen decompositions (`torch._decomp.core_aten_decompositions`).

- `make_fx` rather than `torch.export`: it takes any callable (no `nn.Module`, no export-time
  guards on Python code) and gives the same ATen-level graph; export would add strictness and start-up
  cost for nothing a pattern needs.
- fake tensors: f never runs on numbers, so a Python branch on the value of x (`if x[0] > 0`), a
  conversion to a number (`.item()`, `float(x)`) or a shape that depends on values (`x[x > 0]`,
  `nonzero`) cannot silently pick the preparation point's path; each raises `NotSupportedError`.
- functionalization: in-place writes (an in-place `f(y, x)`, `y[1:] = ...`, `y.mul_(2)`, Caches) become
  pure ops (`slice_scatter`, `copy`, ...), and views become copies, so values never alias.
- core ATen decompositions: composite ops (`roll`, `mv`, `tril`, `softplus`, `masked_fill`, ...) become a
  small closed set of core ops, each with a rule below.

Interpretation: x is the input, tensor contexts and y are inputs that depend on nothing (their values
are never relied on: a preparation may be reused with other `Constant` values); tensors f closes over
and tensors built from literals are kept as numbers (computed on the CPU), so a product with a constant
matrix gets that matrix's nonzero structure, multiplying by a constant's zero gives zero, and indices,
masks and conditions known at tracing time select exactly.

Covered ATen ops (after decomposition; `*_copy` view variants included):

- elementwise: linear (`add sub neg rsub abs maximum minimum clamp relu hardtanh where fmod remainder
  _to_copy clone` ...), bilinear (`mul`), quotient (`div`, linear by a constant), nonlinear (`exp log
  sin cos tanh sigmoid sqrt rsqrt reciprocal pow atan2 erf gelu silu softplus logaddexp` ...),
  `addcmul`, `addcdiv`; no derivative (`sign floor ceil round trunc`, comparisons, logical ops,
  `argmax argmin`, random ops, `detach`) and constants of x's shape (`zeros_like full_like` ...);
- data movement: `view reshape _unsafe_view expand permute transpose t slice select squeeze unsqueeze
  flip roll cat stack constant_pad_nd diagonal as_strided unfold repeat index index_select gather
  split split_with_sizes unbind narrow tril triu` and the functional writes `copy slice_scatter
  select_scatter diagonal_scatter as_strided_scatter index_put scatter`, with indices, masks and
  conditions known at tracing time (`where`, `masked_fill`); `index_put` with `accumulate=True`,
  `index_add` and `scatter_add`; indices computed from x make every position possible;
- reductions: `sum mean amax amin max min prod` (bilinear among the group) `var std logsumexp
  linalg_vector_norm norm` (nonlinear), cumulative `cumsum cumprod cummax cummin logcumsumexp`,
  along an axis `_softmax _log_softmax sort topk` and FFTs;
- products: `mm bmm addmm mv dot` (a constant operand gives its nonzero structure; both traced:
  bilinear, exact up to a size, then pooled);
- `native_layer_norm` (nonlinear over the normalized trailing dims);
- dense linear algebra (`linalg_*`, `_linalg_*`, `cholesky`, `triangular_solve`, `inverse`, `det`,
  ...): every output depends on every input, nonlinearly.

Anything else (convolutions, pooling, ...) raises `NotSupportedError` naming the ATen op and suggesting
`di.DenseSparsityDetector(backend)` or `di.KnownSparsity(pattern)`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._sparsity import Deps
from ._inputs import from_numpy
from ._modes import torch
from ._sparsity_rules import INPLACE_VIEWS, SUGGESTION, Const, flat, rule_for

__all__ = ["graph_sparsity"]


# -- capture ------------------------------------------------------------------------------------------------
def graph_sparsity(f: Callable, x: Any, context_values: tuple, y: Any, second: bool) -> Deps:
    """The dependencies of f's output on x (first order; with `second`, also the pairs of x's elements
    that interact nonlinearly): see the module docstring. `y` is the output buffer of an in-place
    `f(y, x, *contexts)`, else None."""
    t = torch()
    x = _tensor(x)
    tensors = [i for i, v in enumerate(context_values) if isinstance(v, (t.Tensor, np.ndarray))]
    inputs = [x] + ([] if y is None else [_tensor(y)]) + [_tensor(context_values[i]) for i in tensors]
    gm = _capture(_program(f, context_values, tensors, y is not None), inputs)
    x_deps = Deps.input(tuple(x.shape), second)
    n = x_deps.n
    values = [x_deps] + [Deps.constant(tuple(v.shape), n, second) for v in inputs[1:]]
    out = Interpreter(gm, n, second).run(values)
    if not isinstance(out, Deps):
        shape = tuple(getattr(out, "shape", ()))
        return Deps.constant(shape, n, second)
    return out


def _tensor(v: Any) -> Any:
    """A detached tensor holding `v` (x, y or a context), outside any autograd graph."""
    t = torch()
    if isinstance(v, np.ndarray):
        return from_numpy(v)
    if not isinstance(v, t.Tensor):
        return t.as_tensor(v)
    v = v.detach()
    return v.clone() if v.is_inference() else v


def _program(f: Callable, context_values: tuple, tensors: list[int], inplace: bool) -> Callable:
    """f as a function of its tensors only (x, y, tensor contexts), returning its output (y, in place)."""
    t = torch()

    def program(*args: Any) -> Any:
        x, rest = args[0], list(args[1:])
        y = rest.pop(0) if inplace else None
        cv = list(context_values)
        for i, v in zip(tensors, rest):
            cv[i] = v
        if inplace:
            f(y, x, *cv)
            return y
        out = f(x, *cv)
        return out if isinstance(out, t.Tensor) else t.as_tensor(out)

    return program


def _capture(program: Callable, inputs: list) -> Any:
    """The functionalized, decomposed ATen graph of `program` traced on fake tensors like `inputs`."""
    from torch._decomp import core_aten_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx

    t = torch()
    # torch's own table type (not the Mapping make_fx's annotation names; make_fx reads it as one)
    decompositions: Any = core_aten_decompositions()
    traced = make_fx(
        t.func.functionalize(program, remove="mutations_and_views"),
        decomposition_table=decompositions,
        tracing_mode="fake",
        _allow_non_fake_inputs=True,  # tensors f closes over become constants of the graph
    )
    try:
        return traced(*inputs)
    except Exception as e:  # f ran fine at preparation: what failed is tracing it without values
        raise NotSupportedError(_capture_message(e)) from e


def _capture_message(e: Exception) -> str:
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    first = (str(e).strip().splitlines() or [""])[0]
    if isinstance(e, (GuardOnDataDependentSymNode, DataDependentOutputException, DynamicOutputShapeException)):
        return (
            "TracerSparsityDetector: f branches on the value of x (or converts it to a number, or makes a "
            "shape from it), so its sparsity pattern may depend on x and no global pattern exists; "
            f"{SUGGESTION} ({type(e).__name__}: {first})"
        )
    return f"TracerSparsityDetector: f could not be traced without values ({type(e).__name__}: {first}); {SUGGESTION}"


# -- interpretation -----------------------------------------------------------------------------------------
def _name(target: Any) -> str:
    """The ATen op's name, a view-copy variant (`slice_copy`) under its view's name (`slice`), an in-place
    view (`squeeze_`, left by decompositions) under its out-of-place name."""
    if not hasattr(target, "overloadpacket"):
        return ""
    name = target.overloadpacket.__name__
    if name in INPLACE_VIEWS:
        return name[:-1]
    if name.endswith("_copy") and name not in ("_to_copy",):
        name = name[: -len("_copy")] or name
    return name


def _shapes(val: Any) -> Any:
    """The shapes of a node's example value(s): a tuple, or a list/tuple of them for several outputs."""
    if isinstance(val, (list, tuple)):
        return [_shapes(v) for v in val]
    shape = tuple(getattr(val, "shape", ()))
    if not all(isinstance(s, int) for s in shape):
        raise NotSupportedError(
            f"TracerSparsityDetector: a shape in f depends on the values of x ({shape}); {SUGGESTION}"
        )
    return shape


class Interpreter:
    """Runs a captured graph on `Deps` (values depending on x) and `Const` (values known)."""

    def __init__(self, gm: Any, n: int, second: bool) -> None:
        self.gm, self.n, self.second = gm, n, second
        #: the ATen op (overload) and the node being interpreted, for rules that run it on ids or zeros
        self.target: Any = None
        self.node: Any = None

    def run(self, inputs: list) -> Any:
        fx = torch().fx
        env: dict = {}
        placeholders = iter(inputs)
        result = None
        read = lambda a: env[a] if isinstance(a, fx.Node) else a
        # each value is dropped after its last use: a program's intermediates are not all held at once
        last = {a: k for k, node in enumerate(self.gm.graph.nodes) for a in node.all_input_nodes}
        for k, node in enumerate(self.gm.graph.nodes):
            args = fx.node.map_aggregate(node.args, read)
            kwargs = fx.node.map_aggregate(node.kwargs, read)
            if node.op == "placeholder":
                env[node] = next(placeholders)
            elif node.op == "get_attr":
                env[node] = Const(getattr(self.gm, node.target).detach().cpu())
            elif node.op == "call_function":
                env[node] = self.call(node, tuple(args), dict(kwargs))
                if _name(node.target) in INPLACE_VIEWS and isinstance(node.args[0], fx.Node):
                    env[node.args[0]] = env[node]  # `squeeze_` reshapes its operand for later users too
            elif node.op == "output":
                result = args[0]
            del args, kwargs
            for a in node.all_input_nodes:
                if last.get(a) == k:
                    env.pop(a, None)
        return result

    def constant(self, shapes: Any) -> Any:
        if isinstance(shapes, list):
            return [self.constant(s) for s in shapes]
        return Deps.constant(shapes, self.n, self.second)

    def deps(self, v: Any) -> Deps:
        if isinstance(v, Deps):
            return v
        return Deps.constant(v.shape if isinstance(v, Const) else (), self.n, self.second)

    def call(self, node: Any, args: tuple, kwargs: dict) -> Any:
        target = node.target
        if target is operator.getitem:
            return args[0][args[1]]
        if not hasattr(target, "overloadpacket"):
            raise NotSupportedError(f"TracerSparsityDetector: f calls {target!r} while traced; {SUGGESTION}")
        name = _name(target)
        if name == "copy_":  # writing a mutated input back: the graph's output is all that matters
            return args[1]
        if name == "_local_scalar_dense" and not isinstance(args[0], Const):
            raise NotSupportedError(
                "TracerSparsityDetector: f converts a value computed from its inputs to a Python number "
                f"(.item(), float(), int()), so its sparsity pattern may depend on x; {SUGGESTION}"
            )
        shapes = _shapes(node.meta.get("val"))
        if not any(isinstance(v, Deps) for v in flat([args, list(kwargs.values())])):
            return self.evaluate(target, args, kwargs, shapes)
        rule = rule_for(name)
        if rule is None:
            raise NotSupportedError(
                f"TracerSparsityDetector: the ATen op {target} has no sparsity rule in diface; {SUGGESTION}"
            )
        self.target, self.node = target, node
        return rule(self, name, args, kwargs, shapes)

    def evaluate(self, target: Any, args: tuple, kwargs: dict, shapes: Any) -> Any:
        """An op on known values only: computed on the CPU (its outputs depend on no input)."""
        t = torch()
        if "device" in kwargs:
            kwargs = {**kwargs, "device": t.device("cpu")}
        unwrap = lambda a: a.value if isinstance(a, Const) else a
        try:
            out = target(*t.fx.node.map_aggregate(args, unwrap), **t.fx.node.map_aggregate(kwargs, unwrap))
        except Exception:  # an op that cannot run here: its outputs still depend on no input
            return self.constant(shapes)
        return _wrap(out)


def _wrap(out: Any) -> Any:
    if isinstance(out, (list, tuple)):
        return [_wrap(o) for o in out]
    return Const(out) if isinstance(out, torch().Tensor) else out
