"""`ArrayOps`: the array operations the core and the finite-difference backend use, per library."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ArrayOps"]


class ArrayOps(abc.ABC):
    """The array operations diface's core and the finite-difference backend use.

    Subclasses implement them for one array library. Every method takes and returns that library's
    arrays; `asarray`/`to_numpy` are the only crossings between libraries.
    """

    #: library name shown in messages
    name: str = "array"
    #: whether arrays can be written in place (`out=` buffers, in-place functions)
    mutable: bool = True
    #: the array type(s) this namespace owns
    array_types: tuple[type, ...] = ()
    #: whether an array's device is part of what a preparation is made for (the strict check names it)
    devices_matter: bool = False
    #: whether `compile` compiles on first use, per argument specs (JAX): preparation then runs every
    #: variant once, so that prepared calls find their programs compiled
    compiles: bool = False

    def is_native(self, a: Any) -> bool:
        return isinstance(a, self.array_types)

    # conversions -----------------------------------------------------------------------------
    @abc.abstractmethod
    def asarray(self, a: Any, like: Any = None) -> Any:
        """`a` (NumPy array, scalar, nested list) as a native array, on `like`'s device."""
        ...

    @abc.abstractmethod
    def to_numpy(self, a: Any) -> np.ndarray: ...

    # construction ----------------------------------------------------------------------------
    @abc.abstractmethod
    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any: ...

    @abc.abstractmethod
    def eye(self, n: int, dtype: Any, like: Any = None) -> Any: ...

    @abc.abstractmethod
    def copy(self, a: Any) -> Any:
        """A new, contiguous (row-major), writable array holding `a`'s values."""
        ...

    # shape -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def reshape(self, a: Any, shape: tuple) -> Any: ...

    @abc.abstractmethod
    def stack(self, arrays: list, axis: int = 0) -> Any: ...

    @abc.abstractmethod
    def concat(self, arrays: list) -> Any:
        """Arrays joined along their existing first axis."""
        ...

    def unstack(self, a: Any) -> list:
        """The slices of `a` along its first axis (`a[i, ...]`: the array API standard does not define an
        index that leaves out trailing axes)."""
        return [a[i, ...] for i in range(a.shape[0])]

    @abc.abstractmethod
    def moveaxis(self, a: Any, source: int, destination: int) -> Any: ...

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        """Basis vectors e_lo .. e_{hi-1} of a space of n elements, stacked: shape `(hi - lo, *shape)`."""
        if self.mutable:
            rows = self.zeros((hi - lo, n), dtype, like)
            for i in range(hi - lo):
                rows[i, lo + i] = 1
        else:
            rows = self.asarray(np.eye(hi - lo, n, lo, dtype=np.dtype(dtype)), like=like)
        return self.reshape(rows, (hi - lo, *shape))

    # arithmetic ------------------------------------------------------------------------------
    def matmul(self, a: Any, b: Any) -> Any:
        return a @ b

    @abc.abstractmethod
    def vdot(self, a: Any, b: Any) -> Any:
        """Real inner product `sum(a * b)` as a 0-d array."""
        ...

    def abs(self, a: Any) -> Any:
        return abs(a)

    @abc.abstractmethod
    def max(self, a: Any) -> Any: ...

    @abc.abstractmethod
    def maximum(self, a: Any, b: Any) -> Any: ...

    @abc.abstractmethod
    def imag(self, a: Any) -> Any: ...

    def real(self, a: Any) -> Any:
        return a.real

    # complex numbers as pairs of reals (diface._complex) ------------------------------------------
    def to_pairs(self, z: Any) -> Any:
        """A complex array as a real one with a trailing axis of 2 (real, imaginary); differentiable
        where `z` is traced."""
        return self.stack([self.real(z), self.imag(z)], axis=-1)

    def from_pairs(self, v: Any) -> Any:
        """The complex array of a real one with a trailing axis of 2 (the inverse of `to_pairs`)."""
        return v[..., 0] + 1j * v[..., 1]

    def sparse_pairs_to_complex(self, a: Any) -> Any:
        """A native sparse matrix whose rows are (real, imaginary) pairs, interleaved, as the complex sparse
        matrix of half as many rows; None where the library has no such operation (the caller densifies)."""
        return None

    def pairs_view(self, v: Any) -> Any:
        """The complex array of pairs `v` as a view sharing `v`'s memory (what an in-place f writes into);
        `NotSupportedError` where the library has no such view."""
        from .._errors import NotSupportedError

        raise NotSupportedError(
            f"{self.name} arrays have no complex view of real pairs, so an in-place f cannot write complex "
            "values here; write f to return its output"
        )

    def real_dtype(self, dtype: Any) -> Any:
        """The real dtype of a complex `dtype` (`dtype` itself for a real one)."""
        return self.real(self.zeros((), dtype)).dtype

    # writing ---------------------------------------------------------------------------------
    def copyto(self, dst: Any, src: Any) -> None:
        """Write `src` into the existing array `dst` (same shape)."""
        dst[...] = src

    # sparse results (AutoSparse) --------------------------------------------------------------
    def index_array(self, a: np.ndarray, like: Any = None) -> Any:
        """The NumPy integer array `a` as this library's index array (on `like`'s device)."""
        return self.asarray(a, like=like)

    def sparse_matrix(self, pattern: Any, data: Any) -> Any:
        """The (m, n) sparse matrix with the nonzeros `data` (in `pattern`'s CSR order)."""
        from .._errors import NotSupportedError

        raise NotSupportedError(f"diface knows no sparse matrix type for {self.name} arrays; pass NumPy input")

    def check_sparse_out(self, buf: Any, pattern: Any, name: str, dtype: Any = None) -> None:
        """Raise unless `buf` is a sparse matrix of this library with `pattern` (and values of `dtype`)
        that can be written."""
        from .._errors import NotSupportedError

        raise NotSupportedError(f"{name}: {self.name} sparse matrices cannot be out= buffers")

    def write_sparse(self, buf: Any, data: Any) -> None:
        """Write the nonzeros `data` into the sparse matrix `buf`."""
        raise NotImplementedError

    # linear solves (Jacobian-inverse products) -------------------------------------------------
    def lu_factor(self, a: Any) -> Any:
        """LU factors (with partial pivoting) of the square matrix `a` `(n, n)`, for `lu_solve`."""
        from .._errors import NotSupportedError

        raise NotSupportedError(
            f"diface has no LU factorization for {self.name} arrays; use method='krylov' or NumPy input"
        )

    def lu_solve(self, factors: Any, b: Any, transpose: bool = False) -> Any:
        """`X` with `A X = b` (`transpose`: `Aᵀ X = b`), `b` of shape `(n, k)`, from `lu_factor(A)`."""
        raise NotImplementedError

    def lu_diagonal(self, factors: Any) -> np.ndarray:
        """The diagonal of U in `factors`, as a NumPy array (to tell a singular matrix)."""
        raise NotImplementedError

    def is_sparse(self, a: Any) -> bool:
        """Whether `a` is a sparse matrix of this library (what `sparse_matrix` makes)."""
        return False

    def sparse_to_dense(self, a: Any) -> Any:
        """The sparse matrix `a` of this library (what `sparse_matrix` makes) as a dense array."""
        from .._errors import NotSupportedError

        raise NotSupportedError(f"diface knows no sparse matrix type for {self.name} arrays")

    def gmres(
        self,
        matvec: Callable[[Any], Any],
        b: Any,
        x0: Any,
        rtol: float,
        restart: int,
        cycles: int,
        parts: tuple[Callable, tuple] | None = None,
    ) -> Any:
        """Restarted GMRES for `A x = b` (`b` of shape `(n,)`, `matvec(v) = A v`), from `x0` (or zero),
        until the residual is `rtol * |b|` or `cycles` restarts of `restart` iterations are spent.
        `parts`, where given, is `(fn, args)` with `matvec(v) == fn(*args, v)` and `fn` the same object
        from call to call (for a library that compiles the solver). The default is diface's own loop
        (`diface._gmres`): vectors stay in this library's arrays, on their device; only the small
        Hessenberg system is solved on the host."""
        from .._gmres import gmres

        return gmres(self, matvec, b, x0, rtol, restart, cycles)

    def norm(self, a: Any) -> float:
        """The 2-norm of `a` as a Python float."""
        return float(np.sqrt(float(self.vdot(a, a))))

    def check_writable(self, a: Any, label: str = "an out= buffer") -> None:  # noqa: B027 - a hook
        """Raise a `DifaceError` unless results can be written into `a` (called on every `out=` buffer
        before any is written). Nothing to check for most array types."""

    def flat_view(self, a: Any) -> Any:
        """A 1-D view of the contiguous mutable array `a`: writing into it writes into `a`. Raises
        rather than return a copy (writes into a copy would be lost)."""
        return self.reshape(a, (-1,))

    def shares_memory(self, a: Any, b: Any) -> bool:
        """Whether `a` may be a view of `b` (conservative: True when unsure)."""
        return True

    def to_host(self, a: Any, what: str = "x") -> np.ndarray:
        """`a` as a host NumPy array, sharing memory where the library can (`DifferentiateWith` crosses
        between engines this way); a clear `ArgumentError` naming `what` where `a` lives on a device."""
        return self.to_numpy(a)

    def from_host(self, a: np.ndarray) -> Any:
        """The host NumPy array `a` as this library's array, sharing memory where the library can."""
        return self.asarray(a)

    def compile(self, fn: Callable) -> Callable:
        """`fn` (a function of this library's arrays, lists of them and Python values) compiled where the
        library compiles (JAX: `jax.jit`), else `fn` itself."""
        return fn

    def split(self, a: Any, sizes: tuple) -> list:
        """The 1-D array `a` cut into consecutive parts of `sizes` elements."""
        parts, start = [], 0
        for size in sizes:
            parts.append(a[start : start + size])
            start += size
        return parts

    def block_until_ready(self, a: Any) -> None:  # noqa: B027 - a hook, nothing to wait for in most libraries
        """Wait until `a` (an array, or a tuple of arrays or None) is computed, for a library that computes
        asynchronously (JAX): what a timing must cover."""

    def equal(self, a: Any, b: Any) -> bool:
        """Whether two arrays hold the same values (a Python bool)."""
        return bool(np.array_equal(self.to_numpy(a), self.to_numpy(b)))

    # dtypes ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def astype(self, a: Any, dtype: Any) -> Any: ...

    @abc.abstractmethod
    def result_type(self, *dtypes: Any) -> Any: ...

    @abc.abstractmethod
    def is_floating(self, dtype: Any) -> bool:
        """Real floating point dtype."""
        ...

    @abc.abstractmethod
    def is_complex(self, dtype: Any) -> bool: ...

    @abc.abstractmethod
    def eps(self, dtype: Any) -> float:
        """Machine epsilon of a floating (or complex) dtype."""
        ...

    @abc.abstractmethod
    def complex_dtype(self, dtype: Any) -> Any:
        """The complex dtype with the same precision as the real `dtype`."""
        ...

    def __repr__(self) -> str:
        return f"<{self.name} arrays>"
