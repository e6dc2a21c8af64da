"""What one opened backend holds, shared by the parts that work on it.

:class:`BackendState` is plain data plus the few questions every part asks
(is the backend open? which waiters may still run?).  The parts
(``_submit``, ``_alloc``, ``_objects``, ``_graphs``, ``_shutdown``) each
own one job over it; :class:`aruntime.Backend` is the facade that holds them.
Every resource is in one registry, :attr:`BackendState.resources`, which
each resource joins and leaves itself (docs/design.md).

Locking: ``lock`` guards the name index of modules and the closed flag; a
stream's own lock (``Stream.state.lock``) orders what is enqueued on it.
Never take ``lock`` while holding a stream's lock and then wait for the
device.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections.abc import Callable

from ._driver import DeviceInfo, DeviceLimits, Driver
from ._exceptions import ClosedResourceError, DriverError
from ._fork import forked_error
from ._handles import Event, Graph, HandleOwner, Stream
from ._ledger import REDZONE_BYTES, Ledger, redzones_enabled
from ._modules import Module
from ._protocols import Owner
from ._racecheck import RaceCheck
from ._resources import Resources
from ._streamstate import FailureList
from ._trace import Tracing
from ._waiter import StreamWaiter

__all__ = ["BackendState"]

_log = logging.getLogger("aruntime")


class BackendState:
    """The shared state of one opened backend."""

    def __init__(
        self, driver: Driver, owner: Owner, handles: HandleOwner, *, check_hazards: bool = False
    ) -> None:
        self.driver = driver
        self.name = driver.backend_name
        self.info: DeviceInfo = driver.device_info()
        #: What the device allows; every launch and allocation is checked against it.
        self.limits: DeviceLimits = driver.device_limits()
        #: The facade, as handles see it (they talk back through its public calls).
        self.handles = handles
        self.lock = threading.RLock()
        self.closed = False
        #: In a forked child, the pid of the parent that opened this backend.
        self.forked_from: int | None = None
        self.ledger = Ledger(owner)
        self.redzone = REDZONE_BYTES if redzones_enabled() else 0
        #: Every live resource, in creation order (see _resources).
        self.resources = Resources()
        #: Loaded modules by name (they are in ``resources`` too).
        self.modules: dict[str, Module] = {}
        # Every waiter whose thread may still run, including those of streams
        # closed or dropped earlier (a running thread keeps its waiter alive),
        # so close() can join them all before it releases the driver.
        self.waiters: weakref.WeakSet[StreamWaiter] = weakref.WeakSet()
        self.default: Stream | None = None
        self.orphans = FailureList()  # unseen errors of closed streams
        self.tracing = Tracing(driver, self.name, self.info, self.lock, self.check_open)
        #: Peers that queued copies of this device's memory (see add_peer_user).
        self.peer_users: weakref.WeakSet[BackendState] = weakref.WeakSet()
        #: Stream-race checking (docs/testing.md), or None when it is off.
        self.hazards = RaceCheck(self.ledger, driver) if check_hazards else None

    def check_open(self, fn: str) -> None:
        if self.closed:
            if self.forked_from is not None:
                raise forked_error(fn, self.name, self.forked_from)
            raise ClosedResourceError(f"{fn}: the {self.name} backend is closed")

    def add_waiter(self, waiter: StreamWaiter) -> None:
        _add_waiter(self.lock, self.waiters, waiter)

    def waiter_registrar(self) -> Callable[[StreamWaiter], None]:
        """What a stream calls with its new waiter: :meth:`add_waiter`, without this state.

        A stream's pending ops hold its StreamState, which holds this; a bound
        method would keep the backend alive through them, and a backend dropped
        with work in flight would never be collected, nor warn.
        """
        return functools.partial(_add_waiter, self.lock, self.waiters)

    def live_waiters(self) -> list[StreamWaiter]:
        with self.lock:
            return list(self.waiters)

    def add_peer_user(self, peer: BackendState) -> None:
        """``peer``'s streams have queued peer copies of this device's memory, or waits on
        its events."""
        with self.lock:
            self.peer_users.add(peer)

    def open_streams(self) -> list[Stream]:
        """Every stream not yet closed, the default one included."""
        return self.resources.live_of(Stream)  # type: ignore[return-value]

    def count_open(self, kind: type[Event] | type[Graph] | type[Stream]) -> int:
        """How many resources of ``kind`` are open (streams: the default one too)."""
        return len(self.resources.live_of(kind))

    def wait_out_submits(self) -> None:
        """Return once every submit under way on this backend's streams has reached its stream.

        Called holding no stream lock, after marking something gone (a
        ledger entry ``freed``, a graph closed) that each stream checks again
        under its lock: an op that checked it before either reached its
        stream first, and what is queued after that waits for it, or is
        refused there.  A peer's streams count too: they copy this device's
        memory and wait on its events.
        """
        with self.lock:
            peers = list(self.peer_users)
        for state in (self, *peers):
            for stream in state.open_streams():
                stream.state.acquire()
                stream.state.release()

    def after_queued_work(self, release: Callable[[], None]) -> None:
        """Run ``release`` once every op queued so far, on every stream, has finished."""
        if self.driver.synchronous:
            release()
            return
        # Every waiter, not just those of open streams: a stream closed with
        # work queued keeps running it, and freeing under it would be a
        # use-after-free on the device.
        # A peer copy queued on another device may still read or write this
        # device's memory: its streams' work counts too.
        waiters = self.live_waiters()
        with self.lock:
            peers = list(self.peer_users)
        for peer in peers:
            waiters.extend(peer.live_waiters())
        pending = [c for c in (w.last_pending() for w in waiters) if c is not None]
        if not pending:
            release()
            return
        remaining = [len(pending)]
        lock = threading.Lock()
        name = self.name

        def count_down() -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                try:
                    release()
                except DriverError as exc:
                    _log.warning("%s: deferred release failed: %s", name, exc)

        for completion in pending:
            if not completion.subscribe(count_down):
                count_down()


def _add_waiter(
    lock: threading.RLock, waiters: weakref.WeakSet[StreamWaiter], waiter: StreamWaiter
) -> None:
    with lock:
        waiters.add(waiter)
