"""Stream-ordered allocation where the driver has none (Level Zero, the mock).

CUDA's memory pools give ``alloc_async``/``free_async`` their meaning: memory
usable at once in a stream's order, and a free that takes effect after the
stream's earlier work, without either call waiting.  :class:`StreamPool`
gives the same over a driver's plain ``mem_alloc``/``mem_free``:

* a freed block is reusable at once by later ``alloc_async`` calls on the
  stream that freed it, since that stream runs them after the work that used
  the block;
* by every other stream once that stream's work queued before the free has
  finished (the Completion of its last pending op);
* a block serves any request that fits it with at most ``max(request,
  REUSE_SLACK)`` bytes to spare, the smallest such block first (best fit), so
  that a server whose request sizes vary reuses memory instead of
  allocating; blocks are not split (each is one driver allocation), and a
  GPU's pool reserves memory in chunks of 2 MiB or more, so the slack holds
  no more than a GPU would.  Under a software driver's sanitizer
  (``ARUNTIME_SIM_SANITIZE`` on a ``-sim`` backend) blocks are reused for
  exactly their own size instead, since the sanitizer's guard page sits
  right after each driver allocation and a larger block would hide an
  overrun;
* idle memory above a quarter of the device goes back to the driver, and
  ``trim()`` returns all of it (the core calls it when a plain allocation
  runs out of memory, and at close).

Neither call waits for the device: a free only subscribes to a Completion.
Memory used by several streams must be ordered before the free on the
freeing stream (``stream_wait_event``), as with CUDA.
"""

from __future__ import annotations

import bisect
import functools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from ._completion import Completion
from ._driver import Driver
from ._exceptions import OutOfMemoryError
from ._resources import run_all

__all__ = ["REUSE_SLACK", "StreamPool", "rounded_size"]

#: Allocation sizes round up to this granule, so nearby sizes share blocks.
GRANULE = 512
#: A request may leave up to ``max(request, REUSE_SLACK)`` bytes of a block unused.
REUSE_SLACK = 1 << 20

_USED = 0
_STREAM_ONLY = 1  # freed; reusable by its freeing stream only, until that stream catches up
_IDLE = 2  # reusable by any stream


