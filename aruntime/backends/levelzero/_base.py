"""The Level Zero driver's shared state: context, queue groups, event pools, ordering."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..._driver import DeviceInfo, DeviceLimits, Driver, DriverStream
from ..._exceptions import BackendUnavailableError, NotSupportedError
from .._sim_faults import launch_site_hook, readonly_hook
from .._staging import STAGING_CHUNK, StagingPool
from . import _errors
from ._constants import (
    _ALIGNMENT,
    _GROUP_COMPUTE,
    _GROUP_COPY,
    _ST_COMMAND_QUEUE_GROUP_PROPERTIES,
    _ST_HOST_MEM_ALLOC_DESC,
    UINT64_MAX,
)
from ._errors import ZE_RESULT_SUCCESS
from ._event_pool import _EventPool
from ._ffi import BARRIER_FAILED, caster, compiled_calls, ffi
from ._graph_launcher import _GraphLauncher
from ._handles import _Event, _List, _ZeEvent, _ZeStream
from ._library import ZeLibrary
from ._platform import _device_info, _device_limits, _device_properties
from ._shared_context import acquire_context


class _LevelZeroBase(Driver):
    """State shared by the driver's parts, device queries and stream ordering."""

    synchronous = False
    supports_timing = True
    # A failed op's error reaches the stream's next marker, so an op nobody
    # waits for needs no marker of its own.  A real device's fault is
    # sticky (the device is lost).  levelzero-sim hands a failed op's error
    # to the next event its queue signals, which may be the event through
    # which a stream moves between its compute and copy lists; the list that
    # waits for that event then takes the error on as its own, and its next
    # signal reports it (ffi/sim/engine_exec.c, OP_EVENT_WAIT_SIGNALED).
    errors_reach_next_marker = True

    def __init__(self, zl: ZeLibrary, driver: Any, device: Any, *, backend_name: str) -> None:
        self.backend_name = backend_name
        self._zl = zl
        self._lib = zl.lib
        self._driver = driver
        self._device = device
        self._info = _device_info(zl, driver, device)
        props = _device_properties(self._lib, device)
        self._limits = _device_limits(self._lib, device, props, _ALIGNMENT)
        self._timer_ns = float(props.timerResolution) or 1.0
        bits = int(props.kernelTimestampValidBits)
        self._ts_mask = (1 << bits) - 1 if 0 < bits < 64 else UINT64_MAX
        bits = int(props.timestampValidBits)
        self._global_mask = (1 << bits) - 1 if 0 < bits < 64 else UINT64_MAX
        self._compute_ordinal, self._compute_queues, self._copy_ordinal, self._copy_queues = (
            self._queue_groups()
        )
        # ze_api.h: a lost device "must be reset for use", and a context is
        # invalid "due to device lost": a new backend on it fails here, with
        # the loss's report, instead of at its first allocation.
        self._check(
            self._lib.zeDeviceGetStatus(device),
            "zeDeviceGetStatus",
            "the device was lost earlier in this process and must be reset for use",
        )
        self._context, self._context_key = acquire_context(self._lib, driver, self._check)
        self._lock = threading.Lock()
        self._sizes: dict[int, int] = {}
        self._used = 0
        #: The next queue index to hand out, per queue group (ordinal): each
        #: group's queues are taken in turn by the streams' lists of that group.
        self._next_queue: dict[int, int] = {}
        self._events = _EventPool(self._lib, self._context, device, self._check, timing=False)
        self._timed_events = _EventPool(self._lib, self._context, device, self._check, timing=True)
        self._launcher: _GraphLauncher | None = None
        #: Pinned buffers for staged pageable copies (see ``_staged``).
        self._staging: StagingPool[int] = StagingPool(self._alloc_staging, self._free_staging)
        self._streams: set[_ZeStream] = set()
        #: ``ffi.cast("void*", address)``, bound: every copy and fill casts its pointers.
        self._void_p = caster("void*")
        #: The compiled calls of every op's path, or None for ABI mode throughout.
        self._calls = compiled_calls(self._lib)
        self._closed = False
        #: On levelzero-sim: tells the sim each launch's call site, for its fault reports.
        self._note_launch_site = launch_site_hook(backend_name)
        #: On the sims: checks each launch's reads= against its kernel's stores.
        self._readonly_declarer = readonly_hook(backend_name)

    # -- helpers ---------------------------------------------------------------
    def _alloc_staging(self) -> int:
        out = ffi.new("void**")
        desc = ffi.new("ze_host_mem_alloc_desc_t*")
        desc.stype = _ST_HOST_MEM_ALLOC_DESC
        self._check(
            self._lib.zeMemAllocHost(self._context, desc, STAGING_CHUNK, _ALIGNMENT, out),
            "zeMemAllocHost",
            f"a {STAGING_CHUNK}-byte staging buffer",
        )
        return int(ffi.cast("uintptr_t", out[0]))

    def _free_staging(self, address: int) -> None:
        self._lib.zeMemFree(self._context, ffi.cast("void*", address))

    def _release_stager(self, s: _ZeStream, *, join: bool) -> None:
        """After the stream's work is done: stop its worker, give its buffers back."""
        stager, s.stager = s.stager, None
        if stager is None:
            return
        if not join:  # the device is lost: the worker may never finish, keep its buffers
            stager.worker.stop(join=False)
            return
        stager.worker.stop()
        for buffer in stager.buffers:
            self._staging.give(buffer)

    def _check(self, rc: int, function: str, detail: str = "") -> None:
        if rc != ZE_RESULT_SUCCESS:
            _errors.raise_result(rc, function, self.backend_name, detail)

    def _queue_groups(self) -> tuple[int, int, int | None, int]:
        count = ffi.new("uint32_t*", 0)
        self._check(
            self._lib.zeDeviceGetCommandQueueGroupProperties(self._device, count, ffi.NULL),
            "zeDeviceGetCommandQueueGroupProperties",
        )
        groups = ffi.new("ze_command_queue_group_properties_t[]", count[0])
        for i in range(count[0]):
            groups[i].stype = _ST_COMMAND_QUEUE_GROUP_PROPERTIES
        self._check(
            self._lib.zeDeviceGetCommandQueueGroupProperties(self._device, count, groups),
            "zeDeviceGetCommandQueueGroupProperties",
        )
        compute: tuple[int, int] | None = None
        copy: tuple[int, int] | None = None
        for i in range(count[0]):
            flags = int(groups[i].flags)
            if compute is None and flags & _GROUP_COMPUTE:
                compute = (i, max(int(groups[i].numQueues), 1))
            elif (
                copy is None
                and flags & _GROUP_COPY
                and not flags & _GROUP_COMPUTE
                and groups[i].maxMemoryFillPatternSize >= 1
            ):
                copy = (i, max(int(groups[i].numQueues), 1))
        if compute is None:
            raise BackendUnavailableError(
                f"{self.backend_name}: {self._info.name} has no compute queue group"
            )
        return compute[0], compute[1], (copy[0] if copy else None), (copy[1] if copy else 0)

    @property
    def has_copy_engine(self) -> bool:
        return self._copy_ordinal is not None

    # -- device ------------------------------------------------------------------
    def device_info(self) -> DeviceInfo:
        return self._info

    def device_limits(self) -> DeviceLimits:
        return self._limits

    def mem_get_info(self) -> tuple[int, int]:
        # Level Zero's core API has no free-memory query (only Sysman, which
        # needs ZES_ENABLE_SYSMAN=1 before zeInit); report total minus what
        # this driver has allocated.
        total = self._info.total_memory
        with self._lock:
            return max(total - self._used, 0), total

    def bind_to_thread(self) -> None:
        """Level Zero has no current-context state: nothing to do."""

    def builtin_module_image(self, name: str) -> Any:
        """The portable kernels: SPIR-V (on the sim too, unless ARUNTIME_SIM_KERNELS=host)."""
        from ..._kernel_images import host_image, sim_kernel_kind, spirv_image

        host = self._runs_sim() and sim_kernel_kind() == "host"
        image = host_image(name) if host else spirv_image(name)
        if image is not None:
            return image
        raise NotSupportedError(
            f"{self.backend_name} has no build of the portable module {name!r}"
            + ("" if self._runs_sim() else " (a real device needs SPIR-V)"),
            backend=self.backend_name,
            function="builtin_module",
        )

    def _runs_sim(self) -> bool:
        from ._library import SIM_FILENAME

        zl = self._zl
        return bool(zl.alt_driver) or zl.path.endswith(SIM_FILENAME)

    def dlpack_device(self) -> tuple[int, int]:
        return (14, self.ordinal)  # kDLOneAPI

    def device_timestamp_us(self) -> float | None:
        host = ffi.new("uint64_t*")
        dev = ffi.new("uint64_t*")
        rc = self._lib.zeDeviceGetGlobalTimestamps(self._device, host, dev)
        if rc != ZE_RESULT_SUCCESS:
            return None
        return (int(dev[0]) & self._global_mask) * self._timer_ns / 1000.0

    def _barrier(
        self, target: _List, *, signal: _ZeEvent | None = None, wait: Sequence[_ZeEvent] = ()
    ) -> None:
        waits = ffi.new("ze_event_handle_t[]", [e.handle for e in wait]) if wait else ffi.NULL
        self._check(
            self._lib.zeCommandListAppendBarrier(
                target.handle, signal.handle if signal else ffi.NULL, len(wait), waits
            ),
            "zeCommandListAppendBarrier",
        )
        target.unordered = False

    def _tail(self, s: _ZeStream) -> _List:
        """The list holding the stream's newest work (the capture list while capturing)."""
        if s.capture is not None:
            return s.capture
        if s.last is None:
            s.last = s.compute
        return s.last

    def _target(self, s: _ZeStream, copy_op: bool) -> _List:
        """The list for the stream's next op, handed over from the previous list if needed."""
        if s.capture is not None:
            return s.capture
        want = s.copy if (copy_op and s.copy is not None) else s.compute
        last = s.last
        if last is not None and last is not want:
            event = s.to_copy if want is s.copy else s.to_compute
            assert event is not None
            self._barrier(last, signal=event)
            self._barrier(want, wait=[event])
            # Reset on the device: the next signal of this event comes after a
            # hand-over back, which is ordered after this reset.
            self._check(
                self._lib.zeCommandListAppendEventReset(want.handle, event.handle),
                "zeCommandListAppendEventReset",
            )
        s.last = want
        return want

    def _append(
        self, stream: DriverStream, copy_op: bool, op: Callable[[Any], int], name: str
    ) -> None:
        s: _ZeStream = stream  # type: ignore[assignment]  # not cast(): a call per op
        with s.lock:
            self._append_locked(s, copy_op, op, name)

    def _append_locked(
        self, s: _ZeStream, copy_op: bool, op: Callable[[Any], int], name: str
    ) -> None:
        """:meth:`_append` for a caller that holds ``s.lock``."""
        target = self._target(s, copy_op)
        if target.unordered:
            self._barrier(target)
        self._check(op(target.handle), name)
        target.unordered = True

    def _append_call(
        self,
        s: _ZeStream,
        copy_op: bool,
        append: Any,
        args: tuple[Any, ...],
        name: str,
        *,
        compiled: bool = False,
    ) -> None:
        """:meth:`_append` of ``append(list, *args)``, for the ops every stream runs most.

        No closure to build and no call to :meth:`_target` when the stream's
        newest work is already on the list this op goes to: together they
        cost more than the C call itself.  ``compiled``: ``append`` is a
        compiled call (:attr:`_calls`), given the list's address and whether
        to append the ordering barrier first, which it makes in the same
        call (:data:`~._ffi.BARRIER_FAILED`).
        """
        lock = s.lock
        lock.acquire()  # not ``with``: half the cost, on every op
        try:
            target = s.last
            if (
                target is None
                or s.capture is not None
                or target is not (s.copy if copy_op and s.copy is not None else s.compute)
            ):
                target = self._target(s, copy_op)
            if compiled:
                rc = append(target.address, target.unordered, *args)
                if rc:
                    self._compiled_append_failed(target, rc, name)
                target.unordered = True
                return
            if target.unordered:
                self._barrier(target)
            rc = append(target.handle, *args)
            if rc != ZE_RESULT_SUCCESS:
                _errors.raise_result(rc, name, self.backend_name, "")
            target.unordered = True
        finally:
            lock.release()

    def _compiled_append_failed(self, target: _List, rc: int, name: str) -> None:
        """Raise for a compiled append's result ``rc``: its barrier's failure, or the op's."""
        if rc & BARRIER_FAILED:
            name = "zeCommandListAppendBarrier"
        else:
            target.unordered = False  # the barrier, if one was due, went in
        _errors.raise_result(rc & 0xFFFFFFFF, name, self.backend_name, "")

    def _pool(self, timing: bool) -> _EventPool:
        return self._timed_events if timing else self._events

    def _held_current(self, e: _Event) -> _ZeEvent | None:
        """The event's latest record, held for the caller (who releases it), or None."""
        with e.lock:
            current = e.current
            if current is not None:
                # Under ``e.lock`` the event's own hold on it still stands.
                self._pool(e.timing).hold(current)
        return current

    def _release_all(self, events: Sequence[_ZeEvent]) -> None:
        for z in events:
            self._pool(z.timing).release(z)
