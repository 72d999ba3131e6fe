"""The machinery of `AutoTape` (see `diface/backends/tape.py`): a tape recorded from plain NumPy code.

- `_graph`: the tape as data (slots, nodes, recorder); `_prim`: primitives and their rule interface;
- `_elementwise`, `_structure`, `_reduce`, `_contract`: the primitives and their JVP/VJP rules;
- `_tracer`, `_index`, `_guards`, `_numpy`: the traced array NumPy dispatches to, index keys, guards, and
  what each NumPy function records;
- `_record`: tracing f with its contexts; `_interpret`: running a tape on any values (and so recording
  its sweeps); `_compile`: prepared replays over fixed buffers; `_kernels`: the kernels for the core.
"""

from ._graph import Node, Slot, Tape
from ._guards import TapeWarning
from ._kernels import DerivativeKernel, GradientKernel, JacobianKernel, PullbackKernel, PushforwardKernel
from ._record import Recording, record, recording_for, take_recording
from ._tracer import TapeArray

__all__ = [
    "DerivativeKernel",
    "GradientKernel",
    "JacobianKernel",
    "Node",
    "PullbackKernel",
    "PushforwardKernel",
    "Recording",
    "Slot",
    "Tape",
    "TapeArray",
    "TapeWarning",
    "record",
    "recording_for",
    "take_recording",
]
