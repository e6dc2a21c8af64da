"""The allocation ledger: every live allocation, where it was made, its guards.

Every device pointer a backend hands out is checked against this ledger before
any op uses it, so a freed, foreign or out-of-range pointer never reaches a
driver.  With ``ARUNTIME_REDZONE=1`` each device allocation is surrounded by
guard bands of a known byte pattern, which :meth:`Ledger.scan` checks.
"""

from __future__ import annotations

import enum
import itertools
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ._callsite import caller_site
from ._enqueue import range_checker
from ._exceptions import ClosedResourceError, InvalidArgumentError
from ._memory import Allocation, DevicePtr, HostBuffer
from ._peer import describe_device
from ._protocols import Owner
from ._resources import Resources

__all__ = [
    "REDZONE_BYTES",
    "AllocKind",
    "Entry",
    "Ledger",
    "caller_site",
    "park",
    "pin",
    "redzones_enabled",
    "unpin",
]

#: Size of each guard band, and the alignment user pointers keep inside it.
REDZONE_BYTES = 256
DEFAULT_LOW_PATTERN = 0xA5
DEFAULT_HIGH_PATTERN = 0x5A

_ids = itertools.count(1)


def redzones_enabled() -> bool:
    return os.environ.get("ARUNTIME_REDZONE", "") == "1"


def new_alloc_id() -> int:
    return next(_ids)


class AllocKind(enum.Enum):
    """What an allocation is; its value is the ``kind`` of :class:`aruntime.Allocation`."""

    DEVICE = "device"
    MANAGED = "managed"
    ARENA = "arena"
    ASYNC = "async"  # alloc_async
    HOST = "host"  # alloc_host_pinned
    MAPPED = "mapped"  # host_ptr_to_device: the device's view of pinned host memory

    @property
    def owns_memory(self) -> bool:
        """False for a mapping: its bytes are the host allocation's, counted and freed there."""
        return self is not AllocKind.MAPPED

    @property
    def free_call(self) -> str:
        """The public call that frees this kind of allocation (for messages)."""
        return _FREE_CALLS[self]


_FREE_CALLS = {
    AllocKind.DEVICE: "free",
    AllocKind.MANAGED: "free",
    AllocKind.ARENA: "free_arena",
    AllocKind.ASYNC: "free_async",
    AllocKind.HOST: "free_host_pinned",
    AllocKind.MAPPED: "free_host_pinned (of the host buffer)",
}


class _Referable:
    """The weak-referable base of Entry: the registry holds it weakly, and a slotted
    dataclass gets no ``__weakref__`` of its own before Python 3.11."""

    __slots__ = ("__weakref__",)


# Slots: the compiled enqueue reads ``freed`` in place, per op (ffi/core/slots.h).
@dataclass(eq=False, slots=True)
class Entry(_Referable):
    """One live allocation (device, managed, arena, async, pinned host, or a mapping).

    A resource of its backend: made whole by the allocator with what frees
    its memory (``free_memory``; None for a mapping) and listed in the
    backend's registry (``resources``) as it is made.
    """

    alloc_id: int
    kind: AllocKind
    address: int  # the user-visible base address
    nbytes: int
    site: str
    raw_address: int  # what the driver returned (below the low guard band)
    redzone: int  # guard band size, 0 when off
    handle: DevicePtr | HostBuffer
    mapped_from: int = 0  # host_ptr_to_device: the host allocation's id
    # Graphs (or captures under way) whose ops use this memory, and the
    # release that free() parked until the last of them is gone.
    graph_pins: int = 0
    parked: Callable[[], None] | None = None
    free_memory: Callable[[], None] | None = None
    resources: Resources | None = None
    #: A mapping's host allocation: a graph that uses the mapping pins it too, so
    #: free_host_pinned parks the host memory's release while the graph lives.
    backing: Entry | None = None
    serial: int = field(default=-1, init=False)
    #: Set by free() before it waits out the submits under way (Stream.submit
    #: refuses an op that uses a freed entry, under the stream's lock).
    freed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.resources is not None:
            self.serial = self.resources.add(self)

    @property
    def described(self) -> str:
        """The allocation, for a message: its pointer's repr, or a pinned buffer's place
        (a HostBuffer's repr is its data)."""
        if self.kind is AllocKind.HOST:
            return f"the pinned HostBuffer of {self.nbytes} bytes at 0x{self.address:x}"
        return repr(self.handle)

    def detach(self) -> bool:
        """Take the entry out of the registry; True for the one caller that frees it."""
        return self.resources is None or self.resources.claim(self.serial)

    def release(self) -> None:
        """The backend is closing, nothing in flight: free the memory now."""
        if self.detach() and self.free_memory is not None:
            self.free_memory()


# Pins change on capturing threads, frees and graph destruction: one lock for all.
_pins_lock = threading.Lock()


def pin(keepalive: Iterable[object]) -> None:
    """Each ledger entry in ``keepalive`` is used by one more graph (or capture)."""
    with _pins_lock:
        for item in keepalive:
            if isinstance(item, Entry):
                for entry in _with_backing(item):
                    entry.graph_pins += 1


def unpin(keepalive: Iterable[object]) -> list[Callable[[], None]]:
    """Undo :func:`pin`; the releases parked on entries no graph uses any more.

    The caller runs them once nothing queued can use the memory.
    """
    released: list[Callable[[], None]] = []
    with _pins_lock:
        for item in keepalive:
            if isinstance(item, Entry):
                for entry in _with_backing(item):
                    entry.graph_pins -= 1
                    if entry.graph_pins == 0 and entry.parked is not None:
                        released.append(entry.parked)
                        entry.parked = None
    return released


