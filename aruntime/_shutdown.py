"""Shutdown: ``close()``, the one interpreter-exit hook, and the finalizer paths.

Three ways a backend ends:

* ``close()`` (or the end of a ``with`` block): waits for queued work, then
  releases every resource in the registry, newest first, which is
  dependency order (see _resources), then reports the first error of an op
  nobody awaited;
* garbage collection without ``close()``: :func:`backend_dropped` warns at
  the line that opened the backend, lets every waiter drain and closes the
  driver from the last one out, never blocking the collector;
* interpreter exit with work in flight: the exit hook (:mod:`aruntime._exit`)
  abandons every open backend (no more wake-ups, no waiting on the device),
  since the memory goes with the process anyway.
"""

from __future__ import annotations

import logging
import threading
import weakref

from ._callsite import user_frame, warn_at
from ._completion import Completion
from ._driver import Driver
from ._exceptions import DriverError
from ._exit import BACKENDS, at_exit
from ._fork import forked_error, on_fork_in_child
from ._ledger import Entry
from ._op import OpKind
from ._state import BackendState
from ._submit import AsyncCompletion, SyncCompletion
from ._waiter import StreamWaiter

__all__ = ["Shutdown"]

_log = logging.getLogger("aruntime")
_open: weakref.WeakSet[Shutdown] = weakref.WeakSet()


def _abandon_all_at_exit() -> None:
    """Interpreter exit with work in flight: stop waking loops, never block.

    The process is ending, so the memory goes with it; what must not happen is
    a waiter thread running Python (or waking a dead loop) while the
    interpreter tears down, or exit waiting on a device forever.
    """
    unheard: list[Warning] = []
    for shutdown in list(_open):
        try:
            shutdown.warn_if_forgotten()
        except Warning as exc:  # an "error" warning filter: every backend is abandoned first
            unheard.append(exc)
        shutdown.abandon()
    if unheard:
        raise unheard[0]


def _backend_dropped(
    name: str,
    driver: Driver,
    waiters: weakref.WeakSet[StreamWaiter],
    site: tuple[str, int],
) -> None:
    """Finalizer of a backend garbage-collected without ``close()``.

    Warns, lets every waiter drain and end, then closes the driver from the
    last one to exit (never blocking the collector on the device).
    """
    warn_at(
        site,
        f"unclosed backend {name!r}: close it (or use 'with' / 'async with') so its "
        "threads and device memory are released promptly",
    )

    def close_driver() -> None:
        try:
            driver.close()
        except Exception:  # a finalizer must never raise
            _log.exception("%s: closing a dropped backend failed", name)

    live = list(waiters)
    if not live:
        close_driver()
        return
    remaining = [len(live)]
    lock = threading.Lock()

    def one_exited() -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            close_driver()

    for waiter in live:
        waiter.close(on_exit=one_exited)


def _leak_message(name: str, entries: list[Entry], top: int = 5) -> str:
    """What a close() freed for the caller: counts and bytes by allocation site."""
    by_site: dict[str, list[int]] = {}
    for e in entries:
        row = by_site.setdefault(e.site, [0, 0])
        row[0] += 1
        row[1] += e.nbytes
    rows = sorted(by_site.items(), key=lambda kv: (-kv[1][1], kv[0]))
    listed = "; ".join(f"{site} ({n} x, {nbytes} bytes)" for site, (n, nbytes) in rows[:top])
    more = f"; and {len(rows) - top} more sites" if len(rows) > top else ""
    total = sum(e.nbytes for e in entries)
    return (
        f"close(): the {name} backend freed {len(entries)} allocations ({total} bytes) "
        f"that were still live; free them (or use sweep_unreleased()) before closing. "
        f"Allocated at: {listed}{more}"
    )


def _mark_forked(parent: int) -> None:
    for shutdown in list(_open):
        shutdown.forked(parent)


on_fork_in_child(_mark_forked)


