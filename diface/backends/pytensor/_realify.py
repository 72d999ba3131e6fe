"""Complex intermediates rewritten as real pairs, so that PyTensor differentiates them.

The core hands engines real functions (complex x and y as real pairs, docs/complex.md), so
complex values appear only inside f's graph; PyTensor's gradients of complex ops are broken (`Real`,
`Abs` of complex inputs have no valid `grad`). `realify` rebuilds f's traced graph with every complex
value held as two real tensors (real and imaginary parts) and the complex ops written with real ones:
arithmetic (+, -, *, /, negation, powers), `complex`, `real`, `imag`, `conj`, `abs`, `angle`, `exp`,
`log`, `sin`, `cos`, `sqrt`, casts, `switch`, and data movement, sums and matrix products applied to
both parts. Another op on complex values raises `NotSupportedError` naming it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._errors import NotSupportedError

__all__ = ["has_complex", "realify"]

_PARTWISE = {
    "DimShuffle", "Reshape", "Subtensor", "AdvancedSubtensor1", "AdvancedSubtensor", "Join", "Alloc",
    "SpecifyShape", "ExtractDiag", "Repeat", "Unbroadcast", "MakeVector", "Transpose", "Split",
}  # fmt: skip


def _is_complex(v: Any) -> bool:
    return str(getattr(v.type, "dtype", "")).startswith("complex")


def has_complex(inputs: list, y: Any) -> bool:
    from pytensor.graph.traversal import io_toposort

    return any(_is_complex(o) for node in io_toposort(inputs, [y]) for o in (*node.inputs, *node.outputs))


def realify(inputs: list, y: Any) -> Any:
    """y's graph (from real `inputs` to a real `y`) with its complex values as real pairs."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import io_toposort

    env: dict = {}

    def real(v: Any) -> Any:
        return env.get(v, v)

    def parts(v: Any) -> tuple:
        got = env.get(v)
        if isinstance(got, tuple):
            return got
        if isinstance(v, Constant) and _is_complex(v):
            data = np.asarray(v.data)
            return pt.constant(data.real), pt.constant(data.imag)
        r = real(v)
        return r, pt.zeros_like(r)

    for node in io_toposort(inputs, [y]):
        if not any(_is_complex(v) for v in (*node.inputs, *node.outputs)):
            new = node.clone_with_new_inputs([real(v) for v in node.inputs], strict=False)
            env.update(zip(node.outputs, new.outputs))
            continue
        outs = _rule(node, parts, real, pt)
        env.update(zip(node.outputs, outs))
    out = real(y)
    if isinstance(out, tuple):
        raise NotSupportedError("AutoPyTensor: f's output is complex inside its real pairs")
    return out


def _mul(a: tuple, b: tuple) -> tuple:
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def _div(a: tuple, b: tuple) -> tuple:
    den = b[0] ** 2 + b[1] ** 2
    return (a[0] * b[0] + a[1] * b[1]) / den, (a[1] * b[0] - a[0] * b[1]) / den


def _exp(pt: Any, a: tuple) -> tuple:
    m = pt.exp(a[0])
    return m * pt.cos(a[1]), m * pt.sin(a[1])


def _log(pt: Any, a: tuple) -> tuple:
    return 0.5 * pt.log(a[0] ** 2 + a[1] ** 2), pt.arctan2(a[1], a[0])


