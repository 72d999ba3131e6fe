"""Plans: the route of a prepared call of the prepared specs, fixed once at preparation.

A preparation has one plan per variant (the plain operator and its full variant). A plan is four
stages, chosen when it is built:

1. **accept**: the call has the prepared specs (x, the tangents, the contexts; a tree's leaves), by a
   straight-line test for x alone and for x with one tangent, a loop only beyond. A call that fails it
   goes to the general path (`diface._call.general`), which converts what it can and reports what
   differs.
2. **convert in**: nothing (native arrays), NumPy → the backend's arrays, a tree → the flat problem's
   vector, a complex array → real pairs.
3. **run**: the kernel's `direct` program (no tangents), its `direct_tangent` program (one tangent),
   or `run`.
4. **deliver**: the result as it is, through the `Delivery` (casts, NumPy, sparse matrices), or cut
   back into trees (with f's auxiliary output).

Where the kernel is traceable and the array library compiles (JAX), stages 2-4 are compiled into one
program; the first call compiles it, and a program the library cannot compile (an aux of strings) is
dropped for the same stages run one by one.

This module is the only reader of the kernel's hints (`direct`, `direct_tangent`, `traceable`,
`accepts_numpy`, `layout`). `Prep.route` shows what each variant's plan chose (`Route`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .._arrays import NUMPY
from .check import spec_test
from .convert import native_context_value as convert_value
from .general import context_values, general_call, tangents_in, with_aux, x_in
from .prepared import Prepared

__all__ = ["GENERAL", "Plan", "Route", "build_plans"]

#: `(x, extra, contexts, check) -> result`: a variant's call without `out=` or `y=`
Call = Callable[[Any, Any, tuple, bool], Any]


class Route(NamedTuple):
    """Which stages a call of the prepared specs takes (see the module docstring)."""

    #: what the accept stage tests ("" where every call takes the general path)
    accept: str
    #: "identity", "NumPy -> native", "tree -> flat" or "complex -> pairs"
    convert: str
    #: "kernel.direct", "kernel.direct_tangent" or "kernel.run"
    run: str
    #: "as it is", "delivery", "trees" or "trees and aux"
    deliver: str
    #: stages 2-4 are one compiled program
    compiled: bool = False

    def __str__(self) -> str:
        if not self.accept:
            return "general path"
        text = f"accept {self.accept} -> convert {self.convert} -> {self.run} -> deliver {self.deliver}"
        return text + (" (one compiled program)" if self.compiled else "")


#: the route of a preparation without plans: every call takes the general path
GENERAL = Route("", "", "", "")


class Plan(NamedTuple):
    """One variant's plan: its call and the route it takes."""

    call: Call
    route: Route


def build_plans(p: Prepared) -> tuple[Plan, Plan]:
    """The plans of the plain operator and of its full variant."""
    return _build(p, False), _build(p, True)


def _build(p: Prepared, full: bool) -> Plan:
    def general(x: Any, extra: Any, contexts: tuple, check: bool) -> Any:
        return general_call(p, full, x, extra, contexts, None, None, check)

    guard = p.guard
    if guard is None or p.problem.y is not None:  # made for one call; an in-place f's calls pass y=
        return Plan(general, GENERAL)
    if p.codec is not None:
        return _structured(p, full, general)
    return _arrays(p, full, general)


