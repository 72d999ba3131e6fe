"""`AutoDistributed`: Jacobians, Hessians and batched products spread over the workers of an executor.

One job per module: `_backend` (the wrapper: which operators are spread), `_driver` (a call's tangents
in chunks, one task each, the blocks assembled into one result), `_worker` (a task: the dense
backend's kernel, prepared once per worker and cached, run on one chunk).
"""

from ._backend import AutoDistributed

__all__ = ["AutoDistributed"]
