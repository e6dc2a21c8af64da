"""The mock driver: device memory is numpy, every op runs when it is enqueued.

It is public API for users' test suites: a configurable device, a call log to
assert on, Python kernels, graph capture and replay, and fault injection.
"""

from __future__ import annotations

import bisect
import inspect
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._callsite import caller_site
from ..._dlpack import KDL_EXT_DEV
from ..._driver import (
    DeviceInfo,
    DeviceLimits,
    Driver,
    DriverEvent,
    DriverFunction,
    DriverGraph,
    DriverModule,
    DriverStream,
    LaunchConfig,
)
from ..._enqueue import mock_copy
from ..._exceptions import (
    DeviceLostError,
    DriverError,
    InvalidArgumentError,
    NotSupportedError,
    OutOfMemoryError,
)
from ..._kernel_args import check_arg_count, check_arg_sizes
from ..._memory import DevicePtr
from ._bounds import MemoryFault, MisalignedFault
from ._profile import H100, DeviceProfile, profile_limits

__all__ = ["FAULT_KINDS", "FAULT_OPS", "MockCall", "MockDriver"]

#: The ops :meth:`MockDriver.inject_fault` can make fail, by the name of the
#: backend call that enqueues them.  ``"alloc"`` covers ``alloc``,
#: ``alloc_managed``, ``alloc_arena`` and the pool behind ``alloc_async``; each
#: copy and ``memset`` covers its blocking form too (``copy_h2d`` is
#: ``copy_h2d_async`` waited on); ``"any"`` matches every op.
FAULT_OPS = (
    "alloc",
    "alloc_host_pinned",
    "copy_h2d_async",
    "copy_d2h_async",
    "copy_d2d_async",
    "copy_d2d_2d_async",
    "memset_async",
    "launch",
    "launch_graph",
    "any",
)

#: The mock's own short names of the same ops (its call log's), also accepted.
FAULT_KINDS = (
    "alloc",
    "alloc_host",
    "copy_h2d",
    "copy_d2h",
    "copy_d2d",
    "copy_2d",
    "memset",
    "launch",
    "graph_launch",
    "any",
)

# Each name inject_fault takes, to the short kind the driver checks.
_FAULT_KIND_OF = {
    **dict(zip(FAULT_OPS, FAULT_KINDS, strict=True)),
    **{kind: kind for kind in FAULT_KINDS},
}

_GAP = 64 * 1024  # unmapped space between allocations, like a real VA allocator
_DEVICE_BASE = 0x7F00_0000_0000
_HOST_MAPPED_BASE = 0x7E00_0000_0000
_CACHE_LIMIT = 256  # entries in each per-range cache of the copy paths


@dataclass(frozen=True)
class MockCall:
    """One entry of the call log."""

    op: str
    stream: int | None = None  # the mock stream's id (Stream.handle.id)
    nbytes: int = 0
    kernel: str | None = None
    args: tuple[Any, ...] = ()


@dataclass
class _MockStream:
    id: int
    priority: int
    recording: list[Callable[[], None]] | None = None
    #: This stream's upload and download log entries by size (the copy fast
    #: paths', without a key tuple; ffi/core/mockcopy.c reads them too).
    h2d_calls: dict[int, MockCall] = field(default_factory=dict)
    d2h_calls: dict[int, MockCall] = field(default_factory=dict)


@dataclass
class _MockEvent:
    timing: bool
    time: float | None = None


@dataclass
class _MockModule:
    kernels: dict[str, Callable[..., Any]]


@dataclass
class _MockFunction:
    name: str
    fn: Callable[..., Any]
    #: (fewest, most) launch arguments the callable accepts; most None: no limit.
    arity: tuple[int, int | None] | None = None
    #: byte size of each argument, where the kernel declares them (``param_sizes``).
    param_sizes: tuple[int, ...] | None = None
    #: the indices of the pointer arguments, where the kernel declares them
    #: (``pointer_params``): 8 raw bytes passed there are the address.
    pointer_params: frozenset[int] = frozenset()


