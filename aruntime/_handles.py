"""Handle objects: Stream, Event, Graph, Module, Kernel.

They are made only by a backend's factories (``create_stream``,
``create_event``, ``end_capture``, ``load_module``, ``kernel``).  Each one
holds its driver handle, closes idempotently, is a context manager, and has a
``weakref.finalize`` safety net that warns with :class:`ResourceWarning` when
a handle is dropped unclosed (the backend still releases it when it closes).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

from ._callsite import user_frame, warn_at
from ._driver import Driver, DriverEvent, DriverFunction, DriverGraph, DriverModule, DriverStream
from ._exceptions import ClosedResourceError, NotSupportedError

if TYPE_CHECKING:
    from ._completion import Completion
    from ._streamstate import StreamState

__all__ = ["Event", "Graph", "HandleOwner", "Kernel", "Module", "Stream"]


class HandleOwner(Protocol):
    """The backend, as its handles see it: the public calls they are sugar for."""

    @property
    def name(self) -> str: ...

    def synchronize(self, stream: Stream | None = None) -> Completion: ...

    def event_synchronize(self, event: Event) -> Completion: ...

    def record_event(self, event: Event, stream: Stream | None = None) -> None: ...

    def event_query(self, event: Event) -> bool: ...

    def destroy_event(self, event: Event) -> None: ...

    def launch_graph(self, graph: Graph, stream: Stream | None = None) -> Completion: ...

    def destroy_graph(self, graph: Graph) -> None: ...


def _on_dropped(
    kind: str, description: str, site: tuple[str, int], release: Callable[[], None]
) -> None:
    """Finalizer of a handle that was garbage-collected without ``close()``."""
    warn_at(
        site,
        f"unclosed {kind} {description}: close it (or use 'with') so its driver "
        "resources are released promptly",
    )
    try:
        release()
    except Exception:  # a finalizer must never raise into the collector
        logging.getLogger("aruntime").exception("releasing a dropped %s failed", kind)


class _Handle:
    """Shared plumbing: the owning backend, a closed flag, the finalizer."""

    _kind = "handle"

    def __init__(self, backend: HandleOwner) -> None:
        self._backend = backend
        self._closed = False
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _arm_finalizer(self, release: Callable[[], None]) -> None:
        """Warn and release via ``release`` (which must not reference self) if dropped.

        The warning names the user's line that created the handle, found here
        (handles are made by the backend's factories, called from that line).
        """
        finalizer = weakref.finalize(
            self, _on_dropped, self._kind, repr(self), user_frame(), release
        )
        finalizer.atexit = False  # at exit the backend's own exit hook cleans up
        self._finalizer = finalizer

    @property
    def backend(self) -> HandleOwner:
        """The backend that made this handle."""
        return self._backend

    @property
    def closed(self) -> bool:
        """True once released (by ``close()`` where it has one, or when its backend closes)."""
        return self._closed

    def _mark_closed(self) -> bool:
        """Flip to closed; False if it already was."""
        if self._closed:
            return False
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()
        return True

    def check_open(self, fn: str) -> None:
        """Raise :class:`ClosedResourceError` naming ``fn`` if this handle is closed."""
        if self._closed:
            raise ClosedResourceError(f"{fn}: {self!r} is closed")

    _check_open = check_open


class Stream(_Handle):
    """An in-order queue of device work.

    ``await stream`` is ``await backend.synchronize(stream)``; cancelling
    that await abandons the wait only, the queued work still runs.  ``close()``
    never blocks: work already queued still runs and its Completions still
    finish; the driver stream is destroyed once it has drained.
    """

    _kind = "stream"

    def __init__(
        self,
        backend: HandleOwner,
        driver: Driver,
        handle: DriverStream,
        priority: int,
        state: StreamState,
        closer: Callable[[Stream], None],
        *,
        default: bool = False,
        foreign: bool = False,
    ) -> None:
        self.handle = handle
        self.priority = priority
        self.is_default = default
        #: Adopted by ``wrap_stream``: another library owns the native stream.
        self.foreign = foreign
        #: The core's bookkeeping for this stream (lock, waiter, capture, errors).
        self.state = state
        self._driver = driver
        self._closer = closer
        super().__init__(backend)

    def __repr__(self) -> str:
        label = "default stream" if getattr(self, "is_default", False) else "stream"
        if getattr(self, "foreign", False):
            label = "foreign stream"
        state = " closed" if getattr(self, "_closed", False) else ""
        return f"<{label} 0x{id(self):x}{state}>"

    @property
    def capturing(self) -> bool:
        """Whether ops on this stream are being recorded into a graph."""
        return self.state.capturing

    def close(self) -> None:
        """Release the stream (idempotent).  The default stream closes with its backend."""
        if self.is_default:
            return
        self._closer(self)

    def synchronize(self) -> Completion:
        """Same as ``backend.synchronize(self)``: a Completion for all work queued so far.

        Awaiting it raises the first unawaited error of an op on this stream.
        Cancelling the await abandons the wait only; the work still runs.
        Raises :class:`ClosedResourceError` if the stream or its backend is closed.
        """
        return self._backend.synchronize(self)

    @property
    def __cuda_stream__(self) -> Callable[[], tuple[int, int]]:
        """The CUDA stream protocol: ``stream.__cuda_stream__()`` is ``(0, CUstream address)``.

        Only CUDA backends have it (``hasattr`` is False elsewhere), so
        libraries that probe for the protocol (cuda.core, CuPy, PyTorch) take
        the stream only where they can use it.
        """
        self.check_open("__cuda_stream__")
        try:
            handle = self._driver.stream_handle_int(self.handle)
        except NotSupportedError:
            raise AttributeError(
                f"__cuda_stream__: {self._backend.name} streams are not CUDA streams"
            ) from None
        return lambda: (0, handle)

    def __await__(self) -> Generator[Any, None, None]:
        """Wait for all work queued so far; cancelling abandons the wait only."""
        return self._backend.synchronize(self).__await__()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Older spellings, kept for code (and tests) that looked inside.
    @property
    def _waiter_box(self) -> list[Any]:
        return [self.state.waiter]

    def _take_failures(self) -> list[Completion]:
        return self.state.take_failures()


class Event(_Handle):
    """A point in a stream.  ``await event`` waits until the device reaches it.

    Cancelling the await abandons the wait only.
    """

    _kind = "event"

    def __init__(self, backend: HandleOwner, handle: DriverEvent, timing: bool) -> None:
        self.handle = handle
        self.timing = timing
        self._last_stream: Stream | None = None
        super().__init__(backend)

    def __repr__(self) -> str:
        return f"<event 0x{id(self):x}{' timing' if getattr(self, 'timing', False) else ''}>"

    @property
    def last_stream(self) -> Stream | None:
        """The stream of the latest ``record`` (None if never recorded)."""
        return self._last_stream

    @property
    def recorded(self) -> bool:
        """Whether the event has been recorded at least once (:meth:`record`)."""
        return self._last_stream is not None

    def note_recorded(self, stream: Stream) -> None:
        """The core recorded this event on ``stream`` (called with the stream's lock held)."""
        self._last_stream = stream

    def close(self) -> None:
        """Destroy the event (idempotent); same as ``backend.destroy_event(event)``."""
        self._backend.destroy_event(self)

    def record(self, stream: Stream | None = None) -> None:
        """Same as ``backend.record_event(event, stream)``: mark ``stream``'s current end.

        Never blocks.  Raises :class:`CaptureError` on a capturing stream and
        :class:`ClosedResourceError` if the event, the stream or the backend is closed.
        """
        self._backend.record_event(self, stream)

    def query(self) -> bool:
        """Same as ``backend.event_query(event)``: True once the device passed the latest record.

        Never blocks; an event never recorded counts as passed.  Raises
        :class:`ClosedResourceError` if the event or its backend is closed.
        """
        return self._backend.event_query(self)

    def __await__(self) -> Generator[Any, None, None]:
        """Wait until the device reaches the latest record; cancelling abandons the wait only."""
        return self._backend.event_synchronize(self).__await__()

    def __enter__(self) -> Event:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Graph(_Handle):
    """A captured, instantiated sequence of ops, replayed with ``launch_graph``.

    It keeps every host buffer it captured alive until it is destroyed.
    """

    _kind = "graph"

    def __init__(self, backend: HandleOwner) -> None:
        self.handle: DriverGraph | None = None
        self._keepalive: list[Any] = []
        self.op_count = 0
        super().__init__(backend)

    def arm(self, handle: DriverGraph, keepalive: list[Any], op_count: int) -> None:
        """The capture ended: the driver graph, what it keeps alive, its op count."""
        self.handle = handle
        self._keepalive = keepalive
        self.op_count = op_count

    def take_keepalive(self) -> list[Any]:
        """Hand the captured buffers to whoever destroys the driver graph."""
        keep, self._keepalive = self._keepalive, []
        return keep

    @property
    def ready(self) -> bool:
        """True when the capture has ended and the graph is not destroyed: it can be launched."""
        return self.handle is not None and not self._closed

    def __repr__(self) -> str:
        return f"<graph 0x{id(self):x} ops={getattr(self, 'op_count', 0)}>"

    def launch(self, stream: Stream | None = None) -> Completion:
        """Same as ``backend.launch_graph(graph, stream)``: enqueue one replay.

        Raises :class:`CaptureError` while the capture is still running and
        :class:`ClosedResourceError` once the graph is destroyed.  Cancelling
        the await abandons the wait only: the replay still runs to the end.
        """
        return self._backend.launch_graph(self, stream)

    def close(self) -> None:
        """Destroy the graph (idempotent); same as ``backend.destroy_graph(graph)``."""
        self._backend.destroy_graph(self)

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Module(_Handle):
    """A loaded module image.  Unloaded when its backend closes."""

    _kind = "module"

    def __init__(self, backend: HandleOwner, name: str, handle: DriverModule) -> None:
        self.name = name
        self.handle = handle
        super().__init__(backend)

    def __repr__(self) -> str:
        return f"<module {getattr(self, 'name', '?')!r}>"


class Kernel:
    """A function in a loaded module, ready to ``launch``."""

    __slots__ = ("handle", "module", "name")

    def __init__(self, module: Module, name: str, handle: DriverFunction) -> None:
        self.module = module
        self.name = name
        self.handle = handle

    @property
    def backend(self) -> HandleOwner:
        """The backend whose module holds this kernel (only it may ``launch`` the kernel)."""
        return self.module.backend

    def __repr__(self) -> str:
        return f"<kernel {self.module.name}.{self.name}>"
