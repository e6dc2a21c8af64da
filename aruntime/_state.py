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

import logging
import threading
import weakref
from collections.abc import Callable

from ._driver import DeviceInfo, Driver
from ._exceptions import ClosedResourceError, DriverError
from ._fork import forked_error
from ._handles import Event, Graph, HandleOwner, Module, Stream
from ._ledger import REDZONE_BYTES, Ledger, redzones_enabled
from ._protocols import Owner
from ._resources import Resources
from ._streamstate import FailureList
from ._trace import Tracing
from ._waiter import StreamWaiter

__all__ = ["BackendState"]

_log = logging.getLogger("aruntime")


class BackendState:
    """The shared state of one opened backend."""

    def __init__(self, driver: Driver, owner: Owner, handles: HandleOwner) -> None:
        self.driver = driver
        self.name = driver.backend_name
        self.info: DeviceInfo = driver.device_info()
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

    def check_open(self, fn: str) -> None:
        if self.closed:
            if self.forked_from is not None:
                raise forked_error(fn, self.name, self.forked_from)
            raise ClosedResourceError(f"{fn}: the {self.name} backend is closed")

    def add_waiter(self, waiter: StreamWaiter) -> None:
        with self.lock:
            self.waiters.add(waiter)

    def live_waiters(self) -> list[StreamWaiter]:
        with self.lock:
            return list(self.waiters)

    def open_streams(self) -> list[Stream]:
        """Every stream not yet closed, the default one included."""
        return [r for r in self.resources.live() if isinstance(r, Stream)]

    def count_open(self, kind: type[Event] | type[Graph] | type[Stream]) -> int:
        """How many resources of ``kind`` are open (streams: the default one too)."""
        return sum(1 for r in self.resources.live() if isinstance(r, kind))

    def after_queued_work(self, release: Callable[[], None]) -> None:
        """Run ``release`` once every op queued so far, on every stream, has finished."""
        if self.driver.synchronous:
            release()
            return
        # Every waiter, not just those of open streams: a stream closed with
        # work queued keeps running it, and freeing under it would be a
        # use-after-free on the device.
        pending = [c for c in (w.last_pending() for w in self.live_waiters()) if c is not None]
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
