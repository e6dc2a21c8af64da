"""Bounds checks for the mock's numpy kernels.

A GPU kernel that reads or writes past its buffer faults with an illegal
address; numpy slicing past an array's end silently stops at the end.  The
mock kernels take every span through :func:`span`, so an overrun raises
:class:`MemoryFault` and the launch fails as it does on the native drivers.
A GPU also faults on a load or store that is not aligned to its size (CUDA's
MISALIGNED_ADDRESS); numpy reads a misaligned view without complaint, so the
kernels take typed spans through :func:`typed`, which raises
:class:`MisalignedFault` there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MemoryFault", "MisalignedFault", "span", "typed"]


class MemoryFault(IndexError):
    """A kernel touched bytes past the end of a buffer it was given."""

    def __init__(self, nbytes: int, size: int, *, address: int | None = None) -> None:
        super().__init__(f"{nbytes} bytes accessed in a {size}-byte buffer")
        self.nbytes = nbytes
        self.size = size
        #: Where the kernel was sent that is no memory (a raw address), or None.
        self.address = address


class MisalignedFault(MemoryFault):
    """A kernel loaded or stored a value at an address not aligned to its size."""

    def __init__(self, itemsize: int, offset: int) -> None:
        IndexError.__init__(self, f"a {itemsize}-byte access {offset} bytes past alignment")
        self.nbytes = itemsize
        self.size = 0
        self.address = None
        #: The value's size, and how far past a multiple of it the access was.
        self.itemsize = itemsize
        self.offset = offset


def typed(buf: np.ndarray[Any, np.dtype[np.uint8]], count: int, dtype: Any) -> np.ndarray[Any, Any]:
    """The first ``count`` elements of ``dtype`` in ``buf``: MemoryFault if it has fewer,
    MisalignedFault if ``buf`` does not start on a multiple of the element's size.

    Mock allocations start on 256 bytes of device address space and their numpy
    memory on at least 16, so the host address is aligned as the device one is.
    """
    itemsize = np.dtype(dtype).itemsize
    nbytes = count * itemsize
    if nbytes:
        offset = buf.ctypes.data % itemsize
        if offset:
            raise MisalignedFault(itemsize, offset)
    return span(buf, nbytes).view(dtype)


def span(buf: np.ndarray[Any, np.dtype[np.uint8]], nbytes: int) -> np.ndarray[Any, Any]:
    """The first ``nbytes`` of ``buf``, or MemoryFault if it has fewer."""
    if nbytes < 0 or nbytes > buf.size:
        raise MemoryFault(nbytes, int(buf.size))
    return buf[:nbytes]
