"""What a stream owns besides its driver handle: its lock, waiter, capture and errors.

A :class:`StreamState` is the part of a :class:`aruntime.Stream` that the
core's submission, graph and shutdown code works with.  It is also the
:class:`aruntime._protocols.CompletionHooks` of every Completion queued on
the stream, so a Completion reaches its stream's waiter and error list
without knowing what a stream is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from ._completion import Completion, born_captured
from ._driver import Driver, DriverStream
from ._ledger import pin
from ._op import Op, Range
from ._waiter import StreamWaiter

__all__ = ["CaptureRecord", "FailureList", "StreamState"]


class CaptureRecord(NamedTuple):
    """What a capture recorded: what its graph keeps alive, its ops, their byte ranges."""

    keepalive: list[Any]
    op_count: int
    reads: tuple[Range, ...]
    writes: tuple[Range, ...]


class FailureList:
    """Thread-safe list of failed Completions nobody has looked at yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Completion] = []
        self._closed = False

    def note(self, completion: Completion) -> bool:
        """Keep ``completion``; False (and not kept) once the list is closed."""
        with self._lock:
            if self._closed:
                return False
            self._items.append(completion)
        return True

    def close(self) -> list[Completion]:
        """Refuse further notes; returns what was kept."""
        with self._lock:
            self._closed = True
            items, self._items = self._items, []
        return items

    def forget(self, completion: Completion) -> bool:
        """Drop ``completion``; False if it was not here."""
        with self._lock:
            try:
                self._items.remove(completion)
            except ValueError:
                return False
        return True

    def take(self) -> list[Completion]:
        with self._lock:
            items, self._items = self._items, []
        return items


class StreamState:
    """One stream's lock, lazily started waiter, capture state and unseen errors.

    ``lock`` orders everything enqueued on the stream: whoever holds it may
    enqueue, record the marker and hand it to the waiter, so the waiter's
    queue order is the stream's order.
    """

    def __init__(
        self,
        driver: Driver,
        label: str,
        orphans: FailureList,
        on_new_waiter: Callable[[StreamWaiter], None],
    ) -> None:
        self.lock = threading.RLock()
        # The hot path takes the lock through these (a ``with`` costs more).
        self.acquire = self.lock.acquire
        self.release = self.lock.release
        self.waiter: StreamWaiter | None = None
        self.capturing = False
        self._driver = driver
        self._label = label
        self._on_new_waiter = on_new_waiter
        self._capture_keepalive: list[Any] = []
        self._capture_ops = 0
        self._capture_reads: list[Range] = []
        self._capture_writes: list[Range] = []
        self._failures = FailureList()
        self._orphans = orphans  # where errors go once the stream is closed
        # Buffers of ops that reached the driver without a marker behind them
        # (the marker failed): they stay alive until a later op's Completion
        # finishes, which the stream reaches only after them.  Guarded by lock.
        self.stranded: list[Any] = []

    # -- waiter --------------------------------------------------------------------
    def started_waiter(self) -> StreamWaiter:
        """The stream's waiter, started on first use (call with ``lock`` held)."""
        waiter = self.waiter
        if waiter is None:
            waiter = self.waiter = StreamWaiter(self._driver, self._label)
            self._on_new_waiter(waiter)
        return waiter

    def pending(self) -> int:
        waiter = self.waiter
        return 0 if waiter is None else waiter.pending()

    def last_pending(self) -> Completion | None:
        waiter = self.waiter
        return None if waiter is None else waiter.last_pending()

    # -- capture (call with ``lock`` held) ---------------------------------------------
    def begin_capture(self) -> None:
        self.capturing = True
        self._capture_keepalive = []
        self._capture_ops = 0
        self._capture_reads = []
        self._capture_writes = []

    def capture(self, op: Op, handle: DriverStream) -> Completion:
        """Record ``op`` into the graph being captured; its Completion never runs.

        What it uses must live as long as the graph: its ledger entries (the
        device memory) are pinned from now on, so a free() during the capture
        or under the graph is deferred.
        """
        op.call(*op.args, handle)
        keepalive = (*op.views, *op.keepalive)
        pin(keepalive)
        self._capture_keepalive.extend(keepalive)
        self._capture_reads.extend(op.reads)
        self._capture_writes.extend(op.writes)
        self._capture_ops += 1
        return born_captured(op.kind.public)

    def end_capture(self) -> CaptureRecord:
        """Stop capturing: what the graph must keep alive, its op count and byte ranges."""
        self.capturing = False
        record = CaptureRecord(
            self._capture_keepalive,
            self._capture_ops,
            tuple(self._capture_reads),
            tuple(self._capture_writes),
        )
        self._capture_keepalive, self._capture_reads, self._capture_writes = [], [], []
        return record

    # -- errors nobody awaited (any thread) ----------------------------------------------
    def mark_closed(self) -> None:
        """From now on errors go to the backend's list, the ones held so far too."""
        for failure in self._failures.close():
            self._orphans.note(failure)

    def take_failures(self) -> list[Completion]:
        return self._failures.take()

    # -- CompletionHooks ---------------------------------------------------------------
    def kick(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            waiter.kick()

    def finish_ready(self, completion: Completion) -> None:
        waiter = self.waiter
        if waiter is not None:
            waiter.finish_ready(completion)

    def note_failure(self, completion: Completion) -> None:
        if self._failures.note(completion):
            return
        # A closed stream has no next synchronize(): its backend's close() reports it.
        self._orphans.note(completion)

    def forget_failure(self, completion: Completion) -> None:
        if not self._failures.forget(completion):
            self._orphans.forget(completion)