# -- arrays -------------------------------------------------------------------------------------------
def _arrays(p: Prepared, full: bool, general: Call) -> Plan:
    """The plan of a call of arrays: x, tangents and contexts."""
    op, kernel, guard, settings, delivery = p.op, p.kernel, p.guard, p.settings, p.delivery
    assert guard is not None and guard.x_test is not None
    x_spec = guard.signature.specs[0]
    n_tangents = 0 if op.tangent is None else (p.batch or 1)
    if any(spec[1] is None for spec in guard.signature.specs[: 1 + n_tangents]):
        return Plan(general, GENERAL)  # x or a tangent a Python number: the general path converts it
    accept, accept_text = _array_accept(p)
    # NumPy arguments go to a kernel that takes them as they are only as arrays (not NumPy scalars)
    numpy_in = p.to_user and not (p.takes_numpy and x_spec[0] is np.ndarray)
    ops, batched = p.ops, p.batch is not None
    tangent_types = tuple(s[0] for s in guard.signature.specs[1 : 1 + n_tangents])
    # the direct programs take the arguments as the user passes them: native ones, or NumPy arrays
    # where the kernel takes them (the tangents of x's type)
    usable = not numpy_in and all(t is x_spec[0] for t in tangent_types)
    run, route_run = kernel.run, "kernel.run"
    program: Callable | None = None
    if not full and usable and not settings.same_point:
        if op.tangent is None and kernel.direct is not None:
            program, route_run = kernel.direct, "kernel.direct"
        elif op.tangent is not None and not batched and not op.series and kernel.direct_tangent is not None:
            program, route_run = kernel.direct_tangent, "kernel.direct_tangent"
    has_contexts = bool(guard.context_kinds)
    convert = "NumPy -> native" if numpy_in else "identity"
    identity = not numpy_in and all(t is p.native_type for t in tangent_types)

    if program is not None:
        stages = _direct_stages(p, program, op.tangent is not None)
        deliver = "as it is" if delivery.layout is None and not p.to_user else "delivery"
    elif op.tangent is None:
        result = delivery.result

        if not full and not numpy_in and not has_contexts:

            def stages(x: Any, extra: Any, contexts: tuple) -> Any:
                return result(run(x, None, (), None, False).result)

        else:
            deliver_full = delivery.deliver

            def stages(x: Any, extra: Any, contexts: tuple) -> Any:
                xn = x_in(p, x) if numpy_in else x
                cv = context_values(p, contexts, xn) if contexts else ()
                return deliver_full(run(xn, None, cv, None, full), full, False, None, None)

        deliver = "delivery"
    else:
        deliver_all = delivery.deliver

        def stages(x: Any, extra: Any, contexts: tuple) -> Any:
            xn = x_in(p, x) if numpy_in else x
            tn = (extra if batched else (extra,)) if identity else tangents_in(p, extra, xn)
            cv = context_values(p, contexts, xn) if contexts else ()
            return deliver_all(run(xn, tn, cv, None, full), full, batched, None, None)

        deliver = "delivery"
    compiled = False
    if program is None and kernel.traceable and ops.compiles and not p.to_user and delivery.layout is None:
        holder, compiled = _compiled(ops, stages, guard.context_kinds), True
        stages = lambda x, extra, contexts: holder[0](x, extra, contexts)
    route = Route(accept_text, convert, route_run, deliver, compiled)
    if not settings.same_point and not batched and len(guard.context_kinds) <= 1 and not numpy_in:
        # x alone or x and one tangent (and at most one context): the accept test and the commonest
        # stages written out
        if program is not None and deliver == "as it is" and not compiled:
            return Plan(_straight(p, general, program, "program"), route)
        if program is None and not compiled and op.tangent is None:
            return Plan(_straight(p, general, run, "plain" if not full else "full"), route)
        if compiled:
            return Plan(_straight(p, general, holder, "compiled"), route)
        if not has_contexts:
            return Plan(_straight(p, general, stages, "stages"), route)
    return Plan(_accepting(accept, stages, general, settings.strict), route)


