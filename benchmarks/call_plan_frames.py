"""diface's frames per prepared call, by call shape and engine (counted with `sys.setprofile`): "core"
frames are the call path's (diface outside its engines), "all" include the engine's own Python.

    python benchmarks/call_plan_frames.py [tape] [jax] [torch]

tests/test_call_plan.py holds the core counts of the tape and JAX at or below those measured when the
call plans came.
"""

from __future__ import annotations

import sys

import numpy as np

import diface as di

sys.path.insert(0, "tests")
from test_call_plan import _shapes, frames

ENGINES = {
    "tape": lambda: (di.AutoTape(), np.asarray),
    "jax": lambda: (di.AutoJAX(), __import__("jax.numpy").numpy.asarray),
    "torch": lambda: (di.AutoTorch(), __import__("torch").as_tensor),
}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(ENGINES):
        backend, xs = ENGINES[name]()
        counts = {shape: frames(call) for shape, call in _shapes(backend, xs).items()}
        print(f"{name}: " + ", ".join(f"{shape} {core}/{every}" for shape, (core, every) in counts.items()))
