"""torch's process-wide and per-thread state that diface's computations must set or share: grad mode,
inference mode, the forward-AD level (one per process, taken in turns under `forward_ad_lock`) and
Python's warning filters.

Forward-mode AD in torch has one level per process (`torch.autograd.forward_ad.dual_level` fails while
another is open, in any thread) and `torch.func.jvp` counts its nesting in a Python global: two threads
running forward mode at once get each other's dual tensors, wrong tangents and errors. So every
forward-mode computation (dual tensors, `torch.func.jvp`, the same-point trace) runs under one
lock; reverse mode and vmap keep their state per thread in torch and take no lock. Python's warning
filters are process-global too: the few places that silence vmap's warnings take the same lock.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from ..._errors import NotSupportedError

__all__ = [
    "DUAL_LEVEL",
    "FORWARD_AD",
    "forward_ad",
    "forward_ad_lock",
    "grad_mode",
    "outside_inference_mode",
    "quiet",
    "torch",
]


def torch() -> Any:
    """The torch module (imported on first use: `import diface` imports no framework)."""
    import torch

    return torch


def grad_mode() -> Any:
    """Autograd on (a user may call us under `torch.no_grad()`); free when it already is."""
    t = torch()
    return contextlib.nullcontext() if t.is_grad_enabled() else t.enable_grad()


def outside_inference_mode() -> Any:
    """Inference mode off (under `torch.inference_mode()` autograd records nothing: every derivative
    would come out zero); free when it is."""
    t = torch()
    return t.inference_mode(False) if t.is_inference_mode_enabled() else contextlib.nullcontext()


#: held by diface around every use of torch's forward-mode AD and of Python's warning filters. A user who
#: runs forward AD of their own (`dual_level()`, `torch.func.jvp`, `jacfwd`, ...) in threads beside
#: diface's forward-mode calls takes it too, so that the two take turns: `with forward_ad_lock: ...`
forward_ad_lock = threading.RLock()

NESTED = (
    "AutoTorch: forward mode needs torch's forward-AD level, and another one is open (torch allows one per "
    "process): a torch.autograd.forward_ad.dual_level() block or torch.func.jvp around this call, forward AD "
    "inside f, or forward AD in another thread. Call diface outside that block, and from other threads "
    "wrap your own forward-AD code in `with diface.backends.torch.forward_ad_lock:` so that they take turns"
)


def _nested(error: BaseException | None) -> bool:
    return isinstance(error, RuntimeError) and "Nested forward mode AD is not supported" in str(error)


class _ForwardAD:
    """`with FORWARD_AD:` holds `forward_ad_lock` around `torch.func.jvp` (which opens the level itself),
    turning torch's error about a level already open into `NotSupportedError`."""

    def __enter__(self) -> None:
        forward_ad_lock.acquire()

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        forward_ad_lock.release()
        if _nested(error):
            raise NotSupportedError(NESTED) from error


class _DualLevel(_ForwardAD):
    """`with DUAL_LEVEL:` also opens torch's forward-AD level for dual tensors. Reentrant in the thread
    holding the lock (a loop of products opens one level for all of them); `depth` is only touched under
    the lock."""

    depth = 0
    #: evaluations of f on dual tensors in progress (`Function.dual`): a kernel called inside one of them
    #: on its dual tensors would share its level (see `function.NESTED_DUAL`)
    inside = 0

    def __enter__(self) -> None:
        forward_ad_lock.acquire()
        if self.depth == 0:
            try:
                forward_ad().enter_dual_level()
            except BaseException as e:
                forward_ad_lock.release()
                if _nested(e):
                    raise NotSupportedError(NESTED) from e
                raise
        self.depth += 1

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        self.depth -= 1
        if self.depth == 0:
            try:
                forward_ad().exit_dual_level()
            finally:
                forward_ad_lock.release()
        else:
            forward_ad_lock.release()
        if _nested(error):
            raise NotSupportedError(NESTED) from error


FORWARD_AD = _ForwardAD()
DUAL_LEVEL = _DualLevel()


@functools.cache
def forward_ad() -> Any:
    """`torch.autograd.forward_ad`, ready: the first dual tensor of a process imports torch's jvp
    decompositions, which warn that `torch.jit.script` is deprecated (torch's concern, not the user's)."""
    t = torch()
    import torch.autograd.forward_ad as fwad

    with forward_ad_lock, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
        try:
            with fwad.dual_level():
                fwad.make_dual(t.zeros(()), t.zeros(()))
        except RuntimeError as e:
            if _nested(e):
                raise NotSupportedError(NESTED) from e
            raise
    return fwad


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence vmap's warnings about slow fallbacks while trying it (the timing decides). The warning
    filters are process-global: under `forward_ad_lock`, two threads' silences cannot interleave and
    leave them changed."""
    with forward_ad_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
