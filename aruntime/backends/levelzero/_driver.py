"""The Level Zero driver: the only module that calls into the C library.

How the driver contract maps onto Level Zero (API 1.4, what Debian's loader
routes):

Streams
    A stream is an immediate command list on the device's compute queue group,
    plus a second immediate list on a copy-only queue group when the device has
    one.  Copies and fills go to the copy list and kernels to the compute list,
    so a copy on one stream overlaps a kernel on another on separate engines.
    The two lists of a stream stay one in-order sequence: when the stream's
    next op goes to the other list, the previous list signals a per-stream
    "hand-over" event with a barrier and the next list waits on it and resets it
    on the device (one event per direction, so a reset always precedes the
    next signal).  Level Zero 1.4 command lists are not in-order by default, so
    a barrier separates consecutive ops on one list.
Events
    A driver event (:class:`_Event`) is not a Level Zero event: it points at
    the pooled ze event of its latest record.  Each ``event_record`` takes a
    fresh ze event from recycled host-visible pools and appends a barrier that
    signals it; the previous one goes back to the pool.  So a
    ``stream_wait_event`` or a host wait queued before a re-record keeps
    waiting for the record that was current when it was called (CUDA's
    semantics), where resetting one ze event per record would make it wait
    for the new record, and a pipeline that re-records its events each chunk
    would deadlock.  When a pooled ze event may be reset and reused is
    :class:`_EventPool`'s business (see there).  A pool is created only when
    all events are in use, never per op.  ``event_wait`` is
    ``zeEventHostSynchronize(UINT64_MAX)`` (the core calls it on its own
    waiter threads; cffi releases the GIL).  Timing events come from pools
    with ``ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP``, and ``elapsed_ms``
    subtracts their global kernel timestamps.
Graphs
    ``capture_begin`` switches the stream to recording into a regular command
    list, ``capture_end`` closes it.  ``graph_launch`` records a "ready" event
    on the stream and hands the launch to one launcher thread per device, which
    waits for it, runs ``zeCommandQueueExecuteCommandLists`` with a fence,
    waits for the fence and signals a per-launch "done" event that the stream
    waits on (then resets on the device, which tells the pool the event is
    free again).  Launches of any graph on one device run one at a time, in
    launch order.  A replay that fails is reported by the waiter of the
    replay's own Completion (the next event recorded on that stream); the
    stream is still released, so nothing waits forever.
Modules
    SPIR-V when the image starts with the SPIR-V magic number, else a native
    binary (``ZE_MODULE_FORMAT_NATIVE``: a device binary on a GPU, a host shared
    object on the sim).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

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
    BackendUnavailableError,
    DriverError,
    InvalidArgumentError,
    NotSupportedError,
)
from ..._kernel_args import check_arg_count, describe_arg
from . import _errors
from ._errors import ZE_RESULT_NOT_READY, ZE_RESULT_SUCCESS
from ._ffi import ffi
from ._library import ZeLibrary

__all__ = ["LevelZeroDriver", "list_devices", "loader_components", "open_driver", "probe"]

UINT64_MAX = 0xFFFFFFFFFFFFFFFF
_SPIRV_MAGIC = 0x07230203
_ALIGNMENT = 256  # what CUDA guarantees; kernels written for both may rely on it
_POOL_SIZE = 64

# ze_structure_type_t values (checked against ze_api.h with the declarations).
_ST_DRIVER_PROPERTIES = 0x1
_ST_DEVICE_PROPERTIES = 0x3
_ST_DEVICE_COMPUTE_PROPERTIES = 0x4
_ST_COMMAND_QUEUE_GROUP_PROPERTIES = 0x6
_ST_DEVICE_MEMORY_PROPERTIES = 0x7
_ST_CONTEXT_DESC = 0xD
_ST_COMMAND_QUEUE_DESC = 0xE
_ST_COMMAND_LIST_DESC = 0xF
_ST_EVENT_POOL_DESC = 0x10
_ST_EVENT_DESC = 0x11
_ST_FENCE_DESC = 0x12
_ST_DEVICE_MEM_ALLOC_DESC = 0x15
_ST_HOST_MEM_ALLOC_DESC = 0x16
_ST_MODULE_DESC = 0x1B
_ST_KERNEL_DESC = 0x1D
_ST_KERNEL_PROPERTIES = 0x1E

_GROUP_COMPUTE = 1
_GROUP_COPY = 2
_QUEUE_MODE_ASYNC = 2
_PRIORITY_NORMAL, _PRIORITY_LOW, _PRIORITY_HIGH = 0, 1, 2
_POOL_HOST_VISIBLE = 1
_POOL_KERNEL_TIMESTAMP = 4
_SCOPE_HOST = 4
_DEVICE_TYPE_VPU = 5
_FORMAT_SPIRV, _FORMAT_NATIVE = 0, 1
_INVALID_KERNEL_NAME = 0x78000011
_INVALID_KERNEL_ARGUMENT_INDEX = 0x78000015
_INVALID_KERNEL_ARGUMENT_SIZE = 0x78000016
_UNSUPPORTED_FEATURE = 0x78000003
_INDIRECT_ALL = 1 | 2 | 4  # host, device and shared allocations

#: One byte pattern per value, alive for the whole process: a fill may read
#: its pattern after the append returns.
_FILL_PATTERNS: Any = None


def _fill_pattern(value: int) -> Any:
    global _FILL_PATTERNS
    if _FILL_PATTERNS is None:
        _FILL_PATTERNS = ffi.new("uint8_t[256]", list(range(256)))
    return _FILL_PATTERNS + value


# -- process-wide platform state ----------------------------------------------


@dataclass
class _Platform:
    """The devices one loaded library exposes, found once after zeInit."""

    zl: ZeLibrary
    #: (driver handle, device handle) in device-index order.
    devices: list[tuple[Any, Any]]


_platforms: dict[int, _Platform] = {}
_platform_lock = threading.Lock()


def probe(zl: ZeLibrary) -> str | None:
    """zeInit(0) and device discovery; None when usable, else why not."""
    with _platform_lock:
        if id(zl.lib) in _platforms:
            return None
        lib = zl.lib
        try:
            init = lib.zeInit
        except AttributeError:
            return "it does not export zeInit (not a Level Zero library)"
        rc = init(0)
        if rc != ZE_RESULT_SUCCESS:
            cached = " (the loader keeps this result for the whole process)" if zl.is_loader else ""
            return f"zeInit(0) returned {_errors.result_name(rc)} ({rc:#x}){cached}"
        count = ffi.new("uint32_t*", 0)
        rc = lib.zeDriverGet(count, ffi.NULL)
        if rc != ZE_RESULT_SUCCESS:
            return f"zeDriverGet returned {_errors.result_name(rc)} ({rc:#x})"
        if count[0] == 0:
            return "zeInit succeeded but no Level Zero driver was found"
        drivers = ffi.new("ze_driver_handle_t[]", count[0])
        rc = lib.zeDriverGet(count, drivers)
        if rc != ZE_RESULT_SUCCESS:
            return f"zeDriverGet returned {_errors.result_name(rc)} ({rc:#x})"
        found: list[tuple[Any, Any]] = []
        for i in range(count[0]):
            ndev = ffi.new("uint32_t*", 0)
            if lib.zeDeviceGet(drivers[i], ndev, ffi.NULL) != ZE_RESULT_SUCCESS or not ndev[0]:
                continue
            devices = ffi.new("ze_device_handle_t[]", ndev[0])
            if lib.zeDeviceGet(drivers[i], ndev, devices) != ZE_RESULT_SUCCESS:
                continue
            for j in range(ndev[0]):
                props = _device_properties(lib, devices[j])
                # NPUs (VPU) speak Level Zero too but run no general kernels.
                if props is not None and props.type != _DEVICE_TYPE_VPU:
                    found.append((drivers[i], devices[j]))
        if not found:
            return "zeInit succeeded but no Level Zero GPU device was found"
        _platforms[id(zl.lib)] = _Platform(zl, found)
        return None


def _platform(zl: ZeLibrary) -> _Platform:
    with _platform_lock:
        return _platforms[id(zl.lib)]


def _device_properties(lib: Any, device: Any) -> Any:
    props = ffi.new("ze_device_properties_t*")
    props.stype = _ST_DEVICE_PROPERTIES
    if lib.zeDeviceGetProperties(device, props) != ZE_RESULT_SUCCESS:
        return None
    return props


def _device_info(zl: ZeLibrary, driver: Any, device: Any) -> DeviceInfo:
    lib = zl.lib
    props = _device_properties(lib, device)
    if props is None:
        raise BackendUnavailableError("zeDeviceGetProperties failed")
    total = _total_memory(lib, device) or int(props.maxMemAllocSize)
    units = int(props.numSlices * props.numSubslicesPerSlice * props.numEUsPerSubslice)
    dprops = ffi.new("ze_driver_properties_t*")
    dprops.stype = _ST_DRIVER_PROPERTIES
    version = ffi.new("ze_api_version_t*")
    extra = [
        ("vendor_id", f"{props.vendorId:#06x}"),
        ("device_id", f"{props.deviceId:#06x}"),
        ("library", zl.describe()),
    ]
    if lib.zeDriverGetProperties(driver, dprops) == ZE_RESULT_SUCCESS:
        extra.append(("driver_version", str(dprops.driverVersion)))
    if lib.zeDriverGetApiVersion(driver, version) == ZE_RESULT_SUCCESS:
        extra.append(("api_version", f"{int(version[0]) >> 16}.{int(version[0]) & 0xFFFF}"))
    return DeviceInfo(
        name=ffi.string(props.name).decode(errors="replace"),
        total_memory=total,
        compute_units=max(units, 1),
        extra=tuple(extra),
    )


def _total_memory(lib: Any, device: Any) -> int:
    count = ffi.new("uint32_t*", 0)
    if lib.zeDeviceGetMemoryProperties(device, count, ffi.NULL) != ZE_RESULT_SUCCESS:
        return 0
    if count[0] == 0:
        return 0
    props = ffi.new("ze_device_memory_properties_t[]", count[0])
    for i in range(count[0]):
        props[i].stype = _ST_DEVICE_MEMORY_PROPERTIES
    if lib.zeDeviceGetMemoryProperties(device, count, props) != ZE_RESULT_SUCCESS:
        return 0
    return sum(int(props[i].totalSize) for i in range(count[0]))


def list_devices(zl: ZeLibrary) -> list[DeviceInfo]:
    platform = _platform(zl)
    return [_device_info(zl, drv, dev) for drv, dev in platform.devices]


def open_driver(zl: ZeLibrary, device: int, backend_name: str) -> LevelZeroDriver:
    platform = _platform(zl)
    if not 0 <= device < len(platform.devices):
        raise InvalidArgumentError(
            f"{backend_name}: device {device} does not exist "
            f"({len(platform.devices)} device(s): 0..{len(platform.devices) - 1})"
        )
    drv = LevelZeroDriver(zl, *platform.devices[device], backend_name=backend_name)
    drv.ordinal = device
    return drv


def loader_components(zl: ZeLibrary) -> dict[str, str]:
    """The loader's component versions (``"loader"``, ``"validation layer"``...).

    Empty for a directly loaded driver, which has no loader.
    """
    if not zl.is_loader:
        return {}
    count = ffi.new("size_t*", 0)
    if zl.lib.zelLoaderGetVersions(count, ffi.NULL) != ZE_RESULT_SUCCESS or not count[0]:
        return {}
    versions = ffi.new("zel_component_version_t[]", count[0])
    if zl.lib.zelLoaderGetVersions(count, versions) != ZE_RESULT_SUCCESS:
        return {}
    out: dict[str, str] = {}
    for i in range(count[0]):
        v = versions[i].component_lib_version
        out[ffi.string(versions[i].component_name).decode()] = f"{v.major}.{v.minor}.{v.patch}"
    return out


# -- handle objects -------------------------------------------------------------


@dataclass(eq=False)
class _ZeEvent:
    """One pooled Level Zero event."""

    handle: Any
    timing: bool
    #: Recorded at least once since it left the pool (a never-recorded event is complete).
    recorded: bool = False
    #: For graph "done" events: the launcher has signalled it.
    fired: bool = False
    #: The stream of the last record and its position there.
    stream: _ZeStream | None = None
    position: int = 0
    #: References that keep it out of the pool (see :class:`_EventPool`).
    holds: int = 0


@dataclass(eq=False)
class _Event:
    """A driver event: the pooled ze event of its latest record, or None before the first."""

    timing: bool
    current: _ZeEvent | None = None
    #: Guards ``current``; taken before a pool's lock, never after.
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(eq=False)
class _List:
    """A command list and whether an op was appended since its last barrier."""

    handle: Any
    unordered: bool = False


@dataclass(eq=False)
class _ZeStream:
    compute: _List
    copy: _List | None
    #: Hand-over events: compute -> copy, copy -> compute.
    to_copy: _ZeEvent | None
    to_compute: _ZeEvent | None
    last: _List | None = None
    capture: _List | None = None
    #: Pooled events the capture records or waits for, held for the graph's life.
    captured_events: list[_ZeEvent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Events recorded so far: orders graph failures against later records.
    records: int = 0
    #: (records at launch, error) of graph replays that failed.
    failures: list[tuple[int, DriverError]] = field(default_factory=list)
    destroyed: bool = False


@dataclass(eq=False)
class _ZeKernel:
    handle: Any
    name: str
    num_args: int | None = None  # from zeKernelGetProperties; None: unknown
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(eq=False)
class _ZeModule:
    handle: Any
    kernels: dict[str, _ZeKernel] = field(default_factory=dict)


@dataclass(eq=False)
class _ZeGraph:
    command_list: Any
    #: Pooled events that every replay signals or waits for (released with the graph).
    events: list[_ZeEvent] = field(default_factory=list)
    pending: int = 0
    destroyed: bool = False


class _EventPool:
    """Host-visible events, recycled; a new ``ze_event_pool`` only when all are in use.

    When a ze event may be reset and reused: only when nothing can still
    signal it or wait for it.  ``holds`` counts who might:

    * the driver event whose latest record it is (until the next record, or
      the event's destruction, replaces it), and whoever acquired a raw one
      (hand-over, marker and graph events) until it releases it;
    * each host wait (``event_wait``, ``elapsed_ms``) while it runs;
    * each device-side wait (``stream_wait_event``).  The host cannot see when
      a queued barrier has passed, so the waiting barrier signals a pooled
      "passed" event of its own, and the pair goes on ``_guards``: the waited
      event is held until the passed event is signalled.  Resetting it
      earlier would let a barrier still queued behind slow work find it
      unsignalled and wait for a record made after the wait call (a
      deadlock in a pipeline whose streams wait on each other's records).

    With no holds left, an event waits on ``_deferred`` until its pending
    signal (if any) has landed, since a reset before it would be undone by
    it.  Only then is it free, and it is reset on the host when acquired
    again.  A capture holds the events it records or waits for until its
    graph is destroyed: every replay uses them.
    """

    def __init__(self, drv: LevelZeroDriver, timing: bool) -> None:
        self._drv = drv
        self._timing = timing
        self._pools: list[Any] = []
        self._events: list[_ZeEvent] = []
        self._free: list[_ZeEvent] = []
        #: No holds left, but a signal may still land on them.
        self._deferred: list[_ZeEvent] = []
        #: (passed, waited): ``waited`` is held until ``passed`` is signalled.
        self._guards: list[tuple[_ZeEvent, _ZeEvent]] = []
        self._lock = threading.Lock()

    def acquire(self) -> _ZeEvent:
        """A reset event with one hold, the caller's."""
        with self._lock:
            if not self._free:
                self._sweep()
            if not self._free:
                self._grow()
            event = self._free.pop()
            event.holds = 1
        try:
            self._drv._check(self._drv._lib.zeEventHostReset(event.handle), "zeEventHostReset")
        except DriverError:
            self.release(event)
            raise
        event.recorded = False
        event.fired = False
        event.stream = None
        return event

    def hold(self, event: _ZeEvent) -> None:
        """One more hold on an event the caller knows is held (it cannot be free now)."""
        with self._lock:
            event.holds += 1

    def release(self, event: _ZeEvent) -> None:
        """Drop one hold; with none left, the event returns to the pool once signalled."""
        with self._lock:
            self._drop(event)

    def guard(self, passed: _ZeEvent, waited: _ZeEvent) -> None:
        """Keep ``waited`` until ``passed`` is signalled; takes over one hold of each."""
        with self._lock:
            self._guards.append((passed, waited))

    def _drop(self, event: _ZeEvent) -> None:
        event.holds -= 1
        if event.holds == 0:
            self._deferred.append(event)

    def _sweep(self) -> None:
        lib = self._drv._lib
        guards: list[tuple[_ZeEvent, _ZeEvent]] = []
        for passed, waited in self._guards:
            if lib.zeEventQueryStatus(passed.handle) == ZE_RESULT_NOT_READY:
                guards.append((passed, waited))
            else:  # the waiting barrier has passed: nothing waits on ``waited`` now
                self._drop(waited)
                self._drop(passed)
        self._guards = guards
        still: list[_ZeEvent] = []
        for event in self._deferred:
            status = lib.zeEventQueryStatus(event.handle)
            if event.fired:
                # A graph "done" event is free once the waiting stream reset it.
                free = status == ZE_RESULT_NOT_READY
            else:
                free = not event.recorded or status != ZE_RESULT_NOT_READY
            (self._free if free else still).append(event)
        self._deferred = still

    def _grow(self) -> None:
        drv = self._drv
        desc = ffi.new("ze_event_pool_desc_t*")
        desc.stype = _ST_EVENT_POOL_DESC
        desc.flags = _POOL_HOST_VISIBLE | (_POOL_KERNEL_TIMESTAMP if self._timing else 0)
        desc.count = _POOL_SIZE
        devices = ffi.new("ze_device_handle_t[1]", [drv._device])
        pool = ffi.new("ze_event_pool_handle_t*")
        drv._check(
            drv._lib.zeEventPoolCreate(drv._context, desc, 1, devices, pool), "zeEventPoolCreate"
        )
        self._pools.append(pool[0])
        edesc = ffi.new("ze_event_desc_t*")
        edesc.stype = _ST_EVENT_DESC
        edesc.signal = _SCOPE_HOST
        edesc.wait = _SCOPE_HOST
        for index in range(_POOL_SIZE):
            edesc.index = index
            handle = ffi.new("ze_event_handle_t*")
            drv._check(drv._lib.zeEventCreate(pool[0], edesc, handle), "zeEventCreate")
            event = _ZeEvent(handle[0], self._timing)
            self._events.append(event)
            self._free.append(event)

    def destroy(self) -> None:
        lib = self._drv._lib
        with self._lock:
            for event in self._events:
                lib.zeEventDestroy(event.handle)
            for pool in self._pools:
                lib.zeEventPoolDestroy(pool)
            self._events.clear()
            self._pools.clear()
            self._free.clear()
            self._deferred.clear()
            self._guards.clear()


# -- the driver --------------------------------------------------------------------


class LevelZeroDriver(Driver):
    """One Level Zero device, its context and everything made in it."""

    synchronous = False
    supports_timing = True

    def __init__(self, zl: ZeLibrary, driver: Any, device: Any, *, backend_name: str) -> None:
        self.backend_name = backend_name
        self._zl = zl
        self._lib = zl.lib
        self._driver = driver
        self._device = device
        self._info = _device_info(zl, driver, device)
        props = _device_properties(self._lib, device)
        self._timer_ns = float(props.timerResolution) or 1.0
        bits = int(props.kernelTimestampValidBits)
        self._ts_mask = (1 << bits) - 1 if 0 < bits < 64 else UINT64_MAX
        bits = int(props.timestampValidBits)
        self._global_mask = (1 << bits) - 1 if 0 < bits < 64 else UINT64_MAX
        self._compute_ordinal, self._compute_queues, self._copy_ordinal, self._copy_queues = (
            self._queue_groups()
        )
        desc = ffi.new("ze_context_desc_t*")
        desc.stype = _ST_CONTEXT_DESC
        context = ffi.new("ze_context_handle_t*")
        self._check(self._lib.zeContextCreate(driver, desc, context), "zeContextCreate")
        self._context = context[0]
        self._lock = threading.Lock()
        self._sizes: dict[int, int] = {}
        self._used = 0
        self._next_queue = 0
        self._events = _EventPool(self, timing=False)
        self._timed_events = _EventPool(self, timing=True)
        self._launcher: _GraphLauncher | None = None
        self._streams: set[_ZeStream] = set()
        self._closed = False

    # -- helpers ---------------------------------------------------------------
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
        """The portable kernels: a host shared object on the sim, SPIR-V on a device."""
        from ..._kernel_images import host_image, spirv_image

        image = host_image(name) if self._runs_sim() else spirv_image(name)
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

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Streams the core has not destroyed yet (a closed stream's waiter may
        # still be draining): Level Zero lists must go before their context.
        with self._lock:
            left = list(self._streams)
        for s in left:
            with contextlib.suppress(DriverError):  # a lost device: the context takes the rest
                self._destroy_stream(s)
        if self._launcher is not None:
            self._launcher.stop()
            self._launcher = None
        self._events.destroy()
        self._timed_events.destroy()
        self._lib.zeContextDestroy(self._context)

    # -- memory --------------------------------------------------------------------
    def _device_desc(self) -> Any:
        desc = ffi.new("ze_device_mem_alloc_desc_t*")
        desc.stype = _ST_DEVICE_MEM_ALLOC_DESC
        return desc

    def _host_desc(self) -> Any:
        desc = ffi.new("ze_host_mem_alloc_desc_t*")
        desc.stype = _ST_HOST_MEM_ALLOC_DESC
        return desc

    def _track(self, address: int, nbytes: int) -> int:
        with self._lock:
            self._sizes[address] = nbytes
            self._used += nbytes
        return address

    def mem_alloc(self, nbytes: int) -> int:
        out = ffi.new("void**")
        self._check(
            self._lib.zeMemAllocDevice(
                self._context, self._device_desc(), nbytes, _ALIGNMENT, self._device, out
            ),
            "zeMemAllocDevice",
            f"{nbytes} bytes",
        )
        return self._track(int(ffi.cast("uintptr_t", out[0])), nbytes)

    def mem_alloc_managed(self, nbytes: int) -> int:
        out = ffi.new("void**")
        self._check(
            self._lib.zeMemAllocShared(
                self._context,
                self._device_desc(),
                self._host_desc(),
                nbytes,
                _ALIGNMENT,
                self._device,
                out,
            ),
            "zeMemAllocShared",
            f"{nbytes} bytes",
        )
        return self._track(int(ffi.cast("uintptr_t", out[0])), nbytes)

    def mem_free(self, address: int) -> None:
        self._check(self._lib.zeMemFree(self._context, ffi.cast("void*", address)), "zeMemFree")
        with self._lock:
            self._used -= self._sizes.pop(address, 0)

    def host_alloc(self, nbytes: int) -> tuple[int, memoryview]:
        out = ffi.new("void**")
        self._check(
            self._lib.zeMemAllocHost(self._context, self._host_desc(), nbytes, _ALIGNMENT, out),
            "zeMemAllocHost",
            f"{nbytes} bytes",
        )
        address = int(ffi.cast("uintptr_t", out[0]))
        return address, memoryview(ffi.buffer(out[0], nbytes)).cast("B")

    def host_free(self, address: int) -> None:
        self._check(self._lib.zeMemFree(self._context, ffi.cast("void*", address)), "zeMemFree")

    def host_device_address(self, host_address: int) -> int:
        # USM host allocations are device-accessible at the same address.
        return host_address

    # -- streams --------------------------------------------------------------------
    def priority_range(self) -> tuple[int, int]:
        # Level Zero has three queue priorities; the core's convention is that
        # a larger number runs first: -1 = low, 0 = normal, 1 = high.
        return (-1, 1)

    def _immediate_list(self, ordinal: int, queues: int, priority: int) -> _List:
        desc = ffi.new("ze_command_queue_desc_t*")
        desc.stype = _ST_COMMAND_QUEUE_DESC
        desc.ordinal = ordinal
        with self._lock:
            desc.index = self._next_queue % queues
            self._next_queue += 1
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
                finally:
                    self._events.release(marker)
            self._lib.zeCommandListDestroy(s.compute.handle)
            if s.copy is not None:
                self._lib.zeCommandListDestroy(s.copy.handle)
            for event in (s.to_copy, s.to_compute):
                if event is not None:
                    self._events.release(event)

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
        s = cast(_ZeStream, stream)
        with s.lock:
            target = self._target(s, copy_op)
            if target.unordered:
                self._barrier(target)
            self._check(op(target.handle), name)
            target.unordered = True

    # -- events ---------------------------------------------------------------------
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
        e = cast(_Event, event)
        s = cast(_ZeStream, stream)
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

    def event_query(self, event: DriverEvent) -> bool:
        e = cast(_Event, event)
        with e.lock:  # the event's hold keeps its current ze event from being reused
            current = e.current
            if current is None:
                return True
            rc = self._lib.zeEventQueryStatus(current.handle)
        if rc == ZE_RESULT_NOT_READY:
            return False
        self._check(rc, "zeEventQueryStatus")
        return True

    def event_wait(self, event: DriverEvent) -> None:
        e = cast(_Event, event)
        current = self._held_current(e)
        if current is None:
            return
        try:
            self._wait_recorded(current)
        finally:
            self._pool(e.timing).release(current)

    def _wait_recorded(self, z: _ZeEvent) -> None:
        self._check(
            self._lib.zeEventHostSynchronize(z.handle, UINT64_MAX), "zeEventHostSynchronize"
        )
        s = z.stream
        if s is not None and s.failures:
            # A graph replay that failed before this record: its error belongs
            # to the first event recorded after it (the replay's own Completion).
            with s.lock:
                due = [f for f in s.failures if f[0] <= z.position]
                s.failures = [f for f in s.failures if f[0] > z.position]
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

    # -- async ops --------------------------------------------------------------------
    def memcpy_h2d(self, src: memoryview, dst: int, stream: DriverStream) -> None:
        host = _host_address(src)
        self._append(
            stream,
            True,
            lambda h: self._lib.zeCommandListAppendMemoryCopy(
                h,
                ffi.cast("void*", dst),
                ffi.cast("void*", host),
                src.nbytes,
                ffi.NULL,
                0,
                ffi.NULL,
            ),
            "zeCommandListAppendMemoryCopy",
        )

    def memcpy_d2h(self, src: int, dst: memoryview, stream: DriverStream) -> None:
        host = _host_address(dst, writable=True)
        self._append(
            stream,
            True,
            lambda h: self._lib.zeCommandListAppendMemoryCopy(
                h,
                ffi.cast("void*", host),
                ffi.cast("void*", src),
                dst.nbytes,
                ffi.NULL,
                0,
                ffi.NULL,
            ),
            "zeCommandListAppendMemoryCopy",
        )

    def memcpy_d2d(self, src: int, dst: int, nbytes: int, stream: DriverStream) -> None:
        self._append(
            stream,
            True,
            lambda h: self._lib.zeCommandListAppendMemoryCopy(
                h, ffi.cast("void*", dst), ffi.cast("void*", src), nbytes, ffi.NULL, 0, ffi.NULL
            ),
            "zeCommandListAppendMemoryCopy",
        )

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
        limit = 0xFFFFFFFF
        for what, value in (
            ("src_pitch", src_pitch),
            ("dst_pitch", dst_pitch),
            ("width_bytes", width_bytes),
            ("height", height),
            ("src slice", src_pitch * height),
            ("dst slice", dst_pitch * height),
        ):
            if value > limit:
                raise NotSupportedError(
                    f"copy_d2d_2d_async: {what} {value} exceeds Level Zero's 32-bit copy "
                    f"region limit {limit}",
                    backend=self.backend_name,
                    function="zeCommandListAppendMemoryCopyRegion",
                )
        region = ffi.new("ze_copy_region_t*", [0, 0, 0, width_bytes, height, 1])
        self._append(
            stream,
            True,
            lambda h: self._lib.zeCommandListAppendMemoryCopyRegion(
                h,
                ffi.cast("void*", dst),
                region,
                dst_pitch,
                dst_pitch * height,
                ffi.cast("void*", src),
                region,
                src_pitch,
                src_pitch * height,
                ffi.NULL,
                0,
                ffi.NULL,
            ),
            "zeCommandListAppendMemoryCopyRegion",
        )

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: DriverStream) -> None:
        pattern = _fill_pattern(value & 0xFF)
        self._append(
            stream,
            True,
            lambda h: self._lib.zeCommandListAppendMemoryFill(
                h, ffi.cast("void*", dst), pattern, 1, nbytes, ffi.NULL, 0, ffi.NULL
            ),
            "zeCommandListAppendMemoryFill",
        )

    # -- modules and kernels --------------------------------------------------------
    @staticmethod
    def image_format(image: bytes | bytearray | memoryview) -> int:
        """``ZE_MODULE_FORMAT_IL_SPIRV`` for a SPIR-V image, else ``ZE_MODULE_FORMAT_NATIVE``."""
        head = bytes(memoryview(image)[:4])
        if len(head) == 4 and _SPIRV_MAGIC in (
            int.from_bytes(head, "little"),
            int.from_bytes(head, "big"),
        ):
            return _FORMAT_SPIRV
        return _FORMAT_NATIVE

    def module_load(self, image: Any) -> DriverModule:
        desc = ffi.new("ze_module_desc_t*")
        desc.stype = _ST_MODULE_DESC
        desc.format = self.image_format(image)
        desc.pBuildFlags = ffi.new("char[]", b"")
        module = ffi.new("ze_module_handle_t*")
        log = ffi.new("ze_module_build_log_handle_t*")
        data = ffi.from_buffer("uint8_t[]", image)
        try:  # zeModuleCreate copies the image: release the buffer export at once
            desc.inputSize = len(data)
            desc.pInputModule = data
            rc = self._lib.zeModuleCreate(self._context, self._device, desc, module, log)
        finally:
            ffi.release(data)
        text = self._build_log(log[0])
        kind = "SPIR-V" if desc.format == _FORMAT_SPIRV else "native"
        size = int(desc.inputSize)
        self._check(rc, "zeModuleCreate", f"{kind} image of {size} bytes. {text}".strip())
        return cast(DriverModule, _ZeModule(module[0]))

    def _build_log(self, log: Any) -> str:
        if log == ffi.NULL:
            return ""
        try:
            size = ffi.new("size_t*", 0)
            if self._lib.zeModuleBuildLogGetString(log, size, ffi.NULL) or not size[0]:
                return ""
            buf = ffi.new("char[]", size[0])
            if self._lib.zeModuleBuildLogGetString(log, size, buf):
                return ""
            text: str = ffi.string(buf).decode(errors="replace").strip()
            return f"build log: {text}" if text else ""
        finally:
            self._lib.zeModuleBuildLogDestroy(log)

    def module_unload(self, module: DriverModule) -> None:
        m = cast(_ZeModule, module)
        # Kernels must go before their module.
        for kernel in m.kernels.values():
            self._lib.zeKernelDestroy(kernel.handle)
        m.kernels.clear()
        self._check(self._lib.zeModuleDestroy(m.handle), "zeModuleDestroy")

    def module_function(self, module: DriverModule, name: str) -> DriverFunction:
        m = cast(_ZeModule, module)
        with self._lock:
            cached = m.kernels.get(name)
        if cached is not None:
            return cast(DriverFunction, cached)
        desc = ffi.new("ze_kernel_desc_t*")
        desc.stype = _ST_KERNEL_DESC
        cname = ffi.new("char[]", name.encode())
        desc.pKernelName = cname
        out = ffi.new("ze_kernel_handle_t*")
        rc = self._lib.zeKernelCreate(m.handle, desc, out)
        if rc == _INVALID_KERNEL_NAME:
            raise InvalidArgumentError(f"kernel: the module has no kernel named {name!r}")
        self._check(rc, "zeKernelCreate", repr(name))
        self._allow_indirect_access(out[0])
        kernel = _ZeKernel(out[0], name, self._num_args(out[0]))
        with self._lock:
            existing = m.kernels.setdefault(name, kernel)
        if existing is not kernel:
            self._lib.zeKernelDestroy(kernel.handle)
        return cast(DriverFunction, existing)

    def _num_args(self, kernel: Any) -> int | None:
        """The kernel's argument count, or None where the driver does not say."""
        try:
            get_properties = self._lib.zeKernelGetProperties
        except AttributeError:  # a directly loaded driver that lacks it
            return None
        props = ffi.new("ze_kernel_properties_t*")
        props.stype = _ST_KERNEL_PROPERTIES
        if get_properties(kernel, props) != ZE_RESULT_SUCCESS:
            return None
        return int(props.numKernelArgs)

    def _allow_indirect_access(self, kernel: Any) -> None:
        """Let the kernel reach every USM allocation, not only its arguments.

        A kernel that follows a pointer stored in device memory faults on an
        Intel GPU unless its allocation kinds are declared (SYCL declares all
        three).  A driver without the call (the sim) needs no declaration.
        """
        try:
            set_access = self._lib.zeKernelSetIndirectAccess
        except AttributeError:  # a directly loaded driver that lacks it
            return
        rc = set_access(kernel, _INDIRECT_ALL)
        if rc not in (ZE_RESULT_SUCCESS, _UNSUPPORTED_FEATURE):
            self._check(rc, "zeKernelSetIndirectAccess")

    def launch(
        self,
        function: DriverFunction,
        config: LaunchConfig,
        args: Sequence[Any],
        stream: DriverStream,
    ) -> None:
        k = cast(_ZeKernel, function)
        if config.shared_mem:
            raise NotSupportedError(
                f"launch: shared_mem={config.shared_mem}: Level Zero has no per-launch dynamic "
                "shared memory; declare local memory in the kernel instead",
                backend=self.backend_name,
                function="zeCommandListAppendLaunchKernel",
            )
        # A kernel launched with arguments left unset would read whatever
        # an earlier launch left there, so the count is checked first.
        if k.num_args is not None:
            check_arg_count(k.name, k.num_args, args)
        groups = ffi.new("ze_group_count_t*", list(config.grid))
        values = [_arg_bytes(arg) for arg in args]
        # The argument values live on the kernel object until the append
        # copies them: one launch of a kernel at a time.
        with k.lock:
            self._check(
                self._lib.zeKernelSetGroupSize(k.handle, *config.block),
                "zeKernelSetGroupSize",
                f"kernel {k.name!r}, block {config.block}",
            )
            for index, (value, size) in enumerate(values):
                rc = self._lib.zeKernelSetArgumentValue(k.handle, index, size, value)
                if rc == _INVALID_KERNEL_ARGUMENT_SIZE:
                    raise InvalidArgumentError(
                        f"launch: kernel {k.name!r} argument {index}: the driver rejects "
                        f"its size, {size} bytes ({describe_arg(args[index])}), as not the "
                        "parameter's size"
                    )
                if rc == _INVALID_KERNEL_ARGUMENT_INDEX:
                    raise InvalidArgumentError(
                        f"launch: kernel {k.name!r} takes fewer than {len(args)} arguments"
                    )
                self._check(rc, "zeKernelSetArgumentValue", f"kernel {k.name!r}, argument {index}")
            self._append(
                stream,
                False,
                lambda h: self._lib.zeCommandListAppendLaunchKernel(
                    h, k.handle, groups, ffi.NULL, 0, ffi.NULL
                ),
                "zeCommandListAppendLaunchKernel",
            )

    # -- graphs -------------------------------------------------------------------------
    def capture_begin(self, stream: DriverStream) -> None:
        s = cast(_ZeStream, stream)
        desc = ffi.new("ze_command_list_desc_t*")
        desc.stype = _ST_COMMAND_LIST_DESC
        desc.commandQueueGroupOrdinal = self._compute_ordinal
        out = ffi.new("ze_command_list_handle_t*")
        self._check(
            self._lib.zeCommandListCreate(self._context, self._device, desc, out),
            "zeCommandListCreate",
        )
        with s.lock:
            s.capture = _List(out[0])

    def capture_end(self, stream: DriverStream) -> DriverGraph:
        s = cast(_ZeStream, stream)
        with s.lock:
            captured, s.capture = s.capture, None
            events, s.captured_events = s.captured_events, []
        if captured is None:
            raise InvalidArgumentError("end_capture: the stream is not capturing")
        rc = self._lib.zeCommandListClose(captured.handle)
        if rc != ZE_RESULT_SUCCESS:
            self._lib.zeCommandListDestroy(captured.handle)
            self._release_all(events)
            self._check(rc, "zeCommandListClose")
        return cast(DriverGraph, _ZeGraph(captured.handle, events))

    def _release_all(self, events: Sequence[_ZeEvent]) -> None:
        for z in events:
            self._pool(z.timing).release(z)

    def capture_abort(self, stream: DriverStream) -> None:
        s = cast(_ZeStream, stream)
        with s.lock:
            captured, s.capture = s.capture, None
            events, s.captured_events = s.captured_events, []
        if captured is not None:
            self._lib.zeCommandListDestroy(captured.handle)
        self._release_all(events)

    def graph_launch(self, graph: DriverGraph, stream: DriverStream) -> None:
        g = cast(_ZeGraph, graph)
        s = cast(_ZeStream, stream)
        if s.capture is not None:
            raise NotSupportedError(
                "launch_graph: Level Zero 1.4 cannot replay a command list inside another "
                "one, so a graph cannot be launched into a capture",
                backend=self.backend_name,
                function="zeCommandQueueExecuteCommandLists",
            )
        with self._lock:
            if self._launcher is None:
                self._launcher = _GraphLauncher(self)
            launcher = self._launcher
        ready = self._events.acquire()
        done = self._events.acquire()
        with s.lock:
            tail = self._tail(s)
            self._barrier(tail, signal=ready)
            ready.recorded = True
            self._barrier(tail, wait=[done])
            # Reset on the device once passed: that tells the pool it is free.
            self._check(
                self._lib.zeCommandListAppendEventReset(tail.handle, done.handle),
                "zeCommandListAppendEventReset",
            )
            done.recorded = True
            position = s.records
        with self._lock:
            g.pending += 1
        launcher.submit(ready, g, done, s, position)

    def graph_destroy(self, graph: DriverGraph) -> None:
        g = cast(_ZeGraph, graph)
        with self._lock:
            g.destroyed = True
            now = g.pending == 0
        if now:
            self._release_all(g.events)
            self._check(self._lib.zeCommandListDestroy(g.command_list), "zeCommandListDestroy")

    # -- launcher callbacks (on the launcher thread) ------------------------------
    def _run_graph(
        self,
        ready: _ZeEvent,
        graph: _ZeGraph,
        done: _ZeEvent,
        stream: _ZeStream,
        position: int,
        queue_: Any,
        fence: Any,
    ) -> None:
        lib = self._lib
        try:
            rc = lib.zeEventHostSynchronize(ready.handle, UINT64_MAX)
            self._events.release(ready)
            if rc == ZE_RESULT_SUCCESS:
                rc = lib.zeFenceReset(fence)
            if rc == ZE_RESULT_SUCCESS:
                lists = ffi.new("ze_command_list_handle_t[1]", [graph.command_list])
                rc = lib.zeCommandQueueExecuteCommandLists(queue_, 1, lists, fence)
                function = "zeCommandQueueExecuteCommandLists"
                if rc == ZE_RESULT_SUCCESS:
                    rc = lib.zeFenceHostSynchronize(fence, UINT64_MAX)
                    function = "zeFenceHostSynchronize"
            else:
                function = "zeEventHostSynchronize"
            if rc != ZE_RESULT_SUCCESS:
                error = _errors.error_for(rc, function, self.backend_name, "graph replay")
                with stream.lock:
                    stream.failures.append((position, error))
        finally:
            # Signal even on failure: nothing may wait forever on a failed op.
            done.fired = True
            lib.zeEventHostSignal(done.handle)
            self._events.release(done)
            with self._lock:
                graph.pending -= 1
                destroy = graph.destroyed and graph.pending == 0
            if destroy:
                self._release_all(graph.events)
                lib.zeCommandListDestroy(graph.command_list)


def _host_address(view: memoryview, *, writable: bool = False) -> int:
    """The address of a host buffer, without keeping a buffer export open.

    The core keeps the buffer itself alive until the op is done.  An open
    export held by a cffi object that ends up in a traceback (a failed
    append) forms a cycle the garbage collector cannot clear safely.
    """
    buf = ffi.from_buffer(view, require_writable=writable)
    try:
        return int(ffi.cast("uintptr_t", buf))
    finally:
        ffi.release(buf)


def _arg_bytes(arg: Any) -> tuple[Any, int]:
    """A kernel argument's value and size: numpy scalar, raw bytes or a device pointer."""
    if isinstance(arg, np.generic):
        raw = arg.tobytes()
        return ffi.from_buffer(raw), len(raw)
    if isinstance(arg, (bytes, bytearray, memoryview)):
        raw = bytes(arg)
        return ffi.from_buffer(raw), len(raw)
    return ffi.new("uint64_t*", int(arg)), 8  # a DevicePtr: its 8-byte address


class _GraphLauncher:
    """One thread per device that replays graphs in launch order (see the module docstring)."""

    def __init__(self, drv: LevelZeroDriver) -> None:
        self._drv = drv
        lib = drv._lib
        desc = ffi.new("ze_command_queue_desc_t*")
        desc.stype = _ST_COMMAND_QUEUE_DESC
        desc.ordinal = drv._compute_ordinal
        desc.mode = _QUEUE_MODE_ASYNC
        out = ffi.new("ze_command_queue_handle_t*")
        drv._check(
            lib.zeCommandQueueCreate(drv._context, drv._device, desc, out), "zeCommandQueueCreate"
        )
        self._queue = out[0]
        fdesc = ffi.new("ze_fence_desc_t*")
        fdesc.stype = _ST_FENCE_DESC
        fence = ffi.new("ze_fence_handle_t*")
        rc = lib.zeFenceCreate(self._queue, fdesc, fence)
        if rc != ZE_RESULT_SUCCESS:
            lib.zeCommandQueueDestroy(self._queue)
            drv._check(rc, "zeFenceCreate")
        self._fence = fence[0]
        self._jobs: queue.SimpleQueue[
            tuple[_ZeEvent, _ZeGraph, _ZeEvent, _ZeStream, int] | None
        ] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._run, name=f"aruntime-{drv.backend_name}-graphs", daemon=True
        )
        self._thread.start()

    def submit(
        self, ready: _ZeEvent, graph: _ZeGraph, done: _ZeEvent, stream: _ZeStream, position: int
    ) -> None:
        self._jobs.put((ready, graph, done, stream, position))

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._drv._run_graph(*job, self._queue, self._fence)

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join()
        self._drv._lib.zeFenceDestroy(self._fence)
        self._drv._lib.zeCommandQueueDestroy(self._queue)
