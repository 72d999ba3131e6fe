"""The machinery of `AutoAutograd` (see `diface/backends/autograd.py`), bottom-up:

- `_internals`: autograd's modules and internals, bound on first use, and this backend's node types
  registered with its tracer; `_lock`: `TRACING`, held by every preparation and kernel call;
- `_messages`: what goes wrong and what to do; `_shapes`: (co)tangents fitted to their values' shapes,
  results made the caller's; `_trace`: f run on boxes at a fresh trace level;
- `_reverse`: `Tape`, one trace and its backward pass for any cotangents; `_batching` and `_forward`:
  `Recording`, one trace and batches of tangents pushed through the JVP rules, and the eager `jvp`;
- `_linearize`: the two as the core's linearizations, with the fallbacks for missing JVP rules;
  `_plans`: second order as `SecondOrderPlan`s; `_box_ops`: autograd's boxes as an array namespace;
- `_rule_fixes`: autograd's rules that are wrong for some calls, repaired or refused before they run;
  `_boundary`: `DifferentiateWith` with autograd outside (primitives with VJP and JVP rules).
"""

from ._box_ops import box_ops
from ._forward import Recording
from ._internals import AG, load
from ._linearize import eager_pushforward, forward_linearizer, reverse_linearizer
from ._lock import TRACING, serialized
from ._plans import plan_for
from ._shapes import open_containers
from ._trace import bound, private_caches

__all__ = [
    "AG",
    "TRACING",
    "Recording",
    "bound",
    "box_ops",
    "eager_pushforward",
    "forward_linearizer",
    "load",
    "open_containers",
    "plan_for",
    "private_caches",
    "reverse_linearizer",
    "serialized",
]
