"""`TorchOps`: the core's array operations on `torch.Tensor`s, on any device."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from ..._arrays import ArrayOps, register_array_ops
from ..._errors import ArgumentError, ShapeError
from ._inputs import check_writable, from_numpy

__all__ = ["TorchOps", "device_of", "torch_dtype"]


class TorchOps(ArrayOps):
    """`torch.Tensor` arrays, on any device. Instantiated only once torch is imported."""

    name = "torch"
    mutable = True
    devices_matter = True  # a preparation's seeds and buffers live on x's device

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.Tensor = torch.Tensor
        self.array_types = (torch.Tensor,)
        self.view_as_complex = torch.view_as_complex
        # (pattern, device) -> (crow, col): a sparse result's index tensors, made once per device
        self._csr_indices: dict[tuple[Any, Any], tuple[Any, Any]] = {}

    def _dtype(self, dtype: Any) -> Any:
        return dtype if isinstance(dtype, self.torch.dtype) else torch_dtype(np.dtype(dtype))

    def asarray(self, a: Any, like: Any = None) -> Any:
        if type(a) is np.ndarray:
            t = from_numpy(a)  # shares a's memory: about a microsecond
        elif isinstance(a, self.Tensor):
            t = a
        else:
            t = from_numpy(np.asarray(a))
        if not isinstance(like, self.Tensor) or (like.is_cpu and t.is_cpu):
            return t
        return t if t.device == like.device else t.to(like.device)

    def to_numpy(self, a: Any) -> np.ndarray:
        if not isinstance(a, self.Tensor):
            return np.asarray(a)
        try:
            return a.numpy()  # a CPU tensor without a graph: its memory, shared
        except (RuntimeError, TypeError):  # on a device, requiring grad, conjugated or negated lazily
            return a.numpy(force=True)

    def to_host(self, a: Any, what: str = "x") -> np.ndarray:
        """Through DLPack (zero-copy for a contiguous CPU tensor); a tensor on a device is refused: the
        boundary between engines passes host memory."""
        if not isinstance(a, self.Tensor):
            return np.asarray(a)
        a = a.detach()
        if a.device.type != "cpu":
            raise ArgumentError(
                f"DifferentiateWith: {what} is a torch tensor on {a.device}; the boundary between engines "
                "passes host memory: move it with .cpu() (and the result back with .to(device)), or "
                "differentiate with the engine that owns the device"
            )
        a = a.resolve_conj().resolve_neg()
        if not a.is_contiguous():
            a = a.contiguous()  # DLPack exports strided tensors, but NumPy code expects C order
        try:
            return np.from_dlpack(a)
        except (TypeError, RuntimeError, BufferError):
            return a.numpy()

    def from_host(self, a: np.ndarray) -> Any:
        return self.torch.from_dlpack(exportable(a))

    def zeros(self, shape: tuple, dtype: Any, like: Any = None) -> Any:
        return self.torch.zeros(shape, dtype=self._dtype(dtype), device=device_of(like))

    def eye(self, n: int, dtype: Any, like: Any = None) -> Any:
        return self.torch.eye(n, dtype=self._dtype(dtype), device=device_of(like))

    def copy(self, a: Any) -> Any:
        return a.clone(memory_format=self.torch.contiguous_format)

    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.torch.reshape(a, shape)

    def stack(self, arrays: list, axis: int = 0) -> Any:
        return self.torch.stack(list(arrays), dim=axis)

    def concat(self, arrays: list) -> Any:
        return self.torch.cat(list(arrays))

    def unstack(self, a: Any) -> list:
        return list(a.unbind(0))

    def moveaxis(self, a: Any, source: int, destination: int) -> Any:
        return self.torch.movedim(a, source, destination)

    def basis_rows(self, n: int, lo: int, hi: int, dtype: Any, like: Any, shape: tuple) -> Any:
        torch = self.torch
        device = device_of(like)
        rows = torch.zeros((hi - lo, n), dtype=self._dtype(dtype), device=device)
        index = torch.arange(hi - lo, device=device)
        rows[index, index + lo] = 1
        return rows.reshape((hi - lo, *shape))

    # sparse results (AutoSparse): torch.sparse_csr_tensor on the device of the values -------------------
    def index_array(self, a: np.ndarray, like: Any = None) -> Any:
        """`a` as an int64 tensor on `like`'s device (made once, at preparation)."""
        return self._indices(a, device_of(like))

    def _indices(self, a: np.ndarray, device: Any) -> Any:
        return self.torch.from_numpy(np.array(a, dtype=np.int64)).to(device)  # a copy: `a` may be read-only

    def csr_indices(self, pattern: Any, device: Any) -> tuple[Any, Any]:
        """(crow, col) int64 index tensors of `pattern` on `device`, copied there once and shared by every
        result with that pattern (a few dozen patterns are kept)."""
        key = (pattern, self.torch.device(device))
        found = self._csr_indices.get(key)
        if found is None:
            found = (self._indices(pattern.indptr, key[1]), self._indices(pattern.indices, key[1]))
            if len(self._csr_indices) >= _KEPT_PATTERNS:
                self._csr_indices.pop(next(iter(self._csr_indices)), None)
            self._csr_indices[key] = found
        return found

    def sparse_matrix(self, pattern: Any, data: Any) -> Any:
        """The (m, n) `torch.sparse_csr_tensor` holding `data` (in `pattern`'s CSR order), on its device."""
        data = data if isinstance(data, self.Tensor) else self.asarray(data)
        first = (pattern, data.device) not in self._csr_indices
        crow, col = self.csr_indices(pattern, data.device)
        if not first:
            return self.torch.sparse_csr_tensor(crow, col, data, size=pattern.shape, check_invariants=False)
        with warnings.catch_warnings():  # torch's one "sparse CSR support is in beta" notice, not for users
            warnings.simplefilter("ignore", UserWarning)
            return self.torch.sparse_csr_tensor(crow, col, data, size=pattern.shape, check_invariants=False)

    def check_sparse_out(self, buf: Any, pattern: Any, name: str, dtype: Any = None) -> None:
        """Raise unless `buf` is a writable `torch.sparse_csr_tensor` with exactly `pattern` (one this
        preparation returned, say) holding `dtype`; its device is checked when it is written."""
        torch = self.torch
        if not isinstance(buf, self.Tensor) or buf.layout != torch.sparse_csr:
            got = type(buf).__name__ if not isinstance(buf, self.Tensor) else f"a tensor of layout {buf.layout}"
            raise ArgumentError(
                f"{name}: out= must be a torch.sparse_csr_tensor of the prepared pattern (one this preparation "
                f"returned, say), got {got}"
            )
        if dtype is not None and buf.dtype != dtype:
            raise ArgumentError(f"{name}: out= holds {buf.dtype}, the result is {dtype}")
        if tuple(buf.shape) != tuple(pattern.shape):
            raise ShapeError(f"{name}: out= has shape {tuple(buf.shape)}, the result has shape {tuple(pattern.shape)}")
        crow, col = self.csr_indices(pattern, buf.device)
        got_crow, got_col = buf.crow_indices(), buf.col_indices()
        same = got_crow.data_ptr() == crow.data_ptr() and got_col.data_ptr() == col.data_ptr()
        if not same and not (
            got_col.shape == col.shape
            and torch.equal(got_crow.to(torch.int64), crow)
            and torch.equal(got_col.to(torch.int64), col)
        ):
            raise ArgumentError(
                f"{name}: out= has another sparsity pattern than the preparation's; pass a result this "
                "preparation returned (or drop out=)"
            )
        check_writable(buf.values(), "an out= buffer")

    def write_sparse(self, buf: Any, data: Any) -> None:
        """Write the nonzeros `data` into the values of the sparse CSR tensor `buf`, in place."""
        values = buf.values()
        if values.dtype != data.dtype or values.device != data.device:
            raise ArgumentError(
                f"out= holds {values.dtype} on {values.device}, the result is {data.dtype} on {data.device}: pass "
                "a result this preparation returned"
            )
        with self.torch.no_grad():
            values.copy_(data)

    # linear solves (Jacobian-inverse products): torch.linalg on the tensors' device ---------------------
    def lu_factor(self, a: Any) -> Any:
        LU, pivots, _ = self.torch.linalg.lu_factor_ex(a)  # a zero pivot shows in lu_diagonal, not here
        return LU, pivots

    def lu_solve(self, factors: Any, b: Any, transpose: bool = False) -> Any:
        LU, pivots = factors
        return self.torch.linalg.lu_solve(LU, pivots, b, adjoint=transpose)  # real: adjoint is transpose

    def lu_diagonal(self, factors: Any) -> np.ndarray:
        return self.to_numpy(self.torch.diagonal(factors[0])).copy()

    def is_sparse(self, a: Any) -> bool:
        return isinstance(a, self.Tensor) and a.layout != self.torch.strided

    def sparse_to_dense(self, a: Any) -> Any:
        return a.to_dense()

    def sparse_pairs_to_complex(self, a: Any) -> Any:
        t = self.torch
        coo = a.to_sparse_coo().coalesce()
        rows, cols = coo.indices()
        odd = (rows % 2 == 1).to(coo.values().dtype)
        values = t.complex(coo.values() * (1 - odd), coo.values() * odd)  # the odd rows are imaginary parts
        shape = (a.shape[0] // 2, a.shape[1])
        pairs = t.sparse_coo_tensor(t.stack([rows // 2, cols]), values, shape, check_invariants=True).coalesce()
        return pairs.to_sparse_csr() if a.layout == t.sparse_csr else pairs

    def norm(self, a: Any) -> float:
        return float(self.torch.linalg.vector_norm(a))

    def vdot(self, a: Any, b: Any) -> Any:
        return self.torch.sum(a * b)

    def max(self, a: Any) -> Any:
        return self.torch.max(a)

    def maximum(self, a: Any, b: Any) -> Any:
        torch = self.torch
        if not isinstance(b, torch.Tensor):
            return torch.clamp(a, min=b)
        if not isinstance(a, torch.Tensor):
            return torch.clamp(b, min=a)
        return torch.maximum(a, b)

    def imag(self, a: Any) -> Any:
        return self.torch.imag(a)

    def real(self, a: Any) -> Any:
        return self.torch.real(a)

    def to_pairs(self, z: Any) -> Any:
        if not z.is_complex():
            return self.torch.stack([z, self.torch.zeros_like(z)], dim=-1)
        return self.torch.view_as_real(z.resolve_conj())

    def from_pairs(self, v: Any) -> Any:
        try:
            return self.view_as_complex(v)  # a view: no copy, differentiable
        except RuntimeError:  # strides a complex view cannot have
            return self.torch.complex(v[..., 0], v[..., 1])

    def pairs_view(self, v: Any) -> Any:
        return self.torch.view_as_complex(v)

    def real_dtype(self, dtype: Any) -> Any:
        return self.torch.empty((), dtype=self._dtype(dtype)).real.dtype

    def check_writable(self, a: Any, label: str = "an out= buffer") -> None:
        """Raise `ArgumentError` unless results can be written into the tensor `a` (for the core to call
        on every out= buffer before writing any; `copyto` checks again)."""
        check_writable(a, label)

    def copyto(self, dst: Any, src: Any) -> None:
        check_writable(dst, "an out= buffer")
        dst.detach().copy_(src.detach() if isinstance(src, self.torch.Tensor) else self.asarray(src, like=dst))

    def flat_view(self, a: Any) -> Any:
        return a.view(-1)

    def shares_memory(self, a: Any, b: Any) -> bool:
        try:
            return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):  # tensors without storage (functorch wrappers)
            return True

    def equal(self, a: Any, b: Any) -> bool:
        return a.shape == b.shape and a.dtype == b.dtype and bool(self.torch.equal(a, b.to(a.device)))

    def astype(self, a: Any, dtype: Any) -> Any:
        return a.to(self._dtype(dtype))

    def result_type(self, *dtypes: Any) -> Any:
        return functools.reduce(self.torch.promote_types, (self._dtype(d) for d in dtypes))

    def is_floating(self, dtype: Any) -> bool:
        return self._dtype(dtype).is_floating_point

    def is_complex(self, dtype: Any) -> bool:
        return self._dtype(dtype).is_complex

    def eps(self, dtype: Any) -> float:
        return float(self.torch.finfo(self._dtype(dtype)).eps)

    def complex_dtype(self, dtype: Any) -> Any:
        return self.torch.promote_types(self._dtype(dtype), self.torch.complex64)


#: how many patterns' index tensors `TorchOps.csr_indices` keeps
_KEPT_PATTERNS = 64


@functools.cache
def torch_dtype(dtype: np.dtype) -> Any:
    import torch

    return torch.from_numpy(np.zeros(0, dtype)).dtype


def device_of(like: Any) -> Any:
    return getattr(like, "device", None) if like is not None and not isinstance(like, np.ndarray) else None


register_array_ops("torch", TorchOps)


def exportable(a: np.ndarray) -> np.ndarray:
    """`a`, or a copy that DLPack and torch accept (writable, aligned, C-contiguous)."""
    a = np.asarray(a)
    if not (a.flags.writeable and a.flags.aligned and a.flags.c_contiguous):
        return np.array(a, order="C")
    return a
