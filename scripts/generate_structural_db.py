"""Generate diface's structural conformance database from PyTorch, in float64.

    python scripts/generate_structural_db.py            # rewrites diface/testing/data/structural.json
    python scripts/generate_structural_db.py --check    # exit 1 if the shipped file differs

Families and cases follow the structural AD notes: where (mixed masks, tensor/tensor branches, a
scalar branch broadcast against a tensor and the reverse), cat (leading, interior and negative axes),
narrow (positive and negative dims) and clamp (scalar, tensor and broadcast tensor bounds). Masks,
axes, starts and lengths are metadata and never differentiated. Clamp inputs keep every element at
least 0.05 away from its bounds: x == lo and x == hi are nonsmooth and are not probed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

OUT = Path(__file__).resolve().parent.parent / "diface" / "testing" / "data" / "structural.json"
MARGIN = 0.05  # minimal distance of clamp inputs from their bounds


def _mask(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    while True:  # mixed: both values present
        m = rng.random(shape) < 0.5
        if m.any() and not m.all():
            return m


def _bounded(rng: np.random.Generator, shape: tuple, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """x with every element at least MARGIN from lo and hi, below, between and above them."""
    lo_b, hi_b = np.broadcast_to(lo, shape), np.broadcast_to(hi, shape)
    x = rng.uniform(-2.0, 2.0, shape)
    bad = (np.abs(x - lo_b) < MARGIN) | (np.abs(x - hi_b) < MARGIN)
    while bad.any():
        x[bad] = rng.uniform(-2.0, 2.0, int(bad.sum()))
        bad = (np.abs(x - lo_b) < MARGIN) | (np.abs(x - hi_b) < MARGIN)
    return x


def cases(rng: np.random.Generator) -> list[dict[str, Any]]:
    n = rng.standard_normal
    lo_t = rng.uniform(-1.0, -0.2, (3, 4))
    hi_t = lo_t + rng.uniform(0.6, 1.5, (3, 4))
    lo_b = rng.uniform(-1.0, -0.2, (4,))
    hi_b = rng.uniform(0.2, 1.0, (3, 1))
    return [
        dict(
            family="where",
            case="mixed mask, tensor/tensor branches",
            op="where",
            metadata=dict(condition=_mask(rng, (3, 4))),
            inputs=dict(x=n((3, 4)), y=n((3, 4))),
        ),
        dict(
            family="where",
            case="row mask broadcast against tensor branches",
            op="where",
            metadata=dict(condition=_mask(rng, (1, 4))),
            inputs=dict(x=n((3, 4)), y=n((3, 4))),
        ),
        dict(
            family="where",
            case="scalar x broadcast against tensor y",
            op="where",
            metadata=dict(condition=_mask(rng, (3, 4))),
            inputs=dict(x=n(()), y=n((3, 4))),
        ),
        dict(
            family="where",
            case="tensor x broadcast against scalar y",
            op="where",
            metadata=dict(condition=_mask(rng, (3, 4))),
            inputs=dict(x=n((3, 4)), y=n(())),
        ),
        dict(
            family="cat",
            case="leading axis, three inputs",
            op="cat",
            metadata=dict(dim=0),
            inputs=dict(a=n((2, 3)), b=n((1, 3)), c=n((3, 3))),
        ),
        dict(
            family="cat",
            case="interior axis",
            op="cat",
            metadata=dict(dim=1),
            inputs=dict(a=n((2, 1, 4)), b=n((2, 3, 4))),
        ),
        dict(
            family="cat", case="negative axis", op="cat", metadata=dict(dim=-1), inputs=dict(a=n((2, 3)), b=n((2, 2)))
        ),
        dict(
            family="narrow",
            case="positive dim",
            op="narrow",
            metadata=dict(dim=1, start=1, length=3),
            inputs=dict(a=n((4, 5))),
        ),
        dict(
            family="narrow",
            case="leading dim",
            op="narrow",
            metadata=dict(dim=0, start=2, length=2),
            inputs=dict(a=n((5, 3))),
        ),
        dict(
            family="narrow",
            case="negative dim",
            op="narrow",
            metadata=dict(dim=-1, start=2, length=2),
            inputs=dict(a=n((3, 4, 5))),
        ),
        dict(
            family="clamp",
            case="scalar bounds",
            op="clamp",
            metadata={},
            inputs=dict(x=_bounded(rng, (3, 4), np.array(-0.5), np.array(0.5)), lo=np.array(-0.5), hi=np.array(0.5)),
        ),
        dict(
            family="clamp",
            case="tensor bounds",
            op="clamp",
            metadata={},
            inputs=dict(x=_bounded(rng, (3, 4), lo_t, hi_t), lo=lo_t, hi=hi_t),
        ),
        dict(
            family="clamp",
            case="broadcast tensor bounds",
            op="clamp",
            metadata={},
            inputs=dict(x=_bounded(rng, (3, 4), lo_b, hi_b), lo=lo_b, hi=hi_b),
        ),
    ]


def torch_op(op: str, meta: dict, inputs: list) -> Any:
    if op == "where":
        return torch.where(torch.as_tensor(meta["condition"]), inputs[0], inputs[1])
    if op == "cat":
        return torch.cat(inputs, dim=meta["dim"])
    if op == "narrow":
        return inputs[0].narrow(meta["dim"], meta["start"], meta["length"])
    if op == "clamp":
        return torch.clamp(inputs[0], inputs[1], inputs[2])
    raise KeyError(op)


def record(case: dict, rng: np.random.Generator) -> dict:
    names = list(case["inputs"])
    arrays = [np.asarray(case["inputs"][k], dtype=np.float64) for k in names]
    meta = case["metadata"]
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out = torch_op(case["op"], meta, tensors)
    jvp = {}
    for i, name in enumerate(names):
        tangent = rng.standard_normal(arrays[i].shape)

        def along(t: Any, i: int = i) -> Any:
            args = [x.detach() for x in tensors]
            args[i] = t
            return torch_op(case["op"], meta, args)

        _, ty = torch.func.jvp(along, (tensors[i].detach(),), (torch.tensor(tangent),))
        jvp[name] = dict(tangent=tangent.tolist(), jvp=ty.numpy().tolist())
    cotangent = rng.standard_normal(tuple(out.shape))
    grads = torch.autograd.grad(out, tensors, torch.tensor(cotangent))
    return dict(
        family=case["family"],
        case=case["case"],
        op=case["op"],
        metadata={k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in meta.items()},
        differentiable=names,
        inputs={k: a.tolist() for k, a in zip(names, arrays)},
        output=out.detach().numpy().tolist(),
        jvp=jvp,
        vjp=dict(cotangent=cotangent.tolist(), cotangents={k: g.numpy().tolist() for k, g in zip(names, grads)}),
        torch_version=torch.__version__.split("+")[0],
    )


def build() -> dict:
    rng = np.random.default_rng(20261121)
    return dict(
        description="Structural conformance database of diface: where, cat, narrow, clamp (float64, from PyTorch)",
        generator="scripts/generate_structural_db.py",
        records=[record(c, rng) for c in cases(rng)],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing")
    args = parser.parse_args()
    text = json.dumps(build(), indent=1) + "\n"
    if args.check:
        same = OUT.read_text() == text
        print("structural.json is up to date" if same else "structural.json differs from the generator's output")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
