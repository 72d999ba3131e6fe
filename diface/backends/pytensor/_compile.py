"""Compiled PyTensor functions: the compile mode, a bounded weak cache, and thread-safe calls.

Compiling is what costs in PyTensor (a C module per new graph, then cached on disk by PyTensor itself;
tens to hundreds of milliseconds for a graph it has seen), so every compiled function is kept in a cache
keyed by (f, operator, input spec, context spec, compile mode): an unprepared call (which prepares every
time), a second preparation of the same problem, or the test kit's many calls find the function compiled.
The cache holds f weakly (an entry goes with its f) and at most `PER_FUNCTION` functions per f (least
recently used first out). Behind it, compiled functions are also kept by the structure of their graph
(`graph_key`, at most `BY_GRAPH`): a fresh closure around the same computation (the core's flat
function of a tree problem, a lambda made per call) traces to the same graph and finds it compiled.

Functions compile with PyTensor's default mode (`FAST_RUN`: C code, the fastest calls; what costs is
its graph rewrites, ~0.05-0.3 s a graph), unprepared calls too (see `mode_for`).

A compiled `pytensor.function` keeps its inputs and intermediates in storage of its own, so it is not
safe to call from several threads at once: `Program` serializes calls with a lock. Measured against a
copy per thread (`Function.copy`, ~5 ms a copy, made while no other thread calls the original): 8
threads x 200 gradients of a 300-element function, 2 busy cores: lock 15.7 s, copies 12.8 s, one thread
doing all 1,600 calls 13.2 s: PyTensor's calls do not run in parallel to any use, so the lock, simple and
safe, costs little; an uncontended lock adds ~0.1 µs a call.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

__all__ = ["PER_FUNCTION", "Program", "compile_cached", "mode_for"]

PER_FUNCTION = 64
#: compiled functions kept by the structure of their graph (see `graph_key`)
BY_GRAPH = 512

_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_by_graph: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()


class Program:
    """A compiled function made safe for threads: one call at a time."""

    __slots__ = ("fn", "lock")

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.lock = threading.Lock()

    def __call__(self, *args: Any) -> Any:
        with self.lock:
            return self.fn(*args)


def mode_for(single_use: bool) -> str:
    """The compile mode: PyTensor's default (FAST_RUN, C code, unless configured otherwise), for
    preparations and unprepared calls alike: with the cache, an unprepared call's function serves every
    later call of the same graph, and `FAST_COMPILE` (fewer rewrites, Python) measured slower over the
    test kit (its functions, ~70x slower to call, are compiled again by the preparations that follow)."""
    import pytensor

    return str(pytensor.config.mode)


def _entries(f: Any) -> OrderedDict | None:
    try:
        entries = _cache.get(f)
        if entries is None:
            entries = _cache[f] = OrderedDict()
        return entries
    except TypeError:  # f cannot be weakly referenced (or hashed): no cache
        return None


def compile_cached(f: Any, key: Hashable, single_use: bool, build: Callable[[], tuple[list, list]]) -> Program:
    """The compiled function of `build() -> (inputs, outputs)`, from the cache where (f, key, mode) or
    the graph's structure is there."""
    import pytensor

    mode = mode_for(single_use)
    with _cache_lock:
        entries = _entries(f)
        if entries is not None:
            hit = entries.get((key, mode))
            if hit is not None:
                entries.move_to_end((key, mode))
                return hit
    inputs, outputs = build()
    shape = graph_key(inputs, outputs)
    with _cache_lock:
        program = _by_graph.get((shape, mode)) if shape is not None else None
        if program is not None:
            _by_graph.move_to_end((shape, mode))
    if program is None:
        fn = pytensor.function(inputs, outputs, mode=mode, on_unused_input="ignore", accept_inplace=True)
        program = Program(fn)
        if shape is not None:
            with _cache_lock:
                _by_graph[(shape, mode)] = program
                while len(_by_graph) > BY_GRAPH:
                    _by_graph.popitem(last=False)
    with _cache_lock:
        if entries is not None:
            entries[(key, mode)] = program
            while len(entries) > PER_FUNCTION:
                entries.popitem(last=False)
    return program


def clear_cache() -> None:
    """Forget every compiled function."""
    with _cache_lock:
        _cache.clear()
        _by_graph.clear()


def graph_key(inputs: list, outputs: list) -> tuple | None:
    """A hashable description of the graph from `inputs` to `outputs` (each node's op, which PyTensor
    compares by its parameters, and where its inputs come from; constants by value): two traces of the
    same computation (a fresh closure around the same f, say) have the same key and share one compiled
    function. None where the graph holds something that cannot be keyed."""
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import io_toposort

    index: dict = {v: ("in", i, v.type) for i, v in enumerate(inputs)}

    def source(v: Any) -> Any:
        where = index.get(v)
        if where is not None:
            return where
        if isinstance(v, Constant):
            data = np.ascontiguousarray(v.data)
            digest = hashlib.blake2b(data.tobytes(), digest_size=16).digest()  # a big constant is not kept twice
            return ("c", v.type, data.dtype.str, data.shape, digest)
        raise KeyError(v)

    parts = []
    try:
        for node in io_toposort(inputs, outputs):
            parts.append((node.op, tuple(source(v) for v in node.inputs)))
            for j, o in enumerate(node.outputs):
                index[o] = ("n", len(parts) - 1, j)
        key = (tuple(parts), tuple(source(o) for o in outputs))
        hash(key)
    except (KeyError, TypeError):
        return None
    return key
