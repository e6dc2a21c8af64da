"""The mock in slow motion: each stream runs its ops on a worker thread.

``open_backend("mock", latency=0.01)`` gives a mock whose ops take ``latency``
seconds each and finish later than they were enqueued, so a user's test suite
(and ours) can exercise what the born-done mock never does: awaits that
really wait, cancellation mid-op, errors that surface after the enqueue.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..._callsite import caller_site
from ..._driver import DriverEvent, DriverStream
from ..._exceptions import DeviceLostError, DriverError, InvalidArgumentError
from ._driver import MockCall, MockDriver, _MockStream

__all__ = ["ThreadedMockDriver"]


class _Worker:
    """One stream's in-order executor."""

    def __init__(self, name: str) -> None:
        self._queue: collections.deque[Callable[[], None] | None] = collections.deque()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None] | None) -> None:
        with self._cond:
            self._queue.append(job)
            self._cond.notify()

    def stop(self) -> None:
        self.submit(None)

    def join(self) -> None:
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                job = self._queue.popleft()
            if job is None:
                return
            job()


@dataclass
class _ThreadedStream(_MockStream):
    worker: _Worker | None = None
    error: DriverError | None = None


@dataclass
class _ThreadedEvent:
    """Records are numbered; a wait waits for the number current at its call.

    Records on different streams may finish out of order, and a later record
    must not satisfy a wait for an earlier one (CUDA: later records "will not
    have any effect" on a wait already made), so finished numbers are kept
    as a floor (all up to it finished) plus the ones finished above it.
    """

    timing: bool
    time: float | None = None
    #: The number of the latest record.
    target: int = 0
    floor: int = 0
    above: set[int] = field(default_factory=set)
    #: The finished record whose time ``time`` is.
    latest: int = 0
    #: Errors carried by finished records, by number (dropped well below the floor).
    errors: dict[int, DriverError] = field(default_factory=dict)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def finished(self, generation: int) -> bool:
        """Whether record ``generation`` has finished (caller holds ``cond``)."""
        return generation <= self.floor or generation in self.above

    def finish(self, generation: int, when: float, error: DriverError | None) -> None:
        """Record ``generation`` finished (caller holds ``cond``)."""
        self.above.add(generation)
        while self.floor + 1 in self.above:
            self.floor += 1
            self.above.discard(self.floor)
        if error is not None:
            self.errors[generation] = error
        if generation >= self.latest:
            self.latest, self.time = generation, when
        for old in [g for g in self.errors if g < self.floor - 64]:
            del self.errors[old]


class ThreadedMockDriver(MockDriver):
    """A mock whose ops run later, on per-stream threads, ``latency`` seconds each."""

    synchronous = False

    def __init__(self, *, latency: float = 0.001, **options: Any) -> None:
        if isinstance(latency, bool) or not isinstance(latency, (int, float)):
            raise TypeError(f"mock: latency must be a number of seconds, got {latency!r}")
        if not 0 <= latency <= 60:
            raise InvalidArgumentError(f"mock: latency must be within 0..60 s, got {latency}")
        super().__init__(**options)
        self.latency = float(latency)
        self._workers: list[_Worker] = []
        self._live_streams: list[_ThreadedStream] = []

    def stream_create(self, priority: int) -> DriverStream:
        stream = _ThreadedStream(next(self._ids), priority)
        stream.worker = _Worker(f"aruntime-mock-stream-{stream.id}")
        with self._lock:
            self._workers.append(stream.worker)
            self._live_streams.append(stream)
        return DriverStream(stream)

    def stream_destroy(self, stream: DriverStream) -> None:
        assert isinstance(stream, _ThreadedStream) and stream.worker is not None
        with self._lock:
            self._live_streams = [s for s in self._live_streams if s is not stream]
        stream.worker.stop()

    def clear_faults(self) -> None:
        """Also forget the lost-device error each stream carries to its next event."""
        with self._lock:
            super().clear_faults()
            for stream in self._live_streams:
                stream.error = None

    def close(self) -> None:
        with self._lock:
            workers, self._workers = self._workers, []
        for w in workers:
            w.stop()
        for w in workers:
            w.join()
        super().close()

    def _run(self, stream: DriverStream, kind: str, call: MockCall, op: Callable[[], None]) -> None:
        assert isinstance(stream, _ThreadedStream) and stream.worker is not None
        if stream.recording is not None:
            stream.recording.append(lambda: self._execute(kind, call, op))
            return
        self._check_lost(call.op)
        # The job runs on the worker: an injected loss names the user's call from here.
        site = caller_site() if self._faults else None

        def job() -> None:
            if self.latency:
                time.sleep(self.latency)
            try:
                self._execute(kind, call, op, site)
            except DriverError as exc:
                stream.error = exc
            except Exception as exc:  # a bug must fail the op, not kill the stream
                stream.error = DriverError(
                    f"{call.op}: mock op raised {exc!r}", backend="mock", function=call.op
                )

        stream.worker.submit(job)

    def _check_lost(self, function: str) -> None:
        if self._lost is not None:
            raise DeviceLostError(
                f"{function}: the device was lost earlier ({self._lost})",
                backend="mock",
                code=self._lost.code,
                name=self._lost.name,
                function=function,
            )

    # -- events: finished by the stream's worker, waited on with a condition ----
    def event_create(self, timing: bool) -> DriverEvent:
        return DriverEvent(_ThreadedEvent(timing))

    def event_record(self, event: DriverEvent, stream: DriverStream) -> None:
        assert isinstance(event, _ThreadedEvent) and isinstance(stream, _ThreadedStream)
        assert stream.worker is not None
        with event.cond:
            event.target += 1
            generation = event.target

        def job() -> None:
            # An op's error travels to the next event only; a lost device
            # fails every event after it.
            error, stream.error = stream.error, None
            if self._lost is not None:
                error = self._lost
                stream.error = self._lost
            with event.cond:
                event.finish(generation, time.perf_counter(), error)
                event.cond.notify_all()

        stream.worker.submit(job)

    def event_query(self, event: DriverEvent) -> bool:
        assert isinstance(event, _ThreadedEvent)
        with event.cond:
            return event.finished(event.target)

    def event_wait(self, event: DriverEvent) -> None:
        assert isinstance(event, _ThreadedEvent)
        with event.cond:
            goal = event.target
            while not event.finished(goal):
                event.cond.wait()
            error = event.errors.get(goal)
        if error is not None:
            raise error

    def stream_wait_event(self, stream: DriverStream, event: DriverEvent) -> None:
        assert isinstance(stream, _ThreadedStream) and stream.worker is not None
        assert isinstance(event, _ThreadedEvent)
        with event.cond:
            goal = event.target

        def job() -> None:
            with event.cond:
                while not event.finished(goal):
                    event.cond.wait()

        stream.worker.submit(job)
        self._log(MockCall("stream_wait_event", stream=stream.id))
