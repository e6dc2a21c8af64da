"""Handle objects: Stream, Event, Graph, Module, Kernel.

They are made only by a backend's factories (``create_stream``,
``create_event``, ``end_capture``, ``load_module``, ``kernel``).  Each one
holds its driver handle, closes idempotently, is a context manager, and has a
``weakref.finalize`` safety net that warns with :class:`ResourceWarning` when
a handle is dropped unclosed (the backend still releases it when it closes).
"""

from __future__ import annotations

import logging
import threading
import warnings
import weakref
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from ._driver import DriverEvent, DriverFunction, DriverGraph, DriverModule, DriverStream
from ._exceptions import ClosedResourceError, NotSupportedError

if TYPE_CHECKING:
    from ._backend import Backend
    from ._completion import Completion
    from ._waiter import StreamWaiter

__all__ = ["Event", "Graph", "Kernel", "Module", "Stream"]


def _on_dropped(kind: str, description: str, release: Callable[[], None]) -> None:
    """Finalizer of a handle that was garbage-collected without ``close()``."""
    warnings.warn(
        f"unclosed {kind} {description}: close it (or use 'with') so its driver "
        "resources are released promptly",
        ResourceWarning,
        stacklevel=2,
    )
    try:
        release()
    except Exception:  # a finalizer must never raise into the collector
        logging.getLogger("aruntime").exception("releasing a dropped %s failed", kind)


class _Handle:
    """Shared plumbing: the owning backend, a closed flag, the finalizer."""

    _kind = "handle"

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._closed = False
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _arm_finalizer(self, release: Callable[[], None]) -> None:
        """Warn and release via ``release`` (which must not reference self) if dropped."""
        finalizer = weakref.finalize(self, _on_dropped, self._kind, repr(self), release)
        finalizer.atexit = False  # at exit the backend's own exit hook cleans up
        self._finalizer = finalizer

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def closed(self) -> bool:
        return self._closed

    def _mark_closed(self) -> bool:
        """Flip to closed; False if it already was."""
        if self._closed:
            return False
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()
        return True

    def _check_open(self, fn: str) -> None:
        if self._closed:
            raise ClosedResourceError(f"{fn}: {self!r} is closed")


class Stream(_Handle):
    """An in-order queue of device work.

    ``await stream`` is ``await backend.synchronize(stream)``.  ``close()``
    never blocks: work already queued still runs and its Completions still
    finish; the driver stream is destroyed once it has drained.
    """

    _kind = "stream"

    def __init__(
        self,
        backend: Backend,
        handle: DriverStream,
        priority: int,
        *,
        default: bool = False,
        foreign: bool = False,
    ) -> None:
        self.handle = handle
        self.priority = priority
        self.is_default = default
        #: Adopted by ``wrap_stream``: another library owns the native stream.
        self.foreign = foreign
        self._lock = threading.RLock()
        self._waiter_box: list[StreamWaiter | None] = [None]
        self._capture_ops = 0
        self._failures: list[Completion] = []
        self._failures_lock = threading.Lock()
        self._capturing = False
        self._capture_keepalive: list[Any] = []
        super().__init__(backend)

    def __repr__(self) -> str:
        label = "default stream" if getattr(self, "is_default", False) else "stream"
        if getattr(self, "foreign", False):
            label = "foreign stream"
        state = " closed" if getattr(self, "_closed", False) else ""
        return f"<{label} 0x{id(self):x}{state}>"

    def close(self) -> None:
        """Release the stream (idempotent).  The default stream closes with its backend."""
        if self.is_default:
            return
        self._backend._close_stream(self)

    def synchronize(self) -> Completion:
        """Same as ``backend.synchronize(self)``."""
        return self._backend.synchronize(self)

    @property
    def __cuda_stream__(self) -> Callable[[], tuple[int, int]]:
        """The CUDA stream protocol: ``stream.__cuda_stream__()`` is ``(0, CUstream address)``.

        Only CUDA backends have it (``hasattr`` is False elsewhere), so
        libraries that probe for the protocol (cuda.core, CuPy, PyTorch) take
        the stream only where they can use it.
        """
        self._check_open("__cuda_stream__")
        try:
            handle = self._backend._driver.stream_handle_int(self.handle)
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

    # -- error bookkeeping (called from any thread) -------------------------
    def _note_failure(self, completion: Completion) -> None:
        with self._failures_lock:
            if not self._closed:
                self._failures.append(completion)
                return
        # A closed stream has no next synchronize(): its backend's close() reports it.
        self._backend._orphan_failures.note(completion)

    def _forget_failure(self, completion: Completion) -> None:
        with self._failures_lock:
            try:
                self._failures.remove(completion)
                return
            except ValueError:
                pass
        self._backend._orphan_failures.forget(completion)

    def _take_failures(self) -> list[Completion]:
        with self._failures_lock:
            failures, self._failures = self._failures, []
        return failures


class Event(_Handle):
    """A point in a stream.  ``await event`` waits until the device reaches it.

    Cancelling the await abandons the wait only.
    """

    _kind = "event"

    def __init__(self, backend: Backend, handle: DriverEvent, timing: bool) -> None:
        self.handle = handle
        self.timing = timing
        self._last_stream: Stream | None = None
        self._recorded = False
        super().__init__(backend)

    def __repr__(self) -> str:
        return f"<event 0x{id(self):x}{' timing' if getattr(self, 'timing', False) else ''}>"

    def close(self) -> None:
        """Destroy the event (idempotent); same as ``backend.destroy_event(event)``."""
        self._backend.destroy_event(self)

    def record(self, stream: Stream | None = None) -> None:
        self._backend.record_event(self, stream)

    def query(self) -> bool:
        return self._backend.event_query(self)

    def __await__(self) -> Generator[Any, None, None]:
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

    def __init__(self, backend: Backend) -> None:
        self.handle: DriverGraph | None = None
        self._keepalive: list[Any] = []
        self.op_count = 0
        super().__init__(backend)

    def _arm(self, handle: DriverGraph, keepalive: list[Any], op_count: int) -> None:
        self.handle = handle
        self._keepalive = keepalive
        self.op_count = op_count

    @property
    def ready(self) -> bool:
        return self.handle is not None and not self._closed

    def __repr__(self) -> str:
        return f"<graph 0x{id(self):x} ops={getattr(self, 'op_count', 0)}>"

    def launch(self, stream: Stream | None = None) -> Completion:
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

    def __init__(self, backend: Backend, name: str, handle: DriverModule) -> None:
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
    def backend(self) -> Backend:
        return self.module.backend

    def __repr__(self) -> str:
        return f"<kernel {self.module.name}.{self.name}>"
