"""Pageable host memory staging, shared by the CUDA and Level Zero drivers.

A copy between the device and pageable (not page-locked) host memory costs
the enqueueing thread the whole copy on both real drivers: CUDA stages
through its own pinned buffers on the calling thread, and a device-to-host
copy into pageable memory is synchronous; Level Zero's USM rules leave
system memory to the driver, which copies it the same way.  So a driver cuts
large pageable copies into :data:`STAGING_CHUNK` pieces that go through
pinned buffers of its own, and moves each piece between the pageable memory
and the pinned buffer off the enqueueing thread: CUDA in a native host
function on the driver's thread, Level Zero on a
:class:`~aruntime.backends._worker.HostWorker` per stream.  This module
holds what both share: the sizes, the chunking and the pool of pinned
buffers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = [
    "DIRECT_PAGEABLE_H2D_MAX",
    "STAGING_CHUNK",
    "STAGING_POOL_MAX",
    "StagingPool",
    "chunks",
]

#: Pageable copies up to this size go straight to the driver, which stages
#: them itself at enqueue time (a memcpy of at most this many bytes).
DIRECT_PAGEABLE_H2D_MAX = 64 * 1024
#: Size of one pinned staging buffer, and of the chunks a staged copy is cut into.
STAGING_CHUNK = 4 * 1024 * 1024
#: Free staging buffers a driver keeps for reuse; more go back to the driver.
STAGING_POOL_MAX = 8

Buffer = TypeVar("Buffer")


def chunks(nbytes: int, chunk: int = STAGING_CHUNK) -> Iterator[tuple[int, int]]:
    """``(offset, size)`` of each piece of an ``nbytes`` copy, in order."""
    if chunk < 1:
        raise ValueError(f"chunks: chunk must be >= 1, got {chunk}")
    for offset in range(0, nbytes, chunk):
        yield offset, min(chunk, nbytes - offset)


class StagingPool(Generic[Buffer]):
    """Pinned buffers of :data:`STAGING_CHUNK` bytes, recycled across copies and streams.

    ``alloc`` makes a buffer and ``free`` returns one to the driver.  At most
    ``keep`` free buffers are kept; after :meth:`close` every buffer given
    back is freed at once.
    """

    def __init__(
        self,
        alloc: Callable[[], Buffer],
        free: Callable[[Buffer], object],
        keep: int = STAGING_POOL_MAX,
    ) -> None:
        self._alloc = alloc
        self._free_buffer = free
        self._keep = keep
        self._buffers: list[Buffer] = []
        self._closed = False
        self._lock = threading.Lock()

    def take(self) -> Buffer:
        """A free buffer, reused if one is kept, else a new one."""
        with self._lock:
            if self._buffers:
                return self._buffers.pop()
        return self._alloc()

    def give(self, buffer: Buffer) -> None:
        """Return a buffer nothing uses any more: kept for reuse or freed."""
        with self._lock:
            if not self._closed and len(self._buffers) < self._keep:
                self._buffers.append(buffer)
                return
        self._free_buffer(buffer)

    def close(self) -> None:
        """Free the kept buffers; later :meth:`give` calls free theirs at once."""
        with self._lock:
            self._closed = True
            buffers, self._buffers = self._buffers, []
        for buffer in buffers:
            self._free_buffer(buffer)

    def __len__(self) -> int:
        return len(self._buffers)
