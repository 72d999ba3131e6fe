"""What a user passes in: tensors as users hold them, NumPy arrays, and the guard around every kernel.

Any tensor a user holds can come in: a transposed or sliced view, a view whose elements share memory
(`expand()`), a tensor that requires grad (a leaf, or a view of one), an inference tensor (made under
`torch.inference_mode()`), a tensor on the meta device. The kernels read x, the tangents and the
contexts, make x a leaf or dual, and write into y and out= buffers: `prepared` fits what it is given to
that once, at preparation, and `guarded` at every call, copying only what cannot be used as it is (and
only what diface reads, never what it writes into) and raising `ArgumentError` for the rest.

NumPy arrays are taken by the kernels as they are (`accepts_numpy`): `torch.from_numpy` shares their
memory (about a microsecond), and results go back to NumPy only because the input was NumPy (the core
converts them). Tensors stay where they are: nothing moves between devices.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._contexts import Cache
from ..._errors import ArgumentError, PreparationMismatchError
from ..._kernel import Kernel, Result
from ..._problem import Problem
from ._modes import outside_inference_mode, torch

__all__ = ["META", "check_writable", "context_tensor", "from_numpy", "guarded", "prepared", "private", "usable"]

META = (
    "AutoTorch: {} is on the 'meta' device, which holds shapes but no values to differentiate: pass a "
    "tensor on a real device (e.g. .to('cpu'))"
)


def from_numpy(a: np.ndarray) -> Any:
    """`a` as a tensor sharing its memory; copied only where torch cannot share it (read-only memory,
    negative strides, non-native byte order)."""
    t = torch()
    try:
        return t.from_numpy(a if a.flags.writeable else a.copy())
    except ValueError:  # negative strides, non-native byte order
        return t.from_numpy(np.array(a, dtype=a.dtype.newbyteorder("="), order="C"))
    except TypeError as e:
        raise ArgumentError(f"AutoTorch: a NumPy array of dtype {a.dtype} has no torch equivalent ({e})") from e


def overlapping(t: Any) -> bool:
    """Whether two elements of `t` may share memory: a view made by `expand()`, broadcasting or
    `as_strided` (conservative for exotic strides; a contiguous tensor never does)."""
    if t.is_contiguous() or t.numel() == 0:
        return False
    reach = 0  # the farthest offset the smaller strides reach
    for stride, size in sorted((st, n) for st, n in zip(t.stride(), t.shape) if n > 1):
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


def usable(t: Any, device: Any, label: str) -> Any:
    """x or a tangent as the kernels read it, make it a leaf or dual: `t` itself (a NumPy array shared
    with torch), or a contiguous copy of an inference tensor (autograd refuses those outside inference
    mode, and a dual one drops its tangent) or of a view whose elements share memory (`make_dual` writes
    the tangent in x's layout). Nothing is written into it. Raises for a tensor on the meta device or on
    another device than x."""
    if isinstance(t, np.ndarray):
        t = from_numpy(t)
    if t.is_meta:
        raise ArgumentError(META.format(label))
    if t.device != device:
        if label == "x":
            raise PreparationMismatchError(
                f"AutoTorch: x is on {t.device}, the preparation was made on {device}: prepare again with x on "
                f"{t.device}, or move x with x.to({str(device)!r})"
            )
        raise ArgumentError(f"AutoTorch: {label} is on {t.device}, x on {device}: move it with .to(x.device)")
    if t.is_inference() or overlapping(t):
        return t.clone(memory_format=torch().contiguous_format)
    return t


def usable_all(tangents: tuple, device: Any, label: str) -> tuple:
    """`usable` of each tangent (the tuple itself where all are usable as they are)."""
    fitted = tuple(usable(t, device, label) for t in tangents)
    return tangents if all(u is t for u, t in zip(fitted, tangents)) else fitted


def tensors_within(value: Any) -> Any:
    """A context value with the NumPy arrays among the leaves of its dicts, lists and tuples shared with
    torch (`from_numpy`); anything else as it is."""
    kind = type(value)
    if kind is dict:
        return {k: from_numpy(v) if isinstance(v, np.ndarray) else tensors_within(v) for k, v in value.items()}
    if kind is list or isinstance(value, tuple):
        items = [from_numpy(v) if isinstance(v, np.ndarray) else tensors_within(v) for v in value]
        if kind is list:
            return items
        return kind(*items) if hasattr(value, "_fields") else kind(items)
    return value


def context_tensor(v: Any, is_cache: bool) -> Any:
    """A tensor context as f can use it: `v`, or a contiguous copy of an inference tensor (autograd
    refuses those) and of a Cache whose elements share memory (f could not write into it; what f writes
    into a Cache is scratch, which nobody reads after the call)."""
    if v.is_meta:
        raise ArgumentError(META.format("a context value"))
    if v.is_inference() or (is_cache and overlapping(v)):
        return v.clone(memory_format=torch().contiguous_format)
    return v


def check_writable(t: Any, label: str) -> None:
    """Raise `ArgumentError` unless results can be written into `t` (y, an out= buffer)."""
    if t.is_meta:
        raise ArgumentError(META.format(label))
    if overlapping(t):
        raise ArgumentError(
            f"AutoTorch: {label} is a view whose elements share memory (made by expand(), broadcasting or "
            "as_strided), so results cannot be written into it: pass a tensor with memory of its own (e.g. "
            "a .clone() of it)"
        )


def fitted(problem: Problem) -> Problem:
    """`problem` as the kernels can use it: x `usable`, tensor contexts as f gets them, y writable."""
    t = torch()
    x = usable(problem.x, problem.x.device, "x")
    if problem.y is not None:
        check_writable(problem.y, "y")
    contexts = tuple(
        c.with_value(context_tensor(c.value, isinstance(c, Cache))) if isinstance(c.value, t.Tensor) else c
        for c in problem.contexts
    )
    return Problem(problem.f, x, contexts, problem.y, problem.ops, single_use=problem.single_use, y_spec=problem.y_spec)


def private(problem: Problem) -> Problem:
    """`problem` on copies of x, its tensor contexts and y: for a graph or trace kept across calls, which
    nothing the user later does to their tensors may reach (a Cache written by another call, say)."""
    t = torch()
    copy = lambda v: v.detach().clone() if isinstance(v, t.Tensor) else v
    contexts = tuple(c.with_value(copy(c.value)) for c in problem.contexts)
    return Problem(
        problem.f,
        copy(problem.x),
        contexts,
        copy(problem.y),
        problem.ops,
        single_use=problem.single_use,
        y_spec=problem.y_spec,
    )


def prepared(
    build: Callable[..., Kernel], problem: Problem, tangents: tuple | None = None, label: str = "a tangent"
) -> Kernel:
    """`build(problem[, tangents])`, made outside inference mode on the problem `fitted` (and the
    tangents `usable`), then `guarded`."""
    device = problem.x.device
    with outside_inference_mode():
        problem = fitted(problem)
        kernel = build(problem) if tangents is None else build(problem, usable_all(tangents, device, label))
    return guarded(kernel, problem, label, direct=tangents is None)


def guarded(kernel: Kernel, problem: Problem, label: str, direct: bool = False) -> Kernel:
    """`kernel` called outside inference mode, on x and tangents made `usable` (NumPy arrays shared with
    torch), NumPy contexts as tensors, after checking y: every argument is checked before anything runs.
    The usual tensor (contiguous, on the kernel's device, not an inference tensor) is told apart by three
    attribute reads. With `direct`, the kernel also offers the core its plain call on x and the context
    values alone, whose result it casts to the result dtype; `kernel`'s `direct_tangent` (its one
    tangent's result, unguarded) is guarded and cast alike."""
    t = torch()
    device = problem.x.device
    inference_mode, no_inference_mode = t.is_inference_mode_enabled, t.inference_mode
    ndarray, Tensor = np.ndarray, t.Tensor
    # on the CPU, `t.is_cpu` (False on the meta device too) costs a quarter of `t.device == device`
    cpu = device.type == "cpu"
    on_device = lambda a: a.device == device

    run = kernel.run

    def guarded_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        if inference_mode():
            with no_inference_mode(False):
                return guarded_kernel(x, extra, cv, y, full)
        if type(x) is ndarray:
            x = from_numpy(x)
        if not x.is_contiguous() or x.is_inference() or not (x.is_cpu if cpu else on_device(x)):
            x = usable(x, device, "x")
        if extra is not None:
            for a in extra:
                if (
                    type(a) is not Tensor
                    or not a.is_contiguous()
                    or a.is_inference()
                    or not (a.is_cpu if cpu else on_device(a))
                ):
                    extra = usable_all(extra, device, label)
                    break
        if cv:
            cv = tuple(from_numpy(v) if isinstance(v, ndarray) else tensors_within(v) for v in cv)
        if y is not None:
            check_writable(y, "y")
        return run(x, extra, cv, y, full)

    dtype = problem.ops.result_type(problem.x_dtype, problem.y_spec[1])
    plain = None
    if direct:

        def plain(x: Any, cv: tuple) -> Any:
            d = guarded_kernel(x, None, cv, None, False).result
            return d if d.dtype == dtype else d.to(dtype)

    one = kernel.direct_tangent
    one_tangent = None
    if one is not None:

        def one_tangent(x: Any, v: Any, cv: tuple) -> Any:
            """The one tangent's result, x and v guarded as `guarded_kernel` does, cast to the result dtype."""
            if inference_mode():
                with no_inference_mode(False):
                    return one_tangent(x, v, cv)
            if type(x) is ndarray:
                x = from_numpy(x)
            if not x.is_contiguous() or x.is_inference() or not (x.is_cpu if cpu else on_device(x)):
                x = usable(x, device, "x")
            if type(v) is ndarray:
                v = from_numpy(v)
            if (
                type(v) is not Tensor
                or not v.is_contiguous()
                or v.is_inference()
                or not (v.is_cpu if cpu else on_device(v))
            ):
                v = usable(v, device, label)
            if cv:
                cv = tuple(from_numpy(c) if isinstance(c, ndarray) else tensors_within(c) for c in cv)
            d = one(x, v, cv)
            return d if d.dtype == dtype else d.to(dtype)

    # NumPy arrays are shared with torch here, for about a microsecond
    return Kernel(
        guarded_kernel, result_dtype=kernel.result_dtype, accepts_numpy=True, direct=plain, direct_tangent=one_tangent
    )
