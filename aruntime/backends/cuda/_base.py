"""The CUDA driver's shared state: context handling, sticky errors, staging resources."""

from __future__ import annotations

import bisect
import threading
import weakref
from collections.abc import Callable
from typing import Any, NoReturn

from ..._driver import DeviceInfo, DeviceLimits, Driver
from ..._exceptions import AruntimeError, BackendUnavailableError, DeviceLostError, DriverError
from .._release import DeferredReleases
from .._sim_faults import launch_site_hook, readonly_hook
from .._sim_mappings import mappings_hint
from .._staging import STAGING_CHUNK, StagingPool
from . import _errors
from ._constants import (
    _CU_EVENT_DISABLE_TIMING,
    _CU_MEMHOSTALLOC_DEVICEMAP,
    _CU_MEMHOSTALLOC_PORTABLE,
    _CU_MEMORYTYPE_HOST,
    _CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
    _NOT_READY,
)
from ._ffi import CData
from ._handles import _Resources, _Stream
from ._library import CudaLibrary
from ._platform import _device_count, _device_info, _device_limits

# Which context each thread has current, shared by every CudaDriver so that
# two devices used alternately from one thread each re-establish their own.
_current = threading.local()

# Every open driver: a synchronizing free waits for the whole device, so the
# streams of every driver open on the same device count as its work.
_open_drivers: weakref.WeakSet[_CudaBase] = weakref.WeakSet()


