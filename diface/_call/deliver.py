"""Delivery: a kernel's `Result` as the user gets it, returned or written into `out=` buffers.

Derivatives are cast to the result dtype (unless the kernel says they have it), converted back to NumPy
for NumPy input, made into sparse matrices where the kernel returns nonzeros (`AutoSparse`), and a 0-d
NumPy result becomes a NumPy scalar. `out=` buffers are all checked (type, writability, shape, dtype)
before any is written.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._arrays import NUMPY, ArrayOps
from .._errors import ArgumentError, NotSupportedError, ShapeError
from .._kernel import Kernel, Result
from .._optable import Operator
from .convert import kind

__all__ = ["Delivery"]


class Delivery:
    """How one preparation's results reach the user (see the module docstring)."""

    def __init__(
        self,
        op: Operator,
        kernel: Kernel,
        ops: ArrayOps,
        to_user: bool,
        x_shape: tuple,
        y_shape: tuple,
        dtype: Any,
        order: int = 1,
    ) -> None:
        self.op = op
        #: results per tangent of a series operator (its Taylor coefficients)
        self.order = order
        self.ops = ops
        self.to_user = to_user
        #: results are NumPy arrays (NumPy input, or a NumPy engine)
        self.user_numpy = to_user or ops is NUMPY
        self.dtype = dtype
        self.user_dtype = ops.to_numpy(ops.zeros((), dtype)).dtype if to_user else dtype
        # results need a cast to the result dtype unless the kernel says they have it already
        # (compared with `is None` first: NumPy finds np.dtype("float64") == None true)
        self.cast = kernel.result_dtype is None or kernel.result_dtype != dtype
        self.layout = kernel.layout
        self.shapes = op.shapes(x_shape, y_shape)
        #: the plain result is a 0-d NumPy array, returned as a NumPy scalar
        self.scalar = self.user_numpy and self.shapes[-1] == () and self.layout is None

    # -- returning -------------------------------------------------------------------------------------
    def result(self, d: Any, buf: Any = None, last: bool = True) -> Any:
        """One derivative as the user gets it (written into `buf` where given)."""
        if self.cast and getattr(d, "dtype", None) != self.dtype:
            d = self.ops.astype(d, self.dtype)
        if self.to_user:
            d = self.ops.to_numpy(d)
        if last and self.layout is not None:  # the nonzeros of a sparse Jacobian or Hessian
            if buf is not None:
                return self.layout.write(self.ops, buf, d, self.user_numpy)
            return self.layout.build(self.ops, d, self.user_numpy)
        if buf is not None:
            (NUMPY if self.user_numpy else self.ops).copyto(buf, d)
            return buf
        if self.user_numpy and isinstance(d, np.ndarray) and d.ndim == 0:
            return d[()]
        return d

    def _per_tangent(self, d: Any, buf: Any) -> Any:
        """One tangent's result: one derivative, or a series operator's tuple of them."""
        if not self.op.series:
            return self.result(d, buf)
        bufs = (None,) * len(d) if buf is None else buf
        return tuple(self.result(c, b) for c, b in zip(d, bufs))

    def value(self, v: Any, y: Any) -> Any:
        """f(x) as the user gets it: the buffer `y` of an in-place f, else the value (NumPy for NumPy input)."""
        if y is not None:
            return y
        if self.to_user:
            v = self.ops.to_numpy(v)
            return v[()] if v.ndim == 0 else v
        return v

    def deliver(self, r: Result, full: bool, batched: bool, out: Any, y: Any) -> Any:
        """The plain result, or the full variant's tuple, from the kernel's `Result` (written into `out`)."""
        op = self.op
        if not full:
            buffers: tuple = (out,)
            levels: tuple = (r.result,)
        else:
            buffers = (out if len(self.shapes) > 1 else (out,)) if out is not None else (None,) * len(self.shapes)
            levels = (r.lower, r.result) if op.lower else (r.result,)
        delivered = []
        last = len(levels) - 1
        for level, (d, buf) in enumerate(zip(levels, buffers)):
            if level == last and op.tangent is not None:
                bufs = (None,) * len(d) if buf is None else buf if batched else (buf,)
                items = tuple(self._per_tangent(item, b) for item, b in zip(d, bufs))
                delivered.append(items if batched else items[0])
            else:
                delivered.append(self.result(d, buf, last=level == last))
        if not full:
            return delivered[0]
        if not op.value_first:
            return tuple(delivered)
        return (self.value(r.value, y), *delivered)

    # -- checking out= ---------------------------------------------------------------------------------
    def check_out(self, out: Any, full: bool, extra: Any) -> None:
        """Raise unless `out` holds a writable buffer of the right type, shape and dtype for each result."""
        shapes = self.shapes if full else self.shapes[-1:]
        name = self.op.full_name if full else self.op.name
        if len(shapes) > 1:
            if not isinstance(out, tuple) or len(out) != len(shapes):
                raise ArgumentError(f"{name}: out= must be a tuple of {len(shapes)} buffers, got {kind(out)}")
            buffers = out
        else:
            buffers = (out,)
        last = len(shapes) - 1
        for level, (buf, shape) in enumerate(zip(buffers, shapes)):
            if level == last and self.layout is not None:
                self.layout.check_out(name, buf, self.user_numpy, self.ops, self.user_dtype)
            elif level == last and type(extra) is tuple:
                if not isinstance(buf, tuple) or len(buf) != len(extra):
                    raise ArgumentError(
                        f"{name}: with {len(extra)} tangents, out= needs a tuple of {len(extra)} buffers, "
                        f"got {kind(buf)}"
                    )
                for b in buf:
                    self._check_per_tangent(name, b, shape)
            elif level == last and self.op.tangent is not None:
                self._check_per_tangent(name, buf, shape)
            else:
                self.check_buffer(name, buf, shape)

    def _check_per_tangent(self, name: str, buf: Any, shape: tuple) -> None:
        """One tangent's buffer, or a series operator's tuple of `order` buffers."""
        if not self.op.series:
            self.check_buffer(name, buf, shape)
            return
        if not isinstance(buf, tuple) or len(buf) != self.order:
            raise ArgumentError(f"{name}: out= needs a tuple of {self.order} buffers per tangent, got {kind(buf)}")
        for b in buf:
            self.check_buffer(name, b, shape)

    def check_buffer(self, name: str, buf: Any, shape: tuple) -> None:
        ops = self.ops
        if self.user_numpy:
            if not isinstance(buf, np.ndarray):
                raise ArgumentError(f"{name}: out= buffers must be NumPy arrays here, got {kind(buf)}")
        elif not ops.is_native(buf):
            raise ArgumentError(f"{name}: out= buffers must be {ops.name} arrays like x, got {kind(buf)}")
        elif not ops.mutable:
            raise NotSupportedError(
                f"{name}: {ops.name} arrays are immutable and cannot be out= buffers; drop out= and use the "
                "returned result"
            )
        if isinstance(buf, np.ndarray) and not buf.flags.writeable:
            raise NotSupportedError(f"{name}: the out= buffer is a read-only NumPy array")
        if not self.user_numpy:
            ops.check_writable(buf, "an out= buffer")
        if tuple(buf.shape) != shape:
            raise ShapeError(f"{name}: out= buffer has shape {tuple(buf.shape)}, the result has shape {shape}")
        if buf.dtype != self.user_dtype:
            raise ArgumentError(f"{name}: out= buffer has dtype {buf.dtype}, the result has dtype {self.user_dtype}")
