"""Staged copies between the device and pageable host memory.

Level Zero copies USM memory; system (pageable) memory is left to the
driver, which copies it on the appending thread.  So a pageable copy larger
than :data:`DIRECT_PAGEABLE_H2D_MAX` goes through two pinned
``zeMemAllocHost`` buffers of the stream, in :data:`STAGING_CHUNK` pieces:

* the enqueueing thread only appends: for each piece a device copy between
  the device memory and a staging buffer, waiting for or signalling a pooled
  event, and at the end a barrier that signals a "tail" event;
* the stream's :class:`HostWorker` thread moves each piece between the
  pageable memory and the staging buffer and signals the piece's host event,
  the whole job in one call into C (``ar_ze_run_steps`` in
  ``libaruntime_ze_helpers.so``), so that it holds no GIL while the device
  and the copies run.

Host-to-device, piece ``i``: the worker waits until the device has read the
buffer's previous piece (``i - 2``), fills it and signals ``staged``; the
device copy waits for ``staged`` and signals ``done``.  Device-to-host: the
device copy waits until the worker has emptied the buffer's previous piece
and signals ``copied``; the worker waits for ``copied``, empties it and
signals ``freed``; the tail barrier waits for the last ``freed``, so later
work on the stream sees the data.  A job is over when the tail event is
signalled; only then does the worker return the job's events to the pool and
start the next job, so jobs never share a buffer.  A failed wait is
reported, as a graph replay's is, by the waiter of the op's own Completion,
and the host events are signalled anyway so that nothing waits forever.

A capturing stream copies pageable memory directly: the worker cannot take
part in a graph's replays.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._native import native_library_path
from .._staging import DIRECT_PAGEABLE_H2D_MAX, chunks
from .._worker import HostWorker
from . import _errors
from ._base import _LevelZeroBase
from ._constants import _MEMORY_TYPE_UNKNOWN, _ST_MEMORY_ALLOCATION_PROPERTIES
from ._errors import ZE_RESULT_SUCCESS
from ._ffi import ffi
from ._handles import _Stager, _ZeEvent, _ZeStream

__all__ = ["HELPERS_FILE", "_StagedCopyOps"]

HELPERS_FILE = "libaruntime_ze_helpers.so"


@dataclass(frozen=True)
class _Step:
    """One piece's host side: wait for ``wait`` (if any), copy, signal ``signal``."""

    src: int
    dst: int
    nbytes: int
    wait: _ZeEvent | None
    signal: _ZeEvent


