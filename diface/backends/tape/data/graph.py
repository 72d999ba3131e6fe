"""The tape as data: slots (values), nodes (steps that read slots and write one), and the recorder.

A tape is in static single assignment form: every slot is written once, by one node or as an input, and
never changes afterwards; writing into an array while tracing (`a[i] = v`, `a += v`, `out=`) makes a new
slot holding the new version. A node is explicit data: its operation (a `Prim`, which carries the local
JVP and VJP rules as functions of saved values), the slots it reads, the slot it writes, and its
parameters (axes, shapes, index templates: metadata, never differentiated).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...._errors import NotSupportedError
from .sites import in_rule, user_location

__all__ = ["GUARD_OUTPUT", "Node", "Slot", "Tape", "Traced", "current_tape", "recording_stack"]

#: the `output` of a node that writes nothing (guards)
GUARD_OUTPUT = -1

#: a lean recording keeps the values of this many newest slots whoever holds them (a primitive's
#: recording may hold the slots it just made as numbers before it wraps them in traced arrays)
_RECENT = 8

#: the parameters of a node that has none (shared: a recording of a long loop has millions of nodes)
_NO_PARAMS: dict = {}

#: each shape's tuple, shared by the slots of that shape
_SHAPES: dict[tuple, tuple] = {}


_RECORDING = threading.local()  # .tapes: the tapes this thread is recording, innermost last


def recording_stack() -> list:
    """The tapes the calling thread is recording, innermost last (the recorder pushes and pops)."""
    tapes = getattr(_RECORDING, "tapes", None)
    if tapes is None:
        tapes = _RECORDING.tapes = []
    return tapes


def current_tape() -> Tape | None:
    """The tape the calling thread is recording (the innermost), or None."""
    tapes = getattr(_RECORDING, "tapes", None)
    return tapes[-1] if tapes else None


class Traced:
    """Base class of traced arrays (see `tracing.tracer.TapeArray`): `_wrap(slot)` makes one holding `slot` of
    the same tape."""

    __slots__ = ()

    if TYPE_CHECKING:
        # what every traced array has (`tracing.tracer.TapeArray` defines them), for the modules that see only
        # `Traced`: the tape it records on, its current slot and value, and NumPy's array attributes
        _tape: Tape

        def _read(self) -> int: ...

        def _value(self) -> Any: ...

        @property
        def shape(self) -> tuple: ...

        @property
        def dtype(self) -> np.dtype: ...

        @property
        def ndim(self) -> int: ...

        @property
        def size(self) -> int: ...

        def astype(
            self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True
        ) -> Any: ...

    def _wrap(self, slot: int) -> Traced:
        raise NotImplementedError

    def observe(self, kind: str, what: str, where: str) -> Any:
        """The outcome a guard of `kind` checks, taken from this value, with the same guard recorded on
        this value's tape: a guard of one tape replayed on traced values (second order) stays a guard,
        named where the first tape recorded it."""
        raise NotImplementedError


@dataclass(slots=True)
class Slot:
    """What the tape knows about one value.

    kind: "x" (the input differentiated), "constant" (a Constant context leaf), "cache" (a Cache
    context leaf), "y" (the output buffer of an in-place f), "literal" (a value fixed at recording:
    Python numbers, arrays captured from outside f, results computed from literals only) or "node".
    active: depends on x, so derivatives flow through it. variable: depends on some input, so a replay
    recomputes it (literals are neither). weak: a Python number (NumPy's weak-dtype scalar).
    """

    shape: tuple
    dtype: np.dtype
    kind: str
    active: bool
    variable: bool
    weak: bool = False
    node: int = -1


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """One step: `output = prim(*inputs, **params)`; guards read their input and write nothing."""

    prim: Any
    inputs: tuple[int, ...]
    output: int
    params: dict = field(default_factory=dict)

    @property
    def op(self) -> str:
        return self.prim.name

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items() if k != "where")
        return f"Node({self.op}: {list(self.inputs)} -> {self.output}{', ' + params if params else ''})"


class Tape:
    """A recording: slots with their recorded values, nodes in execution order, inputs and output."""

    def __init__(self) -> None:
        self.slots: list[Slot] = []
        self.values: list[Any] = []  # the values seen while recording, one per slot
        self.nodes: list[Node] = []
        self.x: int = -1
        #: inputs other than x: (slot, kind, context index, path inside the context value)
        self.inputs: list[tuple[int, str, int, tuple]] = []
        self.y: int = -1
        self.output: int = -1
        self.closed = False
        #: some node was recorded while a derivative rule ran on traced values (a second-order tape)
        self.rules = False
        #: a sub-tape (`scipy.callbacks`): the tape it reads values from (f's recording, or another sub-tape),
        #: its depth below the outermost recording, and the values it read: (parent slot, own slot)
        self.parent: Tape | None = None
        self.depth = 0
        self.captures: list[tuple[int, int]] = []
        self._captured: dict[int, int] = {}
        self._unbounded: tuple[int, tuple[frozenset[int], bool]] = (-1, (frozenset(), False))
        #: a lean recording (`lean`): the traced arrays alive, the computed values not yet let go, their bytes
        self.holders: list[weakref.ref] | None = None
        self._pending: list[int] = []
        self._pending_bytes = 0
        self._sweep_at = self._sweep_base = 0
        #: what `di.checkpoint` and `di.scan` marked while recording: (kind, first node, end node, detail)
        self.marks: list[tuple[str, int, int, Any]] = []
        self._numbers: dict[tuple, int] = {}

    def lean(self, budget: int) -> None:
        """Record without holding every value: a computed floating-point value is let go once no traced
        array holds its slot any more (no later step can read it; the replays recompute what they need),
        checked whenever the values held since the last check pass an eighth of `budget` bytes."""
        self.holders = []
        self._sweep_base = self._sweep_at = max(budget // 8, 1 << 20)

    # -- building ---------------------------------------------------------------------------------
    def add_slot(self, value: Any, kind: str, active: bool, variable: bool, weak: bool = False, node: int = -1) -> int:
        shape = () if weak else _SHAPES.setdefault(value.shape, value.shape)  # one tuple per shape seen
        dtype = np.result_type(value) if weak else value.dtype
        self.slots.append(Slot(shape, dtype, kind, active, variable, weak, node))
        self.values.append(value)
        if self.holders is not None and kind == "node" and dtype.kind in "fc":
            self._pending.append(len(self.slots) - 1)
            self._pending_bytes += value.nbytes
        return len(self.slots) - 1

    def let_go(self) -> None:
        """At the end of a lean recording: forget every computed value no traced array holds."""
        if self.holders is not None:
            self._let_go(recent=0)

    def _let_go(self, recent: int = _RECENT) -> None:
        """Forget the values of a lean recording's computed slots that no traced array holds (see `lean`)."""
        assert self.holders is not None
        recent = len(self.slots) - recent
        alive = [r for r in self.holders if r() is not None]
        self.holders[:] = alive
        held = set()
        for r in alive:
            h = r()
            if h is not None:
                held.add(h._slot)
        values = self.values
        pending = []
        kept = 0
        for s in self._pending:
            if s in held or s >= recent:
                pending.append(s)
                kept += values[s].nbytes
            else:
                values[s] = None
        self._pending, self._pending_bytes = pending, kept
        self._sweep_at = self._sweep_base + kept

    def literal(self, value: Any, owned: bool = False) -> int:
        """A slot for a value fixed at recording (a Python number stays a weak Python number); an array is
        copied, unless `owned` (nothing else holds it)."""
        if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
            # one slot per number (a loop's constants would otherwise make a slot per use); keyed by its
            # text too, which tells 0.0 from -0.0 and 1 from 1.0 and True
            key = (type(value), repr(value))
            slot = self._numbers.get(key)
            if slot is None:
                slot = self._numbers[key] = self.add_slot(value, "literal", False, False, weak=True)
            return slot
        if isinstance(value, np.ndarray):
            if not owned:
                value = np.array(value, copy=True)  # the value at this point of f; later writes must not leak in
        else:
            value = np.asarray(value)
            if value.dtype == object:
                raise NotSupportedError(
                    f"AutoTape cannot record a {type(value).__name__} object as an array operand; "
                    "pass NumPy arrays or numbers"
                )
        value.flags.writeable = False
        return self.add_slot(value, "literal", False, False)

    def record(self, prim: Any, args: tuple, params: dict) -> int:
        """Apply `prim` to `args` (traced arrays, arrays, numbers) now, and append the step to the tape.
        Returns the slot of the result; steps whose inputs are all literals are folded into a literal."""
        if self.closed:
            raise NotSupportedError(
                "a value traced by AutoTape was used after f returned (it escaped the recording, e.g. "
                "through a global or a closure); keep traced values inside f"
            )
        if self._pending_bytes > self._sweep_at:
            self._let_go()
        slots = []
        concrete = []
        for a in args:
            if isinstance(a, Traced):
                s = a._read() if a._tape is self else self.capture(a._tape, a._read())
            else:
                s = self.literal(a)
            slots.append(s)
            concrete.append(self.values[s])
        value = prim.forward(*concrete, **params)
        if not isinstance(value, np.ndarray):
            value = np.asarray(value)
        if value.dtype.kind == "c":
            slots = prim.promote_inputs(self, slots, value)
        return self.add_node(prim, tuple(slots), params, value)

    def child(self) -> Tape:
        """A sub-tape reading values of this one (a callback of f's, recorded on its own variable)."""
        sub = Tape()
        sub.parent = self
        sub.depth = self.depth + 1
        return sub

    def capture(self, tape: Tape, slot: int) -> int:
        """The slot of this sub-tape holding `slot` of `tape`, an enclosing tape (made on first use: an
        input of kind "capture", or a literal where the value is fixed)."""
        parent = self.parent
        if parent is None or tape.depth >= self.depth:
            raise NotSupportedError(
                "values traced by two different AutoTape recordings were combined; differentiate one function at a time"
            )
        if tape is not parent:
            slot = parent.capture(tape, slot)
        own = self._captured.get(slot)
        if own is None:
            source = parent.slots[slot]
            value = parent.values[slot]
            if not source.variable:
                own = self.literal(value)
            else:
                own = self.add_slot(value, "capture", source.active, True, weak=source.weak)
                self.captures.append((slot, own))
            self._captured[slot] = own
        return own

    def add_node(self, prim: Any, inputs: tuple[int, ...], params: dict, value: np.ndarray) -> int:
        """The slot for `value`, computed by `prim` from `inputs`: a literal if no input is variable."""
        slots = self.slots
        value.flags.writeable = False  # recorded values are never written (rules only read them)
        if not any(slots[s].variable for s in inputs):
            return self.add_slot(value, "literal", False, False)
        nondiff = prim.nondiff
        if prim.no_rule:
            for i in prim.no_rule:
                if slots[inputs[i]].active:
                    raise prim.no_rule_error(i)
        active = (
            prim.differentiable
            and value.dtype.kind in "fc"
            and any(slots[s].active for i, s in enumerate(inputs) if i not in nondiff)
        )
        if active and prim.complex != "own":
            complex_in = any(
                slots[s].active and slots[s].dtype.kind == "c" for i, s in enumerate(inputs) if i not in nondiff
            )
            if prim.complex is None and (complex_in or value.dtype.kind == "c"):
                raise NotSupportedError(
                    f"AutoTape does not differentiate {prim.label()} through complex values (at {user_location()}); "
                    "differentiate f with di.AutoJAX() or di.AutoTorch(), or keep this step real."
                )
            if complex_in and value.dtype.kind != "c":
                raise NotSupportedError(
                    f"AutoTape: {prim.label()} takes a complex value to a real one (at {user_location()}), which the "
                    "tape cannot differentiate here; take np.real, np.imag, np.abs or np.angle explicitly."
                )
        slot = self.add_slot(value, "node", active, True, node=len(self.nodes))
        self.nodes.append(Node(prim, inputs, slot, params or _NO_PARAMS))
        if in_rule() is not None:
            self.rules = True
        return slot

    def add_guard(self, prim: Any, slot: int, params: dict) -> None:
        """A check a replay makes before going on (a branch taken, a value taken out of the tape)."""
        if self.slots[slot].variable:
            self.nodes.append(Node(prim, (slot,), GUARD_OUTPUT, params))

    def release_values(self) -> None:
        """Forget the recorded values of computed slots (a compiled replay has its own buffers);
        inputs and literals stay, which is all running the tape on other values needs."""
        for s, slot in enumerate(self.slots):
            if slot.kind == "node":
                self.values[s] = None

    # -- analysis ---------------------------------------------------------------------------------
    def live_nodes(self, keep: tuple = ()) -> list[int]:
        """Indices of the nodes a replay must run: those the output, a guard or the `keep` slots depend
        on."""
        needed = {self.output, *keep}
        live = []
        for k in range(len(self.nodes) - 1, -1, -1):
            node = self.nodes[k]
            if node.output == GUARD_OUTPUT or node.output in needed:
                live.append(k)
                needed.update(node.inputs)
        live.reverse()
        return live

    def reverse_nodes(self) -> list[int]:
        """Indices of the active nodes on a path from x to the output (the reverse sweep's nodes)."""
        slots = self.slots
        reached = {self.output} if slots[self.output].active else set()
        order = []
        for k in range(len(self.nodes) - 1, -1, -1):
            node = self.nodes[k]
            if node.output in reached:
                order.append(k)
                nondiff = node.prim.nondiff
                for i, s in enumerate(node.inputs):
                    if i not in nondiff and slots[s].active:
                        reached.add(s)
        return order

    def saved_slots(self) -> set[int]:
        """The slots whose values the sweeps' rules read (see `Prim.saves`): a prepared replay keeps
        them after the forward replay; the others may share buffers."""
        slots = self.slots
        saved: set[int] = set()
        for k in self.reverse_nodes():
            node = self.nodes[k]
            prim = node.prim
            active = tuple(i for i, s in enumerate(node.inputs) if i not in prim.nondiff and slots[s].active)
            inputs, output = prim.saves(active, node.params)
            saved.update(s for i, s in enumerate(node.inputs) if i in inputs)
            if output:
                saved.add(node.output)
        return saved

    def unbounded(self) -> frozenset[int]:
        """The slots whose values may be infinite or NaN although x is finite: the outputs of operations
        that can divide by zero or overflow (`Prim.unbounded`), literals that are not finite, context
        values (any value may come in at a call), a sub-tape's captures of such values of the enclosing
        tape, and what is computed from any of them (boolean and
        integer values excepted). Sweeps check their results for NaN only where this is not empty;
        rules recorded on traced values take strong products where it meets them (`guarded`)."""
        return self._analysis()[0]

    def singular(self) -> bool:
        """Whether some operation can divide by zero or overflow (`Prim.unbounded`), or a literal is
        not finite: the sweeps may compute a partial at a pole (and multiply it by zero), silently."""
        return self._analysis()[1]

    def _analysis(self) -> tuple[frozenset[int], bool]:
        if self._unbounded[0] == len(self.nodes):
            return self._unbounded[1]
        slots, values = self.slots, self.values
        wild: set[int] = set()
        singular = False
        # a sub-tape's captures are as bounded as the enclosing tape's values they hold
        outer = self.parent.unbounded() if self.parent is not None else frozenset()
        wild_captures = {own for held, own in self.captures if held in outer}
        for s, slot in enumerate(slots):
            if slot.dtype.kind not in "fc":
                continue
            if slot.kind in ("constant", "cache") or s in wild_captures:
                wild.add(s)
            elif slot.kind == "literal" and values[s] is not None and not np.all(np.isfinite(values[s])):
                wild.add(s)
                singular = True
        for node in self.nodes:
            s = node.output
            if s == GUARD_OUTPUT or slots[s].dtype.kind not in "fc":
                continue
            literals = tuple(values[i] if slots[i].kind == "literal" else None for i in node.inputs)
            if node.prim.unbounded(literals):
                wild.add(s)
                singular = True
            elif any(i in wild for i in node.inputs):
                wild.add(s)
        result = (frozenset(wild), singular)
        self._unbounded = (len(self.nodes), result)
        return result

    def guarded(self, order: list[int], reverse: bool) -> set[int]:
        """The nodes among `order` (a sweep's) whose tangent-times-partial products may meet an
        infinity or a NaN: forward, those whose output is `unbounded` (their tangents and partials are
        finite otherwise); reverse, also those upstream of them (their cotangents may be infinite)."""
        wild = self.unbounded()
        nodes, slots = self.nodes, self.slots
        if not reverse:
            return {k for k in order if nodes[k].output in wild}
        reached = set(wild)
        guarded = set()
        for k in order:  # from the output back
            node = nodes[k]
            if node.output in reached:
                guarded.add(k)
                nondiff = node.prim.nondiff
                reached.update(s for i, s in enumerate(node.inputs) if i not in nondiff and slots[s].active)
        return guarded

    def forward_nodes(self) -> list[int]:
        """Indices of the active nodes the output depends on, in order (the forward-mode sweep)."""
        order = self.reverse_nodes()
        order.reverse()
        return order

    def describe(self) -> str:
        """The tape as text: one line per node."""
        lines = [f"x: slot {self.x} {self.slots[self.x].dtype}{list(self.slots[self.x].shape)}"]
        for slot, kind, ctx, path in self.inputs:
            lines.append(f"{kind} (context {ctx + 1}{''.join(f'[{p!r}]' for p in path)}): slot {slot}")
        for node in self.nodes:
            s = self.slots[node.output] if node.output >= 0 else None
            tag = "" if s is None else f"  {s.dtype}{list(s.shape)}{' active' if s.active else ''}"
            lines.append(repr(node) + tag)
        lines.append(f"output: slot {self.output}")
        return "\n".join(lines)
