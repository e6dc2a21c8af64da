"""Stream-race checking: happens-before over streams, events and host waits.

A GPU runs the ops of one stream in order and the ops of different streams in
any order, unless an event (``record_event`` then ``stream_wait_event``) or a
host wait orders them.  Two ops that touch overlapping bytes, at least one of
them writing, with neither ordered before the other, are a race: on hardware
the answer depends on timing, and on the mock (where every op finishes at
enqueue) it never shows.  This module finds such races from the ops' declared
byte ranges alone, so it works the same on every backend, real GPUs included,
and never asks the device.

The order is kept with vector clocks, as in PyTorch's CUDA stream sanitizer:

* every stream has a clock, a map ``stream number -> op count``; an op on
  stream ``s`` is numbered ``clock_s[s] + 1``;
* an op ``(s, n)`` happens before every later op on a stream whose clock has
  ``clock[s] >= n``;
* ``record_event`` copies the stream's clock into the event, and
  ``stream_wait_event`` merges the event's clock into the waiting stream's;
* a host wait merges what it waited for into the host's clock, and every op
  submitted afterwards, on any stream, starts from at least the host's clock
  (the host enqueued it after the wait returned).

Each device or host byte range an op touched is kept as an access record
until nothing submitted later could race with it: once the host has waited
for it, or once a later access that covers it, is ordered after it and is at
least as strong (a write, or both reads) takes its place.  So the records
stay few: about one per stream and range in use, not one per op.

The checker holds no reference to buffers, streams or events: they are named
by small integers the caller assigns, so nothing here keeps memory alive.
One lock serialises it; every method is O(records overlapping the op) plus
O(streams) when a clock is merged.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
from enum import IntEnum
from types import CodeType
from typing import Final, NamedTuple, TypeAlias

from ._callsite import line_at
from ._exceptions import HazardError

__all__ = ["Access", "HazardChecker", "Site", "Space"]

_WeakRef = weakref.ref


class Space(IntEnum):
    """The address space a range lies in: the device's memory, or the host's."""

    DEVICE = 0
    HOST = 1


class Access(NamedTuple):
    """One byte range ``[lo, hi)`` an op reads or writes, with a name for messages.

    ``what`` describes the memory (``"device allocation 0x7f00 (4096 bytes)"``,
    ``"host buffer"``), so a message can say which buffer two ops shared.
    ``keep`` ties the record to the object that owns the bytes: a
    ``weakref.ref`` (the record lapses when the object dies, so a new buffer
    at a reused host address is not taken for the old one) or the object
    itself (held until the record is pruned, for objects without weak refs).
    A named tuple, not a dataclass: one is made per range of every op.
    """

    space: Space
    lo: int
    hi: int
    write: bool
    what: str = ""
    keep: object = None
    #: Made by the host at enqueue, not by the device in stream order (an
    #: upload from pageable memory, which the driver stages as it is called):
    #: only host waits order it after earlier ops, and nothing later races it.
    by_host: bool = False


#: A call site: ``"file:line"``, ``(file, line)``, or ``(code, offset)`` (a frame's
#: code and ``f_lasti``, whose line is looked up only for a message).
Site: TypeAlias = "str | tuple[str, int] | tuple[CodeType, int]"

# An access already made by an op is kept as a plain tuple (one per range of
# every op, so the cheapest thing to build):
# (lo, hi, write, stream, seq, keep, what, op, stream label, site).
_Record = tuple[int, int, bool, int, int, object, str, str, str, Site]
_LO: Final = 0
_HI: Final = 1
_WRITE: Final = 2
_STREAM: Final = 3
_SEQ: Final = 4
_KEEP: Final = 5
_WHAT: Final = 6
_OP: Final = 7
_LABEL: Final = 8
_SITE: Final = 9


class _StreamClock:
    __slots__ = ("clock", "host_version", "label")

    def __init__(self, number: int, label: str) -> None:
        self.clock: dict[int, int] = {number: 0}
        self.host_version = -1  # forces the first op to merge the host's clock
        self.label = label


def _dead(record: _Record) -> bool:
    """Whether the object that owned the record's bytes is gone (its address may be reused)."""
    keep = record[_KEEP]
    return type(keep) is _WeakRef and keep() is None