class _StagedCopyOps(_LevelZeroBase):
    def _staged(self, s: _ZeStream, host: int, nbytes: int) -> bool:
        """Whether a copy of ``nbytes`` at ``host`` goes through staging buffers."""
        if nbytes <= DIRECT_PAGEABLE_H2D_MAX or s.capture is not None:
            return False
        props = ffi.new("ze_memory_allocation_properties_t*")
        props.stype = _ST_MEMORY_ALLOCATION_PROPERTIES
        rc = self._lib.zeMemGetAllocProperties(
            self._context, ffi.cast("void*", host), props, ffi.NULL
        )
        return rc == ZE_RESULT_SUCCESS and int(props.type) == _MEMORY_TYPE_UNKNOWN

    def _stager(self, s: _ZeStream) -> _Stager:
        """The stream's staging worker and buffers, made on first use (caller holds s.lock)."""
        if s.stager is None:
            first = self._staging.take()
            try:
                second = self._staging.take()
            except BaseException:
                self._staging.give(first)
                raise
            worker = HostWorker(f"aruntime-{self.backend_name}-staging")
            s.stager = _Stager(worker, (first, second))
        return s.stager

    def _staged_copy(
        self, s: _ZeStream, host: int, device: int, nbytes: int, *, to_device: bool
    ) -> None:
        lib = self._lib
        events: list[_ZeEvent] = []

        def take() -> _ZeEvent:
            event = self._events.acquire()
            event.recorded = True  # it will be signalled: free only once it is
            events.append(event)
            return event

        steps: list[_Step] = []
        queued = 0
        try:
            with s.lock:
                stager = self._stager(s)
                position = s.records
                # Per buffer: the event that ends the device's (to_device) or
                # the worker's (not to_device) latest use of it.
                last: list[_ZeEvent | None] = [None, None]
                for index, (offset, size) in enumerate(chunks(nbytes)):
                    buffer = stager.buffers[index % 2]
                    previous = last[index % 2]
                    first, second = take(), take()
                    if to_device:  # first = staged (by the worker), second = done (device)
                        waits: Sequence[_ZeEvent] = [first]
                        dst, src, signal = device + offset, buffer, second
                        steps.append(_Step(host + offset, buffer, size, previous, first))
                    else:  # first = copied (device), second = freed (by the worker)
                        waits = [previous] if previous is not None else []
                        dst, src, signal = buffer, device + offset, first
                        steps.append(_Step(buffer, host + offset, size, first, second))
                    last[index % 2] = second
                    self._append_copy(s, dst, src, size, signal, waits)
                    queued += 1
                tail = take()
                final = [steps[-1].signal] if not to_device else []
                self._barrier(self._tail(s), signal=tail, wait=final)
        except BaseException:
            if not queued:
                for event in events:
                    self._events.release(event)
                raise
            # Nothing reaches the worker: signal its events so that the copies
            # already queued do not wait forever.  They may still signal the
            # others, so none goes back to the pool.
            for event in events:
                lib.zeEventHostSignal(event.handle)
            raise
        stager.worker.submit(lambda: self._run_steps(s, steps, tail, events, position))

    def _append_copy(
        self,
        s: _ZeStream,
        dst: int,
        src: int,
        nbytes: int,
        signal: _ZeEvent,
        waits: Sequence[_ZeEvent],
    ) -> None:
        wait_list = ffi.new("ze_event_handle_t[]", [e.handle for e in waits]) if waits else ffi.NULL
        self._append_locked(
            s,
            True,
            lambda h: self._lib.zeCommandListAppendMemoryCopy(
                h,
                ffi.cast("void*", dst),
                ffi.cast("void*", src),
                nbytes,
                signal.handle,
                len(waits),
                wait_list,
            ),
            "zeCommandListAppendMemoryCopy",
        )

    def _run_steps(
        self,
        s: _ZeStream,
        steps: Sequence[_Step],
        tail: _ZeEvent,
        events: Sequence[_ZeEvent],
        position: int,
    ) -> None:
        """The worker's part of one staged copy: one call into C (see the module docstring)."""
        native = ffi.new("ar_ze_step[]", len(steps))
        for index, step in enumerate(steps):
            native[index].dst = ffi.cast("void*", step.dst)
            native[index].src = ffi.cast("void*", step.src)
            native[index].nbytes = step.nbytes
            native[index].wait = step.wait.handle if step.wait is not None else ffi.NULL
            native[index].signal = step.signal.handle
        failed_at = ffi.new("uint32_t*")
        sync, signal = self._host_calls()
        rc = _helpers().ar_ze_run_steps(native, len(steps), tail.handle, sync, signal, failed_at)
        if rc != ZE_RESULT_SUCCESS:
            error = _errors.error_for(
                rc,
                "zeEventHostSynchronize",
                self.backend_name,
                f"staging a pageable copy, piece {failed_at[0]} of {len(steps)}",
            )
            with s.lock:
                s.failures.append((position, error))
            return  # the events stay out of the pool: the lost device may still touch them
        for event in events:
            self._events.release(event)

    def _host_calls(self) -> tuple[Any, Any]:
        """Pointers to zeEventHostSynchronize and zeEventHostSignal, for the helper."""
        lib = self._lib
        return (
            ffi.addressof(lib, "zeEventHostSynchronize"),
            ffi.addressof(lib, "zeEventHostSignal"),
        )


@functools.cache
def _helpers() -> Any:
    """``libaruntime_ze_helpers.so`` (built from ``ffi/levelzero/helpers`` on first use)."""
    return ffi.dlopen(str(native_library_path(HELPERS_FILE)))
