"""The strict check: whether a prepared call matches its preparation, and the report when it does not.

`Guard` is made once per preparation from the labelled arguments it was made with (`x`, `tx`,
`tx[0]`, `context 1 (Constant)`, `y`; on trees, every leaf by its path: `x['w']`). Every prepared
call goes through it: the quick tests (`x_matches`, `tangent_matches`: a few attribute reads, for the
hot paths) and, where they do not settle it, `check`, which compares f, the backend, every label and
spec (array type, dtype, shape, device) and, for same-point preparations, the point itself, and raises
`PreparationMismatchError` naming each argument that differs and how.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import NUMPY, ArrayOps, ops_for
from ._convert import snapshot
from ._errors import PreparationMismatchError
from ._signature import Signature, describe, device_of

__all__ = ["Guard", "labelled"]


def labelled(tangent: str | None, x: Any, extra: Any, contexts: tuple, y: Any) -> tuple[tuple, tuple]:
    """`(labels, values)` of a call's arguments: x, the tangents (`tx`, or `tx[0]`, `tx[1]`, ... for a
    tuple), the context values, y."""
    labels: list[str] = ["x"]
    values: list[Any] = [x]
    if tangent is not None:
        if type(extra) is tuple:
            labels += [f"{tangent}[{i}]" for i in range(len(extra))]
            values += extra
        else:
            labels.append(tangent)
            values.append(extra)
    for i, c in enumerate(contexts):
        labels.append(f"context {i + 1} ({getattr(c, 'kind', type(c).__name__)})")
        values.append(getattr(c, "value", c))
    if y is not None:
        labels.append("y")
        values.append(y)
    return tuple(labels), tuple(values)


class Guard:
    """What strict mode compares on every prepared call (see the module docstring)."""

    def __init__(
        self,
        name: str,
        f: Any,
        backend: Any,
        labels: tuple,
        values: tuple,
        ops: ArrayOps,
        same_point: bool,
        contexts: tuple = (),
        what: str = "array type, dtype and shape of every argument",
    ) -> None:
        self.name = name
        self.f = f
        self.backend = backend
        self.ops = ops
        self.signature = Signature(labels, values)
        self.what = what
        self.same_point = same_point
        specs = self.signature.specs
        # the quick tests: x alone, and x with one tangent (a device, where it matters, is compared too);
        # a same-point preparation compares the values too, always
        x_and_contexts = labels[0] == "x" and all(label.startswith("context ") for label in labels[1:])
        self.x_spec = specs[0][:3] if x_and_contexts and not same_point else None
        arrays = len(labels) == 2 and labels[1] in ("tx", "ty") and specs[0][1] is not None and specs[1][1] is not None
        self.t_spec = specs[1] if arrays and not same_point else None
        #: x's spec beside one tangent (`tangent_matches`)
        self.xt_spec = specs[0][:3] if arrays and not same_point else None
        self.context_specs = tuple((type(c), describe(c.value)) for c in contexts)
        # same-point preparations hold copies of the point: x and the Constant values
        self.point: tuple = ()
        if same_point:
            self.point = tuple(
                (label, _held(value))
                for label, value in zip(labels, values)
                if label == "x" or label.startswith("x[") or label.startswith("x.") or "(Constant)" in label
            )

    # -- the quick tests ------------------------------------------------------------------------------
    def x_matches(self, x: Any) -> bool:
        """x alone has the prepared array type, dtype and shape (a call with nothing else)."""
        s = self.x_spec
        return (
            s is not None
            and type(x) is s[0]
            and getattr(x, "dtype", None) == s[1]
            and getattr(x, "shape", None) == s[2]
        )

    def tangent_matches(self, x: Any, t: Any) -> bool:
        """x and one tangent have the prepared specs (device included where it matters)."""
        s, ts = self.xt_spec, self.t_spec
        return (
            s is not None
            and ts is not None
            and type(x) is s[0]
            and x.dtype == s[1]
            and x.shape == s[2]
            and type(t) is ts[0]
            and getattr(t, "dtype", None) == ts[1]
            and getattr(t, "shape", None) == ts[2]
            and (ts[3] is None or t.device == ts[3])
        )

    def contexts_match(self, contexts: tuple) -> bool:
        """The contexts are of the prepared kinds, their values of the prepared specs."""
        specs = self.context_specs
        if len(contexts) != len(specs):
            return False
        for c, (context_kind, s) in zip(contexts, specs):
            v = c.value
            if type(c) is not context_kind or type(v) is not s[0]:
                return False
            if getattr(v, "dtype", None) != s[1] or getattr(v, "shape", None) != s[2]:
                return False
            if s[3] is not None and device_of(v) != s[3]:
                return False
        return True

    # -- the check ------------------------------------------------------------------------------------
    def check(
        self, labels: tuple, values: tuple, f: Any = None, backend: Any = None, structure: tuple[str, ...] = ()
    ) -> None:
        """Return if the call (its labelled arguments, its f and backend where given) matches, else raise
        `PreparationMismatchError` with one line per argument; `structure` names how the call's trees
        differ from the prepared ones (containers of other types, or in another order), if they do."""
        f_ok = f is None or f is self.f or f == self.f
        backend_ok = backend is None or backend is self.backend or backend == self.backend
        specs_ok = not structure and labels == self.signature.labels and self.signature.matches(values)
        point_ok = not self.same_point or (specs_ok and self._same_point(labels, values))
        if f_ok and backend_ok and specs_ok and point_ok:
            return
        lines = [
            f"{self.name}: the call does not match its preparation (strict mode checks f, the backend, and the "
            f"{self.what}):",
            f"  {'f':<22} "
            + (
                "matches"
                if f_ok
                else "differs: another function than at preparation (a preparation is bound to its f; "
                "to vary data between calls, pass it as di.Constant(data) instead of a new closure)"
            ),
            f"  {'backend':<22} " + ("matches" if backend_ok else f"differs: prepared for {self.backend!r}"),
        ]
        lines += [f"  {line}" for line in structure]
        lines += self.signature.report(labels, values)
        if specs_ok and not point_ok:
            lines.append(
                "  same point             differs: a same-point preparation needs the very same x and "
                "Constant values it was prepared with"
            )
        what = f"prepare_{self.name}_same_point" if self.same_point else f"prepare_{self.name}"
        lines.append(f"Prepare again for these arguments with di.{what}(...), or pass strict=False to skip the check.")
        raise PreparationMismatchError("\n".join(lines))

    def _same_point(self, labels: tuple, values: tuple) -> bool:
        now = dict(zip(labels, values))
        return all(_same_values(self.ops, now[label], held) for label, held in self.point)


def _held(value: Any) -> Any:
    """A copy of a mutable array of the point (the user may change theirs later)."""
    return snapshot(ops_for(value) or NUMPY, value)


def _same_values(ops: ArrayOps, a: Any, b: Any) -> bool:
    if a is b:
        return True
    if describe(a) != describe(b):
        return False
    if getattr(a, "shape", None) is None:
        return bool(a == b)
    if isinstance(a, (np.ndarray, np.generic)):
        return bool(np.array_equal(a, b))
    return (ops if ops.is_native(a) else NUMPY).equal(a, b)