def _merge(into: dict[int, int], other: dict[int, int]) -> None:
    for stream, count in other.items():
        if into.get(stream, 0) < count:
            into[stream] = count


class HazardChecker:
    """The happens-before state of one backend.  Thread-safe."""

    def __init__(self, describe: Callable[[Space, int, int], str] | None = None) -> None:
        """``describe(space, lo, hi)`` names memory in messages when an access has no ``what``."""
        self._describe = describe
        self._lock = threading.Lock()
        self._streams: dict[int, _StreamClock] = {}
        self._events: dict[int, dict[int, int]] = {}
        self._host: dict[int, int] = {}
        self._host_version = 0
        # Snapshots of ops the host has seen finish, not yet folded into
        # ``_host``: appending is atomic and takes no lock, which matters on
        # every await; whatever reads ``_host`` folds them in first.
        self._seen: list[dict[int, int]] = []
        #: ``host_saw(snapshot)``: :meth:`host_waited_clock`, deferred (any thread).
        self.host_saw = self._seen.append
        # By space, indexed by the Space's int (hashing an enum member costs
        # ten times indexing with it, on every range of every op).
        self._records: list[list[_Record]] = [[], []]
        self._next_stream = 1

    # -- streams and events ----------------------------------------------------------------
    def add_stream(self, label: str) -> int:
        """A number for a new stream (never reused, so a closed stream's ops stay named)."""
        with self._lock:
            number = self._next_stream
            self._next_stream += 1
            self._streams[number] = _StreamClock(number, label)
            return number

    def record_event(self, event: int, stream: int) -> None:
        """``record_event(event, stream)``: the event now stands for the stream's work so far."""
        with self._lock:
            state = self._stream(stream)
            self._fold()
            self._join_host(state)
            self._events[event] = dict(state.clock)

    def wait_event(self, stream: int, event: int) -> None:
        """``stream_wait_event(stream, event)``: later ops on ``stream`` follow the record."""
        with self._lock:
            clock = self._events.get(event)
            if clock is not None:
                _merge(self._stream(stream).clock, clock)

    def forget_event(self, event: int) -> None:
        with self._lock:
            self._events.pop(event, None)

    # -- host waits ------------------------------------------------------------------------
    def host_waited_op(self, stream: int, seq: int) -> None:
        """The host saw op ``(stream, seq)`` finish (an await, ``wait()``, ``done()``)."""
        with self._lock:
            if self._host.get(stream, 0) < seq:
                self._host[stream] = seq
                self._host_version += 1
                self._prune()

    def host_waited_stream(self, stream: int) -> None:
        """The host waited for everything queued on ``stream`` so far (``synchronize``)."""
        with self._lock:
            self._host_joins(self._stream(stream).clock)

    def host_waited_event(self, event: int) -> None:
        """The host saw ``event``'s record complete (``event_synchronize``, a True query)."""
        with self._lock:
            clock = self._events.get(event)
            if clock is not None:
                self._host_joins(clock)

    def host_waited_clock(self, clock: dict[int, int]) -> None:
        """The host saw everything ``clock`` covers finish (a snapshot from this checker)."""
        with self._lock:  # _host_joins, inlined: it runs for every awaited op
            host = self._host
            changed = False
            for stream, count in clock.items():
                if host.get(stream, 0) < count:
                    host[stream] = count
                    changed = True
            if changed:  # records it covers go at the next _add (or record_count)
                self._host_version += 1

    def stream_clock(self, stream: int) -> dict[int, int]:
        """A snapshot of what ``stream``'s queue covers so far (for a later host wait)."""
        with self._lock:
            state = self._stream(stream)
            self._fold()
            self._join_host(state)
            return dict(state.clock)

    def event_clock(self, event: int) -> dict[int, int]:
        """A snapshot of what ``event``'s latest record covers (empty if never recorded)."""
        with self._lock:
            return dict(self._events.get(event, {}))

    def host_waited_all(self) -> None:
        """The host waited for every stream (a device-wide synchronisation)."""
        with self._lock:
            for state in self._streams.values():
                self._host_joins(state.clock, prune=False)
            self._prune()

    # -- ops -------------------------------------------------------------------------------
    def submit(
        self, stream: int, op: str, accesses: Iterable[Access], site: Site
    ) -> tuple[int, int]:
        """Check one op about to be enqueued on ``stream``; record it if it is race-free.

        Returns ``(stream, seq)``, the op's place in the order, for
        :meth:`host_waited_op`.  Raises :class:`HazardError` naming both ops,
        both streams, the overlapping range and both call sites when an
        access conflicts with an earlier one not ordered before it; then
        nothing is recorded, as the caller enqueues nothing.
        """
        return stream, self.submit_snapshot(stream, op, accesses, site)[stream]

    def submit_snapshot(
        self, stream: int, op: str, accesses: Iterable[Access], site: Site
    ) -> dict[int, int]:
        """:meth:`submit`, returning instead a snapshot of the stream's clock after the op.

        Handing the snapshot to :meth:`host_waited_clock` when the host sees
        the op finish orders after it everything the op itself was ordered
        after (through events, on other streams), not just its own stream.
        """
        # One function, no helpers: it runs for every op (see bench_hazards.py).
        lock = self._lock
        lock.acquire()  # not ``with``: it costs twice, on every op
        try:
            state = self._streams.get(stream)
            if state is None:
                raise ValueError(f"hazard checker: no stream numbered {stream}")
            host = self._host
            clock = state.clock
            seen = self._seen
            if seen:  # _fold, inlined
                # Usually what the host saw is this stream's own work, which its
                # clock has already: then it stays up to date without a merge.
                current = state.host_version == self._host_version
                changed = False
                while seen:
                    for other, count in seen.pop().items():
                        if host.get(other, 0) < count:
                            host[other] = count
                            changed = True
                            if current and clock.get(other, 0) < count:
                                current = False
                if changed:
                    self._host_version += 1
                    if current:
                        state.host_version = self._host_version
            if state.host_version != self._host_version:  # _join_host, inlined
                for other, count in host.items():
                    if clock.get(other, 0) < count:
                        clock[other] = count
                state.host_version = self._host_version
            label = state.label
            every = self._records
            for access in accesses:
                # Unpacked once: a named tuple's fields cost a lookup each.
                space, lo, hi, write, _, _, by_host = access
                order = host if by_host else clock
                for r in every[space]:  # _check, inlined
                    if r[_HI] <= lo or r[_LO] >= hi:
                        continue
                    if (write or r[_WRITE]) and order.get(r[_STREAM], 0) < r[_SEQ]:
                        self._check(access, order, op, label, site)
            seq = clock[stream] + 1
            clock[stream] = seq
            for space, lo, hi, write, what, keep, by_host in accesses:
                if by_host:
                    continue  # done already, before anything enqueued after it
                record = (lo, hi, write, stream, seq, keep, what, op, label, site)
                records = every[space]
                if not records:
                    records.append(record)
                elif len(records) == 1:  # the usual case, without _add's list
                    r = records[0]
                    if (
                        (
                            lo <= r[_LO]
                            and r[_HI] <= hi
                            and (write or not r[_WRITE])
                            and clock.get(r[_STREAM], 0) >= r[_SEQ]
                        )
                        or host.get(r[_STREAM], 0) >= r[_SEQ]
                        or _dead(r)
                    ):
                        records[0] = record
                    else:
                        records.append(record)
                else:
                    self._add(space, records, record, clock)
            return clock.copy()
        finally:
            lock.release()

    def forget_range(self, space: Space, lo: int, hi: int) -> None:
        """Drop the records inside ``[lo, hi)``: the memory was freed in a way the driver orders."""
        with self._lock:
            records = self._records[space]
            if records:
                self._records[space] = [r for r in records if r[_HI] <= lo or r[_LO] >= hi]

    def record_count(self) -> int:
        """How many access records are held (for tests: they must stay few)."""
        with self._lock:
            self._fold()
            self._prune()
            return sum(len(r) for r in self._records)

    # -- internals -------------------------------------------------------------------------
    def _stream(self, stream: int) -> _StreamClock:
        try:
            return self._streams[stream]
        except KeyError:
            raise ValueError(f"hazard checker: no stream numbered {stream}") from None

    def _fold(self) -> None:
        """Fold the snapshots :attr:`host_saw` collected into the host's clock."""
        seen = self._seen
        while seen:
            self._host_joins(seen.pop(), prune=False)

    def _join_host(self, state: _StreamClock) -> None:
        if state.host_version != self._host_version:
            _merge(state.clock, self._host)
            state.host_version = self._host_version

    def _host_joins(self, clock: dict[int, int], *, prune: bool = True) -> None:
        changed = False
        host = self._host
        for stream, count in clock.items():
            if host.get(stream, 0) < count:
                host[stream] = count
                changed = True
        if changed:
            self._host_version += 1
            if prune:
                self._prune()

    def _prune(self) -> None:
        # Every op submitted from now on starts after the host's clock, so a
        # record the host has waited for can never be part of a race again.
        host = self._host
        every = self._records
        for space, records in enumerate(every):
            if records:
                every[space] = [
                    r for r in records if host.get(r[_STREAM], 0) < r[_SEQ] and not _dead(r)
                ]

    def _check(
        self, access: Access, clock: dict[int, int], op: str, label: str, site: Site
    ) -> None:
        lo, hi, write = access.lo, access.hi, access.write
        for r in self._records[access.space]:
            if r[_HI] <= lo or r[_LO] >= hi or not (write or r[_WRITE]):
                continue
            if clock.get(r[_STREAM], 0) >= r[_SEQ] or _dead(r):
                continue  # ordered, or its buffer is gone (a new one may have its address)
            what = access.what or r[_WHAT]
            if not what and self._describe is not None:
                what = self._describe(access.space, max(lo, r[_LO]), min(hi, r[_HI]))
            raise HazardError(_message(access, op, label, site, r, what))

    def _add(
        self, space: int, records: list[_Record], record: _Record, clock: dict[int, int]
    ) -> None:
        lo, hi, write = record[_LO], record[_HI], record[_WRITE]
        host = self._host
        # An earlier access this one covers, ordered before it and no stronger,
        # can only race with what this one would race with too: drop it.  So
        # go those the host has waited for (the pruning a host wait defers).
        kept = [
            r
            for r in records
            if not (
                lo <= r[_LO]
                and r[_HI] <= hi
                and (write or not r[_WRITE])
                and clock.get(r[_STREAM], 0) >= r[_SEQ]
            )
            and host.get(r[_STREAM], 0) < r[_SEQ]
            and not _dead(r)
        ]
        kept.append(record)
        self._records[space] = kept


