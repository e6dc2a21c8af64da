"""Shutdown: ``close()``, the one interpreter-exit hook, and the finalizer paths.

Three ways a backend ends:

* ``close()`` (or the end of a ``with`` block): waits for queued work, then
  releases everything in dependency order, then reports the first error of
  an op nobody awaited;
* garbage collection without ``close()``: :func:`backend_dropped` warns at
  the line that opened the backend, lets every waiter drain and closes the
  driver from the last one out, never blocking the collector;
* interpreter exit with work in flight: the exit hook abandons every open
  backend (no more wake-ups, no waiting on the device), since the memory
  goes with the process anyway.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ._callsite import user_frame, warn_at
from ._completion import Completion
from ._driver import Driver, DriverStream
from ._exceptions import DriverError
from ._ledger import Entry, unpin
from ._state import BackendState
from ._streamstate import StreamState
from ._waiter import StreamWaiter

__all__ = ["Shutdown", "release_stream"]

_log = logging.getLogger("aruntime")
_open: weakref.WeakSet[Shutdown] = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_registered = False


def _register_exit_hook() -> None:
    global _exit_hook_registered
    with _exit_hook_lock:
        if not _exit_hook_registered:
            atexit.register(_abandon_all_at_exit)
            _exit_hook_registered = True


def _abandon_all_at_exit() -> None:
    """Interpreter exit with work in flight: stop waking loops, never block.

    The process is ending, so the memory goes with it; what must not happen is
    a waiter thread running Python (or waking a dead loop) while the
    interpreter tears down, or exit waiting on a device forever.
    """
    for shutdown in list(_open):
        shutdown.abandon()


def release_stream(
    driver: Driver,
    handle: DriverStream,
    state: StreamState,
    done: Callable[[], None] | None = None,
) -> None:
    """Destroy a driver stream once its waiter has drained (or right away)."""
    waiter = state.waiter

    def destroy() -> None:
        try:
            driver.stream_destroy(handle)
        finally:
            if done is not None:
                done()

    if waiter is None:
        destroy()
    else:
        waiter.close(on_exit=destroy)


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


class Shutdown:
    """The lifecycle part of a backend: its finalizer, close() and abandon()."""

    def __init__(
        self,
        state: BackendState,
        backend: object,
        drain_markers: Callable[[], list[Any]],
        release_memory: Callable[[Callable[[str, Callable[[], None]], None]], list[Entry]],
        drained: Callable[[str, Any], Completion],
    ) -> None:
        self._state = state
        self._drain_markers = drain_markers
        self._release_memory = release_memory
        self._drained = drained
        _open.add(self)
        if not state.driver.synchronous:
            _register_exit_hook()
        self._finalizer = weakref.finalize(
            backend, _backend_dropped, state.name, state.driver, state.waiters, user_frame()
        )
        self._finalizer.atexit = False  # at exit, _abandon_all_at_exit decides

    @staticmethod
    def need_exit_hook() -> None:
        """Something besides waiters (an environment trace) must be stopped at exit."""
        _register_exit_hook()

    def close(self) -> None:
        """Wait for queued work, then release every resource (idempotent).

        Memory still allocated is freed too, with a :class:`ResourceWarning`
        (at the line that called ``close()``) naming where it was allocated.
        """
        site = user_frame()
        state = self._state
        driver = state.driver
        with state.lock:
            if state.closed:
                return
            state.closed = True
            self._finalizer.detach()
            streams = state.open_streams()
            events = list(state.events)
            graphs = list(state.graphs)
            modules = list(state.modules.values())
            state.modules.clear()
            draining = list(state.draining)
        _open.discard(self)
        errors: list[BaseException] = []
        parked: list[Callable[[], None]] = []  # memory freed under graphs and captures
        for st in streams:
            with st.state.lock:
                if st.state.capturing:
                    keepalive, _ = st.state.end_capture()
                    parked += unpin(keepalive)
                    with contextlib.suppress(DriverError):
                        driver.capture_abort(st.handle)
        waiters = [w for w in (st.state.waiter for st in (*streams, *draining)) if w is not None]
        for w in waiters:
            w.close()
        waiters.extend(state.live_waiters())
        for w in waiters:
            w.join()
        state.tracing.stop_all()
        failures = [c for st in streams for c in st.state.take_failures()]
        failures.extend(state.orphans.take())
        errors.extend(c.error for c in failures if c.error is not None)

        def attempt(what: str, fn: Callable[[], None]) -> None:
            try:
                fn()
            except DriverError as exc:
                _log.warning("close %s: %s failed: %s", state.name, what, exc)
                errors.append(exc)

        for g in graphs:
            if g._mark_closed() and g.handle is not None:
                attempt("graph_destroy", functools.partial(driver.graph_destroy, g.handle))
                parked += unpin(g.take_keepalive())
        for release in parked:
            attempt("mem_free", release)
        for ev in events:
            if ev._mark_closed():
                attempt("event_destroy", functools.partial(driver.event_destroy, ev.handle))
        for marker in self._drain_markers():
            attempt("event_destroy", functools.partial(driver.event_destroy, marker))
        leaked = [e for e in self._release_memory(attempt) if e.kind != "mapped"]
        for st in streams:
            st._mark_closed()
            attempt("stream_destroy", functools.partial(driver.stream_destroy, st.handle))
        for m in modules:
            m._mark_closed()
            attempt("module_unload", functools.partial(driver.module_unload, m.handle))
        attempt("close", driver.close)
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

    def pending_completions(self) -> list[Completion]:
        """What ``async with``'s exit awaits before it closes."""
        state = self._state
        out = []
        for st in state.open_streams():
            if not st.closed and not st.state.capturing:
                out.append(self._drained("close", st))
        # Streams closed with work still queued: await them too, or close()
        # would block the event loop while they drain.
        out.extend(c for c in (w.last_pending() for w in state.live_waiters()) if c is not None)
        return out
