"""Validation of user input: shapes, dtypes, finiteness and index lists.

Errors name the argument, what it got and what it expects, and are raised before any state
changes. Shape rule (the seed's): a batched scene takes ``(n_selected_envs, *shape)`` or an
unbatched ``shape`` that applies to every selected env; an unbatched scene takes ``shape`` only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import InvalidTypeError, InvalidValueError, OutOfRangeIndexError
from .runtime.state import STATE, float_dtype


def as_index_list(name: str, value, size: int, what: str) -> np.ndarray | None:
    """``value`` (None, an int, or a sequence of ints) as an int array of unique indices in
    ``[0, size)``; None stays None (meaning "all")."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise InvalidValueError(f"{name}: expected a 1-D list of {what} indices, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InvalidTypeError(f"{name}: expected integer {what} indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    bad = arr[(arr < 0) | (arr >= size)]
    if bad.size:
        raise OutOfRangeIndexError(f"{name}: {what} index {int(bad[0])} is out of range; expected 0 <= index < {size}")
    if np.unique(arr).size != arr.size:
        raise InvalidValueError(f"{name}: expected unique {what} indices, got {arr.tolist()}")
    if arr.size == 0:
        raise InvalidValueError(f"{name}: expected at least one {what} index, got an empty list (None selects all)")
    return arr


def as_float_array(name: str, value, allow_nonfinite: bool = False, dtype=np.float64) -> np.ndarray:
    """``value`` as a ``dtype`` array (no copy when it already is one); rejects non-numeric dtypes,
    NaN / inf, and numbers beyond the engine's float range (1e39 is finite in float64 but inf in
    a float32 engine: it would reach the kernels as inf)."""
    if value is None:
        raise InvalidTypeError(f"{name}: expected an array of numbers, got None")
    try:
        arr = np.asarray(value)
    except Exception as err:  # ragged nested lists and the like
        raise InvalidValueError(f"{name}: expected an array of numbers, got {type(value).__name__}: {err}") from None
    if arr.dtype.kind not in "iuf":  # bool, complex, objects, strings ...
        raise InvalidTypeError(f"{name}: expected real numbers, got dtype {arr.dtype}")
    if not allow_nonfinite:  # checked before any cast to a narrower float, which would make inf
        if not np.all(np.isfinite(arr)):
            raise InvalidValueError(f"{name}: expected finite numbers, got NaN or inf")
        limit = float(np.finfo(float_dtype()).max)
        biggest = float(np.abs(arr).max(initial=0))
        if biggest > limit:
            raise InvalidValueError(f"{name}: expected numbers within the engine's {STATE.precision}-bit float "
                                    f"range (|x| <= {limit:.3g}), got {biggest:.3g}")
    return arr.astype(dtype, copy=False)


def batched(name: str, value, shape: Sequence[int], n_selected: int, scene_batched: bool,
            dtype=np.float64) -> np.ndarray:
    """``value`` as a ``dtype`` array of shape ``(n_selected, *shape)`` (not a copy when it already
    was one: callers must not write into it).

    ``scene_batched`` False: ``value`` must have exactly ``shape`` (n_selected is then 1).
    """
    arr = as_float_array(name, value, dtype=dtype)
    shape = tuple(shape)
    if arr.shape == shape:
        return np.broadcast_to(arr, (n_selected, *shape)).copy()
    if scene_batched and arr.shape == (n_selected, *shape):
        return arr
    expected = f"{shape}" if not scene_batched else f"{shape} or {(n_selected, *shape)}"
    raise InvalidValueError(f"{name}: expected shape {expected}, got {arr.shape}")


def as_point(name: str, value) -> tuple[float, float, float]:
    """A point or a direction ``(3,)`` (m, or unitless) as three floats; another shape is an
    error naming ``name``."""
    arr = as_float_array(name, value)
    if arr.shape != (3,):
        raise InvalidValueError(f"{name}: expected shape (3,), got {arr.shape}")
    return tuple(float(v) for v in arr)


def as_mask(name: str, value) -> np.ndarray:
    """A length-3 boolean mask."""
    arr = np.asarray(value)
    if arr.shape != (3,):
        raise InvalidValueError(f"{name}: expected 3 booleans, got {list(np.atleast_1d(arr).tolist())}")
    if arr.dtype != bool:
        if not np.all(np.isin(arr, (0, 1))):
            raise InvalidValueError(f"{name}: expected 3 booleans, got {arr.tolist()}")
        arr = arr.astype(bool)
    return arr


INT32_MAX = 2**31 - 1  # integer arguments reach the kernels as int32


def as_positive(name: str, value, integer: bool = False, allow_zero: bool = False,
                maximum: float | None = None) -> float | int:
    """A positive (or non-negative) finite scalar, at most ``maximum`` (by default what the kernels
    can hold: :data:`INT32_MAX` for integers, the engine's float range otherwise). Bools are
    refused: ``True`` is not a count."""
    if isinstance(value, bool | np.bool_ | str | bytes):  # True is not a count, '5' is not a number
        raise InvalidTypeError(f"{name}: expected a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidTypeError(f"{name}: expected a number, got {value!r}") from None
    if not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        kind = "non-negative" if allow_zero else "positive"
        raise InvalidValueError(f"{name}: expected a {kind} number, got {value!r}")
    if integer:
        if x != int(x):
            raise InvalidValueError(f"{name}: expected an integer, got {value!r}")
        maximum = INT32_MAX if maximum is None else maximum
    elif maximum is None:  # a tolerance of 1e39 would be inf in a float32 kernel: everything "succeeds"
        maximum = float(np.finfo(float_dtype()).max)
    if x > maximum:
        shown = f"{int(maximum):,}" if integer else f"{maximum:.6g}"
        raise InvalidValueError(f"{name}: expected at most {shown}, got {value!r}")
    return int(x) if integer else x


def as_flag(name: str, value) -> bool:
    """A bool (Python's or numpy's); anything else, such as the string 'no', is a TypeError."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise InvalidTypeError(f"{name}: expected True or False, got {value!r}")
