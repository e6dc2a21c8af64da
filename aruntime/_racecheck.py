"""Stream-race checking wired into a backend: ops, events and host waits to the checker.

:class:`aruntime._hazards.HazardChecker` knows happens-before and byte
ranges, nothing about aruntime's objects.  :class:`RaceCheck` is the
backend's side (``BackendState.hazards``, None when checking is off): it
turns each :class:`aruntime._op.Op` into the checker's accesses before the
op is enqueued, tells it about events and host waits, and forgets freed
memory.  So with checking off the core pays one ``is None`` test per op
(docs/testing.md).
"""

from __future__ import annotations

import functools
import itertools
import os
import weakref
from typing import Any

import numpy as np
from cffi import FFI

from ._callsite import caller_site
from ._completion import Completion, watched
from ._handles import Event, Stream, SubmitPolicy
from ._hazards import Access, HazardChecker, Space
from ._ledger import Ledger
from ._op import Op, OpKind, Range

__all__ = ["ENV", "RaceCheck", "checking_requested"]

#: The environment variable that turns checking on for every backend opened.
ENV = "ARUNTIME_CHECK_HAZARDS"

_ffi = FFI()
# The core's own ops: guard bands (blocking, touching bytes no user op may)
# and empty markers.  They order nothing and race with nothing of the user's.
_UNCHECKED = frozenset({OpKind.REDZONE, OpKind.SCAN_REDZONES, OpKind.SYNCHRONIZE, OpKind.CLOSE})


def checking_requested(check_hazards: object) -> bool:
    """``open_backend``'s ``check_hazards``: True/False as given, None for the environment."""
    if check_hazards is None:
        return os.environ.get(ENV, "").strip() not in ("", "0")
    if not isinstance(check_hazards, bool):
        raise TypeError(
            "open_backend: check_hazards must be a bool or None, got "
            f"{type(check_hazards).__name__}"
        )
    return check_hazards


def _host_owner(view: memoryview) -> object:
    """What the record of a host range holds: a weak ref to the memory's owner where it can.

    A host address is only the old buffer's while that buffer lives; once it
    is gone the allocator may hand the bytes to a new one, which no earlier
    op can race with (the core held the old one until its ops were done).
    """
    owner: Any = view.obj
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    try:
        return weakref.ref(owner)
    except TypeError:  # bytes, bytearray: held until the record goes
        return owner


def _host_access(view: memoryview, write: bool) -> Access:
    lo = int(_ffi.cast("uintptr_t", _ffi.from_buffer(view)))
    return Access(Space.HOST, lo, lo + view.nbytes, write, "a host buffer", _host_owner(view))


def _accesses(reads: tuple[Range, ...], writes: tuple[Range, ...]) -> list[Access]:
    out: list[Access] = []
    for ranges, write in ((reads, False), (writes, True)):
        for r in ranges:
            if isinstance(r, memoryview):
                out.append(_host_access(r, write))
            else:
                address, nbytes = r
                if nbytes:
                    out.append(Access(Space.DEVICE, address, address + nbytes, write))
    return out


def _op_name(op: Op) -> str:
    kernel = op.kernel
    if op.kind is OpKind.LAUNCH and kernel is not None:
        return f"launch {kernel.name!r}"
    return op.kind.public


class RaceCheck:
    """One backend's stream-race checking (made only when it is turned on)."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self.checker = HazardChecker(describe=self._describe)
        self._events: set[int] = set()
        self._made = itertools.count(1)  # tells apart streams made on one line

    # -- streams and ops ---------------------------------------------------------------------
    def add_stream(self, *, default: bool) -> int:
        """A checker number for a new stream, labelled with the user's line that made it."""
        if default:
            return self.checker.add_stream("the default stream")
        return self.checker.add_stream(f"stream #{next(self._made)} (created at {caller_site()})")

    def run(self, op: Op, stream: Stream, policy: SubmitPolicy) -> Completion:
        """Check ``op`` (HazardError, nothing enqueued), then enqueue it through ``policy``."""
        if op.kind in _UNCHECKED:
            return policy.run(op, stream)
        number = stream.hazard_id
        clock = self.checker.submit_snapshot(
            number, _op_name(op), _accesses(op.reads, op.writes), caller_site()
        )
        completion = policy.run(op, stream)
        return watched(completion, functools.partial(self.checker.host_waited_clock, clock))

    def free_async(self, writes: tuple[tuple[int, int], ...], stream: Stream) -> None:
        """``free_async`` is a write of the whole allocation; then the range is forgotten.

        Forgotten, since the pointer is dead from now on and the pool may
        hand the bytes out again, ordered by the stream's own queue.
        """
        checker = self.checker
        checker.submit(stream.hazard_id, "free_async", _accesses((), writes), caller_site())
        for address, nbytes in writes:
            checker.forget_range(Space.DEVICE, address, address + nbytes)

    def forget(self, space: Space, address: int, nbytes: int) -> None:
        """Memory freed behind all queued work: a later owner of the bytes starts afresh."""
        self.checker.forget_range(space, address, address + nbytes)

    # -- host waits ----------------------------------------------------------------------------
    def synchronize(self, completion: Completion, stream: Stream) -> Completion:
        """``synchronize(stream)``: seeing it finish orders the host after the queue so far."""
        clock = self.checker.stream_clock(stream.hazard_id)
        return watched(completion, functools.partial(self.checker.host_waited_clock, clock))

    def event_synchronize(self, completion: Completion, event: Event) -> Completion:
        """``event_synchronize``/``await event``: the host follows the event's latest record."""
        clock = self.checker.event_clock(id(event))
        return watched(completion, functools.partial(self.checker.host_waited_clock, clock))

    def event_query(self, event: Event, reached: bool) -> None:
        """A True ``event_query`` is a host wait that has already returned."""
        if reached:
            self.checker.host_waited_event(id(event))

    # -- events ------------------------------------------------------------------------------
    def record_event(self, event: Event, stream: Stream) -> None:
        serial = id(event)
        if serial not in self._events:
            self._events.add(serial)
            weakref.finalize(event, self._forget_event, serial)
        self.checker.record_event(serial, stream.hazard_id)

    def stream_wait_event(self, stream: Stream, event: Event) -> None:
        self.checker.wait_event(stream.hazard_id, id(event))

    def _forget_event(self, serial: int) -> None:
        self._events.discard(serial)
        self.checker.forget_event(serial)

    # -- messages ----------------------------------------------------------------------------
    def _describe(self, space: Space, lo: int, hi: int) -> str:
        if space is Space.HOST:
            return "host memory"
        for entry in self._ledger.entries():
            if entry.address <= lo < entry.address + entry.nbytes:
                return f"the {entry.nbytes}-byte allocation made at {entry.site}"
        return "device memory"
