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

import ctypes
import functools
import itertools
import os
import sys
import weakref
from collections.abc import Callable
from types import CodeType
from typing import Any

import numpy as np
from cffi import FFI

from ._callsite import PACKAGE_DIR as _PACKAGE_DIR
from ._callsite import caller_site, user_frame
from ._completion import Completion
from ._driver import Driver, DriverStream
from ._enqueue import watcher
from ._exceptions import NotSupportedError
from ._handles import Event, Stream
from ._hazards import Access, HazardChecker, Space
from ._ledger import Ledger
from ._memory import HostBuffer
from ._op import Op, OpKind, Range

__all__ = ["ENV", "RaceCheck", "checking_requested"]

#: The environment variable that turns checking on for every backend opened.
ENV = "ARUNTIME_CHECK_HAZARDS"

_ffi = FFI()
_UINTPTR = _ffi.typeof("uintptr_t")
_c_char = ctypes.c_char
_new = tuple.__new__
_partial = functools.partial  # an Access without NamedTuple's Python-level __new__
_getframe = sys._getframe
# Enum members read once: a member lookup on the class costs a microsecond.
_DEVICE = Space.DEVICE
_HOST = Space.HOST
_addressof = ctypes.addressof
# The core's own ops: guard bands (blocking, touching bytes no user op may)
# and empty markers.  They order nothing and race with nothing of the user's.
_LAUNCH = OpKind.LAUNCH
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


def _host_address(view: memoryview) -> int:
    if not view.readonly:
        return _addressof(_c_char.from_buffer(view))  # ctypes: the cheaper of the two
    return int(_ffi.cast(_UINTPTR, _ffi.from_buffer(view)))


# Each live numpy array that owns its memory, by id(): a weak ref to it, then
# its four host accesses (read or write, by the device or by the host), made
# when first asked.  Most host buffers are such arrays, used op after op, and
# asking a buffer for its address costs more than the rest of an op's checking.
_owned: dict[int, list[Any]] = {}


def _drop_owned(ref: weakref.ref[Any], key: int) -> None:
    entry = _owned.get(key)
    if entry is not None and entry[0] is ref:
        del _owned[key]


def _host_access(view: memoryview, write: bool, by_host: bool = False) -> Access:
    obj = view.obj
    # All of an array that owns its memory (a C-contiguous view as long as the
    # array starts at its start; a slice of it is a view of the same object).
    if type(obj) is np.ndarray and obj.base is None and view.nbytes == obj.nbytes:
        key = id(obj)
        entry = _owned.get(key)
        if entry is None or entry[0]() is not obj:
            ref = weakref.ref(obj, functools.partial(_drop_owned, key=key))
            entry = _owned[key] = [ref, None, None, None, None]
        index = 1 + 2 * write + by_host
        access: Access | None = entry[index]
        if access is None:
            lo = _host_address(view)
            access = entry[index] = _new(
                Access, (_HOST, lo, lo + view.nbytes, write, "a host buffer", entry[0], by_host)
            )
        return access
    lo = _host_address(view)
    owner = _host_owner(view)
    return Access(_HOST, lo, lo + view.nbytes, write, "a host buffer", owner, by_host)


# Device accesses by (address, nbytes, write): values only (no owner, no
# name), so one serves every op on the same range; bounded, as addresses vary.
_device: dict[tuple[int, int, bool], Access] = {}
_DEVICE_CACHE = 1024


def _device_access(address: int, nbytes: int, write: bool) -> Access:
    key = (address, nbytes, write)
    access = _device.get(key)
    if access is None:
        if len(_device) >= _DEVICE_CACHE:
            _device.clear()
        access = _device[key] = _new(
            Access, (_DEVICE, address, address + nbytes, write, "", None, False)
        )
    return access


def _accesses(reads: tuple[Range, ...], writes: tuple[Range, ...]) -> list[Access]:
    out: list[Access] = []
    for ranges, write in ((writes, True), (reads, False)):  # a write says more
        for r in ranges:
            if isinstance(r, memoryview):
                out.append(_host_access(r, write))
            else:
                address, nbytes = r
                if nbytes:
                    out.append(_device_access(address, nbytes, write))
    return out


def _h2d_accesses(op: Op) -> list[Access]:
    view, address = op.args
    nbytes = op.nbytes
    # _device_access's cache, read inline: a call per checked copy.
    device = _device.get((address, nbytes, True)) or _device_access(address, nbytes, True)
    # Pageable memory: the driver reads it as the call is made (CUDA's
    # cuMemcpyHtoDAsync stages it then), so only a host wait orders it after
    # a download into the same buffer; an event on the device does not.
    by_host = type(op.keepalive[0]) is not HostBuffer
    # _host_access's cache, read inline for an array it has seen whole.
    obj = view.obj
    entry = _owned.get(id(obj))
    if entry is not None and entry[0]() is obj and view.nbytes == obj.nbytes:
        host = entry[1 + by_host]
        if host is not None:
            return [device, host]
    return [device, _host_access(view, False, by_host)]


def _d2h_accesses(op: Op) -> list[Access]:
    address, view = op.args
    nbytes = op.nbytes
    device = _device.get((address, nbytes, False)) or _device_access(address, nbytes, False)
    return [_host_access(view, True), device]


#: The accesses of the commonest ops, straight from their arguments (what
#: ``Op.reads``/``Op.writes`` would say, without building those first).
_FAST: dict[OpKind, Callable[[Op], list[Access]]] = {
    OpKind.COPY_H2D: _h2d_accesses,
    OpKind.COPY_D2H: _d2h_accesses,
}


#: How deep _user_site looks for the user's frame before it walks.
_SITE_DEPTHS = 10