class Shutdown:
    """The lifecycle part of a backend: its finalizer, close() and abandon()."""

    def __init__(
        self, state: BackendState, backend: object, policy: SyncCompletion | AsyncCompletion
    ) -> None:
        self._state = state
        self._policy = policy
        _open.add(self)
        if not state.driver.synchronous:
            self.need_exit_hook()
        self._site = user_frame()
        self._finalizer = weakref.finalize(
            backend, _backend_dropped, state.name, state.driver, state.waiters, self._site
        )
        self._finalizer.atexit = False  # at exit, _abandon_all_at_exit decides

    @staticmethod
    def need_exit_hook() -> None:
        """Open backends must be abandoned at exit (waiters, or an environment trace)."""
        at_exit(BACKENDS, _abandon_all_at_exit)

    def close(self) -> None:
        """Wait for queued work, then release every resource (idempotent).

        Memory still allocated is freed too, with a :class:`ResourceWarning`
        (at the line that called ``close()``) naming where it was allocated.
        """
        site = user_frame()
        state = self._state
        with state.lock:
            if state.closed:
                return
            state.closed = True
            self._finalizer.detach()
            streams = state.open_streams()
            state.modules.clear()
        _open.discard(self)
        # Linearize against other threads' enqueues: each op either got onto
        # its stream before this (and is drained below) or is refused.
        for st in streams:
            st.shut()
        # Let every waiter drain, those of streams closed earlier too, before
        # anything is released: nothing is in flight from here on.
        waiters = [w for w in (st.state.waiter for st in streams) if w is not None]
        for w in waiters:
            w.close()
        waiters.extend(state.live_waiters())
        for w in waiters:
            w.join()
        state.tracing.stop_all()
        failures = [c for st in streams for c in st.state.take_failures()]
        failures.extend(state.orphans.take())
        errors: list[BaseException] = [c.error for c in failures if c.error is not None]
        leaked = [e for e in state.ledger.entries() if e.kind.owns_memory]
        for resource in state.resources.close():  # newest first: dependents before what they use
            try:
                resource.release()
            except DriverError as exc:
                _log.warning("close %s: releasing %r failed: %s", state.name, resource, exc)
                errors.append(exc)
        state.ledger.clear()
        try:
            state.driver.close()
        except DriverError as exc:
            _log.warning("close %s: closing the driver failed: %s", state.name, exc)
            errors.append(exc)
        try:
            if leaked:
                # Everything is released by now: a warning turned into an
                # error (as in a test suite) must not leak the rest.
                warn_at(site, _leak_message(state.name, leaked))
        finally:
            if errors:
                for err in errors:
                    _log.error("%s: error from an op nobody awaited: %s", state.name, err)
                raise errors[0]

    def warn_if_forgotten(self) -> None:
        """At exit: a backend never closed, with work still in flight, says so.

        Its finalizer cannot: at exit it is detached, and before exit the
        user's buffers held by the pending work (a pinned host buffer, a
        graph) may keep the backend alive.  The work is abandoned, and an
        error it ends with is never seen.
        """
        state = self._state
        if state.closed:
            return
        pending = sum(w.pending() for w in state.live_waiters())
        if pending:
            warn_at(
                self._site,
                f"unclosed backend {state.name!r} at exit, with work still pending: "
                "its results and errors are lost; close it (or use 'with' / "
                "'async with') so its work is awaited",
            )

    def abandon(self) -> None:
        """Interpreter exit: stop all waiters without waiting for the device."""
        state = self._state
        with state.lock:
            if state.closed:
                return
            state.closed = True
            self._finalizer.detach()
            waiters = list(state.waiters)  # those of closed streams still draining too
        for waiter in waiters:
            waiter.abandon()
        state.tracing.stop_all(abandon=True)

    def forked(self, parent: int) -> None:
        """In a forked child: the backend is the parent's; every call now raises, nothing waits.

        Runs on the child's only thread right after the fork, so it takes no
        lock (one may have been held by a thread the fork left behind).  The
        driver is never called again here: its close belongs to the parent.
        """
        state = self._state
        state.lock = threading.RLock()
        state.forked_from = parent
        state.closed = True
        self._finalizer.detach()
        _open.discard(self)
        name = state.name
        for waiter in list(state.waiters):
            waiter.fail_after_fork(lambda op: forked_error(op, name, parent))

    def pending_completions(self) -> list[Completion]:
        """What ``async with``'s exit awaits before it closes."""
        state = self._state
        out = []
        for st in state.open_streams():
            if not st.closed and not st.state.capturing:
                out.append(self._policy.drained(OpKind.CLOSE, st))
        # Streams closed with work still queued: await them too, or close()
        # would block the event loop while they drain.
        out.extend(c for c in (w.last_pending() for w in state.live_waiters()) if c is not None)
        return out
