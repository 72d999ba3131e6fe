"""The machinery of `AutoTape` (see `diface/backends/tape.py`): a tape recorded from plain NumPy code.

The modules are layered: each imports only modules of the layers before it (at module level; no module
imports another inside a function), checked by tests/test_tape_layers.py.

1. data: `_graph` (the tape: slots, nodes, the recorder), `_index` (index keys), `_sites` and
   `_messages` (where a call happens, for messages), `_buffers` (buffer planning), `_dispatch` (the
   registry NumPy's protocols on a traced array go through);
2. primitives and their JVP/VJP rules: `_prim` (the rule interface), `_elementwise` (ufuncs, where,
   clip) with `_partials` (the ufuncs' partial derivatives), `_special` (the scipy.special
   ufuncs') and `_special_params` (their parameter derivatives without a closed form: primitives of
   their own), `_structure` (shapes, indexing, assignment), `_reduce`, `_scan` (cumprod), `_contract`
   (matmul, einsum), `_convolve`, `_linalg` (inv, solve, det), `_banded` (solve_banded), `_decomp` (eigh, eig, svd, qr,
   cholesky, pinv), `_guards` (branches taken while recording), `_objects` (traced values inside NumPy
   object arrays);
3. the tracer: `_tracer`, the traced array NumPy dispatches to (its Python operators: `_operators`);
4. what each NumPy function records, registered with `_dispatch` when imported: `_np_*` (among them the
   compositions of primitives for real code's functions: `_np_interp` (interp, piecewise), `_np_poly`
   (polynomials, numpy.polynomial), `_np_vectorize`, `_np_cumulative`, `_np_statistics` (nan- reductions,
   order statistics, cov), `_np_linalg_extra` (lstsq, matrix_power, ...), `_np_assorted`), `_numpy`;
   `_hooks`: SciPy's (and a few of NumPy's) Python-level functions made to dispatch to the tape, with
   their rules in `_scipy`, `_scipy_stats` (with the distributions in `_stats_laws`), `_scipy_linalg`
   (scipy.linalg, with its primitives), `_scipy_interpolate` (on `_scipy_splines`' kernels),
   `_scipy_tables` (interp1d, RegularGridInterpolator), `_scipy_samples` (integration rules on samples:
   trapezoid, simpson, romb), `_np_arrange`, `_np_poly` and `_np_vectorize`; `_scipy_roots`,
   `_quadrature` and `_odes`: SciPy's root finders and minimizers, quad/quad_vec and solve_ivp, whose
   callbacks are recorded as sub-tapes (`_callbacks`) and whose results are `_implicit` roots,
   quadratures and ODE solutions (and `_scipy_solvers`: the other solvers and integrators, whose
   callbacks may not compute with traced values); `_intercept`: NumPy's conversions and creation
   functions and the `math` module while f is recorded (conversions of traced values stay traced,
   arrays f creates are buffers it may write traced values into, math functions record);
5. recording and compiling: `_record` (tracing f with its contexts), `_interpret` (running a tape on
   any values, and so recording its sweeps), `_compile` (the prepared forward replay and reverse
   sweep over planned buffers), `_tangent` (the forward-mode sweep, symbolic in batches), `_seeds`
   (identity seeds of basis sweeps);
6. what the core calls: `_replay` (per-thread replays of one recording), `_kernels` (gradient,
   derivative, pushforward, pullback, jacobian), `_linearize` (linearizations: one forward replay,
   then batched sweeps), `_second_order` (the second-order plan: the derivative map recorded as a
   tape and linearized).
"""

from ._graph import Node, Slot, Tape
from ._kernels import DerivativeKernel, GradientKernel, JacobianKernel, PullbackKernel, PushforwardKernel
from ._linearize import TapeLinearizer
from ._record import Recording, record, recording_for, take_recording
from ._second_order import TapeSecondOrder
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
    "TapeLinearizer",
    "TapeSecondOrder",
    "record",
    "recording_for",
    "take_recording",
]
