"""Buffers of a compiled replay: allocated once, at compilation, and shared by values whose lifetimes
do not overlap.

A compiled replay is a straight-line program, so its memory can be planned like registers: a value
takes a buffer when its step is compiled and gives it back after the last step that reads it; the next
value of a fitting size takes the same memory. The program touches a few buffers again and again
(cache-hot) instead of one buffer per value, which is what makes large arrays slow. Views (reshape,
transpose, basic indexing, broadcast cotangents) share their base's buffer, which lives until the last
value using it is dead.

The buffers of one thread's replay form an `Arena`: the forward replay takes what it needs, keeps the
values the sweeps read, and leaves the rest free; every sweep then plans its own values in the free
buffers (sweeps run one at a time after the forward replay, never interleaved).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Arena", "Pool", "Storage"]

#: a free buffer of more than this many times the bytes asked for is not used for it
_SLACK = 2


class Pool:
    """Free raw buffers (1-d uint8 arrays) handed out as typed arrays of a given shape."""

    def __init__(self, free: list, arena: Arena | None = None) -> None:
        self.free = free
        self.arena = arena

    def take(self, shape: tuple, dtype: Any) -> tuple[np.ndarray, Any]:
        """(array, raw buffer it lives in): the smallest free buffer that fits, else a new one."""
        dtype = np.dtype(dtype)
        need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if need == 0:
            return np.empty(shape, dtype), None
        best = None
        for k, raw in enumerate(self.free):
            size = raw.nbytes
            if need <= size <= _SLACK * need and (best is None or size < self.free[best].nbytes):
                best = k
                if size == need:
                    break
        if best is None:
            raw = np.empty(need, np.uint8)
            if self.arena is not None:
                self.arena.raws.append(raw)
        else:
            raw = self.free.pop(best)
        return raw[:need].view(dtype).reshape(shape), raw

    def give(self, raw: Any) -> None:
        if raw is not None:
            self.free.append(raw)


class Arena:
    """All the buffers of one replay; `forward_free` are those the forward replay leaves free."""

    def __init__(self) -> None:
        self.raws: list = []
        self.kept: set[int] = set()  # ids of the raw buffers holding values the sweeps read

    def forward_pool(self) -> Pool:
        return Pool([], self)

    def sweep_pool(self) -> Pool:
        """The free buffers at the start of a sweep: all but those the forward replay keeps."""
        return Pool([raw for raw in self.raws if id(raw) not in self.kept], self)


class Storage:
    """Which buffer each value of a program lives in, and when it can be given back.

    Values are keyed by any hashable (slot numbers). A value is `new` (its own buffer from the pool),
    a `view` of another value (sharing its buffer), or `external` (memory owned elsewhere: inputs,
    literals, seeds, the forward replay's buffers). `release(key)` drops a value; its buffer returns to
    the pool when no value uses it any more. Values marked `keep` are never released.
    """

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.root: dict[Any, int] = {}  # value -> root id
        self.refs: dict[int, int] = {}  # root id -> live values using it
        self.raw: dict[int, Any] = {}  # root id -> raw buffer (None: external)
        self.base: dict[int, np.ndarray] = {}  # root id -> the typed array it was made as
        self.kept: set[Any] = set()
        self._next = 0

    def _root(self, raw: Any, base: np.ndarray | None) -> int:
        r = self._next
        self._next += 1
        self.refs[r] = 0
        self.raw[r] = raw
        if base is not None:
            self.base[r] = base
        return r

    def _bind(self, key: Any, r: int) -> None:
        old = self.root.get(key)
        if old is not None:
            self._drop(old)
        self.root[key] = r
        self.refs[r] += 1

    def new(self, key: Any, shape: tuple, dtype: Any) -> np.ndarray:
        a, raw = self.pool.take(shape, dtype)
        self._bind(key, self._root(raw, a))
        return a

    def temp(self, shape: tuple, dtype: Any) -> tuple[np.ndarray, Any]:
        """A scratch buffer for the next steps; give its raw buffer back with `done`."""
        return self.pool.take(shape, dtype)

    def done(self, raw: Any) -> None:
        self.pool.give(raw)

    def external(self, key: Any) -> None:
        self._bind(key, self._root(None, None))

    def view(self, key: Any, of: Any) -> None:
        """`key` lives in the buffer of `of` (a view of it)."""
        r = self.root.get(of)
        self._bind(key, r if r is not None else self._root(None, None))

    def keep(self, key: Any) -> None:
        self.kept.add(key)

    def release(self, key: Any) -> None:
        if key in self.kept:
            return
        r = self.root.pop(key, None)
        if r is not None:
            self._drop(r)

    def _drop(self, r: int) -> None:
        self.refs[r] -= 1
        if self.refs[r] == 0:
            raw = self.raw.pop(r)
            self.base.pop(r, None)
            self.pool.give(raw)

    def reusable(self, key: Any, buf: np.ndarray) -> bool:
        """Whether `buf` is the whole buffer of `key`, used by no other value (an elementwise step may
        write its result over it, taking over the buffer, when `key` dies at that step)."""
        r = self.root.get(key)
        return (
            r is not None
            and key not in self.kept
            and self.refs[r] == 1
            and self.raw[r] is not None
            and self.base.get(r) is buf
        )

    def take_over(self, key: Any, new_key: Any) -> None:
        """`new_key` takes the buffer of `key`, which dies (see `reusable`)."""
        r = self.root.pop(key)
        self.root[new_key] = r

    def kept_raws(self) -> set[int]:
        """ids of the raw buffers that kept values live in."""
        return {id(self.raw[self.root[k]]) for k in self.kept if k in self.root and self.raw[self.root[k]] is not None}
