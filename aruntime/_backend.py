"""Backend: the public surface of one opened device (DESIGN.md section 3).

This class is the same for every backend.  It validates arguments, keeps the
allocation ledger, retains host buffers while the device uses them, turns
enqueued ops into :class:`Completion` objects and owns every handle.  The
backend-specific work is delegated to a :class:`aruntime._driver.Driver`.

Threading: every method may be called from any thread.  Synchronous methods
only enqueue work and never wait for the device, except the blocking copies
(``copy_h2d``, ``copy_d2h``, ``copy_d2d``, ``memset``), which exist to block,
and ``close()``, which waits for queued work before releasing memory.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import DeviceArray
from ._completion import Completion
from ._compute import ComputeOps
from ._driver import DeviceInfo, Driver, DriverEvent, DriverStream, LaunchConfig
from ._exceptions import (
    AruntimeError,
    CaptureError,
    ClosedResourceError,
    DriverError,
    InvalidArgumentError,
)
from ._handles import Event, Graph, Kernel, Module, Stream
from ._interop import foreign_stream_handle
from ._ledger import (
    REDZONE_BYTES,
    Entry,
    Ledger,
    caller_site,
    new_alloc_id,
    redzones_enabled,
)
from ._memory import Allocation, DevicePtr, HostBuffer, _HostRecord
from ._trace import Trace, _Recorder, start_env_trace, start_trace, stop_all, trace_env_path
from ._validate import (
    as_host_view,
    check_byte_value,
    check_count,
    check_dims,
    check_kernel_args,
    check_shared_mem,
)
from ._waiter import StreamWaiter

__all__ = ["Backend", "BackendStatistics"]

_log = logging.getLogger("aruntime")
_open_backends: weakref.WeakSet[Backend] = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_registered = False


def _register_exit_hook() -> None:
    global _exit_hook_registered
    with _exit_hook_lock:
        if not _exit_hook_registered:
            atexit.register(_abandon_all_at_exit)
            _exit_hook_registered = True


def _abandon_all_at_exit() -> None:
    """Interpreter exit with work in flight: stop waking loops, never block.

    The process is ending, so the memory goes with it; what must not happen is
    a waiter thread running Python (or waking a dead loop) while the
    interpreter tears down, or exit waiting on a device forever.
    """
    for backend in list(_open_backends):
        backend._abandon()


def _release_stream(
    driver: Driver,
    handle: DriverStream,
    waiter_box: list[Any],
    done: Callable[[], None] | None = None,
) -> None:
    """Destroy a driver stream once its waiter has drained (or right away)."""
    waiter: StreamWaiter | None = waiter_box[0]

    def destroy() -> None:
        try:
            driver.stream_destroy(handle)
        finally:
            if done is not None:
                done()

    if waiter is None:
        destroy()
    else:
        waiter.close(on_exit=destroy)


def _backend_dropped(name: str, driver: Driver, waiters: weakref.WeakSet[StreamWaiter]) -> None:
    """Finalizer of a backend garbage-collected without ``close()``.

    Warns, lets every waiter drain and end, then closes the driver from the
    last one to exit (never blocking the collector on the device).
    """
    warnings.warn(
        f"unclosed backend {name!r}: close it (or use 'with' / 'async with') so its "
        "threads and device memory are released promptly",
        ResourceWarning,
        stacklevel=2,
    )

    def close_driver() -> None:
        try:
            driver.close()
        except Exception:  # a finalizer must never raise
            _log.exception("%s: closing a dropped backend failed", name)

    live = list(waiters)
    if not live:
        close_driver()
        return
    remaining = [len(live)]
    lock = threading.Lock()

    def one_exited() -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            close_driver()

    for waiter in live:
        waiter.close(on_exit=one_exited)


class _FailureList:
    """Thread-safe list of failed Completions nobody has looked at yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Completion] = []

    def note(self, completion: Completion) -> None:
        with self._lock:
            self._items.append(completion)

    def forget(self, completion: Completion) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._items.remove(completion)

    def take(self) -> list[Completion]:
        with self._lock:
            items, self._items = self._items, []
        return items


@dataclass(frozen=True)
class BackendStatistics:
    """What a backend holds at one moment (see :meth:`Backend.statistics`)."""

    live_allocations: int
    live_bytes: int
    open_streams: int  # not counting the default stream
    open_events: int
    open_graphs: int
    pending_ops: int  # queued ops whose Completion has not finished
    waiter_threads: int