def _straight(p: Prepared, general: Call, act: Any, how: str) -> Call:
    """The call of a plan for x alone or x and one tangent, with at most one context, its accept test in
    straight-line code. `how` says what `act` is: the direct "program" (`act(x, cv)`, `act(x, t, cv)`),
    the kernel's run of the "plain" operator or of the "full" variant (delivered here), all the
    "stages" (`act(x, t, contexts)`), or the holder of the "compiled" stages (`act[0](x, t, contexts)`)."""
    guard, strict, delivery, ops = p.guard, p.settings.strict, p.delivery, p.ops
    assert guard is not None
    specs = guard.signature.specs
    xt, xd, xs, xdev = specs[0]
    tangent = p.op.tangent is not None
    if tangent:
        tt, td, ts, tdev = specs[1]
    else:
        tt, td, ts, tdev = type(None), None, None, None
    kinds = guard.context_kinds
    n = len(kinds)
    k0 = kinds[0] if n else None
    c0 = spec_test(specs[2 if tangent else 1]) if n else None
    # a context value of the prepared type needs no conversion where it is native (checked calls)
    native_value = bool(n) and specs[2 if tangent else 1][0] is p.native_type
    convert = n and not (p.takes_numpy or ops is NUMPY)
    checked = strict
    result, deliver = delivery.result, delivery.deliver

    def call(x: Any, t: Any, contexts: tuple, check: bool) -> Any:
        if type(x) is xt and type(t) is tt and len(contexts) == n and (not n or type(contexts[0]) is k0):
            if not (check and checked) or (
                x.dtype == xd
                and x.shape == xs
                and (xdev is None or x.device == xdev)
                and (not tangent or (t.dtype == td and t.shape == ts and (tdev is None or t.device == tdev)))
                and (not n or c0(contexts[0].value))  # type: ignore[misc]
            ):
                if how == "stages":
                    return act(x, t, contexts)
                if how == "compiled":
                    return act[0](x, t, contexts)
                cv: tuple
                if not n:
                    cv = ()
                elif convert and not (native_value and check and checked):
                    cv = (convert_value(ops, contexts[0].value, x),)
                else:
                    cv = (contexts[0].value,)
                if how == "program":
                    return act(x, t, cv) if tangent else act(x, cv)
                if how == "plain":
                    return result(act(x, None, cv, None, False).result)
                return deliver(act(x, None, cv, None, True), True, False, None, None)
        return general(x, t, contexts, check)

    return call


def _direct_stages(p: Prepared, program: Callable, tangent: bool) -> Callable[[Any, Any, tuple], Any]:
    """Stages 2-4 around a direct program: the program itself where its result is what the user gets."""
    ops, delivery, to_user = p.ops, p.delivery, p.to_user
    layout, scalar = delivery.layout, delivery.scalar

    def finish(d: Any) -> Any:
        if layout is not None:
            return layout.build(ops, ops.to_numpy(d) if to_user else d, delivery.user_numpy)
        d = ops.to_numpy(d)
        return d[()] if scalar else d

    if tangent:
        if layout is None and not to_user:
            return lambda x, t, contexts: program(x, t, context_values(p, contexts, x) if contexts else ())
        return lambda x, t, contexts: finish(program(x, t, context_values(p, contexts, x) if contexts else ()))
    if layout is None and not to_user:
        return lambda x, extra, contexts: program(x, context_values(p, contexts, x) if contexts else ())
    return lambda x, extra, contexts: finish(program(x, context_values(p, contexts, x) if contexts else ()))


def _array_accept(p: Prepared) -> tuple[Callable[[Any, Any, tuple, bool], bool], str]:
    """The accept test of an array call `(x, extra, contexts, strict) -> bool`: the prepared specs where
    the call is checked, the prepared types (and structure) where it is not; straight-line code for x
    alone and x with one tangent."""
    guard, op, settings = p.guard, p.op, p.settings
    assert guard is not None and guard.x_test is not None and guard.tangent_tests is not None
    specs = guard.signature.specs
    xt, xd, xs, xdev = specs[0]
    x_test, contexts_test = guard.x_test, guard.contexts_test
    n_tangents = 0 if op.tangent is None else (p.batch or 1)
    kinds = guard.context_kinds
    context_specs = specs[1 + n_tangents : 1 + n_tangents + len(kinds)]
    same_point = settings.same_point
    point_holds = guard.point_holds

    def loose_contexts(contexts: tuple) -> bool:
        return len(contexts) == len(kinds) and all(type(c) is k for c, k in zip(contexts, kinds))

    text = "x" if op.tangent is None else f"x and {n_tangents} tangent{'s' if n_tangents > 1 else ''}"
    text += f", {len(context_specs)} context{'s' if len(context_specs) != 1 else ''}" if context_specs else ""
    text += ", the prepared point" if same_point else ""
    if op.tangent is None and not context_specs and xdev is None and not same_point:

        def accept_x(x: Any, extra: Any, contexts: tuple, strict: bool) -> bool:
            if extra is not None or contexts or type(x) is not xt:
                return False
            return not strict or (x.dtype == xd and x.shape == xs)

        return accept_x, text
    tangent_tests = guard.tangent_tests
    if n_tangents == 1 and not context_specs and xdev is None and not same_point:
        (t_test,) = tangent_tests
        tt = specs[1][0]

        def accept_xt(x: Any, t: Any, contexts: tuple, strict: bool) -> bool:
            if contexts or type(x) is not xt or type(t) is not tt:
                return False
            return not strict or (x.dtype == xd and x.shape == xs and t_test(t))

        return accept_xt, text
    tangent_types = tuple(s[0] for s in specs[1 : 1 + n_tangents])

    def accept(x: Any, extra: Any, contexts: tuple, strict: bool) -> bool:
        if type(x) is not xt:
            return False
        if n_tangents == 0:
            if extra is not None:
                return False
        elif p.batch is None:
            if type(extra) is not tangent_types[0] or (strict and not tangent_tests[0](extra)):
                return False
        elif type(extra) is not tuple or len(extra) != n_tangents:
            return False
        elif not all(type(t) is k for t, k in zip(extra, tangent_types)):
            return False
        elif strict and not all(test(t) for test, t in zip(tangent_tests, extra)):
            return False
        if not strict:
            return loose_contexts(contexts)
        return x_test(x) and contexts_test(contexts) and (not same_point or point_holds(x, contexts))

    return accept, text