def rounded_size(nbytes: int, granule: int = GRANULE) -> int:
    return -(-nbytes // granule) * granule


def _sim_sanitizing(driver: Driver) -> bool:
    """Whether ``driver`` is a software driver running its sanitizer (read as the sims do)."""
    if not driver.backend_name.endswith("-sim"):
        return False
    try:
        return float(os.environ.get("ARUNTIME_SIM_SANITIZE", "0")) != 0
    except ValueError:
        return False


@dataclass(eq=False)
class _Block:
    address: int
    size: int  # the driver allocation's size: what the block can serve
    state: int = _USED
    stream: object = None  # the freeing stream, while _STREAM_ONLY
    generation: int = 0  # bumped by each free, so a stale catch-up is ignored


class _FreeList:
    """Free blocks by size, for best-fit lookups."""

    def __init__(self) -> None:
        self._sizes: list[int] = []  # sorted; each has a non-empty list in _blocks
        self._blocks: dict[int, list[_Block]] = {}
        self.nbytes = 0

    def __bool__(self) -> bool:
        return bool(self._sizes)

    def __iter__(self) -> Iterator[_Block]:
        for blocks in self._blocks.values():
            yield from blocks

    def add(self, block: _Block) -> None:
        blocks = self._blocks.get(block.size)
        if blocks is None:
            bisect.insort(self._sizes, block.size)
            blocks = self._blocks[block.size] = []
        blocks.append(block)
        self.nbytes += block.size

    def remove(self, block: _Block) -> None:
        blocks = self._blocks[block.size]
        blocks.remove(block)
        self.nbytes -= block.size
        if not blocks:
            del self._blocks[block.size]
            del self._sizes[bisect.bisect_left(self._sizes, block.size)]

    def best(self, size: int, limit: int) -> _Block | None:
        """The most recently freed of the smallest blocks in ``[size, limit]``."""
        i = bisect.bisect_left(self._sizes, size)
        if i == len(self._sizes) or self._sizes[i] > limit:
            return None
        return self._blocks[self._sizes[i]][-1]

    def largest(self) -> _Block:
        return self._blocks[self._sizes[-1]][-1]

    def clear(self) -> list[_Block]:
        out = list(self)
        self._sizes.clear()
        self._blocks.clear()
        self.nbytes = 0
        return out


class StreamPool:
    """Blocks of device memory handed out and taken back in streams' order."""

    def __init__(self, driver: Driver, keep_bytes: int) -> None:
        self._driver = driver
        self._keep = keep_bytes
        self._exact = _sim_sanitizing(driver)
        self._granule = 1 if self._exact else GRANULE
        self._lock = threading.Lock()
        self._used: dict[int, _Block] = {}
        self._idle = _FreeList()  # blocks any stream may take
        self._stream_only: dict[int, _FreeList] = {}  # id(stream) -> its freed blocks
        self._reserved = 0  # every block's bytes, used or not

    # -- the two calls -------------------------------------------------------------------
    def alloc(self, nbytes: int, stream: object) -> int:
        """A block of at least ``nbytes`` for ``stream``'s later work."""
        size = rounded_size(nbytes, self._granule)
        limit = size if self._exact else size + max(size, REUSE_SLACK)
        with self._lock:
            own = self._stream_only.get(id(stream))
            mine = own.best(size, limit) if own else None
            anyone = self._idle.best(size, limit)
            if mine is not None and (anyone is None or mine.size <= anyone.size):
                assert own is not None
                own.remove(mine)
                if not own:
                    del self._stream_only[id(stream)]
                block: _Block | None = mine
            elif anyone is not None:
                self._idle.remove(anyone)
                block = anyone
            else:
                block = None
            if block is not None:
                block.state, block.stream = _USED, None
                self._used[block.address] = block
                return block.address
        try:
            address = self._driver.mem_alloc(size)
        except OutOfMemoryError:
            if not self.trim():
                raise
            address = self._driver.mem_alloc(size)
        with self._lock:
            self._used[address] = _Block(address, size)
            self._reserved += size
        return address

    def free(self, address: int, stream: object, earlier_work: Completion | None) -> None:
        """Take ``address`` back once ``stream``'s ``earlier_work`` (None: nothing) is done."""
        with self._lock:
            block = self._used.pop(address)
            block.generation += 1
            generation = block.generation
            if earlier_work is None:
                self._make_idle(block)
                release = self._over_keep()
            else:
                block.state, block.stream = _STREAM_ONLY, stream
                self._stream_only.setdefault(id(stream), _FreeList()).add(block)
                release = []
        self._release(release)
        if earlier_work is None:
            return

        def caught_up() -> None:
            with self._lock:
                if block.state != _STREAM_ONLY or block.generation != generation:
                    return  # its stream took it back meanwhile
                own = self._stream_only[id(stream)]
                own.remove(block)
                if not own:
                    del self._stream_only[id(stream)]
                self._make_idle(block)
                extra = self._over_keep()
            self._release(extra)

        if not earlier_work.subscribe(caught_up):
            caught_up()

    # -- giving memory back ----------------------------------------------------------------
    def trim(self) -> bool:
        """Give every idle block back to the driver; True if there were any."""
        with self._lock:
            blocks = self._idle.clear()
            self._reserved -= sum(b.size for b in blocks)
        self._release(blocks)
        return bool(blocks)

    def discard(self, address: int) -> None:
        """Free a block still handed out (at close, or by ``sweep_unreleased``)."""
        with self._lock:
            block = self._used.pop(address)
            self._reserved -= block.size
        self._driver.mem_free(block.address)

    def release(self) -> None:
        """The backend is closing, every stream drained: free whatever the pool still holds."""
        with self._lock:
            blocks = self._idle.clear()
            for own in self._stream_only.values():
                blocks += own.clear()
            self._stream_only.clear()
            self._reserved = 0
        run_all(functools.partial(self._driver.mem_free, block.address) for block in blocks)

    def statistics(self) -> tuple[int, int]:
        """``(reserved, idle)`` bytes: every block the pool holds, and those not in use."""
        with self._lock:
            return self._reserved, self._idle.nbytes + sum(
                own.nbytes for own in self._stream_only.values()
            )

    # -- internals (with the lock held) ------------------------------------------------
    def _make_idle(self, block: _Block) -> None:
        block.state, block.stream = _IDLE, None
        self._idle.add(block)

    def _over_keep(self) -> list[_Block]:
        """Idle blocks beyond the keep limit, largest first, taken out to be freed."""
        out: list[_Block] = []
        while self._idle and self._idle.nbytes > self._keep:
            block = self._idle.largest()
            self._idle.remove(block)
            self._reserved -= block.size
            out.append(block)
        return out

    def _release(self, blocks: list[_Block]) -> None:
        for block in blocks:
            self._driver.mem_free(block.address)
