"""CudaDriver: the driver-level primitives over the CUDA driver API.

This is the only module that calls the CUDA API (besides ``cuInit`` and the
error-naming calls in :mod:`._library`).  Every call goes through cffi (the
compiled wrappers or libffi, see :mod:`._ffi`), which releases the GIL for
its duration, and every ``CUresult`` goes through :mod:`._errors`.

Context.  The driver uses the device's *primary* context
(``cuDevicePrimaryCtxRetain``), the one the runtime API, CuPy and PyTorch
use, so pointers and streams interoperate with them in one process.  The core
calls in from the event-loop thread, its waiter threads and user threads; each
thread gets the context made current lazily, on its first call, remembered in
a thread-local (a library that later switches that thread to another context
behind our back is not detected: call ``bind_to_thread()`` again).

Completion.  Events are created with ``CU_EVENT_BLOCKING_SYNC`` so that the
core's waiter threads sleep in ``cuEventSynchronize`` instead of spinning a
core; ``CU_EVENT_DISABLE_TIMING`` is added when timing is not asked for, which
makes record and query cheaper.

Pageable host memory.  See :meth:`CudaDriver.memcpy_h2d` and
:meth:`CudaDriver.memcpy_d2h`: copies from or to memory the driver has not
pinned are staged through pinned buffers by a *native* host function
(``libaruntime_cuda_helpers.so``), so the enqueueing thread never waits for
the copy, and no Python runs on a driver thread.

Sticky errors.  Once a call reports an error after which the CUDA context is
unusable (:class:`DeviceLostError`), every later call fails fast with
``DeviceLostError`` without reaching the driver.

Interpreter exit.  The first open registers one ``atexit`` hook.  It stops
new work (calls raise :class:`ClosedResourceError`), waits a bounded time
(``ARUNTIME_CUDA_EXIT_TIMEOUT_S``, default 10 s) for every stream to drain by
polling ``cuStreamQuery`` (there is no bounded ``cuCtxSynchronize``), then
turns the native host functions into no-ops, because the Python objects
whose memory they would copy are about to be freed.  It frees and releases
nothing: the process exit reclaims the context, and freeing memory or
destroying events that undrained work or a daemon waiter thread may still
touch is exactly the crash to avoid.  No Python ever runs on a driver
thread, so a driver thread finishing late cannot re-enter a dying
interpreter.
"""

from __future__ import annotations

import atexit
import bisect
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

import numpy as np

from ..._driver import (
    DeviceInfo,
    Driver,
    DriverEvent,
    DriverFunction,
    DriverGraph,
    DriverModule,
    DriverStream,
    LaunchConfig,
)
from ..._exceptions import (
    AruntimeError,
    BackendUnavailableError,
    ClosedResourceError,
    DeviceLostError,
    DriverError,
    InvalidArgumentError,
    OutOfMemoryError,
)
from ..._kernel_images import PORTABLE_MODULES, host_library_name
from ..._native import native_library_path
from . import _errors
from ._ffi import CData
from ._library import CudaLibrary

__all__ = ["CudaDriver", "device_infos"]

_log = logging.getLogger("aruntime.cuda")

# cuda.h constants (enum values are ABI, stable across releases).
_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_CU_STREAM_NON_BLOCKING = 0x1
_CU_EVENT_BLOCKING_SYNC = 0x1
_CU_EVENT_DISABLE_TIMING = 0x2
_CU_MEMHOSTALLOC_PORTABLE = 0x1
_CU_MEMHOSTALLOC_DEVICEMAP = 0x2
_CU_MEM_ATTACH_GLOBAL = 0x1
_CU_MEMORYTYPE_HOST = 0x1
_CU_MEMORYTYPE_DEVICE = 0x2
_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
_CU_STREAM_CAPTURE_MODE_RELAXED = 2
_CU_STREAM_CAPTURE_STATUS_NONE = 0
_NOT_READY = _errors.CUDA_ERROR_NOT_READY

