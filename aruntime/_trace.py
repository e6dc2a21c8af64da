"""Tracing: every op's stream, kind, bytes and device start/end, as a Chrome trace.

``with gpu.trace(path):`` (or ``ARUNTIME_TRACE=path``, for a backend's whole
life) records each op enqueued while it is active and writes a Chrome Trace
Event JSON file (object form) that Perfetto and ``chrome://tracing`` open: one
track (``tid``) per stream, one complete (``"ph": "X"``) event per op.

How an op is timed.  Around the op, on its own stream, the recorder records
two timing events: ``start`` before the op, and ``end`` after the op's
completion marker.  The marker stays the core's own event, so the op's error
lands on it (on drivers that hand an op's error to the next event recorded,
an event between the op and its marker would take it).  In an in-order
stream ``start`` completes when the device reaches the op and ``end`` just
after it has finished it, so ``elapsed(reference, start)`` and
``elapsed(reference, end)`` are the op's device start and end, relative to a
reference event recorded (on a private, empty stream) when tracing began.
The span *subscribes* to the op's Completion (:meth:`Completion.subscribe`)
and reads the times when it finishes, on the thread that finished it; as
nothing is queued between the marker and ``end``, ``end`` is reached at once
if it is not already.  This one mechanism gives each backend its own clock:
device timestamps on CUDA and Level Zero, the worker threads' clock on the
threaded mock, and the host clock around the op on the synchronous mock.

Cost.  With no trace active, submission pays one attribute check.
While tracing, each op costs two event records and two elapsed-time queries;
the events are pooled.

Ops recorded during graph capture are not traced (they do not run); a replay
is one ``launch_graph`` span.  An op whose times cannot be read (its stream
hit a sticky error, say) is left out and counted in :attr:`Trace.dropped`.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._completion import Completion, settled
from ._driver import DeviceInfo, Driver, DriverEvent, DriverStream
from ._exceptions import AruntimeError, InvalidArgumentError

if TYPE_CHECKING:
    from ._handles import Stream
    from ._modules import Kernel

__all__ = ["Trace", "TraceSpan", "Tracing", "trace_env_path"]

#: Enqueues one op: the driver call and its arguments before the stream's handle.
EnqueueCall = Callable[..., None]

_log = logging.getLogger("aruntime")

#: The environment variable read when a backend opens.
TRACE_ENV = "ARUNTIME_TRACE"

_KINDS = {
    # One kind per direction: H2D and D2H run on different copy engines.
    "copy_h2d_async": "copy_h2d",
    "copy_d2h_async": "copy_d2h",
    "copy_d2d_async": "copy_d2d",
    "copy_d2d_2d_async": "copy_d2d",
    "memset_async": "memset",
    "launch": "kernel",
    "launch_graph": "graph",
}

_env_traces = itertools.count(1)


def trace_env_path() -> str | None:
    """The file ``ARUNTIME_TRACE`` names for the next backend opened, or None.

    The first backend of a process writes to the path as given; each later one
    gets ``-2``, ``-3``... before the suffix, so two backends never overwrite
    each other's trace.
    """
    value = os.environ.get(TRACE_ENV)
    if not value:
        return None
    n = next(_env_traces)
    if n == 1:
        return value
    path = Path(value)
    return str(path.with_name(f"{path.stem}-{n}{path.suffix}"))


@dataclass(frozen=True)
class TraceSpan:
    """One traced op.  Times are microseconds from the start of the trace."""

    #: The backend call that enqueued the op: ``"copy_h2d_async"``, ``"launch"``...
    op: str
    #: What the op does, one engine each (the Chrome trace's ``cat``): ``"copy_h2d"``,
    #: ``"copy_d2h"``, ``"copy_d2d"``, ``"memset"``, ``"kernel"``, ``"graph"`` (a
    #: ``launch_graph`` replay) or ``"op"`` (anything else).
    kind: str
    #: The kernel's name for a launch, else :attr:`op` (the Chrome trace event's name).
    name: str
    #: The stream's track: the Chrome trace ``tid``, one per stream, stable over a trace.
    track: int
    #: The stream's label: ``"default stream"``, ``"stream 2 (priority 0)"``...
    stream: str
    #: The bytes a copy moved or a memset set (0 for launches and the compute ops).
    nbytes: int
    #: ``"module.function"`` for a launch, else None.
    kernel: str | None
    #: When the device started the op: microseconds since the trace began.
    start_us: float
    #: When the device finished the op: microseconds since the trace began.
    end_us: float

    @property
    def duration_us(self) -> float:
        """The op's device time in microseconds (``end_us - start_us``)."""
        return self.end_us - self.start_us


