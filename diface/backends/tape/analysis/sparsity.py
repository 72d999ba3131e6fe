"""Global sparsity of NumPy code, by running AutoTape's recording of f on index sets (`diface._sparsity.Deps`).

f is recorded once, exactly as a preparation records it (x and the floating-point context leaves as
inputs of the tape: a Constant's values are never relied on, since a preparation may be reused with
other values); then every node maps the dependencies of its inputs to those of its output. Values
fixed at recording (literals: Python numbers, arrays f closes over, results computed from them) are
kept as numbers, so a product with a constant sparse matrix gets that matrix's pattern and a product
with a constant mask drops its zeros. A slot the tape marks inactive (integers, booleans, comparisons,
anything computed from contexts only) depends on no element of x. The result holds at every x.

Covered, every primitive of the tape, each by the rule defined with it (`Prim.sparsity`, next to its
JVP and VJP; the rules many share are in `prims.patterns`): this module holds the pass over the tape.

- elementwise: ufuncs (+, - and the piecewise-linear abs, maximum, minimum, fmod, copysign, ... linear;
  * bilinear; /, xlogy quotient; every other ufunc and scipy.special function nonlinear; the
  piecewise-constant ones, sign, floor, comparisons, depend on nothing), `where` (a condition known at
  recording selects elements exactly; a traced one takes both), `clip`;
- data movement: reshape, transpose, broadcast_to, astype, indexing, assignment (`a[i] = v`, in-place
  f(y, x) included) and concatenation, with index arrays known at recording: each is run on element
  ids, so what NumPy builds from them (stack, pad, roll, flip, tile, repeat, diagonal, take, ...) is
  exact; `index_add` (`np.add.at`);
- reductions: sum, prod (bilinear within a group), max, min, cumsum (and what is built from them:
  mean, std, var, norm, ...);
- contractions: matmul and einsum (each term of the sum, with the constant operands' zeros), full
  convolutions: first order exact, pairs only between operands that meet in a term;
- complex values and Fourier transforms: conj, real, imag linear, abs and
  angle nonlinear elementwise; fft, ifft, rfft, irfft each output on its line along the axes;
- linear algebra (inv, solve, solve_banded, det, slogdet, pinv, eigh, eig, svd, qr, cholesky): every
  output element of a matrix on every input element of that matrix (the matrices of a stack kept apart), nonlinear.

Indices computed from x or from a context (argmax, argsort, a Constant's values) make every position
possible. A decision on a traced value (`if x[0] > 0`, `float(x)`, a traced boolean mask, all recorded
as guards) means the pattern may depend on x: `NotSupportedError` names the user's line and suggests
`DenseSparsityDetector` or `KnownSparsity`, as does a primitive without a rule (named).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import NotSupportedError
from ...._sparsity import Deps, Nonlinearity
from ..data.graph import GUARD_OUTPUT, Node, Tape
from ..prims.patterns import dense
from ..recording.record import Recording, record, recording_for

__all__ = ["recording_sparsity", "tape_sparsity"]

_SUGGESTION = (
    "use di.DenseSparsityDetector(backend) (the pattern at the preparation point) or di.KnownSparsity(pattern)"
)


class _Known:
    """A value fixed at recording (a literal slot), kept as a number."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    @property
    def shape(self) -> tuple:
        return np.shape(self.value)


# -- entry points ----------------------------------------------------------------------------------------
def tape_sparsity(problem: Any, order: int, reuse: bool = False) -> Deps:
    """The dependencies of f's output on x (with `order` 2, also the pairs of x's elements that interact
    nonlinearly), from AutoTape's recording of the problem's f. `reuse`: keep the recording for the
    AutoTape kernel prepared next for this problem (AutoTape's own detection)."""
    if not isinstance(problem.x, (np.ndarray, np.generic, float, int, list)) or isinstance(problem.x, bool):
        raise NotSupportedError(
            f"TracerSparsityDetector traces NumPy code with AutoTape, and x is a {type(problem.x).__name__}; "
            + _SUGGESTION
        )
    try:
        if reuse:
            rec = recording_for(problem)
        else:
            rec = record(problem.f, problem.x, problem.contexts, problem.context_values, problem.y)
    except NotSupportedError as e:
        raise NotSupportedError(
            f"TracerSparsityDetector records f with AutoTape, which could not record it: {e} For the sparsity "
            f"pattern, {_SUGGESTION}"
        ) from e
    return recording_sparsity(rec, order == 2)


