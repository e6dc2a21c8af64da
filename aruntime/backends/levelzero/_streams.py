"""Streams (immediate command lists) and events (pooled ze events)."""

from __future__ import annotations

from typing import cast

from ..._driver import Driver, DriverEvent, DriverStream
from ..._exceptions import DeviceLostError, DriverError, InvalidArgumentError
from ._base import _LevelZeroBase
from ._constants import (
    _PRIORITY_HIGH,
    _PRIORITY_LOW,
    _PRIORITY_NORMAL,
    _QUEUE_MODE_ASYNC,
    _ST_COMMAND_QUEUE_DESC,
    UINT64_MAX,
)
from ._errors import ZE_RESULT_NOT_READY, ZE_RESULT_SUCCESS
from ._ffi import ffi
from ._handles import _Event, _List, _ZeEvent, _ZeStream


class _StreamOps(_LevelZeroBase):
    def priority_range(self) -> tuple[int, int]:
        # Level Zero has three queue priorities; the core's convention is that
        # a larger number runs first: -1 = low, 0 = normal, 1 = high.
        return (-1, 1)

    def _immediate_list(self, ordinal: int, queues: int, priority: int) -> _List:
        desc = ffi.new("ze_command_queue_desc_t*")
        desc.stype = _ST_COMMAND_QUEUE_DESC
        desc.ordinal = ordinal
        desc.index = self._queue_index(ordinal, queues)
        desc.mode = _QUEUE_MODE_ASYNC
        desc.priority = (
            _PRIORITY_HIGH if priority > 0 else _PRIORITY_LOW if priority < 0 else _PRIORITY_NORMAL
        )
        out = ffi.new("ze_command_list_handle_t*")
        self._check(
            self._lib.zeCommandListCreateImmediate(self._context, self._device, desc, out),
            "zeCommandListCreateImmediate",
        )
        return _List(out[0])

    def _queue_index(self, ordinal: int, queues: int) -> int:
        """The queue of group ``ordinal`` for a new list: the group's queues in turn.

        Per group: with one counter for all, a stream's compute list and copy
        list took alternate numbers, and with two copy queues every stream's
        copy list got the same one.
        """
        with self._lock:
            turn = self._next_queue.get(ordinal, 0)
            self._next_queue[ordinal] = turn + 1
        return turn % queues

    def stream_create(self, priority: int) -> DriverStream:
        compute = self._immediate_list(self._compute_ordinal, self._compute_queues, priority)
        if self._copy_ordinal is None:
            stream = _ZeStream(compute, None, None, None)
        else:
            try:
                copy = self._immediate_list(self._copy_ordinal, self._copy_queues, priority)
            except DriverError:
                self._lib.zeCommandListDestroy(compute.handle)
                raise
            stream = _ZeStream(compute, copy, self._events.acquire(), self._events.acquire())
        with self._lock:
            self._streams.add(stream)
        return cast(DriverStream, stream)

    def stream_destroy(self, stream: DriverStream) -> None:
        """Wait for the stream's work, then destroy its lists (a no-op the second time)."""
        self._destroy_stream(cast(_ZeStream, stream))

    def _destroy_stream(self, s: _ZeStream) -> None:
        with self._lock:
            if s.destroyed:
                return
            s.destroyed = True
            self._streams.discard(s)
        with s.lock:
            if s.capture is not None:
                self._lib.zeCommandListDestroy(s.capture.handle)
                s.capture = None
                self._release_all(s.captured_events)
                s.captured_events = []
            drained = False
            try:
                if s.last is not None:
                    # Level Zero forbids destroying a list the device still uses.
                    marker = self._events.acquire()
                    try:
                        self._barrier(s.last, signal=marker)
                        marker.recorded = True
                        self._check(
                            self._lib.zeEventHostSynchronize(marker.handle, UINT64_MAX),
                            "zeEventHostSynchronize",
                        )
                    except DeviceLostError:
                        pass  # a lost device runs nothing more: the lists are idle
                    finally:
                        self._events.release(marker)
                drained = True
            finally:
                self._release_stager(s, join=drained)
            self._lib.zeCommandListDestroy(s.compute.handle)
            if s.copy is not None:
                self._lib.zeCommandListDestroy(s.copy.handle)
            for event in (s.to_copy, s.to_compute):
                if event is not None:
                    self._events.release(event)

    def event_create(self, timing: bool) -> DriverEvent:
        # No ze event until the first record: a never-recorded event is complete.
        return cast(DriverEvent, _Event(timing))

    def event_destroy(self, event: DriverEvent) -> None:
        e = cast(_Event, event)
        with e.lock:
            current, e.current = e.current, None
        if current is not None:
            self._pool(e.timing).release(current)

    def event_record(self, event: DriverEvent, stream: DriverStream) -> None:
        # Plain annotations, not cast(): this runs behind every op, and a call costs.
        e: _Event = event  # type: ignore[assignment]
        s: _ZeStream = stream  # type: ignore[assignment]
        if s.capture is None and self._record_again(e, s):
            return
        pool = self._pool(e.timing)
        fresh = pool.acquire()
        try:
            with s.lock:
                target = self._tail(s)
                if target is s.capture:
                    # Each replay resets then signals it, like a CUDA event-record node.
                    self._check(
                        self._lib.zeCommandListAppendEventReset(target.handle, fresh.handle),
                        "zeCommandListAppendEventReset",
                    )
                    pool.hold(fresh)
                    fresh.replayed = True
                    s.captured_events.append(fresh)
                self._barrier(target, signal=fresh)
                fresh.recorded = True
                fresh.stream = s
                fresh.position = s.records
                s.records += 1
        except BaseException:
            pool.release(fresh)
            raise
        with e.lock:
            previous, e.current = e.current, fresh
        if previous is not None:
            # Waits already queued on it hold it; the pool reuses it after them.
            pool.release(previous)

    def _record_again(self, e: _Event, s: _ZeStream) -> bool:
        """Record ``e`` into the ze event of its last record, if nothing else can see that one.

        The common case of every op's marker: its last record has been
        signalled and only ``e`` holds it (a host wait or a queued device wait
        holds it too, and takes ``e.lock`` to get its hold), so it is reset and
        signalled again in place, without the pool's lock twice.  False: the
        caller records into a fresh event from the pool.
        """
        calls = self._calls
        with s.lock:
            if s.capture is not None:
                return False
            with e.lock:
                z = e.current
                if z is None or z.holds != 1 or z.fired:
                    return False
                if not z.signalled and self._query_status(z) != ZE_RESULT_SUCCESS:
                    return False  # not signalled yet (or an error, for the pool's path)
                z.signalled = False
                if calls is not None:
                    rc = calls.host_reset(z.address, calls.table)
                else:
                    rc = self._lib.zeEventHostReset(z.handle)
                if rc != ZE_RESULT_SUCCESS:
                    self._check(rc, "zeEventHostReset")
                z.recorded = False
                target = s.last or self._tail(s)
                try:
                    # _barrier's work, inline: this runs behind every op.
                    if calls is not None:
                        rc = calls.barrier(target.address, z.address, calls.table)
                    else:
                        rc = self._lib.zeCommandListAppendBarrier(
                            target.handle, z.handle, 0, ffi.NULL
                        )
                    if rc != ZE_RESULT_SUCCESS:
                        self._check(rc, "zeCommandListAppendBarrier")
                except BaseException:
                    # Nothing will signal it now: e reads as its last record
                    # did (complete), and the pool frees the unrecorded event.
                    e.current = None
                    self._pool(e.timing).release(z)
                    raise
                target.unordered = False
                z.recorded = True
                z.stream = s
                z.position = s.records
                s.records += 1
        return True

    def event_query(self, event: DriverEvent) -> bool:
        e: _Event = event  # type: ignore[assignment]
        with e.lock:  # the event's hold keeps its current ze event from being reused
            current = e.current
            if current is None or current.signalled:
                return True
            calls = self._calls
            if calls is not None:
                rc = calls.query(current.address, calls.table)
            else:
                rc = self._lib.zeEventQueryStatus(current.handle)
            if rc == ZE_RESULT_SUCCESS:
                current.signalled = not current.replayed
                return True
        if rc == ZE_RESULT_NOT_READY:
            return False
        self._check(rc, "zeEventQueryStatus")
        return True

    def event_wait(self, event: DriverEvent) -> None:
        e: _Event = event  # type: ignore[assignment]
        with e.lock:  # as in event_query: the event's hold keeps its ze event ours
            current = e.current
            if current is None:
                return
            if current.signalled:
                rc = ZE_RESULT_SUCCESS
            else:
                rc = self._query_status(current)
                if rc == ZE_RESULT_SUCCESS:
                    current.signalled = not current.replayed
            # Read under the lock: once it is let go, a new record may hand
            # this ze event back to the pool, which resets them for reuse.
            stream, position = current.stream, current.position
        if rc != ZE_RESULT_NOT_READY:
            # Passed already, as for nearly every wait the core makes (its
            # waiters ask first): no hold to take for a wait that cannot block.
            if rc != ZE_RESULT_SUCCESS:
                self._check(rc, "zeEventQueryStatus")
            if stream is not None and stream.failures:
                self._raise_replay_failure(stream, position)
            return
        current = self._held_current(e)
        if current is None:
            return
        try:
            self._wait_recorded(current)
        finally:
            self._pool(e.timing).release(current)

    def _query_status(self, z: _ZeEvent) -> int:
        """``zeEventQueryStatus`` of ``z``, through the compiled call where there is one."""
        calls = self._calls
        if calls is not None:
            return calls.query(z.address, calls.table)
        return int(self._lib.zeEventQueryStatus(z.handle))

    def _wait_recorded(self, z: _ZeEvent) -> None:
        self._check(
            self._lib.zeEventHostSynchronize(z.handle, UINT64_MAX), "zeEventHostSynchronize"
        )
        self._raise_replay_failure(z.stream, z.position)

    def _raise_replay_failure(self, s: _ZeStream | None, position: int) -> None:
        """Raise the error of a graph replay that failed on ``s`` before the record at
        ``position``, if any."""
        if s is not None and s.failures:
            # A graph replay that failed before this record: its error belongs
            # to the first event recorded after it (the replay's own Completion).
            with s.lock:
                due = [f for f in s.failures if f[0] <= position]
                s.failures = [f for f in s.failures if f[0] > position]
            if due:
                raise due[0][1]

    def event_elapsed_ms(self, start: DriverEvent, end: DriverEvent) -> float:
        a, b = cast(_Event, start), cast(_Event, end)
        if not (a.timing and b.timing):
            raise InvalidArgumentError("elapsed_ms: both events must be created with timing=True")
        held: list[_ZeEvent] = []
        try:
            for e in (a, b):
                current = self._held_current(e)
                if current is None:
                    raise InvalidArgumentError("elapsed_ms: both events must have been recorded")
                held.append(current)
            stamps = []
            for z in held:
                result = ffi.new("ze_kernel_timestamp_result_t*")
                self._check(
                    self._lib.zeEventQueryKernelTimestamp(z.handle, result),
                    "zeEventQueryKernelTimestamp",
                )
                # "global" is a Python keyword, hence getattr.
                stamps.append(int(getattr(result, "global").kernelEnd))
        finally:
            for z in held:
                self._timed_events.release(z)
        ticks = (stamps[1] - stamps[0]) & self._ts_mask
        if ticks > self._ts_mask // 2:  # end before start: a negative interval
            ticks -= self._ts_mask + 1
        return ticks * self._timer_ns / 1e6

    def peer_wait_event(self, stream: DriverStream, event: DriverEvent, other: Driver) -> None:
        """Wait for another device's event: one context, so our lists can wait for its events."""
        peer = cast(_StreamOps, other)
        e = cast(_Event, event)
        waited = peer._held_current(e)  # held in the peer's pool, which owns it
        if waited is None:
            return
        theirs = peer._pool(e.timing)
        s = cast(_ZeStream, stream)
        if self._lib.zeEventQueryStatus(waited.handle) == ZE_RESULT_SUCCESS:
            theirs.release(waited)
            return
        try:
            passed = self._events.acquire()
        except BaseException:
            theirs.release(waited)
            raise
        try:
            with s.lock:
                self._barrier(self._tail(s), signal=passed, wait=[waited])
                passed.recorded = True
        except BaseException:
            self._events.release(passed)
            theirs.release(waited)
            raise
        self._events.guard_foreign(passed, waited, theirs.release)

    def stream_wait_event(self, stream: DriverStream, event: DriverEvent) -> None:
        e = cast(_Event, event)
        waited = self._held_current(e)  # the record current now, not at the barrier
        if waited is None:
            return
        pool = self._pool(e.timing)
        s = cast(_ZeStream, stream)
        if s.capture is None and self._lib.zeEventQueryStatus(waited.handle) == ZE_RESULT_SUCCESS:
            pool.release(waited)  # already signalled: nothing to wait for
            return
        try:
            passed = pool.acquire()  # same pool: its sweep drops both holds
        except BaseException:
            pool.release(waited)
            raise
        try:
            with s.lock:
                target = self._tail(s)
                if target is s.capture:
                    self._barrier(target, wait=[waited])
                    s.captured_events.append(waited)
                    pool.release(passed)
                    return
                self._barrier(target, signal=passed, wait=[waited])
                passed.recorded = True
        except BaseException:
            pool.release(passed)
            pool.release(waited)
            raise
        pool.guard(passed, waited)
