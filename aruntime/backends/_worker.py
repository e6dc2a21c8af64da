"""A worker thread for driver calls and host copies that must not run on the caller's thread."""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

__all__ = ["HostWorker"]

_log = logging.getLogger("aruntime.backends")


class HostWorker:
    """One daemon thread that runs host-side jobs in submission order.

    A job handles its own errors (a staging job reports them through its
    stream); one that raises anyway is logged, and the worker goes on.
    """

    def __init__(self, name: str) -> None:
        self._jobs: collections.deque[Callable[[], None] | None] = collections.deque()
        self._ready = threading.Condition(threading.Lock())
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        with self._ready:
            self._jobs.append(job)
            self._ready.notify()

    def stop(self, *, join: bool = True) -> None:
        """Run the jobs already submitted, then end the thread; ``join`` waits for that."""
        with self._ready:
            self._jobs.append(None)
            self._ready.notify()
        if join and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._jobs:
                    self._ready.wait()
                job = self._jobs.popleft()
            if job is None:
                return
            try:
                job()
            except Exception:  # a job's own bug: keep serving the others
                _log.exception("%s: a job failed", self._thread.name)
