"""`import diface` needs NumPy only, imports no framework, and is quick."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys, time
start = time.perf_counter()
import diface
import diface.testing
elapsed = time.perf_counter() - start
backend = diface.AutoFiniteDiff()
available = diface.check_available(backend)
print(json.dumps({
    "seconds": elapsed,
    "frameworks": [m for m in ("torch", "jax", "jaxlib", "autograd") if m in sys.modules],
    "available": available,
}))
"""


def _probe() -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_import_loads_no_framework():
    assert _probe()["frameworks"] == []


def test_import_is_fast():
    # best of three fresh interpreters (the first may pay for cold disk caches)
    assert min(_probe()["seconds"] for _ in range(3)) < 0.3