#: Pageable copies up to this size go straight to the driver, which stages
#: them itself at enqueue time (a memcpy of at most this many bytes).
DIRECT_PAGEABLE_H2D_MAX = 64 * 1024
#: Size of one pinned staging buffer, and of the chunks a staged copy is cut into.
STAGING_CHUNK = 4 * 1024 * 1024
#: Free staging buffers kept for reuse; more are returned to the driver.
_STAGING_POOL_MAX = 8

_EXIT_TIMEOUT_ENV = "ARUNTIME_CUDA_EXIT_TIMEOUT_S"

_PACKAGE_DIR = Path(__file__).resolve().parents[2]
#: Portable kernel modules -> the host shared object the sim runs them from.
_SIM_BUILTIN_MODULES = {name: host_library_name(name) for name in PORTABLE_MODULES}

# Which context each thread has current, shared by every CudaDriver so that
# two devices used alternately from one thread each re-establish their own.
_current = threading.local()


class _Stream:
    """A CUstream and what the driver keeps with it."""

    __slots__ = ("__weakref__", "capture_keep", "foreign", "graphs", "handle", "staging")

    def __init__(self, handle: CData, *, foreign: bool = False) -> None:
        self.handle = handle
        self.foreign = foreign  # made by another library: never cuStreamDestroy'd here
        self.staging: CData | None = None  # pinned buffer for pageable copies
        self.capture_keep: _Resources | None = None  # while we capture on this stream
        self.graphs: set[_Graph] = set()  # launched graphs that own resources


class _Resources:
    """Native memory that device work reads or writes: freed only once that work is done."""

    __slots__ = ("jobs", "staging")

    def __init__(self) -> None:
        self.jobs: list[CData] = []
        self.staging: list[CData] = []

    def __bool__(self) -> bool:
        return bool(self.jobs or self.staging)


class _Graph:
    """An instantiated graph (CUgraphExec) and the staging memory its nodes use."""

    __slots__ = ("__weakref__", "exec", "pending_events", "resources", "streams")

    def __init__(self, exec_handle: CData, resources: _Resources) -> None:
        self.exec = exec_handle
        self.resources = resources
        self.streams: set[_Stream] = set()  # live streams it was launched on
        self.pending_events: list[CData] = []  # recorded when such a stream was destroyed


_live_drivers: weakref.WeakSet[CudaDriver] = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_registered = False


def _register_exit_hook() -> None:
    global _exit_hook_registered
    with _exit_hook_lock:
        if not _exit_hook_registered:
            atexit.register(_at_exit)
            _exit_hook_registered = True


def _at_exit() -> None:
    try:
        timeout = float(os.environ.get(_EXIT_TIMEOUT_ENV, "10"))
    except ValueError:
        timeout = 10.0
    deadline = time.monotonic() + timeout
    for driver in list(_live_drivers):
        driver.shutdown_at_exit(deadline)


def _device_count(library: CudaLibrary) -> int:
    count = library.ffi.new("int *")
    code = library.lib.cuDeviceGetCount(count)
    if code != 0:
        raise _errors.error_for(
            code, "cuDeviceGetCount", backend=library.backend_name, describe=library.describe
        )
    return int(count[0])


