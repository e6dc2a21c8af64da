"""Submission: put one op on a stream and hand back its Completion.

Every async op ends here, in four steps: resolve the stream; if it is
capturing, record the op into the graph; else enqueue it (through a trace
span when tracing); and, on an asynchronous driver, record a marker event
after it and give the pair to the stream's waiter, which finishes the
Completion when the device passes the marker.

There are two submitters, and a backend picks one when it opens: the
synchronous one (the mock, where an op has finished when its enqueue
returns, so there is no marker, no waiter and one shared finished
Completion per op name) and the asynchronous one.  No op tests which kind
of driver it runs on.

An op is passed as ``call, args``: the driver method and its arguments
before the stream's handle, which every enqueueing driver method takes
last.  So no op builds a closure per call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ._completion import (
    Completion,
    born_captured,
    born_done,
    done_none,
    failed,
    failed_queued,
    finish,
)
from ._driver import DriverEvent, DriverStream
from ._exceptions import CaptureError, DriverError, InvalidArgumentError
from ._handles import Event, Kernel, Stream
from ._state import BackendState

__all__ = ["Submitter", "make_submitter"]

_log = logging.getLogger("aruntime")

#: A driver method that enqueues an op; the stream's handle is its last argument.
Call = Callable[..., None]


def _nothing(stream: DriverStream) -> None:
    del stream


class _Markers:
    """A pool of the untimed events recorded after each op (one per op in flight)."""

    def __init__(self, state: BackendState) -> None:
        self._state = state
        self._driver = state.driver
        self._free: list[DriverEvent] = []

    def acquire(self) -> DriverEvent:
        with self._state.lock:
            if self._free:
                return self._free.pop()
        return self._driver.event_create(False)

    def release(self, marker: DriverEvent) -> None:
        with self._state.lock:
            if not self._state.closed:
                self._free.append(marker)
                return
        self._driver.event_destroy(marker)

    def drain(self) -> list[DriverEvent]:
        """Every pooled marker, for close() to destroy."""
        with self._state.lock:
            markers, self._free = self._free, []
        return markers


class Submitter:
    """Resolves streams and submits ops; one per backend (see :func:`make_submitter`)."""

    def __init__(self, state: BackendState, default_stream: Callable[[], Stream]) -> None:
        self._state = state
        self._driver = state.driver
        self._tracing = state.tracing
        self._owner = state.handles
        self._default_stream = default_stream
        self.markers = _Markers(state)

    # -- streams -------------------------------------------------------------------------
    def resolve(self, stream: object, fn: str, *, allow_closed: bool = False) -> Stream:
        """The Stream ``stream`` names (None: the default stream), or a clear error."""
        if stream is None:
            default = self._state.default
            return default if default is not None else self._default_stream()
        if type(stream) is Stream and stream._backend is self._owner and not stream._closed:
            return stream  # the common case, on every op's path: no calls
        if not isinstance(stream, Stream):
            raise TypeError(f"{fn}: stream must be a Stream or None, got {type(stream).__name__}")
        if stream.backend is not self._owner:
            raise InvalidArgumentError(f"{fn}: the stream belongs to another backend")
        if not allow_closed:
            stream.check_open(fn)
        return stream

    # -- ops -------------------------------------------------------------------------------
    def submit(
        self,
        op: str,
        stream: Stream | None,
        call: Call,
        args: tuple[Any, ...],
        *,
        keepalive: tuple[Any, ...] = (),
        views: tuple[memoryview, ...] = (),
        result: Any = None,
        nbytes: int = 0,
        kernel: Kernel | None = None,
    ) -> Completion:
        """Enqueue ``call(*args, stream_handle)`` on ``stream``; its Completion."""
        raise NotImplementedError

    def copy_h2d(
        self, stream: Stream | None, src: Any, view: memoryview, address: int, entry: Any
    ) -> Completion:
        """``copy_h2d_async``'s submission (validated): ``view`` of ``src`` to ``address``.

        ``entry`` is the destination's ledger entry (a capture pins it).
        """
        return self.submit(
            "copy_h2d_async",
            stream,
            self._driver.memcpy_h2d,
            (view, address),
            keepalive=(src, entry),
            views=(view,),
            nbytes=view.nbytes,
        )

    def no_op(self, op: str, stream: Stream | None, result: Any) -> Completion:
        """The Completion of an op with nothing to do (zero bytes)."""
        st = self.resolve(stream, op)
        if st.state.capturing:
            return born_captured(op)
        return born_done(op, result)

    def drained(self, op: str, st: Stream) -> Completion:
        """A Completion that finishes when ``st``'s queue so far has drained."""
        raise NotImplementedError

    def blocking(self, op: str, call: Call, *args: Any) -> None:
        """Run one op on the default stream and wait for it (for the core's own use)."""
        self.submit(op, None, call, args).wait()

    def synchronize(self, fn: str, stream: Stream | None) -> Completion:
        """``synchronize(stream)``: the queue drained, then the stream's unseen errors."""
        st = self.resolve(stream, fn)
        if st.state.capturing:
            raise CaptureError(f"{fn}: {st!r} is capturing; end the capture first")
        return _with_unseen_errors(self.drained(fn, st), st, fn)

    def event_synchronize(self, fn: str, event: Event) -> Completion:
        raise NotImplementedError


