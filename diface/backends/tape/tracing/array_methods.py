"""Python's operators on a traced array: each is the NumPy ufunc it stands for (which NumPy hands back
to the tape through `__array_ufunc__`), in-place ones make a new version of the array."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

__all__ = ["Operators"]


class Operators:
    """The arithmetic, comparison and bitwise operators of `tracing.tracer.TapeArray` (a mixin)."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    if TYPE_CHECKING:
        # what the operators use of the traced array they are mixed into (`tracing.tracer.TapeArray`); `__array__`
        # makes it an array-like to NumPy's ufunc signatures (at run time the ufuncs dispatch through
        # `TapeArray.__array_ufunc__`)
        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray: ...

        @property
        def dtype(self) -> np.dtype: ...

        def _assign(self, key: Any, value: Any) -> None: ...

    # -- arithmetic -------------------------------------------------------------------------------------
    def __add__(self, o: Any) -> Any:
        return np.add(self, o)

    def __radd__(self, o: Any) -> Any:
        return np.add(o, self)

    def __sub__(self, o: Any) -> Any:
        return np.subtract(self, o)

    def __rsub__(self, o: Any) -> Any:
        return np.subtract(o, self)

    def __mul__(self, o: Any) -> Any:
        return np.multiply(self, o)

    def __rmul__(self, o: Any) -> Any:
        return np.multiply(o, self)

    def __truediv__(self, o: Any) -> Any:
        return np.divide(self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return np.divide(o, self)

    def __floordiv__(self, o: Any) -> Any:
        return np.floor_divide(self, o)

    def __rfloordiv__(self, o: Any) -> Any:
        return np.floor_divide(o, self)

    def __mod__(self, o: Any) -> Any:
        return np.remainder(self, o)

    def __rmod__(self, o: Any) -> Any:
        return np.remainder(o, self)

    def __divmod__(self, o: Any) -> Any:
        return np.floor_divide(self, o), np.remainder(self, o)

    def __pow__(self, o: Any) -> Any:
        # NumPy's fast paths for a scalar exponent (same values as the general power would not give)
        if self.dtype.kind in "fc" and isinstance(o, (int, float, np.integer, np.floating)) and not isinstance(o, bool):
            if o == 2:
                return np.square(self)
            if o == 0.5:
                return np.sqrt(self)
            if o == 1:
                return np.positive(self)
            if o == -1:
                return np.reciprocal(self)
        return np.power(self, o)

    def __rpow__(self, o: Any) -> Any:
        return np.power(o, self)

    def __matmul__(self, o: Any) -> Any:
        return np.matmul(self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return np.matmul(o, self)

    def __neg__(self) -> Any:
        return np.negative(self)

    def __pos__(self) -> Any:
        return np.positive(self)

    def __abs__(self) -> Any:
        return np.absolute(self)

    def __invert__(self) -> Any:
        return np.invert(self)

    def __and__(self, o: Any) -> Any:
        return np.bitwise_and(self, o)

    def __rand__(self, o: Any) -> Any:
        return np.bitwise_and(o, self)

    def __or__(self, o: Any) -> Any:
        return np.bitwise_or(self, o)

    def __ror__(self, o: Any) -> Any:
        return np.bitwise_or(o, self)

    def __xor__(self, o: Any) -> Any:
        return np.bitwise_xor(self, o)

    def __rxor__(self, o: Any) -> Any:
        return np.bitwise_xor(o, self)

    def __lt__(self, o: Any) -> Any:
        return np.less(self, o)

    def __le__(self, o: Any) -> Any:
        return np.less_equal(self, o)

    def __gt__(self, o: Any) -> Any:
        return np.greater(self, o)

    def __ge__(self, o: Any) -> Any:
        return np.greater_equal(self, o)

    def __eq__(self, o: Any) -> Any:
        return np.equal(self, o)

    def __ne__(self, o: Any) -> Any:
        return np.not_equal(self, o)

    # in place: a new version of this array (and of the array it is a view of)
    def _inplace(self, ufunc: np.ufunc, o: Any) -> Any:
        ufunc(self, o, out=self)
        return self

    def __iadd__(self, o: Any) -> Any:
        return self._inplace(np.add, o)

    def __isub__(self, o: Any) -> Any:
        return self._inplace(np.subtract, o)

    def __imul__(self, o: Any) -> Any:
        return self._inplace(np.multiply, o)

    def __itruediv__(self, o: Any) -> Any:
        return self._inplace(np.divide, o)

    def __ifloordiv__(self, o: Any) -> Any:
        return self._inplace(np.floor_divide, o)

    def __imod__(self, o: Any) -> Any:
        return self._inplace(np.remainder, o)

    def __ipow__(self, o: Any) -> Any:
        self._assign(Ellipsis, self.__pow__(o))
        return self

    def __imatmul__(self, o: Any) -> Any:
        self._assign(Ellipsis, np.matmul(self, o))
        return self

    def __iand__(self, o: Any) -> Any:
        return self._inplace(np.bitwise_and, o)

    def __ior__(self, o: Any) -> Any:
        return self._inplace(np.bitwise_or, o)
