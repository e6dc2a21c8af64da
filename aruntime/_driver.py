"""The driver-level contract that every backend implements.

The backend-neutral core (:mod:`aruntime._backend`) validates arguments, keeps
the allocation ledger, retains host buffers, builds :class:`Completion` objects
and wakes event loops.  A concrete backend supplies only the primitives below,
each a thin wrapper over one or two calls into its C library (or, for the mock,
over numpy).

Rules every implementation follows:

* Arguments arrive already validated: addresses are inside live allocations,
  sizes are positive, host buffers are C-contiguous ``memoryview`` objects of
  format ``"B"`` (writable where written to), handles are the driver's own and
  still open.  A driver does not re-validate; it reports what its C library
  says.
* Argument order is always ``(src, dst, ...)``, as in the public surface.
* Errors are raised as :class:`aruntime.DriverError` subclasses, mapped from the
  library's return codes in one table per backend.
* Enqueueing methods never block on the device.  Only :meth:`event_wait`
  blocks, and it is only called from the core's waiter threads (or from a
  thread that asked for a blocking wait); it must release the GIL while it
  blocks (cffi does this for every call).
* When :attr:`Driver.synchronous` is true (the mock), every enqueued op has
  finished, or raised, before the enqueueing call returns.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, NewType, TypeAlias

import numpy as np

from ._memory import DevicePtr

__all__ = [
    "DeviceInfo",
    "DeviceLimits",
    "Driver",
    "DriverEvent",
    "DriverFunction",
    "DriverGraph",
    "DriverModule",
    "DriverStream",
    "KernelArg",
    "LaunchConfig",
]

#: Opaque driver handles.  The core never looks inside them.
DriverStream = NewType("DriverStream", object)
DriverEvent = NewType("DriverEvent", object)
DriverModule = NewType("DriverModule", object)
DriverFunction = NewType("DriverFunction", object)
DriverGraph = NewType("DriverGraph", object)

#: A validated kernel argument: a device pointer, a numpy scalar, or raw bytes.
KernelArg: TypeAlias = DevicePtr | np.generic | bytes


@dataclass(frozen=True)
class DeviceInfo:
    """What a device says about itself."""

    #: The device's name, as its driver reports it (``"NVIDIA H100 80GB HBM3"``).
    name: str
    #: The device's memory in bytes.
    total_memory: int
    #: Streaming multiprocessors on CUDA, execution units on Level Zero (the mock's
    #: ``compute_units`` option, 16 unless given).
    compute_units: int
    #: Driver-specific extras (compute capability, vendor, driver version...).
    extra: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DeviceLimits:
    """What a device allows, as its driver states it (``Backend.limits``).

    The core checks every launch and allocation against these before the
    driver sees it, so a request past a limit is an
    :class:`~aruntime.InvalidArgumentError` naming the call, the value, the
    limit and how to lift it, on every backend alike.
    """

    #: Threads per block, all axes together (CUDA's ``MAX_THREADS_PER_BLOCK``,
    #: Level Zero's ``maxTotalGroupSize``).
    max_block_threads: int
    #: Threads per block along x, y and z.
    max_block: tuple[int, int, int]
    #: Blocks per grid along x, y and z.
    max_grid: tuple[int, int, int]
    #: Dynamic shared memory per block without the opt-in, in bytes: CUDA's
    #: ``MAX_SHARED_MEMORY_PER_BLOCK``; 0 on Level Zero, which has no
    #: per-launch dynamic shared memory.  A launch may ask for more, up to
    #: :attr:`max_launch_shared_mem`: the CUDA backends then opt its kernel in.
    max_shared_mem: int
    #: Shared memory per block with the opt-in, in bytes, a kernel's static
    #: and dynamic shared memory together: CUDA's
    #: ``MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`` (reached through
    #: ``cuFuncSetAttribute``), Level Zero's ``maxSharedLocalMemory`` (what a
    #: kernel's local memory may total).
    max_shared_mem_optin: int
    #: The largest single device allocation, in bytes (Level Zero's
    #: ``maxMemAllocSize``; the device's memory on CUDA).
    max_allocation: int
    #: Every device allocation's address is a multiple of this many bytes
    #: (except under the sims' sanitizer, ``ARUNTIME_SIM_SANITIZE=1``, which
    #: ends each allocation at a guard page).
    alloc_alignment: int
    #: How to go past ``max_shared_mem``, quoted in the launch's message.
    shared_mem_hint: str = ""
    #: How to go past ``max_allocation``, quoted in the allocation's message.
    allocation_hint: str = ""
    #: How many device allocations may be live at once, where something other
    #: than memory bounds the count; None where only memory does, which is
    #: every backend's answer: no driver states such a limit, the mock keeps
    #: none, and the sims sub-allocate small allocations (a million 256-byte
    #: ones fit).  The sims' host mappings are the one bound they have (each
    #: allocation over 64 KiB, or any under ``ARUNTIME_SIM_SANITIZE=1``, takes
    #: two of ``vm.max_map_count``); an allocation past it raises
    #: OutOfMemoryError naming that limit.
    max_allocations: int | None = None

    @property
    def max_launch_shared_mem(self) -> int:
        """The most ``launch(..., shared_mem=)`` takes, in bytes.

        :attr:`max_shared_mem_optin` where launches have dynamic shared memory
        (CUDA and the mock): a launch asking for more than
        :attr:`max_shared_mem` opts its kernel in, as
        ``cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)``
        does, and the kernel's static shared memory counts against the same
        limit.  0 on Level Zero, where they have none.
        """
        return self.max_shared_mem_optin if self.max_shared_mem else 0


def cuda_shared_mem_hint(shared: int, optin: int) -> str:
    """How a CUDA device's (or the mock's profile of one) shared-memory limit reads."""
    if optin <= shared:
        return "shared memory per block, static and dynamic together; this device has no opt-in"
    return (
        "shared memory per block, static and dynamic together, with the opt-in "
        "(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) that aruntime sets for a launch "
        f"asking for more than {shared} bytes"
    )


class LaunchConfig(NamedTuple):
    """A kernel launch's geometry, passed to mock kernels as their first argument.

    A named tuple (immutable, as before): every launch makes one, and a
    frozen dataclass's ``__init__`` cost four times as much.
    """

    #: Blocks in the grid along x, y and z.
    grid: tuple[int, int, int]
    #: Threads in each block along x, y and z.
    block: tuple[int, int, int]
    #: Dynamic shared memory per block, in bytes (``launch(..., shared_mem=)``).
    shared_mem: int


class Driver(abc.ABC):
    """Primitives for one opened device, called only by the core's parts (never by users).

    The core validates every argument first (see the rules above); a
    driver's own extras are reached through :attr:`aruntime.Backend.driver`.
    """

    #: The backend's public name: ``"mock"``, ``"cuda"``, ``"cuda-sim"``...
    backend_name: str
    #: True when ops complete before the enqueueing call returns.
    synchronous: bool = False
    #: True when an op's failure reaches the next marker recorded on its stream
    #: (a sticky error, or one the driver holds for the stream's next event), so
    #: an op nobody can wait for needs no marker of its own (_submit.py).  A
    #: driver whose internal events could take such an error first says False.
    errors_reach_next_marker: bool = True
    #: Whether event_create(timing=True) events can be timed.
    supports_timing: bool = True
    #: The device's index among its backend's devices.
    ordinal: int = 0

    # -- device ----------------------------------------------------------
    @abc.abstractmethod
    def device_info(self) -> DeviceInfo: ...

    @abc.abstractmethod
    def device_limits(self) -> DeviceLimits:
        """The device's limits (asked once, at open)."""

    @abc.abstractmethod
    def mem_get_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes, as the driver reports them."""

    @abc.abstractmethod
    def bind_to_thread(self) -> None:
        """Make this device current on the calling thread (no-op where meaningless)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the device.  Every handle made by this driver is already gone."""

    # -- memory ----------------------------------------------------------
    @abc.abstractmethod
    def mem_alloc(self, nbytes: int) -> int: ...

    @abc.abstractmethod
    def mem_alloc_managed(self, nbytes: int) -> int: ...

    @abc.abstractmethod
    def mem_free(self, address: int) -> None: ...

    @abc.abstractmethod
    def host_alloc(self, nbytes: int) -> tuple[int, memoryview]:
        """Pinned host memory: its address and a writable byte view over it."""

    @abc.abstractmethod
    def host_free(self, address: int) -> None: ...

    @abc.abstractmethod
    def host_device_address(self, host_address: int) -> int:
        """The device address that aliases pinned host memory."""

    # -- stream-ordered memory -------------------------------------------
    #: True when the driver allocates and frees in a stream's order itself
    #: (CUDA's memory pools); elsewhere the core provides the same semantics
    #: over mem_alloc/mem_free (aruntime._stream_pool).
    stream_ordered_alloc: bool = False

    def mem_alloc_async(self, nbytes: int, stream: DriverStream) -> int:
        """Memory usable by ``stream``'s later work at once; never blocks."""
        raise NotImplementedError

    def mem_free_async(self, address: int, stream: DriverStream) -> None:
        """Free ``mem_alloc_async`` memory once ``stream``'s earlier work is done."""
        raise NotImplementedError

    # -- streams and events ---------------------------------------------
    @abc.abstractmethod
    def priority_range(self) -> tuple[int, int]:
        """``(lowest, highest)`` numeric stream priorities, as the user passes them."""

    @abc.abstractmethod
    def stream_create(self, priority: int) -> DriverStream: ...

    @abc.abstractmethod
    def stream_destroy(self, stream: DriverStream) -> None: ...

    @abc.abstractmethod
    def event_create(self, timing: bool) -> DriverEvent:
        """An event whose host waits block (not spin) where the driver allows it."""

    @abc.abstractmethod
    def event_destroy(self, event: DriverEvent) -> None: ...

    @abc.abstractmethod
    def event_record(self, event: DriverEvent, stream: DriverStream) -> None: ...

    @abc.abstractmethod
    def event_query(self, event: DriverEvent) -> bool:
        """True once all work before the event's last record has finished."""

    @abc.abstractmethod
    def event_wait(self, event: DriverEvent) -> None:
        """Block the calling thread until the event completes.

        Raises the :class:`DriverError` of a failed op that the event follows.
        """

    @abc.abstractmethod
    def event_elapsed_ms(self, start: DriverEvent, end: DriverEvent) -> float: ...

    @abc.abstractmethod
    def stream_wait_event(self, stream: DriverStream, event: DriverEvent) -> None: ...

    # -- several devices -------------------------------------------------
    def is_peer(self, other: Driver) -> bool:
        """Whether ``other`` is another device of this same driver (peer copies, waits)."""
        return False

    def can_access_peer(self, other: Driver) -> bool:
        """Whether this device reaches ``other``'s memory directly (only asked of a peer)."""
        return False

    def peer_wait_event(self, stream: DriverStream, event: DriverEvent, other: Driver) -> None:
        """``stream_wait_event`` with an event of ``other``, a peer (see :meth:`is_peer`)."""
        self.stream_wait_event(stream, event)

    def memcpy_peer(
        self,
        src: int,
        dst: int,
        nbytes: int,
        src_driver: Driver,
        dst_driver: Driver,
        stream: DriverStream,
    ) -> None:
        """Enqueue a copy between two peers' memory on this device's ``stream``.

        ``src_driver`` and ``dst_driver`` own the two sides; one of them is this driver.
        """
        raise NotImplementedError

    # -- async ops (enqueue only) ----------------------------------------
    @abc.abstractmethod
    def memcpy_h2d(self, src: memoryview, dst: int, stream: DriverStream) -> None: ...

    @abc.abstractmethod
    def memcpy_d2h(self, src: int, dst: memoryview, stream: DriverStream) -> None: ...

    @abc.abstractmethod
    def memcpy_d2d(self, src: int, dst: int, nbytes: int, stream: DriverStream) -> None: ...

    @abc.abstractmethod
    def memcpy_2d(
        self,
        src: int,
        src_pitch: int,
        dst: int,
        dst_pitch: int,
        width_bytes: int,
        height: int,
        stream: DriverStream,
    ) -> None: ...

    @abc.abstractmethod
    def memset_d8(self, dst: int, value: int, nbytes: int, stream: DriverStream) -> None: ...

    # -- modules and kernels -----------------------------------------------
    @abc.abstractmethod
    def module_load(self, image: Any) -> DriverModule:
        """Load a module image (already type-checked by the backend class)."""

    @abc.abstractmethod
    def module_unload(self, module: DriverModule) -> None: ...

    @abc.abstractmethod
    def module_function(self, module: DriverModule, name: str) -> DriverFunction:
        """The named kernel; :class:`InvalidArgumentError` if the module lacks it."""

    @abc.abstractmethod
    def launch(
        self,
        function: DriverFunction,
        config: LaunchConfig,
        args: Sequence[KernelArg],
        stream: DriverStream,
    ) -> None:
        """Enqueue a kernel.  ``args`` hold DevicePtr, numpy scalars and bytes."""

    # -- graphs --------------------------------------------------------------
    @abc.abstractmethod
    def capture_begin(self, stream: DriverStream) -> None: ...

    @abc.abstractmethod
    def capture_end(self, stream: DriverStream) -> DriverGraph:
        """End capture and return an executable (instantiated) graph."""

    @abc.abstractmethod
    def capture_abort(self, stream: DriverStream) -> None:
        """End capture on ``stream`` and discard what was recorded."""

    @abc.abstractmethod
    def graph_launch(self, graph: DriverGraph, stream: DriverStream) -> None: ...

    @abc.abstractmethod
    def graph_destroy(self, graph: DriverGraph) -> None: ...

    # -- optional --------------------------------------------------------------
    def module_image_types(self) -> tuple[type, ...]:
        """Python types accepted as a module image (bytes for real drivers)."""
        return (bytes, bytearray, memoryview)

    def builtin_module_image(self, name: str) -> Any:
        """The image of one of aruntime's portable kernel modules for this driver.

        ``"vector_ops"`` holds saxpy, fill_f32, scale_f32, add_f32 and iota_u32
        (``ffi/kernels/vector_ops.c``).  Raises :class:`NotSupportedError` when
        this driver has no build of it.
        """
        from ._exceptions import NotSupportedError

        raise NotSupportedError(
            f"{self.backend_name} has no build of the portable module {name!r}",
            backend=self.backend_name,
            function="builtin_module",
        )

    def device_timestamp_us(self) -> float | None:
        """The device clock now, in microseconds, or None where unavailable."""
        return None

    # -- interop (optional) -------------------------------------------------------
    def dlpack_device(self) -> tuple[int, int]:
        """``(DLDeviceType, device id)`` of this device's memory, for DLPack."""
        from ._exceptions import NotSupportedError

        raise NotSupportedError(
            f"{self.backend_name} memory has no DLPack device type",
            backend=self.backend_name,
            function="__dlpack_device__",
        )

    #: Set by a driver that sees every store a kernel makes (the software
    #: drivers' hook, see backends/_sim_faults); hardware and the mock cannot.
    _readonly_declarer: Callable[[Sequence[tuple[int, int]]], None] | None = None

    @property
    def checks_stores(self) -> bool:
        """Whether :meth:`declare_readonly` is checked against the kernel's stores."""
        return self._readonly_declarer is not None

    def declare_readonly(self, ranges: Sequence[tuple[int, int]]) -> None:
        """The next launch from this thread stores into none of ``ranges`` (``(address, nbytes)``).

        Race checking calls it, where :attr:`checks_stores` is true, with the
        ranges that ``launch(reads=...)`` declared read-only, just before the
        launch, and with none just after.  The driver then fails that launch
        (awaiting it raises HazardError) if its kernel stores into one.
        """
        declarer = self._readonly_declarer
        if declarer is not None:
            declarer(ranges)

    def stream_finished(self, stream: DriverStream) -> bool | None:
        """Whether the device is past everything queued on ``stream``, without a marker.

        True: it is, and an error of that work was raised here (as
        :meth:`event_wait` raises it behind a marker); False: not yet; None:
        this driver cannot tell (the default), and the core records a marker.
        Never blocks for work still running.
        """
        del stream
        return None

    def stream_handle_int(self, stream: DriverStream) -> int:
        """The raw native stream handle as an int (``CUstream`` on CUDA)."""
        from ._exceptions import NotSupportedError

        raise NotSupportedError(
            f"{self.backend_name} streams have no raw handle to share",
            backend=self.backend_name,
            function="__cuda_stream__",
        )

    def stream_adopt(self, handle: int) -> DriverStream:
        """Wrap a stream made by another library; :meth:`stream_destroy` must not destroy it."""
        from ._exceptions import NotSupportedError

        raise NotSupportedError(
            f"{self.backend_name} cannot adopt a foreign stream",
            backend=self.backend_name,
            function="wrap_stream",
        )