class _SyncSubmitter(Submitter):
    """For drivers whose ops have finished (or raised) when their enqueue returns."""

    def __init__(self, state: BackendState, default_stream: Callable[[], Stream]) -> None:
        super().__init__(state, default_stream)
        self._memcpy_h2d = state.driver.memcpy_h2d
        self._h2d_done = done_none("copy_h2d_async")

    def submit(
        self,
        op: str,
        stream: Stream | None,
        call: Call,
        args: tuple[Any, ...],
        *,
        keepalive: tuple[Any, ...] = (),
        views: tuple[memoryview, ...] = (),
        result: Any = None,
        nbytes: int = 0,
        kernel: Kernel | None = None,
    ) -> Completion:
        st = self.resolve(stream, op)
        state = st.state
        with state.lock:
            if state.capturing:
                call(*args, st.handle)
                state.captured((*views, *keepalive))
                return born_captured(op)
            recorder = self._tracing.recorder
            try:
                if recorder is None:
                    call(*args, st.handle)
                else:
                    span = recorder.span(op, st, nbytes, kernel)
                    if span is None:
                        call(*args, st.handle)
                    else:
                        span.enqueue(call, args, st.handle)
            except DriverError as exc:
                return failed(Completion(op, state), exc)
        return done_none(op) if result is None else born_done(op, result)

    def copy_h2d(
        self, stream: Stream | None, src: Any, view: memoryview, address: int, entry: Any
    ) -> Completion:
        # The hottest op of a synchronous driver (the mock): no keepalive to
        # hold, no closure, no kwargs, and the stream lock taken without ``with``.
        if stream is None:
            st = self._state.default or self._default_stream()
        elif type(stream) is Stream and stream._backend is self._owner and not stream._closed:
            st = stream
        else:
            st = self.resolve(stream, "copy_h2d_async")
        state = st.state
        state.acquire()
        try:
            if not state.capturing and self._tracing.recorder is None:
                try:
                    self._memcpy_h2d(view, address, st.handle)
                except DriverError as exc:
                    return failed(Completion("copy_h2d_async", state), exc)
                return self._h2d_done
        finally:
            state.release()
        return super().copy_h2d(st, src, view, address, entry)

    def drained(self, op: str, st: Stream) -> Completion:
        # Everything already ran, but the device may be in a sticky error
        # state that a real synchronize would report: ask the driver.
        marker = self.markers.acquire()
        try:
            self._driver.event_record(marker, st.handle)
        except DriverError as exc:
            return failed(Completion(op, st.state), exc)
        finally:
            self.markers.release(marker)
        return born_done(op)

    def event_synchronize(self, fn: str, event: Event) -> Completion:
        return born_done(fn)


