"""JAX arrays as the core sees them: `JaxOps`, registered for arrays of an imported jax."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._arrays import StandardNamespaceOps, register_array_ops
from ..._errors import ArgumentError, NotSupportedError

__all__ = ["X64_HINT", "JaxOps", "device_of"]

X64_HINT = (
    'enable 64-bit mode with jax.config.update("jax_enable_x64", True) at startup (or the environment '
    "variable JAX_ENABLE_X64=1), or pass float32 arrays"
)


def device_of(like: Any) -> Any:
    """The single device a concrete JAX array lives on, else None (tracers, NumPy, multi-device)."""
    device = getattr(like, "device", None) if like is not None else None
    if device is None:
        return None
    import jax

    return device if isinstance(device, jax.Device) else None


class JaxOps(StandardNamespaceOps):
    """JAX arrays (and tracers): immutable, on the device of the array they are made like; the
    computations are `jax.numpy`'s (`StandardNamespaceOps`), the rest is JAX's own."""

    name = "jax"
    mutable = False
    compiles = True

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp

        super().__init__(jnp, (jax.Array,))
        self.jax = jax
        self._default_device = jax.devices()[0]

    device_like = staticmethod(device_of)  # the array's one device, else None (tracers, several devices)

    # conversions -----------------------------------------------------------------------------
    def asarray(self, a: Any, like: Any = None) -> Any:
        if isinstance(a, self.jax.Array):
            return a
        a = np.asarray(a)
        self.check_precision(a.dtype)
        device = device_of(like)
        if device is None or device == self._default_device:
            return self.xp.asarray(a)  # several times faster than naming the device
        return self.xp.asarray(a, device=device)

    def check_precision(self, dtype: Any) -> None:
        """Raise `NotSupportedError` if JAX would store `dtype` with less precision (64-bit mode off)."""
        if np.dtype(dtype).kind in "fc" and self.jax.dtypes.canonicalize_dtype(dtype) != dtype:
            raise NotSupportedError(
                f"AutoJAX: a {np.dtype(dtype)} array would silently become "
                f"{self.jax.dtypes.canonicalize_dtype(dtype)} because JAX's 64-bit mode is off; {X64_HINT}"
            )

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.array(a)  # a writable copy (np.asarray of a JAX array is a read-only view)

    # construction ----------------------------------------------------------------------------
    def copy(self, a: Any) -> Any:
        return self.xp.array(a, copy=True)

    # shape -----------------------------------------------------------------------------------
    def index_array(self, a: np.ndarray, like: Any = None) -> Any:
        return super().asarray(a, like)  # the standard's conversion: integers need no precision check

    def sparse_matrix(self, pattern: Any, data: Any) -> Any:
        """A `jax.experimental.sparse.BCOO` (indices: rows and columns, in CSR order). The indices go to
        the device once per pattern; each result is assembled from them and `data` directly (the BCOO
        constructor's checks cost 20-30 µs, more than the compressed products of a small problem)."""
        # keyed by the data's sharding, which a concrete array gives in 0.1 µs (its device: 1 µs)
        sharding = getattr(data, "sharding", None)
        key = ("bcoo", sharding) if sharding is not None else ("bcoo", device_of(data))
        structure, indices = pattern.memo(key, lambda: self._bcoo_parts(pattern, device_of(data)))
        return self.jax.tree_util.tree_unflatten(structure, (data, indices))

    def _bcoo_parts(self, pattern: Any, device: Any) -> tuple:
        from jax.experimental import sparse

        host = np.stack([pattern.rows, pattern.cols], axis=1).astype(np.int32)
        indices = self.xp.asarray(host, device=device) if device is not None else self.xp.asarray(host)
        empty = self.xp.zeros(pattern.nnz)
        example = sparse.BCOO((empty, indices), shape=pattern.shape, indices_sorted=True, unique_indices=True)
        return self.jax.tree_util.tree_structure(example), indices

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        rows = self.xp.eye(hi - lo, n, lo, dtype=dtype, device=device_of(like))
        return rows.reshape((hi - lo, *shape))

    # arithmetic ------------------------------------------------------------------------------
    def from_pairs(self, v: Any) -> Any:
        return self.jax.lax.complex(v[..., 0], v[..., 1])

    def real_dtype(self, dtype: Any) -> Any:
        return self.xp.finfo(dtype).dtype

    def block_until_ready(self, a: Any) -> None:
        self.jax.block_until_ready(a)

    def to_host(self, a: Any, what: str = "x") -> np.ndarray:
        """Through DLPack (zero-copy on the CPU); an array on an accelerator is refused: the boundary
        between engines passes host memory."""
        devices = getattr(a, "devices", None)
        if devices is not None:
            platforms = {d.platform for d in devices()}
            if platforms - {"cpu"}:
                raise ArgumentError(
                    f"DifferentiateWith: {what} is a JAX array on {sorted(platforms)}; the boundary between "
                    "engines passes host memory: jax.device_put it on the CPU first"
                )
        try:
            return np.from_dlpack(a)
        except (TypeError, RuntimeError, BufferError):
            return np.asarray(a)

    def from_host(self, a: np.ndarray) -> Any:
        if not (a.flags.writeable and a.flags.aligned and a.flags.c_contiguous):
            a = np.array(a, order="C")
        try:
            return self.xp.from_dlpack(a)
        except (TypeError, RuntimeError, BufferError, ValueError):
            return self.xp.asarray(a)

    def compile(self, fn: Callable) -> Callable:
        return self.jax.jit(fn, keep_unused=True)

    def split(self, a: Any, sizes: tuple) -> list:
        # one split, whose transpose is one concatenate: a flat gradient stays one concatenation of the
        # parts' gradients (slices would transpose to a pad and an add per part)
        if len(sizes) < 2:
            return super().split(a, sizes)
        return list(self.jax.lax.split(a, sizes))

    # linear solves (Jacobian-inverse products): jax.scipy, on the arrays' device ----------------------
    def lu_factor(self, a: Any) -> Any:
        return self.jax.scipy.linalg.lu_factor(a)

    def lu_solve(self, factors: Any, b: Any, transpose: bool = False) -> Any:
        return self.jax.scipy.linalg.lu_solve(factors, b, trans=1 if transpose else 0)

    def lu_diagonal(self, factors: Any) -> np.ndarray:
        return np.asarray(self.xp.diagonal(factors[0]))

    def is_sparse(self, a: Any) -> bool:
        return hasattr(a, "todense") and not isinstance(a, self.jax.Array)  # a BCOO

    def sparse_to_dense(self, a: Any) -> Any:
        return a.todense()

    def sparse_pairs_to_complex(self, a: Any) -> Any:
        from jax.experimental import sparse

        jnp = self.xp
        rows = a.indices[:, 0]
        data = jnp.where(rows % 2 == 1, 1j, 1.0).astype(self.complex_dtype(a.data.dtype)) * a.data
        indices = a.indices.at[:, 0].set(rows // 2)
        return sparse.BCOO((data, indices), shape=(a.shape[0] // 2, a.shape[1])).sum_duplicates()

    def norm(self, a: Any) -> float:
        return float(self.xp.linalg.norm(a))

    def gmres(self, matvec: Any, b: Any, x0: Any, rtol: float, restart: int, cycles: int, parts: Any = None) -> Any:
        """`jax.scipy.sparse.linalg.gmres` (`maxiter` there counts restarts), compiled once per product
        function and settings where `parts` gives the products as `fn(*args, v)`: `fn` is static, `args`
        are traced (without them, the solver's loops are traced again at every call, about a second)."""
        if parts is None:
            from jax.scipy.sparse.linalg import gmres

            x0 = self.xp.zeros_like(b) if x0 is None else x0
            return gmres(matvec, b, x0=x0, tol=rtol, atol=0.0, restart=restart, maxiter=max(1, cycles))[0]
        fn, args = parts
        operator = self.jax.tree_util.Partial(fn, *args)
        # the zero start and the tolerance live in the program: made eagerly, or passed as a Python
        # float, each would be a host-to-device transfer per solve
        return _compiled_gmres(restart, max(1, cycles), float(rtol))(operator, b, x0)

    # writing: JAX arrays cannot be written -----------------------------------------------------
    def copyto(self, dst: Any, src: Any) -> None:
        raise NotSupportedError("JAX arrays are immutable and cannot be written into")

    def flat_view(self, a: Any) -> Any:
        raise NotSupportedError("JAX arrays are immutable: there are no writable views")

    def shares_memory(self, a: Any, b: Any) -> bool:
        return False  # nothing can be written through an immutable array

    def equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))

    # dtypes ----------------------------------------------------------------------------------
    def astype(self, a: Any, dtype: Any) -> Any:
        return self.xp.asarray(a).astype(dtype)

    def is_floating(self, dtype: Any) -> bool:
        return bool(self.xp.issubdtype(dtype, self.xp.floating))

    def is_complex(self, dtype: Any) -> bool:
        return bool(self.xp.issubdtype(dtype, self.xp.complexfloating))


register_array_ops("jax", JaxOps)


@functools.cache
def _compiled_gmres(restart: int, cycles: int, tol: float) -> Any:
    """`jax.scipy.sparse.linalg.gmres` jitted for these settings (one preparation's: the tolerance is a
    constant of the program); the operator is a `Partial` argument, `x0=None` starts from zeros made
    in the program, on `b`'s device."""
    import jax
    from jax.scipy.sparse.linalg import gmres

    def solve(operator: Any, b: Any, x0: Any) -> Any:
        x0 = jax.numpy.zeros_like(b) if x0 is None else x0
        return gmres(operator, b, x0=x0, tol=tol, atol=0.0, restart=restart, maxiter=cycles)[0]

    return jax.jit(solve)
