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

    With ``idle_exit_s``, the thread ends after that many seconds without a
    job and the next :meth:`submit` starts another, so that a stream that
    staged one big copy an hour ago does not hold a thread ever since.
    """

    def __init__(self, name: str, *, idle_exit_s: float | None = None) -> None:
        if idle_exit_s is not None and not idle_exit_s > 0:
            raise ValueError(f"HostWorker: idle_exit_s must be > 0 or None, got {idle_exit_s!r}")
        self._name = name
        self._idle_exit_s = idle_exit_s
        self._jobs: collections.deque[Callable[[], None] | None] = collections.deque()
        self._ready = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._stopped = False
        with self._ready:
            self._start_locked()

    @property
    def running(self) -> bool:
        """Whether a thread is alive now (it may have ended while idle)."""
        return self._thread is not None

    def _start_locked(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        with self._ready:
            self._jobs.append(job)
            if self._thread is None and not self._stopped:
                self._start_locked()
            else:
                self._ready.notify()

    def stop(self, *, join: bool = True) -> None:
        """Run the jobs already submitted, then end the thread; ``join`` waits for that."""
        with self._ready:
            self._stopped = True
            thread = self._thread
            if thread is None:
                return  # ended while idle: nothing is queued
            self._jobs.append(None)
            self._ready.notify()
        if join and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._jobs:
                    if not self._ready.wait(self._idle_exit_s) and not self._jobs:
                        # Idle for idle_exit_s (a wait without a timeout never
                        # times out): end; submit starts a new thread.
                        self._thread = None
                        return
                job = self._jobs.popleft()
                if job is None:
                    self._thread = None
                    return
            try:
                job()
            except Exception:  # a job's own bug: keep serving the others
                _log.exception("%s: a job failed", self._name)
