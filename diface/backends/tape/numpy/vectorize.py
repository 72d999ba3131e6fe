"""np.vectorize on traced arguments (reached through `numpy.hooks`: `vectorize.__call__` is Python code that
builds object arrays with frompyfunc, which would lose the derivative).

The tape runs the Python function as NumPy does, element by element over the broadcast arguments, each
traced argument's element a 0-d traced value (plain arguments give the Python numbers NumPy's object
loop gives), and stacks the results into an array of NumPy's output type (`otypes`, else the type of the
first result). `excluded` and keyword arguments are passed as NumPy passes them; several outputs (the
function returns a tuple) give a tuple. `signature=` (generalized ufuncs) is refused. The recording
holds one evaluation of the function per element.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..data.graph import Traced
from ..prims.prim import shape_of
from ..tracing.tracer import operand
from .common import reshape_of, unsupported
from .hooks import hook

__all__: list[str] = []


def _vectorize_call(kept: Any, self: Any, *args: Any, **kwargs: Any) -> Any:
    if self.pyfunc is np._NoValue:  # the decorator form, vectorize(otypes=...)(pyfunc)
        return kept(self, *args, **kwargs)
    if self.signature is not None:
        raise unsupported("numpy.vectorize", " with signature= (a generalized ufunc)")
    excluded = self.excluded
    if not kwargs and not excluded:
        func, vargs = self.pyfunc, list(args)
    else:
        names = [n for n in kwargs if n not in excluded]
        inds = [i for i in range(len(args)) if i not in excluded]
        the_args = list(args)

        def func(*values: Any) -> Any:
            for k, i in enumerate(inds):
                the_args[i] = values[k]
            kwargs.update(zip(names, values[len(inds) :]))
            return self.pyfunc(*the_args, **kwargs)

        vargs = [args[i] for i in inds] + [kwargs[n] for n in names]
    if not vargs:
        return func()
    arrays = [_argument(a) for a in vargs]
    shape = np.broadcast_shapes(*(shape_of(a) for a in arrays))
    size = int(np.prod(shape, dtype=np.int64))
    otypes = None if self.otypes is None else [np.dtype(t) for t in self.otypes]
    if size == 0:
        if otypes is None:
            raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
        out = [np.zeros(shape, dtype=t) for t in otypes]
        return out[0] if len(out) == 1 else tuple(out)
    flat = [_elements(a, shape) for a in arrays]
    results = [func(*(f[i] for f in flat)) for i in range(size)]
    nout = len(results[0]) if isinstance(results[0], tuple) else 1
    columns = [[r[k] if nout > 1 else r for r in results] for k in range(nout)]
    if otypes is None:
        otypes = [_dtype(c[0]) for c in columns]
    if len(otypes) != nout:
        raise ValueError(f"vectorize: {nout} outputs but otypes gives {len(otypes)}")
    out = [_assemble(c, shape, t) for c, t in zip(columns, otypes)]
    return out[0] if nout == 1 else tuple(out)


def _argument(a: Any) -> Any:
    a = operand(a)
    return a if isinstance(a, Traced) else np.asanyarray(a)


def _elements(a: Any, shape: tuple) -> Any:
    """The entries of `a` broadcast to `shape`, in order: 0-d traced values, or Python objects (as NumPy's
    object loop passes a plain array's entries)."""
    if isinstance(a, Traced):
        flat = reshape_of(np.broadcast_to(cast(Any, a), shape), (-1,))
        return [flat[i] for i in range(shape_of(flat)[0])]
    return np.broadcast_to(np.asanyarray(a, dtype=object), shape).reshape(-1)


def _dtype(v: Any) -> np.dtype:
    return v.dtype if isinstance(v, Traced) else np.asarray(v).dtype


def _assemble(values: list, shape: tuple, dtype: np.dtype) -> Any:
    if dtype.kind == "O":
        raise unsupported("numpy.vectorize", " with an object output type")
    parts: list[Any] = [operand(v) for v in values]
    if any(np.ndim(p) if not isinstance(p, Traced) else p.ndim for p in parts):
        raise ValueError("setting an array element with a sequence.")
    if not any(isinstance(p, Traced) for p in parts):
        return np.asarray(parts, dtype=dtype).reshape(shape)
    pieces: list[Any] = [p if isinstance(p, Traced) else np.asarray(p) for p in parts]
    stacked: Any = np.stack(pieces)
    stacked = np.reshape(stacked, shape)
    return stacked if stacked.dtype == dtype else stacked.astype(dtype)


hook("numpy.lib._function_base_impl", "vectorize.__call__")(lambda: _vectorize_call)