def _accepting(
    accept: Callable[[Any, Any, tuple, bool], bool],
    stages: Callable[[Any, Any, tuple], Any],
    general: Call,
    strict: bool,
) -> Call:
    """The plan's call: the accept test, then the stages, else the general path."""
    if strict:

        def call(x: Any, extra: Any, contexts: tuple, check: bool) -> Any:
            if accept(x, extra, contexts, check):
                return stages(x, extra, contexts)
            return general(x, extra, contexts, check)

        return call

    def call_unchecked(x: Any, extra: Any, contexts: tuple, check: bool) -> Any:
        if accept(x, extra, contexts, False):
            return stages(x, extra, contexts)
        return general(x, extra, contexts, check)

    return call_unchecked


def _compiled(ops: Any, stages: Callable[[Any, Any, tuple], Any], kinds: tuple) -> list:
    """Stages 2-4 as one compiled program of (x, tangents or a tree's leaves, contexts of the prepared
    `kinds`), in a one-element list the plan calls through: the first call compiles the program, and
    the list then holds the program itself or, where the library cannot compile it (an output it
    cannot hold), the stages run one by one."""
    if kinds:  # contexts are no arrays: their values go in, the contexts are remade inside

        def traced(x: Any, extra: Any, values: tuple) -> Any:
            return stages(x, extra, tuple(k(v) for k, v in zip(kinds, values)))

        program = ops.compile(traced)

        def fused(x: Any, extra: Any, contexts: tuple) -> Any:
            return program(x, extra, tuple(c.value for c in contexts))

    else:  # no contexts: the empty tuple is an argument the library takes as it is
        fused = ops.compile(stages)
    holder: list = [None]

    def first(x: Any, extra: Any, contexts: tuple) -> Any:
        try:
            out = fused(x, extra, contexts)
        except Exception:
            holder[0] = stages
            return stages(x, extra, contexts)
        holder[0] = fused
        return out

    holder[0] = first
    return holder


