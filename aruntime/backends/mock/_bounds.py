"""Bounds checks for the mock's numpy kernels.

A GPU kernel that reads or writes past its buffer faults with an illegal
address; numpy slicing past an array's end silently stops at the end.  The
mock kernels take every span through :func:`span`, so an overrun raises
:class:`MemoryFault` and the launch fails as it does on the native drivers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MemoryFault", "span"]


class MemoryFault(IndexError):
    """A kernel touched bytes past the end of a buffer it was given."""

    def __init__(self, nbytes: int, size: int, *, address: int | None = None) -> None:
        super().__init__(f"{nbytes} bytes accessed in a {size}-byte buffer")
        self.nbytes = nbytes
        self.size = size
        #: Where the kernel was sent that is no memory (a raw address), or None.
        self.address = address


def span(buf: np.ndarray[Any, np.dtype[np.uint8]], nbytes: int) -> np.ndarray[Any, Any]:
    """The first ``nbytes`` of ``buf``, or MemoryFault if it has fewer."""
    if nbytes < 0 or nbytes > buf.size:
        raise MemoryFault(nbytes, int(buf.size))
    return buf[:nbytes]
