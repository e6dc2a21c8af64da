"""Allocation: device, managed, arena and pinned host memory over the ledger.

Every allocation goes into the backend's :class:`aruntime._ledger.Ledger`
with the user's ``file:line``, so ops can check pointers before they reach
a driver and leaks can be reported by site.  With ``ARUNTIME_REDZONE=1``
each device allocation gets guard bands, written here and scanned on demand.

A free never pulls memory from under the device: the pointer is invalid at
once, and the driver's free runs after the work queued so far
(:meth:`aruntime._state.BackendState.after_queued_work`).

Stream-ordered memory (``alloc_async``/``free_async``) belongs here too: its
allocations are ledger entries like the others (:attr:`AllocKind.ASYNC`), made and
released in a stream's order rather than after all queued work: by the
driver's own pool where it has one (CUDA), else by the core's
:class:`aruntime._stream_pool.StreamPool`.  Neither call waits for the device.
Inside a capture, on a driver with its own pool (CUDA), the pair becomes the
graph's memory nodes: the address is fixed at capture, and each launch
allocates it until the captured ``free_async`` (or one after the launch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ._callsite import caller_site
from ._driver import Driver
from ._exceptions import CaptureError, InvalidArgumentError, OutOfMemoryError
from ._handles import Stream
from ._hazards import Space
from ._ledger import AllocKind, Entry, new_alloc_id, park
from ._memory import DevicePtr, HostBuffer, _HostRecord
from ._objects import Objects
from ._op import Op, OpKind
from ._protocols import Owner
from ._state import BackendState
from ._stream_pool import StreamPool
from ._validate import check_allocation, check_byte_value, check_count

__all__ = ["Allocator"]


class Allocator:
    """The memory part of a backend."""

    def __init__(self, state: BackendState, owner: Owner, objects: Objects) -> None:
        self._state = state
        self._owner = owner
        self._driver = state.driver
        self._ledger = state.ledger
        self._objects = objects
        # The core's stream-ordered pool, where the driver has none.  A
        # resource made before any allocation: released after all of them.
        self._pool: StreamPool | None = None
        # alloc_async memory made inside a capture: the driver's graph memory,
        # which the graph allocates at each launch; freed by free_async in the
        # capture (a free node) or after a launch, never by the ledger.
        self._graph_memory: set[int] = set()
        if not self._driver.stream_ordered_alloc:
            self._pool = StreamPool(self._driver, state.info.total_memory // 4)
            state.resources.add(self._pool)

    def _add(
        self,
        alloc_id: int,
        kind: AllocKind,
        address: int,
        n: int,
        raw: int,
        rz: int,
        handle: DevicePtr | HostBuffer,
        free_memory: Callable[[], None] | None,
        mapped_from: int = 0,
    ) -> Entry:
        """A ledger entry made whole (what frees it, its registry), now in the ledger."""
        entry = Entry(
            alloc_id,
            kind,
            address,
            n,
            caller_site(),
            raw,
            rz,
            handle,
            mapped_from,
            free_memory=free_memory,
            resources=self._state.resources,
        )
        self._ledger.add(entry)
        return entry

    def _device_free(self, kind: AllocKind, raw: int) -> Callable[[], None]:
        """What frees device memory of ``kind`` at ``raw`` (the caller picks when)."""
        if kind is AllocKind.ASYNC and self._pool is not None:
            return functools.partial(self._pool.discard, raw)
        # Driver pool memory included: cuMemFree takes it, once nothing uses it.
        return functools.partial(self._driver.mem_free, raw)

    # -- device memory -------------------------------------------------------------------
    def alloc(
        self, fn: str, nbytes: int, kind: AllocKind, allocate: Callable[[int], int]
    ) -> DevicePtr:
        self._state.check_open(fn)
        n = check_count(nbytes, fn, "nbytes", minimum=1)
        if kind is not AllocKind.MANAGED:  # managed memory may oversubscribe on CUDA
            check_allocation(n, fn, self._state.limits)
        rz = self._state.redzone
        try:
            raw = allocate(n + 2 * rz)
        except OutOfMemoryError:
            # Idle stream-ordered memory is a cache: give it back and try once more.
            if self._pool is None or not self._pool.trim():
                raise
            raw = allocate(n + 2 * rz)
        address = raw + rz
        alloc_id = new_alloc_id()
        ptr = DevicePtr(self._owner, address, n, alloc_id)
        entry = self._add(alloc_id, kind, address, n, raw, rz, ptr, self._device_free(kind, raw))
        if rz:
            try:
                self.write_guards(entry)
            except BaseException:
                # The caller never gets the pointer: take it back out.
                self._forget(entry)
                self._state.after_queued_work(functools.partial(self._driver.mem_free, raw))
                raise
        return ptr

    def _forget(self, entry: Entry) -> bool:
        """Out of the ledger and the registry; True for the one caller that frees it.

        From here ``Stream.submit`` refuses an op that uses the entry (it
        checks ``freed`` under the stream's lock): with
        ``BackendState.wait_out_submits`` after it, a free is linearized
        against other threads' enqueues.
        """
        entry.freed = True
        self._ledger.remove(entry.alloc_id)
        return entry.detach()

    def free(self, fn: str, ptr: DevicePtr, kinds: tuple[AllocKind, ...]) -> None:
        self._state.check_open(fn)
        entry = self._freeable(fn, ptr, kinds)
        if self._forget(entry):
            self._release(entry, Space.DEVICE)

    def _release(self, entry: Entry, space: Space) -> None:
        """Hand a forgotten entry's memory back once nothing can use it any more.

        The submits under way first: one that checked the memory before
        :meth:`_forget` is on its stream once they are waited out (a later
        one is refused there), and the release waits for it, queued after it.
        """
        release = entry.free_memory
        if release is None:
            return
        self._state.wait_out_submits()
        if self._state.hazards is not None:  # released behind all queued work: nothing races
            self._state.hazards.forget(space, entry.address, entry.nbytes)
        if not park(entry, release):  # a live graph uses it: released at its destroy
            self._state.after_queued_work(release)

    def _freeable(self, fn: str, ptr: DevicePtr, kinds: tuple[AllocKind, ...]) -> Entry:
        entry = self._ledger.check_ptr(ptr, fn)
        if entry.kind not in kinds:
            raise InvalidArgumentError(
                f"{fn}: {ptr!r} is {entry.kind.value} memory; free it with {entry.kind.free_call}"
            )
        if ptr.address != entry.address:
            raise InvalidArgumentError(
                f"{fn}: {ptr!r} is a view at offset {ptr.address - entry.address} into an "
                "allocation; free the pointer the allocation returned"
            )
        return entry

    # -- stream-ordered device memory --------------------------------------------------------
    def alloc_async(self, nbytes: int, stream: object) -> DevicePtr:
        fn = "alloc_async"
        self._state.check_open(fn)
        n = check_count(nbytes, fn, "nbytes", minimum=1)
        check_allocation(n, fn, self._state.limits)
        st = self._objects.resolve(stream, fn)
        state = st.state
        with state.lock:
            in_graph = state.capturing
            if self._pool is None:
                # Capturing, the driver records a graph memory alloc node.
                address = self._driver.mem_alloc_async(n, st.handle)
            else:
                _refuse_capture(fn, st)
                address = self._pool.alloc(n, st)
        alloc_id = new_alloc_id()
        ptr = DevicePtr(self._owner, address, n, alloc_id)
        kind = AllocKind.ASYNC
        free = None if in_graph else self._device_free(kind, address)
        self._add(alloc_id, kind, address, n, address, 0, ptr, free)
        if in_graph:
            self._graph_memory.add(alloc_id)
        return ptr

    def free_async(self, ptr: DevicePtr, stream: object) -> None:
        fn = "free_async"
        self._state.check_open(fn)
        st = self._objects.resolve(stream, fn)
        entry = self._freeable(fn, ptr, (AllocKind.ASYNC,))
        state = st.state
        with state.lock:
            if entry.alloc_id in self._graph_memory:
                self._free_graph_memory(entry, st)
                return
            _refuse_capture(fn, st)
            # An op like the others, though nobody awaits it: it ends every use of the range.
            writes = ((entry.address, entry.nbytes),)
            if self._state.hazards is not None:  # a race raises before anything is freed
                self._state.hazards.free_async(writes, st)
            if not self._forget(entry) or entry.free_memory is None:
                return
            if park(entry, entry.free_memory):
                return  # a live graph uses it: released at its destroy
            raw = entry.raw_address
            free = (
                self._driver.mem_free_async
                if self._pool is None
                else functools.partial(_pool_free, self._pool, st)
            )
            op = Op(OpKind.FREE_ASYNC, free, (raw,), writes=writes)
            op.call(*op.args, st.handle)

    def _free_graph_memory(self, entry: Entry, st: Stream) -> None:
        """free_async of graph memory: in a capture a free node, else the launch's allocation."""
        if not self._forget(entry):
            return
        self._graph_memory.discard(entry.alloc_id)
        writes = ((entry.address, entry.nbytes),)
        op = Op(OpKind.FREE_ASYNC, self._driver.mem_free_async, (entry.raw_address,), writes=writes)
        op.call(*op.args, st.handle)

    # -- pinned host memory --------------------------------------------------------------
    def alloc_host_pinned(self, nbytes: int) -> HostBuffer:
        fn = "alloc_host_pinned"
        self._state.check_open(fn)
        n = check_count(nbytes, fn, "nbytes", minimum=1)
        address, view = self._driver.host_alloc(n)
        alloc_id = new_alloc_id()
        buf = np.frombuffer(view, dtype=np.uint8, count=n).view(HostBuffer)
        record = _HostRecord(self._owner, address, n, alloc_id, buf.base)
        record.no_views_yet()
        buf._record = record
        free = functools.partial(_free_host, self._driver, record)
        record.entry = self._add(alloc_id, AllocKind.HOST, address, n, address, 0, buf, free)
        return buf

    def _host_record(self, buf: object, fn: str) -> _HostRecord:
        if not isinstance(buf, HostBuffer):
            raise TypeError(f"{fn}: expected a HostBuffer, got {type(buf).__name__}")
        record = buf._record
        if record is None or record.backend is not self._owner:
            raise InvalidArgumentError(
                f"{fn}: this HostBuffer was not allocated by {self._owner!r}"
            )
        return record

    def free_host_pinned(self, buf: HostBuffer) -> None:
        fn = "free_host_pinned"
        self._state.check_open(fn)
        record = self._host_record(buf, fn)
        if record.freed:
            raise InvalidArgumentError(f"{fn}: this HostBuffer was already freed")
        if buf.address != record.address or buf.nbytes != record.nbytes:
            raise InvalidArgumentError(f"{fn}: pass the HostBuffer itself, not a view of it")
        views = record.live_views(buf)
        if views:
            raise InvalidArgumentError(
                f"{fn}: {views} numpy view(s) of this HostBuffer are still alive (slices, "
                ".view(), .reshape(), np.asarray(); a Completion of a copy into one, and "
                "queued work that uses one, hold it too); drop them, and await that work, "
                "first: a view read after the free would read freed memory"
            )
        record.freed = True
        for mapped in self._ledger.mapped_views_of(record.alloc_id):
            self._forget(mapped)
        entry = record.entry  # kept on the record, freed: a copy naming it is refused
        if entry is not None and self._forget(entry):
            self._release(entry, Space.HOST)

    def host_ptr_to_device(self, buf: HostBuffer) -> DevicePtr:
        fn = "host_ptr_to_device"
        self._state.check_open(fn)
        record = self._host_record(buf, fn)
        if record.freed:
            raise InvalidArgumentError(f"{fn}: this HostBuffer was freed")
        if not buf.flags.c_contiguous:
            raise InvalidArgumentError(f"{fn}: the HostBuffer view is not C-contiguous")
        offset = buf.address - record.address
        with self._state.lock:
            # One mapping per host allocation, however often it is asked for:
            # a new ledger entry per call would grow without bound in a loop.
            mapped = self._ledger.mapped_views_of(record.alloc_id)
            if mapped:
                ptr = mapped[0].handle
                assert isinstance(ptr, DevicePtr)
            else:
                base = self._driver.host_device_address(record.address)
                alloc_id = new_alloc_id()
                ptr = DevicePtr(self._owner, base, record.nbytes, alloc_id)
                kind = AllocKind.MAPPED
                entry = self._add(
                    alloc_id, kind, base, record.nbytes, base, 0, ptr, None, record.alloc_id
                )
                entry.backing = record.entry
        return ptr.offset(offset)[: buf.nbytes]

    # -- the ledger's bulk operations ------------------------------------------------------
    def sweep_unreleased(self) -> int:
        fn = "sweep_unreleased"
        self._state.check_open(fn)
        count = 0
        for entry in self._ledger.entries():
            if self._ledger.get(entry.alloc_id) is None or not entry.kind.owns_memory:
                continue  # a host buffer's mapping goes with it
            if entry.kind is AllocKind.HOST:
                assert isinstance(entry.handle, HostBuffer)
                self.free_host_pinned(entry.handle)
            else:
                assert isinstance(entry.handle, DevicePtr)
                self.free(fn, entry.handle, (entry.kind,))
            count += 1
        return count

    def stream_pool_statistics(self) -> tuple[int, int] | None:
        """The core pool's ``(reserved, idle)`` bytes; None where the driver pools itself."""
        return None if self._pool is None else self._pool.statistics()

    # -- redzones ----------------------------------------------------------------------------
    def scan_redzones(self) -> int:
        self._state.check_open("scan_redzones")
        ledger = self._ledger
        bad = 0
        for entry in ledger.entries():
            rz = entry.redzone
            if not rz:
                continue
            for address, pattern in (
                (entry.raw_address, ledger.low_pattern),
                (entry.address + entry.nbytes, ledger.high_pattern),
            ):
                band = bytearray(rz)
                view = memoryview(band)
                memcpy = self._driver.memcpy_d2h
                self._blocking(Op(OpKind.SCAN_REDZONES, memcpy, (address, view), (), (), rz))
                if band.count(pattern) != rz:
                    bad += 1
        return bad

    def poison_redzones(self, lo: int, hi: int) -> int:
        fn = "poison_redzones"
        self._state.check_open(fn)
        low = check_byte_value(lo, fn)
        high = check_byte_value(hi, fn)
        self._ledger.low_pattern, self._ledger.high_pattern = low, high
        count = 0
        for entry in self._ledger.entries():
            if entry.redzone:
                self.write_guards(entry)
                count += 1
        return count

    def write_guards(self, entry: Entry) -> None:
        rz = entry.redzone
        memset = self._driver.memset_d8
        ledger = self._ledger
        for address, pattern in (
            (entry.raw_address, ledger.low_pattern),
            (entry.address + entry.nbytes, ledger.high_pattern),
        ):
            self._blocking(Op(OpKind.REDZONE, memset, (address, pattern, rz), (), (), rz))

    def _blocking(self, op: Op) -> None:
        """One of the core's own ops, on the default stream, waited for."""
        self._objects.resolve(None, op.kind.public).submit(op).wait()


def _pool_free(pool: StreamPool, stream: Stream, raw: int, handle: object) -> None:
    """free_async through the core's pool (the stream's lock is held)."""
    del handle
    pool.free(raw, stream, stream.state.last_pending())


def _free_host(driver: Driver, record: _HostRecord) -> None:
    """Free pinned host memory (once nothing queued uses it)."""
    record.freed = True
    driver.host_free(record.address)


def _refuse_capture(fn: str, stream: Stream) -> None:
    if stream.state.capturing:
        raise CaptureError(
            f"{fn}: {stream!r} is capturing, and this backend's stream-ordered memory is "
            "not recorded into graphs (only CUDA's graph memory nodes are); allocate "
            "before begin_capture"
        )
