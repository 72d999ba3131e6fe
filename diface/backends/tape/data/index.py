"""Index keys as tape metadata: a template of ints, slices and newaxes, with placeholders for the index
arrays, which are inputs of the node (literal or traced)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .graph import Traced

__all__ = ["Arr", "Key", "build", "normalize"]


class Arr(NamedTuple):
    """Placeholder in a template for index array number `k` (the node's input k + offset)."""

    k: int


@dataclass(frozen=True)
class Key:
    """A normalized index: `template` (Ellipsis expanded, trailing full slices added) and `arrays`."""

    template: tuple
    arrays: tuple
    #: NumPy returns a view (no index arrays, and not every axis taken by an integer)
    basic_view: bool
    #: ndim of the advanced-index block when NumPy moves it to the front (non-adjacent), else 0
    adv_front: int
    #: index arrays that are traced boolean masks (their count of True is fixed by a guard)
    traced_masks: tuple
    #: the advanced indices never select one element twice (known for literal index arrays)
    unique: bool

    @property
    def covers_all(self) -> bool:
        """Every element of the array is selected, each once, in place (a whole assignment)."""
        return all(type(e) is slice and e == slice(None) for e in self.template)


def build(template: tuple, arrays: tuple) -> tuple:
    """The NumPy key of a template, with the current index arrays."""
    return tuple(arrays[e.k] if type(e) is Arr else e for e in template)


def _index_int(v: Any) -> int | None:
    return None if v is None else operator.index(v)


def normalize(key: Any, shape: tuple) -> Key:
    """Normalize a user key for an array of `shape` (raises IndexError where NumPy would refuse it).

    Every key NumPy takes: ints, slices (any step), None, Ellipsis, integer and boolean arrays or lists,
    traced integer arrays and masks, and boolean scalars (`x[True]`, `x[0, np.False_]`, a 0-d boolean
    array), which NumPy reads as an index array on a new axis of length 1 (True) or 0 (False)."""
    if not isinstance(key, tuple):
        key = (key,)
    items: list[Any] = []
    for k in key:
        if k is None or k is Ellipsis:
            items.append(k)
        elif isinstance(k, slice):
            items.append(slice(_index_int(k.start), _index_int(k.stop), _index_int(k.step)))
        elif isinstance(k, (bool, np.bool_)):
            items.append(("mask", np.array(bool(k))))  # a 0-d mask: a new axis of length 1 or 0
        elif isinstance(k, (int, np.integer)):
            items.append(int(k))
        elif isinstance(k, Traced):
            if k.dtype == np.bool_:
                items.append(("mask", k))
            elif np.issubdtype(k.dtype, np.integer):
                items.append(("arr", k))
            else:
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
        else:
            a = np.asarray(k)
            if a.dtype == np.bool_:
                items.append(("mask", a))
            elif np.issubdtype(a.dtype, np.integer) or a.size == 0:
                items.append(("arr", a.astype(np.intp)))
            else:
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
    consumed = sum(
        1 if (type(e) is int or type(e) is slice or (type(e) is tuple and e[0] == "arr")) else 0 for e in items
    )
    consumed += sum(e[1].ndim for e in items if type(e) is tuple and e[0] == "mask")
    if items.count(Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {consumed} were indexed")
    fill = [slice(None)] * (len(shape) - consumed)
    if Ellipsis in items:
        i = items.index(Ellipsis)
        items[i : i + 1] = fill
    else:
        items += fill
    # literal boolean masks become integer arrays (np.nonzero); traced ones and 0-d ones (x[True], which
    # NumPy reads as an index array on a new axis of length 1) stay masks
    expanded: list[Any] = []
    for e in items:
        if type(e) is tuple and e[0] == "mask" and not isinstance(e[1], Traced) and e[1].ndim:
            expanded += [("arr", a) for a in np.nonzero(e[1])]
        else:
            expanded.append(e)
    template: list[Any] = []
    arrays: list[Any] = []
    traced_masks = []
    for e in expanded:
        if type(e) is tuple:
            template.append(Arr(len(arrays)))
            arrays.append(e[1])
            if e[0] == "mask" and isinstance(e[1], Traced):
                traced_masks.append(e[1])
        else:
            template.append(e)
    has_arrays = bool(arrays)
    advanced = [i for i, e in enumerate(template) if type(e) is Arr or (has_arrays and type(e) is int)]
    adv_front = 0
    if advanced and advanced[-1] - advanced[0] + 1 != len(advanced):
        shapes = [(1,) if a.dtype == np.bool_ else a.shape for a in arrays]
        adv_front = len(np.broadcast_shapes(*shapes))
    n_ints = sum(1 for e in template if type(e) is int)
    basic_view = not has_arrays and n_ints < len(shape)
    traced = [a for a in arrays if isinstance(a, Traced)]
    if not traced:
        unique = _unique(template, arrays, shape)
    else:  # a traced boolean mask, alone or with 0-d masks, selects each element at most once
        unique = len(traced) == 1 and traced[0].dtype == np.bool_
        unique = unique and all(a.dtype == np.bool_ and a.ndim == 0 for a in arrays if not isinstance(a, Traced))
    return Key(tuple(template), tuple(arrays), basic_view, adv_front, tuple(traced_masks), unique)


def _unique(template: Sequence[Any], arrays: list, shape: tuple) -> bool:
    """Whether literal advanced indices select distinct positions."""
    dims, parts = [], []
    axis = 0
    for e in template:
        if e is None:
            continue
        if type(e) is Arr and arrays[e.k].dtype == np.bool_:  # a 0-d mask: no axis, at most one position
            if not arrays[e.k]:
                return True
            continue
        if type(e) is Arr or type(e) is int:
            n = shape[axis]
            parts.append(np.asarray(arrays[e.k] if type(e) is Arr else e) % max(n, 1))
            dims.append(max(n, 1))
        axis += 1
    if not parts:
        return True
    try:
        flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*parts)), dims)
    except ValueError:
        return False
    return np.unique(flat).size == flat.size
