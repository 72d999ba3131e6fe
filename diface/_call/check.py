"""Checking a call against its preparation: one description of an argument's spec, one generated test
of it, and the report when a call differs.

`describe(a)` is an argument's spec: (array type, dtype, shape, device). `spec_test(spec)` is the test of
one value against a spec, `specs_test(specs)` of a sequence of values: straight-line attribute reads for
up to two values, a loop beyond. Every caller that asks "has this call the prepared specs?" uses these:
the plans' accept stage (`diface._call.plan`), the strict check (`Guard.check`), a tree's leaves
(`diface._call.trees.info.TreeInfo.matches`).

`Guard` is made once per preparation from the labelled arguments it was made with (`x`, `tx`, `tx[0]`,
`context 1 (Constant)`, `y`; on trees, every leaf by its path: `x['w']`). `check` compares f, the
backend, every label and spec and, for same-point preparations, the point itself, and raises
`PreparationMismatchError` naming each argument that differs and how.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._arrays import NUMPY, ArrayOps, ops_for
from .._errors import PreparationMismatchError
from .convert import snapshot

__all__ = [
    "Guard",
    "Signature",
    "contexts_test",
    "describe",
    "describe_value",
    "labelled",
    "spec_test",
    "specs_test",
]

#: (array type, dtype, shape, device) of an argument
Spec = tuple


def describe(a: Any) -> Spec:
    """(array type, dtype, shape, device) of an argument; dtype and shape are None for non-arrays,
    device is None for NumPy arrays and non-arrays."""
    return (type(a), getattr(a, "dtype", None), getattr(a, "shape", None), device_of(a))


def device_of(a: Any) -> Any:
    """The device of an array whose namespace says its device matters to a preparation (torch: seeds
    and buffers live there), else None."""
    if isinstance(a, (np.ndarray, np.generic)):
        return None
    ops = ops_for(a)
    return a.device if ops is not None and ops.devices_matter else None


def describe_value(spec: tuple) -> str:
    kind, dtype, shape, device = spec
    name = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__
    if dtype is None and shape is None:
        return name
    text = f"{name} {dtype} {tuple(shape) if shape is not None else ''}".strip()
    return text if device is None else f"{text} on {device}"


class Signature:
    """The labelled argument specs a preparation was made with."""

    __slots__ = ("labels", "matches", "specs")

    def __init__(self, labels: tuple[str, ...], values: tuple) -> None:
        self.labels = labels
        self.specs = tuple(describe(v) for v in values)
        #: `matches(values)`: the values have these specs, one for one
        self.matches = specs_test(self.specs)

    def report(self, labels: tuple[str, ...], values: tuple) -> list[str]:
        """One line per argument of either the preparation or the call: matching or how it differs."""
        lines = []
        now = dict(zip(labels, (describe(v) for v in values)))
        then = dict(zip(self.labels, self.specs))
        for label in dict.fromkeys((*self.labels, *labels)):
            if label not in now:
                lines.append(
                    f"  {label:<22} differs: given at preparation ({describe_value(then[label])}), missing now"
                )
            elif label not in then:
                lines.append(
                    f"  {label:<22} differs: not given at preparation, given now ({describe_value(now[label])})"
                )
            elif now[label] == then[label]:
                lines.append(f"  {label:<22} matches")
            else:
                lines.append(f"  {label:<22} differs: {_difference(then[label], now[label])}")
        return lines


def _difference(then: tuple, now: tuple) -> str:
    parts = []
    for what, a, b in zip(("array type", "dtype", "shape", "device"), then, now):
        if a != b:
            a_text = a.__qualname__ if isinstance(a, type) else (tuple(a) if what == "shape" and a is not None else a)
            b_text = b.__qualname__ if isinstance(b, type) else (tuple(b) if what == "shape" and b is not None else b)
            parts.append(f"{what} {a_text} at preparation, {b_text} now")
    return "; ".join(parts)


def spec_test(spec: Spec) -> Callable[[Any], bool]:
    """The test that a value has `spec` (see `describe`): a few attribute reads, the device only where
    the array library says it matters."""
    kind, dtype, shape, device = spec
    if dtype is None and shape is None:  # not an array: its type alone
        return lambda v: type(v) is kind
    if device is None:
        return lambda v: type(v) is kind and v.dtype == dtype and v.shape == shape
    # the type is tested first: a value of the prepared type has the device attribute its spec read
    return lambda v: type(v) is kind and v.dtype == dtype and v.shape == shape and v.device == device


def specs_test(specs: Sequence[Spec]) -> Callable[[Sequence], bool]:
    """The test that a sequence of values has `specs`, one for one: straight-line code for up to two
    values (the commonest calls: x, x and a tangent), a loop beyond."""
    tests = tuple(spec_test(s) for s in specs)
    n = len(tests)
    if n == 0:
        return lambda values: len(values) == 0
    if n == 1:
        (t0,) = tests
        return lambda values: len(values) == 1 and t0(values[0])
    if n == 2:
        t0, t1 = tests
        return lambda values: len(values) == 2 and t0(values[0]) and t1(values[1])
    return lambda values: len(values) == n and all(t(v) for t, v in zip(tests, values))


def contexts_test(contexts: tuple) -> Callable[[tuple], bool]:
    """The test that a call's contexts are of the kinds of `contexts` (those of the preparation), their
    values of the same specs: straight-line code for none and for one, a loop beyond."""
    kinds = tuple(type(c) for c in contexts)
    tests = tuple(spec_test(describe(c.value)) for c in contexts)
    n = len(kinds)
    if n == 0:
        return lambda cs: not cs
    if n == 1:
        (k0,), (t0,) = kinds, tests
        return lambda cs: len(cs) == 1 and type(cs[0]) is k0 and t0(cs[0].value)
    return lambda cs: len(cs) == n and all(type(c) is k and t(c.value) for c, k, t in zip(cs, kinds, tests))


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
        #: the accept stage's tests (`diface._call.plan`), for calls of arrays (a tree's leaves are tested
        #: by its `TreeInfo`): x's spec, the tangents' (one test per tangent), the contexts'
        array_call = labels[0] == "x"
        self.x_test = spec_test(specs[0]) if array_call else None
        tangents = [i for i, label in enumerate(labels) if label in ("tx", "ty") or label[:3] in ("tx[", "ty[")]
        self.tangent_tests = tuple(spec_test(specs[i]) for i in tangents) if array_call else None
        self.contexts_test = contexts_test(contexts)
        #: the kinds of the prepared contexts (`Constant`, `Cache`), in order
        self.context_kinds = tuple(type(c) for c in contexts)
        # same-point preparations hold copies of the point: x and the Constant values
        self.point: tuple = ()
        if same_point:
            self.point = tuple(
                (label, _held(value))
                for label, value in zip(labels, values)
                if label == "x" or label.startswith("x[") or label.startswith("x.") or "(Constant)" in label
            )

    def point_holds(self, x: Any, contexts: tuple) -> bool:
        """An array call of a same-point preparation is at the prepared point: the very same x and
        Constant values (compared by value; the specs are tested before)."""
        labels, values = labelled(None, x, None, contexts, None)
        return self._same_point(labels, values)

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
