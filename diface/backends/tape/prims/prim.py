"""`Prim`: one operation the tape knows, with its local derivative rules.

A primitive is called like a NumPy function: on plain arrays it computes; when an argument is a traced
array it also records a node. Its rules are methods of the primitive, functions of the saved values:

- `forward(*ins, out=None, **params)`: the value (written into `out` when given);
- `jvp(ins, y, ts, b, out=None, **params)`: the output tangent from the input tangents `ts` (None for
  inputs that carry none);
- `vjp(i, ins, y, g, b, out=None, **params)`: the contribution of the output cotangent `g` to input `i`.

`b` is 0 for one tangent and 1 for a batch stacked along a leading axis. Rules are written with NumPy
calls that accept `out=`: on buffers they run without allocating (the prepared replay), and on traced
arrays they record (the reverse sweep recorded as a tape, for second order). An `elementwise`
primitive broadcasts its inputs: its batched tangents come aligned to the output's dimensions and its
VJP contributions come in the output's shape; the engine sums them back to each input's shape.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ..data.graph import Traced
from ..data.sites import user_location
from . import patterns

__all__ = [
    "ALL_INPUTS",
    "HOLOMORPHIC",
    "NO_RULE",
    "OWN",
    "PROMOTE",
    "InputsFrom",
    "Prim",
    "dtype_of",
    "expand_to",
    "into",
    "reduce_to",
    "scale",
    "shape_of",
    "SUM_TO",
    "TAYLOR_BILINEAR",
    "TAYLOR_LINEAR",
    "conjugated",
]

#: `Prim.complex`: the rules, written for real values, hold for complex ones read as described below
HOLOMORPHIC = "holomorphic"
#: `Prim.complex`: the rules handle complex values themselves (conj, real, abs, the FFTs)
OWN = "own"

#: in a table of partial derivatives: an input the tape has no derivative for (see `Prim.no_rule`)
NO_RULE = "no rule"

#: `Prim.taylor`: the JVP rule gives every Taylor coefficient
TAYLOR_LINEAR = "linear"
#: `Prim.taylor`: linear in each operand (products, contractions): cross terms for two traced ones
TAYLOR_BILINEAR = "bilinear"


class InputsFrom:
    """The input positions k, k + 1, ... (an operation's index arrays): `i in InputsFrom(1)`."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __contains__(self, i: object) -> bool:
        return isinstance(i, int) and i >= self.k

    def __repr__(self) -> str:
        return f"InputsFrom({self.k})"


#: `Prim.saves`: every input
ALL_INPUTS = InputsFrom(0)


class Prim:
    """An operation of the tape: NumPy semantics plus local JVP and VJP rules."""

    name = "?"
    #: input positions that are never differentiated (conditions, index arrays)
    nondiff: frozenset | InputsFrom = frozenset()
    #: input positions (among `nondiff`) whose derivative the tape does not know, although there is one
    #: (the order of a Bessel function): recording with an active value there raises
    no_rule: frozenset = frozenset()
    #: sparsity detection (`analysis.sparsity`): the rule `rule(run, node, ins, shape) -> Deps` giving the
    #: output's dependencies on x from the inputs' (`patterns` holds the ones many primitives share); None:
    #: no rule (detection names the operation), unless `dense_pattern`
    sparsity: Any = None
    #: sparsity detection takes every output element as depending on every element of the differentiated
    #: inputs, nonlinearly (operations with no finer rule: a SciPy solver's root)
    dense_pattern = False
    #: Taylor mode (`analysis.taylor`): how truncated Taylor series pass this operation. TAYLOR_LINEAR: its
    #: JVP rule, taken at the values, gives every coefficient (linear operations, and piecewise-linear ones,
    #: whose partial derivatives are piecewise constant); TAYLOR_BILINEAR: linear in each operand, with
    #: two traced operands the Cauchy cross terms too (`taylor_cross`); a series rule
    #: `rule(alg, input series, y₀, order) -> output series` (see `series`); None: no rule (a recording
    #: holding the operation has no Taylor plan: the core's derivation takes over). See `taylor_step`.
    taylor: Any = None
    #: input positions in which the operation is linear, the others fixed (divide's numerator, the
    #: right-hand side of a banded solve): a node traced there only is a linear Taylor step
    taylor_linear_in: frozenset = frozenset()
    #: False: the output never carries derivatives (comparisons, argmax, floor, ...)
    differentiable = True
    #: inputs broadcast against each other to the output shape
    elementwise = False
    #: the output can be a view of input 0 (reshape, transpose, basic indexing): a prepared replay
    #: computes nothing for it
    viewable = False
    #: the VJP adds into part of a zeroed target (indexing) instead of producing a whole contribution
    scatter = False
    #: the output is linear in each differentiable input (the others fixed)
    linear = False
    #: a prepared replay may write the output over an input of the same shape and dtype that dies at
    #: this step: True (any input: elementwise operations), or the input positions it may take
    inplace: bool | tuple = False
    #: how the rules treat complex values (None: a complex value through this operation is refused).
    #: HOLOMORPHIC: each rule is an expression with real coefficients in the saved values, and the
    #: operation is complex-differentiable. Then the JVP rule run on complex values is the derivative,
    #: and the VJP rule run on the *conjugated* saved values is its adjoint under Re <u, v> (PyTorch's
    #: convention): J^H g = conj(J)^T g, and conj(J(z)) = J(conj z) for such expressions. The sweeps
    #: conjugate the saved values (`conjugated`); a rule never sees a mix of real and complex
    #: differentiated inputs, since recording promotes the real ones first (`promote_inputs`).
    #: OWN: the rules take complex values as they are (conj, real, abs, the FFTs).
    complex: str | None = None
    #: a complex output promotes real differentiated inputs to complex first (False: the operation
    #: takes real inputs to complex outputs itself: the promotion, rfft)
    promotes = True

    def __call__(self, *args: Any, **params: Any) -> Any:
        carrier = None
        for a in args:
            if isinstance(a, Traced) and (carrier is None or a._tape.depth > carrier._tape.depth):
                carrier = a  # the innermost tape records (a callback's sub-tape reads f's values)
        if carrier is None:
            return self.forward(*args, **params)
        return carrier._wrap(carrier._tape.record(self, args, params))

    def __repr__(self) -> str:
        return f"<tape op {self.name}>"

    def label(self) -> str:
        """The operation as the user wrote it (`numpy.sin`, `scipy.special.jv`), for messages."""
        return self.name

    def promote_inputs(self, tape: Any, inputs: list[int], value: np.ndarray) -> list[int]:
        """The input slots with each real differentiated one promoted to complex (a node of its own)
        where the output is complex: the rules then see complex values only, and the promotion's
        reverse rule takes the real part (the adjoint of the inclusion of the reals)."""
        if value.dtype.kind != "c" or not self.promotes or self.complex is None:
            return inputs
        slots = tape.slots
        promoted = list(inputs)
        for i, s in enumerate(inputs):
            slot = slots[s]
            if i not in self.nondiff and slot.active and slot.dtype.kind == "f":
                real = tape.values[s]
                promoted[i] = tape.add_node(PROMOTE, (s,), {"dtype": value.dtype}, np.asarray(real, value.dtype))
        return promoted

    def unbounded(self, literals: tuple) -> bool:
        """Whether the value or a local partial derivative may be infinite or NaN at finite inputs (a
        division by zero, sqrt or log at 0, exp overflowing); `literals` holds the inputs' values where
        they are fixed at recording, None elsewhere. `Tape.unbounded` follows such values through the
        tape: where they meet the rules' products, those are strong (see `prims.elementwise.strong_multiply`)."""
        return False

    def no_rule_error(self, i: int) -> Exception:
        return NotSupportedError(
            f"AutoTape does not know the derivative of {self.label()} with respect to its argument {i + 1} "
            f"(called with a traced value there at {user_location()}); pass a constant there, or differentiate "
            "f with another backend (di.AutoFiniteDiff(), or di.AutoJAX() where JAX has the derivative)."
        )

    def apply(self, *args: Any, out: Any = None, **params: Any) -> Any:
        """This operation inside a rule: into `out` on buffers, recorded on traced arrays."""
        if out is None:
            return self(*args, **params)
        return self.forward(*args, out=out, **params)

    # -- rules ------------------------------------------------------------------------------------
    # Each primitive's rules name its own parameters (`forward(self, a, out=None, axis=())`); these base
    # signatures end in `*args: Any, **params: Any`, which a type checker reads as "any parameters here".
    def forward(self, *ins: Any, **params: Any) -> Any:
        """The value of `prim(*ins, **params)` (written into `out=` where a buffer is given)."""
        raise NotImplementedError

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, *_: Any, **params: Any) -> Any:
        raise NotImplementedError(f"{self.name}: no forward-mode rule")

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, *_: Any, **params: Any) -> Any:
        raise NotImplementedError(f"{self.name}: no reverse-mode rule")

    def vjp_add(self, i: int, ins: tuple, y: Any, g: Any, b: int, target: Any, **params: Any) -> None:
        """Scatter primitives: add the contribution for input `i` into `target` (buffers only)."""
        raise NotImplementedError

    def vjp_accumulate(self, i: int, ins: tuple, y: Any, g: Any, previous: Any, **params: Any) -> Any:
        """Running a tape on values (`sweeps.interpret.vjp`): `previous` plus the contribution for input `i`
        in one operation, or None (the contribution is computed and added)."""
        return None

    def vjp_first_steps(self, i: int, ins: tuple, g: Any, b: int, out: Any, params: dict) -> list | None:
        """Scatter primitives: steps writing the first contribution into `out` whole (its region and
        zeros elsewhere), or None (the sweep zeroes `out` and adds)."""
        return None

    def vjp_linear(self, i: int, ins: tuple, g: Any, b: int, params: dict) -> tuple[int, Any] | None:
        """When the contribution to input `i` is +-1 times a view of the cotangent buffer `g` (before
        summing over broadcast axes): (sign, view). Prepared sweeps then add it without a temporary."""
        return None

    # -- Taylor mode ------------------------------------------------------------------------------
    def taylor_step(self, traced: list[int], shapes: list[tuple]) -> tuple[str, Any] | None:
        """How a node of this operation passes Taylor series, given its traced (differentiated) input
        positions and its inputs' shapes: ("linear", None), ("bilinear", (i, j)) for two traced operands
        of a bilinear operation, ("series", rule), ("own", rule) for a rule over the coefficient arrays
        (`analysis.taylor`'s `_apply` says what it takes), or None (no rule)."""
        if traced and set(traced) <= self.taylor_linear_in:
            return "linear", None
        rule = self.taylor
        if rule is None:
            return None
        if rule is TAYLOR_LINEAR:
            return "linear", None
        if rule is TAYLOR_BILINEAR:
            if len(traced) <= 1:
                return "linear", None
            return ("bilinear", tuple(traced)) if len(traced) == 2 else None
        return "series", rule

    def taylor_linear(self, ins: tuple, ts: tuple) -> Any:
        """A linear Taylor step's coefficients (`ts`: a leading axis of rows) computed faster than by the
        JVP rule, or None (the JVP rule computes them)."""
        return None

    def taylor_cross(self, ins: tuple, pair: tuple[int, int], a: Any, b: Any, params: dict, collapsed: bool) -> Any:
        """A bilinear operation's P(a, b) in the operands `pair` (the others at their values), both with a
        leading batch axis (summed over it, as one row, where `collapsed`), or None: the elementwise
        product (multiply)."""
        return None

    def taylor_on_basis(self, ins: tuple, is_x: tuple[bool, ...], rows: int, basis: tuple[int, int]) -> Any:
        """The coefficients `(rows, *shape)` of a node reading x (`is_x`: which inputs are x) where x's
        coefficients are the basis vectors e_lo .. e_{hi-1} (`basis`) then zero rows (the exact
        Laplacian's pass), computed without the products, or None (the step as usual)."""
        return None

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        """What the JVP and VJP rules for the `active` inputs read: (input positions, whether the output
        is read). Shapes and dtypes do not count, values do. A prepared replay keeps those values for
        its sweeps and lets the others share buffers; the default, everything, is always safe."""
        return ALL_INPUTS, True

    # -- prepared replay: zero-argument steps over fixed buffers ------------------------------------
    def view(self, ins: tuple, *_: Any, **params: Any) -> Any:
        """Viewable primitives: the output as a view of the input buffers, or None. Called on buffers
        before any replay: it must not depend on their contents."""
        v = self.forward(*ins, **params)
        return v if isinstance(v, np.ndarray) and np.shares_memory(v, ins[0]) else None

    def tangent_view(self, ins: tuple, ts: tuple, b: int, params: dict) -> Any:
        """Viewable primitives: the output tangent as a view of the input tangent buffer, or None.
        Called on buffers before any replay: it must not depend on their contents."""
        v = self.jvp(ins, None, ts, b, None, **params)
        return v if isinstance(v, np.ndarray) and np.shares_memory(v, ts[0]) else None

    def forward_step(self, ins: tuple, out: Any, params: dict) -> Any:
        return partial(self.forward, *ins, out=out, **params)

    def jvp_step(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> Any:
        return partial(_jvp_into, self, ins, y, ts, b, out, params)

    def vjp_step(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any, params: dict) -> Any:
        if self.scatter:
            return partial(self.vjp_add, i, ins, y, g, b, out, **params)
        return partial(_vjp_into, self, i, ins, y, g, b, out, params)


def _jvp_into(prim: Prim, ins: tuple, y: Any, ts: tuple, b: int, out: Any, params: dict) -> None:
    r = prim.jvp(ins, y, ts, b, out, **params)
    if r is not out:
        np.copyto(out, r)


def _vjp_into(prim: Prim, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any, params: dict) -> None:
    r = prim.vjp(i, ins, y, g, b, out, **params)
    if r is not out:
        np.copyto(out, r)


# -- helpers for rules -----------------------------------------------------------------------------
def shape_of(a: Any) -> tuple:
    return () if isinstance(a, (int, float)) else tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def dtype_of(a: Any) -> np.dtype:
    return a.dtype if hasattr(a, "dtype") else np.result_type(a)


def into(out: Any, r: Any) -> Any:
    """`r` written into `out` (when a buffer is given and `r` is not already it)."""
    if out is None or r is out:
        return r
    np.copyto(out, r)
    return out


def scale(t: Any, p: Any, out: Any = None) -> Any:
    """`t * p`, cheap for the constants 1 and -1."""
    if isinstance(p, (int, float)):
        if p == 1:
            return into(out, t)
        if p == -1:
            return np.negative(t, out=out)
    return np.multiply(t, p, out=out)


def reduce_axes(shape: tuple, target: tuple, b: int) -> tuple[tuple, tuple]:
    """For summing an array of `shape` (b leading batch axes) down to `target` (without them): the axes
    to sum and the shape with those axes kept as 1."""
    lead = len(shape) - b - len(target)
    axes = list(range(b, b + lead))
    for i, n in enumerate(target):
        if n == 1 and shape[b + lead + i] != 1:
            axes.append(b + lead + i)
    kept = shape[:b] + (1,) * lead + target
    return tuple(axes), kept


def reduce_to(a: Any, target: tuple, b: int = 0, out: Any = None) -> Any:
    """Sum `a` (broadcast from `target`, b leading batch axes) back to `target` (the transpose of
    broadcasting)."""
    shape = shape_of(a)
    if shape[b:] == target:
        return into(out, a)
    axes, kept = reduce_axes(shape, target, b)
    if out is not None:
        view = out.reshape(kept)
        if view.base is out or view.base is out.base:  # a view of out (always, for the engine's buffers)
            np.sum(a, axis=axes, keepdims=True, out=view)
        else:  # never write through a reshape that copied
            np.copyto(out, np.reshape(np.sum(a, axis=axes, keepdims=True), shape_of(out)))
        return out
    if isinstance(a, Traced) and b == 0:
        return SUM_TO(a, shape=target)
    return np.reshape(np.sum(a, axis=axes, keepdims=True), shape[:b] + target)


def expand_to(a: Any, target: tuple, b: int = 0) -> Any:
    """`a` (b leading batch axes) with axes of size 1 in front, to broadcast against `target`."""
    shape = shape_of(a)
    missing = len(target) - (len(shape) - b)
    if missing <= 0:
        return a
    return np.reshape(a, shape[:b] + (1,) * missing + shape[b:])


class _SumTo(Prim):
    """`sum_to(a, shape)`: sums a broadcast array back to `shape` (leading axes, and axes of size 1)."""

    complex = HOLOMORPHIC
    name = "sum_to"
    linear = True
    taylor = TAYLOR_LINEAR

    @staticmethod
    def sparsity(run: Any, node: Any, ins: list, shape: tuple) -> Any:
        """Each output element on the input elements summed into it."""
        d = run.deps(ins[0])
        groups = np.broadcast_to(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape), d.shape)
        return d.reduce(groups, shape)

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), False

    def forward(self, a: Any, out: Any = None, shape: tuple = ()) -> Any:
        return reduce_to(a, shape, 0, out)

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, shape: tuple = ()) -> Any:
        return reduce_to(expand_to(ts[0], shape_of(ins[0]), b), shape, b, out)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, shape: tuple = ()) -> Any:
        target = shape_of(ins[0])
        g = expand_to(g, target, b)
        return into(out, np.broadcast_to(g, shape_of(g)[:b] + target))


