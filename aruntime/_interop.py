"""Foreign streams: finding the raw handle in another library's stream object."""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np

from ._exceptions import InvalidArgumentError

__all__ = ["foreign_stream_handle"]

_UINTPTR_MAX = (1 << 64) - 1


def foreign_stream_handle(obj: object, fn: str = "wrap_stream") -> int:
    """The native stream handle (an int) that ``obj`` stands for.

    Accepted, in this order: an object with ``__cuda_stream__()`` (cuda.core,
    and aruntime's own streams), an object with ``cuda_stream`` (PyTorch's
    ``torch.cuda.Stream``), an object with an int ``ptr`` (CuPy's
    ``cupy.cuda.Stream``), and anything ``int()`` takes through ``__index__`` or
    ``__int__`` (a raw handle, cuda-bindings' ``CUstream``).
    """
    if isinstance(obj, bool):
        raise TypeError(f"{fn}: expected a stream object or a raw handle, got a bool")
    protocol = getattr(obj, "__cuda_stream__", None)
    if protocol is not None:
        pair = protocol() if callable(protocol) else protocol
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(
                f"{fn}: {type(obj).__name__}.__cuda_stream__() returned {pair!r}, "
                "not (version, handle)"
            )
        return _checked(pair[1], fn, f"{type(obj).__name__}.__cuda_stream__()")
    for attribute in ("cuda_stream", "ptr"):
        value = getattr(obj, attribute, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return _checked(value, fn, f"{type(obj).__name__}.{attribute}")
    try:
        raw: Any = operator.index(obj)  # type: ignore[arg-type]
    except TypeError:
        # cuda-bindings' CUstream converts with int(); numbers that merely
        # round to an int (floats, numpy datetimes...) are not handles.
        if isinstance(obj, (numbers.Number, np.generic, str, bytes)) or not hasattr(
            type(obj), "__int__"
        ):
            raise TypeError(
                f"{fn}: cannot find a stream handle in a {type(obj).__name__}; pass an object "
                "with __cuda_stream__ (cuda.core), a CuPy or PyTorch stream, or an int handle"
            ) from None
        try:
            raw = int(obj)  # type: ignore[call-overload]
        except (TypeError, ValueError, OverflowError) as exc:
            raise TypeError(f"{fn}: int() of a {type(obj).__name__} failed: {exc}") from None
    return _checked(raw, fn, type(obj).__name__)


def _checked(value: object, fn: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}: {what} gave {value!r}, not an int handle")
    if not 0 <= value <= _UINTPTR_MAX:
        raise InvalidArgumentError(f"{fn}: {what} gave {value}, not a valid stream handle")
    return value
