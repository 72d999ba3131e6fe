"""The direct routes of structured calls, built once at preparation (see `diface._prep`): trees with x and
contexts alone (flatten, test, then one compiled program where the library compiles), and one complex
array held as real pairs (pairs -> the kernel's direct program -> complex numbers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ._arrays import NUMPY

if TYPE_CHECKING:
    from ._prep import Prep

__all__ = ["complex_array_route", "tree_route"]


def tree_route(prep: Prep) -> Callable[[Any, tuple, bool, bool], Any] | None:
    """The direct route on trees, for calls with x and contexts alone: flatten x, test its leaves (and
    the contexts), then ravel -> the kernel -> the results cut into trees (-> f's auxiliary output) as
    one compiled program per variant where the array library compiles and the kernel can be traced
    into it (JAX: one `jit`); elsewhere the plain variant around the kernel's direct program."""
    codec, kernel, ops = prep.codec, prep.kernel, prep.ops
    if codec is None or codec.xi is None or codec.imag or prep.to_user or prep.delivery.layout is not None:
        return None
    if prep.same_point or prep.op.tangent is not None:
        return None
    traced = kernel.traceable and ops.compiles
    program, has_aux = kernel.direct, prep.has_aux
    if not traced and (program is None or has_aux):
        return None
    xi, kind, decode, deliver = codec.xi, prep.op.kinds[-1], codec.decode, prep.delivery.deliver

    def results(leaves: list, cv: tuple, full: bool) -> Any:
        x = xi.ravel_leaves(leaves)
        if program is not None and not full and not has_aux:
            return decode(kind, program(x, cv))
        out = codec.decode_all(deliver(kernel.run(x, None, cv, None, full), full, False, None, None), full)
        if not has_aux:
            return out
        aux = codec.aux(x, cv, ops, False)
        return ((out[0], aux), *out[1:]) if full else (out, aux)

    programs: list = [ops.compile(lambda leaves, cv: results(leaves, cv, False))]
    programs.append(ops.compile(lambda leaves, cv: results(leaves, cv, True)) if traced else None)
    tried = [False, False]
    flatten, matches, contexts_match = xi.flattener.flatten, xi.matches, prep.guard.contexts_match
    general, values = prep._run, prep._values

    def direct(x: Any, contexts: tuple, check: bool, full: bool) -> Any:
        fused = programs[full]
        leaves, spec = flatten(x)
        if fused is None or not matches(leaves, spec) or (contexts and not contexts_match(contexts)):
            return general(full, x, None, contexts, None, None, check)  # says what differs, or copes
        cv = values(contexts, leaves[0]) if contexts else ()
        if tried[full]:
            return fused(leaves, cv)
        try:  # the first call compiles: what the library cannot compile (aux of strings) takes the general path
            return fused(leaves, cv)
        except Exception:
            programs[full] = None
            return general(full, x, None, contexts, None, None, check)
        finally:
            tried[full] = True

    return direct


def complex_array_route(prep: Prep) -> Callable[[Any], Any] | None:
    """`x -> result` of the plain operator for a complex array x of the prepared spec (not a tree: the
    codec only holds it as real pairs): pairs -> the kernel's direct program -> complex numbers, one
    compiled program where the library compiles (JAX), so a prepared call costs one dispatch."""
    codec, kernel, ops, guard = prep.codec, prep.kernel, prep.ops, prep.guard
    if codec is None or codec.xi is None or codec.imag or codec.yi is not None or prep.has_aux:
        return None
    if prep.same_point or prep.op.tangent is not None:
        return None
    if prep.delivery.layout is not None or guard.x_spec is None or not codec.x_is_array:
        return None
    xi, kind, decode, program = codec.xi, prep.op.kinds[-1], codec.decode, kernel.direct
    #: compiled around the kernel's own direct program only (the delivery below is not traceable)
    traced = kernel.traceable and program is not None
    if program is None:  # the kernel's plain call, delivered
        if prep.to_user and not prep._takes_numpy:
            return None
        kernel_run, deliver = kernel.run, prep.delivery.deliver

        def program(x: Any, cv: tuple) -> Any:
            return deliver(kernel_run(x, None, cv, None, False), False, False, None, None)

    if prep.to_user:  # NumPy in and out, where the program takes NumPy arrays
        if not (prep._takes_numpy and guard.x_spec[0] is np.ndarray and xi.single and kind == "x"):
            return None
        to_numpy = ops.to_numpy
        if traced:  # x goes to the compiled program as it is: one transfer, pairs made there
            both = ops.compile(lambda x: ops.from_pairs(program(ops.to_pairs(x), ())))
            return lambda x: to_numpy(both(x))

        def run_numpy(x: Any) -> Any:
            return NUMPY.from_pairs(to_numpy(program(NUMPY.to_pairs(x), ())))

        return run_numpy
    if xi.single and kind == "x":  # the commonest: a gradient, complex like x
        to_pairs, from_pairs = ops.to_pairs, ops.from_pairs

        def run(x: Any) -> Any:
            return from_pairs(program(to_pairs(x), ()))

    else:

        def run(x: Any) -> Any:
            return decode(kind, program(xi.ravel_leaves([x]), ()))

    return ops.compile(run) if traced else run