def _readonly_ranges(op: Op) -> list[tuple[int, int]]:
    """The device ranges a launch declared read-only: read, and overlapping no write."""
    written = [w for w in op.writes if not isinstance(w, memoryview)]
    out = []
    for r in op.reads:
        if isinstance(r, memoryview) or not r[1]:
            continue
        lo, hi = r[0], r[0] + r[1]
        if not any(w_lo < hi and lo < w_lo + w_n for w_lo, w_n in written):
            out.append(r)
    return out


def _user_site() -> tuple[CodeType, int] | tuple[str, int]:
    """Where the user's call that made the op being checked is: ``(code, f_lasti)``.

    From :meth:`RaceCheck.run`, a public async op's caller is two frames up
    (this function, then the check) when a Backend's compiled front made the
    op (``ffi/core/front.c``), four when its Python method and ``_ops.Ops``'s
    did, more from a wrapper (a blocking copy, a compute op).  Each depth is
    tried in turn with ``sys._getframe``, which makes a frame object for the
    depth asked only, where walking up with ``f_back`` would make one per
    frame (Python 3.11 makes them lazily).  The line of an offset is looked
    up only if a message needs it: reading ``f_lineno`` scans the code's
    line table every time.
    """
    for depth in range(2, _SITE_DEPTHS):
        try:
            frame = sys._getframe(depth)
        except ValueError:
            break
        code = frame.f_code
        if not code.co_filename.startswith(_PACKAGE_DIR):
            return code, frame.f_lasti
    return user_frame()


def _op_name(op: Op) -> str:
    kernel = op.kernel
    if op.kind is OpKind.LAUNCH and kernel is not None:
        return f"launch {kernel.name!r}"
    return op.kind.public


class RaceCheck:
    """One backend's stream-race checking (made only when it is turned on)."""

    def __init__(self, ledger: Ledger, driver: Driver) -> None:
        self._ledger = ledger
        # Where the driver sees every store (the sims), reads= is checked too.
        self._driver = driver if driver.checks_stores else None
        self.checker = HazardChecker(describe=self._describe)
        self._events: set[int] = set()
        self._made = itertools.count(1)  # tells apart streams made on one line
        self._by_native: dict[int, int] = {}
        # Bound once: run() uses them for every op.
        self._submit = self.checker.submit_snapshot
        self._waited = self.checker.host_saw
        self._watched = watcher()

    # -- streams and ops ---------------------------------------------------------------------
    def add_stream(self, driver: Driver, handle: DriverStream, default: bool) -> int:
        """A checker number for a new stream, labelled with the user's line that made it.

        Streams over one native stream (``wrap_stream`` of one of ours, as a
        DLPack export does to order the consumer) share the number: they are
        one queue on the device.
        """
        try:
            native: int | None = driver.stream_handle_int(handle)
        except NotSupportedError:
            native = None
        number = None if native is None else self._by_native.get(native)
        if number is None:
            if default:
                number = self.checker.add_stream("the default stream")
            else:
                label = f"stream #{next(self._made)} (created at {caller_site()})"
                number = self.checker.add_stream(label)
            if native is not None:
                # A destroyed stream's handle may come back for a new one, which then
                # continues its order: that can hide a race, never invent one.
                self._by_native[native] = number
        return number

    def run(self, op: Op, stream: Stream, run: Callable[[Op, Stream], Completion]) -> Completion:
        """Check ``op`` (HazardError, nothing enqueued), then enqueue it with ``run``."""
        kind = op.kind
        fast = _FAST.get(kind)
        if fast is not None:
            accesses = fast(op)
        elif kind in _UNCHECKED:
            return run(op, stream)
        else:
            accesses = _accesses(op.reads, op.writes)
        name = kind.public if op.kernel is None else _op_name(op)
        # _user_site, inline for its common case: called from the compiled enqueue,
        # this check's caller is the user's frame (what _user_site's depth 2 is).
        caller = _getframe(1)
        code = caller.f_code
        outside = not code.co_filename.startswith(_PACKAGE_DIR)
        site = (code, caller.f_lasti) if outside else _user_site()
        clock = self._submit(stream.hazard_id, name, accesses, site)
        if kind is _LAUNCH and self._driver is not None:
            readonly = _readonly_ranges(op)
            if readonly:
                completion = self._declared(readonly, run, op, stream)
                return self._watched(completion, _partial(self._waited, clock))
        return self._watched(run(op, stream), _partial(self._waited, clock))

    def record(
        self, op: Op, handle: DriverStream, capture: Callable[[Op, DriverStream], Completion]
    ) -> Completion:
        """Record ``op`` into a capture: not checked now (its replays are), but a launch
        carries its ``reads=`` into the graph where the driver checks stores."""
        if op.kind is _LAUNCH and self._driver is not None:
            readonly = _readonly_ranges(op)
            if readonly:
                return self._declared(readonly, capture, op, handle)
        return capture(op, handle)

    def _declared(
        self, readonly: list[tuple[int, int]], enqueue: Callable[..., Completion], *args: Any
    ) -> Completion:
        """``enqueue(*args)`` for a launch whose ``reads=`` the driver checks against its stores."""
        driver = self._driver
        assert driver is not None
        driver.declare_readonly(readonly)
        try:
            return enqueue(*args)
        finally:
            driver.declare_readonly(())  # a launch that raised must not pass them on

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
        return self._watched(completion, functools.partial(self.checker.host_saw, clock))

    def event_synchronize(self, completion: Completion, event: Event) -> Completion:
        """``event_synchronize``/``await event``: the host follows the event's latest record."""
        clock = self.checker.event_clock(id(event))
        return self._watched(completion, functools.partial(self.checker.host_saw, clock))

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
