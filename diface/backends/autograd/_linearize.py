"""f linearized at a point, for the core (`diface._linearization`): a `Tape` pulls cotangents back, a
`Recording` pushes tangents forward, each a whole batch per call.

Where autograd lacks JVP rules, pushforwards still work unless forward mode was asked for explicitly:
an elementwise primitive without one takes its partial derivatives from its VJP rule (`Recording`'s
`partials`), and through anything else J is built from pullbacks of the output basis and applied to
the tangents. Every linear map here is evaluated at the vectors it is applied to, never recorded at
one (a zero cotangent, say) and reused: rules take shortcuts at special values (autograd's eigh skips
its eigenvector terms at a zero cotangent).

Linearizations are `shareable`: their products, like the linearizers, hold `TRACING`, so no two
threads ever push or pull through one at the same time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._arrays import NUMPY
from ..._kernel import Kernel, Result
from ..._linearization import Linearization, Linearizer
from ..._problem import dtype_of, shape_of, size_of
from . import _forward
from ._forward import Recording, jvp
from ._internals import AG
from ._lock import locked
from ._messages import NoJVPRule
from ._reverse import Tape
from ._shapes import fresh
from ._trace import bound

__all__ = [
    "ForwardLinearization",
    "ReverseLinearization",
    "eager_pushforward",
    "forward_linearizer",
    "reverse_linearizer",
]


class ForwardLinearization(Linearization):
    """A `Recording`: `push` native."""

    shareable = True

    def __init__(self, recording: Recording, value: Any = None, primal: Any = None) -> None:
        self.recording = recording
        self.value = recording.value if value is None else value
        self.primal = primal

    @locked
    def push(self, tangents: Any) -> Any:
        return self.recording.push(tangents)


class ReverseLinearization(Linearization):
    """A `Tape`: `pull` native; `push` through pulls where J is symmetric (the derivative of a
    gradient: a Hessian), else through the rows of J, pulled back from the output basis (kept for
    later pushes where J is small)."""

    shareable = True

    def __init__(self, tape: Tape, symmetric: bool = False, value: Any = None, primal: Any = None) -> None:
        self.tape = tape
        self.symmetric = symmetric
        self.value = tape.value if value is None else value
        self.primal = primal
        self._rows: Any = None

    @locked
    def pull(self, cotangents: Any) -> Any:
        return self.tape.pull_rows(cotangents)

    @locked
    def push(self, tangents: Any) -> Any:
        if self.symmetric:
            return self.tape.pull_rows(tangents)
        tape = self.tape
        x_shape, value = shape_of(tape.x), AG.getval(tape.value)
        y_shape, y_dtype = shape_of(value), dtype_of(value)
        m, n, count = size_of(y_shape), size_of(x_shape), len(tangents)
        if m == 0 or n == 0 or tape.end is None:
            return np.zeros((count, *y_shape), np.result_type(dtype_of(AG.getval(tape.x)), y_dtype))
        boxed = AG.isbox(tangents)  # then, or where J holds an outer trace's boxes, computed with autograd
        columns = (AG.anp if boxed else np).reshape(tangents, (count, n)).T
        step = max(1, _forward.BATCH_ELEMENTS // n)
        parts = []
        for lo in range(0, m, step):
            hi = min(m, lo + step)
            rows = self._rows
            if rows is None:
                rows = tape.pull_rows(NUMPY.basis_rows(m, lo, hi, y_dtype, None, y_shape))
                rows = (AG.anp if AG.isbox(rows) else np).reshape(rows, (hi - lo, n))
                if hi - lo == m:
                    self._rows = rows  # all of J, small: kept for the next push (same-point calls)
            boxed = boxed or AG.isbox(rows)
            parts.append((AG.anp if boxed else np).dot(rows, columns))
        if boxed:
            return AG.anp.reshape(AG.anp.concatenate(parts).T, (count, *y_shape))
        out = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return np.ascontiguousarray(out.T).reshape(count, *y_shape)


def reverse_linearizer(f: Callable) -> Linearizer:
    """One trace of f per call; its backward pass for every cotangent of the batch."""

    @locked
    def linearize_reverse(x: Any, cv: tuple, y: Any) -> Linearization:
        return ReverseLinearization(Tape(bound(f, cv), x))

    return linearize_reverse


def forward_linearizer(f: Callable, strict: bool) -> Linearizer:
    """One recording of f per call, every tangent of the batch pushed through it. Unless `strict`, an
    elementwise primitive without a JVP rule takes its partials from its VJP rule, and any other one
    moves the linearizer for good to the rows of J (`ReverseLinearization`); `strict` raises
    `NoJVPRule` instead."""
    rows_only = [False]

    @locked
    def linearize_forward(x: Any, cv: tuple, y: Any) -> Linearization:
        fun = bound(f, cv)
        if not rows_only[0]:
            try:
                return ForwardLinearization(Recording(fun, x, partials=not strict))
            except NoJVPRule:
                if strict:
                    raise
                rows_only[0] = True
        return ReverseLinearization(Tape(fun, x))

    return linearize_forward


def eager_pushforward(f: Callable, linearized: Kernel, strict: bool) -> Kernel:
    """Pushforwards of one tangent: pushed through f as it is traced (one eager trace, as `make_jvp`:
    about half the time of a recording and a push), moving for good to `linearized` (the core's kernel
    on `forward_linearizer`) where a JVP rule is missing, unless `strict`."""
    eager = [True]

    def eager_pushforward(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        if eager[0]:
            try:
                value, t = jvp(bound(f, cv), x, tangents[0])
                return Result(value, result=(fresh(t, tangents[0]),))
            except NoJVPRule:
                if strict:
                    raise
                eager[0] = False
        return linearized.run(x, tangents, cv, y, full)

    return linearized.replace(run=eager_pushforward)