SUM_TO = _SumTo()


class _Promote(Prim):
    """A real array as complex (the inclusion R -> C): the tangent promoted, the cotangent's real part."""

    name = "promote"
    linear = True
    complex = OWN
    promotes = False
    sparsity = staticmethod(patterns.same)

    def saves(self, active: tuple[int, ...], params: dict) -> tuple[Any, bool]:
        return (), False

    def forward(self, a: Any, out: Any = None, dtype: Any = None) -> Any:
        if out is None:
            return np.asarray(a, dtype=dtype)
        np.copyto(out, a)
        return out

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None, dtype: Any = None) -> Any:
        return self.apply(ts[0], out=out, dtype=dtype)

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None, dtype: Any = None) -> Any:
        if out is not None:
            np.copyto(out, np.real(g))
            return out
        r = np.real(g)  # on a traced cotangent: the tape's real part (second order)
        return r if isinstance(r, Traced) else np.array(r)


PROMOTE = _Promote()


def conjugated(v: Any) -> Any:
    """A complex value conjugated (a HOLOMORPHIC rule's saved value in the reverse sweep); others as
    they are. On a traced value this records the conjugation (second order differentiates it)."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, complex):
        return v.conjugate()
    if dtype_of(v).kind == "c":
        return np.conjugate(v)
    return v
