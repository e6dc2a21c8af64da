"""Streams (own and adopted) and events."""

from __future__ import annotations

from typing import cast

from ..._driver import DriverEvent, DriverStream
from ._base import _CudaBase, _current
from ._constants import (
    _CU_EVENT_BLOCKING_SYNC,
    _CU_EVENT_DISABLE_TIMING,
    _CU_STREAM_NON_BLOCKING,
    _NOT_READY,
)
from ._handles import _Resources, _Stream


class _StreamOps(_CudaBase):
    # -- streams and events ----------------------------------------------------
    def priority_range(self) -> tuple[int, int]:
        """``(lowest, highest)`` priorities as users pass them: larger is more urgent.

        CUDA numbers priorities the other way (``cuCtxGetStreamPriorityRange``
        gives ``least`` = 0 and ``greatest`` < 0, lower is more urgent), so a
        user priority ``p`` is CUDA priority ``-p``: 0 stays the default, and
        the range is ``(-least, -greatest)``, ``(0, 5)`` on current GPUs.
        """
        if self._priority_range is None:
            self._enter("cuCtxGetStreamPriorityRange")
            least = self._ffi.new("int *")
            greatest = self._ffi.new("int *")
            code = self._lib.cuCtxGetStreamPriorityRange(least, greatest)
            self._check(code, "cuCtxGetStreamPriorityRange")
            self._priority_range = (-int(least[0]), -int(greatest[0]))
        return self._priority_range

    def stream_create(self, priority: int) -> DriverStream:
        self._enter("cuStreamCreateWithPriority")
        out = self._ffi.new("CUstream *")
        # Non-blocking: our streams never serialise with the legacy NULL stream,
        # which other libraries in the process may be using.
        code = self._lib.cuStreamCreateWithPriority(out, _CU_STREAM_NON_BLOCKING, -priority)
        self._check(code, "cuStreamCreateWithPriority")
        stream = _Stream(out[0], int(self._ffi.cast("uintptr_t", out[0])))
        with self._state_lock:
            self._streams.add(stream)
        return DriverStream(stream)

    def stream_destroy(self, stream: DriverStream) -> None:
        s: _Stream = stream  # type: ignore[assignment]  # not cast(): a call per op
        if not self._enter_release():
            return
        with self._state_lock:
            if s not in self._streams:
                return  # destroyed already: a CUstream handle may have been reused since
            self._streams.discard(s)
        # Staging memory the stream's queued work still uses is freed only
        # after that work: fence it with an event (CUDA runs queued work of a
        # destroyed stream to completion).
        for graph in list(s.graphs):
            event = self._fence(s)
            if event is not None:
                graph.pending_events.append(event)
            graph.streams.discard(s)
        s.graphs.clear()
        if s.staging is not None:
            resources = _Resources()
            resources.staging.append(s.staging)
            s.staging = None
            event = self._fence(s)
            self._retire([] if event is None else [event], resources)
        if not s.foreign:
            self._check(self._lib.cuStreamDestroy_v2(s.handle), "cuStreamDestroy_v2")
        self._reap()

    # -- interop -------------------------------------------------------------------
    def stream_handle_int(self, stream: DriverStream) -> int:
        return cast(_Stream, stream).address

    def stream_adopt(self, handle: int) -> DriverStream:
        """Wrap another library's ``CUstream`` (checked with ``cuStreamQuery``).

        It must belong to this device's primary context (CuPy, PyTorch and
        cuda.core use that one).  ``stream_destroy`` forgets it without
        destroying it: its owner does that.
        """
        self._enter("cuStreamQuery")
        raw = self._ffi.cast("CUstream", handle)
        code = self._lib.cuStreamQuery(raw)
        if code not in (0, _NOT_READY):
            raise self._fail(code, "cuStreamQuery")
        stream = _Stream(raw, int(self._ffi.cast("uintptr_t", raw)), foreign=True)
        with self._state_lock:
            self._streams.add(stream)
        return DriverStream(stream)

    def dlpack_device(self) -> tuple[int, int]:
        return (2, self._ordinal)  # kDLCUDA

    def event_create(self, timing: bool) -> DriverEvent:
        self._enter("cuEventCreate")
        flags = (
            _CU_EVENT_BLOCKING_SYNC
            if timing
            else (_CU_EVENT_BLOCKING_SYNC | _CU_EVENT_DISABLE_TIMING)
        )
        out = self._ffi.new("CUevent *")
        self._check(self._lib.cuEventCreate(out, flags), "cuEventCreate")
        return DriverEvent(out[0])

    def event_destroy(self, event: DriverEvent) -> None:
        if not self._enter_release():
            return
        self._check(self._lib.cuEventDestroy_v2(event), "cuEventDestroy_v2")

    # The three calls below are the completion hot path.  Per the CUDA
    # programming guide, recording, querying and synchronising an event
    # succeed whatever context is current, so they skip the current-context
    # check (a waiter thread never needs one) and check only for a lost device.
    def event_record(self, event: DriverEvent, stream: DriverStream) -> None:
        dead = self._dead
        if dead is not None:
            self._raise_dead("cuEventRecord", dead)
        code = self._cuEventRecord(event, stream.handle)  # type: ignore[attr-defined]
        if code != 0:
            raise self._fail(code, "cuEventRecord")

    def stream_finished(self, stream: DriverStream) -> bool:
        """``cuStreamQuery``; once it says done, ``cuStreamSynchronize`` too.

        The synchronize returns at once on a stream that is done, and it is
        what reports an error of the work on it and flushes kernels'
        ``printf`` output, as ``event_wait`` does behind a marker.
        """
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuStreamQuery")
        handle = stream.handle  # type: ignore[attr-defined]
        code = self._cuStreamQuery(handle)
        if code == _NOT_READY:
            return False
        if code != 0:
            raise self._fail(code, "cuStreamQuery")
        code = self._cuStreamSynchronize(handle)
        if code != 0:
            raise self._fail(code, "cuStreamSynchronize")
        return True

    def event_query(self, event: DriverEvent) -> bool:
        dead = self._dead
        if dead is not None:
            self._raise_dead("cuEventQuery", dead)
        code = self._cuEventQuery(event)
        if code == 0:
            return True
        if code == _NOT_READY:
            return False
        raise self._fail(code, "cuEventQuery")

    def event_wait(self, event: DriverEvent) -> None:
        """Block in ``cuEventSynchronize``; with BLOCKING_SYNC events the thread sleeps."""
        dead = self._dead
        if dead is not None:
            self._raise_dead("cuEventSynchronize", dead)
        code = self._cuEventSynchronize(event)
        if code != 0:
            raise self._fail(code, "cuEventSynchronize")

    def event_elapsed_ms(self, start: DriverEvent, end: DriverEvent) -> float:
        self._enter("cuEventElapsedTime")
        out = self._ffi.new("float *")
        self._check(self._cuEventElapsedTime(out, start, end), "cuEventElapsedTime")
        return float(out[0])

    def stream_wait_event(self, stream: DriverStream, event: DriverEvent) -> None:
        self._enter("cuStreamWaitEvent")
        code = self._lib.cuStreamWaitEvent(cast(_Stream, stream).handle, event, 0)
        self._check(code, "cuStreamWaitEvent")
