"""Handle objects: Stream, Event, Graph, Module, Kernel.

They are made only by a backend's factories (``create_stream``,
``create_event``, ``end_capture``, ``load_module``, ``kernel``), each built
whole: its driver handle, what it depends on, and the registry it is listed
in (:class:`aruntime._resources.Resources`).  A handle releases itself: its
``close()`` releases it once the work queued before has finished, and its
``release()`` (the backend closing, nothing in flight) releases it at once.
Whichever comes first claims it in the registry, so each is released once.
A ``weakref.finalize`` safety net warns with :class:`ResourceWarning` when a
handle is dropped unclosed, and releases it.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Generator
from typing import Any, Protocol

from ._callsite import user_frame, warn_at
from ._completion import Completion, born_captured, born_done
from ._driver import Driver, DriverEvent, DriverGraph, DriverStream
from ._exceptions import ClosedResourceError, DriverError, InvalidArgumentError, NotSupportedError
from ._ledger import Entry, unpin
from ._op import Op, OpKind, Range
from ._resources import Resources, run_all
from ._streamstate import StreamState, release_stream

__all__ = [
    "Defer",
    "Event",
    "Graph",
    "GraphBody",
    "HandleOwner",
    "HazardHook",
    "Stream",
    "SubmitPolicy",
]


class HandleOwner(Protocol):
    """The backend, as its handles see it: the public calls they are sugar for."""

    @property
    def name(self) -> str: ...

    @property
    def closed(self) -> bool: ...

    def synchronize(self, stream: Stream | None = None) -> Completion: ...

    def event_synchronize(self, event: Event) -> Completion: ...

    def record_event(self, event: Event, stream: Stream | None = None) -> None: ...

    def event_query(self, event: Event) -> bool: ...

    def launch_graph(self, graph: Graph, stream: Stream | None = None) -> Completion: ...


class SubmitPolicy(Protocol):
    """How an op's Completion is finished: at enqueue, or by the stream's waiter."""

    def run(self, op: Op, stream: Stream) -> Completion:
        """Enqueue ``op`` (the stream's lock is held, it is not capturing); its Completion."""

    @property
    def queue(self) -> Callable[..., Completion]:
        """:meth:`run` of an op given by its parts, in ``Op``'s order (``Stream.enqueue``)."""

    def compiled_enqueue(self, stream: Stream) -> Callable[..., Completion] | None:
        """:meth:`Stream.enqueue` for ``stream`` in C, or None (then the Python one runs)."""

    def bind_marks(self, state: StreamState, handle: DriverStream, *, shared: bool) -> None:
        """Let ``state`` record its last op's marker on ``handle`` when asked (``state.mark``).

        ``shared``: other libraries queue work on the stream too (an adopted
        stream), so a marker recorded later could also cover theirs: each op
        gets its own, right after it.
        """


class HazardHook(Protocol):
    """Stream-race checking, as a stream sees it (aruntime._racecheck.RaceCheck)."""

    def run(self, op: Op, stream: Stream, run: Callable[[Op, Stream], Completion]) -> Completion:
        """Check ``op`` against the other streams' work, then enqueue it with ``run``."""

    def record(
        self, op: Op, handle: DriverStream, capture: Callable[[Op, DriverStream], Completion]
    ) -> Completion:
        """Record ``op`` into a capture with ``capture`` (checked when the graph is replayed)."""


#: Runs a release once the work queued so far, on every stream, has finished.
Defer = Callable[[Callable[[], None]], None]


def _on_dropped(
    kind: str,
    description: str,
    site: tuple[str, int],
    release: Callable[[], None],
    resources: Resources,
    serial: int,
) -> None:
    """Finalizer of a handle that was garbage-collected without ``close()``."""
    if not resources.claim(serial):
        return  # its backend is releasing it
    warn_at(
        site,
        f"unclosed {kind} {description}: close it (or use 'with') so its driver "
        "resources are released promptly",
    )
    try:
        release()
    except Exception:  # a finalizer must never raise into the collector
        logging.getLogger("aruntime").exception("releasing a dropped %s failed", kind)


class _Handle(abc.ABC):
    """Shared plumbing: the owning backend, the registry entry, the finalizer."""

    _kind = "handle"

    def __init__(
        self, backend: HandleOwner, resources: Resources, drop: Callable[[], None] | None
    ) -> None:
        """Register the handle; ``drop`` (which must not reference it) runs if it is dropped.

        The warning names the user's line that created the handle, found here
        (handles are made by the backend's factories, called from that line).
        """
        self._backend = backend
        self._closed = False
        #: The backend while the handle is open, None once closed: one load,
        #: no call, for the check every op makes of its stream.
        self.open_for: HandleOwner | None = backend
        self._resources = resources
        self._serial = serial = resources.add(self)
        self._finalizer: weakref.finalize[Any, Any] | None = None
        if drop is not None:
            finalizer = weakref.finalize(
                self, _on_dropped, self._kind, repr(self), user_frame(), drop, resources, serial
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

    def usable_by(self, owner: object) -> bool:
        """Whether ``owner`` may use this handle: its own backend's, and not closed.

        The check every op makes of its stream, in one call.
        """
        return self._backend is owner and not self._closed

    def _claim(self) -> bool:
        """Take this handle out of the registry; True for the one caller that releases it."""
        if self._closed or not self._resources.claim(self._serial):
            return False
        self._closed = True
        self.open_for = None
        if self._finalizer is not None:
            self._finalizer.detach()
        return True

    @abc.abstractmethod
    def release(self) -> None:
        """The backend is closing, nothing in flight: release the driver object now."""

    def check_open(self, fn: str) -> None:
        """Raise :class:`ClosedResourceError` naming ``fn`` if this handle is closed."""
        if self._closed:
            raise ClosedResourceError(f"{fn}: {self!r} is closed")


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
        resources: Resources,
        driver: Driver,
        handle: DriverStream,
        priority: int,
        state: StreamState,
        policy: SubmitPolicy,
        defer: Defer,
        *,
        default: bool = False,
        foreign: bool = False,
        hazards: HazardHook | None = None,
        hazard_id: int = 0,
    ) -> None:
        self.handle = handle
        self.priority = priority
        self.is_default = default
        #: Adopted by ``wrap_stream``: another library owns the native stream.
        self.foreign = foreign
        #: The core's bookkeeping for this stream (lock, waiter, capture, errors).
        self.state = state
        self._driver = driver
        self._run, self._queue = policy.run, policy.queue  # the policy's, bound once
        policy.bind_marks(state, handle, shared=foreign)
        self._defer = defer
        # The core's stream-race checking (None when off) and this stream's number in it.
        self.hazards = hazards
        self.hazard_id = hazard_id
        compiled = policy.compiled_enqueue(self)
        if compiled is not None:
            vars(self)["enqueue"] = compiled  # the same path in C (_enqueue.py)
        drop = None if default else functools.partial(release_stream, driver, handle, state)
        super().__init__(backend, resources, drop)

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

    def submit(self, op: Op) -> Completion:
        """Enqueue ``op`` (validated by the backend) on this stream; its Completion.

        For an op that states its ranges (else :meth:`enqueue`).  Cancelling
        an await of the result abandons the wait only.
        """
        state = self.state
        state.acquire()  # cheaper than ``with``
        try:
            if state.refusing:  # set under this lock by the closes: queued before, or refused
                raise ClosedResourceError(f"{op.kind.public}: {self!r} is closed")
            for held in op.keepalive:
                if type(held) is Entry and held.freed:  # freed by another thread since its check
                    raise InvalidArgumentError(f"{op.kind.public}: {held.described} was freed")
            if state.capturing:
                return self._capture(op, state)
            if self.hazards is not None:
                return self.hazards.run(op, self, self._run)
            return self._run(op, self)
        finally:
            state.release()

    def _capture(self, op: Op, state: StreamState) -> Completion:
        """``op`` into the graph being captured (a replay is held to a launch's reads=)."""
        if self.hazards is not None:
            return self.hazards.record(op, self.handle, state.capture)
        return state.capture(op, self.handle)

    def enqueue(
        self,
        kind: OpKind,
        call: Callable[..., None],
        args: tuple[Any, ...],
        entries: tuple[Entry | Graph, ...],
        held: tuple[Any, ...],
        views: tuple[memoryview, ...] = (),
        nbytes: int = 0,
        result: Any = None,
        kernel: Any = None,
        /,
    ) -> Completion:
        """:meth:`submit` of ``Op(kind, call, args, (*held, *entries), views, ...)``, unbuilt.

        Only a capture or the race checker gets an :class:`Op`; a plain stream's
        is in C where built (_enqueue.py).  Cancelling an await abandons the wait only.
        """
        state = self.state
        state.acquire()
        try:
            if state.refusing:
                raise ClosedResourceError(f"{kind.public}: {self!r} is closed")
            for entry in entries:
                if entry.freed:  # freed (a graph: closed) by another thread since its check
                    raise _refusal(kind, entry)
            hazards = self.hazards
            if state.capturing or hazards is not None:
                op = Op(kind, call, args, (*held, *entries), views, nbytes, result, kernel)
                op.held = held  # an attribute, not a keyword: keywords cost a dict here
                if state.capturing or hazards is None:
                    return self._capture(op, state)
                return hazards.run(op, self, self._run)
            return self._queue(self, kind, call, args, held, views, nbytes, result, kernel)
        finally:
            state.release()

    def check_accepting(self, fn: str) -> None:
        """Raise :class:`ClosedResourceError` if the stream refuses work (its lock held)."""
        if self.state.refusing:
            raise ClosedResourceError(f"{fn}: {self!r} is closed")

    def no_op(self, name: str, result: Any) -> Completion:
        """The Completion of the call ``name`` with nothing to do (zero bytes): already done.

        Awaiting it is a checkpoint; cancelling that await abandons nothing.
        """
        if self.state.capturing:
            return born_captured(name)
        return born_done(name, result)

    def close(self) -> None:
        """Release the stream (idempotent).  The default stream closes with its backend."""
        if self.is_default:
            return
        if self._backend.closed:
            # Closed, or a fork's copy of its parent's backend: the driver
            # stream is the backend's (or the parent's) to release.
            return
        self._abort_capture(self._defer, closing=False)
        with self.state.lock:  # after every submit under way, before any other
            if not self._claim():
                return
            self.state.flush_tail()  # the last op's marker reports what failed before it
            self.state.refusing = True
        # A closed stream has no next synchronize(): its backend's close() reports these.
        self.state.mark_closed()
        release_stream(self._driver, self.handle, self.state)

    def shut(self) -> None:
        """The backend is closing: refuse further ops, after every submit under way."""
        with self.state.lock:
            if not self.state.refusing:
                self.state.flush_tail()
            self.state.refusing = True

    def release(self) -> None:
        """The backend is closing and every waiter has ended: destroy the stream now."""
        if not self._claim():
            return
        released: list[Callable[[], None]] = []
        self._abort_capture(released.append, closing=True)
        try:
            self._driver.stream_destroy(self.handle)
        finally:
            run_all(released)

    def _abort_capture(self, defer: Defer, *, closing: bool) -> None:
        """End a capture under way; memory freed under it is released through ``defer``."""
        state = self.state
        if not state.capturing:
            return
        with state.lock:
            if not state.capturing:
                return
            keepalive = state.end_capture().keepalive
            try:
                if closing:  # the backend is going anyway: a failed abort changes nothing
                    with contextlib.suppress(DriverError):
                        self._driver.capture_abort(self.handle)
                elif not self._resources.closed:
                    self._driver.capture_abort(self.handle)
            finally:
                for release in unpin(keepalive):
                    defer(release)

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
        self.state.share()
        return lambda: (0, handle)

    def __await__(self) -> Generator[Any, None, None]:
        """Wait for all work queued so far; cancelling abandons the wait only."""
        return self._backend.synchronize(self).__await__()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Event(_Handle):
    """A point in a stream.  ``await event`` waits until the device reaches it.

    Cancelling the await abandons the wait only.
    """

    _kind = "event"

    def __init__(
        self,
        backend: HandleOwner,
        resources: Resources,
        driver: Driver,
        handle: DriverEvent,
        timing: bool,
        defer: Defer,
        wait_out_submits: Callable[[], None],
        add_peer_user: Callable[[Any], None],
    ) -> None:
        """``defer`` runs a release once the work queued so far is done;
        ``wait_out_submits`` returns once every submit under way on the
        backend's streams, and its peer users', has reached its stream
        (``close``); ``add_peer_user`` makes another backend one."""
        self.handle = handle
        self.timing = timing
        self._last_stream: Stream | None = None
        #: The op the latest record stands behind, while it may yet fail (note_recorded).
        self.order_point: Completion | None = None
        self._driver = driver
        self._defer = defer
        self._wait_out_submits = wait_out_submits
        self._add_peer_user = add_peer_user
        #: Held by a host-side call on the handle (a query, ``elapsed_ms``) from its
        #: check to its driver call; the close takes it once, to wait such a call out.
        self.host_lock = threading.Lock()
        super().__init__(backend, resources, functools.partial(driver.event_destroy, handle))

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

    def note_peer_user(self, peer: object) -> None:
        """Another device's stream is about to wait on this event (``peer``: its backend's
        state): this event's close waits out that backend's submits too."""
        self._add_peer_user(peer)

    def note_recorded(self, stream: Stream) -> None:
        """The core recorded this event on ``stream`` (called with the stream's lock held).

        It also keeps what the record stands behind for stream order: a
        stream that waits on this event inherits a failure of that op.
        """
        self._last_stream = stream
        self.order_point = stream.state.order_point()

    def close(self) -> None:
        """Destroy the event (idempotent); same as ``backend.destroy_event(event)``.

        Queued work that records it still runs: the driver event goes once
        the work queued so far has finished.  A record of it, a wait on it or
        an ``event_synchronize`` that another thread has begun is on its
        stream before that (its stream checks the event again under its
        lock), and a query or ``elapsed_ms`` under way has asked the driver
        (they check it again under :attr:`host_lock`); later ones raise
        :class:`ClosedResourceError`.
        """
        if self._claim():
            self._wait_out_host_calls()
            self._wait_out_submits()
            self._defer(functools.partial(self._driver.event_destroy, self.handle))

    def release(self) -> None:
        """The backend is closing, nothing in flight: destroy the event now."""
        if self._claim():
            self._wait_out_host_calls()
            self._driver.event_destroy(self.handle)

    def _wait_out_host_calls(self) -> None:
        """Return once a host-side call that saw the event open has made its driver call."""
        self.host_lock.acquire()
        self.host_lock.release()

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


class GraphBody:
    """What a finished capture made: the driver graph and everything its replays use.

    ``keepalive`` holds the captured host buffers and the ledger entries of
    the device memory, pinned (:func:`aruntime._ledger.pin`); ``reads`` and
    ``writes`` are the byte ranges of the captured ops, which every replay
    touches again.
    """

    __slots__ = ("handle", "keepalive", "op_count", "reads", "writes")

    def __init__(
        self,
        handle: DriverGraph,
        keepalive: list[Any],
        op_count: int,
        reads: tuple[Range, ...],
        writes: tuple[Range, ...],
    ) -> None:
        self.handle = handle
        self.keepalive = keepalive
        self.op_count = op_count
        self.reads = reads
        self.writes = writes


def _destroy_graph(driver: Driver, body: GraphBody, defer: Defer) -> None:
    """Destroy ``body``'s driver graph, then free the memory freed under it (deferred)."""
    try:
        driver.graph_destroy(body.handle)
    finally:
        for release in unpin(body.keepalive):
            defer(release)
        # The host ranges are views of the caller's buffers: let them go too.
        body.keepalive, body.reads, body.writes = [], (), ()


def _refusal(kind: OpKind, entry: Entry | Graph) -> Exception:
    """The error of an op whose memory was freed, or whose graph was closed, since its check."""
    if isinstance(entry, Graph):
        return ClosedResourceError(f"{kind.public}: {entry!r} is closed")
    return InvalidArgumentError(f"{kind.public}: {entry.described} was freed")


def _drop_graph(driver: Driver, cell: list[GraphBody | None], defer: Defer) -> None:
    body = cell[0]
    if body is not None:
        _destroy_graph(driver, body, defer)


class Graph(_Handle):
    """A captured, instantiated sequence of ops, replayed with ``launch_graph``.

    It keeps every host buffer it captured alive until it is destroyed.
    """

    _kind = "graph"

    def __init__(
        self,
        backend: HandleOwner,
        resources: Resources,
        driver: Driver,
        body: GraphBody | None,
        defer: Defer,
        wait_out_submits: Callable[[], None],
    ) -> None:
        """A graph of ``body``; None only for ``with capture()``, whose block is still running.

        ``defer`` runs a release once the work queued so far is done;
        ``wait_out_submits`` returns once every submit under way on the
        backend's streams has reached its stream.
        """
        # The finalizer holds the cell, not the graph, so a graph whose
        # capture ends after it was made is still destroyed if dropped.
        self._cell: list[GraphBody | None] = [body]
        self._driver = driver
        self._defer = defer
        self._wait_out_submits = wait_out_submits
        #: Set as it closes, before the destroy is queued: a replay is refused
        #: at its stream, under the stream's lock, once it is (``Stream.enqueue``
        #: checks it as it checks a ledger entry's).
        self.freed = False
        super().__init__(
            backend, resources, functools.partial(_drop_graph, driver, self._cell, defer)
        )

    def _complete(self, body: GraphBody) -> None:
        """The ``with capture()`` block ended: this graph holds what it captured."""
        self._cell[0] = body

    @property
    def body(self) -> GraphBody | None:
        """The captured graph (None until the capture has ended)."""
        return self._cell[0]

    @property
    def handle(self) -> DriverGraph | None:
        """The driver graph (None until the capture has ended)."""
        body = self._cell[0]
        return None if body is None else body.handle

    @property
    def op_count(self) -> int:
        """How many ops the graph replays."""
        body = getattr(self, "_cell", [None])[0]
        return 0 if body is None else body.op_count

    @property
    def ready(self) -> bool:
        """True when the capture has ended and the graph is not destroyed: it can be launched."""
        return self._cell[0] is not None and not self._closed

    def __repr__(self) -> str:
        return f"<graph 0x{id(self):x} ops={self.op_count}>"

    def launch(self, stream: Stream | None = None) -> Completion:
        """Same as ``backend.launch_graph(graph, stream)``: enqueue one replay.

        Raises :class:`CaptureError` while the capture is still running and
        :class:`ClosedResourceError` once the graph is destroyed.  Cancelling
        the await abandons the wait only: the replay still runs to the end.
        """
        return self._backend.launch_graph(self, stream)

    def close(self) -> None:
        """Destroy the graph (idempotent) once the work queued so far (replays too) is done.

        Same as ``backend.destroy_graph(graph)``; releases the host buffers it kept.
        """
        if not self._claim():
            return
        self.freed = True
        # A replay checked this graph open before now: it reaches its stream
        # first (and the destroy is queued after it) or is refused there.
        self._wait_out_submits()
        body = self._cell[0]
        if body is not None:
            self._defer(functools.partial(_destroy_graph, self._driver, body, _now))

    def release(self) -> None:
        """The backend is closing, nothing in flight: destroy the graph now."""
        if not self._claim():
            return
        body = self._cell[0]
        if body is not None:
            released: list[Callable[[], None]] = []
            try:
                _destroy_graph(self._driver, body, released.append)
            finally:
                run_all(released)

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _now(release: Callable[[], None]) -> None:
    release()