class _AsyncSubmitter(Submitter):
    """For drivers that run ops later: a marker after each op, a waiter per stream."""

    def submit(
        self,
        op: str,
        stream: Stream | None,
        call: Call,
        args: tuple[Any, ...],
        *,
        keepalive: tuple[Any, ...] = (),
        views: tuple[memoryview, ...] = (),
        result: Any = None,
        nbytes: int = 0,
        kernel: Kernel | None = None,
    ) -> Completion:
        st = self.resolve(stream, op)
        state = st.state
        handle = st.handle
        with state.lock:
            if state.capturing:
                call(*args, handle)
                state.captured((*views, *keepalive))
                return born_captured(op)
            if state.stranded:  # finishes only once the stream is past them
                keepalive = (*keepalive, *state.stranded)
                state.stranded.clear()
            completion = Completion(op, state, result, keepalive, views)
            recorder = self._tracing.recorder
            span = None if recorder is None else recorder.span(op, st, nbytes, kernel)
            try:
                if span is None:
                    call(*args, handle)
                else:
                    span.enqueue(call, args, handle)  # drops the span if the op raises
            except DriverError as exc:
                # A staged copy may have queued some of its pieces before failing.
                state.stranded.extend(failed_queued(completion, exc))
                return completion
            # From here the op is queued: its buffers must outlive it even if
            # no marker can follow it (say, the backend closing under another
            # thread), so on any failure they wait for the stream's next op.
            try:
                self._follow_with_marker(completion, handle, state, span)
            except DriverError as exc:
                if span is not None:
                    span.abandon()
                state.stranded.extend(failed_queued(completion, exc))
                return completion
            except BaseException:
                state.stranded.extend((*keepalive, *views))
                if span is not None:
                    span.abandon()
                raise
        return completion

    def _follow_with_marker(
        self, completion: Completion, handle: DriverStream, state: Any, span: Any
    ) -> None:
        """Record a marker behind the op just queued and hand it to the stream's waiter."""
        markers = self.markers
        marker = markers.acquire()  # may raise: a sticky error surfacing at event creation
        try:
            self._driver.event_record(marker, handle)
        except BaseException:
            markers.release(marker)
            raise
        if span is not None:
            span.follow(completion, handle)
        state.started_waiter().submit(marker, completion, markers.release)

    def drained(self, op: str, st: Stream) -> Completion:
        return self.submit(op, st, _nothing, ())

    def event_synchronize(self, fn: str, event: Event) -> Completion:
        stream = event.last_stream
        if stream is None:
            return born_done(fn)
        state = stream.state
        if stream.closed:
            # close() never blocks, so the stream may still be draining the
            # work before the event: finish once the last op queued on it has.
            last = state.last_pending()
            if last is None:
                return born_done(fn)
            reached = Completion(fn, None)
            if not last.subscribe(lambda: finish(reached)):
                finish(reached)
            return reached
        completion = Completion(fn, state)
        with state.lock:
            state.started_waiter().submit(event.handle, completion, None)
        return completion


def make_submitter(state: BackendState, default_stream: Callable[[], Stream]) -> Submitter:
    """The submitter for ``state``'s driver, chosen once."""
    cls = _SyncSubmitter if state.driver.synchronous else _AsyncSubmitter
    return cls(state, default_stream)


def _with_unseen_errors(marker: Completion, stream: Stream, op: str) -> Completion:
    """A Completion that finishes with ``marker``, failing with the stream's unseen errors.

    It is on the stream: if this ``synchronize()`` fails and nobody sees it
    (its await was cancelled), the error goes back to the stream for the next
    ``synchronize()`` or ``close()`` instead of being lost.
    """
    state = stream.state
    result = Completion(op, state)

    def settle() -> None:
        failures = state.take_failures()
        error = marker.error
        if failures:
            error = failures[0].error
            for f in failures:
                _log.error("%s: error from an op nobody awaited: %s", op, f.error)
        finish(result, error)

    if not marker.subscribe(settle):
        settle()
    return result
