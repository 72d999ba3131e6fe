"""The root of an equation SciPy solved inside f, differentiated by the implicit function theorem.

`ImplicitRoot` is one node of f's tape: its output y is the root a SciPy solver returned for a residual
g(y, c) = 0 (recorded as a `SubTape`, c the values of f's it reads), its inputs are those values (and,
not differentiated, what else the solver reads from f: a starting point, a bracket, the captures of a
derivative callback). A replay solves again with the same SciPy call on the residual's replay
(`Solve.run`); the derivative is that of the root SciPy returned, assuming dg/dy is invertible there:

    dy = -(dg/dy)^-1 (dg/dc dc),   cbar = -(dg/dc)^T (dg/dy)^-T ybar,

with dg/dy formed from the residual's forward sweeps (one per unknown) and dg/dc applied by one more
sweep, never by differentiating the solver's iterations. The rules are written with NumPy calls that
the tape records on traced values, so second order differentiates the implicit relation again. A
singular dg/dy raises `SingularError` naming the user's line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...._errors import SingularError
from ..data.graph import Traced
from ..prims.prim import InputsFrom, into, shape_of
from .callbacks import CallbackPrim, LastCall, SubTape, plain_value, tangent_batch

__all__ = ["ImplicitRoot", "Solve"]

#: dg/dy with a condition number beyond this is taken as singular
_CONDITION = 1e13

#: the last reverse rule of each thread (every input's cotangent comes from one solve)
_LAST = LastCall()


class Solve:
    """One SciPy call inside f, ready to run again at other values of what it reads from f.

    residual: the equation the root satisfies (g(y, c) = 0); inputs: for each input of the node (f's
    slots, residual captures first), nothing else is needed here: `run(values)` calls `solve(values)`,
    which rebuilds the SciPy call from them and returns the root as an array."""

    def __init__(self, label: str, where: str, residual: SubTape, solve: Callable[[tuple], np.ndarray]) -> None:
        self.label = label
        self.where = where
        self.residual = residual
        self.solve = solve
        self.k = len(residual.outer)


class ImplicitRoot(CallbackPrim):
    """y = the root SciPy's solver returns for g(y, c) = 0; differentiable in c (the first k inputs)."""

    def __init__(self, solve: Solve) -> None:
        self.solve = solve
        self.name = solve.label
        self.nondiff = InputsFrom(solve.k)

    def forward(self, *ins: Any, out: Any = None) -> Any:
        return into(out, np.asarray(self.solve.solve(ins), dtype=np.float64))

    # -- the implicit function theorem ------------------------------------------------------------
    def _linear(self, ins: tuple, y: Any) -> tuple[SubTape, list, Any]:
        """The residual's sweeps at (y, c): its filled env and dg/dy (checked invertible)."""
        res = self.solve.residual
        env = res.env(y, list(ins[: self.solve.k]))
        res.run(env)
        jac = res.jacobian_y(env)
        self._check(plain_value(jac))
        return res, env, jac

    def _check(self, jac: np.ndarray) -> None:
        n, m = jac.shape
        singular = n != m
        if not singular and n:
            with np.errstate(all="ignore"):
                cond = np.linalg.cond(jac)
            singular = not np.isfinite(cond) or cond > _CONDITION
        if singular:
            raise SingularError(
                f"AutoTape: the derivative of the root {self.solve.label} found (called at {self.solve.where}) "
                f"needs the residual's Jacobian in the unknowns, which is singular there ({n}x{m}"
                f"{'' if n != m else ', condition number beyond 1e13'}); the root does not depend smoothly on "
                "f's values at this point (a double root, or an unknown the residual does not depend on)"
            )

    def jvp(self, ins: tuple, y: Any, ts: tuple, b: int, out: Any = None) -> Any:
        res, env, jac = self._linear(ins, y)
        shape = shape_of(y)

        def one(tangents: list) -> Any:
            gdot = res.tangent(env, res.seeds(tangents))
            if gdot is None:
                return np.zeros(shape)
            return np.reshape(np.negative(np.linalg.solve(jac, np.reshape(gdot, (-1,)))), shape)

        r = [one(tangents) for tangents in tangent_batch(ts[: self.solve.k], b)]
        return into(out, r[0] if b == 0 else np.stack(r))

    def vjp(self, i: int, ins: tuple, y: Any, g: Any, b: int, out: Any = None) -> Any:
        plain = not any(isinstance(v, Traced) for v in (*ins, y, g))
        known = _LAST.get(self, (*ins, y, g)) if plain else None
        if known is None:
            known = self._cotangents(ins, y, g, b)
            if plain:
                _LAST.put(self, (*ins, y, g), known)
        return into(out, known[i])

    def _cotangents(self, ins: tuple, y: Any, g: Any, b: int) -> list:
        """Every differentiated input's cotangent: -(dg/dc)^T (dg/dy)^-T g, one solve and one sweep."""
        res, env, jac = self._linear(ins, y)

        def one(cot: Any) -> list:
            lam = np.linalg.solve(np.transpose(jac), np.reshape(cot, (-1,)))
            cots = res.cotangents(env, np.reshape(np.negative(lam), res.shape))
            return [np.zeros(shape_of(ins[i])) if cots.get(s) is None else cots[s] for i, s in enumerate(res.own)]

        if b == 0:
            return one(g)
        per = [one(g[j]) for j in range(shape_of(g)[0])]
        return [np.stack([p[i] for p in per]) for i in range(len(res.own))]