def _rule(node: Any, parts: Any, real: Any, pt: Any) -> list:
    name = type(node.op).__name__
    ins = node.inputs
    if name == "Elemwise":
        scalar = type(node.op.scalar_op).__name__
        ps = [parts(v) for v in ins]
        if scalar == "Complex":
            return [(real(ins[0]) + pt.zeros_like(real(ins[1])), real(ins[1]) + pt.zeros_like(real(ins[0])))]
        if scalar == "ComplexFromPolar":
            r, t = real(ins[0]), real(ins[1])
            return [(r * pt.cos(t), r * pt.sin(t))]
        if scalar == "Real":
            return [ps[0][0]]
        if scalar == "Imag":
            return [ps[0][1]]
        if scalar == "Conj":
            return [(ps[0][0], -ps[0][1])]
        if scalar == "Abs":
            return [pt.sqrt(ps[0][0] ** 2 + ps[0][1] ** 2)]
        if scalar == "Angle":
            return [pt.arctan2(ps[0][1], ps[0][0])]
        if scalar in ("Identity", "Cast"):
            return [ps[0] if _is_complex(node.outputs[0]) else ps[0][0]]
        if scalar == "Neg":
            return [(-ps[0][0], -ps[0][1])]
        if scalar in ("Add", "Sub"):
            acc = ps[0]
            for p in ps[1:]:
                acc = (acc[0] + p[0], acc[1] + p[1]) if scalar == "Add" else (acc[0] - p[0], acc[1] - p[1])
            return [acc]
        if scalar == "Mul":
            acc = ps[0]
            for p in ps[1:]:
                acc = _mul(acc, p)
            return [acc]
        if scalar == "TrueDiv":
            return [_div(ps[0], ps[1])]
        if scalar == "Sqr":
            return [_mul(ps[0], ps[0])]
        if scalar == "Exp":
            return [_exp(pt, ps[0])]
        if scalar == "Log":
            return [_log(pt, ps[0])]
        if scalar == "Sqrt":
            half = _log(pt, ps[0])
            return [_exp(pt, (0.5 * half[0], 0.5 * half[1]))]
        if scalar == "Sin":
            a, b = ps[0]
            return [(pt.sin(a) * pt.cosh(b), pt.cos(a) * pt.sinh(b))]
        if scalar == "Cos":
            a, b = ps[0]
            return [(pt.cos(a) * pt.cosh(b), -pt.sin(a) * pt.sinh(b))]
        if scalar == "Pow":
            base, power = ps
            from pytensor.graph.basic import Constant

            k = np.asarray(ins[1].data) if isinstance(ins[1], Constant) else None
            if k is not None and k.size == 1 and np.isreal(k) and float(np.real(k)) == int(np.real(k)) and 0 <= k < 9:
                acc = (pt.ones_like(base[0]), pt.zeros_like(base[0]))
                for _ in range(int(np.real(k))):
                    acc = _mul(acc, base)
                return [acc]
            return [_exp(pt, _mul(power, _log(pt, base)))]
        if scalar == "Switch":
            cond = real(ins[0])
            return [(pt.switch(cond, ps[1][0], ps[2][0]), pt.switch(cond, ps[1][1], ps[2][1]))]
        raise NotSupportedError(
            f"AutoPyTensor: no real-pair rule for the complex op {scalar}; use AutoJAX or AutoTorch"
        )
    if name in _PARTWISE:
        cplx = [_is_complex(v) for v in ins]
        sides = []
        for side in (0, 1):
            args = [parts(v)[side] if c else real(v) for v, c in zip(ins, cplx)]
            if name == "MakeVector":  # it has a dtype of its own: made again for the parts' dtype
                sides.append([pt.stack(args)])
                continue
            sides.append(node.op.make_node(*args).outputs)
        return [(re, im) for re, im in zip(*sides)]
    if name in ("Sum", "CAReduce") and type(getattr(node.op, "scalar_op", None)).__name__ == "Add":
        a, b = parts(ins[0])
        return [(pt.sum(a, axis=node.op.axis), pt.sum(b, axis=node.op.axis))]
    if name == "Dot" or (name == "Blockwise" and type(getattr(node.op, "core_op", None)).__name__ == "Dot"):
        (a, b), (c, d) = parts(ins[0]), parts(ins[1])
        return [(pt.matmul(a, c) - pt.matmul(b, d), pt.matmul(a, d) + pt.matmul(b, c))]
    raise NotSupportedError(f"AutoPyTensor: no real-pair rule for the complex op {name}; use AutoJAX or AutoTorch")
