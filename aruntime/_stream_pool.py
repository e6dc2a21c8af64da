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
* blocks are reused for allocations of the same rounded size; idle memory
  above a quarter of the device goes back to the driver, and ``trim()``
  returns all of it (the core calls it when a plain allocation runs out of
  memory, and at close).

Neither call waits for the device: a free only subscribes to a Completion.
Memory used by several streams must be ordered before the free on the
freeing stream (``stream_wait_event``), as with CUDA.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ._completion import Completion
from ._driver import Driver
from ._exceptions import OutOfMemoryError

__all__ = ["StreamPool", "rounded_size"]

#: Allocation sizes round up to this granule, so nearby sizes share blocks.
GRANULE = 512

_USED = 0
_STREAM_ONLY = 1  # freed; reusable by its freeing stream only, until that stream catches up
_IDLE = 2  # reusable by any stream


def rounded_size(nbytes: int) -> int:
    return -(-nbytes // GRANULE) * GRANULE


@dataclass(eq=False)
class _Block:
    address: int
    size: int
    state: int = _USED
    stream: object = None  # the freeing stream, while _STREAM_ONLY
    generation: int = 0  # bumped by each free, so a stale catch-up is ignored


class StreamPool:
    """Blocks of device memory handed out and taken back in streams' order."""

    def __init__(self, driver: Driver, keep_bytes: int) -> None:
        self._driver = driver
        self._keep = keep_bytes
        self._lock = threading.Lock()
        self._used: dict[int, _Block] = {}
        self._idle: dict[int, list[_Block]] = {}  # size -> blocks any stream may take
        self._stream_only: dict[tuple[int, int], list[_Block]] = {}  # (id(stream), size)
        self._idle_bytes = 0
        self._reserved = 0  # every block's bytes, used or not

    # -- the two calls -------------------------------------------------------------------
    def alloc(self, nbytes: int, stream: object) -> int:
        """A block of at least ``nbytes`` for ``stream``'s later work."""
        size = rounded_size(nbytes)
        with self._lock:
            block = self._take(self._stream_only.get((id(stream), size)))
            if block is None:
                block = self._take(self._idle.get(size))
                if block is not None:
                    self._idle_bytes -= size
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
                self._stream_only.setdefault((id(stream), block.size), []).append(block)
                release = []
        self._release(release)
        if earlier_work is None:
            return

        def caught_up() -> None:
            with self._lock:
                if block.state != _STREAM_ONLY or block.generation != generation:
                    return  # its stream took it back meanwhile
                self._stream_only[(id(stream), block.size)].remove(block)
                self._make_idle(block)
                extra = self._over_keep()
            self._release(extra)

        if not earlier_work.subscribe(caught_up):
            caught_up()

    # -- giving memory back ----------------------------------------------------------------
    def trim(self) -> bool:
        """Give every idle block back to the driver; True if there were any."""
        with self._lock:
            blocks = [b for blocks in self._idle.values() for b in blocks]
            self._idle.clear()
            self._idle_bytes = 0
            self._reserved -= sum(b.size for b in blocks)
        self._release(blocks)
        return bool(blocks)

    def discard(self, address: int) -> None:
        """Free a block still handed out (at close, or by ``sweep_unreleased``)."""
        with self._lock:
            block = self._used.pop(address)
            self._reserved -= block.size
        self._driver.mem_free(block.address)

    def close(self, attempt: Callable[[str, Callable[[], None]], None]) -> None:
        """At close, with every stream drained: free whatever the pool still holds."""
        with self._lock:
            blocks = [b for blocks in self._idle.values() for b in blocks]
            blocks += [b for blocks in self._stream_only.values() for b in blocks]
            self._idle.clear()
            self._stream_only.clear()
            self._idle_bytes = self._reserved = 0
        for block in blocks:
            attempt("mem_free", functools.partial(self._driver.mem_free, block.address))

    def statistics(self) -> tuple[int, int]:
        """``(reserved, idle)`` bytes: every block the pool holds, and those not in use."""
        with self._lock:
            return self._reserved, self._idle_bytes + sum(
                b.size for blocks in self._stream_only.values() for b in blocks
            )

    # -- internals (with the lock held) ------------------------------------------------
    @staticmethod
    def _take(blocks: list[_Block] | None) -> _Block | None:
        return blocks.pop() if blocks else None

    def _make_idle(self, block: _Block) -> None:
        block.state, block.stream = _IDLE, None
        self._idle.setdefault(block.size, []).append(block)
        self._idle_bytes += block.size

    def _over_keep(self) -> list[_Block]:
        """Idle blocks beyond the keep limit, taken out of the pool to be freed."""
        out: list[_Block] = []
        for blocks in self._idle.values():
            while blocks and self._idle_bytes > self._keep:
                block = blocks.pop()
                self._idle_bytes -= block.size
                self._reserved -= block.size
                out.append(block)
        return out

    def _release(self, blocks: list[_Block]) -> None:
        for block in blocks:
            self._driver.mem_free(block.address)
