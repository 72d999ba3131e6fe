"""Array namespaces: the few array operations the core needs, per array library.

The core never imports a framework. NumPy is built in; every other library registers an `ArrayOps`
subclass with `register_array_ops(framework, cls)` from its backend file, and that class is only
instantiated (and only asked about an array) once `framework` is already in `sys.modules` — as in
einops, an array can only come from a framework that is already imported. Objects implementing the
Python array API standard (`__array_namespace__`) get a generic namespace.
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ArrayOps", "ArrayAPIOps", "NumpyOps", "NUMPY", "ops_for", "register_array_ops", "reshaped"]


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
        from ._errors import NotSupportedError

        raise NotSupportedError(f"diface knows no sparse matrix type for {self.name} arrays; pass NumPy input")

    def check_sparse_out(self, buf: Any, pattern: Any, name: str, dtype: Any = None) -> None:
        """Raise unless `buf` is a sparse matrix of this library with `pattern` (and values of `dtype`)
        that can be written."""
        from ._errors import NotSupportedError

        raise NotSupportedError(f"{name}: {self.name} sparse matrices cannot be out= buffers")

    def write_sparse(self, buf: Any, data: Any) -> None:
        """Write the nonzeros `data` into the sparse matrix `buf`."""
        raise NotImplementedError

    # linear solves (Jacobian-inverse products) -------------------------------------------------
    def lu_factor(self, a: Any) -> Any:
        """LU factors (with partial pivoting) of the square matrix `a` `(n, n)`, for `lu_solve`."""
        from ._errors import NotSupportedError

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
        from ._errors import NotSupportedError

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
        from ._gmres import gmres

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


class NumpyOps(ArrayOps):
    """NumPy arrays and NumPy scalars."""

    name = "numpy"
    mutable = True
    array_types = (np.ndarray, np.generic)

    def asarray(self, a: Any, like: Any = None) -> Any:
        return np.asarray(a)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return np.zeros(shape, dtype)

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return np.eye(n, dtype=dtype)

    def copy(self, a: Any) -> Any:
        return np.array(a, copy=True, order="C")

    def reshape(self, a: Any, shape: tuple) -> Any:
        return np.reshape(a, shape)

    def flat_view(self, a: Any) -> Any:
        return np.reshape(a, -1, copy=False)  # raises ValueError where only a copy could be made

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return np.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return np.concatenate(arrays)

    def unstack(self, a: Any) -> list:
        return list(a)

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return np.moveaxis(a, source, destination)

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        return np.eye(hi - lo, n, lo, dtype=dtype).reshape((hi - lo, *shape))

    def index_array(self, a: np.ndarray, like: Any = None) -> Any:
        return a

    def sparse_matrix(self, pattern: Any, data: Any) -> Any:
        return pattern.to_scipy(np.asarray(data))

    def lu_factor(self, a: Any) -> Any:
        try:
            from scipy.linalg import lu_factor
        except ImportError:  # NumPy alone: keep the matrix, solve it on each call
            return ("matrix", np.array(a, copy=True))
        import warnings

        with warnings.catch_warnings():  # a singular matrix is reported by the caller, from the pivots
            warnings.simplefilter("ignore")
            return ("lu", lu_factor(a, check_finite=False))

    def lu_solve(self, factors: Any, b: Any, transpose: bool = False) -> Any:
        kind, data = factors
        if kind == "matrix":
            return np.linalg.solve(data.T if transpose else data, b)
        from scipy.linalg import lu_solve

        return lu_solve(data, b, trans=1 if transpose else 0, check_finite=False)

    def lu_diagonal(self, factors: Any) -> np.ndarray:
        kind, data = factors
        if kind == "matrix":  # no factors: the singular values tell instead
            return np.linalg.svd(data, compute_uv=False) if data.size else np.ones(0)
        return np.diagonal(data[0]).copy()

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
        """`scipy.sparse.linalg.gmres` (diface's own loop where SciPy is not installed)."""
        try:
            from scipy.sparse.linalg import LinearOperator, gmres
        except ImportError:
            return super().gmres(matvec, b, x0, rtol, restart, cycles)
        n = b.shape[0]
        A = LinearOperator((n, n), matvec=lambda v: matvec(np.reshape(v, (n,))), dtype=b.dtype)
        x, _ = gmres(A, b, x0=x0, rtol=rtol, atol=0.0, restart=restart, maxiter=cycles)
        return x

    def norm(self, a: Any) -> float:
        return float(np.linalg.norm(a))

    def vdot(self, a: Any, b: Any) -> Any:
        return np.sum(a * b)

    def max(self, a: Any) -> Any:
        return np.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return np.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return np.imag(a)

    def copyto(self, dst: Any, src: Any) -> None:
        np.copyto(dst, src)

    def shares_memory(self, a: Any, b: Any) -> bool:
        return bool(np.may_share_memory(a, b))

    def astype(self, a: Any, dtype: Any) -> Any:
        return np.asarray(a).astype(dtype, copy=False)

    def result_type(self, *dtypes: Any) -> Any:
        return np.result_type(*dtypes)

    def is_floating(self, dtype: Any) -> bool:
        return np.issubdtype(dtype, np.floating)

    def is_complex(self, dtype: Any) -> bool:
        return np.issubdtype(dtype, np.complexfloating)

    def eps(self, dtype: Any) -> float:
        return float(np.finfo(dtype).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return np.result_type(dtype, np.complex64)


class ArrayAPIOps(ArrayOps):
    """Any array library implementing the Python array API standard (`x.__array_namespace__()`)."""

    def __init__(self, xp: Any, array_type: type) -> None:
        self.xp = xp
        self.array_types = (array_type,)
        self.name = getattr(xp, "__name__", "array API")
        try:
            a = xp.zeros(1)
            a[0] = 1.0
            self.mutable = True
        except Exception:  # immutable arrays (JAX) refuse item assignment
            self.mutable = False

    def asarray(self, a: Any, like: Any = None) -> Any:
        device = getattr(like, "device", None)
        return self.xp.asarray(a, device=device) if device is not None else self.xp.asarray(a)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.xp.zeros(shape, dtype=dtype, device=getattr(like, "device", None))

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.xp.eye(n, dtype=dtype, device=getattr(like, "device", None))

    def copy(self, a: Any) -> Any:
        return self.xp.asarray(a, copy=True)

    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.xp.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.xp.stack(arrays, axis=axis)

    def concat(self, arrays: list) -> Any:
        return self.xp.concat(arrays, axis=0)

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return self.xp.moveaxis(a, source, destination)

    def matmul(self, a: Any, b: Any) -> Any:
        return self.xp.matmul(a, b)

    def vdot(self, a: Any, b: Any) -> Any:
        return self.xp.sum(a * b)

    def abs(self, a: Any) -> Any:
        return self.xp.abs(a)

    def max(self, a: Any) -> Any:
        return self.xp.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return self.xp.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.xp.imag(a)

    def astype(self, a: Any, dtype: Any) -> Any:
        return self.xp.astype(a, dtype)

    def result_type(self, *dtypes: Any) -> Any:
        return self.xp.result_type(*dtypes)

    def is_floating(self, dtype: Any) -> bool:
        return self.xp.isdtype(dtype, "real floating")

    def is_complex(self, dtype: Any) -> bool:
        return self.xp.isdtype(dtype, "complex floating")

    def eps(self, dtype: Any) -> float:
        return float(self.xp.finfo(dtype).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return self.xp.result_type(dtype, self.xp.complex64)


NUMPY = NumpyOps()

# framework module name -> ArrayOps subclass (instantiated lazily, once the framework is imported)
_REGISTERED: dict[str, Callable[[], ArrayOps]] = {}
_INSTANCES: dict[str, ArrayOps] = {}
_BY_TYPE: dict[type, ArrayOps] = {}
_PYTHON_SCALARS = (float, int, complex, bool, list)


def register_array_ops(framework: str, factory: Callable[[], ArrayOps]) -> None:
    """Make arrays of `framework` known to the core. `factory` must not be called before the
    framework is imported; diface calls it on the first array of that framework it meets."""
    _REGISTERED[framework] = factory


def framework_ops(framework: str) -> ArrayOps:
    """The (single) namespace registered for `framework`, instantiated on first use."""
    ops = _INSTANCES.get(framework)
    if ops is None:
        ops = _INSTANCES[framework] = _REGISTERED[framework]()
    return ops


def ops_for(a: Any) -> ArrayOps | None:
    """The namespace that owns `a`: NumPy for NumPy arrays, NumPy scalars and Python numbers; a
    registered framework's namespace; a generic array-API one; or None for anything else."""
    t = type(a)
    ops = _BY_TYPE.get(t)
    if ops is not None:
        return ops
    if isinstance(a, (np.ndarray, np.generic, *_PYTHON_SCALARS)):
        ops = NUMPY
    else:
        for framework in _REGISTERED:
            if framework in sys.modules:
                candidate = framework_ops(framework)
                if candidate.is_native(a):
                    ops = candidate
                    break
        if ops is None and hasattr(a, "__array_namespace__"):
            ops = ArrayAPIOps(a.__array_namespace__(), t)
        if ops is None:
            return None
    _BY_TYPE[t] = ops
    return ops


def reshaped(a: Any, shape: tuple) -> Any:
    """`a` in `shape`: by its own `reshape` method where it has one (NumPy, torch, JAX, autograd's boxes),
    else by its namespace (arrays of the array API standard have `xp.reshape` and no method)."""
    if hasattr(a, "reshape"):
        return a.reshape(shape)
    ops = ops_for(a)
    if ops is None:
        raise TypeError(f"cannot reshape a {type(a).__name__}: it has no reshape method and no array namespace")
    return ops.reshape(a, shape)