class Trace:
    """An active (or finished) trace.  Made by :meth:`Backend.trace`.

    ``with gpu.trace(path):`` stops it when the block ends: the exit blocks
    until every traced op has finished on the device, then writes the file.
    ``async with gpu.trace(path):`` awaits those ops instead of blocking (if the
    exit is cancelled, the trace still stops and writes).  ``stop()`` does the
    same as the synchronous exit and returns the file's path.
    """

    def __init__(self, tracing: Tracing, path: Path) -> None:
        self._tracing = tracing
        self.path = path
        self._spans: list[TraceSpan] = []
        self._pending: set[_PendingSpan] = set()
        self._cond = threading.Condition(threading.Lock())
        self._stopped = False
        self._written = False
        self.dropped = 0

    @property
    def active(self) -> bool:
        """True until the trace stops (``stop()``, the block's end, or the backend's close)."""
        return not self._stopped

    @property
    def written(self) -> bool:
        """True once the Chrome Trace Event file has been written to :attr:`path`."""
        return self._written

    @property
    def spans(self) -> list[TraceSpan]:
        """The spans recorded so far, by start time."""
        with self._cond:
            spans = list(self._spans)
        return sorted(spans, key=lambda s: (s.start_us, s.track))

    def stop(self) -> Path:
        """Stop recording, wait for the traced ops to finish, write the file (idempotent)."""
        recorder = self._detach()
        if recorder is None:
            return self.path
        with self._cond:
            while self._pending:
                self._cond.wait()
        self._write(recorder)
        recorder.release_if_idle()
        return self.path

    def _detach(self) -> _Recorder | None:
        recorder = self._tracing.detach(self)
        self._stopped = True
        return recorder

    def _abandon(self) -> None:
        """At interpreter exit: write what has finished, wait for nothing."""
        recorder = self._detach()
        if recorder is not None:
            self._write(recorder)

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Trace:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Await the traced ops still running, then stop.  Cancelled: stops anyway."""
        try:
            with self._cond:
                pending = [p.completion for p in self._pending if p.completion is not None]
            for completion in pending:
                await settled(completion)
        finally:
            self.stop()

    def __repr__(self) -> str:
        state = "active" if self.active else ("written" if self._written else "stopped")
        return f"<aruntime.Trace {str(self.path)!r} {state} spans={len(self._spans)}>"

    # -- called by spans, on waiter threads ----------------------------------------
    def _enter(self, pending: _PendingSpan) -> None:
        with self._cond:
            self._pending.add(pending)

    def _add(self, pending: _PendingSpan, span: TraceSpan | None) -> None:
        with self._cond:
            self._pending.discard(pending)
            if span is None:
                self.dropped += 1
            else:
                self._spans.append(span)
            if not self._pending:
                self._cond.notify_all()

    # -- the file --------------------------------------------------------------------
    def _write(self, recorder: _Recorder) -> None:
        pid = os.getpid()
        info = recorder.device_label
        events: list[dict[str, Any]] = [
            {"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": info}},
            {
                "ph": "M",
                "pid": pid,
                "tid": 0,
                "name": "process_sort_index",
                "args": {"sort_index": 0},
            },
        ]
        spans = self.spans
        for track, label in sorted({(s.track, s.stream) for s in spans}):
            events.append(
                {
                    "ph": "M",
                    "pid": pid,
                    "tid": track,
                    "name": "thread_name",
                    "args": {"name": label},
                }
            )
            events.append(
                {
                    "ph": "M",
                    "pid": pid,
                    "tid": track,
                    "name": "thread_sort_index",
                    "args": {"sort_index": track},
                }
            )
        for s, start_ns, end_ns in _nanosecond_bounds(spans):
            events.append(
                {
                    "ph": "X",
                    "pid": pid,
                    "tid": s.track,
                    "ts": start_ns / 1000,
                    "dur": (end_ns - start_ns) / 1000,
                    "name": s.name,
                    "cat": s.kind,
                    "args": {
                        "op": s.op,
                        "bytes": s.nbytes,
                        "kernel": s.kernel,
                        "stream": s.stream,
                    },
                }
            )
        document = {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {
                "producer": "aruntime",
                "backend": recorder.backend_name,
                "device": info,
                "clock": recorder.clock,
                "dropped_ops": self.dropped,
            },
        }
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(document, f, separators=(",", ":"))
        os.replace(tmp, self.path)
        self._written = True
        _log.info("aruntime: trace of %d ops written to %s", len(spans), self.path)


def _nanosecond_bounds(spans: list[TraceSpan]) -> list[tuple[TraceSpan, int, int]]:
    """Whole-nanosecond start and end of each span, never past the next on its track.

    An in-order stream's ops never overlap, but independent rounding of two
    float timestamps could make touching spans overlap by a nanosecond, which
    trace viewers report as badly nested slices.
    """
    out: list[tuple[TraceSpan, int, int]] = []
    next_start: dict[int, int] = {}
    for s in sorted(spans, key=lambda s: (s.track, s.start_us), reverse=True):
        start = round(s.start_us * 1000)
        end = max(start, round(s.end_us * 1000))
        limit = next_start.get(s.track)
        if limit is not None:
            end = max(start, min(end, limit))
        next_start[s.track] = start
        out.append((s, start, end))
    out.sort(key=lambda item: (item[1], item[0].track))
    return out


class _Recorder:
    """Per backend, while any Trace is active: the reference event, the event pool, tracks."""

    def __init__(self, driver: Driver, name: str, info: DeviceInfo) -> None:
        self.driver: Driver = driver
        self.backend_name = name
        self.device_label = f"{name}: {info.name} (device {driver.ordinal})"
        if driver.synchronous:
            self.clock = "host (events recorded around each op)"
        elif name == "mock":
            self.clock = "mock stream threads"
        else:
            self.clock = "device timing events"
        self.sessions: list[Trace] = []
        self.retired = False
        self._lock = threading.Lock()
        self._free: list[DriverEvent] = []
        self._out = 0  # events handed to pending spans
        self._tracks: weakref.WeakKeyDictionary[Stream, tuple[int, str]] = (
            weakref.WeakKeyDictionary()
        )
        self._next_stream = itertools.count(1)
        self.reference: DriverEvent | None = self._reference_event()

    def _reference_event(self) -> DriverEvent:
        driver = self.driver
        event = driver.event_create(True)
        try:
            # An empty private stream: the event completes at once, not behind
            # work already queued on some user stream.
            stream = driver.stream_create(0)
            try:
                driver.event_record(event, stream)
                driver.event_wait(event)
            finally:
                driver.stream_destroy(stream)
        except BaseException:
            driver.event_destroy(event)
            raise
        return event

    def track(self, stream: Stream) -> tuple[int, str]:
        with self._lock:
            return self._track_locked(stream)

    def _track_locked(self, stream: Stream) -> tuple[int, str]:
        found = self._tracks.get(stream)
        if found is None:
            if stream.is_default:
                found = (1, "default stream")
            else:
                n = next(self._next_stream)
                what = "foreign stream" if getattr(stream, "foreign", False) else "stream"
                found = (n + 1, f"{what} {n} (priority {stream.priority})")
            self._tracks[stream] = found
        return found

    def _event(self) -> DriverEvent:
        with self._lock:
            self._out += 1
            if self._free:
                return self._free.pop()
        try:
            return self.driver.event_create(True)
        except BaseException:
            with self._lock:
                self._out -= 1
            raise

    def give_back(self, *events: DriverEvent) -> None:
        with self._lock:
            self._out -= len(events)
            self._free.extend(events)
            idle = self.retired and self._out == 0
        if idle:
            self.release_if_idle()

    def release_if_idle(self) -> None:
        """Destroy the pooled events once retired and no span holds any (idempotent)."""
        with self._lock:
            if not self.retired or self._out:
                return
            events, self._free = self._free, []
            reference, self.reference = self.reference, None
        if reference is not None:
            events.append(reference)
        for event in events:
            try:
                self.driver.event_destroy(event)
            except AruntimeError as exc:
                _log.warning("trace: destroying a timing event failed: %s", exc)

    def span(
        self, op: str, stream: Stream, nbytes: int, kernel: Kernel | None
    ) -> _PendingSpan | None:
        """A span that times one op, or None when nothing is recording it."""
        sessions = tuple(self.sessions)
        if not sessions or op in ("synchronize", "close"):
            return None
        try:
            start = self._event()
        except AruntimeError:
            return None
        try:
            end = self._event()
        except AruntimeError:
            self.give_back(start)
            return None
        track, label = self.track(stream)
        pending = _PendingSpan(self, sessions, start, end, op, track, label, nbytes, kernel)
        for session in sessions:
            session._enter(pending)
        return pending


class _PendingSpan:
    """One op being traced: records its events, reads its times when it finishes."""

    __slots__ = (
        "completion",
        "end",
        "kernel",
        "label",
        "nbytes",
        "op",
        "recorder",
        "sessions",
        "start",
        "track",
    )

    def __init__(
        self,
        recorder: _Recorder,
        sessions: tuple[Trace, ...],
        start: DriverEvent,
        end: DriverEvent,
        op: str,
        track: int,
        label: str,
        nbytes: int,
        kernel: Kernel | None,
    ) -> None:
        self.recorder = recorder
        self.sessions = sessions
        self.start = start
        self.end = end
        self.op = op
        self.track = track
        self.label = label
        self.nbytes = nbytes
        self.kernel = kernel
        self.completion: Completion | None = None

    def enqueue(self, call: EnqueueCall, args: tuple[Any, ...], stream: DriverStream) -> None:
        """Enqueue the op after the start event (on a synchronous driver, the end too).

        The op's own error propagates; the span is then dropped.
        """
        driver = self.recorder.driver
        try:
            driver.event_record(self.start, stream)
            call(*args, stream)
            if driver.synchronous:
                driver.event_record(self.end, stream)
        except BaseException:
            self._settle(None)
            raise
        if driver.synchronous:
            self.finish()

    def follow(self, completion: Completion, stream: DriverStream) -> None:
        """After the op's marker: record the end event and subscribe to ``completion``.

        A failure here drops the span only; the op and its Completion are
        not affected.
        """
        try:
            self.recorder.driver.event_record(self.end, stream)
        except AruntimeError as exc:
            _log.debug("trace: %s left out: %s", self.op, exc)
            self._settle(None)
            return
        self.completion = completion
        if not completion.subscribe(self.finish):
            self.finish()

    def abandon(self) -> None:
        """The op never reached its marker (its enqueue or marker failed): drop the span."""
        self._settle(None)

    def finish(self) -> None:
        driver = self.recorder.driver
        reference = self.recorder.reference
        span: TraceSpan | None = None
        try:
            if reference is None:
                raise AruntimeError("the trace was released")
            if not driver.synchronous and not driver.event_query(self.end):
                # Only the end event itself is queued after the finished marker.
                driver.event_wait(self.end)
            start_ms = driver.event_elapsed_ms(reference, self.start)
            end_ms = driver.event_elapsed_ms(reference, self.end)
        except AruntimeError as exc:
            _log.debug("trace: %s left out: %s", self.op, exc)
        else:
            kernel = self.kernel
            span = TraceSpan(
                op=self.op,
                kind=_KINDS.get(self.op, "op"),
                name=kernel.name if kernel is not None else self.op,
                track=self.track,
                stream=self.label,
                nbytes=self.nbytes,
                kernel=f"{kernel.module.name}.{kernel.name}" if kernel is not None else None,
                start_us=start_ms * 1000.0,
                end_us=max(start_ms, end_ms) * 1000.0,
            )
        self._settle(span)

    def _settle(self, span: TraceSpan | None) -> None:
        self.completion = None
        self.recorder.give_back(self.start, self.end)
        for session in self.sessions:
            session._add(self, span)


class Tracing:
    """A backend's traces: which are active, and the recorder they share.

    :attr:`recorder` is None while no trace is active; it is the one
    attribute submission reads per op.
    """

    # Slots: the compiled enqueue reads ``recorder`` in place (ffi/core/slots.h).
    __slots__ = ("_check_open", "_driver", "_info", "_lock", "_name", "recorder")

    def __init__(
        self,
        driver: Driver,
        name: str,
        info: DeviceInfo,
        lock: threading.RLock,
        check_open: Callable[[str], None],
    ) -> None:
        self.recorder: _Recorder | None = None
        self._driver = driver
        self._name = name
        self._info = info
        self._lock = lock
        self._check_open = check_open

    def start(self, path: str | os.PathLike[str], fn: str = "trace") -> Trace:
        """Begin a :class:`Trace` (the body of :meth:`Backend.trace`)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{fn}: path must be a str or os.PathLike, got {type(path).__name__}")
        target = Path(path)
        if not target.name:
            raise InvalidArgumentError(f"{fn}: {str(path)!r} names no file")
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir():
            raise InvalidArgumentError(
                f"{fn}: the folder {str(parent)!r} of {str(path)!r} does not exist"
            )
        self._check_open(fn)
        session = Trace(self, target)
        with self._lock:
            self._check_open(fn)
            recorder = self.recorder
            if recorder is None:
                recorder = self.recorder = _Recorder(self._driver, self._name, self._info)
            recorder.sessions.append(session)
        return session

    def start_env(self, path: str) -> Trace | None:
        """The trace ``ARUNTIME_TRACE`` asks for; a bad path warns instead of failing the open."""
        try:
            return self.start(path, TRACE_ENV)
        except (AruntimeError, OSError) as exc:
            warnings.warn(f"aruntime: not tracing: {exc}", RuntimeWarning, stacklevel=5)
            return None

    def detach(self, session: Trace) -> _Recorder | None:
        """Take ``session`` off the recorder; None if it was already stopped."""
        with self._lock:
            recorder = self.recorder
            if recorder is None or session not in recorder.sessions:
                return None
            recorder.sessions.remove(session)
            if not recorder.sessions:
                self.recorder = None
                recorder.retired = True
        return recorder

    def stop_all(self, *, abandon: bool = False) -> None:
        """Stop every active trace (the backend's close, or interpreter exit)."""
        recorder = self.recorder
        if recorder is None:
            return
        for session in list(recorder.sessions):
            try:
                if abandon:
                    session._abandon()
                else:
                    session.stop()
            except OSError as exc:
                _log.error("%s: writing the trace %s failed: %s", self._name, session.path, exc)