def _with_backing(entry: Entry) -> tuple[Entry, ...]:
    """``entry``, and the host allocation under it if it is a mapping."""
    backing = entry.backing
    return (entry,) if backing is None else (entry, backing)


def park(entry: Entry, release: Callable[[], None]) -> bool:
    """Hold a freed entry's ``release`` while a graph uses it; False if none does."""
    with _pins_lock:
        if entry.graph_pins == 0:
            return False
        entry.parked = release
        return True


class Ledger:
    """Thread-safe record of a backend's live allocations."""

    def __init__(self, backend: Owner) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._entries: dict[int, Entry] = {}
        #: ``in_range(ptr, nbytes)``: the entry of a live pointer of this backend whose
        #: view holds ``nbytes``, else None (then :meth:`check_range` decides and says
        #: why).  One C call where the core's extension is built, found at first use.
        self.in_range: Callable[[object, int], Entry | None] = self._first_in_range
        self.low_pattern = DEFAULT_LOW_PATTERN
        self.high_pattern = DEFAULT_HIGH_PATTERN

    def _first_in_range(self, ptr: object, nbytes: int) -> Entry | None:
        self.in_range = self.range_check()
        found: Entry | None = self.in_range(ptr, nbytes)
        return found

    def range_check(self) -> Callable[[object, int], Entry | None]:
        """A new ``in_range`` over this ledger's entries, for C that calls it itself."""
        return range_checker(self._backend, self._entries)

    def add(self, entry: Entry) -> None:
        with self._lock:
            self._entries[entry.alloc_id] = entry

    def remove(self, alloc_id: int) -> Entry | None:
        with self._lock:
            return self._entries.pop(alloc_id, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def get(self, alloc_id: int) -> Entry | None:
        return self._entries.get(alloc_id)

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def mapped_views_of(self, host_alloc_id: int) -> list[Entry]:
        with self._lock:
            return [e for e in self._entries.values() if e.mapped_from == host_alloc_id]

    # -- checks ----------------------------------------------------------------
    def check_ptr(self, ptr: object, fn: str, what: str = "ptr") -> Entry:
        """The live entry a DevicePtr belongs to, or a clear error."""
        if not isinstance(ptr, DevicePtr):
            raise TypeError(f"{fn}: {what} must be a DevicePtr, got {type(ptr).__name__}")
        if ptr.backend is not self._backend:
            theirs, mine = describe_device(ptr.backend), describe_device(self._backend)
            hint = "" if theirs == mine else "; only copy_d2d_async copies between devices"
            raise InvalidArgumentError(
                f"{fn}: {what} belongs to another backend ({theirs}), not this one ({mine}){hint}"
            )
        entry = self._entries.get(ptr.alloc_id)
        if entry is None:
            if self._backend.closed:  # close() freed it, after this call began
                raise ClosedResourceError(f"{fn}: the {self._backend.name} backend is closed")
            # Only this backend makes pointers to it, so one that is not live was
            # freed (no set of freed ids: it would grow with every free, forever).
            raise InvalidArgumentError(f"{fn}: {what} {ptr!r} was freed")
        return entry

    def check_range(self, ptr: object, nbytes: int, fn: str, what: str = "ptr") -> Entry:
        """``ptr`` is live and its view holds at least ``nbytes`` bytes."""
        # Every copy passes here: the common case without calls.
        if type(ptr) is DevicePtr and ptr._backend is self._backend:
            entry = self._entries.get(ptr._alloc_id)
            if entry is not None and nbytes <= ptr._nbytes:
                return entry
        entry = self.check_ptr(ptr, fn, what)
        assert isinstance(ptr, DevicePtr)  # check_ptr raised otherwise
        if nbytes > ptr._nbytes:
            over = nbytes - ptr._nbytes
            if ptr._address == entry.address and ptr._nbytes == entry.nbytes:
                where = f"a {entry.nbytes}-byte allocation"
            else:
                start = ptr._address - entry.address
                where = (
                    f"a {ptr._nbytes}-byte view (offset {start}) of a "
                    f"{entry.nbytes}-byte allocation"
                )
            raise InvalidArgumentError(f"{fn}: {over} bytes past the end of {where}")
        return entry

    # -- reports -----------------------------------------------------------------
    def live_bytes(self) -> int:
        with self._lock:
            return sum(e.nbytes for e in self._entries.values() if e.kind.owns_memory)

    def live_count(self) -> int:
        with self._lock:
            return sum(1 for e in self._entries.values() if e.kind.owns_memory)

    def allocations(self) -> list[Allocation]:
        return [
            Allocation(ptr=e.handle, nbytes=e.nbytes, site=e.site, kind=e.kind.value)
            for e in sorted(self.entries(), key=lambda e: e.alloc_id)
            if e.kind.owns_memory
        ]

    def report(self, top_n: int, min_mb: float) -> str:
        by_site: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for e in self.entries():
            if not e.kind.owns_memory:
                continue
            row = by_site[e.site]
            row[0] += 1
            row[1] += e.nbytes
        rows = sorted(by_site.items(), key=lambda kv: (-kv[1][1], kv[0]))
        rows = [r for r in rows if r[1][1] >= min_mb * 1024 * 1024][:top_n]
        total = sum(v[1] for v in by_site.values())
        lines = [
            f"{self._backend.name}: {self.live_count()} live allocations, "
            f"{total / 1048576:.2f} MiB",
        ]
        if rows:
            width = max(len(site) for site, _ in rows)
            lines.append(f"{'site':<{width}}  {'count':>6}  {'MiB':>10}")
            for site, (count, nbytes) in rows:
                lines.append(f"{site:<{width}}  {count:>6}  {nbytes / 1048576:>10.2f}")
        return "\n".join(lines)
