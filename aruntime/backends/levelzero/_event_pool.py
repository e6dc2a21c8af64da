"""Recycled host-visible ze events (see :class:`_EventPool`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..._exceptions import DriverError
from ._constants import (
    _POOL_HOST_VISIBLE,
    _POOL_KERNEL_TIMESTAMP,
    _POOL_SIZE,
    _SCOPE_HOST,
    _ST_EVENT_DESC,
    _ST_EVENT_POOL_DESC,
)
from ._errors import ZE_RESULT_NOT_READY
from ._ffi import ffi
from ._handles import _ZeEvent


def _block_descending(event: _ZeEvent) -> int:
    return -event.block


class _EventPool:
    """Host-visible events, recycled; a new ``ze_event_pool`` only when all are in use.

    When a ze event may be reset and reused: only when nothing can still
    signal it or wait for it.  ``holds`` counts who might:

    * the driver event whose latest record it is (until the next record, or
      the event's destruction, replaces it), and whoever acquired a raw one
      (hand-over, marker and graph events) until it releases it;
    * each host wait (``event_wait``, ``elapsed_ms``) while it runs;
    * each device-side wait (``stream_wait_event``).  The host cannot see when
      a queued barrier has passed, so the waiting barrier signals a pooled
      "passed" event of its own, and the pair goes on ``_guards``: the waited
      event is held until the passed event is signalled.  Resetting it
      earlier would let a barrier still queued behind slow work find it
      unsignalled and wait for a record made after the wait call (a
      deadlock in a pipeline whose streams wait on each other's records).

    With no holds left, an event waits on ``_deferred`` until its pending
    signal (if any) has landed, since a reset before it would be undone by
    it.  Only then is it free, and it is reset on the host when acquired
    again.  A capture holds the events it records or waits for until its
    graph is destroyed: every replay uses them.

    The pool shrinks too: every ``_POOL_SIZE`` releases it sweeps, and a
    ``ze_event_pool`` whose events are all free goes back to the driver while
    more than two pools' worth are free, so that a burst of work in flight
    does not hold its peak of events (and their objects) for good.
    """

    def __init__(
        self, lib: Any, context: Any, device: Any, check: Callable[[int, str], None], timing: bool
    ) -> None:
        self._lib = lib
        self._context = context
        self._device = device
        self._check = check
        self._timing = timing
        #: Each ``ze_event_pool`` by its number, with the events made in it.
        self._pools: dict[int, tuple[Any, list[_ZeEvent]]] = {}
        self._next_block = 0
        self._releases = 0  # since the last sweep made by release()
        self._free: list[_ZeEvent] = []
        #: No holds left, but a signal may still land on them.
        self._deferred: list[_ZeEvent] = []
        #: (passed, waited): ``waited`` is held until ``passed`` is signalled.
        self._guards: list[tuple[_ZeEvent, _ZeEvent]] = []
        #: (passed, waited, release): the same for another device's event,
        #: which goes back to its own pool through ``release``.
        self._foreign: list[tuple[_ZeEvent, _ZeEvent, Callable[[_ZeEvent], None]]] = []
        self._lock = threading.Lock()

    def acquire(self) -> _ZeEvent:
        """A reset event with one hold, the caller's."""
        passed_foreign: list[tuple[_ZeEvent, Callable[[_ZeEvent], None]]] = []
        with self._lock:
            if not self._free:
                passed_foreign = self._sweep()
            if not self._free:
                self._grow()
            event = self._free.pop()
            event.holds = 1
        # Outside our lock: the other pool takes its own.
        for waited, release in passed_foreign:
            release(waited)
        try:
            self._check(self._lib.zeEventHostReset(event.handle), "zeEventHostReset")
        except DriverError:
            self.release(event)
            raise
        event.recorded = False
        event.fired = False
        event.signalled = False
        event.replayed = False
        event.stream = None
        return event

    def hold(self, event: _ZeEvent) -> None:
        """One more hold on an event the caller knows is held (it cannot be free now)."""
        with self._lock:
            event.holds += 1

    def release(self, event: _ZeEvent) -> None:
        """Drop one hold; with none left, the event returns to the pool once signalled."""
        passed_foreign: list[tuple[_ZeEvent, Callable[[_ZeEvent], None]]] = []
        with self._lock:
            self._drop(event)
            self._releases += 1
            if self._releases >= _POOL_SIZE and len(self._pools) > 2:
                self._releases = 0
                passed_foreign = self._sweep()
                self._shrink()
        for waited, release in passed_foreign:  # outside our lock, as in acquire
            release(waited)

    def guard(self, passed: _ZeEvent, waited: _ZeEvent) -> None:
        """Keep ``waited`` until ``passed`` is signalled; takes over one hold of each."""
        with self._lock:
            self._guards.append((passed, waited))

    def guard_foreign(
        self, passed: _ZeEvent, waited: _ZeEvent, release: Callable[[_ZeEvent], None]
    ) -> None:
        """:meth:`guard` for ``waited`` of another pool (another device's), freed by ``release``."""
        with self._lock:
            self._foreign.append((passed, waited, release))

    def _drop(self, event: _ZeEvent) -> None:
        event.holds -= 1
        if event.holds == 0:
            self._deferred.append(event)

    def _sweep(self) -> list[tuple[_ZeEvent, Callable[[_ZeEvent], None]]]:
        """Free what nothing can use now; returns the other pools' events to give back."""
        lib = self._lib
        guards: list[tuple[_ZeEvent, _ZeEvent]] = []
        for passed, waited in self._guards:
            if lib.zeEventQueryStatus(passed.handle) == ZE_RESULT_NOT_READY:
                guards.append((passed, waited))
            else:  # the waiting barrier has passed: nothing waits on ``waited`` now
                self._drop(waited)
                self._drop(passed)
        self._guards = guards
        foreign, back = [], []
        for passed, waited, release in self._foreign:
            if lib.zeEventQueryStatus(passed.handle) == ZE_RESULT_NOT_READY:
                foreign.append((passed, waited, release))
            else:
                self._drop(passed)
                back.append((waited, release))
        self._foreign = foreign
        still: list[_ZeEvent] = []
        for event in self._deferred:
            status = lib.zeEventQueryStatus(event.handle)
            if event.fired:
                # A graph "done" event is free once the waiting stream reset it.
                free = status == ZE_RESULT_NOT_READY
            else:
                free = not event.recorded or status != ZE_RESULT_NOT_READY
            (self._free if free else still).append(event)
        self._deferred = still
        return back

    def _shrink(self) -> None:
        """Give back whole ``ze_event_pool``s of free events, keeping two pools' worth free."""
        free = self._free
        if len(free) <= 2 * _POOL_SIZE:
            return
        counts: dict[int, int] = {}
        for event in free:
            counts[event.block] = counts.get(event.block, 0) + 1
        gone: set[int] = set()
        spare = len(free) - 2 * _POOL_SIZE
        for block, count in counts.items():
            if count == _POOL_SIZE and spare >= _POOL_SIZE:
                gone.add(block)
                spare -= _POOL_SIZE
        if gone:
            free = [event for event in free if event.block not in gone]
        # acquire() pops from the end: the lowest pools' events go out first,
        # so that the highest ones fall idle and can go back at a later sweep.
        free.sort(key=_block_descending)
        self._free = free
        if not gone:
            return
        lib = self._lib
        for block in gone:
            pool, events = self._pools.pop(block)
            for event in events:
                lib.zeEventDestroy(event.handle)
            lib.zeEventPoolDestroy(pool)

    def _grow(self) -> None:
        desc = ffi.new("ze_event_pool_desc_t*")
        desc.stype = _ST_EVENT_POOL_DESC
        desc.flags = _POOL_HOST_VISIBLE | (_POOL_KERNEL_TIMESTAMP if self._timing else 0)
        desc.count = _POOL_SIZE
        pool = ffi.new("ze_event_pool_handle_t*")
        # No device list: visible to every device of the (shared) context, so
        # that another device's stream may wait for these events.
        self._check(
            self._lib.zeEventPoolCreate(self._context, desc, 0, ffi.NULL, pool), "zeEventPoolCreate"
        )
        block = self._next_block
        self._next_block += 1
        events: list[_ZeEvent] = []
        self._pools[block] = (pool[0], events)
        edesc = ffi.new("ze_event_desc_t*")
        edesc.stype = _ST_EVENT_DESC
        edesc.signal = _SCOPE_HOST
        edesc.wait = _SCOPE_HOST
        for index in range(_POOL_SIZE):
            edesc.index = index
            handle = ffi.new("ze_event_handle_t*")
            self._check(self._lib.zeEventCreate(pool[0], edesc, handle), "zeEventCreate")
            event = _ZeEvent(handle[0], self._timing, block=block)
            events.append(event)
            self._free.append(event)

    def destroy(self) -> None:
        lib = self._lib
        with self._lock:
            for pool, events in self._pools.values():
                for event in events:
                    lib.zeEventDestroy(event.handle)
                lib.zeEventPoolDestroy(pool)
            self._pools.clear()
            self._free.clear()
            self._deferred.clear()
            self._guards.clear()
            self._foreign.clear()