class _CudaBase(Driver):
    """State shared by the driver's parts: context, sticky errors, staging resources."""

    # A slot (the rest stay in the instance dict): a DirectCall reads ``_dead`` in
    # place on every call (ffi/core/slots.h).
    __slots__ = ("_dead",)

    synchronous = False
    supports_timing = True

    def __init__(self, library: CudaLibrary, ordinal: int) -> None:
        self.backend_name = library.backend_name
        self._library = library
        self._ffi: Any = library.ffi
        lib = library.lib
        self._lib = lib
        self._dead: AruntimeError | None = None
        self._ctx: CData = None
        count = _device_count(library)
        if not 0 <= ordinal < count:
            raise BackendUnavailableError(
                f"{self.backend_name}: no device {ordinal}; {count} device(s) visible "
                f"through {library.path}"
            )
        self._ordinal = ordinal
        self.ordinal = ordinal
        self._device, self._info = _device_info(library, ordinal)
        self._limits = _device_limits(library, self._device, self._info.total_memory)
        ctx = self._ffi.new("CUcontext *")
        code = lib.cuDevicePrimaryCtxRetain(ctx, self._device)
        if code != 0:  # e.g. an exclusive-process device another process holds
            error = self._fail(code, "cuDevicePrimaryCtxRetain")
            if isinstance(error, DeviceLostError):
                # A sticky error outlives every context (cuda.h): the device
                # is lost, not merely unavailable, until the process ends.
                raise DeviceLostError(
                    f"{self.backend_name}: device {ordinal} was lost earlier in this process: "
                    f"{error}",
                    backend=error.backend,
                    code=error.code,
                    name=error.name,
                    function=error.function,
                )
            raise BackendUnavailableError(f"{self.backend_name}: device {ordinal}: {error}")
        self._ctx = ctx[0]
        self._closed = False
        self._state_lock = threading.Lock()  # staging pool, retire list, host ranges
        self._streams: set[_Stream] = set()
        #: Frees that may wait for the device, when it has work (see ``_release``).
        self._releases = DeferredReleases(f"aruntime-{self.backend_name}-release")
        #: Pinned buffers for staged pageable copies, recycled across streams.
        self._staging: StagingPool[CData] = StagingPool(
            lambda: self._host_alloc_raw(STAGING_CHUNK), self._lib.cuMemFreeHost
        )
        self._retired: list[tuple[list[CData], _Resources]] = []
        self._orphans = _Resources()  # captured on a stream joined into someone's capture
        self._host_starts: list[int] = []
        self._host_sizes: dict[int, int] = {}
        # Symbols newer than CUDA 12.0 are feature-tested here; the rest are
        # resolved the same way so a missing one fails where it is used.
        fn = library.function
        self._cuEventElapsedTime = (
            fn("cuEventElapsedTime_v2")
            if library.has("cuEventElapsedTime_v2")
            else fn("cuEventElapsedTime")
        )
        self._has_pointer_attribute = library.has("cuPointerGetAttribute")
        self._has_param_info = library.has("cuFuncGetParamInfo")
        #: Serializes the shared-memory opt-in (``_ModuleOps._opt_in_shared``).
        self._shared_lock = threading.Lock()
        self._cuEventRecord = lib.cuEventRecord
        self._cuEventQuery = lib.cuEventQuery
        self._cuEventSynchronize = lib.cuEventSynchronize
        self._cuStreamQuery = lib.cuStreamQuery
        self._cuStreamSynchronize = lib.cuStreamSynchronize
        self._helpers: Any = None
        self._hostfn: CData = None
        self._priority_range: tuple[int, int] | None = None
        #: Peer devices whose access this context has asked for (see ``_enable_peer``).
        self._peers_tried: set[int] = set()
        #: On cuda-sim: tells the sim each launch's call site, for its fault reports.
        self._note_launch_site = launch_site_hook(self.backend_name)
        #: On the sims: checks each launch's reads= against its kernel's stores.
        self._readonly_declarer = readonly_hook(self.backend_name)
        _open_drivers.add(self)

    def _is_pinned(self, address: int, nbytes: int) -> bool:
        """Whether ``[address, address+nbytes)`` is page-locked host memory."""
        starts = self._host_starts
        index = bisect.bisect_right(starts, address) - 1
        if index >= 0:
            start = starts[index]
            if address + nbytes <= start + self._host_sizes.get(start, 0):
                return True
        if self._has_pointer_attribute:
            # Memory pinned by someone else (cudaHostAlloc in PyTorch, CuPy...).
            kind = self._ffi.new("unsigned int *")
            code = self._lib.cuPointerGetAttribute(kind, _CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address)
            return code == 0 and int(kind[0]) == _CU_MEMORYTYPE_HOST
        return False

    # -- plumbing ------------------------------------------------------------
    def _fail(self, code: int, function: str, detail: str = "") -> DriverError:
        """The exception for ``code``; a sticky one also marks the device lost.

        ``detail`` (the driver's own words, such as a JIT log) ends the message.
        """
        sticky = _errors.is_sticky(code) and (self._dead is not None or self._context_lost())
        error = _errors.error_for(
            code,
            function,
            backend=self.backend_name,
            describe=self._library.describe,
            sticky=sticky,
            detail=detail,
        )
        if isinstance(error, DeviceLostError) and self._dead is None:
            self._dead = error
        return error

    def _context_lost(self) -> bool:
        """Confirm a sticky-class code: does the context now fail every call?

        NVIDIA's driver returns the sticky error from every later call, so a
        query of the legacy stream (never blocks) confirms it.  The sim can
        inject a launch failure that is *not* sticky; the probe then succeeds
        and the error stays a plain DriverError instead of killing the device.
        """
        lib = self._lib
        if self._ctx is None:
            return True
        try:
            if getattr(_current, "ctx", None) is not self._ctx:
                if lib.cuCtxSetCurrent(self._ctx) != 0:
                    return True
                _current.ctx = self._ctx
            return lib.cuStreamQuery(self._ffi.NULL) not in (0, _NOT_READY)
        except AruntimeError:  # the library lacks the probe: trust the table
            return True

    def _check(self, code: int, function: str) -> None:
        if code != 0:
            raise self._fail(code, function)

    def _enter_slow(self, function: str) -> None:
        """Fail fast on a dead device, else make the context current on this thread."""
        dead = self._dead
        if dead is not None:
            self._raise_dead(function, dead)
        self._check(self._lib.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
        _current.ctx = self._ctx

    def _raise_dead(self, function: str, dead: AruntimeError) -> NoReturn:
        if isinstance(dead, DriverError):
            raise DeviceLostError(
                f"{function}: the device was lost earlier ({dead})",
                backend=self.backend_name,
                code=dead.code,
                name=dead.name,
                function=function,
            )
        raise type(dead)(f"{function}: {dead}")

    def _enter_release(self) -> bool:
        """For frees and destroys: False when the call should be skipped.

        After a sticky error the context is gone and with it everything made
        in it; at interpreter exit nothing is freed (see the module
        docstring).  In both cases releasing is a silent no-op, so closing a
        backend after either is clean.
        """
        if self._dead is not None:
            return False
        if getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("release")
        return True

    def _busy(self) -> bool:
        """Whether the device has work queued that a synchronizing free would wait for.

        That is: releases already deferred (they stay in order), or work on a
        stream of any driver open on this device (another ``open_backend``
        shares the device).  ``cuStreamQuery`` never blocks; streams made by
        other libraries and never adopted are not seen.
        """
        if self._releases.pending:
            return True
        query = self._lib.cuStreamQuery
        for driver in list(_open_drivers):
            if driver._library is not self._library or driver._device != self._device:
                continue
            with driver._state_lock:
                streams = list(driver._streams)
            if any(query(s.handle) == _NOT_READY for s in streams):
                return True
        return False

    def _release_call(self, function: str, call: Callable[[], int]) -> None:
        """Make a release that may synchronize: now when idle, else on the release thread."""
        if not self._busy():
            self._check(call(), function)
            return

        def deferred() -> None:
            if self._enter_release():  # the context, on the release thread
                self._check(call(), function)

        self._releases.submit(deferred, function)

    def _alloc_call(
        self, function: str, call: Callable[[], int], nbytes: int, *, device: bool = True
    ) -> None:
        """Make an allocation; out of memory with frees still deferred, let them land and retry.

        Out of memory names the request and, for device memory, what is free.
        """
        code = call()
        if code == _errors.CUDA_ERROR_OUT_OF_MEMORY and self._releases.pending:
            self._releases.drain()
            code = call()
        if code == _errors.CUDA_ERROR_OUT_OF_MEMORY:
            raise self._out_of_memory(code, function, nbytes, device=device)
        self._check(code, function)

    def _out_of_memory(self, code: int, function: str, nbytes: int, *, device: bool) -> DriverError:
        error = self._fail(code, function)
        where = "device memory" if device else "pinned host memory"
        detail = f"{nbytes} bytes of {where} requested"
        free, total = self._ffi.new("size_t *"), self._ffi.new("size_t *")
        try:
            known = device and self._lib.cuMemGetInfo_v2(free, total) == 0
        except AruntimeError:  # a driver without the query: the request alone
            known = False
        if known:
            detail += f", {int(free[0])} of {int(total[0])} free"
        detail += mappings_hint(self.backend_name)
        return type(error)(
            f"{error} ({detail})",
            backend=error.backend,
            code=error.code,
            name=error.name,
            function=error.function,
        )

    def _enter(self, function: str) -> None:
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow(function)

    # -- device --------------------------------------------------------------
    def device_info(self) -> DeviceInfo:
        return self._info

    def device_limits(self) -> DeviceLimits:
        return self._limits

    def mem_get_info(self) -> tuple[int, int]:
        self._enter("cuMemGetInfo_v2")
        free = self._ffi.new("size_t *")
        total = self._ffi.new("size_t *")
        self._check(self._lib.cuMemGetInfo_v2(free, total), "cuMemGetInfo_v2")
        return int(free[0]), int(total[0])

    def bind_to_thread(self) -> None:
        if self._dead is not None:
            self._raise_dead("bind_to_thread", self._dead)
        self._enter_slow("cuCtxSetCurrent")

    def _enter_slow_unchecked(self) -> None:
        if self._lib.cuCtxSetCurrent(self._ctx) == 0:
            _current.ctx = self._ctx

    def _host_alloc_raw(self, nbytes: int) -> CData:
        out = self._ffi.new("void **")
        flags = _CU_MEMHOSTALLOC_PORTABLE | _CU_MEMHOSTALLOC_DEVICEMAP
        self._alloc_call(
            "cuMemHostAlloc",
            lambda: self._lib.cuMemHostAlloc(out, nbytes, flags),
            nbytes,
            device=False,
        )
        return out[0]

    def _fence(self, stream: _Stream) -> CData | None:
        """A new event recorded on ``stream`` (None if the device can't take one)."""
        out = self._ffi.new("CUevent *")
        lib = self._lib
        if lib.cuEventCreate(out, _CU_EVENT_DISABLE_TIMING) != 0:
            return None
        if lib.cuEventRecord(out[0], stream.handle) != 0:
            lib.cuEventDestroy_v2(out[0])
            return None
        return out[0]

    @staticmethod
    def _drop_job(helpers: Any, job: CData, capturing: bool) -> None:
        # A job the driver refused never runs, so it never frees itself.
        if not capturing:
            helpers.ar_copy_job_free(job)

    def _host_functions(self) -> tuple[Any, CData]:
        if self._helpers is None:
            helpers = self._library.helpers()
            self._hostfn = self._ffi.cast(
                "CUhostFn", self._ffi.addressof(helpers, "ar_hostfn_copy")
            )
            self._helpers = helpers
        return self._helpers, self._hostfn

    def _take_staging(self) -> CData:
        self._reap()
        return self._staging.take()

    def _retire(self, events: list[CData], resources: _Resources) -> None:
        if not resources:
            for event in events:
                self._lib.cuEventDestroy_v2(event)
            return
        with self._state_lock:
            self._retired.append((events, resources))

    def _reap(self) -> None:
        """Recycle staging memory whose fencing events have completed."""
        if not self._retired:
            return
        lib = self._lib
        with self._state_lock:
            ready = [
                entry
                for entry in self._retired
                if all(lib.cuEventQuery(event) != _NOT_READY for event in entry[0])
            ]
            if not ready:
                return
            self._retired = [entry for entry in self._retired if entry not in ready]
        for events, resources in ready:
            for event in events:
                lib.cuEventDestroy_v2(event)
            self._free_resources(resources)

    def _free_resources(self, resources: _Resources) -> None:
        if resources.jobs:
            helpers, _ = self._host_functions()
            for job in resources.jobs:
                helpers.ar_copy_job_free(job)
        resources.jobs = []
        for buffer in resources.staging:
            self._staging.give(buffer)
        resources.staging = []