def _arity(fn: Callable[..., Any]) -> tuple[int, int | None] | None:
    """How many launch arguments ``fn`` takes (its first parameter is the launch), or None."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # some builtins and C callables have no signature
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional:
        return None  # cannot take the launch geometry positionally; let the call say why
    required = sum(1 for p in positional if p.default is p.empty) - 1
    most = None if any(p.kind is p.VAR_POSITIONAL for p in params) else len(positional) - 1
    return max(required, 0), most


@dataclass
class _MockGraph:
    ops: list[Callable[[], None]] = field(default_factory=list)


@dataclass
class _Fault:
    kind: str
    error: type[DriverError]
    remaining: int


class MockDriver(Driver):
    """Numpy device memory; ops execute at enqueue; Completions are born done."""

    synchronous = True
    backend_name = "mock"

    def __init__(
        self,
        *,
        name: str = "aruntime mock device",
        total_memory: int = 8 << 30,
        compute_units: int = 16,
        profile: DeviceProfile = H100,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"mock: name must be a str, got {type(name).__name__}")
        if not isinstance(profile, DeviceProfile):
            raise TypeError(f"mock: profile must be a DeviceProfile, got {type(profile).__name__}")
        #: The real part's limits this mock enforces (an H100's by default).
        self.profile = profile
        for what, value in (("total_memory", total_memory), ("compute_units", compute_units)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"mock: {what} must be an int, got {type(value).__name__}")
            if value < 1:
                raise InvalidArgumentError(f"mock: {what} must be >= 1, got {value}")
        self._info = DeviceInfo(name, total_memory, compute_units, (("vendor", "aruntime"),))
        self._lock = threading.RLock()
        # Every slot's base address, sorted: a slot is made once, by the bump
        # allocator (so always past the others: an append), and kept when it is
        # freed, for reuse.  A base in _bases but not in _arrays is a free slot.
        self._bases: list[int] = []
        # Free slots by their size, newest last: reused first, as a real
        # allocator reuses freed memory at once (so a use-after-free shows).
        self._free_slots: dict[int, list[int]] = {}
        self._arrays: dict[int, np.ndarray[Any, np.dtype[np.uint8]]] = {}
        self._host: dict[int, np.ndarray[Any, np.dtype[np.uint8]]] = {}
        self._host_mapped: dict[int, int] = {}  # device alias -> host address
        self._next_address = _DEVICE_BASE
        self._used = 0
        self._ids = itertools.count(1)
        self._faults: list[_Fault] = []
        self._lost: DriverError | None = None
        # No fault injected and the device not lost (kept with both, under
        # _lock): the copy path's one test instead of two.
        self._quiet = True
        self.call_log: list[MockCall] = []
        # Per-op costs dominate small copies, so the copy paths reuse byte views
        # of device ranges and log entries (both immutable) instead of rebuilding
        # them.  Addresses are reused, so every free clears the view caches: a
        # stale view must not alias the next allocation at that address.
        self._byte_views: dict[tuple[int, int], memoryview] = {}
        self._array_views: dict[tuple[int, int], np.ndarray[Any, np.dtype[np.uint8]]] = {}
        self._copy_calls: dict[tuple[str, int, int], MockCall] = {}
        # Installed with the first stream, not here: loading the core's extension
        # (in a checkout, seeing that it is built) is not for an open to pay.
        self._copies_due = self.synchronous

    def _install_mock_copies(self) -> None:
        """Let the quiet host copies run in C, once their caches are filled.

        With the core's op path compiled, this method's frame and loads were
        half of what a small awaited copy cost.  Each of ``memcpy_h2d`` and
        ``memcpy_d2h`` becomes a MockCopy (``ffi/core/mockcopy.c``), an
        instance attribute over the method: in the case the method takes
        without its closure, and once the method has cached the stream's log
        entry and the range's byte view, it logs and copies as the method
        does.  Every other call is the method.  Nothing is installed where
        the compiled enqueue is off, nor over a subclass's own method.
        """
        for method, to_device in (("memcpy_h2d", True), ("memcpy_d2h", False)):
            if getattr(type(self), method) is not getattr(MockDriver, method):
                continue
            made = mock_copy(self, getattr(MockDriver, method), to_device=to_device)
            if made is not None:
                setattr(self, method, made)

    # -- user-facing extras --------------------------------------------------
    def inject_fault(self, op: str, error: type[DriverError] = DriverError, count: int = 1) -> None:
        """Make the next ``count`` ops ``op`` fail with ``error``.

        ``op`` is one of :data:`FAULT_OPS` (``"copy_h2d_async"``...;
        ``"any"`` matches every op), or its short name in :data:`FAULT_KINDS`.
        A :class:`DeviceLostError` is sticky: every later op fails too, as on a
        real device.  :func:`aruntime.testing.inject_fault` is the same call
        made on a backend.
        """
        if not isinstance(op, str):
            raise TypeError(f"inject_fault: op must be a str, got {type(op).__name__}")
        kind = _FAULT_KIND_OF.get(op)
        if kind is None:
            raise InvalidArgumentError(
                f"inject_fault: op {op!r} is not one of {', '.join(FAULT_OPS)} "
                f"(or their short names {', '.join(FAULT_KINDS)})"
            )
        if not (isinstance(error, type) and issubclass(error, DriverError)):
            raise TypeError(f"inject_fault: error must be a DriverError subclass, got {error!r}")
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"inject_fault: count must be an int, got {type(count).__name__}")
        if count < 1:
            raise InvalidArgumentError(f"inject_fault: count must be >= 1, got {count}")
        with self._lock:
            self._faults.append(_Fault(kind, error, count))
            self._quiet = False

    def clear_faults(self) -> None:
        """Forget every injected fault not yet raised, and a lost device's sticky error."""
        with self._lock:
            self._faults.clear()
            self._lost = None
            self._quiet = True

    def calls(self, op: str | None = None) -> list[MockCall]:
        """The call log, optionally only one op's entries."""
        return [c for c in self.call_log if op is None or c.op == op]

    def _check_fault(self, kind: str, function: str, site: str | None = None) -> None:
        """Raise an injected fault, or the lost device's error; ``site``: the user's call."""
        if not self._faults and self._lost is None:
            return  # nothing injected: skip the lock on every op's path
        with self._lock:
            if self._lost is not None:
                raise DeviceLostError(
                    f"{function}: the device was lost earlier ({self._lost})",
                    backend="mock",
                    code=self._lost.code,
                    name=self._lost.name,
                    function=function,
                )
            for fault in self._faults:
                if fault.kind in (kind, "any"):
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                        self._quiet = not self._faults and self._lost is None
                    # A lost device's later errors quote this one: it names
                    # the call that lost it and where the user made that call.
                    where = ""
                    if issubclass(fault.error, DeviceLostError):
                        where = f" (at {site or caller_site()})"
                    exc = fault.error(
                        f"{function}: injected {fault.error.__name__}{where}",
                        backend="mock",
                        code=999,
                        name="MOCK_INJECTED_FAULT",
                        function=function,
                    )
                    if isinstance(exc, DeviceLostError):
                        self._lost = exc
                        self._quiet = False
                    raise exc

    def _log(self, call: MockCall) -> None:
        self.call_log.append(call)  # list.append is atomic; no lock needed

    def _copy_call(self, op: str, stream: DriverStream, nbytes: int) -> MockCall:
        assert isinstance(stream, _MockStream)
        key = (op, stream.id, nbytes)
        call = self._copy_calls.get(key)
        if call is None:
            if len(self._copy_calls) >= _CACHE_LIMIT:
                self._copy_calls.clear()
            call = self._copy_calls[key] = MockCall(op, key[1], nbytes)
        return call

    def _sized_call(
        self, calls: dict[int, MockCall], op: str, stream: DriverStream, nbytes: int
    ) -> MockCall:
        """A stream's log entry for an ``op`` of ``nbytes``, from its cache by size
        (``h2d_calls`` or ``d2h_calls``, which ffi/core/mockcopy.c reads too)."""
        call = calls.get(nbytes)
        if call is None:
            if len(calls) >= _CACHE_LIMIT:
                calls.clear()
            call = calls[nbytes] = self._copy_call(op, stream, nbytes)
        return call

    def _bytes(self, address: int, nbytes: int) -> memoryview:
        """A writable 1-D byte memoryview of device memory, cached per range."""
        key = (address, nbytes)
        mv = self._byte_views.get(key)
        if mv is None:
            if len(self._byte_views) >= _CACHE_LIMIT:
                self._byte_views.clear()
            mv = self._byte_views[key] = self.view(address, nbytes).data
        return mv

    def _array(self, address: int, nbytes: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """:meth:`view`, cached per range like :meth:`_bytes`."""
        key = (address, nbytes)
        array = self._array_views.get(key)
        if array is None:
            if len(self._array_views) >= _CACHE_LIMIT:
                self._array_views.clear()
            array = self._array_views[key] = self.view(address, nbytes)
        return array

    def _forget_views(self) -> None:
        """Memory was freed: a cached view may now name another allocation's bytes."""
        self._byte_views.clear()
        self._array_views.clear()

    # -- memory resolution -----------------------------------------------------
    def view(self, address: int, nbytes: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """A writable uint8 numpy view of ``nbytes`` of mock device memory."""
        if _HOST_MAPPED_BASE <= address < _DEVICE_BASE:
            return self._host_view(address, nbytes)
        i = bisect.bisect_right(self._bases, address) - 1
        array = self._arrays.get(self._bases[i]) if i >= 0 else None
        if array is None:  # below every slot, or in a free one
            raise InvalidArgumentError(f"mock: address 0x{address:x} is not device memory")
        base = self._bases[i]
        start = address - base
        if start + nbytes > array.size:
            raise InvalidArgumentError(
                f"mock: {nbytes} bytes at 0x{address:x} run past a {array.size}-byte allocation"
            )
        return array[start : start + nbytes]

    def _host_view(self, address: int, nbytes: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
        bases = sorted(self._host_mapped)
        i = bisect.bisect_right(bases, address) - 1
        alias = bases[i]
        host = self._host[self._host_mapped[alias]]
        start = address - alias
        return host[start : start + nbytes]

    # -- device ----------------------------------------------------------------
    def device_info(self) -> DeviceInfo:
        return self._info

    def device_limits(self) -> DeviceLimits:
        return profile_limits(self.profile)

    def mem_get_info(self) -> tuple[int, int]:
        return (self._info.total_memory - self._used, self._info.total_memory)

    def bind_to_thread(self) -> None:
        return None

    def close(self) -> None:
        with self._lock:
            self._forget_views()
            self._arrays.clear()
            self._bases.clear()
            self._free_slots.clear()
            self._host.clear()
            self._host_mapped.clear()

    # -- memory ------------------------------------------------------------------
    def mem_alloc(self, nbytes: int) -> int:
        self._check_fault("alloc", "alloc")
        with self._lock:
            if self._used + nbytes > self._info.total_memory:
                raise OutOfMemoryError(
                    f"alloc: {nbytes} bytes requested, {self._info.total_memory - self._used} "
                    f"of {self._info.total_memory} free",
                    backend="mock",
                    code=2,
                    name="MOCK_OUT_OF_MEMORY",
                    function="alloc",
                )
            slot = _slot_size(nbytes, self.profile.alloc_alignment)
            free = self._free_slots.get(slot)
            array = _zeros(nbytes, "alloc")
            if free:
                address = free.pop()
            else:
                address = self._next_address
                self._next_address += slot + _GAP
                self._bases.append(address)  # past every other slot: still sorted
            self._arrays[address] = array
            self._used += nbytes
        self._log(MockCall("alloc", nbytes=nbytes))
        return address

    def mem_alloc_managed(self, nbytes: int) -> int:
        return self.mem_alloc(nbytes)

    def mem_free(self, address: int) -> None:
        with self._lock:
            array = self._arrays.pop(address, None)
            if array is None:
                raise DriverError(
                    f"free: 0x{address:x} is not an allocation base",
                    backend="mock",
                    code=1,
                    name="MOCK_INVALID_VALUE",
                    function="free",
                )
            slot = _slot_size(array.size, self.profile.alloc_alignment)
            self._free_slots.setdefault(slot, []).append(address)
            self._used -= array.size
            self._forget_views()
        self._log(MockCall("free", nbytes=int(array.size)))

    def host_alloc(self, nbytes: int) -> tuple[int, memoryview]:
        self._check_fault("alloc_host", "alloc_host_pinned")
        array = _zeros(nbytes, "alloc_host_pinned")
        address = int(array.ctypes.data)
        with self._lock:
            self._host[address] = array
        self._log(MockCall("alloc_host", nbytes=nbytes))
        return address, memoryview(array)  # type: ignore[arg-type]

    def host_free(self, address: int) -> None:
        with self._lock:
            self._host.pop(address, None)
            self._forget_views()
            for alias in [a for a, h in self._host_mapped.items() if h == address]:
                del self._host_mapped[alias]
        self._log(MockCall("free_host"))

    def host_device_address(self, host_address: int) -> int:
        with self._lock:
            for alias, h in self._host_mapped.items():
                if h == host_address:
                    return alias
            alias = _HOST_MAPPED_BASE + len(self._host_mapped) * (1 << 36)
            self._host_mapped[alias] = host_address
            return alias

    # -- streams and events --------------------------------------------------------
    def priority_range(self) -> tuple[int, int]:
        return (0, 5)

    def stream_create(self, priority: int) -> DriverStream:
        if self._copies_due:  # the first stream: a copy needs one
            self._copies_due = False
            self._install_mock_copies()
        return DriverStream(_MockStream(next(self._ids), priority))

    def stream_destroy(self, stream: DriverStream) -> None:
        return None

    def event_create(self, timing: bool) -> DriverEvent:
        return DriverEvent(_MockEvent(timing))

    def event_destroy(self, event: DriverEvent) -> None:
        return None

    def event_record(self, event: DriverEvent, stream: DriverStream) -> None:
        assert isinstance(event, _MockEvent)
        if self._lost is not None:  # sticky, as cuEventRecord after a device loss
            raise DeviceLostError(
                f"record_event: the device was lost earlier ({self._lost})",
                backend="mock",
                code=self._lost.code,
                name=self._lost.name,
                function="record_event",
            )
        event.time = time.perf_counter()

    def event_query(self, event: DriverEvent) -> bool:
        return True

    def event_wait(self, event: DriverEvent) -> None:
        return None

    def event_elapsed_ms(self, start: DriverEvent, end: DriverEvent) -> float:
        start_time = getattr(start, "time", None)
        end_time = getattr(end, "time", None)
        if start_time is None or end_time is None:
            raise NotSupportedError(
                "elapsed_ms: event never recorded",
                backend="mock",
                function="elapsed_ms",
            )
        return float(end_time - start_time) * 1000.0

    def stream_wait_event(self, stream: DriverStream, event: DriverEvent) -> None:
        assert isinstance(stream, _MockStream)
        self._log(MockCall("stream_wait_event", stream=stream.id))

    # -- ops ---------------------------------------------------------------------------
    def _run(self, stream: DriverStream, kind: str, call: MockCall, op: Callable[[], None]) -> None:
        """Run ``op`` now, or record it if the stream is capturing."""
        assert isinstance(stream, _MockStream)
        if stream.recording is not None:
            stream.recording.append(lambda: self._execute(kind, call, op))
            return
        # _execute, inlined: this runs for every op.
        if self._faults or self._lost is not None:
            self._check_fault(kind, call.op)
        self.call_log.append(call)
        op()

    def _execute(
        self, kind: str, call: MockCall, op: Callable[[], None], site: str | None = None
    ) -> None:
        self._check_fault(kind, call.op, site)
        self._log(call)
        op()

    def memcpy_h2d(self, src: memoryview, dst: int, stream: DriverStream) -> None:
        n = src.nbytes
        if self._quiet and self.synchronous and stream.recording is None:  # type: ignore[attr-defined]
            # The common case, without _run's closure: log, then copy.  (The
            # threaded mock is not synchronous: its _run queues to a worker.)
            # Once both caches hold this size and range, the MockCopy over this
            # method (ffi/core/mockcopy.c) makes the copy without coming here.
            calls = stream.h2d_calls  # type: ignore[attr-defined]
            self.call_log.append(self._sized_call(calls, "copy_h2d", stream, n))
            self._bytes(dst, n)[:] = src
            return

        def op() -> None:
            # numpy copies without the GIL (a memoryview copy holds it): on the
            # threaded mock a large copy must not stall the event loop's thread.
            np.copyto(self.view(dst, n), np.frombuffer(src, dtype=np.uint8))

        self._run(stream, "copy_h2d", self._copy_call("copy_h2d", stream, n), op)

    def memcpy_d2h(self, src: int, dst: memoryview, stream: DriverStream) -> None:
        n = dst.nbytes
        if self._quiet and self.synchronous and stream.recording is None:  # type: ignore[attr-defined]
            # The common case, as in memcpy_h2d.
            calls = stream.d2h_calls  # type: ignore[attr-defined]
            self.call_log.append(self._sized_call(calls, "copy_d2h", stream, n))
            dst[:] = self._bytes(src, n)
            return

        def op() -> None:
            np.copyto(np.frombuffer(dst, dtype=np.uint8), self.view(src, n))

        self._run(stream, "copy_d2h", self._copy_call("copy_d2h", stream, n), op)

    def memcpy_d2d(self, src: int, dst: int, nbytes: int, stream: DriverStream) -> None:
        def op() -> None:
            np.copyto(self.view(dst, nbytes), self.view(src, nbytes))

        self._run(stream, "copy_d2d", MockCall("copy_d2d", _sid(stream), nbytes), op)

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
        def op() -> None:
            s = self.view(src, (height - 1) * src_pitch + width_bytes)
            d = self.view(dst, (height - 1) * dst_pitch + width_bytes)
            for row in range(height):
                d[row * dst_pitch : row * dst_pitch + width_bytes] = s[
                    row * src_pitch : row * src_pitch + width_bytes
                ]

        call = MockCall("copy_2d", _sid(stream), width_bytes * height)
        self._run(stream, "copy_2d", call, op)

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: DriverStream) -> None:
        if self._quiet and self.synchronous and stream.recording is None:  # type: ignore[attr-defined]
            # The common case, as in memcpy_h2d: a cached log entry and view, no closure.
            self.call_log.append(self._copy_call("memset", stream, nbytes))
            self._array(dst, nbytes).fill(value)
            return

        def op() -> None:
            self.view(dst, nbytes).fill(value)

        self._run(stream, "memset", MockCall("memset", _sid(stream), nbytes), op)

    # -- modules -------------------------------------------------------------------------
    def module_image_types(self) -> tuple[type, ...]:
        return (dict,)

    def builtin_module_image(self, name: str) -> Any:
        from ._kernels import MODULES

        if name not in MODULES:
            return super().builtin_module_image(name)
        return dict(MODULES[name])

    def module_load(self, image: Any) -> DriverModule:
        kernels: dict[str, Callable[..., Any]] = {}
        for key, fn in image.items():
            if not isinstance(key, str):
                raise TypeError(f"load_module: mock kernel names must be str, got {key!r}")
            if not callable(fn):
                raise TypeError(f"load_module: mock kernel {key!r} is not callable")
            kernels[key] = fn
        return DriverModule(_MockModule(kernels))

    def module_unload(self, module: DriverModule) -> None:
        return None

    def module_function(self, module: DriverModule, name: str) -> DriverFunction:
        assert isinstance(module, _MockModule)
        fn = module.kernels.get(name)
        if fn is None:
            known = ", ".join(sorted(module.kernels)) or "none"
            raise InvalidArgumentError(
                f"kernel: the module has no kernel {name!r} (it has: {known})"
            )
        sizes = getattr(fn, "param_sizes", None)
        pointers = frozenset(getattr(fn, "pointer_params", ()))
        return DriverFunction(
            _MockFunction(
                name, fn, _arity(fn), tuple(sizes) if sizes is not None else None, pointers
            )
        )

    def launch(
        self,
        function: DriverFunction,
        config: LaunchConfig,
        args: Sequence[Any],
        stream: DriverStream,
    ) -> None:
        assert isinstance(function, _MockFunction)
        # The same checks the native drivers make (by signature, as the
        # callable knows no byte sizes unless it declares them), so a wrong
        # count fails on mock as it does on the GPU backends.
        if function.param_sizes is not None:
            check_arg_sizes(function.name, function.param_sizes, args)
        elif function.arity is not None:
            fewest, most = function.arity
            check_arg_count(function.name, fewest, args, most)
        frozen_args = tuple(args)
        # Where the user launched it, for the sticky error a fault leaves: the
        # threaded mock runs the kernel later, on a worker, far from the call.
        site = caller_site()

        def op() -> None:
            try:
                views = [self._kernel_arg(function, i, a) for i, a in enumerate(frozen_args)]
                function.fn(config, *views)
            except MemoryFault as fault:
                # A GPU faults with an illegal address here, and the error is
                # sticky: every later op of the context fails with it
                # (cuda.h, CUDA_ERROR_ILLEGAL_ADDRESS), so stale results are
                # never returned as if nothing had happened.
                code, name, kind = 700, "MOCK_ILLEGAL_ADDRESS", "illegal address"
                if isinstance(fault, MisalignedFault):
                    # CUDA_ERROR_MISALIGNED_ADDRESS, sticky as the illegal address is.
                    code, name, kind = 716, "MOCK_MISALIGNED_ADDRESS", "misaligned address"
                    what = (
                        f"made a {fault.itemsize}-byte access {fault.offset} bytes past a "
                        f"multiple of {fault.itemsize} (a misaligned access"
                    )
                elif fault.address is not None:
                    what = (
                        f"was passed address 0x{fault.address:x} as raw argument bytes, "
                        "which is no live allocation (an access there"
                    )
                else:
                    what = (
                        f"accessed {fault.nbytes} bytes of a {fault.size}-byte buffer (an "
                        "out-of-bounds access"
                    )
                lost = DeviceLostError(
                    f"launch: mock kernel {function.name!r} (launched at {site}) {what}: "
                    f"{kind}; the device is unusable until the backend is reopened)",
                    backend="mock",
                    code=code,
                    name=name,
                    function="launch",
                )
                with self._lock:
                    if self._lost is None:
                        self._lost = lost
                        self._quiet = False
                raise lost from None
            except Exception as exc:
                raise DriverError(
                    f"launch: mock kernel {function.name!r} raised {exc!r}",
                    backend="mock",
                    code=719,
                    name="MOCK_KERNEL_EXCEPTION",
                    function="launch",
                ) from exc

        call = MockCall("launch", _sid(stream), kernel=function.name, args=frozen_args)
        self._run(stream, "launch", call, op)

    def _kernel_arg(self, function: _MockFunction, index: int, arg: Any) -> Any:
        """What a mock kernel gets for one launch argument.

        A DevicePtr is a writable uint8 view of its bytes.  8 raw bytes are an
        address, as the native drivers read them: at a declared pointer
        parameter, a view from that address to the end of its allocation, and
        an address that is no live allocation faults like an illegal access;
        elsewhere, an address in a live allocation is such a view, and other
        bytes stay bytes.  Everything else is passed as it is.
        """
        if isinstance(arg, DevicePtr):
            return self.view(arg.address, arg.nbytes)
        if type(arg) is not bytes or len(arg) != 8:
            return arg
        address = int.from_bytes(arg, "little")
        rest = self._rest_of_allocation(address)
        if rest is not None:
            return rest
        if index in function.pointer_params:
            raise MemoryFault(8, 0, address=address)
        return arg

    def _rest_of_allocation(self, address: int) -> np.ndarray[Any, np.dtype[np.uint8]] | None:
        """The bytes from ``address`` to the end of its live allocation, or None."""
        with self._lock:
            i = bisect.bisect_right(self._bases, address) - 1
            array = self._arrays.get(self._bases[i]) if i >= 0 else None
            start = address - self._bases[i] if array is not None else 0
        if array is None or start >= array.size:
            return None
        return array[start:]

    # -- graphs ----------------------------------------------------------------------------
    def capture_begin(self, stream: DriverStream) -> None:
        assert isinstance(stream, _MockStream)
        stream.recording = []

    def capture_end(self, stream: DriverStream) -> DriverGraph:
        assert isinstance(stream, _MockStream)
        ops, stream.recording = stream.recording or [], None
        return DriverGraph(_MockGraph(ops))

    def capture_abort(self, stream: DriverStream) -> None:
        assert isinstance(stream, _MockStream)
        stream.recording = None

    def graph_launch(self, graph: DriverGraph, stream: DriverStream) -> None:
        assert isinstance(graph, _MockGraph)

        def op() -> None:
            for step in graph.ops:
                step()

        call = MockCall("graph_launch", _sid(stream), nbytes=len(graph.ops))
        self._run(stream, "graph_launch", call, op)

    def graph_destroy(self, graph: DriverGraph) -> None:
        assert isinstance(graph, _MockGraph)
        graph.ops.clear()

    # -- interop -------------------------------------------------------------------------
    def dlpack_device(self) -> tuple[int, int]:
        # Not kDLCPU, though the bytes are numpy's: on a device, numpy cannot
        # read device memory, and a test that relied on it here would pass on
        # the mock and fail there.  kDLExtDev: no consumer reads it, as none
        # reads another backend's device memory.  view() is the explicit look.
        return (KDL_EXT_DEV, 0)


def _zeros(nbytes: int, function: str) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """Backing memory, or OutOfMemoryError when this machine cannot provide it."""
    try:
        return np.zeros(nbytes, dtype=np.uint8)
    except MemoryError:
        raise OutOfMemoryError(
            f"{function}: the host cannot back {nbytes} bytes of mock memory",
            backend="mock",
            code=2,
            name="MOCK_OUT_OF_MEMORY",
            function=function,
        ) from None


def _slot_size(nbytes: int, align: int) -> int:
    """The address space an allocation of ``nbytes`` takes, before the gap after it."""
    return (nbytes + align - 1) // align * align


def _sid(stream: DriverStream) -> int:
    assert isinstance(stream, _MockStream)
    return stream.id