def _device_info(library: CudaLibrary, ordinal: int) -> tuple[int, DeviceInfo]:
    lib = library.lib

    def check(code: int, function: str) -> None:
        if code != 0:
            raise _errors.error_for(
                code, function, backend=library.backend_name, describe=library.describe
            )

    dev = library.ffi.new("CUdevice *")
    check(lib.cuDeviceGet(dev, ordinal), "cuDeviceGet")
    device = int(dev[0])
    name = library.ffi.new("char[256]")
    check(lib.cuDeviceGetName(name, 256, device), "cuDeviceGetName")
    total = library.ffi.new("size_t *")
    check(lib.cuDeviceTotalMem_v2(total, device), "cuDeviceTotalMem_v2")
    value = library.ffi.new("int *")

    def attribute(attr: int) -> int:
        check(lib.cuDeviceGetAttribute(value, attr, device), "cuDeviceGetAttribute")
        return int(value[0])

    sms = attribute(_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    major = attribute(_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    minor = attribute(_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    version = library.ffi.new("int *")
    check(lib.cuDriverGetVersion(version), "cuDriverGetVersion")
    v = int(version[0])
    info = DeviceInfo(
        name=library.ffi.string(name).decode(errors="replace"),
        total_memory=int(total[0]),
        compute_units=sms,
        extra=(
            ("compute_capability", f"{major}.{minor}"),
            ("driver_version", f"{v // 1000}.{(v % 1000) // 10}"),
            ("ordinal", str(ordinal)),
            ("library", library.path),
        ),
    )
    return device, info


def device_infos(library: CudaLibrary) -> list[DeviceInfo]:
    """What every visible device says about itself (no context is created)."""
    return [_device_info(library, i)[1] for i in range(_device_count(library))]


class CudaDriver(Driver):
    """One CUDA device, through its primary context."""

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
        ctx = self._ffi.new("CUcontext *")
        code = lib.cuDevicePrimaryCtxRetain(ctx, self._device)
        if code != 0:  # e.g. an exclusive-process device another process holds
            error = self._fail(code, "cuDevicePrimaryCtxRetain")
            raise BackendUnavailableError(f"{self.backend_name}: device {ordinal}: {error}")
        self._ctx = ctx[0]
        self._closed = False
        self._state_lock = threading.Lock()  # staging pool, retire list, host ranges
        self._streams: set[_Stream] = set()
        self._staging_pool: list[CData] = []
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
        self._cuEventRecord = lib.cuEventRecord
        self._cuEventQuery = lib.cuEventQuery
        self._cuEventSynchronize = lib.cuEventSynchronize
        self._helpers: Any = None
        self._hostfn: CData = None
        self._priority_range: tuple[int, int] | None = None
        _live_drivers.add(self)
        _register_exit_hook()

    # -- plumbing ------------------------------------------------------------
    def _fail(self, code: int, function: str) -> DriverError:
        """The exception for ``code``; a sticky one also marks the device lost."""
        sticky = _errors.is_sticky(code) and (self._dead is not None or self._context_lost())
        error = _errors.error_for(
            code,
            function,
            backend=self.backend_name,
            describe=self._library.describe,
            sticky=sticky,
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

    def _enter(self, function: str) -> None:
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow(function)

    # -- device --------------------------------------------------------------
    def device_info(self) -> DeviceInfo:
        return self._info

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

    def close(self) -> None:
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
        _live_drivers.discard(self)
        lost = isinstance(self._dead, DeviceLostError)
        try:
            if not lost:
                self._enter_slow_unchecked()
                self._release_all_resources()
        finally:
            # Our reference to the primary context; CuPy or PyTorch hold their own.
            self._lib.cuDevicePrimaryCtxRelease_v2(self._device)
            if self._dead is None:
                self._dead = ClosedResourceError(f"the {self.backend_name} driver is closed")

    def _enter_slow_unchecked(self) -> None:
        if self._lib.cuCtxSetCurrent(self._ctx) == 0:
            _current.ctx = self._ctx

    def _release_all_resources(self) -> None:
        """Free staging memory once nothing can use it (close and exit only)."""
        with self._state_lock:
            retired, self._retired = self._retired, []
            pool, self._staging_pool = self._staging_pool, []
            orphans, self._orphans = self._orphans, _Resources()
        lib = self._lib
        for events, resources in retired:
            for event in events:
                lib.cuEventSynchronize(event)
                lib.cuEventDestroy_v2(event)
            self._free_resources(resources)
        lib.cuCtxSynchronize()
        self._free_resources(orphans)
        for buffer in pool:
            lib.cuMemFreeHost(buffer)

    def shutdown_at_exit(self, deadline: float) -> None:
        """The exit hook's part for this device: see the module docstring.

        Nothing is freed or released here: process exit reclaims the context,
        and daemon waiter threads may still sit in ``cuEventSynchronize`` on
        our events, which must stay valid until the process is gone.
        """
        if self._closed:
            return
        if self._dead is None:
            self._dead = ClosedResourceError(
                f"{self.backend_name}: the interpreter is exiting; no new work is accepted"
            )
        drained = isinstance(self._dead, DeviceLostError) or self._drain(deadline)
        # From here on the Python objects owning pageable buffers may be freed:
        # host functions still queued (work that did not drain) copy nothing.
        if self._helpers is not None:
            self._helpers.ar_helpers_shutdown()
        if not drained:
            _log.warning(
                "%s: device work still running at interpreter exit; leaving it to process exit",
                self.backend_name,
            )

    def _drain(self, deadline: float) -> bool:
        lib = self._lib
        self._enter_slow_unchecked()
        pause = 0.0005
        while True:
            with self._state_lock:
                streams = list(self._streams)
            busy = [s for s in streams if lib.cuStreamQuery(s.handle) == _NOT_READY]
            if not busy:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)  # exit path, not the event loop: sleeping is fine here
            pause = min(pause * 2, 0.02)

    # -- memory --------------------------------------------------------------
    def mem_alloc(self, nbytes: int) -> int:
        self._enter("cuMemAlloc_v2")
        out = self._ffi.new("CUdeviceptr *")
        self._check(self._lib.cuMemAlloc_v2(out, nbytes), "cuMemAlloc_v2")
        return int(out[0])

    def mem_alloc_managed(self, nbytes: int) -> int:
        self._enter("cuMemAllocManaged")
        out = self._ffi.new("CUdeviceptr *")
        code = self._lib.cuMemAllocManaged(out, nbytes, _CU_MEM_ATTACH_GLOBAL)
        self._check(code, "cuMemAllocManaged")
        return int(out[0])

    def mem_free(self, address: int) -> None:
        if not self._enter_release():
            return
        self._check(self._lib.cuMemFree_v2(address), "cuMemFree_v2")

    def _host_alloc_raw(self, nbytes: int) -> CData:
        out = self._ffi.new("void **")
        flags = _CU_MEMHOSTALLOC_PORTABLE | _CU_MEMHOSTALLOC_DEVICEMAP
        self._check(self._lib.cuMemHostAlloc(out, nbytes, flags), "cuMemHostAlloc")
        return out[0]

    def host_alloc(self, nbytes: int) -> tuple[int, memoryview]:
        self._enter("cuMemHostAlloc")
        pointer = self._host_alloc_raw(nbytes)
        address = int(self._ffi.cast("uintptr_t", pointer))
        with self._state_lock:
            bisect.insort(self._host_starts, address)
            self._host_sizes[address] = nbytes
        return address, memoryview(self._ffi.buffer(self._ffi.cast("char *", pointer), nbytes))

    def host_free(self, address: int) -> None:
        if not self._enter_release():
            return
        with self._state_lock:
            if self._host_sizes.pop(address, None) is not None:
                index = bisect.bisect_left(self._host_starts, address)
                del self._host_starts[index]
        self._check(self._lib.cuMemFreeHost(self._ffi.cast("void *", address)), "cuMemFreeHost")

    def host_device_address(self, host_address: int) -> int:
        self._enter("cuMemHostGetDevicePointer_v2")
        out = self._ffi.new("CUdeviceptr *")
        code = self._lib.cuMemHostGetDevicePointer_v2(
            out, self._ffi.cast("void *", host_address), 0
        )
        self._check(code, "cuMemHostGetDevicePointer_v2")
        return int(out[0])

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
        stream = _Stream(out[0])
        with self._state_lock:
            self._streams.add(stream)
        return DriverStream(stream)

    def stream_destroy(self, stream: DriverStream) -> None:
        s = cast(_Stream, stream)
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
        return int(self._ffi.cast("uintptr_t", cast(_Stream, stream).handle))

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
        stream = _Stream(raw, foreign=True)
        with self._state_lock:
            self._streams.add(stream)
        return DriverStream(stream)

    def dlpack_device(self) -> tuple[int, int]:
        return (2, self._ordinal)  # kDLCUDA

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

    # -- async copies ------------------------------------------------------------
    def memcpy_h2d(self, src: memoryview, dst: int, stream: DriverStream) -> None:
        """Enqueue a host-to-device copy (callers serialise enqueues per stream).

        Pageable-memory policy.  For pageable (not page-locked) source memory,
        the CUDA driver first copies the bytes into its own pinned staging
        buffers on the calling thread, and blocks that thread while its
        staging buffers are full, that is, for about the length of a large
        copy.  To keep the event loop free:

        * pinned memory (``alloc_host_pinned``, or memory that
          ``cuPointerGetAttribute`` reports as host memory, e.g. pinned by
          PyTorch) goes straight to ``cuMemcpyHtoDAsync_v2``;
        * pageable copies up to 64 KiB also go straight to the driver: staging
          them costs the calling thread a memcpy of a few microseconds;
        * larger pageable copies are cut into 4 MiB chunks.  Each chunk is
          enqueued as a native host function (``cuLaunchHostFunc``; C code in
          ``libaruntime_cuda_helpers.so``, no Python and no GIL on the driver
          thread) that copies it into a per-stream pinned staging buffer,
          followed by ``cuMemcpyHtoDAsync_v2`` from that buffer.  Stream order
          guarantees that a chunk is not staged before the previous one has
          left the buffer.  The calling thread only enqueues: 2 driver calls
          per 4 MiB.

        The core keeps ``src`` alive until the op completes, which covers the
        host function reading it later.
        """
        s = cast(_Stream, stream)
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuMemcpyHtoDAsync_v2")
        nbytes = src.nbytes
        buffer = self._ffi.from_buffer(src)
        if nbytes > DIRECT_PAGEABLE_H2D_MAX and not self._is_pinned(
            int(self._ffi.cast("uintptr_t", buffer)), nbytes
        ):
            self._staged_copy(s, buffer, dst, nbytes, to_device=True)
            return
        code = self._lib.cuMemcpyHtoDAsync_v2(dst, buffer, nbytes, s.handle)
        if code != 0:
            raise self._fail(code, "cuMemcpyHtoDAsync_v2")

    def memcpy_d2h(self, src: int, dst: memoryview, stream: DriverStream) -> None:
        """Enqueue a device-to-host copy.

        Pageable-memory policy.  A ``cuMemcpyDtoHAsync`` into pageable memory
        is synchronous in the CUDA driver: the calling thread waits for all
        earlier work on the stream and then for the copy.  So every pageable
        destination, whatever its size, is staged: ``cuMemcpyDtoHAsync_v2``
        into a pinned per-stream buffer in 4 MiB chunks, each followed by a
        native host function (see :meth:`memcpy_h2d`) that copies the chunk
        into ``dst`` on the driver's thread.  Pinned destinations go straight
        to the driver.  The enqueueing thread never waits for the device.
        """
        s = cast(_Stream, stream)
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuMemcpyDtoHAsync_v2")
        nbytes = dst.nbytes
        buffer = self._ffi.from_buffer(dst, require_writable=True)
        if not self._is_pinned(int(self._ffi.cast("uintptr_t", buffer)), nbytes):
            self._staged_copy(s, buffer, src, nbytes, to_device=False)
            return
        code = self._lib.cuMemcpyDtoHAsync_v2(buffer, src, nbytes, s.handle)
        if code != 0:
            raise self._fail(code, "cuMemcpyDtoHAsync_v2")

    def _staged_copy(
        self, stream: _Stream, host: CData, device: int, nbytes: int, *, to_device: bool
    ) -> None:
        lib = self._lib
        helpers, hostfn = self._host_functions()
        status = self._ffi.new("CUstreamCaptureStatus *")
        self._check(lib.cuStreamIsCapturing(stream.handle, status), "cuStreamIsCapturing")
        capturing = int(status[0]) != _CU_STREAM_CAPTURE_STATUS_NONE
        if capturing:
            # The graph replays these nodes: its staging buffer and copy jobs
            # must live as long as the graph, not as the stream.
            keep = stream.capture_keep if stream.capture_keep is not None else self._orphans
            if not keep.staging:
                keep.staging.append(self._take_staging())
            staging = keep.staging[0]
        else:
            if stream.staging is None:
                stream.staging = self._take_staging()
            staging = stream.staging
        free_after = 0 if capturing else 1
        host_bytes = self._ffi.cast("char *", host)
        offset = 0
        while offset < nbytes:
            chunk = min(STAGING_CHUNK, nbytes - offset)
            if to_device:
                job = helpers.ar_copy_job_new(staging, host_bytes + offset, chunk, free_after)
            else:
                job = helpers.ar_copy_job_new(host_bytes + offset, staging, chunk, free_after)
            if job == self._ffi.NULL:
                raise OutOfMemoryError(
                    "staging a pageable copy: malloc of a copy job failed",
                    backend=self.backend_name,
                    function="ar_copy_job_new",
                )
            if capturing:
                keep.jobs.append(job)
            if to_device:
                code = lib.cuLaunchHostFunc(stream.handle, hostfn, job)
                if code != 0:
                    self._drop_job(helpers, job, capturing)
                    raise self._fail(code, "cuLaunchHostFunc")
                code = lib.cuMemcpyHtoDAsync_v2(device + offset, staging, chunk, stream.handle)
                if code != 0:
                    raise self._fail(code, "cuMemcpyHtoDAsync_v2")
            else:
                code = lib.cuMemcpyDtoHAsync_v2(staging, device + offset, chunk, stream.handle)
                if code != 0:
                    self._drop_job(helpers, job, capturing)
                    raise self._fail(code, "cuMemcpyDtoHAsync_v2")
                code = lib.cuLaunchHostFunc(stream.handle, hostfn, job)
                if code != 0:
                    self._drop_job(helpers, job, capturing)
                    raise self._fail(code, "cuLaunchHostFunc")
            offset += chunk

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
        with self._state_lock:
            if self._staging_pool:
                return self._staging_pool.pop()
        return self._host_alloc_raw(STAGING_CHUNK)

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
            with self._state_lock:
                if len(self._staging_pool) < _STAGING_POOL_MAX and not self._closed:
                    self._staging_pool.append(buffer)
                    continue
            self._lib.cuMemFreeHost(buffer)
        resources.staging = []

    def memcpy_d2d(self, src: int, dst: int, nbytes: int, stream: DriverStream) -> None:
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuMemcpyDtoDAsync_v2")
        code = self._lib.cuMemcpyDtoDAsync_v2(dst, src, nbytes, cast(_Stream, stream).handle)
        if code != 0:
            raise self._fail(code, "cuMemcpyDtoDAsync_v2")

    def memcpy_2d(
        self,
        src: int,
        src_pitch: int,
        dst: int,
        dst_pitch: int,
        width_bytes: int,
        height: int,
        stream: DriverStream,
    ) -> None:
        self._enter("cuMemcpy2DAsync_v2")
        params = self._ffi.new("CUDA_MEMCPY2D_v2 *")
        params.srcMemoryType = _CU_MEMORYTYPE_DEVICE
        params.srcDevice = src
        params.srcPitch = src_pitch
        params.dstMemoryType = _CU_MEMORYTYPE_DEVICE
        params.dstDevice = dst
        params.dstPitch = dst_pitch
        params.WidthInBytes = width_bytes
        params.Height = height
        code = self._lib.cuMemcpy2DAsync_v2(params, cast(_Stream, stream).handle)
        self._check(code, "cuMemcpy2DAsync_v2")

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: DriverStream) -> None:
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuMemsetD8Async")
        code = self._lib.cuMemsetD8Async(dst, value & 0xFF, nbytes, cast(_Stream, stream).handle)
        if code != 0:
            raise self._fail(code, "cuMemsetD8Async")

    # -- modules and kernels -------------------------------------------------------
    def module_load(self, image: Any) -> DriverModule:
        """Load PTX, cubin or fatbin bytes (on the sim: a host shared object's bytes)."""
        self._enter("cuModuleLoadData")
        data = bytes(image)
        if not data:
            raise InvalidArgumentError("load_module: the module image is empty")
        binary = data.startswith((b"\x7fELF", b"\x50\xed\x55\xba"))  # ELF cubin/.so, fatbin
        if not binary and not data.endswith(b"\0"):
            data += b"\0"  # PTX is text, and cuModuleLoadData reads it up to a NUL
        out = self._ffi.new("CUmodule *")
        self._check(self._lib.cuModuleLoadData(out, data), "cuModuleLoadData")
        return DriverModule(out[0])

    def builtin_module_image(self, name: str) -> Any:
        """aruntime's portable kernels: the host shared object on the sim, PTX on a GPU."""
        if self._library.sim:
            filename = _SIM_BUILTIN_MODULES.get(name)
            if filename is not None:
                return native_library_path(filename).read_bytes()
        else:
            ptx = _PACKAGE_DIR / "kernels" / f"{name}.ptx"
            if ptx.is_file():
                return ptx.read_bytes()
        return super().builtin_module_image(name)

    def module_unload(self, module: DriverModule) -> None:
        if not self._enter_release():
            return
        self._check(self._lib.cuModuleUnload(module), "cuModuleUnload")

    def module_function(self, module: DriverModule, name: str) -> DriverFunction:
        self._enter("cuModuleGetFunction")
        out = self._ffi.new("CUfunction *")
        code = self._lib.cuModuleGetFunction(out, module, name.encode())
        if code == _errors.CUDA_ERROR_NOT_FOUND:
            raise InvalidArgumentError(f"kernel: the module has no kernel named {name!r}")
        self._check(code, "cuModuleGetFunction")
        return DriverFunction(out[0])

    def launch(
        self,
        function: DriverFunction,
        config: LaunchConfig,
        args: Sequence[Any],
        stream: DriverStream,
    ) -> None:
        """Enqueue ``cuLaunchKernel``.

        Each argument becomes the bytes the kernel parameter holds: a
        DevicePtr its 64-bit address, a numpy scalar its native bytes, raw
        bytes as they are.  They are packed into one buffer (each at a
        16-byte aligned offset) that, with the ``void**`` array pointing into
        it, stays referenced until ``cuLaunchKernel`` returns; the driver
        copies parameters at launch (and at capture).
        """
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuLaunchKernel")
        params, blob = _pack_args(self._ffi, args)
        gx, gy, gz = config.grid
        bx, by, bz = config.block
        code = self._lib.cuLaunchKernel(
            function,
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            config.shared_mem,
            cast(_Stream, stream).handle,
            params,
            self._ffi.NULL,
        )
        del blob  # kept alive until here on purpose
        if code != 0:
            raise self._fail(code, "cuLaunchKernel")

    # -- graphs --------------------------------------------------------------------
    def capture_begin(self, stream: DriverStream) -> None:
        """Begin capture in relaxed mode.

        Relaxed, because in async code many tasks share one thread: in global
        or thread-local mode, an unrelated task's ``cuMemAlloc`` on the loop
        thread during the capture would fail and invalidate the capture, and
        ``cuStreamEndCapture`` would have to come from the beginning thread.
        The core already refuses to wait on a capturing stream.
        """
        s = cast(_Stream, stream)
        self._enter("cuStreamBeginCapture_v2")
        code = self._lib.cuStreamBeginCapture_v2(s.handle, _CU_STREAM_CAPTURE_MODE_RELAXED)
        self._check(code, "cuStreamBeginCapture_v2")
        s.capture_keep = _Resources()

    def capture_end(self, stream: DriverStream) -> DriverGraph:
        s = cast(_Stream, stream)
        self._enter("cuStreamEndCapture")
        keep, s.capture_keep = s.capture_keep or _Resources(), None
        lib = self._lib
        graph = self._ffi.new("CUgraph *")
        code = lib.cuStreamEndCapture(s.handle, graph)
        if code != 0:
            if graph[0] != self._ffi.NULL:
                lib.cuGraphDestroy(graph[0])
            self._free_resources(keep)
            raise self._fail(code, "cuStreamEndCapture")
        exec_handle = self._ffi.new("CUgraphExec *")
        code = lib.cuGraphInstantiateWithFlags(exec_handle, graph[0], 0)
        # The executable graph is independent of the graph it was made from.
        lib.cuGraphDestroy(graph[0])
        if code != 0:
            self._free_resources(keep)
            raise self._fail(code, "cuGraphInstantiateWithFlags")
        return DriverGraph(_Graph(exec_handle[0], keep))

    def capture_abort(self, stream: DriverStream) -> None:
        s = cast(_Stream, stream)
        keep, s.capture_keep = s.capture_keep, None
        lib = self._lib
        if self._dead is None:
            self._enter_slow_unchecked()
        status = self._ffi.new("CUstreamCaptureStatus *")
        if (
            lib.cuStreamIsCapturing(s.handle, status) == 0
            and int(status[0]) != _CU_STREAM_CAPTURE_STATUS_NONE
        ):
            graph = self._ffi.new("CUgraph *")
            lib.cuStreamEndCapture(s.handle, graph)  # fails when invalidated: nothing to keep
            if graph[0] != self._ffi.NULL:
                lib.cuGraphDestroy(graph[0])
        if keep is not None:
            self._free_resources(keep)  # never ran: nothing on the device uses it

    def graph_launch(self, graph: DriverGraph, stream: DriverStream) -> None:
        g = cast(_Graph, graph)
        s = cast(_Stream, stream)
        if self._dead is not None or getattr(_current, "ctx", None) is not self._ctx:
            self._enter_slow("cuGraphLaunch")
        code = self._lib.cuGraphLaunch(g.exec, s.handle)
        if code != 0:
            raise self._fail(code, "cuGraphLaunch")
        if g.resources:
            g.streams.add(s)
            s.graphs.add(g)

    def graph_destroy(self, graph: DriverGraph) -> None:
        g = cast(_Graph, graph)
        if not self._enter_release():
            return
        code = self._lib.cuGraphExecDestroy(g.exec)
        if g.resources:
            events = g.pending_events
            for s in g.streams:
                event = self._fence(s)
                if event is not None:
                    events.append(event)
                s.graphs.discard(g)
            g.streams.clear()
            self._retire(events, g.resources)
            g.resources = _Resources()
        self._check(code, "cuGraphExecDestroy")


def _pack_args(ffi: Any, args: Sequence[Any]) -> tuple[CData, CData]:
    """The ``void**`` kernelParams array and the buffer its pointers point into."""
    values: list[bytes] = []
    for arg in args:
        if isinstance(arg, np.generic):
            values.append(arg.tobytes())
        elif isinstance(arg, (bytes, bytearray, memoryview)):
            values.append(bytes(arg))
        else:  # a DevicePtr: the core validated it; int() is its address
            values.append(int(arg).to_bytes(8, "little"))
    offsets = []
    total = 0
    for value in values:
        offsets.append(total)
        total += (len(value) + 15) & ~15 or 16
    blob = ffi.new("char[]", max(total, 1))
    params = ffi.new("void *[]", max(len(values), 1))
    for index, (offset, value) in enumerate(zip(offsets, values, strict=True)):
        ffi.memmove(blob + offset, value, len(value))
        params[index] = blob + offset
    return params, blob
