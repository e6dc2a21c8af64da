"""Backend: the public surface of one opened device (docs/design.md, "Layers").

This class is a facade, the same for every backend: each method hands its
call to the part that owns it (each a small module):

* ``_ops``: the async ops, each validated, built into an
  :class:`aruntime._op.Op` and submitted to its stream (``stream.submit``);
* ``_state``: what the backend holds (ledger, resource registry, waiters);
* ``_submit``: the completion policy (synchronous or marker and waiter);
* ``_alloc``: device, managed, arena and pinned memory over the ledger;
* ``_objects``: streams, events, modules and kernels;
* ``_graphs``: capture and graphs;
* ``_shutdown``: close(), the exit hook and the finalizer paths;
* ``_trace``: tracing, which subscribes to the ops' Completions.

The backend-specific work is done by a :class:`aruntime._driver.Driver`.

Threading: every method may be called from any thread.  Synchronous methods
only enqueue work and never wait for the device, except the blocking copies
(``copy_h2d``, ``copy_d2h``, ``copy_d2d``, ``memset``), which exist to block,
and ``close()``, which waits for queued work before releasing memory.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any

from ._alloc import Allocator
from ._array import DeviceArray, DeviceMem
from ._blocking import check as check_blocking
from ._completion import Completion, settled
from ._compute import ComputeOps
from ._driver import DeviceInfo, DeviceLimits, Driver
from ._exceptions import AruntimeError, CaptureError, InvalidArgumentError
from ._graphs import Graphs
from ._handles import Event, Graph, Stream
from ._interop import foreign_stream_handle
from ._ledger import AllocKind, Ledger
from ._memory import Allocation, DevicePtr, HostBuffer
from ._modules import Kernel, Module
from ._objects import Objects
from ._op import OpKind
from ._ops import Ops
from ._peer_copy import PeerCopies
from ._shutdown import Shutdown
from ._state import BackendState
from ._submit import Markers, make_policy, with_unseen_errors
from ._trace import Trace, trace_env_path
from ._validate import check_count

__all__ = ["Backend", "BackendStatistics"]


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

    def __init__(self, driver: Driver, *, check_hazards: bool = False) -> None:
        state = BackendState(driver, self, self, check_hazards=check_hazards)
        self._state = state
        self._driver = driver
        self._ledger: Ledger = state.ledger
        self._policy = make_policy(state, Markers(state))
        self._objects = Objects(state, self._policy)
        self._alloc = Allocator(state, self, self._objects)
        self._graphs_part = Graphs(state, self._objects)
        self._peers = PeerCopies(state, self, self._objects)
        self._ops = Ops(state, self, self._objects, self._peers)
        self._shutdown = Shutdown(state, self, self._policy)
        self._tracing = state.tracing
        env_trace = trace_env_path()
        if env_trace is not None:
            Shutdown.need_exit_hook()
            state.tracing.start_env(env_trace)

    # ------------------------------------------------------------------ device
    @property
    def name(self) -> str:
        """The backend's name: ``"mock"``, ``"cuda"``, ``"cuda-sim"``..."""
        return self._state.name

    @property
    def device(self) -> DeviceInfo:
        """The device's name, total memory and compute units."""
        return self._state.info

    @property
    def limits(self) -> DeviceLimits:
        """What the device allows; each launch and allocation is checked against it first."""
        return self._state.limits

    @property
    def driver(self) -> Driver:
        """The driver object, for backend-specific extras (the mock's call log...)."""
        return self._driver

    @property
    def check_hazards(self) -> bool:
        """Whether stream-race checking is on (``open_backend(check_hazards=...)``)."""
        return self._state.hazards is not None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has begun; ops and allocations then raise ClosedResourceError."""
        return self._state.closed

    def total_memory(self) -> int:
        """The device's memory in bytes, as reported at open (it answers after close too)."""
        return self._state.info.total_memory

    def free_memory(self) -> int:
        """Total memory less what this backend's ledger holds."""
        self._state.check_open("free_memory")
        return max(0, self._state.info.total_memory - self._ledger.live_bytes())

    def device_free_memory(self) -> int:
        """Free memory as the driver reports it (other users of the device count)."""
        self._state.check_open("device_free_memory")
        return self._driver.mem_get_info()[0]

    def sm_count(self) -> int:
        """The device's compute units: SMs on CUDA, EUs on Level Zero (``device.compute_units``)."""
        return self._state.info.compute_units

    def bind_to_thread(self) -> None:
        """Make this device current on the calling thread (for foreign libraries)."""
        self._state.check_open("bind_to_thread")
        self._driver.bind_to_thread()

    def __repr__(self) -> str:
        state = " closed" if self._state.closed else ""
        return f"<aruntime.Backend {self.name} {self._state.info.name!r}{state}>"

    def statistics(self) -> BackendStatistics:
        """An immutable snapshot of what this backend holds right now."""
        state = self._state
        every = state.open_streams()
        return BackendStatistics(
            live_allocations=self._ledger.live_count(),
            live_bytes=self._ledger.live_bytes(),
            open_streams=sum(1 for st in every if not st.is_default),
            open_events=state.count_open(Event),
            open_graphs=state.count_open(Graph),
            pending_ops=sum(st.state.pending() for st in every),
            waiter_threads=sum(1 for st in every if st.state.waiter is not None),
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
        return self._tracing.start(path)

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int) -> DevicePtr:
        """Device memory of ``nbytes`` (> 0) bytes."""
        return self._alloc.alloc("alloc", nbytes, AllocKind.DEVICE, self._driver.mem_alloc)

    def alloc_managed(self, nbytes: int) -> DevicePtr:
        """Memory reachable from host and device (unified/shared memory)."""
        allocate = self._driver.mem_alloc_managed
        return self._alloc.alloc("alloc_managed", nbytes, AllocKind.MANAGED, allocate)

    def alloc_arena(self, nbytes: int) -> DevicePtr:
        """A large device block for the caller to sub-allocate with ``ptr[a:b]``."""
        return self._alloc.alloc("alloc_arena", nbytes, AllocKind.ARENA, self._driver.mem_alloc)

    def free(self, ptr: DevicePtr) -> None:
        """Free device memory from ``alloc``/``alloc_managed``.

        The pointer is invalid at once; the driver releases the memory only
        after the work already queued has finished, so a freed buffer is never
        pulled from under the device.
        """
        self._alloc.free("free", ptr, (AllocKind.DEVICE, AllocKind.MANAGED))

    def free_arena(self, ptr: DevicePtr) -> None:
        """Free an :meth:`alloc_arena` block, after queued work finishes (as :meth:`free`).

        ``ptr`` must be the pointer ``alloc_arena`` returned, not a view into it,
        and only arena memory is freed here (:class:`InvalidArgumentError`).
        """
        self._alloc.free("free_arena", ptr, (AllocKind.ARENA,))

    def alloc_async(self, nbytes: int, stream: Stream | None = None) -> DevicePtr:
        """Device memory of ``nbytes`` bytes, usable at once by ``stream``'s later work.

        Stream-ordered, as ``cuMemAllocAsync``: ops enqueued on ``stream`` after
        this call may use the memory; other streams must be ordered after that
        stream (``stream_wait_event``) first.  Memory freed with
        :meth:`free_async` is reused.  Never blocks and never synchronises.
        On a capturing stream, CUDA records it as a graph memory node: each
        launch allocates it until the captured :meth:`free_async` (or one
        after the launch); other backends raise ``CaptureError``.
        """
        return self._alloc.alloc_async(nbytes, stream)

    def free_async(self, ptr: DevicePtr, stream: Stream | None = None) -> None:
        """Free ``alloc_async`` memory once ``stream``'s work queued so far is done.

        The pointer is invalid at once.  Work on other streams that uses the
        memory must be ordered before this call on ``stream``.  Never blocks.
        """
        self._alloc.free_async(ptr, stream)

    def alloc_host_pinned(self, nbytes: int) -> HostBuffer:
        """Page-locked host memory, as a 1-D ``uint8`` :class:`HostBuffer`."""
        return self._alloc.alloc_host_pinned(nbytes)

    def free_host_pinned(self, buf: HostBuffer) -> None:
        """Release pinned host memory after the work queued on it; refused while a view lives."""
        self._alloc.free_host_pinned(buf)

    def host_ptr_to_device(self, buf: HostBuffer) -> DevicePtr:
        """The device pointer that aliases pinned host memory (zero-copy access)."""
        return self._alloc.host_ptr_to_device(buf)

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
        self._state.check_open(fn)
        if not isinstance(ptr, DevicePtr):
            raise TypeError(f"{fn}: ptr must be a DevicePtr, got {type(ptr).__name__}")
        self._ledger.check_ptr(ptr, fn)
        if stream is not None:
            self._objects.resolve(stream, fn)
        return DeviceArray(ptr, shape, dtype, strides=strides, stream=stream, owner=self)

    def array_from_numpy(self, array: Any, *, stream: Stream | None = None) -> DeviceArray:
        """Upload ``array`` to new device memory (blocking) as an owning DeviceArray.

        ``close()`` the result (or use ``with``) to free the memory.
        """
        self._state.check_open("array_from_numpy")
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
        self._state.check_open(fn)
        handle = foreign_stream_handle(stream, fn)
        return self._objects.new_stream(0, default=False, adopt=handle)

    # ------------------------------------------------------------------ ledger
    def live_bytes(self) -> int:
        """Bytes the ledger holds: device, managed, arena, async and pinned host memory."""
        return self._ledger.live_bytes()

    def live_alloc_count(self) -> int:
        """How many allocations the ledger holds (views and aliases of them do not count)."""
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
        return self._alloc.sweep_unreleased()

    def scan_redzones(self) -> int:
        """Check every guard band; return how many were overwritten (0 when off)."""
        return self._alloc.scan_redzones()

    def poison_redzones(self, lo: int, hi: int) -> int:
        """Refill every guard band: ``lo`` below each allocation, ``hi`` above.

        The two byte values become the patterns :meth:`scan_redzones` expects.
        Returns the number of allocations whose bands were written.
        """
        return self._alloc.poison_redzones(lo, hi)

    # -------------------------------------------------------- blocking copies
    def copy_h2d(self, src: Any, dst: DeviceMem) -> None:
        """Copy host memory to the device and wait (blocks the calling thread)."""
        check_blocking("copy_h2d", "'await gpu.copy_h2d_async(src, dst)'")
        self.copy_h2d_async(src, dst)._block()

    def copy_d2h(self, src: DeviceMem, dst: Any) -> Any:
        """Copy device memory into a writable host buffer and wait; returns ``dst``."""
        check_blocking("copy_d2h", "'await gpu.copy_d2h_async(src, dst)'")
        return self.copy_d2h_async(src, dst)._block()

    def copy_d2d(self, src: DeviceMem, dst: DeviceMem, nbytes: int) -> None:
        """Copy ``nbytes`` bytes between device ranges on the default stream and wait.

        Blocks the calling thread (on a loop, use :meth:`copy_d2d_async`).  The
        ranges must hold ``nbytes`` and not overlap (:class:`InvalidArgumentError`);
        a failed op raises its :class:`DriverError`.
        """
        check_blocking("copy_d2d", "'await gpu.copy_d2d_async(src, dst, nbytes)'")
        self.copy_d2d_async(src, dst, nbytes)._block()

    def memset(self, ptr: DeviceMem, value: int, nbytes: int) -> None:
        """Set ``nbytes`` bytes at ``ptr`` to ``value`` (0..255) on the default stream and wait.

        Blocks the calling thread (on a loop, use :meth:`memset_async`).  A bad
        value or range raises :class:`InvalidArgumentError`, a failed op its DriverError.
        """
        check_blocking("memset", "'await gpu.memset_async(ptr, value, nbytes)'")
        self.memset_async(ptr, value, nbytes)._block()

    # -------------------------------------------------------------- async ops
    def copy_h2d_async(self, src: Any, dst: DeviceMem, stream: Stream | None = None) -> Completion:
        """Enqueue a host-to-device copy of all of ``src``'s bytes.

        ``await`` returns None.  Cancelling the await abandons the wait only:
        the copy continues and ``src`` stays referenced (and unresizable) until
        the device has read it.
        """
        return self._ops.copy_h2d_async(src, dst, stream)

    def copy_d2h_async(self, src: DeviceMem, dst: Any, stream: Stream | None = None) -> Completion:
        """Enqueue a device-to-host copy filling all of ``dst``.

        ``await`` returns ``dst``.  Cancelling the await abandons the wait
        only: ``dst`` stays referenced (and unresizable) until the device has
        written it; read it only after the Completion is done.
        """
        return self._ops.copy_d2h_async(src, dst, stream)

    def copy_d2d_async(
        self, src: DeviceMem, dst: DeviceMem, nbytes: int, stream: Stream | None = None
    ) -> Completion:
        """Enqueue a device-to-device copy.  Cancelling the await abandons the wait only."""
        return self._ops.copy_d2d_async(src, dst, nbytes, stream)

    def can_access_peer(self, other: Backend) -> bool:
        """Whether this device reaches ``other``'s memory directly (False for itself).

        ``copy_d2d_async`` between two devices of one driver works either way.
        """
        return self._peers.can_access(other)

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
        return self._ops.copy_d2d_2d_async(
            src, src_pitch, dst, dst_pitch, width_bytes, height, stream
        )

    def memset_async(
        self, ptr: DeviceMem, value: int, nbytes: int, stream: Stream | None = None
    ) -> Completion:
        """Enqueue setting ``nbytes`` bytes to ``value``.  Cancelling abandons the wait only."""
        return self._ops.memset_async(ptr, value, nbytes, stream)

    def launch(
        self,
        kernel: Kernel,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: list[Any] | tuple[Any, ...],
        *,
        shared_mem: int = 0,
        stream: Stream | None = None,
        reads: tuple[DeviceMem, ...] | list[DeviceMem] | None = None,
        writes: tuple[DeviceMem, ...] | list[DeviceMem] | None = None,
    ) -> Completion:
        """Enqueue a kernel launch.

        ``args`` are explicit: DevicePtr, numpy scalars (``np.float32(2)``) or
        raw bytes; a bare Python int or float raises :class:`TypeError`.
        Cancelling the await abandons the wait only.

        ``reads``/``writes`` narrow the pointer arguments for race checking: a
        pointer only in ``reads`` is read; any other is read and written, all
        of it.  Each must be one of ``args``' pointers (InvalidArgumentError).
        """
        return self._ops.launch(kernel, grid, block, args, shared_mem, stream, reads, writes)

    def synchronize(self, stream: Stream | None = None) -> Completion:
        """A Completion for all work queued on ``stream`` so far (default stream if None).

        Awaiting it raises the first error of an op on that stream that nobody
        awaited (and logs it).  Cancelling the await abandons the wait only.
        """
        fn = "synchronize"
        self._state.check_open(fn)
        st = self._objects.resolve(stream, fn)
        if st.state.capturing:
            raise CaptureError(f"{fn}: {st!r} is capturing; end the capture first")
        completion = with_unseen_errors(self._policy.drained(OpKind.SYNCHRONIZE, st), st, fn)
        hazards = self._state.hazards
        return completion if hazards is None else hazards.synchronize(completion, st)

    def event_synchronize(self, event: Event) -> Completion:
        """A Completion for the work before ``event``'s latest record.

        An event never recorded is complete at once.  Cancelling the await
        abandons the wait only.
        """
        fn = "event_synchronize"
        self._state.check_open(fn)
        checked = self._objects.check_event(event, fn)
        completion = self._policy.event_synchronize(fn, checked)
        hazards = self._state.hazards
        return completion if hazards is None else hazards.event_synchronize(completion, checked)

    # -------------------------------------------------------------- streams
    def create_stream(self, *, priority: int = 0) -> Stream:
        """A new stream.  Larger ``priority`` numbers run first where the device can."""
        return self._objects.create_stream(priority)

    def default_stream(self) -> Stream:
        """The backend's own stream, used wherever ``stream=None``."""
        return self._objects.default_stream()

    def stream_is_capturing(self, stream: Stream) -> bool:
        """Whether ``stream`` is recording its ops into a graph (see :meth:`begin_capture`)."""
        self._state.check_open("stream_is_capturing")
        return self._objects.resolve(stream, "stream_is_capturing").state.capturing

    # -------------------------------------------------------------- events
    def create_event(self, *, timing: bool = False) -> Event:
        """A new event; ``timing=True`` allows :meth:`elapsed_ms`."""
        return self._objects.create_event(timing)

    def record_event(self, event: Event, stream: Stream | None = None) -> None:
        """Mark the current end of ``stream``'s queue with ``event``."""
        self._objects.record_event(event, stream)

    def stream_wait_event(self, stream: Stream, event: Event) -> None:
        """Make ``stream``'s later work wait for ``event`` (on the device, no host wait)."""
        self._objects.stream_wait_event(stream, event)

    def event_query(self, event: Event) -> bool:
        """True once the device has passed the event's latest record.  Never blocks."""
        return self._objects.event_query(event)

    def elapsed_ms(self, start: Event, end: Event) -> float:
        """Milliseconds of device time between two completed timing events."""
        return self._objects.elapsed_ms(start, end)

    def destroy_event(self, event: Event) -> None:
        """Destroy an event (idempotent).  Queued work that records it still runs."""
        self._objects.destroy_event(event)

    # -------------------------------------------------------------- modules
    def load_module(self, name: str, image: Any) -> Module:
        """Load a module image under ``name`` (PTX/cubin/fatbin, SPIR-V, a dict on mock)."""
        return self._objects.load_module(name, image)

    def builtin_module(self, name: str = "vector_ops") -> Module:
        """aruntime's own portable kernels, built for this backend, loaded once.

        ``"vector_ops"`` has ``saxpy(n: u32, a: f32, x, y)`` (y = a*x + y),
        ``fill_f32(n, value, y)``, ``scale_f32(n, a, y)``, ``add_f32(n, x, y, z)``
        and ``iota_u32(n, start, y)``; launch 1-D with grid * block >= n.
        """
        return self._objects.builtin_module(name)

    def has_module(self, name: str) -> bool:
        """Whether a module is loaded under ``name`` (a str; ``TypeError`` otherwise)."""
        if not isinstance(name, str):
            raise TypeError(f"has_module: name must be a str, got {type(name).__name__}")
        return name in self._state.modules

    def kernel(self, module: Module | str, func_name: str) -> Kernel:
        """The kernel ``func_name`` of a loaded module (a Module or its name)."""
        return self._objects.kernel(module, func_name)

    # -------------------------------------------------------------- graphs
    def begin_capture(self, stream: Stream) -> None:
        """Start recording ``stream``'s ops into a graph instead of running them."""
        self._graphs_part.begin_capture(stream)

    def end_capture(self, stream: Stream) -> Graph:
        """Stop recording and return the executable :class:`Graph`."""
        graphs = self._graphs_part
        return graphs.new_graph(graphs.end_capture(stream, "end_capture"))

    def abort_capture_if_active(self, stream: Stream) -> bool:
        """End a capture on ``stream`` and discard it; True if one was active."""
        return self._graphs_part.abort_capture_if_active(stream)

    def capture(self, stream: Stream) -> contextlib.AbstractContextManager[Graph]:
        """``with gpu.capture(stream) as graph:`` records the block's ops on ``stream``.

        ``graph`` is ready to launch after the block.  If the block raises, the
        capture is aborted and the graph stays empty.
        """
        return self._graphs_part.capture(stream)

    def launch_graph(self, graph: Graph, stream: Stream | None = None) -> Completion:
        """Enqueue one replay of ``graph``.  Cancelling the await abandons the wait only."""
        return self._graphs_part.launch_graph(graph, stream)

    def destroy_graph(self, graph: Graph) -> None:
        """Destroy a graph (idempotent) and release the host buffers it kept."""
        self._graphs_part.check_graph(graph, "destroy_graph").close()

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Wait for queued work, then release every resource (idempotent).

        Blocks the calling thread until the device is idle; use ``async with``
        to wait without blocking a loop.  Raises the first error of an op that
        nobody awaited (after releasing everything), and logs every such error.
        """
        self._shutdown.close()

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
            if not self._state.closed:
                for completion in self._shutdown.pending_completions():
                    # Settled, not awaited: awaiting would mark an error as
                    # seen (stream order hands the first failure to every later op),
                    # and close() must still report one nobody awaited.
                    await settled(completion)
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
