"""Allocation: device, managed, arena and pinned host memory over the ledger.

Every allocation goes into the backend's :class:`aruntime._ledger.Ledger`
with the user's ``file:line``, so ops can check pointers before they reach
a driver and leaks can be reported by site.  With ``ARUNTIME_REDZONE=1``
each device allocation gets guard bands, written here and scanned on demand.

A free never pulls memory from under the device: the pointer is invalid at
once, and the driver's free runs after the work queued so far
(:meth:`aruntime._state.BackendState.after_queued_work`).

Stream-ordered memory (``alloc_async``/``free_async``) belongs here too: its
allocations are ledger entries like the others (kind ``"async"``), made and
released in a stream's order rather than after all queued work: by the
driver's own pool where it has one (CUDA), else by the core's
:class:`aruntime._stream_pool.StreamPool`.  Neither call waits for the device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ._callsite import caller_site
from ._exceptions import CaptureError, InvalidArgumentError, OutOfMemoryError
from ._handles import Stream
from ._ledger import Entry, new_alloc_id, park
from ._memory import DevicePtr, HostBuffer, _HostRecord
from ._protocols import Owner
from ._state import BackendState
from ._stream_pool import StreamPool
from ._submit import Submitter
from ._validate import check_byte_value, check_count

__all__ = ["Allocator"]


class Allocator:
    """The memory part of a backend."""

    def __init__(self, state: BackendState, owner: Owner, submitter: Submitter) -> None:
        self._state = state
        self._owner = owner
        self._driver = state.driver
        self._ledger = state.ledger
        self._submitter = submitter
        # The core's stream-ordered pool, where the driver has none.
        self._pool: StreamPool | None = None
        if not self._driver.stream_ordered_alloc:
            self._pool = StreamPool(self._driver, state.info.total_memory // 4)

    # -- device memory -------------------------------------------------------------------
    def alloc(self, fn: str, nbytes: int, kind: str, allocate: Callable[[int], int]) -> DevicePtr:
        self._state.check_open(fn)
        n = check_count(nbytes, fn, "nbytes", minimum=1)
        site = caller_site()
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
        entry = Entry(alloc_id, kind, address, n, site, raw, rz, ptr)
        self._ledger.add(entry)
        if rz:
            try:
                self.write_guards(entry)
            except BaseException:
                # The caller never gets the pointer: take it back out.
                self._ledger.remove(alloc_id)
                self._state.after_queued_work(functools.partial(self._driver.mem_free, raw))
                raise
        return ptr

    def free(self, fn: str, ptr: DevicePtr, kinds: tuple[str, ...]) -> None:
        self._state.check_open(fn)
        entry = self._freeable(fn, ptr, kinds)
        self._ledger.remove(entry.alloc_id)
        release = self._releaser(entry)
        if not park(entry, release):  # a live graph uses it: released at its destroy
            self._state.after_queued_work(release)

    def _freeable(self, fn: str, ptr: DevicePtr, kinds: tuple[str, ...]) -> Entry:
        entry = self._ledger.check_ptr(ptr, fn)
        if entry.kind not in kinds:
            hint = "free_async" if entry.kind == "async" else "the matching call"
            raise InvalidArgumentError(f"{fn}: {ptr!r} is {entry.kind} memory; free it with {hint}")
        if ptr.address != entry.address:
            raise InvalidArgumentError(
                f"{fn}: {ptr!r} is a view at offset {ptr.address - entry.address} into an "
                "allocation; free the pointer the allocation returned"
            )
        return entry

    def _releaser(self, entry: Entry) -> Callable[[], None]:
        """What frees ``entry``'s memory now (the caller picks when)."""
        if entry.kind == "async" and self._pool is not None:
            return functools.partial(self._pool.discard, entry.raw_address)
        # Driver pool memory included: cuMemFree takes it, once nothing uses it.
        return functools.partial(self._driver.mem_free, entry.raw_address)

    # -- stream-ordered device memory --------------------------------------------------------
    def alloc_async(self, nbytes: int, stream: object) -> DevicePtr:
        fn = "alloc_async"
        self._state.check_open(fn)
        n = check_count(nbytes, fn, "nbytes", minimum=1)
        st = self._submitter.resolve(stream, fn)
        site = caller_site()
        state = st.state
        with state.lock:
            _refuse_capture(fn, st)
            if self._pool is None:
                address = self._driver.mem_alloc_async(n, st.handle)
            else:
                address = self._pool.alloc(n, st)
        alloc_id = new_alloc_id()
        ptr = DevicePtr(self._owner, address, n, alloc_id)
        self._ledger.add(Entry(alloc_id, "async", address, n, site, address, 0, ptr))
        return ptr

    def free_async(self, ptr: DevicePtr, stream: object) -> None:
        fn = "free_async"
        self._state.check_open(fn)
        st = self._submitter.resolve(stream, fn)
        entry = self._freeable(fn, ptr, ("async",))
        state = st.state
        with state.lock:
            _refuse_capture(fn, st)
            self._ledger.remove(entry.alloc_id)
            if park(entry, self._releaser(entry)):
                return  # a live graph uses it: released at its destroy
            if self._pool is None:
                self._driver.mem_free_async(entry.raw_address, st.handle)
            else:
                self._pool.free(entry.raw_address, st, state.last_pending())

    # -- pinned host memory --------------------------------------------------------------
    def alloc_host_pinned(self, nbytes: int) -> HostBuffer:
        fn = "alloc_host_pinned"
        self._state.check_open(fn)
        n = check_count(nbytes, fn, "nbytes", minimum=1)
        site = caller_site()
        address, view = self._driver.host_alloc(n)
        alloc_id = new_alloc_id()
        array = np.frombuffer(view, dtype=np.uint8, count=n)
        record = _HostRecord(self._owner, address, n, alloc_id)
        buf = array.view(HostBuffer)
        buf._record = record
        self._ledger.add(Entry(alloc_id, "host", address, n, site, address, 0, buf))
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
        record.freed = True
        for mapped in self._ledger.mapped_views_of(record.alloc_id):
            self._ledger.remove(mapped.alloc_id)
        self._ledger.remove(record.alloc_id)
        self._state.after_queued_work(functools.partial(self._driver.host_free, record.address))

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
                site = caller_site()
                entry = Entry(alloc_id, "mapped", base, record.nbytes, site, base, 0, ptr)
                entry.mapped_from = record.alloc_id
                self._ledger.add(entry)
        return ptr.offset(offset)[: buf.nbytes]

    # -- the ledger's bulk operations ------------------------------------------------------
    def sweep_unreleased(self) -> int:
        fn = "sweep_unreleased"
        self._state.check_open(fn)
        count = 0
        for entry in self._ledger.entries():
            if self._ledger.get(entry.alloc_id) is None:
                continue  # a host buffer's mapped view went with it
            if entry.kind == "host":
                assert isinstance(entry.handle, HostBuffer)
                self.free_host_pinned(entry.handle)
            elif entry.kind == "mapped":
                self._ledger.remove(entry.alloc_id)
                continue
            else:
                assert isinstance(entry.handle, DevicePtr)
                self.free(fn, entry.handle, (entry.kind,))
            count += 1
        return count

    def stream_pool_statistics(self) -> tuple[int, int] | None:
        """The core pool's ``(reserved, idle)`` bytes; None where the driver pools itself."""
        return None if self._pool is None else self._pool.statistics()

    def release_all(self, attempt: Callable[[str, Callable[[], None]], None]) -> list[Entry]:
        """At close: free every live allocation through ``attempt``; returns the entries."""
        entries = self._ledger.entries()
        for entry in entries:
            self._ledger.remove(entry.alloc_id)
            if entry.kind == "host":
                assert isinstance(entry.handle, HostBuffer)
                record = entry.handle._record
                if record is not None:
                    record.freed = True
                attempt("host_free", functools.partial(self._driver.host_free, entry.address))
            elif entry.kind != "mapped":
                attempt("mem_free", self._releaser(entry))
        if self._pool is not None:
            self._pool.close(attempt)
        return entries

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
                self._submitter.blocking(
                    "scan_redzones", self._driver.memcpy_d2h, address, memoryview(band)
                )
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
        blocking = self._submitter.blocking
        blocking("redzone", memset, entry.raw_address, self._ledger.low_pattern, rz)
        blocking("redzone", memset, entry.address + entry.nbytes, self._ledger.high_pattern, rz)


def _refuse_capture(fn: str, stream: Stream) -> None:
    if stream.state.capturing:
        raise CaptureError(
            f"{fn}: {stream!r} is capturing, and stream-ordered allocation is not "
            "recorded into graphs; allocate before begin_capture"
        )
