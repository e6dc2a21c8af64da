"""Deferred releases: driver calls that may wait for the device, moved off the caller's thread.

CUDA documents ``cuMemFree``, ``cuMemFreeHost`` and ``cuMemHostUnregister``
as synchronizing: they wait for the device's queued work, all of it, not only
the work that used the memory.  The core frees memory only after the work
queued before the free is done, but another stream may have queued a long
kernel since, and the free would then hold the event loop (or the waiter
thread that runs the release) for that kernel's length.  So a driver asks,
without blocking, whether any of its streams has work queued; if so, the call
goes to this queue, whose one thread makes the calls in order and may wait
there, and the caller returns at once.

A deferred call cannot raise to its caller: its error is logged as a
warning, like the core's own deferred releases.  :meth:`DeferredReleases.drain`
waits for the calls queued so far: before an allocation is retried after an
out-of-memory error, and when the driver closes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .._exceptions import AruntimeError
from ._worker import HostWorker

__all__ = ["DeferredReleases"]

_log = logging.getLogger("aruntime.backends")


class DeferredReleases:
    """One driver's queue of release calls, run in order on a thread made on first use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._worker: HostWorker | None = None
        self._pending = 0
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Calls queued and not yet made."""
        return self._pending

    def submit(self, call: Callable[[], None], what: str) -> None:
        """Queue ``call`` (named ``what`` in the warning if it fails)."""

        def run() -> None:
            try:
                call()
            except AruntimeError as exc:
                _log.warning("%s: deferred %s failed: %s", self._name, what, exc)
            finally:
                with self._lock:
                    self._pending -= 1

        with self._lock:
            if self._worker is None:
                self._worker = HostWorker(self._name)
            self._pending += 1
            worker = self._worker
        worker.submit(run)

    def drain(self) -> None:
        """Wait until every call queued so far has been made (blocks the caller)."""
        with self._lock:
            worker = self._worker
        if worker is None:
            return
        done = threading.Event()
        worker.submit(done.set)
        done.wait()

    def close(self) -> None:
        """Make the queued calls, then end the thread (idempotent)."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()