def _site(site: Site) -> str:
    if isinstance(site, str):
        return site
    where, offset = site
    if isinstance(where, CodeType):
        return f"{where.co_filename}:{line_at(where, offset)}"
    return f"{where}:{offset}"


def _message(access: Access, op: str, label: str, site: Site, earlier: _Record, what: str) -> str:
    lo = max(access.lo, earlier[_LO])
    hi = min(access.hi, earlier[_HI])
    mine = "writes" if access.write else "reads"
    theirs = "writes" if earlier[_WRITE] else "reads"
    their_op, their_label = earlier[_OP], earlier[_LABEL]
    what = what or ("host memory" if access.space else "device memory")
    return (
        f"{op}: stream race: {op} on {label} (at {_site(site)}) {mine} bytes "
        f"0x{lo:x}..0x{hi:x} ({hi - lo} bytes) of {what}, which {their_op} on "
        f"{their_label} (at {_site(earlier[_SITE])}) {theirs}, and nothing orders the two: "
        + (
            f"await {their_op} first: {op} reads pageable host memory as it is called, so "
            "an event does not order it (with memory from alloc_host_pinned it would)"
            if access.by_host
            else f"record an event on {_short(their_label)} after {their_op} and make "
            f"{_short(label)} wait for it (stream_wait_event), or await {their_op} first"
        )
    )


def _short(label: str) -> str:
    """A stream's label without its parenthesis (where it was made), for the second mention."""
    return label.split(" (", 1)[0]
