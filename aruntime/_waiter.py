"""Waiter threads: one per stream that has had async work, created lazily.

A stream executes in order, so its ops finish in the order they were queued.
Each waiter thread therefore blocks on one marker event at a time, in FIFO
order, inside the driver's blocking wait (a blocking-sync event: the thread
parks in the driver, no spinning, GIL released), then finishes the matching
Completion, which wakes the awaiting loops.  Threads are O(streams), never
one per await, and the event loop itself never polls.

Python runs on these threads, but they are ours, not the driver's: no driver
lock is held while the wake-ups run.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

from ._completion import Completion
from ._driver import Driver, DriverEvent
from ._exceptions import AruntimeError, DriverError

__all__ = ["StreamWaiter"]

_log = logging.getLogger("aruntime")

_Item = tuple[DriverEvent, Completion, "Callable[[DriverEvent], None] | None"]


class StreamWaiter:
    """Finishes a stream's Completions in order, on one lazily started thread."""

    def __init__(self, driver: Driver, label: str) -> None:
        self._driver = driver
        self._label = label
        self._queue: collections.deque[_Item] = collections.deque()
        # Reentrant: a garbage-collection finalizer that closes this waiter may
        # run on this very thread while it holds the lock.
        self._cond = threading.Condition(threading.RLock())
        self._thread: threading.Thread | None = None
        self._closing = False
        self._exited = False
        self._on_exit: list[Callable[[], None]] = []
        self._abandon = False
        self._current: Completion | None = None  # that item's Completion

    def submit(
        self,
        event: DriverEvent,
        completion: Completion,
        release: Callable[[DriverEvent], None] | None,
    ) -> None:
        with self._cond:
            if self._closing:
                raise AruntimeError(f"{self._label}: stream is closing")
            self._queue.append((event, completion, release))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"aruntime-waiter-{self._label}", daemon=True
                )
                self._thread.start()
            else:
                self._cond.notify()

    def last_pending(self) -> Completion | None:
        """The Completion of the latest op not yet finished (None when drained).

        The stream runs in order, so once it finishes, everything queued on the
        stream before it has finished too.
        """
        with self._cond:
            if self._queue:
                return self._queue[-1][1]
            return self._current

    def pending(self) -> int:
        """Ops queued or being waited on whose Completion has not finished."""
        # Ask the Completion, not the busy flag: a woken awaiter may run (and
        # check for leaks) before this thread has cleared the flag.
        with self._cond:
            current = self._current
            return len(self._queue) + (current is not None and not current.done())

    @property
    def started(self) -> bool:
        return self._thread is not None

    def close(self, on_exit: Callable[[], None] | None = None) -> None:
        """Stop after the queued work: never blocks.  ``on_exit`` runs once drained.

        It may be called again (by another owner) with another ``on_exit``;
        each runs once, right away if the thread has already ended.
        """
        run_now = False
        with self._cond:
            if on_exit is not None:
                if self._exited or self._thread is None:
                    run_now = True
                else:
                    self._on_exit.append(on_exit)
            if not self._closing:
                self._closing = True
                self._cond.notify()
        if run_now:
            assert on_exit is not None
            on_exit()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True if it has (or never started)."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def abandon(self) -> None:
        """At interpreter exit: stop waking anything, finish nothing more."""
        with self._cond:
            self._abandon = True
            self._closing = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if self._abandon or (not self._queue and self._closing):
                    on_exit, self._on_exit = self._on_exit, []
                    self._exited = True
                    break
                event, completion, release = self._queue.popleft()
                self._current = completion
            error: BaseException | None = None
            try:
                self._driver.event_wait(event)
            except DriverError as exc:
                error = exc
            except BaseException as exc:  # never leave an awaiter hanging
                error = AruntimeError(f"{completion.op}: waiting for the device failed: {exc!r}")
                error.__cause__ = exc
            if release is not None:
                try:
                    release(event)
                except Exception:
                    _log.exception("returning a marker event failed")
            if not self._abandon:
                completion._finish(error)
            with self._cond:
                self._current = None
            # Drop this op before parking: otherwise the idle thread keeps its
            # Completion, and through it the stream and a D2H destination, alive.
            del event, completion, release, error
        if not self._abandon:
            for fn in on_exit:
                try:
                    fn()
                except Exception:
                    _log.exception("%s: cleanup after the last op failed", self._label)