# -- structured calls ---------------------------------------------------------------------------------
def _structured(p: Prepared, full: bool, general: Call) -> Plan:
    """The plan of a structured call without tangents (a tree x, a complex array, `has_aux`,
    `output="matrix"`, a tree output); with tangents, or at one point, calls take the general path."""
    op, kernel, codec, guard, settings, delivery = p.op, p.kernel, p.codec, p.guard, p.settings, p.delivery
    assert codec is not None and guard is not None
    if op.tangent is not None or settings.same_point or (p.to_user and not p.takes_numpy and codec.xi is not None):
        return Plan(general, GENERAL)
    xi, ops, has_aux = codec.xi, p.ops, settings.has_aux
    tree = xi is not None and not codec.x_is_array
    contexts_test, kinds = guard.contexts_test, guard.context_kinds
    kind = op.kinds[-1]
    if tree:
        assert xi is not None
        flatten, matches = xi.flattener.flatten, xi.matches
        text = "tree x"
    else:
        if guard.x_test is None or guard.signature.specs[0][1] is None:
            return Plan(general, GENERAL)
        xt = guard.signature.specs[0][0]
        text = "x"
    if kinds:
        text += f", {len(kinds)} context{'s' if len(kinds) != 1 else ''}"
    # the direct program's result is what the user gets: not the nonzeros of a sparse result
    program = kernel.direct if not full and not has_aux and delivery.layout is None else None
    if program is not None and p.to_user and not p.takes_numpy:
        program = None
    ravel = xi.ravel_leaves if tree and not op.scalar_x and xi is not None else None
    # one complex array and a result like it (a gradient): its pairs in, complex numbers out
    pairs = xi is not None and xi.single and not tree and kind == "x" and not codec.imag and not op.scalar_x
    stages: Callable[[Any, Any, tuple], Any]
    if pairs and not full and not has_aux and not p.to_user:
        run, result, to_pairs, from_pairs = kernel.run, delivery.result, ops.to_pairs, ops.from_pairs

        def pairs_stages(x: Any, leaves: Any, contexts: tuple) -> Any:
            cv = context_values(p, contexts, x) if contexts else ()
            if program is not None:
                return from_pairs(program(to_pairs(x), cv))
            return from_pairs(result(run(to_pairs(x), None, cv, None, False).result))

        stages = pairs_stages
    else:
        stages = _structured_stages(p, full, program, ravel)
    compiled = kernel.traceable and ops.compiles and not p.to_user and delivery.layout is None
    holder = _compiled(ops, stages, kinds) if compiled else [stages]
    strict = settings.strict

    if tree:

        def call_tree(x: Any, extra: Any, contexts: tuple, check: bool) -> Any:
            if extra is None:
                leaves, spec = flatten(x)
                if matches(leaves, spec) and (contexts_test(contexts) if contexts or kinds else True):
                    return holder[0](None, leaves, contexts)
            return general(x, extra, contexts, check)

        call = call_tree
    else:
        _, xd, xs, xdev = guard.signature.specs[0]

        def call_array(x: Any, extra: Any, contexts: tuple, check: bool) -> Any:
            if (
                extra is None
                and type(x) is xt
                and (not (check and strict) or (x.dtype == xd and x.shape == xs and (xdev is None or x.device == xdev)))
            ):
                if contexts_test(contexts) if contexts or kinds else True:
                    return holder[0](x, None, contexts)
            return general(x, extra, contexts, check)

        call = call_array
    convert = "tree -> flat" if tree else "complex -> pairs" if xi is not None else "identity"
    if p.to_user:
        convert += ", NumPy -> native"
    route_run = "kernel.direct" if program is not None else "kernel.run"
    route_deliver = "trees" if program is not None or not has_aux else "trees and aux"
    return Plan(call, Route(text, convert, route_run, route_deliver, compiled))


def _structured_stages(
    p: Prepared, full: bool, program: Callable | None, ravel: Callable | None
) -> Callable[[Any, Any, tuple], Any]:
    """Stages 2-4 of a structured call: (x or None, a tree's leaves or None, contexts) -> results."""
    op, codec, delivery, kernel = p.op, p.codec, p.delivery, p.kernel
    assert codec is not None
    name, kind, has_aux = op.full_name if full else op.name, op.kinds[-1], p.settings.has_aux
    imag, native_type = codec.imag, p.native_type
    run, deliver, result = kernel.run, delivery.deliver, delivery.result
    decode, decode_all = codec.decode, codec.decode_all
    to_user, to_numpy = p.to_user, p.ops.to_numpy

    def stages(x: Any, leaves: Any, contexts: tuple) -> Any:
        xf = ravel(leaves) if ravel is not None else codec.x_in(x, leaves, True, name)
        if imag:
            contexts = codec.call_contexts(x, leaves, contexts)
        xn = xf if type(xf) is native_type else x_in(p, xf)  # NumPy scalars too, where arrays go as they are
        cv = context_values(p, contexts, xn) if contexts else ()
        if program is not None:
            return decode(kind, to_numpy(program(xn, cv)) if to_user else program(xn, cv))
        if not full and not has_aux:
            return decode(kind, result(run(xn, None, cv, None, False).result))
        results = decode_all(deliver(run(xn, None, cv, None, full), full, False, None, None), full)
        return with_aux(p, results, full, xn, contexts) if has_aux else results

    return stages
