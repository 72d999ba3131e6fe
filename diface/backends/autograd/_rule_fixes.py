"""autograd's reverse-mode rules that give wrong numbers for some calls: repaired or refused before they run.

Found by running autograd's own complex test coverage through diface (tests/test_autograd_complex_suite.py),
each against JAX:

- `np.fft.rfft(x, n=m)`: the rule reads the transform length from a positional argument only, so with `n`
  given by keyword and `m` other than x's length it scales by the wrong factors. Repaired: `n` is passed
  to the rule positionally (the primitive's own signature, so the call means the same).
- `np.linalg.cholesky` of a complex (Hermitian) matrix: the rule transposes where a complex matrix needs
  the conjugate transpose. Refused with `NotSupportedError`: its numbers are wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ._internals import AG

__all__ = ["rule_arguments"]

_FIXES: dict | None = None


def _rfft_n_positional(fun: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    if len(args) == 1 and "n" in kwargs:
        kwargs = dict(kwargs)
        args = (args[0], kwargs.pop("n"))
    return args, kwargs


def _real_cholesky_only(fun: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    if np.iscomplexobj(AG.getval(args[0])):
        raise NotSupportedError(
            "autograd's reverse-mode (VJP) rule for 'cholesky' holds for real matrices only (it transposes "
            "where a complex matrix needs the conjugate transpose), so it would give wrong numbers for this "
            "complex matrix; differentiate f with di.AutoJAX() or di.AutoTorch()"
        )
    return args, kwargs


def _fixes() -> dict:
    global _FIXES
    if _FIXES is None:
        anp = AG.anp
        _FIXES = {anp.fft.rfft: _rfft_n_positional, anp.linalg.cholesky: _real_cholesky_only}
    return _FIXES


def rule_arguments(fun: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments to hand autograd's VJP rule for `fun` (the call's own, unless a fix applies); raises
    `NotSupportedError` where the rule is known to be wrong."""
    fix = _fixes().get(fun)
    return (args, kwargs) if fix is None else fix(fun, args, kwargs)