def recording_sparsity(rec: Recording, second: bool) -> Deps:
    """The dependencies of a recording's output on its x (see the module docstring)."""
    return _Run(rec.tape, second).output()


# -- the interpreter -------------------------------------------------------------------------------------
class _Run:
    """One pass over a tape: every slot's value as `Deps` (depends on inputs) or `_Known` (a number)."""

    def __init__(self, tape: Tape, second: bool) -> None:
        self.tape = tape
        self.second = second
        x = Deps.input(tape.slots[tape.x].shape, second)
        self.n = x.n
        self.env: dict[int, Any] = {tape.x: x}

    def output(self) -> Deps:
        # each value is dropped after its last use: a program's intermediates are not all held at once
        last = {s: k for k, node in enumerate(self.tape.nodes) for s in node.inputs}
        last.pop(self.tape.output, None)
        for k, node in enumerate(self.tape.nodes):
            if node.output != GUARD_OUTPUT:
                self.env[node.output] = self.step(node)
            elif node.params.get("kind") not in ("equality", "check"):
                # (an equality's branches: where's union holds; a check that raises where it fails decides nothing)
                raise _guard_error(node)
            for s in node.inputs:
                if last.get(s) == k:
                    self.env.pop(s, None)
        return self.deps(self.read(self.tape.output))

    def read(self, s: int) -> Any:
        value = self.env.get(s)
        if value is None:
            slot = self.tape.slots[s]
            if slot.kind == "literal":
                value = _Known(self.tape.values[s])
            else:  # contexts, the output buffer of an in-place f: their values are not relied on
                value = self.constant(slot.shape)
            self.env[s] = value
        return value

    def step(self, node: Node) -> Deps:
        slot = self.tape.slots[node.output]
        if not slot.active:  # no derivative flows: integers, booleans, comparisons, context-only values
            return self.constant(slot.shape)
        rule = _rule(node.prim)
        if rule is None:
            raise NotSupportedError(
                f"TracerSparsityDetector: AutoTape's operation {node.prim.label()} has no sparsity rule in "
                f"diface; {_SUGGESTION}"
            )
        return rule(self, node, [self.read(s) for s in node.inputs], slot.shape)

    # -- helpers --------------------------------------------------------------------------------------
    def constant(self, shape: tuple) -> Deps:
        return Deps.constant(tuple(shape), self.n, self.second)

    def deps(self, v: Any) -> Deps:
        return v if isinstance(v, Deps) else self.constant(v.shape)

    def stack(self, parts: list[Deps]) -> Deps:
        """The flat concatenation of `parts` (one long vector)."""
        import scipy.sparse as sp

        if not parts:
            return self.constant((0,))
        first = sp.vstack([p.first for p in parts], format="csr")
        pairs = sp.vstack([p.second for p in parts], format="csr") if self.second else None
        return Deps((first.shape[0],), self.n, first, pairs)

    def anywhere(self, parts: list[Deps], shape: tuple, kind: Nonlinearity) -> Deps:
        """Every output element on every element of `parts` (combined as `kind`)."""
        pooled = [p.reduce(np.zeros(p.size, dtype=np.int64), (), kind) for p in parts]
        merged = Deps.elementwise((), pooled, kind) if pooled else self.constant(())
        return merged.gather(np.zeros(shape, dtype=np.int64))


def _guard_error(node: Node) -> NotSupportedError:
    what = node.params.get("what") or "a decision on a traced value"
    where = node.params.get("where") or "?"
    return NotSupportedError(
        f"TracerSparsityDetector: f makes a decision on a traced value ({what} at {where}), so its sparsity "
        f"pattern may depend on x (or on a context's values) and no global pattern exists; {_SUGGESTION}"
    )


def _rule(prim: Any) -> Callable | None:
    """The primitive's sparsity rule (`Prim.sparsity`, defined with the primitive), or the dense one."""
    rule = prim.sparsity
    if rule is None and prim.dense_pattern:
        return dense
    return rule
