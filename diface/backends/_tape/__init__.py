"""The machinery of `AutoTape` (see `diface/backends/tape.py`): a tape recorded from plain NumPy code.

- `_graph`: the tape as data (slots, nodes, recorder); `_prim`: primitives and their rule interface;
- the primitives and their JVP/VJP rules: `_elementwise` (ufuncs, where, clip), `_special` (the
  scipy.special ufuncs' partials), `_structure` (shapes, indexing, assignment), `_reduce`,
  `_contract` (matmul, einsum), `_convolve`, `_linalg` (inv, solve, det), `_decomp` (eigh, eig, svd,
  qr, cholesky, pinv);
- `_tracer`, `_index`, `_guards`, `_objects`, `_sites`: the traced array NumPy dispatches to, index keys,
  guards, traced values inside NumPy object arrays (arrays built from lists), and where a call happens
  (the user's line, the library function) for messages;
- what each NumPy function records: `_numpy` (the protocols' entry points) and the `_np_*` modules;
  `_hooks`: SciPy's (and a few of NumPy's) Python-level functions made to dispatch to the tape, with
  their rules in `_scipy`, `_scipy_stats` and `_np_arrange`;
- `_record`: tracing f with its contexts; `_interpret`: running a tape on any values (and so recording
  its sweeps); `_compile`: prepared replays over fixed buffers; `_kernels`: the kernels for the core,
  replaying one recording over per-thread buffers.
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