class Backend(ComputeOps):
    """One opened device.  Made by :func:`aruntime.open_backend`.

    Use it as a context manager (``with``), or an async one (``async with``,
    whose exit first awaits all queued work), or call :meth:`close`.
    """

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        self._synchronous = driver.synchronous  # read on every op's hot path
        self._name = driver.backend_name
        self._info = driver.device_info()
        self._lock = threading.RLock()
        self._closed = False
        self._ledger = Ledger(self)
        self._redzone = REDZONE_BYTES if redzones_enabled() else 0
        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()
        #: Closed streams whose queued work has not drained yet: frees and
        #: close() must still wait for them.
        self._draining: set[Stream] = set()
        self._events: weakref.WeakSet[Event] = weakref.WeakSet()
        self._graphs: weakref.WeakSet[Graph] = weakref.WeakSet()
        self._modules: dict[str, Module] = {}
        self._markers: list[DriverEvent] = []
        # Every waiter whose thread may still run, including those of streams
        # closed or dropped earlier (a running thread keeps its waiter alive),
        # so close() can join them all before it releases the driver.
        self._waiters: weakref.WeakSet[StreamWaiter] = weakref.WeakSet()
        self._default: Stream | None = None
        self._orphan_failures = _FailureList()  # unseen errors of closed streams
        #: Set while a trace is active: the one attribute _submit checks.
        self._tracer: _Recorder | None = None
        _open_backends.add(self)
        env_trace = trace_env_path()
        if not driver.synchronous or env_trace is not None:
            _register_exit_hook()
        self._finalizer = weakref.finalize(
            self, _backend_dropped, self._name, driver, self._waiters
        )
        self._finalizer.atexit = False  # at exit, _abandon_all_at_exit decides
        if env_trace is not None:
            start_env_trace(self, env_trace)

    # ------------------------------------------------------------------ device
    @property
    def name(self) -> str:
        """The backend's name: ``"mock"``, ``"cuda"``, ``"cuda-sim"``..."""
        return self._name

    @property
    def device(self) -> DeviceInfo:
        """The device's name, total memory and compute units."""
        return self._info

    @property
    def driver(self) -> Driver:
        """The driver object, for backend-specific extras (the mock's call log...)."""
        return self._driver

    @property
    def closed(self) -> bool:
        return self._closed

    def total_memory(self) -> int:
        return self._info.total_memory

    def free_memory(self) -> int:
        """Total memory less what this backend's ledger holds."""
        self._check_open("free_memory")
        return max(0, self._info.total_memory - self._ledger.live_bytes())

    def device_free_memory(self) -> int:
        """Free memory as the driver reports it (other users of the device count)."""
        self._check_open("device_free_memory")
        return self._driver.mem_get_info()[0]

    def sm_count(self) -> int:
        return self._info.compute_units

    def bind_to_thread(self) -> None:
        """Make this device current on the calling thread (for foreign libraries)."""
        self._check_open("bind_to_thread")
        self._driver.bind_to_thread()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<aruntime.Backend {self._name} {self._info.name!r}{state}>"

    def statistics(self) -> BackendStatistics:
        """An immutable snapshot of what this backend holds right now."""
        with self._lock:
            streams = [s for s in self._streams if not s.closed and not s.is_default]
            every = [*streams, *([self._default] if self._default is not None else [])]
            events = sum(1 for e in self._events if not e.closed)
            graphs = sum(1 for g in self._graphs if not g.closed)
        pending = 0
        for st in every:
            waiter = st._waiter_box[0]
            if waiter is not None:
                pending += waiter.pending()
        return BackendStatistics(
            live_allocations=self._ledger.live_count(),
            live_bytes=self._ledger.live_bytes(),
            open_streams=len(streams),
            open_events=events,
            open_graphs=graphs,
            pending_ops=pending,
            waiter_threads=sum(1 for st in every if st._waiter_box[0] is not None),
        )

    # ------------------------------------------------------------------ tracing
    def trace(self, path: str | os.PathLike[str]) -> Trace:
        """Record every op from now on into a Chrome Trace Event file at ``path``.

        ``with gpu.trace(path):`` (or ``async with``) stops at the block's end;
        or call ``.stop()`` on the returned :class:`Trace`.  The file is written
        when the trace stops (or the backend closes): one track per stream, one
        span per op, timed by device events where the backend has them.
        Several traces may be active at once; each gets the ops of its lifetime.
        """
        return start_trace(self, path)

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int) -> DevicePtr:
        """Device memory of ``nbytes`` (> 0) bytes."""
        return self._alloc("alloc", nbytes, "device", self._driver.mem_alloc)

    def alloc_managed(self, nbytes: int) -> DevicePtr:
        """Memory reachable from host and device (unified/shared memory)."""
        return self._alloc("alloc_managed", nbytes, "managed", self._driver.mem_alloc_managed)

    def alloc_arena(self, nbytes: int) -> DevicePtr:
        """A large device block for the caller to sub-allocate with ``ptr[a:b]``."""
        return self._alloc("alloc_arena", nbytes, "arena", self._driver.mem_alloc)

    def _alloc(self, fn: str, nbytes: int, kind: str, allocate: Callable[[int], int]) -> DevicePtr:
        self._check_open(fn)
        n = check_count(nbytes, fn, "nbytes", minimum=1)
        site = caller_site()
        rz = self._redzone
        raw = allocate(n + 2 * rz)
        address = raw + rz
        alloc_id = new_alloc_id()
        ptr = DevicePtr(self, address, n, alloc_id)
        entry = Entry(alloc_id, kind, address, n, site, raw, rz, ptr)
        self._ledger.add(entry)
        if rz:
            try:
                self._write_guards(entry)
            except BaseException:
                # The caller never gets the pointer: take it back out.
                self._ledger.remove(alloc_id)
                self._after_queued_work(functools.partial(self._driver.mem_free, raw))
                raise
        return ptr

    def free(self, ptr: DevicePtr) -> None:
        """Free device memory from ``alloc``/``alloc_managed``.

        The pointer is invalid at once; the driver releases the memory only
        after the work already queued has finished, so a freed buffer is never
        pulled from under the device.
        """
        self._free("free", ptr, ("device", "managed"))

    def free_arena(self, ptr: DevicePtr) -> None:
        self._free("free_arena", ptr, ("arena",))

    def _free(self, fn: str, ptr: DevicePtr, kinds: tuple[str, ...]) -> None:
        self._check_open(fn)
        entry = self._ledger.check_ptr(ptr, fn)
        if entry.kind not in kinds:
            raise InvalidArgumentError(
                f"{fn}: {ptr!r} is {entry.kind} memory; free it with the matching call"
            )
        if ptr._address != entry.address:
            raise InvalidArgumentError(
                f"{fn}: {ptr!r} is a view at offset {ptr._address - entry.address} into an "
                "allocation; free the pointer the allocation returned"
            )
        self._ledger.remove(entry.alloc_id)
        self._after_queued_work(functools.partial(self._driver.mem_free, entry.raw_address))

    def alloc_host_pinned(self, nbytes: int) -> HostBuffer:
        """Page-locked host memory, as a 1-D ``uint8`` :class:`HostBuffer`."""
        fn = "alloc_host_pinned"
        self._check_open(fn)
        n = check_count(nbytes, fn, "nbytes", minimum=1)
        site = caller_site()
        address, view = self._driver.host_alloc(n)
        alloc_id = new_alloc_id()
        array = np.frombuffer(view, dtype=np.uint8, count=n)
        record = _HostRecord(self, address, n, alloc_id)
        buf = array.view(HostBuffer)
        buf._record = record
        self._ledger.add(Entry(alloc_id, "host", address, n, site, address, 0, buf))
        return buf

    def free_host_pinned(self, buf: HostBuffer) -> None:
        """Release pinned host memory (after queued work that uses it finishes)."""
        fn = "free_host_pinned"
        self._check_open(fn)
        if not isinstance(buf, HostBuffer):
            raise TypeError(f"{fn}: expected a HostBuffer, got {type(buf).__name__}")
        record = buf._record
        if record is None or record.backend is not self:
            raise InvalidArgumentError(f"{fn}: this HostBuffer was not allocated by {self!r}")
        if record.freed:
            raise InvalidArgumentError(f"{fn}: this HostBuffer was already freed")
        if buf.address != record.address or buf.nbytes != record.nbytes:
            raise InvalidArgumentError(f"{fn}: pass the HostBuffer itself, not a view of it")
        record.freed = True
        for mapped in self._ledger.mapped_views_of(record.alloc_id):
            self._ledger.remove(mapped.alloc_id)
        self._ledger.remove(record.alloc_id)
        self._after_queued_work(functools.partial(self._driver.host_free, record.address))

    def host_ptr_to_device(self, buf: HostBuffer) -> DevicePtr:
        """The device pointer that aliases pinned host memory (zero-copy access)."""
        fn = "host_ptr_to_device"
        self._check_open(fn)
        if not isinstance(buf, HostBuffer):
            raise TypeError(f"{fn}: expected a HostBuffer, got {type(buf).__name__}")
        record = buf._record
        if record is None or record.backend is not self:
            raise InvalidArgumentError(f"{fn}: this HostBuffer was not allocated by {self!r}")
        if record.freed:
            raise InvalidArgumentError(f"{fn}: this HostBuffer was freed")
        if not buf.flags.c_contiguous:
            raise InvalidArgumentError(f"{fn}: the HostBuffer view is not C-contiguous")
        offset = buf.address - record.address
        with self._lock:
            # One mapping per host allocation, however often it is asked for:
            # a new ledger entry per call would grow without bound in a loop.
            mapped = self._ledger.mapped_views_of(record.alloc_id)
            if mapped:
                ptr = mapped[0].handle
                assert isinstance(ptr, DevicePtr)
            else:
                base = self._driver.host_device_address(record.address)
                alloc_id = new_alloc_id()
                ptr = DevicePtr(self, base, record.nbytes, alloc_id)
                site = caller_site()
                entry = Entry(alloc_id, "mapped", base, record.nbytes, site, base, 0, ptr)
                entry.mapped_from = record.alloc_id
                self._ledger.add(entry)
        return ptr.offset(offset)[: buf.nbytes]

    # ------------------------------------------------------------------ interop
    def array(
        self,
        ptr: DevicePtr,
        shape: int | tuple[int, ...] | list[int],
        dtype: Any,
        *,
        strides: tuple[int, ...] | list[int] | None = None,
        stream: Stream | None = None,
    ) -> DeviceArray:
        """A typed view of ``ptr`` (no copy, not owning) for CuPy, PyTorch, numpy, DLPack.

        ``strides`` are in bytes (C order if None); ``stream`` is the stream
        the data is ordered on (the default stream if None).
        """
        fn = "array"
        self._check_open(fn)
        if not isinstance(ptr, DevicePtr):
            raise TypeError(f"{fn}: ptr must be a DevicePtr, got {type(ptr).__name__}")
        self._ledger.check_ptr(ptr, fn)
        if stream is not None:
            self._resolve_stream(stream, fn)
        return DeviceArray(ptr, shape, dtype, strides=strides, stream=stream)

    def array_from_numpy(self, array: Any, *, stream: Stream | None = None) -> DeviceArray:
        """Upload ``array`` to new device memory (blocking) as an owning DeviceArray.

        ``close()`` the result (or use ``with``) to free the memory.
        """
        self._check_open("array_from_numpy")
        return DeviceArray.from_numpy(self, array, stream=stream)

    def wrap_stream(self, stream: object) -> Stream:
        """Adopt another library's stream so its work can be awaited here.

        ``stream``: an object with ``__cuda_stream__()`` (cuda.core), a PyTorch
        or CuPy stream, a cuda-bindings ``CUstream``, or a raw handle int.  Ops
        may be enqueued on the result and ``await gpu.synchronize(wrapped)``
        waits for everything queued on the native stream so far, by anyone,
        without blocking the loop.  ``close()`` releases aruntime's side only:
        the native stream stays its owner's.  CUDA backends only
        (:class:`NotSupportedError` elsewhere).
        """
        fn = "wrap_stream"
        self._check_open(fn)
        handle = foreign_stream_handle(stream, fn)
        return self._new_stream(0, default=False, adopt=handle)

    # ------------------------------------------------------------------ ledger
    def live_bytes(self) -> int:
        return self._ledger.live_bytes()

    def live_alloc_count(self) -> int:
        return self._ledger.live_count()

    def live_allocations(self) -> list[Allocation]:
        """Every live allocation, oldest first, with the ``file:line`` that made it."""
        return self._ledger.allocations()

    def alloc_report(self, top_n: int = 10, min_mb: float = 0.0) -> str:
        """A table of live memory grouped by allocation site, largest first."""
        top = check_count(top_n, "alloc_report", "top_n", minimum=1)
        if isinstance(min_mb, bool) or not isinstance(min_mb, (int, float)):
            raise TypeError(f"alloc_report: min_mb must be a number, got {type(min_mb).__name__}")
        if not min_mb >= 0:
            raise InvalidArgumentError(f"alloc_report: min_mb must be >= 0, got {min_mb}")
        return self._ledger.report(top, float(min_mb))

    def sweep_unreleased(self) -> int:
        """Free every live allocation; return how many there were."""
        self._check_open("sweep_unreleased")
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
                self._free("sweep_unreleased", entry.handle, (entry.kind,))
            count += 1
        return count

    def scan_redzones(self) -> int:
        """Check every guard band; return how many were overwritten (0 when off)."""
        self._check_open("scan_redzones")
        bad = 0
        for entry in self._ledger.entries():
            if not entry.redzone:
                continue
            rz = entry.redzone
            for address, pattern in (
                (entry.raw_address, self._ledger.low_pattern),
                (entry.address + entry.nbytes, self._ledger.high_pattern),
            ):
                band = bytearray(rz)
                self._blocking("scan_redzones", self._reader(address, band))
                if band.count(pattern) != rz:
                    bad += 1
        return bad

    def poison_redzones(self, lo: int, hi: int) -> int:
        """Refill every guard band: ``lo`` below each allocation, ``hi`` above.

        The two byte values become the patterns :meth:`scan_redzones` expects.
        Returns the number of allocations whose bands were written.
        """
        self._check_open("poison_redzones")
        low = check_byte_value(lo, "poison_redzones")
        high = check_byte_value(hi, "poison_redzones")
        self._ledger.low_pattern, self._ledger.high_pattern = low, high
        count = 0
        for entry in self._ledger.entries():
            if entry.redzone:
                self._write_guards(entry)
                count += 1
        return count

    def _reader(self, address: int, into: bytearray) -> Callable[[DriverStream], None]:
        def enqueue(stream: DriverStream) -> None:
            self._driver.memcpy_d2h(address, memoryview(into), stream)

        return enqueue

    def _write_guards(self, entry: Entry) -> None:
        rz = entry.redzone
        low, high = self._ledger.low_pattern, self._ledger.high_pattern
        self._blocking(
            "redzone",
            lambda s: self._driver.memset_d8(entry.raw_address, low, rz, s),
        )
        self._blocking(
            "redzone",
            lambda s: self._driver.memset_d8(entry.address + entry.nbytes, high, rz, s),
        )

    def _blocking(self, op: str, enqueue: Callable[[DriverStream], None]) -> None:
        completion = self._submit(op, None, enqueue)
        completion.wait()

    # -------------------------------------------------------- blocking copies
    def copy_h2d(self, src: Any, dst: DevicePtr) -> None:
        """Copy host memory to the device and wait (blocks the calling thread)."""
        self.copy_h2d_async(src, dst).wait()

    def copy_d2h(self, src: DevicePtr, dst: Any) -> Any:
        """Copy device memory into a writable host buffer and wait; returns ``dst``."""
        return self.copy_d2h_async(src, dst).wait()

    def copy_d2d(self, src: DevicePtr, dst: DevicePtr, nbytes: int) -> None:
        self.copy_d2d_async(src, dst, nbytes).wait()

    def memset(self, ptr: DevicePtr, value: int, nbytes: int) -> None:
        self.memset_async(ptr, value, nbytes).wait()

    # -------------------------------------------------------------- async ops
    def copy_h2d_async(self, src: Any, dst: DevicePtr, stream: Stream | None = None) -> Completion:
        """Enqueue a host-to-device copy of all of ``src``'s bytes.

        ``await`` returns None.  Cancelling the await abandons the wait only:
        the copy continues and ``src`` stays referenced (and unresizable) until
        the device has read it.
        """
        fn = "copy_h2d_async"
        if self._closed:
            self._check_open(fn)
        view = as_host_view(src, fn, writable=False)
        n = view.nbytes
        self._ledger.check_range(dst, n, fn, "dst")
        if n == 0:
            return self._no_op(fn, stream, None)
        address = dst._address
        if self._synchronous and self._tracer is None:
            # The mock's hot path: no marker, no lambda, no keepalive to hold.
            st = self._resolve_stream(stream, fn)
            with st._lock:
                if not st._capturing:
                    try:
                        self._driver.memcpy_h2d(view, address, st.handle)
                    except DriverError as exc:
                        return Completion(fn, st)._fail_at_birth(exc)
                    return Completion._done_none(fn)
        return self._submit(
            fn,
            stream,
            lambda s: self._driver.memcpy_h2d(view, address, s),
            keepalive=(src,),
            views=(view,),
            nbytes=n,
        )

    def copy_d2h_async(self, src: DevicePtr, dst: Any, stream: Stream | None = None) -> Completion:
        """Enqueue a device-to-host copy filling all of ``dst``.

        ``await`` returns ``dst``.  Cancelling the await abandons the wait
        only: ``dst`` stays referenced (and unresizable) until the device has
        written it; read it only after the Completion is done.
        """
        fn = "copy_d2h_async"
        if self._closed:
            self._check_open(fn)
        view = as_host_view(dst, fn, writable=True)
        n = view.nbytes
        self._ledger.check_range(src, n, fn, "src")
        if n == 0:
            return self._no_op(fn, stream, dst)
        address = src._address
        return self._submit(
            fn,
            stream,
            lambda s: self._driver.memcpy_d2h(address, view, s),
            keepalive=(dst,),
            views=(view,),
            result=dst,
            nbytes=n,
        )

    def copy_d2d_async(
        self, src: DevicePtr, dst: DevicePtr, nbytes: int, stream: Stream | None = None
    ) -> Completion:
        """Enqueue a device-to-device copy.  Cancelling the await abandons the wait only."""
        fn = "copy_d2d_async"
        self._check_open(fn)
        n = check_count(nbytes, fn, "nbytes")
        src_entry = self._ledger.check_range(src, n, fn, "src")
        dst_entry = self._ledger.check_range(dst, n, fn, "dst")
        if n == 0:
            return self._no_op(fn, stream, None)
        if src_entry is dst_entry and abs(src._address - dst._address) < n:
            raise InvalidArgumentError(
                f"{fn}: source and destination ranges overlap ({n} bytes, "
                f"{abs(src._address - dst._address)} apart)"
            )
        s_addr, d_addr = src._address, dst._address
        return self._submit(
            fn, stream, lambda s: self._driver.memcpy_d2d(s_addr, d_addr, n, s), nbytes=n
        )

    def copy_d2d_2d_async(
        self,
        src: DevicePtr,
        src_pitch: int,
        dst: DevicePtr,
        dst_pitch: int,
        width_bytes: int,
        height: int,
        stream: Stream | None = None,
    ) -> Completion:
        """Enqueue a pitched 2D copy of ``height`` rows of ``width_bytes`` bytes.

        Cancelling the await abandons the wait only.
        """
        fn = "copy_d2d_2d_async"
        self._check_open(fn)
        sp = check_count(src_pitch, fn, "src_pitch")
        dp = check_count(dst_pitch, fn, "dst_pitch")
        width = check_count(width_bytes, fn, "width_bytes")
        rows = check_count(height, fn, "height")
        if width > sp:
            raise InvalidArgumentError(f"{fn}: width_bytes {width} exceeds src_pitch {sp}")
        if width > dp:
            raise InvalidArgumentError(f"{fn}: width_bytes {width} exceeds dst_pitch {dp}")
        src_extent = (rows - 1) * sp + width if rows and width else 0
        dst_extent = (rows - 1) * dp + width if rows and width else 0
        self._ledger.check_range(src, src_extent, fn, "src")
        self._ledger.check_range(dst, dst_extent, fn, "dst")
        if src_extent == 0:
            return self._no_op(fn, stream, None)
        s_addr, d_addr = src._address, dst._address
        return self._submit(
            fn,
            stream,
            lambda s: self._driver.memcpy_2d(s_addr, sp, d_addr, dp, width, rows, s),
            nbytes=width * rows,
        )

    def memset_async(
        self, ptr: DevicePtr, value: int, nbytes: int, stream: Stream | None = None
    ) -> Completion:
        """Enqueue setting ``nbytes`` bytes to ``value``.  Cancelling abandons the wait only."""
        fn = "memset_async"
        self._check_open(fn)
        v = check_byte_value(value, fn)
        n = check_count(nbytes, fn, "nbytes")
        self._ledger.check_range(ptr, n, fn)
        if n == 0:
            return self._no_op(fn, stream, None)
        address = ptr._address
        return self._submit(
            fn, stream, lambda s: self._driver.memset_d8(address, v, n, s), nbytes=n
        )

    def launch(
        self,
        kernel: Kernel,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: list[Any] | tuple[Any, ...],
        *,
        shared_mem: int = 0,
        stream: Stream | None = None,
    ) -> Completion:
        """Enqueue a kernel launch.

        ``args`` are explicit: DevicePtr, numpy scalars (``np.float32(2)``) or
        raw bytes; a bare Python int or float raises :class:`TypeError`.
        Cancelling the await abandons the wait only.
        """
        fn = "launch"
        self._check_open(fn)
        if not isinstance(kernel, Kernel):
            raise TypeError(
                f"{fn}: kernel must be a Kernel from backend.kernel(), got {type(kernel).__name__}"
            )
        if kernel.backend is not self:
            raise InvalidArgumentError(f"{fn}: {kernel!r} belongs to another backend")
        config = LaunchConfig(
            check_dims(grid, fn, "grid"),
            check_dims(block, fn, "block"),
            check_shared_mem(shared_mem, fn),
        )
        checked = check_kernel_args(args, fn)
        for i, arg in enumerate(checked):
            if isinstance(arg, DevicePtr):
                self._ledger.check_ptr(arg, fn, f"args[{i}]")
        handle = kernel.handle
        return self._submit(
            fn, stream, lambda s: self._driver.launch(handle, config, checked, s), kernel=kernel
        )

    def synchronize(self, stream: Stream | None = None) -> Completion:
        """A Completion for all work queued on ``stream`` so far (default stream if None).

        Awaiting it raises the first error of an op on that stream that nobody
        awaited (and logs it).  Cancelling the await abandons the wait only.
        """
        fn = "synchronize"
        self._check_open(fn)
        st = self._resolve_stream(stream, fn)
        if st._capturing:
            raise CaptureError(f"{fn}: {st!r} is capturing; end the capture first")
        completion = self._marker(fn, st)
        return _ErrorCheck.wrap(completion, st, fn)

    def event_synchronize(self, event: Event) -> Completion:
        """A Completion for the work before ``event``'s latest record.

        An event never recorded is complete at once.  Cancelling the await
        abandons the wait only.
        """
        fn = "event_synchronize"
        self._check_open(fn)
        self._check_event(event, fn)
        stream = event._last_stream
        if self._driver.synchronous or stream is None:
            return Completion._born_done(fn)
        if stream.closed:
            # close() never blocks, so the stream may still be draining the
            # work before the event: finish once the last op queued on it has.
            waiter = stream._waiter_box[0]
            last = waiter.last_pending() if waiter is not None else None
            if last is None:
                return Completion._born_done(fn)
            reached = Completion(fn, None)
            if not last._add_callback(reached._finish):
                reached._finish()
            return reached
        completion = Completion(fn, stream)
        waiter = self._waiter_for(stream)
        with stream._lock:
            waiter.submit(event.handle, completion, None)
        return completion

    # -------------------------------------------------------------- streams
    def create_stream(self, *, priority: int = 0) -> Stream:
        """A new stream.  Larger ``priority`` numbers run first where the device can."""
        fn = "create_stream"
        self._check_open(fn)
        if isinstance(priority, bool) or not isinstance(priority, (int, np.integer)):
            raise TypeError(f"{fn}: priority must be an int, got {type(priority).__name__}")
        low, high = self._driver.priority_range()
        if not low <= priority <= high:
            raise InvalidArgumentError(
                f"{fn}: priority {priority} is outside this device's range {low}..{high}"
            )
        return self._new_stream(int(priority), default=False)

    def _new_stream(self, priority: int, *, default: bool, adopt: int | None = None) -> Stream:
        if adopt is None:
            handle = self._driver.stream_create(priority)
        else:
            handle = self._driver.stream_adopt(adopt)
        stream = Stream(self, handle, priority, default=default, foreign=adopt is not None)
        if not default:
            stream._arm_finalizer(
                functools.partial(_release_stream, self._driver, handle, stream._waiter_box)
            )
        with self._lock:
            self._streams.add(stream)
        return stream

    def default_stream(self) -> Stream:
        """The backend's own stream, used wherever ``stream=None``."""
        self._check_open("default_stream")
        with self._lock:
            if self._default is None:
                self._default = self._new_stream(0, default=True)
            return self._default

    def stream_is_capturing(self, stream: Stream) -> bool:
        self._check_open("stream_is_capturing")
        return self._resolve_stream(stream, "stream_is_capturing")._capturing

    def _close_stream(self, stream: Stream) -> None:
        if stream._capturing:
            self.abort_capture_if_active(stream)
        if not stream._mark_closed():
            return
        with self._lock:
            self._streams.discard(stream)
        for failure in stream._take_failures():  # later ones go there directly
            self._orphan_failures.note(failure)
        with self._lock:
            if self._closed:
                return
            self._draining.add(stream)

        def drained() -> None:
            with self._lock:
                self._draining.discard(stream)

        _release_stream(self._driver, stream.handle, stream._waiter_box, drained)

    # -------------------------------------------------------------- events
    def create_event(self, *, timing: bool = False) -> Event:
        """A new event; ``timing=True`` allows :meth:`elapsed_ms`."""
        fn = "create_event"
        self._check_open(fn)
        if not isinstance(timing, bool):
            raise TypeError(f"{fn}: timing must be a bool, got {type(timing).__name__}")
        handle = self._driver.event_create(timing)
        event = Event(self, handle, timing)
        event._arm_finalizer(functools.partial(self._driver.event_destroy, handle))
        with self._lock:
            self._events.add(event)
        return event

    def record_event(self, event: Event, stream: Stream | None = None) -> None:
        """Mark the current end of ``stream``'s queue with ``event``."""
        fn = "record_event"
        self._check_open(fn)
        self._check_event(event, fn)
        st = self._resolve_stream(stream, fn)
        if st._capturing:
            raise CaptureError(f"{fn}: recording events inside a capture is not supported")
        with st._lock:
            self._driver.event_record(event.handle, st.handle)
            event._last_stream = st
            event._recorded = True

    def stream_wait_event(self, stream: Stream, event: Event) -> None:
        """Make ``stream``'s later work wait for ``event`` (on the device, no host wait)."""
        fn = "stream_wait_event"
        self._check_open(fn)
        st = self._resolve_stream(stream, fn)
        self._check_event(event, fn)
        if st._capturing:
            raise CaptureError(f"{fn}: cross-stream waits inside a capture are not supported")
        with st._lock:
            self._driver.stream_wait_event(st.handle, event.handle)

    def event_query(self, event: Event) -> bool:
        """True once the device has passed the event's latest record.  Never blocks."""
        fn = "event_query"
        self._check_open(fn)
        self._check_event(event, fn)
        return self._driver.event_query(event.handle)

    def elapsed_ms(self, start: Event, end: Event) -> float:
        """Milliseconds of device time between two completed timing events."""
        fn = "elapsed_ms"
        self._check_open(fn)
        for what, ev in (("start", start), ("end", end)):
            self._check_event(ev, fn)
            if not ev.timing:
                raise InvalidArgumentError(f"{fn}: {what} event was created without timing=True")
            if not ev._recorded:
                raise InvalidArgumentError(f"{fn}: {what} event was never recorded")
            if not self._driver.event_query(ev.handle):
                raise InvalidArgumentError(
                    f"{fn}: {what} event has not completed yet; await it first"
                )
        return self._driver.event_elapsed_ms(start.handle, end.handle)

    def destroy_event(self, event: Event) -> None:
        """Destroy an event (idempotent).  Queued work that records it still runs."""
        if not isinstance(event, Event):
            raise TypeError(f"destroy_event: expected an Event, got {type(event).__name__}")
        if event.backend is not self:
            raise InvalidArgumentError("destroy_event: the event belongs to another backend")
        if not event._mark_closed():
            return
        with self._lock:
            self._events.discard(event)
        if not self._closed:
            self._after_queued_work(functools.partial(self._driver.event_destroy, event.handle))

    # -------------------------------------------------------------- modules
    def load_module(self, name: str, image: Any) -> Module:
        """Load a module image under ``name`` (PTX/cubin/fatbin, SPIR-V, a dict on mock)."""
        fn = "load_module"
        self._check_open(fn)
        if not isinstance(name, str):
            raise TypeError(f"{fn}: name must be a str, got {type(name).__name__}")
        if not name:
            raise InvalidArgumentError(f"{fn}: name must not be empty")
        accepted = self._driver.module_image_types()
        if not isinstance(image, accepted):
            kinds = ", ".join(t.__name__ for t in accepted)
            raise TypeError(
                f"{fn}: a {self._name} module image must be one of ({kinds}), "
                f"got {type(image).__name__}"
            )
        with self._lock:
            if name in self._modules:
                raise InvalidArgumentError(f"{fn}: a module named {name!r} is already loaded")
            handle = self._driver.module_load(image)
            module = Module(self, name, handle)
            self._modules[name] = module
        return module

    def builtin_module(self, name: str = "vector_ops") -> Module:
        """aruntime's own portable kernels, built for this backend, loaded once.

        ``"vector_ops"`` has ``saxpy(n: u32, a: f32, x, y)`` (y = a*x + y),
        ``fill_f32(n, value, y)``, ``scale_f32(n, a, y)``, ``add_f32(n, x, y, z)``
        and ``iota_u32(n, start, y)``; launch 1-D with grid * block >= n.
        """
        fn = "builtin_module"
        self._check_open(fn)
        if not isinstance(name, str):
            raise TypeError(f"{fn}: name must be a str, got {type(name).__name__}")
        key = f"aruntime.{name}"
        with self._lock:
            module = self._modules.get(key)
            if module is None:
                handle = self._driver.module_load(self._driver.builtin_module_image(name))
                module = Module(self, key, handle)
                self._modules[key] = module
        return module

    def has_module(self, name: str) -> bool:
        if not isinstance(name, str):
            raise TypeError(f"has_module: name must be a str, got {type(name).__name__}")
        return name in self._modules

    def kernel(self, module: Module | str, func_name: str) -> Kernel:
        """The kernel ``func_name`` of a loaded module (a Module or its name)."""
        fn = "kernel"
        self._check_open(fn)
        if isinstance(module, str):
            found = self._modules.get(module)
            if found is None:
                raise InvalidArgumentError(f"{fn}: no module named {module!r} is loaded")
            module = found
        elif not isinstance(module, Module):
            raise TypeError(
                f"{fn}: module must be a Module or its name, got {type(module).__name__}"
            )
        elif module.backend is not self:
            raise InvalidArgumentError(f"{fn}: {module!r} belongs to another backend")
        if not isinstance(func_name, str):
            raise TypeError(f"{fn}: func_name must be a str, got {type(func_name).__name__}")
        module._check_open(fn)
        return Kernel(module, func_name, self._driver.module_function(module.handle, func_name))

    # -------------------------------------------------------------- graphs
    def begin_capture(self, stream: Stream) -> None:
        """Start recording ``stream``'s ops into a graph instead of running them."""
        fn = "begin_capture"
        self._check_open(fn)
        st = self._resolve_stream(stream, fn)
        with st._lock:
            if st._capturing:
                raise CaptureError(f"{fn}: {st!r} is already capturing")
            self._driver.capture_begin(st.handle)
            st._capturing = True
            st._capture_keepalive = []
            st._capture_ops = 0

    def end_capture(self, stream: Stream) -> Graph:
        """Stop recording and return the executable :class:`Graph`."""
        graph = Graph(self)
        self._end_capture_into(stream, graph, "end_capture")
        return graph

    def _end_capture_into(self, stream: Stream, graph: Graph, fn: str) -> None:
        self._check_open(fn)
        st = self._resolve_stream(stream, fn)
        with st._lock:
            if not st._capturing:
                raise CaptureError(f"{fn}: {st!r} is not capturing")
            st._capturing = False
            keepalive, st._capture_keepalive = st._capture_keepalive, []
            handle = self._driver.capture_end(st.handle)
        graph._arm(handle, keepalive, getattr(st, "_capture_ops", 0))
        graph._arm_finalizer(functools.partial(self._driver.graph_destroy, handle))
        with self._lock:
            self._graphs.add(graph)

    def abort_capture_if_active(self, stream: Stream) -> bool:
        """End a capture on ``stream`` and discard it; True if one was active."""
        st = self._resolve_stream(stream, "abort_capture_if_active", allow_closed=True)
        with st._lock:
            if not st._capturing:
                return False
            st._capturing = False
            st._capture_keepalive = []
            if not self._closed:
                self._driver.capture_abort(st.handle)
        return True

    @contextlib.contextmanager
    def capture(self, stream: Stream) -> Iterator[Graph]:
        """``with gpu.capture(stream) as graph:`` records the block's ops on ``stream``.

        ``graph`` is ready to launch after the block.  If the block raises, the
        capture is aborted and the graph stays empty.
        """
        self.begin_capture(stream)
        graph = Graph(self)
        try:
            yield graph
        except BaseException:
            self.abort_capture_if_active(stream)
            raise
        self._end_capture_into(stream, graph, "capture")

    def launch_graph(self, graph: Graph, stream: Stream | None = None) -> Completion:
        """Enqueue one replay of ``graph``.  Cancelling the await abandons the wait only."""
        fn = "launch_graph"
        self._check_open(fn)
        if not isinstance(graph, Graph):
            raise TypeError(f"{fn}: expected a Graph, got {type(graph).__name__}")
        if graph.backend is not self:
            raise InvalidArgumentError(f"{fn}: the graph belongs to another backend")
        graph._check_open(fn)
        if graph.handle is None:
            raise CaptureError(f"{fn}: the graph's capture has not ended yet")
        handle = graph.handle
        return self._submit(
            fn,
            stream,
            lambda s: self._driver.graph_launch(handle, s),
            keepalive=(graph,),
        )

    def destroy_graph(self, graph: Graph) -> None:
        """Destroy a graph (idempotent) and release the host buffers it kept."""
        if not isinstance(graph, Graph):
            raise TypeError(f"destroy_graph: expected a Graph, got {type(graph).__name__}")
        if graph.backend is not self:
            raise InvalidArgumentError("destroy_graph: the graph belongs to another backend")
        if not graph._mark_closed():
            return
        with self._lock:
            self._graphs.discard(graph)
        handle = graph.handle
        if handle is not None and not self._closed:
            keep = graph._keepalive
            graph._keepalive = []

            def destroy() -> None:
                self._driver.graph_destroy(handle)
                del keep[:]

            self._after_queued_work(destroy)

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Wait for queued work, then release every resource (idempotent).

        Blocks the calling thread until the device is idle; use ``async with``
        to wait without blocking a loop.  Raises the first error of an op that
        nobody awaited (after releasing everything), and logs every such error.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            streams = list(self._streams)
            if self._default is not None and self._default not in streams:
                streams.append(self._default)
            events = list(self._events)
            graphs = list(self._graphs)
            modules = list(self._modules.values())
            self._modules.clear()
        _open_backends.discard(self)
        errors: list[BaseException] = []
        for st in streams:
            if st._capturing:
                st._capturing = False
                with contextlib.suppress(DriverError):
                    self._driver.capture_abort(st.handle)
        with self._lock:
            draining = list(self._draining)
        waiters = [
            st._waiter_box[0] for st in (*streams, *draining) if st._waiter_box[0] is not None
        ]
        for w in waiters:
            w.close()
        with self._lock:
            waiters.extend(self._waiters)
        for w in waiters:
            w.join()
        stop_all(self)
        for st in streams:
            errors.extend(c._error for c in st._take_failures() if c._error is not None)
        errors.extend(c._error for c in self._orphan_failures.take() if c._error is not None)

        def attempt(what: str, fn: Callable[[], None]) -> None:
            try:
                fn()
            except DriverError as exc:
                _log.warning("close %s: %s failed: %s", self._name, what, exc)
                errors.append(exc)

        for g in graphs:
            if g._mark_closed() and g.handle is not None:
                attempt("graph_destroy", functools.partial(self._driver.graph_destroy, g.handle))
        for ev in events:
            if ev._mark_closed():
                attempt("event_destroy", functools.partial(self._driver.event_destroy, ev.handle))
        for marker in self._markers:
            attempt("event_destroy", functools.partial(self._driver.event_destroy, marker))
        self._markers.clear()
        for entry in self._ledger.entries():
            self._ledger.remove(entry.alloc_id)
            if entry.kind == "host":
                assert isinstance(entry.handle, HostBuffer)
                if entry.handle._record is not None:
                    entry.handle._record.freed = True
                attempt("host_free", functools.partial(self._driver.host_free, entry.address))
            elif entry.kind != "mapped":
                attempt("mem_free", functools.partial(self._driver.mem_free, entry.raw_address))
        for st in streams:
            st._mark_closed()
            attempt("stream_destroy", functools.partial(self._driver.stream_destroy, st.handle))
        for m in modules:
            m._mark_closed()
            attempt("module_unload", functools.partial(self._driver.module_unload, m.handle))
        attempt("close", self._driver.close)
        if errors:
            for err in errors:
                _log.error("%s: error from an op nobody awaited: %s", self._name, err)
            raise errors[0]

    def _abandon(self) -> None:
        """Interpreter exit: stop all waiters without waiting for the device."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            waiters = list(self._waiters)  # those of closed streams still draining too
        for waiter in waiters:
            waiter.abandon()
        stop_all(self, abandon=True)

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._close_after_block(failing=exc_type is not None)

    async def __aenter__(self) -> Backend:
        return self

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        """Await all queued work, then close.  If cancelled, closing still happens."""
        failing = exc_type is not None
        try:
            if not self._closed:
                for completion in self._drain_completions():
                    with contextlib.suppress(AruntimeError):
                        await completion
        except BaseException:
            failing = True  # e.g. cancelled while draining
            raise
        finally:
            self._close_after_block(failing=failing)

    def _close_after_block(self, *, failing: bool) -> None:
        """close() at the end of a ``with`` block, never masking the block's own error.

        When the block is already raising (or being cancelled), an unseen op
        error found by close() is only logged (close() logs every one), so the
        caller sees their exception, not an unrelated DriverError in its place.
        """
        try:
            self.close()
        except AruntimeError:
            if not failing:
                raise

    def _drain_completions(self) -> list[Completion]:
        with self._lock:
            streams = list(self._streams)
            if self._default is not None:
                streams.append(self._default)
            waiters = list(self._waiters)
        out = []
        for st in streams:
            if not st.closed and not st._capturing:
                out.append(self._marker("close", st))
        # Streams closed with work still queued: await them too, or close()
        # would block the event loop while they drain.
        out.extend(c for c in (w.last_pending() for w in waiters) if c is not None)
        return out

    # -------------------------------------------------------------- internals
    def _check_open(self, fn: str) -> None:
        if self._closed:
            raise ClosedResourceError(f"{fn}: the {self._name} backend is closed")

    def _check_event(self, event: object, fn: str) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"{fn}: expected an Event, got {type(event).__name__}")
        if event.backend is not self:
            raise InvalidArgumentError(f"{fn}: the event belongs to another backend")
        event._check_open(fn)

    def _resolve_stream(self, stream: object, fn: str, *, allow_closed: bool = False) -> Stream:
        if stream is None:
            default = self._default
            return default if default is not None else self.default_stream()
        if type(stream) is Stream and stream._backend is self and not stream._closed:
            return stream  # the common case, on every op's path: no calls
        if not isinstance(stream, Stream):
            raise TypeError(f"{fn}: stream must be a Stream or None, got {type(stream).__name__}")
        if stream.backend is not self:
            raise InvalidArgumentError(f"{fn}: the stream belongs to another backend")
        if not allow_closed:
            stream._check_open(fn)
        return stream

    def _waiter_for(self, stream: Stream) -> StreamWaiter:
        box = stream._waiter_box
        waiter: StreamWaiter | None = box[0]
        if waiter is None:
            with stream._lock:
                waiter = box[0]
                if waiter is None:
                    waiter = StreamWaiter(self._driver, f"{self._name}-{id(stream):x}")
                    box[0] = waiter
                    with self._lock:
                        self._waiters.add(waiter)
        return waiter

    def _acquire_marker(self) -> DriverEvent:
        with self._lock:
            if self._markers:
                return self._markers.pop()
        return self._driver.event_create(False)

    def _release_marker(self, marker: DriverEvent) -> None:
        with self._lock:
            if not self._closed:
                self._markers.append(marker)
                return
        self._driver.event_destroy(marker)

    def _no_op(self, op: str, stream: Stream | None, result: Any) -> Completion:
        st = self._resolve_stream(stream, op)
        if st._capturing:
            return Completion._born_captured(op)
        return Completion._born_done(op, result)

    def _submit(
        self,
        op: str,
        stream: Stream | None,
        enqueue: Callable[[DriverStream], None],
        *,
        keepalive: tuple[Any, ...] = (),
        views: tuple[memoryview, ...] = (),
        result: Any = None,
        nbytes: int = 0,
        kernel: Kernel | None = None,
    ) -> Completion:
        """Enqueue one op on a stream and return its Completion."""
        st = self._resolve_stream(stream, op)
        with st._lock:
            if st._capturing:
                enqueue(st.handle)
                st._capture_keepalive.extend((*views, *keepalive))
                st._capture_ops += 1
                return Completion._born_captured(op)
            tracer = self._tracer
            span = None if tracer is None else tracer.span(op, st, enqueue, nbytes, kernel)
            if span is not None:
                enqueue = span.enqueue
            if self._driver.synchronous:
                try:
                    enqueue(st.handle)
                except DriverError as exc:
                    return Completion(op, st)._fail_at_birth(exc)
                return Completion._born_done(op, result)
            completion = Completion(op, st, result, keepalive, views)
            try:
                enqueue(st.handle)
            except DriverError as exc:
                return completion._fail_at_birth(exc)
            release: Callable[[DriverEvent], None] | None = self._release_marker
            if span is not None:
                # The span's end event is the op's marker (see _trace).
                marker, release = span.end, None
                try:
                    span.record_end(completion, st.handle)
                except DriverError as exc:
                    return completion._fail_at_birth(exc)
            else:
                try:
                    marker = self._acquire_marker()
                except DriverError as exc:  # e.g. a sticky error surfacing at event creation
                    return completion._fail_at_birth(exc)
                try:
                    self._driver.event_record(marker, st.handle)
                except DriverError as exc:
                    self._release_marker(marker)
                    return completion._fail_at_birth(exc)
            self._waiter_for(st).submit(marker, completion, release)
        return completion

    def _marker(self, op: str, st: Stream) -> Completion:
        """A Completion that finishes when ``st``'s queue so far has drained."""
        if self._driver.synchronous:
            # Everything already ran, but the device may be in a sticky error
            # state that a real synchronize would report: ask the driver.
            marker = self._acquire_marker()
            try:
                self._driver.event_record(marker, st.handle)
            except DriverError as exc:
                return Completion(op, st)._fail_at_birth(exc)
            finally:
                self._release_marker(marker)
            return Completion._born_done(op)
        return self._submit(op, st, _nothing)

    def _after_queued_work(self, release: Callable[[], None]) -> None:
        """Run ``release`` once every op queued so far, on every stream, has finished."""
        if self._driver.synchronous:
            release()
            return
        # Every waiter, not just those of open streams: a stream closed with
        # work queued keeps running it, and freeing under it would be a
        # use-after-free on the device.
        with self._lock:
            waiters = list(self._waiters)
        pending = [c for c in (w.last_pending() for w in waiters) if c is not None]
        if not pending:
            release()
            return
        remaining = [len(pending)]
        lock = threading.Lock()

        def count_down() -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                try:
                    release()
                except DriverError as exc:
                    _log.warning("%s: deferred release failed: %s", self._name, exc)

        for completion in pending:
            if not completion._add_callback(count_down):
                count_down()


def _nothing(stream: DriverStream) -> None:
    del stream


class _ErrorCheck:
    """Makes a synchronize() Completion fail with the stream's unseen errors."""

    @staticmethod
    def wrap(marker: Completion, stream: Stream, op: str) -> Completion:
        # On the stream: if this synchronize() fails and nobody sees it (its
        # await was cancelled), the error goes back to the stream for the next
        # synchronize() or close() instead of being lost.
        result = Completion(op, stream)

        def settle() -> None:
            failures = stream._take_failures()
            error: BaseException | None = marker._error
            if failures:
                first = failures[0]._error
                for f in failures:
                    _log.error("%s: error from an op nobody awaited: %s", op, f._error)
                error = first
            result._finish(error)

        if not marker._add_callback(settle):
            settle()
        return result
